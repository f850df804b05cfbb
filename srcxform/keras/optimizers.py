"""`srcxform.keras.optimizers`: Keras's optimizers (srcxform.optimizers)."""

from srcxform.optimizers import (  # noqa: F401
    SGD, Adagrad, Adam, AdamW, Nadam, Optimizer, RMSprop,
)
