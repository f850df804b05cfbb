"""Neural-network ops: softmax, log_softmax, the cross-entropies, l2_loss, bias_add, the
activations and embedding_lookup, composites but for leaky_relu.

The softmax family subtracts the (gradient-stopped) max or uses softplus, so inputs of
1000 give finite values and gradients.
"""

import numpy as np

from srcxform.core.aval import Aval, broadcast_shapes, normalize_axis
from srcxform.core.dtypes import promote
from srcxform.core.errors import shape_error
from srcxform.ops.elementwise import (
    abs, cast, exp, expm1, float_operands, less, log, log1p, minimum, multiply, relu, sigmoid,
    softplus, stop_gradient, tanh, where,
)
from srcxform.ops.creation import convert_to_tensor, zeros_like
from srcxform.ops.mathfuncs import erfc
from srcxform.ops.reduce import reduce_max, reduce_sum
from srcxform.ops.shape import checked_indices, gather, reshape
from srcxform.core.primitive import primitive
from srcxform.core.tensor import Value, as_value


def softmax(logits, axis=-1, name=None):
    """exp(x) / sum(exp(x)) along `axis`, shifted by the max (tf.nn.softmax)."""
    x = as_value(logits, "softmax")
    axis = normalize_axis(axis, x.ndim, "softmax")
    e = exp(x - stop_gradient(reduce_max(x, axis=axis, keepdims=True)))
    return e / reduce_sum(e, axis=axis, keepdims=True)


def log_softmax(logits, axis=-1, name=None):
    """x - logsumexp(x) along `axis` (tf.nn.log_softmax), as TensorFlow's kernel computes
    it: shifted = x - max(x), then shifted - log(sum(exp(shifted))), so that an inf logit
    makes its whole row NaN there as well."""
    x = as_value(logits, "log_softmax")
    shifted, log_total = _shifted(x, normalize_axis(axis, x.ndim, "log_softmax"))
    return shifted - log_total


def _shifted(x, axis):
    """x - max(x) along `axis`, and the log of its exps' sum (TensorFlow's kernels')."""
    shifted = x - stop_gradient(reduce_max(x, axis=axis, keepdims=True))
    return shifted, log(reduce_sum(exp(shifted), axis=axis, keepdims=True))


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """-sum(labels * log_softmax(logits)) along `axis`, one value per example, summed as
    TensorFlow's kernel does, labels * (log_total - shifted): a loss of 0 is +0, not -0."""
    x = as_value(logits, "softmax_cross_entropy_with_logits")
    z = _labels(labels, x, "softmax_cross_entropy_with_logits")
    shifted, log_total = _shifted(x, normalize_axis(axis, x.ndim,
                                                    "softmax_cross_entropy_with_logits"))
    return reduce_sum(multiply(z, log_total - shifted), axis=axis)


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """softplus(x) - x * z elementwise: the logistic loss of logits x against labels z,
    which must have x's shape (TensorFlow's check: (2,) labels would broadcast against
    (2, 1) logits into a (2, 2) loss)."""
    op = "sigmoid_cross_entropy_with_logits"
    x = as_value(logits, op)
    z = _labels(labels, x, op)
    if tuple(z.shape) != tuple(x.shape):  # traced sizes: equal for this call (a guard)
        raise shape_error(f"{op}: logits and labels must have the same shape, got "
                          f"{x.aval.short()} and {z.aval.short()}")
    # TensorFlow's relu(x) - x * z + softplus(-|x|), its first two terms as one, x * (step
    # - z): softplus(x) - x * z cancelled where labels of 1 meet large logits (0 for 4e-8
    # at x = 17, helper 125); added apart, their gradients lost the third's digits in
    # float32 (1 - 4.5e-5 - 1). The label's gradient is -x, the second derivative the
    # label's none, as TensorFlow's (helper 126); where(x >= 0, -x, x) for -|x| gives
    # 0.5 - z at 0.
    positive = x >= 0
    return x * (cast(positive, x.dtype) - z) + softplus(where(positive, -x, x))


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """-log_softmax(logits)[label] for each example, the classes on the last axis
    (tf.nn.sparse_softmax_cross_entropy_with_logits). The labels are integers of the
    logits' shape less its last axis; one outside [0, classes) raises IndexError (as
    TensorFlow's CPU kernel raises), compiled code too."""
    op = "sparse_softmax_cross_entropy_with_logits"
    x, z = as_value(logits, op), as_value(labels, op)
    if z.dtype.kind not in "iu":
        raise TypeError(f"{op}: labels must be integers, got {z.aval.short()}")
    if not x.ndim or tuple(z.shape) != tuple(x.shape[:-1]):
        raise shape_error(f"{op}: labels must have the logits' shape without its last axis, "
                          f"got {z.aval.short()} and {x.aval.short()}")
    classes = x.shape[-1]
    shifted, log_total = _shifted(x, -1)
    picked = gather(reshape(shifted, (-1, classes)),
                    checked_indices(reshape(z, (-1,)), classes, op, "raise"), batch_dims=1)
    return reshape(log_total, z.shape) - reshape(picked, z.shape)


def weighted_cross_entropy_with_logits(labels, logits, pos_weight, name=None):
    """sigmoid_cross_entropy_with_logits with the positive term weighted by pos_weight
    (tf.nn.weighted_cross_entropy_with_logits), as TensorFlow computes it so that large
    logits stay finite: (1 - z) x + (1 + (q - 1) z) (log1p(exp(-|x|)) + max(-x, 0))."""
    op = "weighted_cross_entropy_with_logits"
    x = as_value(logits, op)
    z = _labels(labels, x, op)
    if tuple(z.shape) != tuple(x.shape):
        raise shape_error(f"{op}: logits and labels must have the same shape, got "
                          f"{x.aval.short()} and {z.aval.short()}")
    log_weight = 1 + (pos_weight - 1) * z
    return (1 - z) * x + log_weight * (log1p(exp(-abs(x))) + relu(-x))


def l2_loss(t, name=None):
    """sum(t ** 2) / 2 of a float tensor (tf.nn.l2_loss)."""
    x = convert_to_tensor(t)  # a Python float is float32, as TensorFlow makes it
    x, = float_operands("l2_loss", x)
    return reduce_sum(x * x) / 2


def bias_add(value, bias, data_format=None, name=None):
    """value + bias, the 1-D bias along the channels: the last axis, or the second for
    data_format "NC..." (tf.nn.bias_add)."""
    x, b = as_value(value, "bias_add"), as_value(bias, "bias_add")
    channels_first = data_format is not None and data_format.startswith("NC")
    axis = 1 if channels_first else -1
    if x.ndim < 2 or b.ndim != 1 or b.shape[0] != x.shape[axis]:
        raise shape_error(f"bias_add: needs a value of rank 2 or more and a vector bias of "
                          f"its channels' size, got {x.aval.short()} and {b.aval.short()}")
    if channels_first:
        b = reshape(b, (b.shape[0],) + (1,) * (x.ndim - 2))
    return x + b


def _labels(labels, logits, op):
    """Labels as a value; integer or bool labels (class indicators) in the logits' float
    dtype, as TensorFlow converts them (NumPy's promotion would make int32 labels with
    float32 logits float64)."""
    z = as_value(labels, op)
    return z if z.dtype.kind == "f" else cast(z, logits.dtype)


# ----- activations -----


def _float_shape(*avals):
    dtype, weak = promote(avals)
    if dtype.kind != "f":
        raise TypeError(f"expects float inputs, got {dtype.name}")
    return Aval(broadcast_shapes(*[a.shape for a in avals]), dtype, weak)


# leaky_relu and its gradient are primitives, as TensorFlow's LeakyRelu and LeakyReluGrad
# kernels: the gradient's own gradient wrt x is zero (not None), so leaky_relu has a
# second derivative, as relu has. The other activations are composites whose gradients
# are those of TensorFlow's kernels.
leaky_relu_p = primitive("leaky_relu", "elementwise",
                         lambda x, alpha: np.where(x > 0, x, x * alpha),
                         lambda x, *, alpha: _float_shape(x),
                         "x if x > 0 else x * alpha",
                         vjp=lambda g, out, x, *, alpha: (leaky_relu_grad(g, x, alpha),))
leaky_relu_grad_p = primitive("leaky_relu_grad", "elementwise",
                              lambda dy, x, alpha: np.where(x > 0, dy, dy * alpha),
                              lambda dy, x, *, alpha: _float_shape(dy, x),
                              "dy if x > 0 else dy * alpha",
                              vjp=lambda g, out, dy, x, *, alpha:
                              (leaky_relu_grad(g, x, alpha), zeros_like(x)))

_SELU_SCALE = 1.0507009873554804934193349852946
_SELU_SCALE_ALPHA = 1.7580993408473768599402175208123  # scale * alpha, as its kernel


def gelu(features, approximate=False, name=None):
    """x * P(X <= x) for a standard normal X (tf.nn.gelu), computed as TensorFlow 2.21
    does: 0.5 x erfc(-x / sqrt(2)) (accurate for negative x, where 1 + erf(x / sqrt(2))
    cancels), or with approximate=True 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3))).
    TensorFlow casts 1/sqrt(2) and 0.044715 to its float32 constants first, so float64
    results are 1e-8 from the exact function; so are srcxform's."""
    x = as_value(features, "gelu")
    if approximate:
        inner = 0.7978845608028654 * (x + _float32(0.044715) * (x * x * x))
        return 0.5 * x * (1.0 + tanh(inner))
    return 0.5 * x * erfc(-x * _float32(0.7071067811865476))


def _float32(value):
    """value rounded to float32, as TensorFlow's float attributes and float32 constants
    cast to the input's dtype hold it."""
    return float(np.float32(value))


def elu(features, name=None, *, alpha=1.0):
    """x where x >= 0, else alpha * (exp(x) - 1) (tf.nn.elu; `alpha` is Keras's); its
    gradient at 0 is 1, as TensorFlow's EluGrad."""
    x = as_value(features, "elu")
    # expm1 of min(x, 0): the unselected side overflows to inf for a large x, and its
    # gradient there (0 times inf) would be NaN (the double-where pattern).
    return where(less(x, 0), alpha * expm1(minimum(x, 0)), x)


def selu(features, name=None):
    """scale * elu(x, alpha) with the self-normalizing constants (tf.nn.selu)."""
    x = as_value(features, "selu")
    return where(less(x, 0), _SELU_SCALE_ALPHA * expm1(minimum(x, 0)), _SELU_SCALE * x)


def leaky_relu(features, alpha=0.2, name=None, *, negative_slope=None):
    """x where x > 0, else alpha * x (tf.nn.leaky_relu; `negative_slope` is Keras's name
    for alpha); its gradient at 0 is alpha. Integers are cast to float32 first, as
    TensorFlow does. alpha is rounded to float32, as TensorFlow's attribute holds it: the
    float64 result at -2 with alpha 0.2 is -0.4000000059604645 in both."""
    if negative_slope is not None:
        alpha = negative_slope
    x = as_value(features, "leaky_relu")
    if x.dtype.kind in "iu":
        x = cast(x, np.float32)
    if isinstance(alpha, Value):  # a Python float argument, traced: the op's arithmetic
        slope = stop_gradient(cast(cast(alpha, np.float32), x.dtype))
        return where(x > 0, x, x * slope)
    return leaky_relu_p.bind(x, alpha=_float32(alpha))


def leaky_relu_grad(dy, x, alpha):
    """dy where x > 0, else dy * alpha (TensorFlow's raw_ops.LeakyReluGrad)."""
    return leaky_relu_grad_p.bind(dy, x, alpha=_float32(alpha))


def relu6(features, name=None):
    """min(max(x, 0), 6) (tf.nn.relu6); its gradient is 0 at 0 and at 6, as TensorFlow's
    (the tie in minimum goes to the 6)."""
    return minimum(6, relu(as_value(features, "relu6")))


def silu(features, beta=1.0, name=None):
    """x * sigmoid(beta * x) (tf.nn.silu, also tf.nn.swish)."""
    x = as_value(features, "silu")
    return x * sigmoid(beta * x)


swish = silu


def log_sigmoid(x, name=None):
    """log(sigmoid(x)), as -softplus(-x) so that it stays finite (tf.math.log_sigmoid)."""
    return -softplus(-as_value(x, "log_sigmoid"))


def embedding_lookup(params, ids, max_norm=None, name=None):
    """The rows of params that ids name, in ids' shape (tf.nn.embedding_lookup): a gather
    along axis 0, whose gradient adds into the rows read. params is one tensor (or a
    list of one); sharded tables and max_norm raise TypeError."""
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise TypeError(f"embedding_lookup: srcxform takes one table, not "
                            f"{len(params)} shards; concat them first")
        params = params[0]
    if max_norm is not None:
        raise TypeError("embedding_lookup: srcxform does not support max_norm")
    return gather(params, ids, axis=0)
