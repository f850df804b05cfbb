"""`srcxform.bitwise`: TensorFlow's tf.bitwise names for srcxform's ops (on integers; the
shifts are not supported)."""

from srcxform.ops.elementwise import bitwise_and, bitwise_or, bitwise_xor, invert

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "invert"]
