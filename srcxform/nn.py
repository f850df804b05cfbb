"""`srcxform.nn`: TensorFlow's tf.nn names for srcxform's ops, and dropout."""

import numbers as _numbers
import types as _types

from srcxform import random as _random
from srcxform.ops import cast as _cast
from srcxform.ops import greater_equal as _greater_equal
from srcxform.core.tensor import as_value as _as_value
from srcxform.ops import (
    log_softmax, relu, sigmoid, sigmoid_cross_entropy_with_logits, softmax,
    softmax_cross_entropy_with_logits, softplus, tanh,
)
from srcxform.ops.nn import (
    bias_add, elu, embedding_lookup, gelu, l2_loss, leaky_relu, relu6, selu, silu,
    sparse_softmax_cross_entropy_with_logits, swish, weighted_cross_entropy_with_logits,
)
from srcxform.ops.elementwise import softsign
# Keras's name (keras.activations.log_sigmoid); TensorFlow's is tf.math.log_sigmoid.
from srcxform.ops.nn import log_sigmoid
from srcxform.ops.selection import top_k
# Convolution, pooling and normalization (ops/conv.py, ops/normalization.py).
from srcxform.ops.conv import (
    avg_pool, avg_pool1d, avg_pool2d, avg_pool3d, conv1d, conv2d, max_pool, max_pool1d,
    max_pool2d, max_pool3d,
)
from srcxform.ops.normalization import (
    batch_normalization, l2_normalize, moments,
)


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """x with each element zeroed with probability `rate` and the others scaled by
    1 / (1 - rate) (tf.nn.dropout). The mask is drawn from srcxform.random's global
    generator (or `seed`'s stream): fresh at each call, compiled calls included. Its
    gradient is the mask times 1 / (1 - rate). `noise_shape` broadcasts against x's shape
    (a None in it takes x's size), to keep or drop whole rows or channels."""
    return general_dropout(x, rate, lambda shape, dtype: _random.uniform(shape, dtype=dtype,
                                                                         seed=seed),
                           noise_shape)


def general_dropout(x, rate, uniform_sampler, noise_shape=None, name=None):
    """dropout with its mask drawn by `uniform_sampler(shape=, dtype=)`, uniform values in
    [0, 1): a Generator's `uniform`, for a model with a stream of its own
    (tf.nn.experimental.general_dropout)."""
    x = _as_value(x, "dropout")
    if x.dtype.kind != "f":
        raise TypeError(f"dropout: x must be a float tensor, got {x.aval.short()}")
    rate = _checked_rate(rate, x)
    if isinstance(rate, _numbers.Real) and rate == 0:
        return x
    shape = tuple(x.aval.shape) if noise_shape is None else tuple(
        x.aval.shape[i] if d is None else d for i, d in enumerate(noise_shape))
    keep = _greater_equal(uniform_sampler(shape=shape, dtype=x.dtype), rate)
    return x * (1 / (1 - rate)) * _cast(keep, x.dtype)


def _checked_rate(rate, x):
    """dropout's rate: a number in [0, 1), or a scalar float tensor (a traced argument
    too: one kernel serves every rate) in x's dtype. As TensorFlow, a tensor's value is
    not checked (the same eagerly and compiled): 1 gives NaN, a negative rate scales."""
    if isinstance(rate, _numbers.Real) and not isinstance(rate, bool):
        if not 0 <= rate < 1:
            raise ValueError(f"dropout: rate must be a number in [0, 1), got {rate!r}")
        return float(rate)  # a NumPy float64 made float32 x float64
    try:
        value = _as_value(rate, "dropout")
    except TypeError:
        value = None
    if value is None or value.ndim != 0 or value.dtype.kind != "f":
        shown = value.aval.short() if value is not None else repr(rate)
        raise ValueError(f"dropout: rate must be a number in [0, 1) or a scalar float "
                         f"tensor, got {shown}")
    return _cast(value, x.dtype)  # TensorFlow raises for another float dtype


experimental = _types.SimpleNamespace(general_dropout=general_dropout)  # tf.nn.experimental

__all__ = [
    "avg_pool", "avg_pool1d", "avg_pool2d", "avg_pool3d", "batch_normalization", "bias_add",
    "conv1d", "conv2d", "dropout", "elu", "embedding_lookup", "gelu", "general_dropout",
    "l2_loss", "l2_normalize",
    "leaky_relu", "log_sigmoid", "log_softmax", "max_pool", "max_pool1d", "max_pool2d",
    "max_pool3d", "moments", "relu", "relu6", "selu", "sigmoid",
    "sigmoid_cross_entropy_with_logits", "silu", "softmax",
    "softmax_cross_entropy_with_logits", "softplus", "softsign",
    "sparse_softmax_cross_entropy_with_logits", "swish", "tanh", "top_k",
    "weighted_cross_entropy_with_logits",
]
