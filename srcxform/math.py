"""`srcxform.math`: TensorFlow's tf.math names for srcxform's ops."""

from srcxform.ops import (  # noqa: F401
    abs, acos, acosh, add, asin, asinh, atan, atan2, atanh, ceil, cos, cosh, cumsum, divide,
    divide_no_nan, equal, exp, expm1, floor, floordiv, greater, greater_equal, is_finite, less,
    less_equal, log, log1p, logical_and, logical_not, logical_or, maximum, minimum, multiply,
    negative, not_equal, pow, reduce_all, reduce_any, reduce_logsumexp, reduce_max,
    reduce_mean, reduce_min, reduce_prod, reduce_sum, round, sigmoid, sign, sin, sinh,
    softplus, sqrt, square, subtract, tan, tanh, truediv,
)
from srcxform.ops import mod as floormod  # noqa: F401
from srcxform.ops import mod  # noqa: F401
from srcxform.ops.cumulative import cumprod  # noqa: F401
from srcxform.ops.selection import (  # noqa: F401
    argmax, argmin, segment_sum, top_k, unsorted_segment_sum,
)
from srcxform.ops.mathfuncs import (  # noqa: F401
    digamma, erf, erfc, lgamma, polygamma, rsqrt, squared_difference, xlogy,
)
# Not in tf.math: tf.experimental.numpy's log2, log10 and exp2, computed as it does.
from srcxform.ops.mathfuncs import exp2, log2, log10  # noqa: F401
from srcxform.ops.nn import log_sigmoid, softsign  # noqa: F401
from srcxform.ops.reduce import (  # noqa: F401
    reduce_euclidean_norm, reduce_std, reduce_variance,
)
from srcxform.ops import reciprocal  # noqa: F401
