"""Conversions with `dtype=`, and the Variable updates built on them, follow TensorFlow
(issue 30, item 8).

TensorFlow converts a Python value by its kind (bools become numbers, ints become floats,
a float never an int, an empty list anything) and a NumPy value as NumPy's astype does
(np.float32(2.5) into int64 is 2); a tensor keeps its dtype. A Variable's assign,
assign_add and assign_sub convert their argument so to the Variable's dtype, then need
its exact shape: nothing broadcasts. Expected values, dtypes and exception kinds are
TensorFlow 2.21's; the README's documented differences are named so.
"""

import numpy as np
import pytest
from helpers import assert_tensor_equal as _eq

import srcxform as tf

# ----- Python values: by kind -----


def test_an_empty_list_converts_to_any_dtype():
    _eq(tf.constant([[]], dtype=tf.int32), np.zeros((1, 0)), tf.int32)
    _eq(tf.constant([], dtype=tf.int32), np.zeros((0,)), tf.int32)
    _eq(tf.constant([[], []], dtype=tf.bool), np.zeros((2, 0)), tf.bool)
    _eq(tf.convert_to_tensor([[]], dtype=tf.int32), np.zeros((1, 0)), tf.int32)


def test_python_bools_convert_to_numbers():
    _eq(tf.constant(True, dtype=tf.float32), 1.0, tf.float32)
    _eq(tf.constant([True, False], dtype=tf.float32), [1.0, 0.0], tf.float32)
    _eq(tf.constant(True, dtype=tf.int32), 1, tf.int32)
    _eq(tf.convert_to_tensor(True, dtype=tf.float32), 1.0, tf.float32)
    _eq(tf.Variable(True, dtype=tf.float32).read_value(), 1.0, tf.float32)


def test_python_numbers_never_convert_to_a_narrower_kind():
    for value, dtype in ((1, tf.bool), (2.0, tf.int32), (1.5, tf.int32)):
        with pytest.raises(TypeError):  # TensorFlow: Cannot convert 2.0 to EagerTensor...
            tf.constant(value, dtype=dtype)
        with pytest.raises(TypeError):
            tf.convert_to_tensor(value, dtype=dtype)


# ----- NumPy values: as astype -----


def test_numpy_values_convert_as_numpy_casts_them():
    _eq(tf.convert_to_tensor(np.float32(2.0), dtype=tf.int64), 2, tf.int64)
    _eq(tf.convert_to_tensor(np.float32(2.5), dtype=tf.int64), 2, tf.int64)
    _eq(tf.constant(np.array([1.5, 2.0], np.float32), dtype=tf.int32), [1, 2], tf.int32)
    _eq(tf.constant(np.array([True]), dtype=tf.float32), [1.0], tf.float32)
    _eq(tf.convert_to_tensor(np.array([1, 0]), dtype=tf.bool), [True, False], tf.bool)
    _eq(tf.Variable(np.float32(2.5), dtype=tf.int64).read_value(), 2, tf.int64)


def test_a_tensor_keeps_its_dtype():
    with pytest.raises(TypeError):
        tf.constant(tf.constant(1.5), dtype=tf.int32)
    with pytest.raises(ValueError):
        tf.convert_to_tensor(tf.constant(1.5), dtype=tf.float64)


# ----- Variable updates: converted, then the exact shape -----


@pytest.mark.parametrize("update", ["assign", "assign_add", "assign_sub"])
@pytest.mark.parametrize("shapes", [((2,), ()), ((2,), (1,)), ((), (1,)), ((2,), (2, 1)),
                                    ((), (1, 1))])
def test_an_update_of_another_shape_raises_and_changes_nothing(update, shapes):
    variable_shape, value_shape = shapes
    v = tf.Variable(np.ones(variable_shape, np.float32))
    with pytest.raises(ValueError, match="shape"):
        getattr(v, update)(np.ones(value_shape, np.float32))
    _eq(v.read_value(), np.ones(variable_shape), tf.float32)


def test_assign_add_of_a_python_scalar_to_a_vector_raises_as_tensorflow():
    v = tf.Variable([1.0, 2.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
        v.assign_add(1.0)
    with pytest.raises(ValueError, match="shape"):
        v.assign_sub(1.0)
    _eq(v.read_value(), [1.0, 2.0], tf.float32)


def test_a_float_variable_refuses_an_integer_tensor_and_takes_python_and_numpy_ints():
    v = tf.Variable([1.0, 2.0])
    for update in (v.assign, v.assign_add, v.assign_sub):
        with pytest.raises(TypeError, match="int32"):
            update(tf.constant([1, 2]))
    _eq(v.read_value(), [1.0, 2.0], tf.float32)
    v.assign_add([1, 2])
    _eq(v.read_value(), [2.0, 4.0], tf.float32)
    v.assign_add(np.array([1, 2]))
    _eq(v.read_value(), [3.0, 6.0], tf.float32)
    v.assign(np.array([1, 2]))
    _eq(v.read_value(), [1.0, 2.0], tf.float32)


def test_an_integer_variable_truncates_numpy_floats_and_refuses_python_floats():
    i = tf.Variable(3)
    i.assign_sub(np.float32(0.5))  # np.float32(0.5) converts to 0, as in TensorFlow
    _eq(i.read_value(), 3, tf.int32)
    i.assign_sub(np.float32(1.5))
    _eq(i.read_value(), 2, tf.int32)
    i.assign(np.float64(2.7))
    _eq(i.read_value(), 2, tf.int32)
    i.assign(True)
    _eq(i.read_value(), 1, tf.int32)
    for value in (0.5, 2.0, tf.constant(2.7)):
        with pytest.raises(TypeError):
            i.assign_add(value)
    _eq(i.read_value(), 1, tf.int32)


def test_a_float_tensor_of_another_float_dtype_is_converted_as_documented():
    """README: 'A float tensor assigned to a Variable of another float dtype is converted';
    TensorFlow raises."""
    v = tf.Variable([1.0, 2.0])
    v.assign_add(tf.constant([1.0, 2.0], tf.float64))
    _eq(v.read_value(), [2.0, 4.0], tf.float32)


def test_compiled_updates_check_shapes_as_eager_ones():
    v = tf.Variable([1.0, 2.0])
    w = tf.Variable(np.zeros(2))

    @tf.differentiable
    def bad_step(x):
        v.assign_add(tf.reduce_sum(x))
        return tf.reduce_sum(v)

    @tf.differentiable
    def good_step(x):
        w.assign_add(x * 2.0)
        w.assign_sub(np.ones(2))
        return tf.reduce_sum(w)

    with pytest.raises(ValueError, match="shape"):
        bad_step(np.ones(3))
    _eq(v.read_value(), [1.0, 2.0], tf.float32)
    assert good_step(np.array([1.0, 2.0])).numpy() == pytest.approx(4.0)
    _eq(w.read_value(), [1.0, 3.0], tf.float64)
