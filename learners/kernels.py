"""Shared compiled (numba) helpers of the learner kernels, and their warm-up.

Learner families compile their sequential test-then-train loops with numba
(``cache=True``, so a restarted process loads the machine code from the cache
instead of compiling again). This module holds what the families share:

* row arithmetic on a **row** given as ``(idx, val)``: a dense row is
  ``(NO_INDEX, x)`` (all ``d`` values), a sparse row the sorted indices of its
  non-zeros and their values, as in :class:`learners.inputs.Vec`;
* :func:`row_of`, the ``(idx, val)`` pair of a :class:`~learners.inputs.Vec`;
* the row form of the OMTL, ROM and ELLA kernels: :class:`KernelRows` (a
  batch as a dense C-ordered array or CSR arrays with int64 indices),
  :func:`row_dot` / :func:`row_axpy` (``idx is None`` means a dense row; numba
  prunes the other branch; a plain sum in index order, not the four lanes
  below) and :func:`vec_dot`, which sums a :class:`~learners.inputs.Vec` the
  same way, so that a ``decision_one`` equals the kernel's score bit for bit;
  :func:`warm_learners` compiles given learner classes;
* :func:`register_warmup` / :func:`warm_kernels`: every family registers a
  function that runs its kernels once on tiny inputs, and a service calls
  :func:`warm_kernels` at start-up so no compilation happens inside a request.

**Summation order.** Inner products take the non-zero coordinates of the row in
increasing index order, add the k-th of them into accumulator ``k mod 4`` and
return ``(a0 + a1) + (a2 + a3)``. The order depends only on the row's non-zeros,
so a dense row, the same row with explicit zeros and its sparse form give
bit-identical results (a dense row with zeros is read through the positions of
its non-zeros), while the four independent accumulators let both dense and
sparse rows run four multiply-adds per step without branches. Results differ
from numpy's BLAS dot only by rounding. On a dense C-contiguous row the four
lanes are one 4-wide vector accumulator (:func:`_simd_lanes1`, an LLVM intrinsic:
numba compiles with LLVM's SLP vectoriser off, which would otherwise leave the four
scalar chains unvectorised): each lane still adds its products in index order,
with a plain multiply and add, so the bits are those of the scalar lanes; the same
pass tests the row for zeros, so a dense row is read once per dot.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import scipy.sparse as sp
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

if TYPE_CHECKING:
    from learners.base import Learner
    from learners.inputs import Batch, Vec

__all__ = [
    "NO_INDEX",
    "ROW_HELPER",
    "ROW_KERNEL",
    "KernelRows",
    "row_axpy",
    "row_dot",
    "vec_dot",
    "warm_learners",
    "all_finite",
    "copy_signs",
    "axpy",
    "axpy2",
    "batch_rows",
    "csr_arrays",
    "kernel_array",
    "nonzeros_if_finite",
    "dot",
    "dot2",
    "dot_sqnorm",
    "exercise_learner",
    "prefetch",
    "prefetch_columns",
    "prefetch_csr_row_ahead",
    "prefetch_row_ahead",
    "register_warmup",
    "row_of",
    "warm_kernels",
]

#: The ``idx`` of a dense row: no index array, ``val`` holds every coordinate.
NO_INDEX = np.empty(0, dtype=np.int64)

#: numba options of a compiled function called once (or K times) per row that Python
#: also calls: cached, and compiled without reference counting. Such a function must
#: allocate nothing (it only borrows its caller's arrays). A compiled function whose
#: body branches otherwise increments and decrements the count of every array argument
#: on each call, two atomic operations per array: ~75 ns for a call with six arrays,
#: more than copying a row of 100 values. ``_nrt`` is an underscore option of numba's
#: jit, not public API: check it after a numba upgrade.
ROW_KERNEL: dict[str, Any] = {"cache": True, "_nrt": False}

#: :data:`ROW_KERNEL` for a helper that only compiled code calls: compiled without the
#: wrappers that let Python (or C, through a cfunc) call it. numba builds a wrapper for
#: every compiled signature and generates machine code for it, in the helper's own
#: module and again in every caller's module that links the helper in; without them a
#: family compiles in about 15% less CPU time (``make warm``). Python must never call
#: such a helper (the call would jump to a null address and crash the process):
#: ``tests/learners/test_compiled_only_helpers.py`` checks that no Python code names one.
#: ``no_cpython_wrapper`` and ``no_cfunc_wrapper`` are options of numba's jit that its
#: documentation does not list, like ``_nrt``.
ROW_HELPER: dict[str, Any] = {**ROW_KERNEL, "no_cpython_wrapper": True, "no_cfunc_wrapper": True}


def kernel_array(a: Any, dtype: type) -> np.ndarray:
    """``a`` as a C-contiguous, writable array of ``dtype``, copied only when it is not one.

    Kernels are compiled (and warmed up) for exactly these array types; a read-only
    or strided argument would otherwise compile a new specialisation on first use.
    An array that already is one is returned after a look at its flags (0.15 us,
    where ``np.require`` takes 0.9 us: a per-event call makes several such checks).
    """
    if type(a) is np.ndarray and a.dtype == dtype:
        flags = a.flags
        if flags.c_contiguous and flags.writeable:
            return a
    return np.require(a, dtype=dtype, requirements=("C", "W"))


def row_of(v: Vec) -> tuple[np.ndarray, np.ndarray]:
    """The kernel row ``(idx, val)`` of a canonical vector."""
    idx = NO_INDEX if v.idx is None else v.idx
    if not (idx.flags.writeable and v.val.flags.writeable):
        return kernel_array(idx, np.int64), kernel_array(v.val, np.float64)
    return idx, v.val


def batch_rows(y: np.ndarray, tasks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels (float64) and tasks (int64) of a batch as the kernels take them, and room for scores."""
    labels = kernel_array(y, np.float64)
    return labels, kernel_array(tasks, np.int64), np.empty(labels.shape[0])


def csr_arrays(batch: Batch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, indices, data)`` of a CSR batch for the kernels.

    The index arrays stay int32 when scipy made them so (the kernels are compiled
    for int32 and int64 indices), which saves converting every index of a batch.
    """
    csr = batch.csr
    if csr is None:
        raise ValueError("the batch is dense")
    small = csr.indptr.dtype == np.int32 and csr.indices.dtype == np.int32
    index = np.int32 if small else np.int64
    return (
        kernel_array(csr.indptr, index),
        kernel_array(csr.indices, index),
        kernel_array(csr.data, np.float64),
    )


@njit(cache=True)
def _lane_sum(a0: float, a1: float, a2: float, a3: float) -> float:
    return (a0 + a1) + (a2 + a3)


@njit(**ROW_HELPER)
def _dot_sparse(w: np.ndarray, idx: np.ndarray, val: np.ndarray, gathered: bool) -> float:
    # ``gathered``: val[k] belongs to idx[k]; otherwise val is dense and read at idx[k].
    a0 = a1 = a2 = a3 = 0.0
    n = idx.shape[0]
    m = n - n % 4
    for k in range(0, m, 4):
        j0, j1, j2, j3 = idx[k], idx[k + 1], idx[k + 2], idx[k + 3]
        if gathered:
            a0 += w[j0] * val[k]
            a1 += w[j1] * val[k + 1]
            a2 += w[j2] * val[k + 2]
            a3 += w[j3] * val[k + 3]
        else:
            a0 += w[j0] * val[j0]
            a1 += w[j1] * val[j1]
            a2 += w[j2] * val[j2]
            a3 += w[j3] * val[j3]
    for k in range(m, n):
        j = idx[k]
        p = w[j] * (val[k] if gathered else val[j])
        if k == m:
            a0 += p
        elif k == m + 1:
            a1 += p
        else:
            a2 += p
    return _lane_sum(a0, a1, a2, a3)


def _lanes_codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """LLVM IR of :func:`_simd_lanes`: one pass over ``val`` in 4-wide vectors.

    Lane ``l`` of the accumulator of each weight vector adds the products of the
    coordinates ``i = l mod 4`` in increasing ``i``: a vector ``fmul`` then ``fadd``
    (no fast-math flags), so every lane rounds exactly as the scalar loop does.
    float32 values are widened to float64 before they are used (exact).
    """
    arrays = [
        context.make_array(t)(context, builder, a) for t, a in zip(sig.args, args, strict=True)
    ]
    i64, dbl = ir.IntType(64), ir.DoubleType()
    vd = ir.VectorType(dbl, 4)
    vb = ir.VectorType(ir.IntType(1), 4)
    n = builder.extract_value(arrays[-1].shape, 0)
    accs = [cgutils.alloca_once_value(builder, ir.Constant(vd, [0.0] * 4)) for _ in args[:-1]]
    zeros = cgutils.alloca_once_value(builder, ir.Constant(vb, [0] * 4))

    def load4(array_type: Any, array: Any, offset: Any) -> Any:
        elem = context.get_data_type(array_type.dtype)
        vec = ir.VectorType(elem, 4)
        ptr = builder.bitcast(builder.gep(array.data, [offset]), vec.as_pointer())
        value = builder.load(ptr, align=array_type.dtype.bitwidth // 8)
        return value if elem == dbl else builder.fpext(value, vd)

    with cgutils.for_range(builder, builder.ashr(n, ir.Constant(i64, 2))) as loop:
        offset = builder.shl(loop.index, ir.Constant(i64, 2))
        x = load4(sig.args[-1], arrays[-1], offset)
        is_zero = builder.fcmp_ordered("==", x, ir.Constant(vd, [0.0] * 4))
        builder.store(builder.or_(builder.load(zeros), is_zero), zeros)
        for array_type, array, acc in zip(sig.args[:-1], arrays[:-1], accs, strict=True):
            product = builder.fmul(load4(array_type, array, offset), x)
            builder.store(builder.fadd(builder.load(acc), product), acc)
    out = []
    for acc in accs:
        vector = builder.load(acc)
        out += [builder.extract_element(vector, ir.Constant(ir.IntType(32), k)) for k in range(4)]
    mask = builder.bitcast(builder.load(zeros), ir.IntType(4))
    out.append(builder.icmp_unsigned("!=", mask, ir.Constant(ir.IntType(4), 0)))
    return context.make_tuple(builder, sig.return_type, out)


@intrinsic
def prefetch(typingctx: Any, arr: Any, i: Any) -> Any:  # pragma: no cover - compiled
    """Ask the caches for the line of ``arr[i]`` (1-D ``arr``) with intent to write,
    without waiting for it (LLVM's ``llvm.prefetch``; a no-op where the target has none).

    A hint with no effect on any value: the row loops of the sparse kernels call it for
    the state entries the next row will touch, so that the cache misses of a state much
    larger than the caches overlap the arithmetic of the row before. ``i`` is not
    checked (a prefetch of any address is harmless)."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and isinstance(i, types.Integer)):
        return None
    sig = types.void(arr, types.intp)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        byte_ptr = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, byte_ptr), i32(1), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(**ROW_HELPER)
def prefetch_columns(
    w: np.ndarray, indices: np.ndarray, a: int, b: int
) -> None:  # pragma: no cover
    """:func:`prefetch` ``w[indices[p]]`` for every ``p`` in ``[a, b)``: the entries of
    ``w`` a CSR row with those columns reads, asked for while the row before is learned."""
    for p in range(a, b):
        prefetch(w, indices[p])  # type: ignore[call-arg]  # numba supplies typingctx


#: How many rows ahead of the row it learns a dense pass asks for the next one
#: (:func:`prefetch_row_ahead`).
ROWS_AHEAD = 2
#: The longest row :func:`prefetch_row_ahead` asks for: 32 cache lines (256 float64 values).
PREFETCH_ROW_BYTES = 2048


@njit(**ROW_HELPER)
def prefetch_row_ahead(X: np.ndarray, i: int) -> None:  # pragma: no cover - compiled
    """:func:`prefetch` every cache line of row ``i + ROWS_AHEAD`` of the C-contiguous 2-D
    ``X`` (nothing past its last row), called as row ``i`` is learned.

    A pass that learns a short row in a few hundred nanoseconds reads the block at a rate
    the hardware prefetcher does not run far enough ahead of: without the NaN/inf check
    that read the block before the pass (:meth:`learners.base.Learner._batch_pass`), the
    first read of each row of 100 values waited on memory. Rows longer than
    :data:`PREFETCH_ROW_BYTES` are left to the hardware, which streams them: asking for
    them too made passes at d = 1,000 2-4% slower (docs/architecture.md, "Large batches")."""
    ahead = i + ROWS_AHEAD
    if ahead < X.shape[0] and X.shape[1] * X.itemsize <= PREFETCH_ROW_BYTES:
        row = X[ahead]
        for j in range(0, row.shape[0], max(1, 64 // row.itemsize)):
            prefetch(row, j)  # type: ignore[call-arg]  # numba supplies typingctx


@njit(**ROW_HELPER)
def prefetch_csr_row_ahead(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, i: int
) -> None:  # pragma: no cover - compiled
    """:func:`prefetch` every cache line of the column indices and values of CSR row
    ``i + ROWS_AHEAD`` (nothing past the last row), called as row ``i`` is learned: the
    sparse counterpart of :func:`prefetch_row_ahead`, for rows the pass copies before it
    learns them."""
    ahead = i + ROWS_AHEAD
    if ahead + 1 < indptr.shape[0]:
        lo, hi = indptr[ahead], indptr[ahead + 1]
        for p in range(lo, hi, max(1, 64 // indices.itemsize)):
            prefetch(indices, p)  # type: ignore[call-arg]  # numba supplies typingctx
        for p in range(lo, hi, max(1, 64 // data.itemsize)):
            prefetch(data, p)  # type: ignore[call-arg]  # numba supplies typingctx


def _simd_ok(*arrays: Any) -> bool:
    return all(
        isinstance(a, types.Array)
        and a.ndim == 1
        and a.layout == "C"
        and a.dtype in (types.float64, types.float32)
        for a in arrays
    )


@intrinsic
def _simd_lanes1(typingctx: Any, w: Any, val: Any) -> Any:
    if not _simd_ok(w, val):
        return None
    return types.Tuple([types.float64] * 4 + [types.boolean])(w, val), _lanes_codegen


@intrinsic
def _simd_lanes2(typingctx: Any, u: Any, w: Any, val: Any) -> Any:
    if not _simd_ok(u, w, val):
        return None
    return types.Tuple([types.float64] * 8 + [types.boolean])(u, w, val), _lanes_codegen


def _head_lanes1(w: np.ndarray, val: np.ndarray) -> tuple[float, float, float, float, bool]:
    """The four lane sums of ``<w, val>`` over the first ``4 (n // 4)`` coordinates, and
    whether any of those values of ``val`` is zero (compiled only; see :func:`_dot_dense`)."""
    raise NotImplementedError


def _head_lanes2(
    u: np.ndarray, w: np.ndarray, val: np.ndarray
) -> tuple[float, float, float, float, float, float, float, float, bool]:
    """:func:`_head_lanes1` for ``u`` and ``w`` in one pass over ``val`` (compiled only)."""
    raise NotImplementedError


@njit(**ROW_KERNEL)
def _scalar_lanes1(w: np.ndarray, val: np.ndarray) -> tuple[float, float, float, float, bool]:
    a0 = a1 = a2 = a3 = 0.0
    zero = False
    for i in range(0, val.shape[0] - val.shape[0] % 4, 4):
        a0 += w[i] * val[i]
        a1 += w[i + 1] * val[i + 1]
        a2 += w[i + 2] * val[i + 2]
        a3 += w[i + 3] * val[i + 3]
        zero |= (val[i] == 0.0) | (val[i + 1] == 0.0) | (val[i + 2] == 0.0) | (val[i + 3] == 0.0)
    return a0, a1, a2, a3, zero


@overload(_head_lanes1)
def _head_lanes1_impl(w: Any, val: Any) -> Any:
    if _simd_ok(w, val):

        def simd(w: Any, val: Any) -> Any:
            return _simd_lanes1(w, val)  # type: ignore[call-arg]  # numba supplies typingctx

        return simd

    def scalar(w: Any, val: Any) -> Any:
        return _scalar_lanes1(w, val)

    return scalar


@overload(_head_lanes2)
def _head_lanes2_impl(u: Any, w: Any, val: Any) -> Any:
    if _simd_ok(u, w, val):

        def simd(u: Any, w: Any, val: Any) -> Any:
            return _simd_lanes2(u, w, val)  # type: ignore[call-arg]  # numba supplies typingctx

        return simd

    def scalar(u: Any, w: Any, val: Any) -> Any:
        b0, b1, b2, b3, zero = _scalar_lanes1(u, val)
        a0, a1, a2, a3, _ = _scalar_lanes1(w, val)
        return b0, b1, b2, b3, a0, a1, a2, a3, zero

    return scalar


@njit(**ROW_HELPER)
def _tail(w: np.ndarray, val: np.ndarray, lanes: tuple[float, float, float, float]) -> float:
    """Add the last ``n mod 4`` products to lanes 0, 1, 2 and sum the lanes."""
    a0, a1, a2, a3 = lanes
    n = val.shape[0]
    m = n - n % 4
    for i in range(m, n):
        p = w[i] * val[i]
        if i == m:
            a0 += p
        elif i == m + 1:
            a1 += p
        else:
            a2 += p
    return _lane_sum(a0, a1, a2, a3)


@njit(**ROW_HELPER)
def _tail_zero(val: np.ndarray) -> bool:
    zero = False
    for i in range(val.shape[0] - val.shape[0] % 4, val.shape[0]):
        zero |= val[i] == 0.0
    return zero


@njit(**ROW_HELPER)
def _dot_dense_z(w: np.ndarray, val: np.ndarray) -> tuple[float, bool]:
    """``(<w, val>, whether val holds a zero)`` in one pass over the dense ``val``."""
    a0, a1, a2, a3, zero = _head_lanes1(w, val)
    return _tail(w, val, (a0, a1, a2, a3)), zero or _tail_zero(val)


@njit(**ROW_HELPER)
def _dot_dense(w: np.ndarray, val: np.ndarray) -> float:
    return _dot_dense_z(w, val)[0]


@njit(**ROW_HELPER)
def _dot2_sparse(
    u: np.ndarray, w: np.ndarray, idx: np.ndarray, val: np.ndarray
) -> tuple[float, float]:
    """``(<u, x>, <w, x>)`` for a gathered sparse row in one loop (each summed as :func:`dot`)."""
    a0 = a1 = a2 = a3 = 0.0
    b0 = b1 = b2 = b3 = 0.0
    n = idx.shape[0]
    m = n - n % 4
    for k in range(0, m, 4):
        j0, j1, j2, j3 = idx[k], idx[k + 1], idx[k + 2], idx[k + 3]
        v0, v1, v2, v3 = val[k], val[k + 1], val[k + 2], val[k + 3]
        b0 += u[j0] * v0
        a0 += w[j0] * v0
        b1 += u[j1] * v1
        a1 += w[j1] * v1
        b2 += u[j2] * v2
        a2 += w[j2] * v2
        b3 += u[j3] * v3
        a3 += w[j3] * v3
    for k in range(m, n):
        j = idx[k]
        p, q = u[j] * val[k], w[j] * val[k]
        if k == m:
            b0 += p
            a0 += q
        elif k == m + 1:
            b1 += p
            a1 += q
        else:
            b2 += p
            a2 += q
    return _lane_sum(b0, b1, b2, b3), _lane_sum(a0, a1, a2, a3)


@njit(**ROW_HELPER)
def _dot_sq_sparse(w: np.ndarray, idx: np.ndarray, val: np.ndarray) -> tuple[float, float]:
    """``(<w, x>, ||x||^2)`` for a gathered sparse row in one loop (lanes by position k)."""
    a0 = a1 = a2 = a3 = 0.0
    b0 = b1 = b2 = b3 = 0.0
    n = idx.shape[0]
    m = n - n % 4
    for k in range(0, m, 4):
        v0, v1, v2, v3 = val[k], val[k + 1], val[k + 2], val[k + 3]
        a0 += w[idx[k]] * v0
        b0 += v0 * v0
        a1 += w[idx[k + 1]] * v1
        b1 += v1 * v1
        a2 += w[idx[k + 2]] * v2
        b2 += v2 * v2
        a3 += w[idx[k + 3]] * v3
        b3 += v3 * v3
    for k in range(m, n):
        v = val[k]
        p, q = w[idx[k]] * v, v * v
        if k == m:
            a0 += p
            b0 += q
        elif k == m + 1:
            a1 += p
            b1 += q
        else:
            a2 += p
            b2 += q
    return _lane_sum(a0, a1, a2, a3), _lane_sum(b0, b1, b2, b3)


@njit(**ROW_HELPER)
def _dot_at_nonzeros(w: np.ndarray, val: np.ndarray) -> float:
    """:func:`dot` of a dense row holding zeros, read through its non-zeros in index order.

    The k-th non-zero product goes to lane ``k mod 4``: the lanes of ``_dot_sparse``
    over the row's non-zero positions (its tail also fills lanes 0, 1, 2 in turn),
    without allocating the positions.
    """
    a0 = a1 = a2 = a3 = 0.0
    k = 0
    for j in range(val.shape[0]):
        v = val[j]
        if v != 0.0:
            p = w[j] * v
            lane = k & 3
            if lane == 0:
                a0 += p
            elif lane == 1:
                a1 += p
            elif lane == 2:
                a2 += p
            else:
                a3 += p
            k += 1
    return _lane_sum(a0, a1, a2, a3)


@njit(**ROW_HELPER)
def _dot2_at_nonzeros(u: np.ndarray, w: np.ndarray, val: np.ndarray) -> tuple[float, float]:
    """:func:`dot2` of a dense row holding zeros (each as :func:`_dot_at_nonzeros`)."""
    return _dot_at_nonzeros(u, val), _dot_at_nonzeros(w, val)


@njit(**ROW_KERNEL)
def dot(w: np.ndarray, idx: np.ndarray, val: np.ndarray) -> float:
    """``<w, x>`` for the row ``x = (idx, val)`` (summation order: module docstring).

    A dense row is read once: the products and the test for zeros share the pass.
    """
    if idx.shape[0] == 0:
        score, zero = _dot_dense_z(w, val)
        if zero:
            return _dot_at_nonzeros(w, val)
        return score
    return _dot_sparse(w, idx, val, True)


@njit(**ROW_KERNEL)
def dot2(u: np.ndarray, w: np.ndarray, idx: np.ndarray, val: np.ndarray) -> tuple[float, float]:
    """``(<u, x>, <w, x>)``, each exactly as :func:`dot` sums it, in one pass over the row."""
    if idx.shape[0] == 0:
        b0, b1, b2, b3, a0, a1, a2, a3, zero = _head_lanes2(u, w, val)
        if zero or _tail_zero(val):
            return _dot2_at_nonzeros(u, w, val)
        return _tail(u, val, (b0, b1, b2, b3)), _tail(w, val, (a0, a1, a2, a3))
    return _dot2_sparse(u, w, idx, val)


@njit(**ROW_KERNEL)
def dot_sqnorm(w: np.ndarray, idx: np.ndarray, val: np.ndarray) -> tuple[float, float]:
    """``(<w, x>, ||x||^2)``, each summed as :func:`dot` sums, in one pass over the row."""
    if idx.shape[0] == 0:
        return dot2(w, val, idx, val)
    return _dot_sq_sparse(w, idx, val)


@njit(cache=True, fastmath={"reassoc"})
def all_finite(a: np.ndarray) -> bool:
    """Whether every entry of the 1-D ``a`` is finite (single-threaded, no temporary).

    Sums ``a[i] - a[i]``: 0 for a finite entry, NaN for an infinite or NaN one, so
    the sum is 0 exactly when every entry is finite, in whatever order it is added;
    the compiler may therefore reassociate it into SIMD lanes (nothing else of IEEE
    arithmetic is relaxed: ``a - a`` is not folded to 0).
    """
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] - a[i]
    return s == 0.0


@njit(**ROW_KERNEL)
def nonzeros_if_finite(a: np.ndarray) -> int:
    """The number of non-zero entries of the 1-D ``a``, or -1 when one is NaN or
    infinite: the two tests of a dense row in one pass and one call
    (:func:`learners.inputs.as_vector`; numpy's dot product and ``count_nonzero`` are
    two calls of about 0.3-0.5 us each on a row of 10 to 1,000 values). Both counts
    are integer sums, which the compiler vectorises.
    """
    nonzero = 0
    bad = 0
    for i in range(a.shape[0]):
        v = a[i]
        bad += (v - v) != 0.0  # NaN for an infinite or NaN entry, 0 otherwise
        nonzero += v != 0.0
    return nonzero if bad == 0 else -1


@njit(cache=True)
def copy_signs(out: np.ndarray, src: np.ndarray) -> None:
    """``out[i] = copysign(out[i], src[i])`` in place, for 1-D float64 arrays of one length.

    The same bits as ``np.copysign(out, src, out=out)``, which numpy runs one element at
    a time: this loop compiles to SIMD code, 2.5-4.5 times faster from 100 values up
    (the sign restore of the ``log_scale`` preprocessing, :func:`learners.inputs._log_scale`).
    """
    for i in range(out.shape[0]):
        out[i] = math.copysign(out[i], src[i])


@njit(**ROW_KERNEL)
def axpy(w: np.ndarray, scale: float, idx: np.ndarray, val: np.ndarray) -> None:
    """``w += scale * x`` in place for the row ``x = (idx, val)``: O(nnz)."""
    if idx.shape[0] == 0:
        for i in range(val.shape[0]):
            w[i] += scale * val[i]
    else:
        for k in range(idx.shape[0]):
            w[idx[k]] += scale * val[k]


@njit(**ROW_KERNEL)
def axpy2(u: np.ndarray, w: np.ndarray, scale: float, idx: np.ndarray, val: np.ndarray) -> None:
    """``u += scale * x`` and ``w += scale * x`` in one pass over the row (as two :func:`axpy`)."""
    if idx.shape[0] == 0:
        for i in range(val.shape[0]):
            step = scale * val[i]
            u[i] += step
            w[i] += step
    else:
        for k in range(idx.shape[0]):
            j = idx[k]
            step = scale * val[k]
            u[j] += step
            w[j] += step


@njit(**ROW_KERNEL)
def row_dot(idx: Any, val: np.ndarray, w: np.ndarray) -> float:
    """``sum_p val[p] w[idx[p]]`` (``idx`` None: ``sum_f val[f] w[f]``), in index order."""
    s = 0.0
    if idx is None:
        for f in range(val.shape[0]):
            s += val[f] * w[f]
    else:
        for p in range(val.shape[0]):
            s += val[p] * w[idx[p]]
    return s


@njit(**ROW_KERNEL)
def row_axpy(idx: Any, val: np.ndarray, w: np.ndarray, a: float) -> None:
    """``w += a x`` in place, O(nnz)."""
    if idx is None:
        for f in range(val.shape[0]):
            w[f] += a * val[f]
    else:
        for p in range(val.shape[0]):
            w[idx[p]] += a * val[p]


@njit(cache=True)
def _row_dot_dense(val: np.ndarray, w: np.ndarray) -> float:
    return row_dot(None, val, w)


@njit(cache=True)
def _row_dot_sparse(idx: np.ndarray, val: np.ndarray, w: np.ndarray) -> float:
    return row_dot(idx, val, w)


def vec_dot(x: Vec, w: np.ndarray) -> float:
    """``<x, w>`` summed in the kernels' order (bit-identical to a kernel's score)."""
    if x.idx is None:
        return float(_row_dot_dense(x.val, w))
    return float(_row_dot_sparse(x.idx, x.val, w))


def warm_learners(*classes: type[Learner], **params: Any) -> float:
    """Compile (or load from the cache) the kernels of ``classes``; returns the seconds taken.

    Each class, with the hyperparameters ``params``, learns a tiny dense batch, the same
    batch as CSR, one dense and one sparse event: every kernel specialisation the
    learners use, with their own types.
    """
    start = time.perf_counter()
    X = np.array([[1.0, 0.5, -1.0], [0.0, 2.0, 1.0]])
    y = np.array([1.0, -1.0])
    tasks = np.array([0, 1], dtype=np.int64)
    for cls in classes:
        learner = cls(n_features=3, n_tasks=2, **params)
        learner.score_and_learn_many(X, y, tasks)
        learner.score_and_learn_many(sp.csr_matrix(X), y, tasks)
        for row, label, task in zip(X, y.tolist(), tasks.tolist(), strict=True):
            learner.score_and_learn_one(row, label, task)
            learner.decision_one(row, task)
    return time.perf_counter() - start


_NO_ROWS = np.zeros((0, 0))
_NO_INDEX = np.zeros(0, dtype=np.int64)
_NO_VALUES = np.zeros(0)


class KernelRows:
    """A batch in the form the kernels take: a dense C-ordered array or CSR arrays (int64)."""

    __slots__ = ("data", "dense", "dim", "indices", "indptr")

    def __init__(
        self,
        dense: np.ndarray | None,
        csr: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
        dim: int,
    ) -> None:
        self.dense = dense
        self.indptr: np.ndarray | None = None
        self.indices: np.ndarray | None = None
        self.data: np.ndarray | None = None
        if csr is not None:
            self.indptr, self.indices, self.data = csr
        self.dim = dim

    @property
    def n(self) -> int:
        """Number of rows."""
        if self.dense is not None:
            return int(self.dense.shape[0])
        assert self.indptr is not None
        return int(self.indptr.shape[0] - 1)

    @classmethod
    def of_batch(cls, batch: Batch) -> KernelRows:
        """The rows of a validated, preprocessed :class:`~learners.inputs.Batch`."""
        if batch.dense is not None:
            return cls(np.ascontiguousarray(batch.dense, dtype=np.float64), None, batch.dim)
        csr = batch.csr
        assert csr is not None
        arrays = (
            np.asarray(csr.indptr, dtype=np.int64),
            np.asarray(csr.indices, dtype=np.int64),
            np.ascontiguousarray(csr.data, dtype=np.float64),
        )
        return cls(None, arrays, batch.dim)

    @classmethod
    def of_vec(cls, x: Vec) -> KernelRows:
        """One canonical vector as a one-row batch (no copy of its values)."""
        if x.idx is None:
            return cls(x.val.reshape(1, -1), None, x.dim)
        indptr = np.array([0, x.idx.shape[0]], dtype=np.int64)
        return cls(None, (indptr, np.asarray(x.idx, dtype=np.int64), x.val), x.dim)

    def kernel_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(X, indptr, indices, data)`` with typed placeholders for the absent form.

        A kernel taking all four tests ``indptr.shape[0] > 0`` for CSR rows; the
        placeholders keep every argument an array, so each kernel compiles once.
        """
        if self.dense is not None:
            return self.dense, _NO_INDEX, _NO_INDEX, _NO_VALUES
        assert self.indptr is not None and self.indices is not None and self.data is not None
        return _NO_ROWS, self.indptr, self.indices, self.data

    def vec(self, i: int) -> Vec:
        """Row ``i`` as the canonical :class:`~learners.inputs.Vec` the reference path sees."""
        from learners.inputs import Vec, canonical_row  # learners.inputs imports this module

        if self.dense is not None:
            return canonical_row(self.dense[i], self.dim)
        assert self.indptr is not None and self.indices is not None and self.data is not None
        lo, hi = int(self.indptr[i]), int(self.indptr[i + 1])
        val = self.data[lo:hi].copy()
        if hi - lo == self.dim:
            return Vec(None, val, self.dim)
        return Vec(self.indices[lo:hi].copy(), val, self.dim)


_WARMUPS: list[Callable[[], object]] = []

_Warmup = TypeVar("_Warmup", bound=Callable[[], object])


def register_warmup(fn: _Warmup) -> _Warmup:
    """Decorator: ``fn`` runs a family's kernels once on tiny inputs (see :func:`warm_kernels`)."""
    _WARMUPS.append(fn)
    return fn


@register_warmup
def warm_input_checks() -> None:
    """Compile the helpers that the input checks and preprocessing call from Python
    (:func:`all_finite`, :func:`nonzeros_if_finite`, :func:`copy_signs`), which no
    family's kernel calls."""
    all_finite(np.ones(2))
    nonzeros_if_finite(np.ones(2))
    copy_signs(np.ones(2), -np.ones(2))


def warm_every_learner() -> None:
    """:func:`exercise_learner` for every registered learner with its default parameters:
    whatever a family's own warm-up leaves out, a default model's first request finds
    compiled."""
    from learners.registry import available

    for info in available():
        exercise_learner(info.name)


def exercise_learner(name: str, **params: Any) -> None:
    """Run the learner registered as ``name``, with the hyperparameters ``params``, once on
    tiny inputs (3 features, 2 tasks), which compiles or loads the kernels it uses.

    A dense batch, the same batch as CSR, and the per-event calls (prediction, learning,
    test-then-train and, for an active learner, the query decision), dense and CSR, the
    latter also on fresh models, whose first negative label is a mistake, so that the
    update paths of a single event run too. Raises ``ValueError`` where ``params`` do not
    fit a learner of that shape (``task_dims`` of a larger model, for one).
    """
    from learners.registry import make

    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 3))
    X[X < 0] = 0.0
    X[:, 0] = 1.0
    y = np.where(np.arange(8) % 2 == 0, 1.0, -1.0)
    tasks = np.arange(8, dtype=np.int64) % 2
    csr = sp.csr_matrix(X)
    model = make(name, n_features=3, n_tasks=2, **params)
    model.score_and_learn_many(X, y, tasks)
    model.score_and_learn_many(csr, y, tasks)
    for row, label, task in zip(X[:2], y.tolist(), tasks.tolist(), strict=False):
        model.predict_one(row, task)
        model.learn_one(row, label, task)
        model.score_and_learn_one(row, label, task)
        if model.is_active:
            model.decide_and_query(row, task, probability=True)
    for event in (X[0], csr[0]):
        fresh = make(name, n_features=3, n_tasks=2, **params)
        fresh.predict_one(event, 0)
        fresh.learn_one(event, -1.0, 0)
        fresh.score_and_learn_one(event, -1.0, 1)
        if fresh.is_active:
            fresh.decide_and_query(event, 1, probability=True)


def warm_kernels(claims: str | Path | None = None) -> dict[str, float]:
    """Compile (or load from the cache) every learner kernel; returns seconds per family.

    Call once at process start-up: afterwards no learner call compiles. The first
    call on a machine compiles and fills numba's cache; later processes load it.

    ``claims``, a directory, shares the family warm-ups (not :func:`warm_every_learner`)
    with the other processes given the same one (:mod:`learners.warm_claims`): each
    takes the next family no process has claimed yet whose dependencies are compiled,
    until none is left, so processes started side by side compile the families into one
    cache on as many cores and end about together (the Makefile's ``warm``). numba
    replaces its cache files atomically; a helper that two processes both compile is
    written twice, the same machine code. A full call afterwards then loads every kernel
    and compiles whatever the shares left out.
    """
    from learners.registry import discover
    from learners.warm_claims import claimed_warmups, family_name

    discover()
    fns: Iterable[Callable[[], object]] = [*_WARMUPS, warm_every_learner]
    if claims is not None:
        fns = claimed_warmups(list(_WARMUPS), Path(claims))
    seconds: dict[str, float] = {}
    for fn in fns:
        start = time.perf_counter()
        fn()
        seconds[family_name(fn)] = time.perf_counter() - start
    return seconds
