"""Elementwise functions written so that LLVM vectorizes the loops that call them.

Numba's pip build has no SVML vector math, so `np.tanh` in a loop is one libm call an
element. These are branch-free float64 polynomials that inline into the loop (generated
code calls them as `vecmath.tanh(x)`); their results agree with NumPy's to within a few
units in the last place. Imported only by generated code, never by `import srcxform`.
"""

import numpy as np
from numba.core import types
from numba.extending import intrinsic

from srcxform.numba_adapter.jit import helper

# The functions are not inline="always": LLVM inlines them into the kernel's loop when it
# optimizes it (and then vectorizes), and inlining them in Numba's IR as well only cost
# compile time.

# Cody and Waite's split of log(2): k * _LN2_HI is exact for |k| < 2**20.
_LN2_HI = 0.6931471803691238
_LN2_LO = 1.9082149292705877e-10
_LOG2_E = 1.4426950408889634


@intrinsic
def _bits_as_float64(typingctx, bits):
    """The float64 whose bit pattern is the int64 `bits` (an LLVM bitcast, which
    vectorizes where NumPy's .view of a scalar would not compile)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return types.float64(types.int64), codegen


@helper
def _pow2(k):
    """2.0**k for -1022 <= k <= 1023, built from its exponent bits."""
    return _bits_as_float64((k + np.int64(1023)) << np.int64(52))


@helper
def exp(x):
    """e**x: x = k log(2) + r, e**r by its Taylor series to r**13, times 2**k in two
    halves (so that overflow gives inf and underflow a subnormal or 0, as libm's)."""
    y = min(max(x, -800.0), 800.0)
    kf = np.floor(y * _LOG2_E + 0.5)
    r = (y - kf * _LN2_HI) - kf * _LN2_LO
    k = np.int64(kf)
    half = k >> np.int64(1)
    e = (1.0 + _expm1_reduced(r)) * _pow2(half) * _pow2(k - half)
    return e if x == x else x  # noqa: PLR0124 - a NaN test LLVM keeps branch-free


@helper
def _expm1_reduced(r):
    """e**r - 1 for |r| <= log(2)/2, by its Taylor series to r**13 (the next term is
    below 1e-17 relative)."""
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    return r + r * r * p


@helper
def _expm1_nonnegative(y):
    """e**y - 1 for 0 <= y <= 40, exact near 0 where e**y - 1 would cancel: y = k log(2)
    + r, and 2**k (e**r - 1) + (2**k - 1)."""
    k = np.int64(y * _LOG2_E + 0.5)
    kf = np.float64(k)
    r = (y - kf * _LN2_HI) - kf * _LN2_LO
    scale = _pow2(k)
    return scale * _expm1_reduced(r) + (scale - 1.0)


@helper
def tanh(x):
    """tanh(x) = e/(e + 2) with e = expm1(2|x|), signed; |x| is capped at 20, where tanh
    is 1 to double precision. NaN gives NaN."""
    a = min(abs(x), 20.0) if x == x else x  # noqa: PLR0124 - NaN stays NaN, branch-free
    e = _expm1_nonnegative(2.0 * a)
    return np.copysign(e / (e + 2.0), x)
