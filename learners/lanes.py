"""Eight float64 lanes as one value in compiled code: ``<8 x double>`` for the grid kernels.

Numba compiles with LLVM's SLP vectoriser off, and its loop vectoriser does not vectorise
a short inner loop over configurations whose arrays it cannot prove apart (each store
might alias each later load). The adaptive grid on a state laid out by feature
(docs/algorithms.md Sec. 11.4) has exactly that shape: for each non-zero of a row, the
same arithmetic on M adjacent configurations. :data:`F8` is a numba type whose LLVM
value is a vector of eight doubles, with the few operations those kernels need, each a
single vector instruction: a load or store of eight adjacent doubles at a byte offset of
an array, a broadcast, the four arithmetic operations, the square root and two selects.

Every operation is element-wise and IEEE (no fast-math flags): lane m computes exactly
what a scalar loop would compute for configuration m, in the same order, so a sum
carried in a lane adds its terms one by one in row order.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model

__all__ = [
    "F8",
    "LANES",
    "lanes_load",
    "lanes_load_first",
    "lanes_store",
    "lanes_store_first",
    "lanes_splat",
    "lanes_add",
    "lanes_mul",
    "lanes_div",
    "lanes_sqrt",
    "lanes_where_positive",
    "lanes_where_nonzero",
]

#: Doubles per lane vector.
LANES = 8

_VEC = ir.VectorType(ir.DoubleType(), LANES)


class F8Type(types.Type):
    """Eight float64 lanes (an LLVM ``<8 x double>``)."""

    def __init__(self) -> None:
        super().__init__(name="f64x8")


#: The numba type of a lane vector.
F8 = F8Type()


@register_model(F8Type)
class _F8Model(models.PrimitiveModel):
    def __init__(self, dmm: Any, fe_type: Any) -> None:
        super().__init__(dmm, fe_type, _VEC)


def _is_f64_array(a: Any) -> bool:
    return isinstance(a, types.Array) and a.dtype == types.float64


def _address(context: Any, builder: Any, aryty: Any, ary: Any, offset: Any) -> Any:
    """``<8 x double>*`` at ``offset`` bytes past the first element of ``ary``."""
    base = builder.bitcast(
        context.make_array(aryty)(context, builder, ary).data, ir.IntType(8).as_pointer()
    )
    return builder.bitcast(builder.gep(base, [offset]), _VEC.as_pointer())


def _lanes_load(typingctx: Any, arr: Any, offset: Any) -> Any:
    """The eight doubles at ``offset`` bytes past ``arr``'s first element (unchecked)."""
    if not (_is_f64_array(arr) and isinstance(offset, types.Integer)):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        ptr = _address(context, builder, sig.args[0], args[0], args[1])
        return builder.load(ptr, align=8)

    return F8(arr, offset), codegen


def _lanes_store(typingctx: Any, arr: Any, offset: Any, v: Any) -> Any:
    """Store ``v`` as the eight doubles at ``offset`` bytes past ``arr``'s first element."""
    if not (_is_f64_array(arr) and isinstance(offset, types.Integer) and v == F8):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        ptr = _address(context, builder, sig.args[0], args[0], args[1])
        builder.store(args[2], ptr, align=8)
        return context.get_dummy_value()

    return types.void(arr, offset, v), codegen


def _first_mask(builder: Any, count: Any) -> Any:
    """``<8 x i1>``: lane i is on when ``i < count``."""
    index = ir.Constant(ir.VectorType(ir.IntType(64), LANES), list(range(LANES)))
    wide = builder.sext(count, ir.IntType(64)) if count.type.width < 64 else count
    one = builder.insert_element(
        ir.Constant(ir.VectorType(ir.IntType(64), LANES), ir.Undefined), wide, ir.IntType(32)(0)
    )
    mask = ir.Constant(ir.VectorType(ir.IntType(32), LANES), [0] * LANES)
    bound = builder.shuffle_vector(
        one, ir.Constant(ir.VectorType(ir.IntType(64), LANES), ir.Undefined), mask
    )
    return builder.icmp_signed("<", index, bound)


def _masked(
    builder: Any, name: str, result: Any, operands: list[Any], count: Any, after: list[Any]
) -> Any:
    """Call LLVM's ``llvm.masked.<name>.v8f64.p0`` with ``operands`` (a store: the vector,
    then the pointer; a load: the pointer), the alignment (8 bytes), the mask of the lanes
    below ``count`` and ``after`` (a load: the value of the lanes left out)."""
    mask_type = ir.VectorType(ir.IntType(1), LANES)
    kinds = [op.type for op in operands] + [ir.IntType(32), mask_type] + [a.type for a in after]
    fn = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(result, kinds), f"llvm.masked.{name}.v8f64.p0"
    )
    return builder.call(fn, [*operands, ir.IntType(32)(8), _first_mask(builder, count), *after])


def _lanes_load_first(typingctx: Any, arr: Any, offset: Any, count: Any) -> Any:
    """:func:`lanes_load` of the first ``count`` lanes only (a masked load: nothing past
    them is read); the other lanes are 0."""
    if not (
        _is_f64_array(arr)
        and isinstance(offset, types.Integer)
        and isinstance(count, types.Integer)
    ):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        ptr = _address(context, builder, sig.args[0], args[0], args[1])
        zero = ir.Constant(_VEC, [0.0] * LANES)
        return _masked(builder, "load", _VEC, [ptr], args[2], [zero])

    return F8(arr, offset, count), codegen


def _lanes_store_first(typingctx: Any, arr: Any, offset: Any, v: Any, count: Any) -> Any:
    """:func:`lanes_store` of the first ``count`` lanes only (a masked store: nothing past
    them is written)."""
    if not (
        _is_f64_array(arr)
        and isinstance(offset, types.Integer)
        and v == F8
        and isinstance(count, types.Integer)
    ):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        ptr = _address(context, builder, sig.args[0], args[0], args[1])
        _masked(builder, "store", ir.VoidType(), [args[2], ptr], args[3], [])
        return context.get_dummy_value()

    return types.void(arr, offset, v, count), codegen


def _lanes_splat(typingctx: Any, x: Any) -> Any:
    """``x`` in every lane."""
    if not isinstance(x, types.Float):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        value = context.cast(builder, args[0], sig.args[0], types.float64)
        one = builder.insert_element(ir.Constant(_VEC, ir.Undefined), value, ir.IntType(32)(0))
        mask = ir.Constant(ir.VectorType(ir.IntType(32), LANES), [0] * LANES)
        return builder.shuffle_vector(one, ir.Constant(_VEC, ir.Undefined), mask)

    return F8(x), codegen


def _binary(op: str) -> Any:
    def typer(typingctx: Any, a: Any, b: Any) -> Any:
        if not (a == F8 and b == F8):
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            return getattr(builder, op)(args[0], args[1])

        return F8(a, b), codegen

    return typer


lanes_add: Any = intrinsic(_binary("fadd"))
lanes_mul: Any = intrinsic(_binary("fmul"))
lanes_div: Any = intrinsic(_binary("fdiv"))


def _lanes_sqrt(typingctx: Any, a: Any) -> Any:
    """The square root of every lane (IEEE, as ``math.sqrt``)."""
    if a != F8:
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_VEC, [_VEC]), "llvm.sqrt.v8f64"
        )
        return builder.call(fn, [args[0]])

    return F8(a), codegen


def _select(predicate: str) -> Any:
    def typer(typingctx: Any, c: Any, a: Any, b: Any) -> Any:
        if not (c == F8 and a == F8 and b == F8):
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            zero = ir.Constant(_VEC, [0.0] * LANES)
            mask = builder.fcmp_ordered(predicate, args[0], zero)
            return builder.select(mask, args[1], args[2])

        return F8(c, a, b), codegen

    return typer


#: ``a`` where ``c > 0``, else ``b``, lane by lane.
lanes_where_positive: Any = intrinsic(_select(">"))
#: ``a`` where ``c != 0`` (and is not NaN), else ``b``, lane by lane.
lanes_where_nonzero: Any = intrinsic(_select("!="))


# The public operations, typed Any for the type checker: numba supplies their first
# argument (the typing context) when compiled code calls them.
lanes_load: Any = intrinsic(_lanes_load)
lanes_store: Any = intrinsic(_lanes_store)
lanes_load_first: Any = intrinsic(_lanes_load_first)
lanes_store_first: Any = intrinsic(_lanes_store_first)
lanes_splat: Any = intrinsic(_lanes_splat)
lanes_sqrt: Any = intrinsic(_lanes_sqrt)
