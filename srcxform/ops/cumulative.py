"""Running sums, products and log-sum-exps along an axis (tf.math.cumsum, cumprod and
cumulative_logsumexp), each with TensorFlow's `exclusive` and `reverse`. Compiled code
calls arrays.cumulative."""

import numpy as np

from srcxform.core.aval import Aval, normalize_axis
from srcxform.core.errors import shape_error
from srcxform.ops.elementwise import (
    abs, divide_no_nan, exp, float_operands, greater, less, log, where,
)
from srcxform.core.primitive import primitive
from srcxform.core.tensor import as_value


def _cumulative_shape(x, *, axis, exclusive, reverse):
    if x.dtype == np.bool_:
        raise TypeError("cannot accumulate a bool value; cast it first")
    return Aval(x.shape, x.dtype, x.weak)


def _cumulative_impl(ufunc):
    def impl(x, axis, exclusive, reverse):
        x = np.moveaxis(x, axis, 0)
        if reverse:
            x = x[::-1]
        out = ufunc.accumulate(x, axis=0, dtype=x.dtype)
        if exclusive:  # shifted by one, starting from the identity
            out = np.concatenate([np.full_like(x[:1], ufunc.identity), out[:-1]])
        if reverse:
            out = out[::-1]
        return np.moveaxis(out, 0, axis)

    return impl


def _cumprod_vjp(g, out, x, *, axis, exclusive, reverse):
    # TensorFlow's _CumprodGrad: the reversed running sum of out * g, divided by x, and
    # so 0 (not the derivative) wherever x is 0.
    total = cumsum_p.bind(out * g, axis=axis, exclusive=exclusive, reverse=not reverse)
    return (divide_no_nan(total, x),)


def _cumulative_logsumexp_vjp(g, out, x, *, axis, exclusive, reverse):
    # TensorFlow's _CumulativeLogsumexpGrad: exp(x) times the reversed running sum of
    # g * exp(-out), each side of g's sign taken as a log-sum-exp so that nothing
    # overflows; the lowest float stands for log(0).
    lowest = np.finfo(x.dtype).min

    def side(chosen):
        log_g = where(chosen, log(where(chosen, abs(g), 1)), lowest)
        return exp(cumulative_logsumexp_p.bind(log_g - out, axis=axis, exclusive=exclusive,
                                               reverse=not reverse) + x)

    return (side(greater(g, 0)) - side(less(g, 0)),)


cumsum_p = primitive("cumsum", "opaque", _cumulative_impl(np.add), _cumulative_shape,
                     "arrays.cumulative(x, axis, 'sum', exclusive, reverse)", sums=True,
                     vjp=lambda g, out, x, *, axis, exclusive, reverse:
                     (cumsum_p.bind(g, axis=axis, exclusive=exclusive, reverse=not reverse),))
cumprod_p = primitive("cumprod", "opaque", _cumulative_impl(np.multiply), _cumulative_shape,
                      "arrays.cumulative(x, axis, 'product', exclusive, reverse)",
                      vjp=_cumprod_vjp)
cumulative_logsumexp_p = primitive(
    "cumulative_logsumexp", "opaque", _cumulative_impl(np.logaddexp), _cumulative_shape,
    "arrays.cumulative(x, axis, 'logsumexp', exclusive, reverse)",
    vjp=_cumulative_logsumexp_vjp)


def _params(x, axis, exclusive, reverse, op):
    x = as_value(x, op)
    if x.ndim == 0:
        raise shape_error(f"{op}: x must have at least one axis, got a scalar")
    axis = normalize_axis(axis, x.ndim, op)
    return x, {"axis": axis, "exclusive": bool(exclusive), "reverse": bool(reverse)}


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """The running sum of x along `axis` (tf.math.cumsum): exclusive=True leaves each
    element out of its own sum (so it starts from 0), reverse=True sums from the end."""
    x, params = _params(x, axis, exclusive, reverse, "cumsum")
    return cumsum_p.bind(x, **params)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """The running product of x along `axis` (tf.math.cumprod), as cumsum. Its gradient
    is TensorFlow's, which divides by x: 0 wherever x is 0, where the derivative is not."""
    x, params = _params(x, axis, exclusive, reverse, "cumprod")
    return cumprod_p.bind(x, **params)


def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None):
    """log(cumsum(exp(x))) along `axis` of a float x (tf.math.cumulative_logsumexp), as
    cumsum, each step a stable log-add-exp: no overflow, no underflow to -inf. exclusive's
    first element is -inf, log(0)."""
    x, params = _params(float_operands("cumulative_logsumexp", x)[0], axis, exclusive,
                        reverse, "cumulative_logsumexp")
    return cumulative_logsumexp_p.bind(x, **params)
