"""Assertions the eager tests share."""

import numpy as np

import srcxform as tf


def assert_tensor_equal(t, expected, dtype=None):
    """t is a Tensor whose value equals `expected` exactly, with `dtype` when one is given."""
    assert isinstance(t, tf.Tensor)
    np.testing.assert_array_equal(t.numpy(), np.asarray(expected))
    assert t.shape == np.shape(expected)
    if dtype is not None:
        assert t.dtype == dtype


def value_and_two_orders(f, x, upstream=None):
    """f(x), its gradient (weighted by upstream) and the gradient of that gradient, through
    nested tapes."""
    x = tf.constant(x)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x, output_gradients=upstream)
    return y, g, outer.gradient(g, x)
