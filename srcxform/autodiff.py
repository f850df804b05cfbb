"""TensorFlow's `tf.autodiff` namespace: ForwardAccumulator (forward.py), GradientTape."""

from srcxform.forward import ForwardAccumulator
from srcxform.tape import GradientTape, UnconnectedGradients

__all__ = ["ForwardAccumulator", "GradientTape", "UnconnectedGradients"]
