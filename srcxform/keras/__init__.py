"""`srcxform.keras`: Keras's names for srcxform's losses and optimizers."""

from srcxform.keras import losses, optimizers

__all__ = ["losses", "optimizers"]
