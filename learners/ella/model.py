"""The streaming learner shared by the ELLA family (ruvolo2014; docs/algorithms.md Sec. 4).

Every task ``t`` keeps what its single-task fit needs, so ``(theta_t, D_t)`` can be
refreshed whenever new examples arrive:

* linear base learner: the sufficient statistics ``X^T X``, ``X^T y`` and ``n_t``;
* logistic base learner: a bounded buffer of the task's last ``buffer_size`` examples
  (logistic regression has no finite sufficient statistics).

**Refresh schedule.** :meth:`Learner.learn_one` adds the example to its task's
statistics; once a task has ``refresh_every`` examples that were not yet used, it is
*refreshed*: ``(theta_t, D_t)`` is refitted, the code ``s_t`` is recomputed by the
Lasso (Eq. 11) over the current basis, and the variant's basis update runs (for
ELLA-SVD / Incremental / Dual only the columns with ``s_t[j] != 0``). The batch
path :meth:`Learner.score_and_learn_many` follows the same schedule row by row, so it
equals ``decision_one`` + ``learn_one``. :meth:`BasisLearner.learn_many` is the
paper's event "a batch of training data for task t" (ruvolo2014, lifelong setting):
all rows are added first and every task in the batch is refreshed exactly once at
the end. :meth:`BasisLearner.refresh` refreshes on demand.

**Cost per refresh** (d = dimension, k = basis size, q = non-zeros of ``s_t``,
r = tasks sharing an atom, n = examples of the task): base learner
``xi(d, n)`` = O(d^3) (linear, from the statistics) or O(iterations * buffer * d^2)
(logistic); Lasso O(d^2 k + d k^2 + sweeps * k^2); accumulator update O(d^2 k^2).
Then, against the paper's complexity section: ``ella`` solves the dk x dk system,
O(d^3 k^3) as written (the paper quotes O(d^3 k^2)); ``ella-svd`` runs q GSVD
steps, O(q d^3 + q r^2 d) plus O(r d^2 k^2) to keep the accumulators of the
rewritten codes; ``ella-incremental`` O(q (d^3 + k d^2)); ``ella-dual`` the sum of
the two plus one evaluation of Eq. (7), O(T d^2); ``mtl-svd`` reruns Algorithm 2
over every task, O(sweeps (T (d^2 k + d k^2) + k d^3 + k r^2 d)).

**Unseen tasks.** :meth:`BasisLearner.encode` fits a task model to labelled data
from the current basis (the code only) without changing anything, as in the
paper's evaluation. A task that never received data predicts 0.

**Relations.** :meth:`Learner.relation_matrix` is the cosine similarity of the
codes, ``R_uv = s_u . s_v / (|s_u| |s_v|)`` (0 when a code is all zero, 1 on the
diagonal): tasks built from the same atoms with the same signs are close.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from learners.base import L2_NORMALIZE, Learner, Param
from learners.ella.accumulators import (
    basis_objective,
    contribution,
    eq7_objective,
    solve_basis,
    update_columns,
)
from learners.ella.base_learners import Ridge, fit_linear, fit_logistic, icml_ridge
from learners.ella.gsvd import atom_weights, gsvd_rank_one
from learners.ella.lasso import sparse_code, sparse_codes
from learners.ella.limits import check_state_size
from learners.inputs import Batch, Vec, check_task
from learners.params import boolean, non_negative, one_of, positive, positive_int

__all__ = ["RUVOLO2013", "RUVOLO2014", "BasisLearner"]

RUVOLO2013 = "Ruvolo, Eaton. ELLA: An Efficient Lifelong Learning Algorithm. ICML 2013"
RUVOLO2014 = (
    "Ruvolo, Eaton. Online Multi-Task Learning via Sparse Dictionary Optimization. AAAI 2014"
)

#: Squared column norm below which a basis column counts as all zero and is redrawn.
ZERO_COLUMN = 1e-10

#: Largest magnitude of a feature value the family learns from (docs/algorithms.md Sec. 4.10).
#: Its systems hold products of up to four values (``X^T X`` and ``D_t`` of two, the GSVD
#: step of products of ``D_t`` with itself), which stay finite in double precision below
#: it; an example beyond it is refused with a ``ValueError`` before it changes anything.
#: Float32 values (the service's wire format, at most 3.4e38) never reach it. Regression
#: targets are held to the same bound (``X^T y`` and the tasks' weights carry them).
MAX_FEATURE_MAGNITUDE = 1e50


COMMON_PARAMS: tuple[Param, ...] = (
    Param(
        "base_learner",
        "linear",
        "Single-task learner: 'linear' (regression, real y, decision = prediction) or "
        "'logistic' (classification, y in {-1,+1}, decision = logit).",
        one_of("linear", "logistic"),
    ),
    Param("k", 5, "Number of basis columns (latent components) of L.", positive_int),
    Param("mu", float(np.exp(-5)), "L1 weight mu of the sparse codes (Eq. 11).", non_negative),
    Param(
        "lam",
        float(np.exp(-5)),
        "lambda on ||L||_F^2 in ELLA's basis objective (ELLA, Incremental, Dual).",
        non_negative,
    ),
    Param(
        "ridge",
        float(np.exp(-5)),
        "Ridge of the base learner; also added to D_t (Eq. 7), which keeps D_t positive definite.",
        positive,
    ),
    Param(
        "ridge_form",
        "aaai",
        "Base-learner ridge (docs/algorithms.md Sec. 8 #12): 'aaai' (ruvolo2014 Eq. 7: ridge "
        "||theta||^2 in the fit, D = ridge I + Hessian) or 'icml' (ELLA 2013 / MATLAB: "
        "D = (X^T X + ridge I') / n, ridge / n on theta, bias free with append_bias or "
        "last_is_bias).",
        one_of("aaai", "icml"),
    ),
    Param(
        "refresh_every",
        10,
        "learn_one refreshes a task after this many new examples of it.",
        positive_int,
    ),
    Param(
        "buffer_size",
        500,
        "Logistic base learner: examples kept per task (the most recent ones).",
        positive_int,
    ),
    Param(
        "append_bias",
        True,
        "Append a constant 1 feature to x (the paper's bias feature).",
        boolean,
    ),
    Param(
        "last_is_bias",
        False,
        "The input's last feature already is the bias (a constant 1, as in synthetic-ella and "
        "school): with append_bias off it is the coordinate the ICML form leaves unpenalised "
        "(the MATLAB code's lastFeatureIsABiasTerm), so d stays the paper's.",
        boolean,
    ),
    Param(
        "init_first_k",
        False,
        "Copy the models of the first k new tasks into the columns of L, with one-hot codes "
        "(the ELLA MATLAB code's initializeWithFirstKTasks, docs/algorithms.md Sec. 4.3 step 4).",
        boolean,
    ),
    Param(
        "dead_column",
        "randn",
        "How an all-zero basis column is redrawn (docs/algorithms.md Sec. 4.3 step 3): 'randn' "
        "(default) an unscaled standard-normal column, randn(d, 1) as the authors' code does "
        "(norm about sqrt(d)); 'unit' a random unit-length column (K-SVD's scale, our earlier "
        "reading).",
        one_of("randn", "unit"),
    ),
    L2_NORMALIZE,
)


class BasisLearner(Learner):
    """A shared basis ``L`` (d x k) and sparse codes ``s_t``; ``theta_t = L s_t``.

    Subclasses implement :meth:`_update_basis`, the variant's basis step after the
    code of a task was refreshed.
    """

    kind: ClassVar[str] = "both"
    max_target_magnitude: ClassVar[float | None] = MAX_FEATURE_MAGNITUDE
    #: Whether ELLA's accumulators ``A``, ``b`` are kept (the variants whose basis step
    #: reads them); the others leave them at zero and save O(d^2 k^2) per code change.
    uses_accumulators: ClassVar[bool] = True
    params: ClassVar[tuple[Param, ...]] = COMMON_PARAMS
    conformance_params: ClassVar[tuple[dict[str, Any], ...]] = (
        {"k": 4},
        {"k": 4, "base_learner": "logistic"},
    )
    state_fields: ClassVar[tuple[str, ...]] = (
        "L_",
        "S_",
        "theta_",
        "D_",
        "count_",
        "pending_",
        "used_",
        "A_",
        "b_",
        "xtx_",
        "xty_",
        "bufx_",
        "bufy_",
    )

    # ----------------------------------------------------------------- set-up
    def _label_kind(self) -> str:
        return "regression" if self.hyper["base_learner"] == "linear" else "classification"

    @classmethod
    def state_bytes(cls, n_features: int, n_tasks: int, **params: Any) -> int:
        """ELLA's state: ``L`` (d x k), ``S``, ``theta``, the per-task ``D_t`` and
        ``X^T X`` (K x d x d), the accumulators ``A`` ((dk)^2) and ``b``, and the
        logistic base learner's example buffers (K x buffer_size x d)."""
        hyper = cls._resolve_params(params)
        d, K, k = int(n_features) + int(bool(hyper["append_bias"])), int(n_tasks), int(hyper["k"])
        B = int(hyper["buffer_size"]) if hyper["base_learner"] == "logistic" else 0
        floats = d * k + K * k + 2 * K * d + 2 * K * d * d + (d * k) ** 2 + d * k + K * B * (d + 1)
        return 8 * floats + 17 * K

    @property
    def k(self) -> int:
        """Number of basis columns."""
        return int(self.hyper["k"])

    def _buffer_rows(self) -> int:
        return int(self.hyper["buffer_size"]) if self.label_kind == "classification" else 0

    def _check_size(self, n_tasks: int) -> None:
        """Refuse a state too large to hold (:mod:`learners.ella.limits`), before allocating it."""
        check_state_size(
            self.name,
            dim=self.dim,
            k=self.k,
            n_tasks=n_tasks,
            buffer_rows=self._buffer_rows(),
            linear=self.label_kind == "regression",
            accumulators=self.uses_accumulators,
        )

    def _init_state(self) -> None:
        d, k, K = self.dim, self.k, self.n_tasks
        self._check_size(K)
        self.L_ = self._random_columns(k)
        self.S_ = np.zeros((K, k))
        self.theta_ = np.zeros((K, d))
        self.D_ = np.zeros((K, d, d))
        self.count_ = np.zeros(K, dtype=np.int64)
        self.pending_ = np.zeros(K, dtype=np.int64)
        self.used_ = np.zeros(K, dtype=bool)
        # Arrays a variant never reads are kept empty: A and b without accumulators,
        # X^T X with the logistic base learner (it keeps a buffer instead).
        dk = d * k if self.uses_accumulators else 0
        self.A_ = np.zeros((dk, dk))
        self.b_ = np.zeros(dk)
        self.xtx_ = np.zeros((K, self._xtx_dim(), self._xtx_dim()))
        self.xty_ = np.zeros((K, d))
        B = self._buffer_rows()
        self.bufx_ = np.zeros((K, B, d))
        self.bufy_ = np.zeros((K, B))

    def _random_columns(self, m: int) -> np.ndarray:
        """``m`` random unit-length columns (K-SVD's initialisation), drawn from self.rng."""
        cols = self.rng.standard_normal((self.dim, m))
        return cols / np.linalg.norm(cols, axis=0, keepdims=True)

    def _xtx_dim(self) -> int:
        return self.dim if self.label_kind == "regression" else 0

    def _add_task(self) -> None:
        self._check_size(self.n_tasks + 1)
        d, k, B, m = self.dim, self.k, self._buffer_rows(), self._xtx_dim()
        self.S_ = np.vstack([self.S_, np.zeros((1, k))])
        self.theta_ = np.vstack([self.theta_, np.zeros((1, d))])
        self.D_ = np.concatenate([self.D_, np.zeros((1, d, d))])
        self.count_ = np.append(self.count_, 0)
        self.pending_ = np.append(self.pending_, 0)
        self.used_ = np.append(self.used_, False)
        self.xtx_ = np.concatenate([self.xtx_, np.zeros((1, m, m))])
        self.xty_ = np.vstack([self.xty_, np.zeros((1, d))])
        self.bufx_ = np.concatenate([self.bufx_, np.zeros((1, B, d))])
        self.bufy_ = np.vstack([self.bufy_, np.zeros((1, B))])

    # ---------------------------------------------------------- inspection
    def basis(self) -> np.ndarray:
        """A copy of the basis ``L`` (dim x k)."""
        return self.L_.copy()

    def codes(self) -> np.ndarray:
        """A copy of the codes, one row ``s_t`` per task (K x k)."""
        return self.S_.copy()

    def _task_weights(self) -> np.ndarray:
        return self.S_ @ self.L_.T

    relation_kind = "code-similarity"
    relation_meaning = (
        "Cosine similarity of the tasks' codes over the shared basis (derived, 1 on the "
        "diagonal): tasks built from the same atoms with the same signs are close."
    )

    def _relation(self) -> np.ndarray:
        norms = np.linalg.norm(self.S_, axis=1)
        unit = self.S_ / np.where(norms > 0, norms, 1.0)[:, None]
        R = unit @ unit.T
        np.fill_diagonal(R, 1.0)
        return R

    def objective(self, penalty: str = "l1") -> float:
        """Eq. (7) over the tasks that shaped the basis (docs/algorithms.md Sec. 8 #13).

        ``penalty``: ``"l1"`` (``mu ||s||_1``, the default) or ``"l0"`` (``mu ||s||_0``,
        as Eq. (7) is printed).
        """
        u = self.used_
        S = self.S_[u]
        return eq7_objective(
            self.L_, S, self.theta_[u], self.D_[u], self.count_[u], self.hyper["mu"], penalty
        )

    def basis_objective(self) -> float:
        """ELLA's ``lam ||L||_F^2 + (1/T) sum_t ||theta_t - L s_t||^2_{D_t}`` (fixed codes)."""
        u = self.used_
        return basis_objective(self.L_, self.S_[u], self.theta_[u], self.D_[u], self.hyper["lam"])

    # ------------------------------------------------------------ predicting
    def _decision(self, x: Vec, task: int) -> float:
        return x.dot(self.L_ @ self.S_[task])

    # -------------------------------------------------------------- learning
    def _learn(self, x: Vec, y: float, task: int) -> None:
        self._check_magnitude(x.val, y)
        self._accumulate(task, x.dense(), y)
        if self.pending_[task] >= self.hyper["refresh_every"]:
            self._refresh(task)

    def _check_magnitude(self, values: np.ndarray, targets: Any) -> None:
        """Refuse feature values or targets beyond :data:`MAX_FEATURE_MAGNITUDE` (after
        the learner's preprocessing), before anything changes."""
        largest = float(np.max(np.abs(values))) if values.size else 0.0
        if largest > MAX_FEATURE_MAGNITUDE:
            raise ValueError(
                f"{self.name} learns from feature values of magnitude at most "
                f"{MAX_FEATURE_MAGNITUDE:g} (its systems multiply up to four of them), "
                f"got {largest:.3g}"
            )
        y = np.asarray(targets, dtype=np.float64)
        largest = float(np.max(np.abs(y))) if y.size else 0.0
        limit = self.max_target_magnitude
        if limit is not None and largest > limit:
            raise ValueError(
                f"{self.name} learns from targets of magnitude at most {limit:g}, got {largest:.3g}"
            )

    def _accumulate(self, task: int, row: np.ndarray, y: float) -> None:
        """Add one example to the task's statistics (linear) or buffer (logistic)."""
        B = self.bufx_.shape[1]
        if B:
            slot = int(self.count_[task] % B)
            self.bufx_[task, slot] = row
            self.bufy_[task, slot] = y
        else:
            self.xtx_[task] += np.outer(row, row)
            self.xty_[task] += y * row
        self.count_[task] += 1
        self.pending_[task] += 1

    def _score_and_learn_batch(self, batch: Batch, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        """Row by row on the refresh schedule (so it equals learn_one), scores from cached weights."""
        X = batch.to_dense()
        self._check_magnitude(X, y)
        scores = np.empty(batch.n)
        W = self._task_weights()
        every = self.hyper["refresh_every"]
        for i, (label, t) in enumerate(zip(y.tolist(), tasks.tolist(), strict=True)):
            scores[i] = X[i] @ W[t]
            self._accumulate(t, X[i], label)
            if self.pending_[t] >= every:
                self._refresh(t)
                W = self._task_weights()
        return scores

    def learn_many(self, X: Any, y: Any, task: Any) -> None:
        """The paper's batch event: add all rows, then refresh each task of the batch once.

        Unlike :meth:`score_and_learn_many` (which follows the ``refresh_every``
        schedule row by row), the tasks are refreshed only after the whole batch,
        as ELLA and ELLA-SVD do for "a new batch of training data for task t".
        """
        batch, labels, tasks = self._prepare_batch(X, y, task)
        rows = batch.to_dense()
        self._check_magnitude(rows, labels)
        touched = list(dict.fromkeys(tasks.tolist()))
        for t in touched:
            mine = tasks == t
            self._accumulate_many(t, rows[mine], labels[mine])
        for t in touched:
            self._refresh(t)

    def _accumulate_many(self, task: int, X: np.ndarray, y: np.ndarray) -> None:
        if self.bufx_.shape[1]:
            for row, label in zip(X, y.tolist(), strict=True):
                self._accumulate(task, row, label)
            return
        self.xtx_[task] += X.T @ X
        self.xty_[task] += X.T @ y
        self.count_[task] += X.shape[0]
        self.pending_[task] += X.shape[0]

    def refresh(self, task: int | None = None) -> None:
        """Refresh ``task`` now (or every task with unused examples when None)."""
        if task is not None:
            todo = [check_task(task, self.n_tasks)]
        else:
            todo = np.flatnonzero(self.pending_).tolist()
        for t in todo:
            if self.count_[t] > 0:
                self._refresh(t)

    def _ridge(self, n: int) -> Ridge:
        """The base learner's penalty for ``n`` examples in the chosen ``ridge_form``."""
        ridge = float(self.hyper["ridge"])
        if self.hyper["ridge_form"] == "aaai":
            return ridge
        logistic = self.label_kind == "classification"
        free_bias = bool(self.hyper["append_bias"]) or bool(self.hyper["last_is_bias"])
        return icml_ridge(ridge, self.dim, n, logistic, free_bias)

    def _fit_task(self, task: int) -> tuple[np.ndarray, np.ndarray]:
        """``(theta_t, D_t)`` from the task's statistics or buffer."""
        B = self.bufx_.shape[1]
        if B:
            m = int(min(self.count_[task], B))
            return fit_logistic(self.bufx_[task, :m], self.bufy_[task, :m], self._ridge(m))
        n = int(self.count_[task])
        return fit_linear(self.xtx_[task], self.xty_[task], n, self._ridge(n))

    def _refresh(self, task: int) -> None:
        """Refit the task, recompute its code over the current basis, update the basis."""
        theta, D = self._fit_task(task)
        self.pending_[task] = 0
        self._redraw_zero_columns()
        first = self._n_used()
        if self.hyper["init_first_k"] and not self.used_[task] and first < self.k:
            self.L_[:, first] = theta
            s = np.zeros(self.k)
            s[first] = 1.0
        else:
            s = sparse_code(self.L_, D, theta, self.hyper["mu"])
        self._set_task(task, s, theta, D)
        self._update_basis(task)

    def _redraw_zero_columns(self) -> None:
        """Redraw all-zero basis columns (docs/algorithms.md Sec. 4.3 step 3, squared-norm test).

        ``dead_column="randn"``: each dead column, in column order, becomes
        ``randn(d, 1)`` (the authors' code); ``"unit"``: random unit-length columns.
        """
        zero = np.flatnonzero(np.sum(self.L_ * self.L_, axis=0) < ZERO_COLUMN)
        if not zero.size:
            return
        if self.hyper["dead_column"] == "unit":
            self.L_[:, zero] = self._random_columns(zero.size)
            return
        for j in zero:
            self.L_[:, j] = self.rng.standard_normal(self.dim)

    def single_task_fit(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(theta, D)`` of the base learner on labelled data; changes nothing."""
        batch, labels, _ = self._prepare_batch(X, y, 0)
        rows = batch.to_dense()
        self._check_magnitude(rows, labels)
        ridge = self._ridge(rows.shape[0])
        if self.label_kind == "classification":
            return fit_logistic(rows, labels, ridge)
        return fit_linear(rows.T @ rows, rows.T @ labels, rows.shape[0], ridge)

    def code_for(self, theta: np.ndarray, D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(s, L s)``: the code of Eq. (11) of a task model over the current basis."""
        s = sparse_code(self.L_, D, theta, self.hyper["mu"])
        return s, self.L_ @ s

    def codes_for(self, thetas: np.ndarray, Ds: np.ndarray) -> np.ndarray:
        """:meth:`code_for` of many task models at once: the codes, one row per model."""
        return sparse_codes(self.L_, Ds, thetas, self.hyper["mu"])

    def encode(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        """Fit a task to ``(X, y)`` from the current basis without changing anything.

        Returns ``(s, L s)``: the code of Eq. (11) for the single-task fit of the data,
        and the task's weights (in the preprocessed dimension). This is how the
        paper's evaluation treats tasks that were not learned yet; the basis, the
        codes and the random generator are untouched.
        """
        return self.code_for(*self.single_task_fit(X, y))

    # ----------------------------------------------------- shared basis steps
    def _set_task(self, task: int, s: np.ndarray, theta: np.ndarray, D: np.ndarray) -> None:
        """Replace the task's ``(s, theta, D)`` and its terms in ``A`` and ``b``."""
        if not self.uses_accumulators:
            self.S_[task], self.theta_[task], self.D_[task] = s, theta, D
            self.used_[task] = True
            return
        if self.used_[task]:
            old_A, old_b = contribution(self.S_[task], self.D_[task], self.theta_[task])
            self.A_ -= old_A
            self.b_ -= old_b
        self.S_[task], self.theta_[task], self.D_[task] = s, theta, D
        new_A, new_b = contribution(s, D, theta)
        self.A_ += new_A
        self.b_ += new_b
        self.used_[task] = True

    def _set_code(self, task: int, s: np.ndarray) -> None:
        self._set_task(task, s, self.theta_[task], self.D_[task])

    def _n_used(self) -> int:
        return int(self.used_.sum())

    def _ella_step(self) -> None:
        """ELLA's exact L step (docs/algorithms.md Sec. 4.3 step 6)."""
        self.L_ = solve_basis(self.A_, self.b_, self._n_used(), self.hyper["lam"], self.dim, self.k)

    def _incremental_step(self, task: int) -> None:
        """ELLA Incremental: update the columns in the support of ``s_task`` once each."""
        columns = np.flatnonzero(self.S_[task]).tolist()
        self.L_ = update_columns(
            self.L_, self.A_, self.b_, self._n_used(), self.hyper["lam"], columns
        )

    def _gsvd_atom(self, j: int) -> None:
        """GSVD update of atom ``j`` and of the codes of every task using it (Eqs. 8-10, 5)."""
        users = np.flatnonzero(self.used_ & (self.S_[:, j] != 0.0))
        if users.size == 0:
            return
        S = self.S_[users]
        E = (self.theta_[users] - S @ self.L_.T + np.outer(S[:, j], self.L_[:, j])).T
        M, w = atom_weights(self.D_[users])
        atom, s = gsvd_rank_one(E, M, w)
        self.L_[:, j] = atom
        for u, value in zip(users.tolist(), s.tolist(), strict=True):
            code = self.S_[u].copy()
            code[j] = value
            self._set_code(u, code)

    def _svd_step(self, task: int) -> None:
        """ELLA-SVD: one GSVD update per atom in the support of ``s_task``."""
        for j in np.flatnonzero(self.S_[task]).tolist():
            self._gsvd_atom(j)

    def _update_basis(self, task: int) -> None:
        """The variant's basis step after ``task`` was re-encoded."""
        raise NotImplementedError
