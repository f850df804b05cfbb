"""`srcxform.nn`: TensorFlow's tf.nn names for srcxform's ops."""

from srcxform.ops import (  # noqa: F401
    log_softmax, relu, sigmoid, sigmoid_cross_entropy_with_logits, softmax,
    softmax_cross_entropy_with_logits, softplus, tanh,
)
from srcxform.ops.nn import (  # noqa: F401
    elu, gelu, leaky_relu, selu, silu, softsign, swish,
)
# Keras's name (keras.activations.log_sigmoid); TensorFlow's is tf.math.log_sigmoid.
from srcxform.ops.nn import log_sigmoid  # noqa: F401
from srcxform.ops.selection import top_k  # noqa: F401  (also tf.math.top_k)
# Convolution, pooling and normalization (ops/conv.py, ops/normalization.py).
from srcxform.ops.conv import avg_pool2d, conv1d, conv2d, max_pool2d  # noqa: F401
from srcxform.ops.normalization import (  # noqa: F401
    batch_normalization, l2_normalize, moments,
)
