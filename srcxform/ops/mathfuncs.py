"""More of tf.math's elementwise functions: inverse trigonometric and hyperbolic ones,
rsqrt, xlogy, the error function and the gamma family (primitives), and log2, log10, exp2,
squared_difference, reciprocal_no_nan and polyval (composites).

Each VJP is TensorFlow's gradient (its math_grad.py), written in srcxform ops. Templates
use NumPy's scalar functions where NumPy has them, and srcxform.specfun's where it has
none (erf, lgamma, polygamma); eager evaluation uses SciPy's.
"""

import functools
import math

import numpy as np

from srcxform.ops.creation import convert_to_tensor, zeros_like
from srcxform.ops.elementwise import (
    cast, divide_no_nan, equal, exp, float_operands, log, log1p, not_equal, pow, reciprocal,
    sqrt, subtract, where,
)
from srcxform.ops.reduce import reduce_sum
from srcxform.core.primitive import elementwise
from srcxform.core.tensor import Value, as_value

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


@functools.cache
def _special():
    """scipy.special, imported when an eager op first needs it: importing it is 0.3 s, 40%
    of what `import srcxform` took, and most programs use none of it."""
    import scipy.special

    return scipy.special


def _erf(x):
    return _special().erf(x)


def _erfc(x):
    return _special().erfc(x)


def _lgamma(x):
    """log|Gamma(x)|: SciPy's, and +inf at -inf as C's lgamma (and TensorFlow's); at a
    subnormal x, -log|x| (its value to rounding there), where SciPy's is inf."""
    with np.errstate(divide="ignore"):
        tiny = np.where(np.abs(x) < np.finfo(x.dtype).tiny, -np.log(np.abs(x)), np.inf)
    return np.where(np.isneginf(x) | (tiny < np.inf), tiny, _special().gammaln(x))


def _polygamma(a, x):
    """SciPy's polygamma of the orders a, with specfun's (TensorFlow's) values: NaN for an
    order that is negative or not an integer, NaN (even order) or +inf (odd order) at the
    poles 0, -1, -2, ..., and NaN at -inf."""
    whole = (a >= 0) & (a == np.floor(a))
    n = np.where(whole, a, 0)
    out = _special().polygamma(n, x)
    pole = (x <= 0) & (x == np.floor(x))
    out = np.where(pole, np.where(n % 2 == 0, np.nan, np.inf), out)
    return np.where(np.isneginf(x) | ~whole, np.nan, out)


def _atan2_vjp(g, out, y, x):
    scaled = g / (x * x + y * y)
    return x * scaled, -y * scaled


def _xlogy_vjp(g, out, x, y):
    # TensorFlow's: xlogy(x != 0, y) and xdivy(x, y), both 0 where x is 0.
    nonzero = cast(not_equal(x, 0), out.dtype)
    zero = equal(x, 0)
    return g * xlogy(nonzero, y), g * where(zero, 0, x / where(zero, 1, y))


erf_p = elementwise("erf", _erf, "specfun.erf(x)", kinds="f",
                    vjp=lambda g, out, x: (g * _TWO_OVER_SQRT_PI * exp(-x * x),), expensive=True)
erfc_p = elementwise("erfc", _erfc, "specfun.erfc(x)", kinds="f",
                     vjp=lambda g, out, x: (-g * _TWO_OVER_SQRT_PI * exp(-x * x),), expensive=True)
# atan's, asin's, acos's and atanh's gradients multiply by a reciprocal, as TensorFlow's:
# its gradient is 0 wherever the upstream one is, so a Jacobian's zero rows stay 0 where
# the derivative is NaN (asin beyond 1), where a division would give 0 / 0.
atan_p = elementwise("atan", np.arctan, "np.arctan(x)", kinds="f",
                     vjp=lambda g, out, x: (g * reciprocal(1 + x * x),), expensive=True,
                     numpy=(np.arctan,))
atan2_p = elementwise("atan2", np.arctan2, "np.arctan2(y, x)", kinds="f", vjp=_atan2_vjp,
                      expensive=True, numpy=(np.arctan2,))
asin_p = elementwise("asin", np.arcsin, "np.arcsin(x)", kinds="f",
                     vjp=lambda g, out, x: (g * reciprocal(sqrt(1 - x * x)),),
                     expensive=True, numpy=(np.arcsin,))
acos_p = elementwise("acos", np.arccos, "np.arccos(x)", kinds="f",
                     vjp=lambda g, out, x: (-g * reciprocal(sqrt(1 - x * x)),),
                     expensive=True, numpy=(np.arccos,))
sinh_p = elementwise("sinh", np.sinh, "np.sinh(x)", kinds="f",
                     vjp=lambda g, out, x: (g * cosh(x),), expensive=True, numpy=(np.sinh,))
cosh_p = elementwise("cosh", np.cosh, "np.cosh(x)", kinds="f",
                     vjp=lambda g, out, x: (g * sinh(x),), expensive=True, numpy=(np.cosh,))
# The inverse hyperbolic functions' gradients are written in their outputs, as
# TensorFlow's: 1 / cosh(asinh(x)), 1 / sinh(acosh(x)).
asinh_p = elementwise("asinh", np.arcsinh, "np.arcsinh(x)", kinds="f",
                      vjp=lambda g, out, x: (g / cosh(out),), expensive=True, numpy=(np.arcsinh,))
acosh_p = elementwise("acosh", np.arccosh, "np.arccosh(x)", kinds="f",
                      vjp=lambda g, out, x: (g / sinh(out),), expensive=True, numpy=(np.arccosh,))
atanh_p = elementwise("atanh", np.arctanh, "np.arctanh(x)", kinds="f",
                      vjp=lambda g, out, x: (g * reciprocal(1 - x * x),), expensive=True,
                      numpy=(np.arctanh,))
rsqrt_p = elementwise("rsqrt", lambda x: 1 / np.sqrt(x), "1 / np.sqrt(x)", kinds="f",
                      vjp=lambda g, out, x: (rsqrt_grad(out, g),))
# rsqrt's VJP, TensorFlow's RsqrtGrad: -0.5 dy y**3, and 0 wherever dy is 0 (as
# sqrt_grad), so a Jacobian's zero rows stay 0 where y is NaN or inf. Its own VJP is
# TensorFlow's RsqrtGradGrad.
rsqrt_grad_p = elementwise(
    "rsqrt_grad", lambda y, dy: np.where(dy == 0, 0, -0.5 * dy * (y * y * y)),
    "dy - dy if dy == 0 else -0.5 * dy * (y * y * y)", kinds="f",
    vjp=lambda g, out, y, dy: (-1.5 * g * dy * (y * y), rsqrt_grad(y, g)))
# 0 wherever x is 0, whatever y is (+0: x - x is +0 for -0 too).
xlogy_p = elementwise("xlogy", lambda x, y: np.where(x == 0, 0, x * np.log(y)),
                      "x - x if x == 0 else x * np.log(y)", kinds="f", vjp=_xlogy_vjp)
lgamma_p = elementwise("lgamma", _lgamma, "specfun.lgamma(x)", kinds="f",
                       vjp=lambda g, out, x: (g * digamma(x),), expensive=True)
# The a-th derivative of digamma, elementwise in the order a too; a = 0 is digamma. The
# order has no gradient, as in TensorFlow.
polygamma_p = elementwise("polygamma", _polygamma, "specfun.polygamma(a, x)", kinds="f",
                          vjp=lambda g, out, a, x: (None, g * polygamma_p.bind(a + 1, x)),
                          expensive=True)


# ----- wrappers (TensorFlow names) -----


def erf(x, name=None):
    """The error function, elementwise (tf.math.erf)."""
    return erf_p.bind(x)


def erfc(x, name=None):
    """1 - erf(x), accurate where erf(x) is near 1 (tf.math.erfc)."""
    return erfc_p.bind(x)


def atan(x, name=None):
    """The inverse tangent elementwise, in radians (tf.math.atan)."""
    return atan_p.bind(x)


def atan2(y, x, name=None):
    """The angle of the point (x, y), in [-pi, pi] (tf.math.atan2: y first)."""
    return atan2_p.bind(y, x)


def asin(x, name=None):
    """The inverse sine elementwise, in radians (tf.math.asin)."""
    return asin_p.bind(x)


def acos(x, name=None):
    """The inverse cosine elementwise, in radians (tf.math.acos)."""
    return acos_p.bind(x)


def sinh(x, name=None):
    """The hyperbolic sine elementwise (tf.math.sinh)."""
    return sinh_p.bind(x)


def cosh(x, name=None):
    """The hyperbolic cosine elementwise (tf.math.cosh)."""
    return cosh_p.bind(x)


def asinh(x, name=None):
    """The inverse hyperbolic sine elementwise (tf.math.asinh)."""
    return asinh_p.bind(x)


def acosh(x, name=None):
    """The inverse hyperbolic cosine elementwise (tf.math.acosh)."""
    return acosh_p.bind(x)


def atanh(x, name=None):
    """The inverse hyperbolic tangent elementwise (tf.math.atanh)."""
    return atanh_p.bind(x)


def rsqrt(x, name=None):
    """1 / sqrt(x) (tf.math.rsqrt)."""
    return rsqrt_p.bind(x)


def rsqrt_grad(y, dy, name=None):
    """rsqrt's gradient -0.5 dy y**3, 0 where dy is 0 (TensorFlow's raw_ops.RsqrtGrad)."""
    return rsqrt_grad_p.bind(y, dy)


def xlogy(x, y, name=None):
    """x * log(y), and 0 wherever x is 0, even where y is 0 or NaN (tf.math.xlogy)."""
    return xlogy_p.bind(x, y)


def lgamma(x, name=None):
    """log|Gamma(x)| (tf.math.lgamma); +inf at 0, -1, -2, ...; its gradient is digamma."""
    return lgamma_p.bind(x)


def digamma(x, name=None):
    """The derivative of lgamma (tf.math.digamma); NaN at 0, -1, -2, ..., as TensorFlow's.
    Differentiable to any order (its derivatives are polygamma's)."""
    return polygamma_p.bind(0.0, x)  # a float order, as polygamma casts one


def polygamma(a, x, name=None):
    """The a-th derivative of digamma at x, elementwise (tf.math.polygamma): a is a tensor
    of orders that broadcasts against x, NaN where one is negative or not an integer, and
    carries no gradient, as TensorFlow's (which takes float orders only; integer ones are
    cast to x's dtype here). For a >= 2 at negative x, compiled code shifts x up one step
    at a time, so the cost grows with |x|."""
    a, x = as_value(a, "polygamma"), as_value(x, "polygamma")
    if a.dtype.kind in "iu" and x.dtype.kind == "f":
        a = cast(a, x.dtype)
    return polygamma_p.bind(a, x)


def log2(x, name=None):
    """log(x) / log(2), as tf.experimental.numpy.log2 computes it (tf.math has none)."""
    return log(x) / math.log(2)


def log10(x, name=None):
    """log(x) / log(10), as tf.experimental.numpy.log10 computes it (tf.math has none):
    log10(1000.0) is 2.9999999999999996, where np.log10 gives 3.0."""
    return log(x) / math.log(10)


def exp2(x, name=None):
    """2 ** x, as tf.experimental.numpy.exp2 computes it (tf.math has none)."""
    return pow(2.0, x)


def xdivy(x, y, name=None):
    """x / y, and 0 wherever x is 0, even where y is 0 or NaN (tf.math.xdivy); its
    gradients are 0 there too (y is replaced by 1 before dividing)."""
    x, y = float_operands("xdivy", x, y)
    zero = equal(x, 0)
    return where(zero, 0, x / where(zero, 1, y))


def xlog1py(x, y, name=None):
    """x * log1p(y), and 0 wherever x is 0, even where y is -1 or NaN (tf.math.xlog1py);
    its gradients are 0 there too (y is replaced by 0 first)."""
    x, y = float_operands("xlog1py", x, y)
    zero = equal(x, 0)
    return where(zero, 0, x * log1p(where(zero, 0, y)))


def lbeta(x, name=None):
    """log|Beta(x)| along the last axis, sum(lgamma(x)) - lgamma(sum(x)) (tf.math.lbeta);
    -inf where the axis is empty, as TensorFlow's."""
    x = as_value(x, "lbeta")
    return reduce_sum(lgamma(x), axis=-1) - lgamma(reduce_sum(x, axis=-1))


def squared_difference(x, y, name=None):
    """(x - y) ** 2 elementwise (tf.math.squared_difference)."""
    d = subtract(x, y)
    return d * d


def reciprocal_no_nan(x, name=None):
    """1 / x for floats, 0 where x is 0 (tf.math.reciprocal_no_nan); its gradient is 0
    there too (divide_no_nan's)."""
    x, = float_operands("reciprocal_no_nan", x)
    return divide_no_nan(cast(1, x.dtype), x)


def polyval(coeffs, x, name=None):
    """The polynomial coeffs[0] * x**(n-1) + ... + coeffs[n-1] at x, by Horner's rule
    (tf.math.polyval): coeffs is a list of tensors or numbers, the highest power first;
    an empty list gives zeros of x's shape."""
    if not isinstance(coeffs, list):
        raise ValueError(  # noqa: TRY004  (TensorFlow's error)
            f"polyval: coeffs must be a list, got a {type(coeffs).__name__}")
    x = as_value(x, "polyval") if isinstance(x, Value) else convert_to_tensor(x)
    if not coeffs:
        return zeros_like(x)
    p = as_value(coeffs[0], "polyval")
    for c in coeffs[1:]:
        p = c + p * x
    return p
