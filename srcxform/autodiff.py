"""TensorFlow's `tf.autodiff` namespace: ForwardAccumulator (forward.py), GradientTape."""

from srcxform.ad.forward import ForwardAccumulator
from srcxform.ad.tape import GradientTape, UnconnectedGradients

__all__ = ["ForwardAccumulator", "GradientTape", "UnconnectedGradients"]
