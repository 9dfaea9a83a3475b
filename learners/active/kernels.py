"""Compiled sequential passes of selective sampling over Perceptron-style bases.

One call of :func:`selective_pass` processes a whole batch row by row, in the
order of the row-by-row reference (:class:`learners.active.selective.SelectiveSampling`
with ``_decision``, ``_query`` and ``_learn``), at a cost linear in the batch
and independent of the mistake rate. Per row ``(x, y, k)``:

1. the score ``p`` is the base learner's decision (docs/algorithms.md Sec. 6);
2. active pass only: unless the query budget is spent, one uniform ``u`` is
   consumed and the label is asked for when ``u < b_t / (b_t + |p|)``
   (Cesa-Bianchi, Gentile & Zaniboni 2006, Fig. 1; ``b_t`` fixed or DOGMA's
   adaptive ``b R_t^2 sqrt(1 + n_k)``), or ``u < rate`` for the fixed-rate rule
   of xu2018's "Random" baseline;
3. a labelled row (every row of a labelled pass, a queried row of an active
   pass) is learned: on a mistake ``SGN(p) != y`` (``SGN(0) = +1``) the base
   steps. Bases (``form``):

   * :data:`ROWS`: one Perceptron per task, ``w_k += y x`` (``ipl``; with
     ``pooled`` one shared vector, ``stl`` / ``pt-global``);
   * :data:`B_FAMILY`: the multitask Perceptron in its shared + per-task form,
     ``p = (<x, v_k> + beta <x, s>) / (1 + b)``, ``v_k += y x``, ``s += y x``
     (``cmtl`` with the b-family matrix, saha2011 Eq. 2.2, docs/algorithms.md Sec. 1.2);
   * :data:`MATRIX`: ``W += y outer(A^{-1}[:, k], x)`` (``cmtl`` with a graph or SPD A).

Rows come dense (a C-ordered 2-D array) or CSR (``indptr``, ``indices``,
``data``), see :func:`kernel_rows`; each row is copied into a buffer with the
learner's preprocessing applied (:func:`load_row`), and the small row helpers
here, shared with :mod:`learners.amlc.kernels`, work on that buffer. The uniforms are drawn ahead by
:class:`learners.active.draws.Uniforms`. :func:`warm` compiles everything on
tiny inputs (``cache=True`` keeps the machine code on disk across processes).
The kernels of :mod:`learners.amlc.kernels` (and :mod:`learners.adaptive.kernels`,
through :func:`load_row`) carry the helpers of this module inlined; numba checks a
cached kernel against its own source file only, so the cache lives in a directory
keyed by the source of every compiled module (:mod:`learners.compile_cache`), and a
change here compiles them afresh.

The row helpers, called once or K times per row, are compiled without reference
counting (:data:`learners.kernels.ROW_HELPER`); counted, a :func:`load_row` call
cost ~75 ns, more than copying a row of 100 values.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from learners.inputs import Batch, Vec
from learners.kernels import (
    ROW_HELPER,
    ROW_KERNEL,
    kernel_array,
    prefetch_columns,
    prefetch_csr_row_ahead,
    prefetch_row_ahead,
    register_warmup,
)

__all__ = [
    "B_FAMILY",
    "MATRIX",
    "NO_BUDGET",
    "ROWS",
    "KernelPass",
    "KernelRows",
    "dense_event_call",
    "event_row_taken",
    "kernel_rows",
    "rows_between",
    "load_row",
    "load_row_inlined",
    "row_axpy",
    "row_buffers",
    "row_dot",
    "row_margins",
    "row_sqnorm",
    "selective_pass",
    "vector_rows",
    "warm",
    "warm_call",
    "warm_rows",
]

ROWS = 0
B_FAMILY = 1
MATRIX = 2
#: ``remaining`` queries of a learner without budget.
NO_BUDGET = np.iinfo(np.int64).max

#: ``(dense, X, indptr, indices, data, bias, normalize)``, see :func:`kernel_rows`.
KernelRows = tuple[bool, np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool, bool]


class KernelPass(NamedTuple):
    """What every pass kernel reads and fills, whatever the learner (one argument).

    The rows (the fields of :data:`KernelRows`), the labels ``y`` and task indices,
    ``active`` (an active pass: query, then learn the queried rows; otherwise learn
    every row), the uniforms ``u`` drawn ahead, the queries ``remaining`` in the
    budget, and the outputs ``scores`` and ``queried``.
    """

    dense: bool
    X: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    bias: bool
    normalize: bool
    y: np.ndarray
    tasks: np.ndarray
    active: bool
    u: np.ndarray
    remaining: int
    scores: np.ndarray
    queried: np.ndarray


#: Sums may be reassociated (and so run in SIMD lanes); nothing else of IEEE
#: arithmetic is relaxed. A sum then differs from numpy's (BLAS) one in its last
#: bits only, and is the same on every call of the same compiled code.
_SUMS = {"reassoc"}

_NO_DENSE = np.zeros((0, 0))
_NO_INT = np.zeros(0, dtype=np.int64)
_NO_FLOAT = np.zeros(0)


def kernel_rows(batch: Batch, bias: bool = False, normalize: bool = False) -> KernelRows:
    """The batch in the form the kernels read, with the preprocessing they still apply.

    ``bias`` / ``normalize`` ask the kernel to append the constant 1 and to scale each
    row to unit norm as it reads it (docs/algorithms.md Sec. 0), which costs no pass over
    the batch; give them False for a batch that is already preprocessed.
    """
    if batch.dense is not None:
        # C-ordered and writeable: the types the kernels are compiled for (numba
        # would compile another version for a read-only array).
        X = kernel_array(batch.dense, np.float64)
        return True, X, _NO_INT, _NO_INT, _NO_FLOAT, bias, normalize
    csr = batch.csr
    assert csr is not None
    return (
        False,
        _NO_DENSE,
        csr.indptr.astype(np.int64, copy=False),
        csr.indices.astype(np.int64, copy=False),
        np.ascontiguousarray(csr.data, dtype=np.float64),
        bias,
        normalize,
    )


def vector_rows(v: Vec, bias: bool, normalize: bool) -> KernelRows:
    """One canonical vector as a batch of one row, in the form the kernels read."""
    if v.idx is None:
        return True, v.val.reshape(1, -1), _NO_INT, _NO_INT, _NO_FLOAT, bias, normalize
    indptr = np.array([0, v.idx.shape[0]], dtype=np.int64)
    return False, _NO_DENSE, indptr, v.idx, v.val, bias, normalize


def rows_between(rows: KernelRows, start: int, stop: int) -> KernelRows:
    """Rows ``start`` to ``stop`` (excluded) of ``rows``, without a copy: a dense batch's
    row slice, or a CSR batch's ``indptr`` slice (its offsets index the whole
    ``indices``/``data``, which the kernels read through it)."""
    dense, X, indptr, indices, data, bias, normalize = rows
    if dense:
        return True, X[start:stop], indptr, indices, data, bias, normalize
    return False, X, indptr[start : stop + 1], indices, data, bias, normalize


# ---------------------------------------------------------------- row helpers
# The loops over a row live in small functions without branches (one per row
# form): LLVM vectorises those, and a function holding both forms it does not.
@njit(fastmath=_SUMS, **ROW_HELPER)
def _sumsq(val: np.ndarray, n: int) -> float:  # pragma: no cover - compiled
    s = 0.0
    for p in range(n):
        s += val[p] * val[p]
    return s


@njit(fastmath=_SUMS, **ROW_HELPER)
def _dot_dense(w: np.ndarray, val: np.ndarray, n: int) -> float:  # pragma: no cover - compiled
    s = 0.0
    for j in range(n):
        s += val[j] * w[j]
    return s


@njit(fastmath=_SUMS, **ROW_HELPER)
def _dot_sparse(
    w: np.ndarray, idx: np.ndarray, val: np.ndarray, n: int
) -> float:  # pragma: no cover - compiled
    s = 0.0
    for p in range(n):
        s += val[p] * w[idx[p]]
    return s


@njit(**ROW_HELPER)
def _axpy_dense(w: np.ndarray, a: float, val: np.ndarray, n: int) -> None:  # pragma: no cover
    for j in range(n):
        w[j] += a * val[j]


@njit(**ROW_HELPER)
def _axpy_sparse(
    w: np.ndarray, a: float, idx: np.ndarray, val: np.ndarray, n: int
) -> None:  # pragma: no cover - compiled
    for p in range(n):
        w[idx[p]] += a * val[p]


@njit(**ROW_HELPER)
def _copy_row(dst: np.ndarray, X: np.ndarray, i: int) -> None:  # pragma: no cover - compiled
    """``dst[:d] = X[i]`` for the 2-D ``X`` of d columns, as one vectorised loop."""
    for j in range(X.shape[1]):
        dst[j] = X[i, j]


@njit(**ROW_HELPER)
def _copy_span(dst: np.ndarray, src: np.ndarray, start: int, n: int) -> None:  # pragma: no cover
    """``dst[:n] = src[start:start + n]``, as one vectorised loop over a view of the span
    (indexing ``src[start + p]`` instead costs a negative-index test per value)."""
    span = src[start : start + n]
    for p in range(n):
        dst[p] = span[p]


@njit(cache=True, inline="always")
def load_row_inlined(
    call: KernelPass, i: int, dim: int, idx: np.ndarray, val: np.ndarray
) -> int:  # pragma: no cover - compiled
    """Copy row i into ``(idx, val)`` after the preprocessing; returns its length
    (:func:`load_row`, inlined where it is called).

    Dense rows fill ``val[:dim]`` (``idx`` unused), CSR rows their stored entries.
    ``bias`` appends 1 at index ``dim - 1``; ``normalize`` then scales the row by
    ``1 / ||x||`` (unless it is 0), as :meth:`learners.inputs.Batch.preprocessed` does.
    The copies are plain loops: a slice assignment copies through a temporary array.
    """
    if call.dense:
        n = call.X.shape[1]
        prefetch_row_ahead(call.X, i)
        _copy_row(val, call.X, i)
    else:
        start = call.indptr[i]
        n = call.indptr[i + 1] - start
        prefetch_csr_row_ahead(call.indptr, call.indices, call.data, i)
        _copy_span(idx, call.indices, start, n)
        _copy_span(val, call.data, start, n)
    if call.bias:
        idx[n] = dim - 1
        val[n] = 1.0
        n += 1
    if call.normalize:
        n2 = _sumsq(val, n)
        if n2 > 0.0:
            scale = 1.0 / math.sqrt(n2)
            for p in range(n):
                val[p] = val[p] * scale
    return n


@njit(**ROW_HELPER)
def load_row(
    call: KernelPass, i: int, dim: int, idx: np.ndarray, val: np.ndarray
) -> int:  # pragma: no cover - compiled
    """Copy row i into ``(idx, val)`` after the preprocessing; returns its length.

    Dense rows fill ``val[:dim]`` (``idx`` unused), CSR rows their stored entries.
    ``bias`` appends 1 at index ``dim - 1``; ``normalize`` then scales the row by
    ``1 / ||x||`` (unless it is 0), as :meth:`learners.inputs.Batch.preprocessed` does.
    A call, not inlined: most row loops measure the same either way and compile less
    code. The rule loops over an adaptive base (:mod:`learners.active.adaptive_kernels`)
    inline it (:func:`load_row_inlined`): there the call per row took a quarter of
    ``amlc-adaptive``'s time (1.41-1.46 against 1.83-1.92 M events per CPU second at
    K=10 d=100)."""
    return load_row_inlined(call, i, dim, idx, val)


@njit(cache=True)
def row_buffers(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """Buffers for :func:`load_row` rows of the dimension of ``W``'s rows."""
    dim = W.shape[1]
    return np.empty(dim, dtype=np.int64), np.empty(dim)


@njit(**ROW_KERNEL)
def row_dot(
    w: np.ndarray, dense: bool, idx: np.ndarray, val: np.ndarray, n: int
) -> float:  # pragma: no cover - compiled
    """``<x, w>`` for a loaded row, in O(nnz(x))."""
    if dense:
        return _dot_dense(w, val, n)
    return _dot_sparse(w, idx, val, n)


@njit(**ROW_KERNEL)
def row_axpy(
    w: np.ndarray, a: float, dense: bool, idx: np.ndarray, val: np.ndarray, n: int
) -> None:  # pragma: no cover - compiled
    """``w += a x`` in place for a loaded row, O(nnz(x))."""
    if dense:
        _axpy_dense(w, a, val, n)
    else:
        _axpy_sparse(w, a, idx, val, n)


@njit(**ROW_HELPER)
def row_sqnorm(val: np.ndarray, n: int) -> float:  # pragma: no cover - compiled
    """``||x||^2`` of a loaded row."""
    return _sumsq(val, n)


@njit(**ROW_HELPER)
def row_margins(
    W: np.ndarray, out: np.ndarray, dense: bool, idx: np.ndarray, val: np.ndarray, n: int
) -> None:  # pragma: no cover - compiled
    """``out[m] = <x, w_m>`` for every row m of W and a loaded row: O(K nnz(x)).

    Every margin goes through the same :func:`row_dot`, so equal rows of W give
    bit-equal margins.
    """
    if dense:
        for m in range(W.shape[0]):
            out[m] = _dot_dense(W[m], val, n)
    else:
        for m in range(W.shape[0]):
            out[m] = _dot_sparse(W[m], idx, val, n)


# ---------------------------------------------------------------- selective sampling
@njit(cache=True)
def selective_pass(
    form: int,
    W: np.ndarray,
    s: np.ndarray,
    Ainv: np.ndarray,
    pooled: bool,
    beta: float,
    one_plus_b: float,
    call: KernelPass,
    b: float,
    rate: float,
    adaptive: bool,
    n_updates: np.ndarray,
    radius2: np.ndarray,
) -> tuple[int, int, int]:  # pragma: no cover - compiled
    """One sequential pass (see the module docstring). Returns (draws, queries, mistakes).

    ``rate > 0`` selects the fixed-rate rule ``u < rate``; otherwise the margin rule
    with ``b`` (and ``adaptive``, whose counters ``n_updates`` / ``radius2`` are
    updated in place). Fills ``call.scores`` and ``call.queried``.
    """
    dense = call.dense
    remaining = call.remaining
    K = W.shape[0]
    idx, val = row_buffers(W)
    drawn = 0
    asked = 0
    mistakes = 0
    rows = call.y.shape[0]
    ahead = not dense and not pooled
    for i in range(rows):
        if ahead and i + 1 < rows:  # the weights the next row is scored with, as
            lo, hi = call.indptr[i + 1], call.indptr[i + 2]  # learn_csr (perceptron)
            prefetch_columns(W[call.tasks[i + 1]], call.indices, lo, hi)
            if form == B_FAMILY:
                prefetch_columns(s, call.indices, lo, hi)
        nx = load_row(call, i, W.shape[1], idx, val)
        k = call.tasks[i]
        r = 0 if pooled else k
        if form == B_FAMILY:
            own = row_dot(W[k], dense, idx, val, nx)
            p = (own + beta * row_dot(s, dense, idx, val, nx)) / one_plus_b
        else:
            p = row_dot(W[r], dense, idx, val, nx)
        call.scores[i] = p
        sq = row_sqnorm(val, nx) if adaptive else 0.0
        if call.active:
            if remaining <= 0:
                continue
            if rate > 0.0:
                prob = rate
            else:
                bt = b
                if adaptive:
                    bt = b * max(sq, radius2[k]) * math.sqrt(1.0 + n_updates[k])
                denominator = bt + abs(p)
                prob = 1.0 if denominator <= 0.0 else bt / denominator
            draw = call.u[drawn]
            drawn += 1
            if not draw < prob:
                continue
            remaining -= 1
            asked += 1
            call.queried[i] = True
        label = call.y[i]
        if (p >= 0.0) == (label > 0.0):
            continue
        mistakes += 1
        if adaptive:
            n_updates[k] += 1
            radius2[k] = max(radius2[k], sq)
        if form == MATRIX:
            for m in range(K):
                row_axpy(W[m], label * Ainv[m, k], dense, idx, val, nx)
        else:
            row_axpy(W[r], label, dense, idx, val, nx)
            if form == B_FAMILY:
                row_axpy(s, label, dense, idx, val, nx)
    return drawn, asked, mistakes


# ---------------------------------------------------------------- single events
# The compiled entries of single events (learners.amlc.event_kernels,
# learners.active.adaptive_event_kernels, learners.adaptive.event_kernels) check a dense
# row and build its call here.
@njit(cache=True, inline="always")
def event_row_taken(x: np.ndarray, zeros_refused: bool) -> bool:  # pragma: no cover - compiled
    """Whether every entry of ``x`` is finite and, with ``zeros_refused``, non-zero: a
    single event's canonical vector holds a row with a zero entry in its sparse form,
    whose numbers an entry on the dense row may not give to the bit."""
    total = 0.0
    zeros = 0
    for p in range(x.shape[0]):  # 0 for finite entries, NaN otherwise (learners.kernels)
        total += x[p] - x[p]
        zeros += x[p] == 0.0
    return total == 0.0 and not (zeros_refused and zeros > 0)


@njit(cache=True)
def dense_event_call(
    x: np.ndarray, bias: bool, normalize: bool, task: int, label: float, learn: bool
) -> KernelPass:  # pragma: no cover - compiled
    """The call of one dense row ``x`` (C-ordered float64), typed as a dense batch's call.

    With ``learn``: a labelled round (``active`` off), which scores the row, then learns
    it with ``label``. Without: an active round with no query left in the budget, which
    scores the row and changes nothing (``decision_one``)."""
    floats = np.empty(2)
    floats[0] = label
    ints = np.empty(1, dtype=np.int64)
    ints[0] = task
    return KernelPass(
        True,
        x.reshape((1, x.shape[0])),
        ints[0:0],
        ints[0:0],
        floats[0:0],
        bias,
        normalize,
        floats[0:1],
        ints,
        not learn,
        floats[0:0],
        0,
        floats[1:2],
        np.zeros(1, dtype=np.bool_),
    )


@register_warmup
def warm() -> None:
    """Compile this module's kernels (dense and CSR rows) on tiny inputs."""
    for rows in warm_rows():
        for form in (ROWS, B_FAMILY, MATRIX):
            call = warm_call(rows, 2)
            n_updates = np.zeros(2, dtype=np.int64)
            selective_pass(
                form,
                np.zeros((2, 4)),
                np.zeros(4),
                np.eye(2),
                False,
                0.5,
                2.0,
                call,
                1.0,
                0.0,
                True,
                n_updates,
                np.zeros(2),
            )


def warm_rows() -> tuple[KernelRows, KernelRows]:
    """Two rows of dimension 3, dense and CSR, with bias and normalisation (for ``warm``)."""
    csr = (np.array([0, 1, 3], dtype=np.int64), np.array([0, 1, 2], dtype=np.int64), np.ones(3))
    return (
        (True, np.ones((2, 3)), _NO_INT, _NO_INT, _NO_FLOAT, True, True),
        (False, _NO_DENSE, *csr, True, True),
    )


def warm_call(rows: KernelRows, draws_per_row: int) -> KernelPass:
    """An active pass over the two ``warm_rows`` of tasks 0 and 1."""
    y = np.array([1.0, -1.0])
    tasks = np.array([0, 1], dtype=np.int64)
    u = np.full(2 * draws_per_row, 0.5)
    return KernelPass(*rows, y, tasks, True, u, NO_BUDGET, np.empty(2), np.zeros(2, dtype=np.bool_))
