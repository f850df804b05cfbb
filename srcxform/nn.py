"""`srcxform.nn`: TensorFlow's tf.nn names for srcxform's ops."""

from srcxform.ops import (  # noqa: F401
    log_softmax, relu, sigmoid, sigmoid_cross_entropy_with_logits, softmax,
    softmax_cross_entropy_with_logits, softplus, tanh,
)
