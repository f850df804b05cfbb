"""Normalization: l2_normalize, moments and batch_normalization, composites computed as
TensorFlow's Python code computes them (so their gradients, second order included, are
those of the same formulas). They declare no primitive."""

import numpy as np

from srcxform.core.aval import normalize_axes
from srcxform.ops.elementwise import cast, maximum, stop_gradient
from srcxform.ops.mathfuncs import rsqrt, squared_difference
from srcxform.ops.reduce import reduce_mean, reduce_sum
from srcxform.ops.shape import squeeze
from srcxform.core.tensor import as_value


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x**2, axis), epsilon)) (tf.math.l2_normalize): a norm below
    sqrt(epsilon) is taken as sqrt(epsilon), so zeros stay zeros."""
    x = as_value(x, "l2_normalize")
    axis = normalize_axes(dim if axis is None else axis, x.ndim, "l2_normalize")
    square_sum = reduce_sum(x * x, axis=axis, keepdims=True)
    return x * rsqrt(maximum(square_sum, epsilon))


def moments(x, axes, shift=None, keepdims=False, name=None):
    """The mean and variance of x over `axes` (tf.nn.moments); the variance is the mean
    squared deviation from the mean, with the mean's gradient stopped there, as in
    TensorFlow. float16 is computed in float32. `shift` is unused, as in TensorFlow."""
    x = as_value(x, "moments")
    axes = normalize_axes(axes, x.ndim, "moments")
    y = cast(x, np.float32) if x.dtype == np.float16 else x
    mean = reduce_mean(y, axis=axes, keepdims=True)
    variance = reduce_mean(squared_difference(y, stop_gradient(mean)), axis=axes, keepdims=True)
    if not keepdims:
        mean, variance = squeeze(mean, axes), squeeze(variance, axes)
    if x.dtype == np.float16:
        mean, variance = cast(mean, x.dtype), cast(variance, x.dtype)
    return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) * scale / sqrt(variance + epsilon) + offset, with `offset` and `scale`
    optional (None), computed as TensorFlow's tf.nn.batch_normalization does:
    x * inv + (offset - mean * inv), where inv = scale / sqrt(variance + epsilon)."""
    x = as_value(x, "batch_normalization")
    inv = rsqrt(as_value(variance, "batch_normalization") + variance_epsilon)
    if scale is not None:
        inv = inv * scale
    shift = -mean * inv if offset is None else offset - mean * inv
    return x * cast(inv, x.dtype) + cast(shift, x.dtype)
