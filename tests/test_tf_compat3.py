"""srcxform behaves as TensorFlow 2.x (issue 18, the rest): reciprocal and the gradients
that use it, integer division by zero in compiled code, Python ints out of a dtype's range.

Each expected value, dtype and exception kind is TensorFlow's (2.21, NumPy 2), or, where the
README documents a difference, srcxform's documented behaviour, named so.
"""

import numpy as np
import pytest
from helpers import assert_tensor_equal as _eq

import srcxform as tf
from srcxform.testing import check_grads

# ----- reciprocal, and log's and log1p's gradients through it -----

EDGES = np.float32([0.0, 1.0, -1.0, 2.0, np.inf, np.nan])


def _orders(f, x, upstream=None):
    """f(x), its gradient (weighted by upstream) and the gradient of that gradient."""
    x = tf.constant(x)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x, output_gradients=upstream)
    return y, g, outer.gradient(g, x)


def test_reciprocal_and_its_derivatives_at_the_edges():
    y, g, gg = _orders(tf.math.reciprocal, EDGES)
    _eq(y, np.float32([np.inf, 1.0, -1.0, 0.5, 0.0, np.nan]), tf.float32)
    _eq(g, np.float32([-np.inf, -1.0, -1.0, -0.25, -0.0, np.nan]))
    _eq(gg, np.float32([np.inf, 2.0, -2.0, 0.25, 0.0, np.nan]))
    _eq(tf.math.reciprocal(2.0), 0.5, tf.float32)
    _eq(tf.math.reciprocal(tf.constant([4.0], tf.float64)), [0.25], tf.float64)


def test_reciprocal_gradient_is_zero_where_the_upstream_gradient_is():
    # TensorFlow's ReciprocalGrad kernel returns 0 for a zero upstream gradient, even where
    # 1/x is inf or NaN; the gradient of that gradient has no such rule.
    _, g, gg = _orders(tf.math.reciprocal, EDGES, tf.zeros([6]))
    _eq(g, np.zeros(6, np.float32))
    _eq(gg, np.float32([np.nan, 0.0, 0.0, 0.0, 0.0, np.nan]))
    _, g, _ = _orders(lambda x: tf.where(x > 0, tf.math.reciprocal(x), 0.0), [0.0, 1.0, -1.0])
    _eq(g, [0.0, -1.0, 0.0])


def test_reciprocal_of_integers_raises():
    # TensorFlow has no integer kernel (NotFoundError); srcxform raises TypeError, as for
    # the other float functions.
    with pytest.raises(TypeError, match="float"):
        tf.math.reciprocal(tf.constant([1, 2]))


def test_log_second_derivative_is_zero_where_a_where_masks_it():
    # TensorFlow's log gradient is grad * reciprocal(x): its own gradient at x = 0, masked
    # out by the where, is 0, not NaN (g / x would give NaN).
    _, g, gg = _orders(lambda x: tf.where(x > 0, tf.math.log(x), 0.0), [0.0, 1.0, -1.0, 2.0])
    _eq(g, [np.nan, 1.0, 0.0, 0.5])
    _eq(gg, [0.0, -1.0, 0.0, -0.25])
    _, g, gg = _orders(tf.math.log, [0.0, 1.0, -1.0, 2.0])
    _eq(g, [np.inf, 1.0, -1.0, 0.5])
    _eq(gg, [-np.inf, -1.0, -1.0, -0.25])


def test_log1p_second_derivative_is_zero_where_a_where_masks_it():
    f = lambda x: tf.where(x > -1, tf.math.log1p(x), 0.0)
    _, g, gg = _orders(f, [0.0, 1.0, -1.0, 2.0])
    _eq(g, np.float32([1.0, 0.5, np.nan, 1 / 3]))
    np.testing.assert_allclose(gg.numpy(), [-1.0, -0.25, 0.0, -1 / 9], rtol=1e-6)


def test_reciprocal_and_log_second_order_compiled_match_eager():
    def f(x, w):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum((tf.math.reciprocal(x) + tf.math.log(x) + tf.math.log1p(x)) * w)
        return tf.reduce_sum(tape.gradient(y, x) * x)

    check_grads(f, [np.array([1.5, 0.4, 2.0]), np.array([0.0, 1.5, -2.0])], order=1)


# ----- integer division by zero, compiled -----


def _divisions(a, b):
    return a % b, a // b, (a[0] // b[1]) % b[2]


@pytest.mark.parametrize("parallel", [False, True])
def test_compiled_integer_division_by_zero_raises_as_eager(parallel):
    # TensorFlow raises InvalidArgumentError ("Integer division by zero"); so does eager
    # srcxform, and compiled code, where Numba's error_model="numpy" would give 0 (and
    # where a prange would drop the exception).
    f = tf.differentiable(_divisions, wrt=(), parallel=parallel)
    a = np.array([7, -7, 5, 9], np.int32)
    got = f(a, np.array([2, 3, -4, 1], np.int32))
    for q, want in zip(got, ([1, 2, -3, 0], [3, -3, -2, 9], -2)):
        np.testing.assert_array_equal(np.asarray(q), want)
    for divisor, which in (([2, 3, 4, 0], "mod"), ([2, 0, 4, 1], ""), ([0, 3, 4, 1], ""),
                           ([2, 3, 0, 1], "")):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=f"{which}: integer division by zero"):
            f(a, np.array(divisor, np.int32))
        with pytest.raises(ZeroDivisionError, match=f"{which}: integer division by zero"):
            _divisions(tf.constant(a), tf.constant(divisor, tf.int32))


def test_compiled_float_division_is_not_checked():
    f = tf.differentiable(lambda a, b: (np.floor_divide(a, b), a % b), wrt=())
    x = np.array([1.0, -1.0, 2.0])
    code = [line for line in f.source(x, x).splitlines() if not line.strip().startswith("#")]
    assert not any("arrays" in line for line in code)
    assert any("] // " in line for line in code) and any("] % " in line for line in code)
    floor, mod = f(x, np.array([0.0, 0.0, 4.0]))
    np.testing.assert_array_equal(np.asarray(floor), [np.inf, -np.inf, 0.0])
    np.testing.assert_array_equal(np.asarray(mod), [np.nan, np.nan, 2.0])
