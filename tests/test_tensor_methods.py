"""Tensor, Variable and Tracer methods: formatting, the dtype creation ops report and
store, copies at the NumPy boundary, NumPy's array methods, and the tracer's errors."""

import numpy as np
import pytest

import srcxform as tf

# ----- formatting: TensorFlow formats the NumPy value -----


def test_format_without_spec_is_the_numpy_value():
    assert f"{tf.constant(9.0)}" == "9.0"
    assert f"{tf.constant(3)}" == "3"
    assert f"{tf.constant(True)}" == "True"
    assert f"{tf.add(2.0, 3.0)}" == "5.0"  # a weak value formats at the dtype it reports
    assert f"{tf.Variable(3.0) * tf.Variable(3.0)}" == "9.0"
    # An array with no spec is str(array), as NumPy's own formatting of it.
    assert f"{tf.constant([[1.0, 2.0], [3.0, 4.0]])}" == "[[1. 2.]\n [3. 4.]]"


def test_format_spec_of_an_array_raises_numpys_type_error():
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{tf.constant([1.0, 2.0]):.2f}"


# ----- creation ops: the dtype reported is the dtype stored -----


@pytest.mark.parametrize("make, dtype", [
    (lambda: tf.fill((2, 3), 3.0), tf.float32),
    (lambda: tf.fill([2], 7), tf.int32),
    (lambda: tf.fill([2], True), tf.bool),
    (lambda: tf.fill([2], np.float64(0.5)), tf.float64),
    (lambda: tf.ones_like(tf.constant([1.0, 2.0])), tf.float32),
    (lambda: tf.zeros_like(tf.constant([1, 2])), tf.int32),
    (lambda: tf.range(3), tf.int32),
    (lambda: tf.range(0.0, 1.0, 0.5), tf.float32),
    (lambda: tf.linspace(0.0, 1.0, 3), tf.float32),
    (lambda: tf.eye(2), tf.float32),
    (lambda: tf.ones(2), tf.float32),
    (lambda: tf.constant([1.0, 2.0], shape=(2, 2)), tf.float32),
    (lambda: tf.constant(tf.add(2.0, 3.0)), tf.float32),
])
def test_creation_ops_store_the_dtype_they_report(make, dtype):
    t = make()
    assert t.dtype == dtype and t.numpy().dtype == dtype
    assert tf.Variable(t).dtype == dtype


def test_variable_of_a_weak_value_takes_its_reported_dtype():
    assert tf.Variable(tf.add(2.0, 3.0)).dtype == tf.float32
    assert tf.Variable(tf.fill((2, 3), 3.0)).dtype == tf.float32


# ----- copies at the NumPy boundary -----


def test_a_tape_sees_the_array_a_constant_was_made_from_not_its_later_changes():
    a = np.array([1.0, 2.0, 3.0])
    c = tf.constant(a)
    with tf.GradientTape() as tape:
        tape.watch(c)
        y = c * c
    a[:] = 10.0
    np.testing.assert_array_equal(tape.gradient(y, c).numpy(), [2.0, 4.0, 6.0])


@pytest.mark.parametrize("convert", [
    tf.constant, tf.convert_to_tensor, tf.Variable,
    lambda a: tf.constant(a, dtype=tf.float32), lambda a: tf.Variable(a, dtype=tf.float32),
])
def test_conversions_copy_a_numpy_array(convert):
    a = np.array([1.0, 2.0])
    t = convert(a)
    a[0] = 9.0
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])


def test_a_variable_made_from_a_tensor_keeps_its_value_when_assigned():
    t = tf.constant([1.0, 2.0])
    v = tf.Variable(t)
    v.assign([5.0, 6.0])
    v.assign_add([1.0, 1.0])
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(v.numpy(), [6.0, 7.0])


@pytest.mark.parametrize("make", [lambda: tf.constant([1.0, 2.0]),
                                  lambda: tf.Variable([1.0, 2.0])])
def test_numpy_returns_a_copy_and_asarray_a_readonly_view(make):
    t = make()
    array = t.numpy()
    array[0] = 9.0
    shared = np.asarray(t)
    assert not shared.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        shared[0] = 9.0
    copied = np.array(t)  # np.array copies: a writeable array of one's own
    copied[0] = 9.0
    assert np.asarray(t, dtype=np.float64).flags.writeable
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(t, dtype=np.float64, copy=False)


def test_asarray_of_a_weak_value_has_its_reported_dtype():
    assert np.asarray(tf.add(2.0, 3.0)).dtype == np.float32
    assert tf.add(2.0, 3.0).numpy().dtype == np.float32
