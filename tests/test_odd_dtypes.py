"""Arrays of dtypes Numba cannot compute in: big-endian ones are converted to native,
float16, long double and complex ones are refused with srcxform's own TypeError."""

import numpy as np
import pytest

import srcxform as tf

_square_sum = tf.differentiable(lambda x: tf.reduce_sum(x * x))


@pytest.mark.parametrize("dtype", [">f8", ">f4", "<f8"])
def test_big_endian_arrays_compute_as_native_ones(dtype):
    x = np.arange(1.0, 4.0).astype(dtype)
    value, grad = _square_sum.value_and_grad(x)
    assert value == 14.0
    np.testing.assert_array_equal(grad, [2.0, 4.0, 6.0])
    assert grad.dtype == np.dtype(dtype).newbyteorder("=")


@pytest.mark.parametrize("dtype", [np.float16, np.longdouble, np.complex128])
def test_dtypes_numba_cannot_compile_are_refused_by_name(dtype):
    x = np.arange(3.0).astype(dtype)
    with pytest.raises(TypeError, match=f"not {np.dtype(dtype).name}: cast it first"):
        _square_sum.grad(x)
    with pytest.raises(TypeError, match=np.dtype(dtype).name):
        _square_sum(x[0])  # a NumPy scalar of that dtype too


def test_the_eager_tape_still_computes_in_float16():
    x = tf.constant(np.arange(3.0, dtype=np.float16))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * x)
    grad = tape.gradient(y, x)
    assert grad.dtype == np.float16
    np.testing.assert_array_equal(grad.numpy(), [0.0, 2.0, 4.0])


def test_a_big_endian_array_after_a_native_one_computes_as_native():
    # The warm entry made by the native call sends the big-endian array on to the slow
    # path, which converts it (Numba cannot type it).
    f = tf.differentiable(lambda x: tf.reduce_sum(x * x))
    native = np.arange(1.0, 4.0)
    big = native.astype(">f8")
    for x in (native, big, big, tf.constant(big), native):
        assert float(f(x)) == 14.0
        np.testing.assert_array_equal(f.grad(x), [2.0, 4.0, 6.0])


def test_a_big_endian_variable_is_held_in_native_order():
    v = tf.Variable(np.arange(1.0, 4.0).astype(">f8"))
    assert v.dtype == np.float64 and v.dtype.isnative

    @tf.differentiable
    def step(x):
        v.assign_add(x)
        return tf.reduce_sum(v * x)

    for k in range(1, 4):  # the first call, then the warm entry
        assert float(step(np.ones(3))) == 6.0 + 3 * k
    np.testing.assert_array_equal(v.numpy(), [4.0, 5.0, 6.0])


def test_stack_of_a_uint64_and_a_python_int_is_exact_eagerly_and_compiled():
    # A carried leftover: NumPy's and Numba's concatenate took uint64 beside a Python
    # int (int64) through float64, so 2**63 + 1 came back 2**63 (TensorFlow 2.21: exact).
    big = np.uint64(2**63 + 1)
    for got in (tf.stack([big, 1]), tf.differentiable(lambda a: tf.stack([a, 1]), wrt=())(big)):
        assert got.dtype == np.uint64 and np.asarray(got).tolist() == [2**63 + 1, 1]


def test_round_of_integers_is_exact_and_divide_no_nan_of_them_a_float():
    # Helper 130: tf.round went through np.rint's float64 (2**53 + 1 gave 2**53, uint64's
    # largest 0); divide_no_nan of integers raised where TensorFlow 2.21 divides as truediv.
    big = np.array([2**53 + 1])
    for got in (tf.round(big), tf.differentiable(lambda a: tf.round(a), wrt=())(big)):
        assert np.asarray(got).tolist() == [2**53 + 1]
    assert tf.round(np.array([2**64 - 1], np.uint64)).numpy().tolist() == [2**64 - 1]
    q = tf.math.divide_no_nan(tf.constant([1, 2, 3], tf.int8), tf.constant([2, 0, 1], tf.int8))
    assert q.dtype == tf.float32 and q.numpy().tolist() == [0.5, 0.0, 3.0]
    assert tf.math.divide_no_nan(tf.constant([1, 2]), 2).dtype == tf.float64


def test_maximum_and_minimum_of_integers_are_exact_compiled_as_max_and_min():
    # Integers take the builtin max and min, a select LLVM reads: a loop's trip count
    # through the floats' form (with its NaN test) made a nested loop's gradient 3x slower.
    big = np.array([2**63 - 1, -2**63, 5, -1])
    other = np.array([2**63 - 2, -2**63 + 1, 5, 0])
    small = np.array([0, 255, 3, 9], np.uint8)
    f = tf.differentiable(lambda a, b, u: (tf.maximum(a, b), tf.minimum(a, b),
                                           tf.maximum(u, u[::-1]), tf.minimum(u, 4)), wrt=())
    for got, want in zip(f(big, other, small), (np.maximum(big, other), np.minimum(big, other),
                                                np.maximum(small, small[::-1]),
                                                np.minimum(small, 4))):
        assert got.dtype == want.dtype and np.asarray(got).tolist() == want.tolist()
    kernel = f.source(big, other, small).split("\n\n\n")[1]  # the kernel's function
    assert "max(" in kernel and "min(" in kernel and " != " not in kernel
