"""Nested lists and tuples holding tensors are packed as TensorFlow packs them (issue 30,
item 6): each level is `tf.stack` of its rows, Python numbers and arrays in it become
constants of the first tensor's dtype (or of `dtype=`), and the gradient flows through,
eagerly and compiled, in `convert_to_tensor`, `constant` and any op's arguments.

Expected values, dtypes and exception kinds are TensorFlow 2.21's for the same calls.
"""

import numpy as np
import pytest
from helpers import assert_tensor_equal as _eq

import srcxform as tf
from srcxform.testing import check_grads


def _gradient(f, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


def test_the_issue_reproducer_has_its_gradient():
    x = tf.Variable(0.5, dtype=tf.float64)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.convert_to_tensor([[1, 0], [0, tf.math.cos(x)]], dtype=tf.float64))
    _eq(tape.gradient(y, x), -np.sin(0.5), tf.float64)


def test_constant_packs_and_passes_a_tensor_on_as_tensorflow_does_eagerly():
    x = tf.constant(0.5, tf.float64)
    packed = _gradient(lambda x: tf.reduce_sum(tf.constant([[1, 0], [0, x * 3]], tf.float64)), x)
    _eq(packed, 3.0, tf.float64)
    _eq(_gradient(lambda x: tf.constant(x * 3), x), 3.0, tf.float64)  # TF: the tensor itself


def _rotation(theta):
    """GradBench's hand-tracking rotation about y, built as ADBench's objective builds it."""
    cty, sty = tf.math.cos(theta), tf.math.sin(theta)
    return tf.convert_to_tensor([[cty, 0, -sty], [0, 1, 0], [sty, 0, cty]], dtype=tf.float64)


def _rotated_loss(theta, points):
    return tf.reduce_sum(tf.square(tf.matmul(points, _rotation(theta)) - 1.0))


def test_a_rotation_matrix_of_tensors_differentiates_eager_compiled_and_numerically():
    theta = np.float64(0.3)
    points = np.arange(6.0).reshape(2, 3) / 5
    check_grads(_rotated_loss, (theta, points), order=2)
    compiled = tf.differentiable(_rotated_loss, wrt=0)
    eager = _gradient(lambda t: _rotated_loss(t, points), tf.constant(theta))
    np.testing.assert_allclose(compiled.grad(theta, points), eager.numpy(), rtol=1e-12)


def test_a_compiled_function_packs_the_issue_reproducer():
    @tf.differentiable
    def f(t):
        return tf.reduce_sum(tf.convert_to_tensor([[1, 0], [0, tf.math.cos(t)]],
                                                  dtype=tf.float64))

    value, grad = f.value_and_grad(np.float64(0.5))
    assert value == pytest.approx(1 + np.cos(0.5))
    assert grad == pytest.approx(-np.sin(0.5))


def test_the_first_tensor_gives_the_dtype_and_numbers_become_constants_of_it():
    x = tf.constant(2.0)
    _eq(tf.convert_to_tensor([x, 1]), [2.0, 1.0], tf.float32)
    _eq(tf.convert_to_tensor([1.5, x, True]), [1.5, 2.0, 1.0], tf.float32)
    _eq(tf.convert_to_tensor([tf.constant([1.0, 2.0]), [3, 4]]), [[1, 2], [3, 4]], tf.float32)
    _eq(tf.convert_to_tensor(([x], (1.0,))), [[2.0], [1.0]], tf.float32)
    _eq(tf.convert_to_tensor([tf.constant([1.0, 2.0]), np.array([1.0, 2.0])]),
        [[1, 2], [1, 2]], tf.float32)
    with pytest.raises(TypeError):  # TensorFlow: Cannot convert 1.5 to EagerTensor of int32
        tf.convert_to_tensor([tf.constant(1), 1.5])


def test_an_explicit_dtype_casts_the_tensors_in_the_list():
    x = tf.constant(2.0)
    packed = tf.convert_to_tensor([x, 1.5], dtype=tf.float64)
    _eq(packed, [2.0, 1.5], tf.float64)
    _eq(tf.convert_to_tensor([tf.constant(True)], dtype=tf.float32), [1.0], tf.float32)
    _eq(_gradient(lambda x: tf.reduce_sum(tf.convert_to_tensor([x, 1.5], tf.float64)), x),
        1.0, tf.float32)  # a gradient has its source's dtype


def test_rows_of_different_shapes_raise():
    with pytest.raises(ValueError):  # TensorFlow's InvalidArgumentError from Pack
        tf.convert_to_tensor([tf.constant([1.0, 2.0]), tf.constant(1.0)])


def test_op_arguments_and_variables_pack_too():
    x = tf.constant(2.0)
    _eq(_gradient(lambda x: tf.reduce_sum(tf.add([x, 1.0], 1.0)), x), 1.0)
    _eq(_gradient(lambda x: tf.reduce_sum([x, x * x]), x), 5.0)
    _eq(_gradient(lambda x: tf.reduce_sum(x + [x, 1.0]), x), 3.0)
    _eq(_gradient(lambda x: tf.matmul([[x, 1.0]], [[1.0], [x]])[0, 0], x), 2.0)
    _eq(_gradient(lambda x: tf.reduce_sum(tf.concat([[x, 1.0], [1.0, x]], 0)), x), 2.0)
    v = tf.Variable([x, 1.0])
    _eq(v.read_value(), [2.0, 1.0], tf.float32)


def test_compiled_op_arguments_pack_as_eager_ones():
    def f(x, y):
        pair = tf.stack([x * y, [y, 2.0]])  # a row that is a list holding a value
        return tf.reduce_sum(tf.exp(tf.add([y, 1.0], pair)))

    check_grads(f, (np.array([0.1, 0.2]), np.float64(0.3)))
