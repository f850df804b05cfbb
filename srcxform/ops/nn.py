"""Neural-network ops: softmax, log_softmax and the cross-entropies, as composites.

Each subtracts the (gradient-stopped) max or uses softplus, so inputs of 1000 give
finite values and gradients.
"""

from srcxform.ops.elementwise import multiply, negative, softplus, stop_gradient
from srcxform.ops.reduce import reduce_logsumexp, reduce_max, reduce_sum
from srcxform.ops.elementwise import exp
from srcxform.tensor import as_value


def softmax(logits, axis=-1, name=None):
    """exp(x) / sum(exp(x)) along `axis`, shifted by the max (tf.nn.softmax)."""
    x = as_value(logits, "softmax")
    e = exp(x - stop_gradient(reduce_max(x, axis=axis, keepdims=True)))
    return e / reduce_sum(e, axis=axis, keepdims=True)


def log_softmax(logits, axis=-1, name=None):
    """x - logsumexp(x) along `axis` (tf.nn.log_softmax)."""
    x = as_value(logits, "log_softmax")
    return x - reduce_logsumexp(x, axis=axis, keepdims=True)


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """-sum(labels * log_softmax(logits)) along `axis`, one value per example."""
    return negative(reduce_sum(multiply(labels, log_softmax(logits, axis)), axis=axis))


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """softplus(x) - x * z elementwise: the logistic loss of logits x against labels z."""
    x = as_value(logits, "sigmoid_cross_entropy_with_logits")
    return softplus(x) - x * labels
