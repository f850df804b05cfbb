"""Reduction primitives over `axis` (a sorted tuple) with `keepdims`, and the composites
built on them (reduce_mean, reduce_logsumexp, reduce_variance, reduce_std,
reduce_euclidean_norm).

A reduction's emit template combines an accumulator `acc` with one element `x`,
starting from `init`.
"""

import numpy as np

from srcxform.core.aval import normalize_axes, size
from srcxform.core.errors import DtypeArgumentError
from srcxform.ops.elementwise import (
    cast,
    equal,
    exp,
    float_operands,
    greater,
    is_finite,
    log,
    logical_and,
    logical_not,
    logical_or,
    maximum,
    not_equal,
    sign,
    sqrt,
    stop_gradient,
    where,
)
from srcxform.ops.shape import broadcast_to, reshape
from srcxform.core.primitive import reduce_params, reduction
from srcxform.core.tensor import as_value


def _kept(g, x, axis, keepdims):
    """A reduction's result (or cotangent) broadcast back to the operand's shape."""
    if not keepdims and g.ndim:  # a scalar broadcasts as it is
        g = reshape(g, tuple(1 if i in axis else d for i, d in enumerate(x.shape)))
    return broadcast_to(g, x.shape)


def _extremum_vjp(g, out, x, *, axis, keepdims):
    # Ties share the gradient equally, as TensorFlow does.
    hits = cast(equal(x, _kept(out, x, axis, keepdims)), g.dtype)
    count = reduce_sum(hits, axis=axis, keepdims=True)
    return (_kept(g, x, axis, keepdims) * hits / count,)


def _prod_vjp(g, out, x, *, axis, keepdims):
    # The product of the other elements, as TensorFlow's exclusive products give it, where
    # out / x would be 0/0 at a zero and inf/inf or NaN at an inf or NaN. Zeros and those
    # non-finite elements are set apart, and written so that the derivative of this is
    # right too: the zeros' product keeps their path (second order).
    is_zero = equal(x, 0)
    is_inf = logical_not(is_finite(x))  # inf or NaN
    plain = where(logical_or(is_zero, is_inf), 1, x)
    prod_plain = reduce_prod(plain, axis=axis, keepdims=True)
    prod_zeros = reduce_prod(where(is_zero, x, 1), axis=axis, keepdims=True)
    prod_infs = reduce_prod(where(is_inf, x, 1), axis=axis, keepdims=True)
    is_nan = not_equal(x, x)
    nans = reduce_sum(cast(is_nan, x.dtype), axis=axis, keepdims=True)
    signs = reduce_prod(where(is_inf, where(is_nan, 1, sign(x)), 1), axis=axis, keepdims=True)
    sum_zeros = reduce_sum(where(is_zero, x, 0), axis=axis, keepdims=True)
    zeros = reduce_sum(cast(is_zero, x.dtype), axis=axis, keepdims=True)
    infs = reduce_sum(cast(is_inf, x.dtype), axis=axis, keepdims=True)
    # At a zero, the other zeros' product: 1 if none, the other one, else 0 to first order.
    # 1 too where the group has no zero: the branch is not taken there, and 0 * inf there
    # would be a NaN that debug_nans blames.
    other_zeros = where(greater(zeros, 1), where(equal(zeros, 2), sum_zeros - x, 0), 1)
    # At an inf (or NaN), the other ones' product: 1 if none, NaN if one is NaN, else an
    # inf of their signs' product. A constant, and 1 elsewhere: where() gives the branch
    # it does not take a zero cotangent, and zero times inf would be NaN. The signs are
    # +-1 everywhere (sign(x) only at an inf), so the inf below is never 0 * inf.
    other_signs = signs * where(is_inf, where(is_nan, 1, sign(x)), 1)
    other_infs = stop_gradient(where(logical_and(is_inf, infs > 1), where(
        nans - cast(is_nan, x.dtype) > 0, np.nan, other_signs * np.inf), 1))
    others = where(is_zero, prod_plain * other_zeros * prod_infs,
                   where(is_inf, prod_plain * prod_zeros * other_infs,
                         prod_zeros * prod_infs * prod_plain / plain))
    return (_kept(g, x, axis, keepdims) * others,)


def _extreme_impl(ufunc, sign):
    def impl(x, axis, keepdims):
        # The identity, which an empty reduction gives: -inf or the dtype's lowest for max
        # (an unsigned dtype's is 0, not the negated highest), as TensorFlow's.
        if x.dtype.kind != "f":
            fill = np.iinfo(x.dtype).min if sign < 0 else np.iinfo(x.dtype).max
            return ufunc.reduce(x, axis=axis, keepdims=keepdims, initial=fill)
        out = ufunc.reduce(x, axis=axis, keepdims=keepdims, initial=sign * np.inf)
        return _signed_zeros(out, x, axis, keepdims, negative_wins=sign > 0)

    return impl


def _signed_zeros(out, x, axis, keepdims, negative_wins):
    """A float max's (min's) zero results signed as IEEE 754-2019's maximum (minimum),
    the compiled vecmath.maximum and JAX's sign them: -0.0 below +0.0, so a max is +0.0
    where one of its zeros is, a min -0.0 where one of its zeros is. NumPy leaves which
    zero comes out to the order its SIMD lanes meet them in."""
    zero = out == 0
    if not np.any(zero):
        return out
    won = np.logical_or.reduce((x == 0) & (np.signbit(x) == negative_wins), axis=axis,
                               keepdims=keepdims)  # holds the zero that wins
    negative = won if negative_wins else ~won
    return np.where(zero, np.where(negative, -0.0, 0.0), out).astype(x.dtype)[()]


reduce_sum_p = reduction("reduce_sum", np.sum, "acc + x", init=0, sums=True,
                         vjp=lambda g, out, x, *, axis, keepdims:
                         (_kept(g, x, axis, keepdims),))
reduce_prod_p = reduction("reduce_prod", np.prod, "acc * x", init=1, vjp=_prod_vjp)
reduce_max_p = reduction("reduce_max", _extreme_impl(np.maximum, -1), "vecmath.maximum(acc, x)",
                         init=-np.inf, vjp=_extremum_vjp)
reduce_min_p = reduction("reduce_min", _extreme_impl(np.minimum, 1), "vecmath.minimum(acc, x)",
                         init=np.inf, vjp=_extremum_vjp)


# ----- wrappers (TensorFlow names) -----


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    """The sum over `axis` (None: all axes) (tf.math.reduce_sum)."""
    x, params = reduce_params(input_tensor, axis, keepdims, "reduce_sum")
    return reduce_sum_p.bind(x, **params)


def reduce_prod(input_tensor, axis=None, keepdims=False, name=None):
    """The product of the elements along `axis` (all axes if None), as tf.math.reduce_prod."""
    x, params = reduce_params(input_tensor, axis, keepdims, "reduce_prod")
    return reduce_prod_p.bind(x, **params)


def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    """The largest element along `axis` (all axes if None), as tf.math.reduce_max; the
    gradient goes to the maxima, shared equally among ties."""
    x, params = reduce_params(input_tensor, axis, keepdims, "reduce_max")
    return reduce_max_p.bind(x, **params)


def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    """The smallest element along `axis` (all axes if None), as tf.math.reduce_min; the
    gradient goes to the minima, shared equally among ties."""
    x, params = reduce_params(input_tensor, axis, keepdims, "reduce_min")
    return reduce_min_p.bind(x, **params)


def reduce_any(input_tensor, axis=None, keepdims=False, name=None):
    """Whether any element over `axis` is true, for bools (tf.math.reduce_any): a count of
    the true ones, so it compiles as a sum."""
    x, params = _bool_reduce_params(input_tensor, axis, keepdims, "reduce_any")
    return greater(reduce_sum_p.bind(cast(x, np.int32), **params), 0)


def reduce_all(input_tensor, axis=None, keepdims=False, name=None):
    """Whether every element over `axis` is true, for bools (tf.math.reduce_all)."""
    x, params = _bool_reduce_params(input_tensor, axis, keepdims, "reduce_all")
    return equal(reduce_sum_p.bind(cast(logical_not(x), np.int32), **params), 0)


def count_nonzero(input, axis=None, keepdims=None, dtype=np.int64, name=None):
    """The number of nonzero (true) elements over `axis`, in `dtype` (tf.math.count_nonzero,
    and NumPy's, whose intp is int64)."""
    x = as_value(input, "count_nonzero")
    truth = x if x.dtype == np.bool_ else not_equal(x, cast(0, x.dtype))
    return cast(reduce_sum(cast(truth, np.int64), axis=axis, keepdims=bool(keepdims)), dtype)


def _bool_reduce_params(x, axis, keepdims, op):
    x, params = reduce_params(x, axis, keepdims, op)
    if x.dtype != np.bool_:
        raise DtypeArgumentError(f"{op}({x.aval.short()}): expects a bool input")
    return x, params


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """The mean over `axis`. Integer inputs give an integer mean as TensorFlow's: summed in
    64 bits (a mean of int8 values is one of them), truncated toward zero (-1.5 is -1),
    and 0 over no elements."""
    x, params = reduce_params(input_tensor, axis, keepdims, "reduce_mean")
    count = size([x.shape[i] for i in params["axis"]])
    if x.dtype == np.float16:  # summed in float32, as NumPy's and TensorFlow's means
        return cast(reduce_mean(cast(x, np.float32), params["axis"], keepdims), np.float16)
    if x.dtype.kind == "f":  # a weak x's count weak too: the mean of a Python float stays one
        return reduce_sum_p.bind(x, **params) / (as_value(count) if x.aval.weak else
                                                 cast(count, x.dtype))
    if x.dtype.kind not in "iu":
        raise DtypeArgumentError(f"reduce_mean({x.aval.short()}): cannot average a "
                                 f"{x.dtype.name} value; cast it first")
    wide = np.dtype(np.uint64 if x.dtype.kind == "u" else np.int64)
    total = reduce_sum_p.bind(cast(x, wide), **params)
    count = maximum(cast(count, wide), 1)
    mean = total // count
    if wide.kind == "i":  # // rounds down; a negative mean rounds up, toward zero
        mean = where(logical_and(total < 0, mean * count != total), mean + 1, mean)
    return cast(mean, x.dtype)


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """log(sum(exp(x))) over `axis`, shifted by the max so large inputs stay finite."""
    x, params = reduce_params(float_operands("reduce_logsumexp", input_tensor)[0], axis, keepdims,
                              "reduce_logsumexp")
    top = stop_gradient(reduce_max_p.bind(x, axis=params["axis"], keepdims=True))
    top = where(is_finite(top), top, 0)
    total = log(reduce_sum_p.bind(exp(x - top), axis=params["axis"], keepdims=True)) + top
    if params["keepdims"]:
        return total
    return reshape(total, tuple(d for i, d in enumerate(x.shape) if i not in params["axis"]))


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """The mean squared deviation from the mean over `axis`, for floats
    (tf.math.reduce_variance)."""
    x, = float_operands("reduce_variance", input_tensor)
    axis = normalize_axes(axis, x.ndim, "reduce_variance")
    deviations = x - reduce_mean(x, axis=axis, keepdims=True)
    return reduce_mean(deviations * deviations, axis=axis, keepdims=keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """sqrt(reduce_variance(x)) (tf.math.reduce_std); its gradient is NaN where the
    variance is 0, as TensorFlow's."""
    x, = float_operands("reduce_std", input_tensor)
    return sqrt(reduce_variance(x, normalize_axes(axis, x.ndim, "reduce_std"), keepdims))


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """sqrt(sum(x * x)) over `axis` (tf.math.reduce_euclidean_norm); NaN gradient where
    the norm is 0, as TensorFlow's. Integers give the truncated norm, as TensorFlow."""
    x = as_value(input_tensor, "reduce_euclidean_norm")
    axis = normalize_axes(axis, x.ndim, "reduce_euclidean_norm")
    total = reduce_sum(x * x, axis=axis, keepdims=keepdims)
    if x.dtype.kind == "f":
        return sqrt(total)
    return cast(sqrt(cast(total, np.float64)), x.dtype)
