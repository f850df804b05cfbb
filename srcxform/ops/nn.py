"""Neural-network ops: softmax, log_softmax and the cross-entropies, as composites.

Each subtracts the (gradient-stopped) max or uses softplus, so inputs of 1000 give
finite values and gradients.
"""

from srcxform.errors import shape_error
from srcxform.ops.elementwise import cast, exp, log, multiply, softplus, stop_gradient
from srcxform.ops.reduce import reduce_max, reduce_sum
from srcxform.tensor import as_value


def softmax(logits, axis=-1, name=None):
    """exp(x) / sum(exp(x)) along `axis`, shifted by the max (tf.nn.softmax)."""
    x = as_value(logits, "softmax")
    e = exp(x - stop_gradient(reduce_max(x, axis=axis, keepdims=True)))
    return e / reduce_sum(e, axis=axis, keepdims=True)


def log_softmax(logits, axis=-1, name=None):
    """x - logsumexp(x) along `axis` (tf.nn.log_softmax), as TensorFlow's kernel computes
    it: shifted = x - max(x), then shifted - log(sum(exp(shifted))), so that an inf logit
    makes its whole row NaN there as well."""
    shifted, log_total = _shifted(as_value(logits, "log_softmax"), axis)
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
    shifted, log_total = _shifted(x, axis)
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
    return softplus(x) - x * z


def _labels(labels, logits, op):
    """Labels as a value; integer or bool labels (class indicators) in the logits' float
    dtype, as TensorFlow converts them (NumPy's promotion would make int32 labels with
    float32 logits float64)."""
    z = as_value(labels, op)
    return z if z.dtype.kind == "f" else cast(z, logits.dtype)
