"""Elementwise functions written so that LLVM vectorizes the loops that call them.

Numba's pip build has no SVML vector math, so `np.tanh` in a loop is one libm call an
element. These are branch-free float64 polynomials that inline into the loop (generated
code calls them as `vecmath.tanh(x)`); their results agree with NumPy's to within a few
units in the last place. Imported only by generated code, never by `import srcxform`.
"""

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from srcxform.numba_adapter.jit import helper

# Every function lets LLVM fuse a multiply and an add into one FMA instruction where the
# machine has one (contract=True): one rounding instead of two, and one instruction.
# The functions are not inline="always": LLVM inlines them into the kernel's loop when it
# optimizes it (and then vectorizes), and inlining them in Numba's IR as well only cost
# compile time.

# Cody and Waite's split of log(2): k * _LN2_HI is exact for |k| < 2**20.
_LN2_HI = 0.6931471803691238
_LN2_LO = 1.9082149292705877e-10
_LOG2_E = 1.4426950408889634
# The bits of 1.5 * 2**52: a float64 in [2**52, 2**53) counts in ones, so adding that
# number to a whole float64 below 2**51 in magnitude leaves it in the low bits.
_ROUNDING = 6755399441055744.0
_ROUNDING_BITS = np.int64(0x4338000000000000)


@intrinsic
def _bits_as_float64(typingctx, bits):
    """The float64 whose bit pattern is the int64 `bits` (an LLVM bitcast, which
    vectorizes where NumPy's .view of a scalar would not compile)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return types.float64(types.int64), codegen


@intrinsic
def _float64_as_bits(typingctx, x):
    """The bit pattern of the float64 `x`, as an int64 (an LLVM bitcast)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))

    return types.int64(types.float64), codegen


@helper(contract=True)
def _whole_as_int64(kf):
    """The int64 equal to the whole float64 kf, |kf| < 2**51: an add, a bitcast and an
    integer subtract, which vectorize on AVX2, where np.int64(kf) does not (converting
    four float64s to int64 at once needs AVX-512, so LLVM converts them one by one)."""
    return _float64_as_bits(kf + _ROUNDING) - _ROUNDING_BITS


@helper(contract=True)
def _pow2(k):
    """2.0**k for -1022 <= k <= 1023, built from its exponent bits."""
    return _bits_as_float64((k + np.int64(1023)) << np.int64(52))


@helper(contract=True)
def exp(x):
    """e**x: x = k log(2) + r, e**r by its Taylor series to r**13, times 2**k in two
    halves (so that overflow gives inf and underflow a subnormal or 0, as libm's)."""
    y = min(max(x, -800.0), 800.0)
    kf = np.floor(y * _LOG2_E + 0.5)
    r = (y - kf * _LN2_HI) - kf * _LN2_LO
    k = _whole_as_int64(kf)
    half = k >> np.int64(1)
    e = (1.0 + _expm1_reduced(r)) * _pow2(half) * _pow2(k - half)
    return e if x == x else x  # noqa: PLR0124 - a NaN test LLVM keeps branch-free


@helper(contract=True)
def _expm1_reduced(r):
    """e**r - 1 for |r| <= log(2)/2, by its Taylor series to r**13 (the next term is
    below 1e-17 relative): r + r**2 p(r), with p's twelve terms summed in Estrin's
    order, pairs then pairs of pairs, so that its chain of dependent operations is 8
    long, not Horner's 24."""
    r2 = r * r
    r4 = r2 * r2
    p01 = 0.5 + r * (1.0 / 6.0)
    p23 = 1.0 / 24.0 + r * (1.0 / 120.0)
    p45 = 1.0 / 720.0 + r * (1.0 / 5040.0)
    p67 = 1.0 / 40320.0 + r * (1.0 / 362880.0)
    p89 = 1.0 / 3628800.0 + r * (1.0 / 39916800.0)
    p1011 = 1.0 / 479001600.0 + r * (1.0 / 6227020800.0)
    p03 = p01 + r2 * p23
    p47 = p45 + r2 * p67
    p811 = p89 + r2 * p1011
    p = p03 + r4 * (p47 + r4 * p811)
    return r + r2 * p


@helper(contract=True)
def _expm1_nonnegative(y):
    """e**y - 1 for 0 <= y <= 40, exact near 0 where e**y - 1 would cancel: y = k log(2)
    + r, and 2**k (e**r - 1) + (2**k - 1)."""
    kf = np.floor(y * _LOG2_E + 0.5)
    k = _whole_as_int64(kf)
    r = (y - kf * _LN2_HI) - kf * _LN2_LO
    scale = _pow2(k)
    return scale * _expm1_reduced(r) + (scale - 1.0)


@helper(contract=True)
def tanh(x):
    """tanh(x) = e/(e + 2) with e = expm1(2|x|), signed; |x| is capped at 20, where tanh
    is 1 to double precision. NaN gives NaN."""
    a = min(abs(x), 20.0) if x == x else x  # noqa: PLR0124 - NaN stays NaN, branch-free
    e = _expm1_nonnegative(2.0 * a)
    return np.copysign(e / (e + 2.0), x)



def _extreme(name, compare):
    """An intrinsic giving IEEE 754-2019's maximum or minimum (`name`) of two scalars of
    one dtype: NaN if either is NaN, and -0.0 below +0.0. For floats it is LLVM's
    llvm.maximum (llvm.minimum), a reduction LLVM's loop vectorizer takes without
    fastmath (np.maximum's compares and selects it does not); integers compare."""

    floats = (types.float32, types.float64)

    def typer(typingctx, a, b):
        a, b = types.unliteral(a), types.unliteral(b)
        if a == b and (isinstance(a, types.Integer) or a in floats):
            return a(a, b), codegen
        if a in floats and b in floats:  # from Python (SRCXFORM_JIT=0): a float meets a float32
            return types.float64(a, b), codegen
        return None

    def codegen(context, builder, signature, args):
        dtype = signature.return_type
        args = [context.cast(builder, v, t, dtype) for v, t in zip(args, signature.args)]
        if isinstance(dtype, types.Integer):
            icmp = builder.icmp_signed if dtype.signed else builder.icmp_unsigned
            return builder.select(icmp(compare, *args), *args)
        kind = args[0].type
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(kind, [kind, kind]),
            f"llvm.{name}.f{dtype.bitwidth}")
        return builder.call(function, args)

    typer.__name__ = f"_{name}"
    return intrinsic(typer)


_maximum, _minimum = _extreme("maximum", ">"), _extreme("minimum", "<")


@helper
def maximum(a, b):
    """The larger of a and b, of one dtype: reduce_max's step (see _extreme)."""
    return _maximum(a, b)


@helper
def minimum(a, b):
    """The smaller of a and b, of one dtype: reduce_min's step (see _extreme)."""
    return _minimum(a, b)
