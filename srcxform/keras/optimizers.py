"""`srcxform.keras.optimizers`: Keras's optimizers (srcxform.optimizers)."""

from srcxform.optimizers import (
    SGD, Adagrad, Adam, AdamW, Nadam, Optimizer, RMSprop,
)

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Nadam", "Optimizer", "RMSprop"]
