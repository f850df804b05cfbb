"""Assertions the eager tests share, the second user the cache tests run as, and the quick
tier's share of long families of cases."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import srcxform as tf


def assert_tensor_equal(t, expected, dtype=None):
    """t is a Tensor whose value equals `expected` exactly, with `dtype` when one is given."""
    assert isinstance(t, tf.Tensor)
    np.testing.assert_array_equal(t.numpy(), np.asarray(expected))
    assert t.shape == np.shape(expected)
    if dtype is not None:
        assert t.dtype == dtype


def assert_compiled_is_the_tapes(compiled, fn, *args):
    """compiled.value_and_grad(*args) equals fn's value and its eager tape's gradients in
    every argument (as Variables), to rounding."""
    value, grads = compiled.value_and_grad(*args)
    variables = [tf.Variable(a) for a in args]
    with tf.GradientTape() as tape:
        y = fn(*variables)
    np.testing.assert_allclose(value, y.numpy(), rtol=1e-12)
    for got, want in zip(grads, tape.gradient(y, variables), strict=True):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-12)


def tape_gradient(f, x):
    """The eager tape's gradient of f at x (a constant made of it, watched)."""
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


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


# The cache's trust tests write and load as a second user where they can: root, with
# setpriv, and an interpreter whose packages that user can read (a virtual environment in
# a private folder is not: CI's is made readable for them).
NOBODY = 65534
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
CAN_SETPRIV = IS_ROOT and shutil.which("setpriv") is not None and subprocess.run(
    [*AS_NOBODY, sys.executable, "-c", "import numpy, srcxform"], capture_output=True,
    timeout=60, check=False).returncode == 0


def central_difference(fn, x, eps=1e-6):
    """d fn / dx at a float or an array x, each element by central differences."""
    x = np.asarray(x, np.float64)
    grad = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[k] = eps
        grad[k] = (float(fn(x + step)) - float(fn(x - step))) / (2 * eps)
    return grad


def quick_first(values, keep=1):
    """values as pytest params, all but the first `keep` in the slow tier only: for a
    family of cases each seconds long (a process, or a Numba compile), where the first
    ones stand for the rest in the quick tier."""
    return [value if k < keep else pytest.param(value, marks=pytest.mark.slow)
            for k, value in enumerate(values)]
