"""Elementwise functions written so that LLVM vectorizes the loops that call them.

Numba's pip build has no SVML vector math, so `np.tanh` in a loop is one libm call an
element. These are branch-free float64 polynomials that inline into the loop (generated
code calls them as `vecmath.tanh(x)`); their results agree with NumPy's to within a few
units in the last place. Imported only by generated code, never by `import srcxform`.
"""

import numba
import numpy as np

_jit = numba.njit(inline="always", error_model="numpy", cache=True)

# Cody and Waite's split of log(2): k * _LN2_HI is exact for |k| < 2**20.
_LN2_HI = 0.6931471803691238
_LN2_LO = 1.9082149292705877e-10
_LOG2_E = 1.4426950408889634


@_jit
def _expm1_nonnegative(y):
    """e**y - 1 for 0 <= y <= 40: y = k log(2) + r with |r| <= log(2)/2, and e**r - 1 by
    its Taylor series to r**13 (the next term is below 1e-17 relative)."""
    k = np.int64(y * _LOG2_E + 0.5)
    kf = np.float64(k)
    r = (y - kf * _LN2_HI) - kf * _LN2_LO
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
    scale = np.float64(np.int64(1) << k)  # 2**k, exact: k <= 58 here
    return scale * (r + r * r * p) + (scale - 1.0)


@_jit
def tanh(x):
    """tanh(x) = e/(e + 2) with e = expm1(2|x|), signed; |x| is capped at 20, where tanh
    is 1 to double precision. NaN gives NaN."""
    a = min(abs(x), 20.0) if x == x else x
    e = _expm1_nonnegative(2.0 * a)
    return np.copysign(e / (e + 2.0), x)
