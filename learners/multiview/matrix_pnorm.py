"""The 2p-norm matrix Perceptron: spectral co-regularisation (cavallanti2010 Sec. 7).

docs/algorithms.md Sec. 1.6. Each round gives the ``d x K`` instance matrix
``X_t = [x_{1,t}, ..., x_{K,t}]`` (K views of the same dimension) and one label.
The quasi-additive matrix algorithm keeps ``V`` (start 0), adds ``y_t X_t`` to
it on a mistake (the matrix Perceptron rule) and predicts with
``SGN(<W, X_t>) = SGN(tr(W^T X_t))``, where ``W`` is the gradient of
``(1/2) ||V||_{s2p}^2`` for the Schatten 2p-norm
``||V||_{s2p} = (tr (V^T V)^p)^{1/(2p)}`` (``p`` a positive integer). From the
proof of Theorem 10::

    W = c(V) V B^{p-1},   B = V^T V,   c(V) = (tr B^p)^{1/p - 1}.

``B`` (K x K) is kept incrementally, ``B <- B + y (C + C^T) + X^T X`` with
``C = V^T X`` (O(d K^2)); the score is ``c(V) tr(B^{p-1} C)``. ``W`` is
homogeneous of degree 1 in ``V``, so it is evaluated with ``B / tr B`` (same
value, no overflow for large p). ``p = 1`` gives ``W = V``: the plain
Perceptron on the concatenated ``dK`` vector. The paper advises ``p``
logarithmic in ``r = min(d, K)`` (the remark after Theorem 10): the default is
``p = max(1, round(ln r))`` (docs/algorithms.md Sec. 1.6 [A]).

``labels="per_task"`` is the JMLR generalisation to K tasks learned at once,
a **reconstruction [R]** (the JMLR text is not available): task ``i`` predicts
with column ``i`` of ``W``, ``c(V) (B^{p-1} C)_{ii}``, and a mistake on task
``i`` adds ``y_i x_{i,t} e_i^T`` to ``V``. :meth:`MatrixPNormPerceptron.score_and_learn_labels`
takes the K labels of a round at once; a round through the common contract
reveals the label of task ``i_t`` only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from learners.active.kernels import kernel_rows
from learners.base import APPEND_BIAS, L2_NORMALIZE, Param
from learners.inputs import Batch, check_label
from learners.kernels import kernel_array
from learners.multiview.contract import MultiviewLearner
from learners.params import int_between, one_of, optional
from learners.perceptron.multitask import CAVALLANTI2010, is_mistake
from learners.registry import register

__all__ = ["MAX_P", "MatrixPNormPerceptron", "default_p", "schatten_link"]

#: The largest Schatten exponent taken: a mistake costs p - 2 products of K x K matrices,
#: and ``round(ln min(d, K))`` stays below 15 for any d and K up to a million.
MAX_P = 64


def default_p(d: int, K: int) -> int:
    """``max(1, round(ln min(d, K)))`` (docs/algorithms.md Sec. 1.6)."""
    r = min(d, K)
    return max(1, math.floor(math.log(r) + 0.5))


def schatten_link(B: np.ndarray, p: int) -> tuple[float, np.ndarray]:
    """``(c, P)`` with ``W = c V P`` equal to ``c(V) V B^{p-1}`` (Theorem 10's gradient).

    Evaluated on ``B / tr B``: ``c = (tr Bn^p)^{1/p-1}``, ``P = Bn^{p-1}``, which
    gives the same ``W`` (degree-1 homogeneity). ``V = 0`` gives ``c = 0``.
    """
    K = B.shape[0]
    if p == 1:
        return 1.0, np.eye(K)
    tr = float(np.trace(B))
    if tr <= 0.0:
        return 0.0, np.zeros((K, K))
    Bn = B / tr
    P = Bn.copy()
    for _ in range(p - 2):
        P = P @ Bn
    trace_p = float(np.sum(P * Bn))
    return trace_p ** (1.0 / p - 1.0), P


@register
class MatrixPNormPerceptron(MultiviewLearner):
    """2p-norm matrix Perceptron (cavallanti2010 Sec. 7, Theorem 10): multiview, one shared label.

    All K views have dimension ``n_features``. Predicts ``SGN(c(V) tr(B^{p-1} V^T X_t))``
    with ``B = V^T V`` kept incrementally; on a mistake ``V <- V + y_t X_t``. The
    Schatten 2p-norm with ``p`` logarithmic in ``min(d, K)`` approaches trace-norm
    regularisation of ``U = [u_1, ..., u_K]``, which pays when the views' reference
    vectors span a low-dimensional subspace. ``p = 1`` is one Perceptron on the
    concatenated instance. ``labels="per_task"`` is the JMLR K-task form, a
    reconstruction [R] (module docstring). O(dK^2 + K^3) per round; an interleaved
    event (the round whose other views are zero) O(K nnz + K^2), plus O(K^3 p) after
    a mistake (docs/algorithms.md Sec. 1.6).

    :meth:`task_weights` returns the rows of ``W^T`` (row i predicts view/task i).
    """

    name = "matrix-pnorm"
    summary = "2p-norm matrix Perceptron: multiview learning with Schatten-norm co-regularisation"
    paper = f"{CAVALLANTI2010} (Sec. 7, Theorem 10)"
    params: ClassVar[tuple[Param, ...]] = (
        Param(
            "p",
            None,
            f"Schatten exponent: the 2p-norm, p an integer in [1, {MAX_P}] (a mistake costs p - 2 "
            "K x K products); None = max(1, round(ln min(d, K))).",
            optional(int_between(1, MAX_P)),
        ),
        Param(
            "labels",
            "shared",
            "shared: one label per round for all views (Sec. 7); per_task: the JMLR K-task "
            "generalisation, column i of W predicts task i (reconstruction [R]).",
            one_of("shared", "per_task"),
        ),
        APPEND_BIAS,
        L2_NORMALIZE,
    )
    conformance_params: ClassVar[tuple[dict[str, Any], ...]] = (
        {},
        {"p": 3},
        {"p": 2, "labels": "per_task", "append_bias": True, "l2_normalize": True},
    )
    state_fields: ClassVar[tuple[str, ...]] = ("dims_", "p_", "V_", "B_", "n_mistakes_")

    p_: int
    V_: np.ndarray
    B_: np.ndarray
    n_mistakes_: int

    # ----------------------------------------------------------- state
    def _init_views_state(self) -> None:
        K = self._n_tasks
        p = self.hyper["p"]
        self.p_ = int(p) if p is not None else default_p(self.dim, K)
        #: V^T: row j is column j of the paper's d x K matrix V.
        self.V_ = np.zeros((K, self.dim))
        self.B_ = np.zeros((K, K))
        self.n_mistakes_ = 0

    def _grow(self, old_total: int) -> None:
        K = self.V_.shape[0] + 1
        self.V_ = np.vstack([self.V_, np.zeros((1, self.dim))])
        B = np.zeros((K, K))
        B[: K - 1, : K - 1] = self.B_
        self.B_ = B

    # ----------------------------------------------------------- mathematics
    def _matrix(self, phi: np.ndarray) -> np.ndarray:
        """``X_t^T``: row j is view j."""
        return phi.reshape(self._n_tasks, self.dim)

    def _scores(self, Xt: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
        """(C = V^T X, the link power P, the link scale c, per-task scores diag(P C)) of a round."""
        C = self.V_ @ Xt.T
        c, P = schatten_link(self.B_, self.p_)
        per_task = c * np.sum(P * C, axis=0)
        return C, P, c, per_task

    def _decision_views(self, phi: np.ndarray, task: int) -> float:
        C, P, c, per_task = self._scores(self._matrix(phi))
        if self.hyper["labels"] == "per_task":
            return float(per_task[task])
        return float(c * np.sum(P * C))

    def _learn_views(self, phi: np.ndarray, y: float, task: int) -> None:
        Xt = self._matrix(phi)
        C, P, c, per_task = self._scores(Xt)
        if self.hyper["labels"] == "per_task":
            if is_mistake(float(per_task[task]), y):
                delta = np.zeros_like(Xt)
                delta[task] = y * Xt[task]
                self._add(delta)
            return
        if is_mistake(float(c * np.sum(P * C)), y):
            self._add(y * Xt)

    def _add(self, delta: np.ndarray) -> None:
        """``V <- V + Delta`` with ``B`` kept equal to ``V^T V`` (rows of ``delta`` are columns)."""
        cross = self.V_ @ delta.T
        self.B_ += cross + cross.T + delta @ delta.T
        self.V_ += delta
        self.n_mistakes_ += 1

    def score_and_learn_labels(self, views: Any, y: Sequence[float]) -> np.ndarray:
        """A round with all K labels (``labels="per_task"``, the [R] JMLR form).

        Every task is scored with the same ``W``; then ``V`` receives
        ``y_i x_{i,t} e_i^T`` for every mistaken task i. Returns the K scores.
        """
        if self.hyper["labels"] != "per_task":
            raise ValueError('score_and_learn_labels needs labels="per_task"')
        if len(y) != self._n_tasks:
            raise ValueError(f"a round needs {self._n_tasks} labels, got {len(y)}")
        labels = np.array([check_label(v, self.label_kind) for v in y])
        Xt = self._matrix(self._prepare_views(views))
        _, _, _, scores = self._scores(Xt)
        wrong = (scores >= 0.0) != (labels > 0.0)
        if wrong.any():
            self._add((labels * wrong)[:, None] * Xt)
        return scores

    def _task_weights(self) -> np.ndarray:
        c, P = schatten_link(self.B_, self.p_)
        return c * (P @ self.V_)

    def _score_and_learn_batch(self, batch: Batch, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        """Interleaved events in one compiled pass, O(K nnz + K^2) each: the numbers of
        :meth:`_score_and_learn_rounds` on the rounds whose other views are zero, bit for
        bit (:func:`learners.multiview.kernels.matrix_pnorm_lone_pass`)."""
        from learners.multiview import kernels

        scores, mistakes = kernels.matrix_pnorm_lone_pass(
            kernel_rows(batch),
            kernel_array(y, np.float64),
            kernel_array(tasks, np.int64),
            self.p_,
            self.hyper["labels"] == "per_task",
            self.V_,
            self.B_,
        )
        self.n_mistakes_ += int(mistakes)
        return scores

    def _score_and_learn_rounds(
        self, Phi: np.ndarray, y: np.ndarray, tasks: np.ndarray
    ) -> np.ndarray:
        """Compiled pass (:mod:`learners.multiview.kernels`), equal to the numpy rounds."""
        from learners.multiview import kernels

        scores, mistakes = kernels.matrix_pnorm_pass(
            Phi, y, tasks, self.p_, self.hyper["labels"] == "per_task", self.V_, self.B_
        )
        self.n_mistakes_ += int(mistakes)
        return scores
