"""The p-norm multitask Perceptron (Cavallanti, Cesa-Bianchi & Gentile 2010, Sec. 5).

**Reconstruction [R].** The JMLR text of this algorithm is not available; what
is implemented is the reconstruction of docs/algorithms.md Sec. 1.4, which is
unverified: do not quote paper numbers for it. It is the p-norm Perceptron
(Grove, Littlestone & Schuurmans 2001; Gentile 2003) run on the multitask
embedding

    ``z_t = A_(x)^{-1/2} phi_t``,  i.e. block j of z_t is ``(A^{-1/2})_{j, i_t} x_t``,

for the b-family ``(A_b^{-1/2})_{j,i} = (delta_ji - 1/K)/sqrt(1+b) + 1/K`` [D].
With ``theta = sum_{r in M} y_r z_r`` over the mistaken rounds M, the weights are
the p-norm link ``w = grad (1/2)||theta||_p^2``::

    w_i = sign(theta_i) |theta_i|^{p-1} / ||theta||_p^{p-2},

the prediction is ``SGN(w^T z_t)`` and a mistake adds ``y_t z_t`` to theta.
The embedding matters: on raw ``phi_t`` the global normaliser never changes a
sign and the tasks would not interact at all (docs/algorithms.md Sec. 1.4, pitfall).
At ``p = 2`` the link is the identity and ``w^T z_t = (A^{-1} V)_{i_t}^T x_t``:
exactly the multitask Perceptron ``cmtl`` (saha2011 Eq. 2.2).

Default ``p = max(2, 2 ln(K d))`` [R], fixed when the learner is built.
The link is evaluated without overflow for large p: with ``m = max |theta_i|``
and ``r_i = |theta_i| / m``, ``w_i = sign(theta_i) m r_i^{p-1} / S^{(p-2)/p}``,
``S = sum_i r_i^p`` in ``[1, K d]``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from learners.base import APPEND_BIAS, L2_NORMALIZE, Learner, Param
from learners.inputs import Batch, Vec
from learners.kernels import batch_rows, csr_arrays, kernel_array, row_of
from learners.params import at_least, optional
from learners.perceptron import pnorm_kernels
from learners.perceptron.interaction import Interaction, interaction_from_params
from learners.perceptron.multitask import CAVALLANTI2010, is_mistake, rank_one_update
from learners.perceptron.second_order import (
    INTERACTION_PARAMS,
    check_interaction_params,
)
from learners.registry import register

__all__ = [
    "PNormMultitaskPerceptron",
    "PNormMultitaskPerceptronReference",
    "default_p",
    "pnorm_link",
]

GENTILE2003 = "Gentile. The Robustness of the p-Norm Algorithms. Machine Learning 53, 2003"


def default_p(n_tasks: int, dim: int) -> float:
    """``max(2, 2 ln(K d))`` (docs/algorithms.md Sec. 1.4 [R])."""
    return max(2.0, 2.0 * math.log(n_tasks * dim))


def pnorm_link(theta: np.ndarray, p: float, out: np.ndarray | None = None) -> np.ndarray:
    """``grad (1/2)||theta||_p^2``, computed without overflow (module docstring).

    ``out`` (same shape as ``theta``, not ``theta`` itself) receives the result.
    """
    if out is None:
        out = np.empty_like(theta)
    if p == 2.0:
        out[...] = theta
        return out
    np.abs(theta, out=out)
    m = float(out.max()) if out.size else 0.0
    if m == 0.0:
        out.fill(0.0)
        return out
    out /= m
    S = float(np.sum(np.power(out, p)))
    np.power(out, p - 1.0, out=out)
    out *= m / S ** ((p - 2.0) / p)
    np.copysign(out, theta, out=out)
    return out


class PNormMultitaskPerceptronReference(Learner):
    """p-norm multitask Perceptron — a reconstruction [R] (docs/algorithms.md Sec. 1.4).

    The numpy reference; the registered ``cmtl-pnorm`` (:class:`PNormMultitaskPerceptron`)
    runs the same rule on the kernels of :mod:`learners.perceptron.pnorm_kernels`.

    The JMLR 2010 text (Cavallanti et al., Sec. 5) is missing; this is the
    p-norm Perceptron on ``z_t = A_(x)^{-1/2} phi_t`` with
    ``w = grad (1/2)||theta||_p^2`` (module docstring), which equals ``cmtl`` at
    ``p = 2``. A is chosen as for ``cmtl`` (b-family with default ``b = K``, task
    graph, or SPD ``A``); ``p`` defaults to ``max(2, 2 ln(K d))``.

    Cost: a mistake updates theta in O(K nnz) and recomputes the link and the
    effective task weights ``U = A^{-1/2} w`` in O(K d + K^2 d) (in preallocated
    buffers); a prediction is ``U_i^T x``, O(nnz). (The registered learner does
    not form U; see :class:`PNormMultitaskPerceptron`.)

    Attributes
    ----------
    Ainv_, R_ : ndarray, shape (K, K)
        ``A^{-1}`` and ``A^{-1/2}``.
    V_ : ndarray, shape (K, d)
        Per-task Perceptron sums ``sum y x`` of the mistakes (theta = R V; used to
        rebuild theta when :meth:`add_task` changes the b-family matrix).
    theta_ : ndarray, shape (K, d)
        ``theta`` in block form (row j = block j).
    p_ : float
        The p in use.
    n_mistakes_ : int
        Number of updates made.
    """

    name = "cmtl-pnorm"
    summary = "p-norm multitask Perceptron (reconstruction; p-norm link on A^(-1/2) embedding)"
    paper = f"{CAVALLANTI2010} (Sec. 5, reconstructed); {GENTILE2003}"
    params: ClassVar[tuple[Param, ...]] = (
        Param(
            "p",
            None,
            "The norm p >= 2 of the link; None means max(2, 2 ln(K d)) at construction. "
            "p = 2 is cmtl.",
            optional(at_least(2.0)),
        ),
        *INTERACTION_PARAMS,
        APPEND_BIAS,
        L2_NORMALIZE,
    )
    conformance_params: ClassVar[tuple[dict[str, Any], ...]] = (
        {},
        {"p": 4.0, "append_bias": True, "l2_normalize": True},
        {"A": np.array([[2.0, -0.5, 0, 0], [-0.5, 2.0, -0.5, 0], [0, -0.5, 2.0, 0], [0, 0, 0, 1]])},
    )
    state_fields: ClassVar[tuple[str, ...]] = ("Ainv_", "R_", "V_", "theta_", "p_", "n_mistakes_")

    interaction: Interaction
    _link: np.ndarray
    U_: np.ndarray

    @classmethod
    def _check_params(cls, params: dict[str, Any]) -> None:
        check_interaction_params(params)

    def _init_state(self) -> None:
        p = self.hyper["p"]
        self.p_ = float(default_p(self.n_tasks, self.dim) if p is None else p)
        self.interaction = interaction_from_params(self.hyper)
        self.Ainv_ = self.interaction.inverse(self.n_tasks)
        self.R_ = self.interaction.inverse_sqrt(self.Ainv_)
        self.V_ = np.zeros((self.n_tasks, self.dim))
        self.theta_ = np.zeros((self.n_tasks, self.dim))
        self.n_mistakes_ = 0
        self._refresh()

    def _refresh(self) -> None:
        """Recompute the effective task weights ``U = A^{-1/2} grad (1/2)||theta||_p^2``."""
        shape = self.theta_.shape
        if not hasattr(self, "_link") or self._link.shape != shape:
            self._link = np.empty(shape)
            self.U_ = np.empty(shape)
        pnorm_link(self.theta_, self.p_, out=self._link)
        np.matmul(self.R_, self._link, out=self.U_)

    def _set_state(self, state: Mapping[str, Any]) -> None:
        super()._set_state(state)
        self.p_ = float(self.p_)
        self._refresh()

    def _decision(self, x: Vec, task: int) -> float:
        return x.dot(self.U_[task])

    def _learn(self, x: Vec, y: float, task: int) -> None:
        if not is_mistake(x.dot(self.U_[task]), y):
            return
        x.add_to(self.V_[task], y)
        rank_one_update(self.theta_, self.R_[:, task], x, y)
        self.n_mistakes_ += 1
        self._refresh()

    def _add_task(self) -> None:
        self.Ainv_ = self.interaction.grown_inverse(self.Ainv_)
        self.R_ = self.interaction.grown_inverse_sqrt(self.Ainv_, self.R_)
        self.V_ = np.vstack([self.V_, np.zeros((1, self.dim))])
        if self.interaction.follows_task_count:
            # Every block of the embedding changed: rebuild theta = R V.
            self.theta_ = self.R_ @ self.V_
        else:
            self.theta_ = np.vstack([self.theta_, np.zeros((1, self.dim))])
        self._refresh()

    relation_kind = "fixed-interaction"
    relation_meaning = (
        "Fixed interaction matrix A chosen in the configuration, not learned; negative "
        "off-diagonal entries of A mean shared updates, not opposed tasks."
    )

    def _relation(self) -> np.ndarray:
        return self.interaction.matrix(self.Ainv_)

    def _task_weights(self) -> np.ndarray:
        return self.U_.copy()


@register
class PNormMultitaskPerceptron(PNormMultitaskPerceptronReference):
    """p-norm multitask Perceptron on compiled kernels, O(K nnz) per event.

    The rule of :class:`PNormMultitaskPerceptronReference` (docs/algorithms.md Sec. 1.4,
    a reconstruction [R]) without materialising ``U = A^{-1/2} w``: the kernels of
    :mod:`learners.perceptron.pnorm_kernels` keep ``sign(theta) |theta / c|^{p-1}``
    and ``sum |theta / c|^p`` up to date entry by entry, so a prediction and an
    update cost O(K nnz(x)) (plus an O(K d) rebuild every ~d/64 mistakes). Sparse
    high-dimensional streams (d = 100,000, ~100 non-zeros) therefore run at the
    cost of their non-zeros; memory is three ``K x d`` arrays.
    """

    #: A NaN or infinite value of a row makes its score NaN or infinite (checked by
    #: :func:`learners.checks.common.check_bad_values_of_a_large_batch`).
    scores_show_bad_values: ClassVar[bool] = True
    reference_class = PNormMultitaskPerceptronReference

    _Phi: np.ndarray
    _scalars: np.ndarray

    def _refresh(self) -> None:
        """Rebuild the kernel caches from ``theta_`` (after init, restore or add_task)."""
        self.theta_ = np.ascontiguousarray(self.theta_, dtype=np.float64)
        self.V_ = np.ascontiguousarray(self.V_, dtype=np.float64)
        self.R_ = np.ascontiguousarray(self.R_, dtype=np.float64)
        self._Phi = np.empty_like(self.theta_)
        every = max(1, self.dim // 64)
        self._scalars = np.array([1.0, 0.0, 0.0, float(every), self.p_])
        pnorm_kernels.rebuild(self.theta_, self._Phi, self._scalars)

    def _decision(self, x: Vec, task: int) -> float:
        idx, val = row_of(x)
        return float(pnorm_kernels.score(self._Phi, self.R_, idx, val, task, self._scalars))

    def _learn(self, x: Vec, y: float, task: int) -> None:
        idx, val = row_of(x)
        args = (self.theta_, self.V_, self._Phi, self.R_)
        _, wrong = pnorm_kernels.step(*args, idx, val, y, task, self._scalars)
        self.n_mistakes_ += int(wrong)

    def _score_and_learn_batch(self, batch: Batch, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        labels, rows, scores = batch_rows(y, tasks)
        args = (self.theta_, self.V_, self._Phi, self.R_)
        if batch.dense is not None:
            X = kernel_array(batch.dense, np.float64)
            wrong = pnorm_kernels.learn_dense(*args, X, labels, rows, self._scalars, scores)
        else:
            indptr, indices, data = csr_arrays(batch)
            wrong = pnorm_kernels.learn_csr(
                *args, indptr, indices, data, labels, rows, self._scalars, scores
            )
        self.n_mistakes_ += int(wrong)
        return scores

    def _task_weights(self) -> np.ndarray:
        c, total, p = self._scalars[pnorm_kernels.SCALE], self._scalars[pnorm_kernels.SUM], self.p_
        if total == 0.0:
            return np.zeros_like(self.theta_)
        return (c / total ** ((p - 2.0) / p)) * (self.R_ @ self._Phi)
