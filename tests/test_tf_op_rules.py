"""Ops where srcxform differed from TensorFlow without a word (issue 30, item 8): integer
means, output gradients of a reduction's shape, polygamma of a tensor of orders,
while_loop's list-or-tuple loop variables, a pooling window larger than a VALID input,
and the gradient of a Python number.

Expected values, dtypes and exception kinds are TensorFlow 2.21's; where the README
documents a difference the test says so.
"""

import numpy as np
import pytest
import scipy.special
from helpers import assert_tensor_equal as _eq

import srcxform as tf
from srcxform.testing import check_grads

# ----- reduce_mean of integers: a wide sum, truncated toward zero -----

INT_MEANS = [
    ([-1, -2], tf.int32, None, -1),
    ([-1, -2, -4], tf.int32, None, -2),
    ([[-7, 2], [-3, -4]], tf.int32, 0, [-5, -1]),
    ([-1, -2], tf.int64, None, -1),
    ([255, 255], tf.uint8, None, 255),  # summed wider than the dtype, as TensorFlow's
    ([100, 100], tf.int8, None, 100),
    ([-100, -101], tf.int8, None, -100),
    ([2**30] * 3, tf.int32, None, 2**30),
    ([], tf.int32, None, 0),  # TensorFlow's mean of no integers
]


@pytest.mark.parametrize("values, dtype, axis, expected", INT_MEANS)
def test_integer_means_truncate_toward_zero(values, dtype, axis, expected):
    _eq(tf.reduce_mean(tf.constant(values, dtype), axis=axis), expected, dtype)


def test_integer_extremes_of_unsigned_and_empty_values_are_tensorflows():
    _eq(tf.reduce_max(tf.constant([1, 2], tf.uint8)), 2, tf.uint8)
    _eq(tf.reduce_max(tf.zeros((0,), tf.uint8)), 0, tf.uint8)  # the dtype's lowest
    _eq(tf.reduce_min(tf.zeros((0,), tf.uint8)), 255, tf.uint8)
    _eq(tf.reduce_max(tf.zeros((0,), tf.int32)), -2**31, tf.int32)


def test_compiled_integer_means_equal_eager_ones():
    mean = tf.differentiable(lambda x: tf.reduce_mean(x, axis=1, keepdims=True))
    x = np.array([[-7, 2, 0], [-3, -4, 1]], np.int32)
    _eq(mean(x), [[-1], [-2]], tf.int32)
    _eq(mean(x[:, :0]), np.zeros((2, 1)), tf.int32)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32])
def test_a_compiled_sum_to_one_integer_wraps_as_eagerly(dtype):
    """Numba adds int8s as int64s: a sum to a scalar of a narrow dtype was not cast back,
    so the float it became was the unwrapped sum (helper 66: 60000 for -16800)."""
    half = int(np.iinfo(dtype).max // 2)

    def scaled(x):
        count = tf.reduce_sum(tf.cast(x, dtype) * half)
        return tf.reduce_sum(x) * tf.cast(count, tf.float64)

    value, grad = tf.differentiable(scaled).value_and_grad(np.ones(300))
    wrapped = float(np.sum(np.full(300, half, dtype), dtype=dtype))
    assert (float(value), float(grad[0])) == (300 * wrapped, wrapped) != (300 * 300 * half,
                                                                            300 * half)


def test_adding_zero_keeps_the_sign_numpy_gives_a_zero():
    """x + 0.0 is +0.0 where x is -0.0, so it is not simplified to x; x - 0.0 and
    x + -0.0 are (helper 66: 1 / (-x + 0.0) at 0 gave -inf)."""
    x = np.array([0.0, -0.0, 1.0])
    for fn in (lambda x: -x + 0.0, lambda x: 0 + x, lambda x: x - 0.0, lambda x: x + -0.0,
               lambda x: x - -0.0):
        got, want = tf.function(fn)(x), fn(x)
        np.testing.assert_array_equal(np.signbit(np.asarray(got)), np.signbit(want))
    inverse = tf.differentiable(lambda x: tf.reduce_sum(1.0 / (-x + 0.0)))
    assert float(inverse(np.array([0.0, 1.0]))) == np.inf


# ----- output_gradients of the target's size -----


def _gradient(f, x, upstream):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x, output_gradients=upstream)


def test_output_gradients_with_the_targets_size_are_taken_in_its_shape():
    _eq(_gradient(tf.reduce_logsumexp, [1.0], tf.constant([2.0])), [2.0], tf.float32)
    _eq(_gradient(tf.reduce_logsumexp, [1.0], tf.constant([[2.0]])), [2.0], tf.float32)
    softmax = scipy.special.softmax([1.0, 2.0, 3.0])
    np.testing.assert_allclose(
        _gradient(tf.reduce_logsumexp, [1.0, 2.0, 3.0], tf.constant([2.0])).numpy(),
        2 * softmax, rtol=1e-6)
    with pytest.raises(ValueError):  # TensorFlow: a reshape of 2 values into 1 raises
        _gradient(tf.reduce_logsumexp, [1.0, 2.0, 3.0], tf.constant([2.0, 1.0]))


# ----- polygamma: the order is a tensor, elementwise -----


def test_polygamma_takes_a_tensor_of_orders_elementwise():
    x = tf.constant([2.0, 2.0, 2.0])
    expected = [scipy.special.polygamma(n, 2.0) for n in range(3)]
    np.testing.assert_allclose(tf.math.polygamma(tf.constant([0.0, 1.0, 2.0]), x).numpy(),
                               expected, rtol=1e-6)
    table = tf.math.polygamma(tf.constant([[1.0], [2.0]]), tf.constant([2.0, 3.0]))
    np.testing.assert_allclose(table.numpy(), scipy.special.polygamma([[1], [2]], [2.0, 3.0]),
                               rtol=1e-6)
    # A negative or fractional order is NaN, as in TensorFlow.
    _eq(tf.math.polygamma(tf.constant([-1.0, 1.5]), tf.constant([2.0, 2.0])),
        [np.nan, np.nan], tf.float32)


def test_polygamma_has_no_gradient_wrt_its_order():
    a, x = tf.constant([1.0, 2.0]), tf.constant([2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch([a, x])
        y = tf.math.polygamma(a, x)
    da, dx = tape.gradient(y, [a, x])
    assert da is None
    np.testing.assert_allclose(dx.numpy(), scipy.special.polygamma([2, 3], [2.0, 3.0]),
                               rtol=1e-6)


def test_a_traced_order_compiles():
    def f(order, x):
        return tf.reduce_sum(tf.math.polygamma(order, x))

    order, x = np.array([0.0, 1.0, 3.0]), np.array([0.5, 2.5, -1.5])
    check_grads(f, (order, x), wrt=1)
    np.testing.assert_allclose(tf.differentiable(f)(order, x).numpy(),
                               scipy.special.polygamma([0, 1, 3], x).sum(), rtol=1e-12)


# ----- while_loop: a tuple or a list, at the top -----


def test_while_loop_body_may_return_a_tuple_for_list_loop_vars():
    i, s = tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s + 2.0),
                         [tf.constant(0), tf.constant(1.0)])
    _eq(i, 3, tf.int32)
    _eq(s, 7.0, tf.float32)
    i, s = tf.while_loop(lambda i, s: i < 3, lambda i, s: [i + 1, s + 2.0], (0, 1.0))
    _eq(s, 7.0, tf.float32)
    with pytest.raises((TypeError, ValueError)):  # below the top, types must match
        tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, (s[0] + 1.0, s[1])),
                      [tf.constant(0), [tf.constant(1.0), tf.constant(2.0)]])


def test_a_compiled_while_loop_takes_a_tuple_for_list_loop_vars():
    def f(x):
        _, total = tf.while_loop(lambda i, s: i < x.shape[0], lambda i, s: (i + 1, s + x[i]),
                                 [tf.constant(0), tf.constant(0.0, tf.float64)])
        return total * total

    check_grads(f, (np.array([1.0, 2.0, 3.0]),))


# ----- a window larger than a VALID input: no windows -----


@pytest.mark.parametrize("shape, expected", [((1, 2, 2, 1), (1, 0, 0, 1)),
                                             ((1, 4, 2, 1), (1, 2, 0, 1))])
def test_avg_pool_of_a_window_larger_than_the_valid_input_is_empty(shape, expected):
    x = tf.constant(np.ones(shape, np.float32))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.avg_pool2d(x, 3, 1, "VALID")
        total = tf.reduce_sum(y)
    assert y.shape == expected and y.dtype == tf.float32
    _eq(tape.gradient(total, x), np.zeros(shape), tf.float32)
    assert tf.nn.avg_pool1d(tf.ones((1, 2, 1)), 3, 1, "VALID").shape == (1, 0, 1)
    assert tf.nn.avg_pool3d(tf.ones((1, 2, 2, 2, 1)), 3, 1, "VALID").shape == (1, 0, 0, 0, 1)


def test_compiled_avg_pool_of_a_large_window_is_empty_too():
    pool = tf.differentiable(lambda x: tf.nn.avg_pool2d(x, 3, 1, "VALID"))
    assert pool(np.ones((1, 4, 2, 1))).shape == (1, 2, 0, 1)
    assert pool(np.ones((1, 4, 5, 1))).shape == (1, 2, 3, 1)


def test_max_pool_and_conv_of_a_window_larger_than_the_input_still_raise():
    """README: TensorFlow's max_pool aborts the process there, and its conv2d returns
    zeros of the input's shape; srcxform raises."""
    with pytest.raises(ValueError, match="window"):
        tf.nn.max_pool2d(tf.ones((1, 2, 2, 1)), 3, 1, "VALID")
    with pytest.raises(ValueError, match="window"):
        tf.nn.conv2d(tf.ones((1, 2, 2, 1)), tf.ones((3, 3, 1, 1)), 1, "VALID")


# ----- the gradient of something that is no tensor -----


@pytest.mark.parametrize("target", [3.0, 3, np.float32(3.0), np.array([3.0])])
def test_the_gradient_of_a_python_or_numpy_number_raises(target):
    x = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        y = x * 2
    with pytest.raises(TypeError, match="target"):
        tape.gradient(target, x)
    with tf.GradientTape() as tape:
        y = x * 2
    with pytest.raises(TypeError, match="target"):
        tape.gradient([y, target], x)


def test_the_jacobian_of_an_empty_target_is_none_where_it_is_unconnected():
    x, z = tf.constant([1.0, 2.0]), tf.constant([3.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, z])
        y = x[0:0] * 2
    _eq(tape.jacobian(y, x), np.zeros((0, 2)), tf.float32)
    assert tape.jacobian(y, z) is None
    _eq(tape.jacobian(y, z, unconnected_gradients="zero"), np.zeros((0, 1)), tf.float32)
