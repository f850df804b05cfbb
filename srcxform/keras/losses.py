"""Keras's loss functions (`keras.losses`, as tf.keras.losses names them), composites of
srcxform's ops, so they run eagerly, on the tape and inside a `@differentiable` step.

Each returns the per-sample loss, reduced over the last axis as Keras's function forms
do (the mean for the regression losses and binary cross-entropy, the sum for the
categorical ones); a training loop takes its mean. Probabilities are clipped to
[EPSILON, 1 - EPSILON] before their log, as Keras does, so a prediction of exactly 0 or
1 gives a large finite loss and a finite gradient, not inf and NaN.
"""

import numpy as np

from srcxform import ops

EPSILON = 1e-7  # keras.backend.epsilon()


def mean_squared_error(y_true, y_pred):
    """mean(square(y_true - y_pred), axis=-1)."""
    y_true, y_pred = _same_rank(*_pair(y_true, y_pred))
    return ops.reduce_mean(ops.square(y_true - y_pred), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """mean(abs(y_true - y_pred), axis=-1)."""
    y_true, y_pred = _same_rank(*_pair(y_true, y_pred))
    return ops.reduce_mean(ops.abs(y_true - y_pred), axis=-1)


def huber(y_true, y_pred, delta=1.0):
    """The mean over the last axis of 0.5 * e**2 where |e| <= delta, else
    delta * |e| - 0.5 * delta**2, with e = y_pred - y_true."""
    y_true, y_pred = _same_rank(*_pair(y_true, y_pred))
    delta = ops.cast(delta, y_pred.dtype)
    error = y_pred - y_true
    abs_error = ops.abs(error)
    half = ops.cast(0.5, y_pred.dtype)
    quadratic = half * ops.square(error)
    linear = delta * abs_error - half * ops.square(delta)
    return ops.reduce_mean(ops.where(abs_error <= delta, quadratic, linear), axis=-1)


def kl_divergence(y_true, y_pred):
    """sum(y_true * log(y_true / y_pred), axis=-1), both clipped to [EPSILON, 1]."""
    y_true, y_pred = _pair(y_true, y_pred)
    y_true = ops.clip_by_value(y_true, EPSILON, 1.0)
    y_pred = ops.clip_by_value(y_pred, EPSILON, 1.0)
    return ops.reduce_sum(y_true * ops.log(y_true / y_pred), axis=-1)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """The mean over `axis` of -(z log p + (1 - z) log(1 - p)) for labels z and
    probabilities p clipped to [EPSILON, 1 - EPSILON]; with from_logits=True, of
    tf.nn.sigmoid_cross_entropy_with_logits. label_smoothing s moves the labels to
    z (1 - s) + s / 2."""
    y_true, y_pred = _pair(y_true, y_pred)
    _check_same_shape(y_true, y_pred, "binary_crossentropy")
    if label_smoothing:
        smoothing = ops.cast(label_smoothing, y_pred.dtype)  # Keras's: a float64 made float64
        y_true = y_true * (1.0 - smoothing) + 0.5 * smoothing
    if from_logits:
        elementwise = ops.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    else:
        p = ops.clip_by_value(y_pred, EPSILON, 1.0 - EPSILON)
        elementwise = -(y_true * ops.log(p) + (1 - y_true) * ops.log(1 - p))
    return ops.reduce_mean(elementwise, axis=axis)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0,
                             axis=-1):
    """-sum(y_true * log(p), axis) for one-hot (or soft) labels. Probabilities are first
    scaled to sum to 1 along `axis`, then clipped to [EPSILON, 1 - EPSILON]; with
    from_logits=True this is tf.nn.softmax_cross_entropy_with_logits. label_smoothing s
    moves the labels to z (1 - s) + s / k for k classes (the last axis, as in Keras)."""
    if isinstance(axis, bool):
        raise TypeError(f"categorical_crossentropy: axis must be an int, got {axis!r}")
    y_true, y_pred = _pair(y_true, y_pred)
    _check_same_shape(y_true, y_pred, "categorical_crossentropy")
    if label_smoothing:
        classes = ops.cast(ops.shape(y_true)[-1], y_pred.dtype)
        smoothing = ops.cast(label_smoothing, y_pred.dtype)
        y_true = y_true * (1.0 - smoothing) + smoothing / classes
    if from_logits:
        return ops.softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred, axis=axis)
    p = y_pred / ops.reduce_sum(y_pred, axis=axis, keepdims=True)
    p = ops.clip_by_value(p, EPSILON, 1.0 - EPSILON)
    return -ops.reduce_sum(y_true * ops.log(p), axis=axis)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1):
    """categorical_crossentropy with integer class labels: -log_softmax(logits)[label]
    for each sample, the classes on the last axis. Probabilities become logits as
    log(clip(p, EPSILON, 1 - EPSILON)), as in Keras (which then renormalizes them).

    A label outside [0, classes) gives a NaN loss for its sample (TensorFlow's GPU
    kernel's answer; its CPU kernel raises instead), eagerly and compiled alike.
    """
    y_pred = ops.convert_to_tensor(y_pred)
    if axis not in (-1, y_pred.ndim - 1):
        raise ValueError(f"sparse_categorical_crossentropy: only axis=-1 is supported "
                         f"(as in Keras), got axis={axis}")
    labels = ops.convert_to_tensor(y_true)
    if labels.ndim == y_pred.ndim and labels.shape[-1] == 1:
        labels = ops.squeeze(labels, axis=-1)
    if labels.ndim != y_pred.ndim - 1:
        raise ValueError(f"sparse_categorical_crossentropy: labels of shape "
                         f"{_shape(labels)} for predictions of shape {_shape(y_pred)}; "
                         "the labels need the predictions' shape without its last axis")
    if labels.dtype.kind != "i":
        labels = ops.cast(labels, np.int64)
    logits = y_pred if from_logits else ops.log(ops.clip_by_value(y_pred, EPSILON,
                                                                  1.0 - EPSILON))
    classes = y_pred.shape[-1]
    # A one-hot mask selects each sample's log-probability: shapes stay symbolic, so a
    # compiled step serves every batch size. where(), not a product: a -inf logit of
    # another class must not turn 0 * inf into NaN.
    hot = ops.equal(ops.expand_dims(labels, -1), ops.range(classes, dtype=labels.dtype))
    zero = ops.zeros_like(logits)
    loss = ops.reduce_sum(ops.where(hot, -ops.log_softmax(logits), zero), axis=-1)
    valid = ops.logical_and(labels >= 0, labels < classes)
    return ops.where(valid, loss, ops.cast(np.nan, loss.dtype))


# tf.keras.losses' short names
mse = mean_squared_error
mae = mean_absolute_error
kld = kullback_leibler_divergence = kl_divergence


def _pair(y_true, y_pred):
    """The predictions as a tensor, the labels cast to their dtype (Keras's rule)."""
    y_pred = ops.convert_to_tensor(y_pred)
    return ops.cast(y_true, y_pred.dtype), y_pred


def _same_rank(y_true, y_pred):
    """Keras's squeeze_or_expand_to_same_rank: where the ranks differ by one and the
    longer one's last axis is 1, that axis is dropped (or, when the other is a vector,
    the vector gains a last axis of 1)."""
    for first in (True, False):
        a, b = (y_true, y_pred) if first else (y_pred, y_true)
        if a.ndim == b.ndim + 1 and a.shape[-1] == 1:
            if b.ndim == 1:
                b = ops.expand_dims(b, -1)
            else:
                a = ops.squeeze(a, axis=-1)
            return (a, b) if first else (b, a)
    return y_true, y_pred


def _check_same_shape(y_true, y_pred, op):
    if tuple(y_true.shape) != tuple(y_pred.shape):  # traced sizes: equal for this call
        raise ValueError(f"{op}: labels and predictions must have the same shape, got "
                         f"{_shape(y_true)} and {_shape(y_pred)}")


def _shape(x):
    return tuple(int(d) for d in x.shape)

__all__ = [
    "binary_crossentropy", "categorical_crossentropy", "huber", "kl_divergence", "kld",
    "kullback_leibler_divergence", "mae", "mean_absolute_error", "mean_squared_error", "mse",
    "sparse_categorical_crossentropy",
]
