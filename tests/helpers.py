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
