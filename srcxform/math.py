"""`srcxform.math`: TensorFlow's tf.math names for srcxform's ops."""

from srcxform.ops import (  # noqa: F401
    abs, add, ceil, cos, divide, divide_no_nan, equal, exp, expm1, floor, floordiv, greater,
    greater_equal, is_finite, less, less_equal, log, log1p, logical_and, logical_not,
    logical_or, maximum, minimum, multiply, negative, not_equal, pow, reduce_all, reduce_any,
    reduce_logsumexp, reduce_max, reduce_mean, reduce_min, reduce_prod, reduce_sum, round,
    sigmoid, sign, sin, softplus, sqrt, square, subtract, tan, tanh,
)
from srcxform.ops import mod as floormod  # noqa: F401
from srcxform.ops import mod  # noqa: F401
from srcxform.ops import reciprocal  # noqa: F401
