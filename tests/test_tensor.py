"""Tensor and Variable: the value surface of SPEC "Values" (operators, indexing, conversion,
printing, Variables, creation functions and dtype rules)."""

import copy
import pickle
import warnings

import numpy as np
import pytest
from helpers import assert_tensor_equal as _eq

import srcxform as tf

# ----- basic attributes -----


def test_attributes():
    t = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert t.shape == (2, 3)
    assert isinstance(t.shape, tuple)
    assert t.dtype == np.float32
    assert t.dtype is tf.float32 or t.dtype == tf.float32
    assert t.ndim == 2
    assert isinstance(t.numpy(), np.ndarray)
    np.testing.assert_array_equal(t.numpy(), [[1, 2, 3], [4, 5, 6]])


def test_public_dtypes_are_numpy_dtypes():
    assert tf.float16 == np.dtype(np.float16)
    assert tf.float32 == np.dtype(np.float32)
    assert tf.float64 == np.dtype(np.float64)
    assert tf.int32 == np.dtype(np.int32)
    assert tf.int64 == np.dtype(np.int64)
    assert tf.bool == np.dtype(np.bool_)
    assert all(isinstance(d, np.dtype) for d in
               (tf.float16, tf.float32, tf.float64, tf.int32, tf.int64, tf.bool))


def test_numpy_of_scalar_is_numpy_scalar():
    value = tf.constant(8.0).numpy()
    assert isinstance(value, np.float32)
    assert value == 8.0


def test_tensor_is_immutable_and_unhashable():
    t = tf.constant([1.0, 2.0])
    with pytest.raises(TypeError):
        t[0] = 5.0
    with pytest.raises(TypeError):
        hash(t)


# ----- operators -----


def test_arithmetic_operators():
    a = tf.constant([7.0, -7.0, 9.0])
    b = tf.constant([2.0, 2.0, 4.0])
    _eq(a + b, [9.0, -5.0, 13.0], tf.float32)
    _eq(a - b, [5.0, -9.0, 5.0], tf.float32)
    _eq(a * b, [14.0, -14.0, 36.0], tf.float32)
    _eq(a / b, [3.5, -3.5, 2.25], tf.float32)
    _eq(a // b, [3.0, -4.0, 2.0], tf.float32)
    _eq(a % b, [1.0, 1.0, 1.0], tf.float32)  # floor mod: the sign of the divisor
    _eq(b ** 2, [4.0, 4.0, 16.0], tf.float32)
    _eq(b ** b, [4.0, 4.0, 256.0], tf.float32)
    _eq(-a, [-7.0, 7.0, -9.0], tf.float32)
    _eq(abs(a), [7.0, 7.0, 9.0], tf.float32)
    _eq(+a, [7.0, -7.0, 9.0], tf.float32)


def test_reflected_operators_with_python_scalars():
    x = tf.constant([1.0, 2.0, 4.0])
    _eq(1 + x, [2.0, 3.0, 5.0], tf.float32)
    _eq(1 - x, [0.0, -1.0, -3.0], tf.float32)
    _eq(2 * x, [2.0, 4.0, 8.0], tf.float32)
    _eq(8 / x, [8.0, 4.0, 2.0], tf.float32)
    _eq(9 // x, [9.0, 4.0, 2.0], tf.float32)
    _eq(9 % x, [0.0, 1.0, 1.0], tf.float32)
    _eq(2 ** x, [2.0, 4.0, 16.0], tf.float32)


def test_reflected_operators_with_numpy_arrays():
    x = tf.constant([1.0, 2.0])
    out = np.array([10.0, 20.0], np.float32) + x
    assert isinstance(out, tf.Tensor)  # NumPy defers to the Tensor (__array_ufunc__)
    _eq(out, [11.0, 22.0], tf.float32)
    _eq(np.array([3.0, 3.0], np.float32) - x, [2.0, 1.0], tf.float32)


def test_integer_operators_stay_integer():
    a = tf.constant([7, -7])
    b = tf.constant([2, 2])
    _eq(a + b, [9, -5], tf.int32)
    _eq(a * b, [14, -14], tf.int32)
    _eq(a // b, [3, -4], tf.int32)
    _eq(a % b, [1, 1], tf.int32)
    _eq(a ** 2, [49, 49], tf.int32)
    _eq(-a, [-7, 7], tf.int32)
    _eq(abs(a), [7, 7], tf.int32)


def test_true_division_of_integers_is_float64():
    # TensorFlow's tf.math.divide / NumPy's true_divide of int32 gives float64.
    _eq(tf.constant([7, 1]) / tf.constant([2, 4]), [3.5, 0.25], tf.float64)


def test_matmul_operator():
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    b = tf.constant([[5.0, 6.0], [7.0, 8.0]])
    _eq(a @ b, [[19.0, 22.0], [43.0, 50.0]], tf.float32)
    _eq(np.array([[1.0, 0.0], [0.0, 2.0]], np.float32) @ a, [[1.0, 2.0], [6.0, 8.0]])
    batch = tf.ones((3, 2, 4)) @ tf.ones((4, 5))
    _eq(batch, np.full((3, 2, 5), 4.0), tf.float32)


def test_comparisons_are_elementwise_bool():
    a = tf.constant([1.0, 2.0, 3.0])
    b = tf.constant([3.0, 2.0, 1.0])
    _eq(a < b, [True, False, False], tf.bool)
    _eq(a <= b, [True, True, False], tf.bool)
    _eq(a > b, [False, False, True], tf.bool)
    _eq(a >= b, [False, True, True], tf.bool)
    _eq(a == b, [False, True, False], tf.bool)
    _eq(a != b, [True, False, True], tf.bool)
    _eq(a > 1.5, [False, True, True], tf.bool)
    _eq((a > 1.5) & (a < 2.5), [False, True, False], tf.bool)
    _eq((a < 1.5) | (a > 2.5), [True, False, True], tf.bool)
    _eq(~(a > 1.5), [True, False, False], tf.bool)


# ----- indexing, slicing, iteration -----


def test_indexing_and_slicing():
    x = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    _eq(x[1], [4.0, 5.0, 6.0], tf.float32)
    _eq(x[-1], [4.0, 5.0, 6.0])
    _eq(x[1][2], 6.0, tf.float32)
    _eq(x[1, 2], 6.0)
    _eq(x[1:], [[4.0, 5.0, 6.0]])
    _eq(x[:, 1:], [[2.0, 3.0], [5.0, 6.0]])
    _eq(x[:, ::2], [[1.0, 3.0], [4.0, 6.0]])
    _eq(x[::-1], [[4.0, 5.0, 6.0], [1.0, 2.0, 3.0]])
    _eq(x[:, None], [[[1.0, 2.0, 3.0]], [[4.0, 5.0, 6.0]]])
    assert x[:, None].shape == (2, 1, 3)
    assert x[None].shape == (1, 2, 3)
    _eq(x[..., 0], [1.0, 4.0])
    _eq(x[..., None], [[[1.0], [2.0], [3.0]], [[4.0], [5.0], [6.0]]])
    _eq(x[0, ...], [1.0, 2.0, 3.0])


def test_integer_tensor_index():
    x = tf.constant([10.0, 20.0, 30.0])
    _eq(x[tf.constant(2)], 30.0)
    _eq(x[np.int64(1)], 20.0)


def test_integer_array_index_gathers():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    _eq(x[np.array([2, 0])], [[5.0, 6.0], [1.0, 2.0]])
    _eq(x[tf.constant([2, 0])], [[5.0, 6.0], [1.0, 2.0]])
    _eq(x[:, np.array([1])], [[2.0], [4.0], [6.0]])


def test_index_out_of_range():
    x = tf.constant([1.0, 2.0, 3.0])
    with pytest.raises(IndexError, match="out of bounds"):
        x[3]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0]


def test_iteration_over_first_axis():
    x = tf.constant([[1, 2], [3, 4], [5, 6]])
    rows = list(x)
    assert len(rows) == 3
    for row, expected in zip(rows, [[1, 2], [3, 4], [5, 6]]):
        _eq(row, expected, tf.int32)
    assert [float(v) for v in tf.constant([1.5, 2.5])] == [1.5, 2.5]


def test_len():
    assert len(tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])) == 3
    assert len(tf.zeros((0, 4))) == 0
    with pytest.raises(TypeError):
        len(tf.constant(1.0))
    with pytest.raises(TypeError):
        iter(tf.constant(1.0)).__next__()


# ----- conversion to Python and NumPy -----


def test_python_scalars_of_one_element():
    assert float(tf.constant(2.5)) == 2.5
    assert isinstance(float(tf.constant(2.5)), float)
    with pytest.raises(TypeError, match="only a scalar"):  # NumPy 2 and TensorFlow raise
        float(tf.constant([[2.5]]))
    assert int(tf.constant(7)) == 7
    assert int(tf.constant(7.9)) == 7
    assert isinstance(int(tf.constant(7)), int)
    assert bool(tf.constant(1.0)) is True
    assert bool(tf.constant(0.0)) is False
    assert bool(tf.constant([True])) is True
    assert [10, 20, 30][tf.constant(1)] == 20  # __index__ of an integer tensor


def test_python_scalars_of_many_elements_raise():
    # As NumPy and TensorFlow: float()/int() raise TypeError, bool() ValueError.
    t = tf.constant([1.0, 2.0])
    with pytest.raises(TypeError, match=r"float\(\).*\(2,\)"):
        float(t)
    with pytest.raises(TypeError, match=r"int\(\).*\(2,\)"):
        int(t)
    with pytest.raises(ValueError, match=r"bool\(\).*\(2,\)"):
        bool(t)
    with pytest.raises(TypeError):
        float(tf.zeros((0,)))


def test_index_of_float_tensor_raises():
    with pytest.raises(TypeError, match="integer"):
        [1, 2][tf.constant(1.0)]


def test_np_asarray():
    t = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    a = np.asarray(t)
    assert type(a) is np.ndarray
    assert a.dtype == np.float32
    np.testing.assert_array_equal(a, [[1.0, 2.0], [3.0, 4.0]])
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert np.array(tf.constant(3)).dtype == np.int32
    v = tf.Variable([1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(v), [1.0, 2.0])


# ----- printing -----


def test_repr_and_str_scalar():
    t = tf.constant(8.0)
    assert repr(t) == "<srcxform.Tensor: shape=(), dtype=float32, numpy=8.0>"
    assert str(t) == "srcxform.Tensor(8.0, shape=(), dtype=float32)"
    assert f"{t}" == "8.0"  # TensorFlow formats the NumPy value
    assert repr(tf.constant(3)) == "<srcxform.Tensor: shape=(), dtype=int32, numpy=3>"
    assert str(tf.constant(True)) == "srcxform.Tensor(True, shape=(), dtype=bool)"


def test_repr_and_str_vector():
    t = tf.constant([1.0, 2.0])
    assert repr(t) == ("<srcxform.Tensor: shape=(2,), dtype=float32, "
                       "numpy=array([1., 2.], dtype=float32)>")
    assert str(t) == "srcxform.Tensor([1. 2.], shape=(2,), dtype=float32)"


def test_repr_and_str_matrix_break_before_value():
    t = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    assert repr(t) == ("<srcxform.Tensor: shape=(2, 2), dtype=float32, numpy=\n"
                       "array([[1., 2.],\n       [3., 4.]], dtype=float32)>")
    assert str(t) == "srcxform.Tensor(\n[[1. 2.]\n [3. 4.]], shape=(2, 2), dtype=float32)"


def test_format_spec_applies_to_value():
    assert f"{tf.constant(9.0):.2f}" == "9.00"
    assert f"{tf.constant(3):03d}" == "003"
    assert f"{tf.constant(2.5):>6}" == "   2.5"
    assert str.format("{:.1f}", tf.constant(0.25)) == "0.2"
    assert f"{tf.Variable(9.0):.2f}" == "9.00"


# ----- Variable -----


def test_variable_read_api():
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    assert v.shape == (2, 2)
    assert v.dtype == tf.float32
    assert v.ndim == 2
    np.testing.assert_array_equal(v.numpy(), [[1.0, 2.0], [3.0, 4.0]])
    _eq(v + 1.0, [[2.0, 3.0], [4.0, 5.0]], tf.float32)
    _eq(v[1], [3.0, 4.0])
    _eq(v @ v, [[7.0, 10.0], [15.0, 22.0]])
    assert len(v) == 2
    assert float(tf.Variable(2.5)) == 2.5
    assert int(tf.Variable(3)) == 3
    assert bool(tf.Variable(True)) is True


def test_variable_defaults_and_options():
    v = tf.Variable(1.0)
    assert v.trainable is True
    assert isinstance(v.name, str) and v.name
    assert v.dtype == tf.float32
    w = tf.Variable(2, trainable=False, name="step", dtype=tf.float64)
    assert w.trainable is False
    assert w.name == "step:0"  # TensorFlow's name for the variable's output
    assert w.dtype == tf.float64
    assert w.numpy() == 2.0
    assert tf.Variable(lambda: tf.ones((2,))).shape == (2,)  # a callable initial value
    assert tf.Variable(np.arange(3)).dtype == np.arange(3).dtype
    assert "step" in repr(w) and "float64" in repr(w)


def test_variable_assign():
    v = tf.Variable([1.0, 2.0])
    out = v.assign([5.0, 6.0])
    np.testing.assert_array_equal(v.numpy(), [5.0, 6.0])
    np.testing.assert_array_equal(np.asarray(out), [5.0, 6.0])
    v.assign_add([1.0, 1.0])
    np.testing.assert_array_equal(v.numpy(), [6.0, 7.0])
    v.assign_sub(tf.constant([0.5, 3.0]))
    np.testing.assert_array_equal(v.numpy(), [5.5, 4.0])
    assert v.dtype == tf.float32
    v.assign(np.array([1.0, 2.0], np.float64))  # keeps the Variable's dtype
    assert v.dtype == tf.float32
    with pytest.raises(ValueError, match=r"\(3,\).*\(2,\)"):
        v.assign([1.0, 2.0, 3.0])


def test_read_value_is_a_snapshot():
    v = tf.Variable(1.0)
    before = v.read_value()
    assert isinstance(before, tf.Tensor)
    v.assign(4.0)
    assert before.numpy() == 1.0
    assert v.read_value().numpy() == 4.0
    assert v.value().numpy() == 4.0


def test_variable_numpy_is_a_copy():
    v = tf.Variable([1.0, 2.0])
    a = v.numpy()
    a[0] = 100.0
    assert v.numpy()[0] == 1.0


def test_variable_initial_value_is_copied():
    init = np.array([1.0, 2.0])
    v = tf.Variable(init)
    init[0] = 100.0
    assert v.numpy()[0] == 1.0


@pytest.mark.parametrize("copied", [lambda v: pickle.loads(pickle.dumps(v)), copy.deepcopy],
                         ids=["pickle", "deepcopy"])
def test_a_copied_variable_has_its_value_and_a_lock_of_its_own(copied):
    v = tf.Variable(np.arange(3.0), name="w")
    c = copied(v)
    assert c.name == "w:0" and c._lock is not v._lock
    c.assign_add(np.ones(3))
    np.testing.assert_array_equal(c.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(v.numpy(), [0.0, 1.0, 2.0])


@pytest.mark.parametrize("copied", [lambda v: pickle.loads(pickle.dumps(v)), copy.deepcopy],
                         ids=["pickle", "deepcopy"])
def test_a_copied_variable_is_another_variable_to_traces_and_tapes(copied):
    """A copy kept the original's id, which traces and tapes know a Variable by: read,
    updated and differentiated as the original, eagerly and compiled (a target network
    made by deepcopy, helper 74). A shallow copy is the Variable itself, as TensorFlow's."""
    v1 = tf.Variable(np.array([1.0, 2.0]))
    v2 = copied(v1)
    v2.assign([10.0, 20.0])
    assert copy.copy(v1) is v1

    def step(x):
        v1.assign_add(x)
        v2.assign(v2 * 2.0)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(v1 * 3.0 + v2 * v2)
        return tape.gradient(loss, [v1, v2])

    for run in (step, tf.function(step)):
        grads = run(tf.ones(2))
        np.testing.assert_array_equal(grads[0].numpy(), [3.0, 3.0])
        np.testing.assert_array_equal(grads[1].numpy(), 2 * v2.numpy())
    np.testing.assert_array_equal(v1.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(v2.numpy(), [40.0, 80.0])


def _summed_tensors(x, params):
    leaves = [v for v in (x, params["a"], params["b"]) if isinstance(v, tf.Tensor)]
    return tf.add_n([tf.reduce_sum(v) for v in leaves])


def test_a_traced_value_is_a_tensor_to_isinstance():
    """As TensorFlow's symbolic tensors are tf.Tensor: a user's filter by isinstance kept
    the tensors eagerly and dropped every traced one compiled (0.0, and a zero gradient,
    helper 74). Variables are not Tensors, as in TensorFlow."""
    x, params = np.arange(3.0), {"a": np.ones(2), "b": 3}
    f = tf.differentiable(_summed_tensors)
    eager = _summed_tensors(tf.constant(x), {"a": tf.constant(params["a"]), "b": 3})
    assert float(f(x, params)) == float(eager) == 5.0
    np.testing.assert_array_equal(f.grad(x, params), np.ones(3))
    assert float(tf.function(_summed_tensors)(tf.constant(x), params)) == 5.0
    assert not isinstance(tf.Variable(1.0), tf.Tensor) and not isinstance(x, tf.Tensor)


# ----- creation -----


def test_constant():
    _eq(tf.constant(2.0), 2.0, tf.float32)
    _eq(tf.constant([1, 2]), [1, 2], tf.int32)
    _eq(tf.constant(True), True, tf.bool)
    _eq(tf.constant(2, dtype=tf.float64), 2.0, tf.float64)
    _eq(tf.constant(1.5, shape=(2, 3)), np.full((2, 3), 1.5), tf.float32)
    _eq(tf.constant([[1.0, 2.0]], dtype="float16"), [[1.0, 2.0]], tf.float16)


def test_convert_to_tensor():
    t = tf.constant([1.0])
    assert tf.convert_to_tensor(t) is t
    _eq(tf.convert_to_tensor([1.0, 2.0]), [1.0, 2.0], tf.float32)
    _eq(tf.convert_to_tensor(np.array([1.0, 2.0])), [1.0, 2.0], tf.float64)
    _eq(tf.convert_to_tensor(3, dtype=tf.float32), 3.0, tf.float32)
    v = tf.Variable([1.0, 2.0])
    converted = tf.convert_to_tensor(v)
    assert isinstance(converted, tf.Tensor)
    _eq(converted, [1.0, 2.0], tf.float32)


def test_ones_zeros_fill():
    _eq(tf.ones((2, 3)), np.ones((2, 3)), tf.float32)
    _eq(tf.zeros((2,)), [0.0, 0.0], tf.float32)
    _eq(tf.zeros([2, 1], dtype=tf.int32), [[0], [0]], tf.int32)
    _eq(tf.ones(3, tf.float64), [1.0, 1.0, 1.0], tf.float64)
    _eq(tf.ones(()), 1.0)
    _eq(tf.ones(tf.constant([2, 2])), np.ones((2, 2)))
    _eq(tf.fill((2, 2), 3.0), [[3.0, 3.0], [3.0, 3.0]], tf.float32)
    _eq(tf.fill([3], 7), [7, 7, 7], tf.int32)


def test_ones_like_zeros_like():
    x = tf.constant([[1, 2, 3]])
    _eq(tf.ones_like(x), [[1, 1, 1]], tf.int32)
    _eq(tf.zeros_like(x), [[0, 0, 0]], tf.int32)
    _eq(tf.zeros_like(x, dtype=tf.float32), [[0.0, 0.0, 0.0]], tf.float32)
    _eq(tf.ones_like(tf.constant(np.float64(2.0))), 1.0, tf.float64)
    _eq(tf.ones_like(np.zeros((2,), np.float32)), [1.0, 1.0], tf.float32)


def test_range():
    _eq(tf.range(5), [0, 1, 2, 3, 4], tf.int32)
    _eq(tf.range(2, 8, 2), [2, 4, 6], tf.int32)
    _eq(tf.range(1.0, 2.0, 0.25), [1.0, 1.25, 1.5, 1.75], tf.float32)
    _eq(tf.range(3, dtype=tf.float64), [0.0, 1.0, 2.0], tf.float64)
    _eq(tf.range(5, 0, -2), [5, 3, 1], tf.int32)


def test_linspace():
    _eq(tf.linspace(0.0, 1.0, 5), [0.0, 0.25, 0.5, 0.75, 1.0], tf.float32)
    _eq(tf.linspace(np.float64(-1.0), np.float64(1.0), 3), [-1.0, 0.0, 1.0], tf.float64)


def test_eye():
    _eq(tf.eye(2), [[1.0, 0.0], [0.0, 1.0]], tf.float32)
    _eq(tf.eye(2, 3, dtype=tf.int32), [[1, 0, 0], [0, 1, 0]], tf.int32)
    assert tf.eye(2, batch_shape=[3]).shape == (3, 2, 2)


def test_cast():
    x = tf.constant([1.7, -1.7, 2.5])
    _eq(tf.cast(x, tf.int32), [1, -1, 2], tf.int32)  # truncation toward zero, as TensorFlow
    _eq(tf.cast(x, tf.float64), np.array([1.7, -1.7, 2.5], np.float32).astype(np.float64),
        tf.float64)
    _eq(tf.cast(tf.constant([0, 2]), tf.bool), [False, True], tf.bool)
    _eq(tf.cast(tf.constant([True, False]), "float32"), [1.0, 0.0], tf.float32)


# ----- dtype rules -----


def test_python_float_is_float32_and_int_is_int32():
    assert tf.constant(1.0).dtype == tf.float32
    assert tf.constant([1.0, 2.0]).dtype == tf.float32
    assert tf.constant(1).dtype == tf.int32
    assert tf.constant([[1, 2]]).dtype == tf.int32
    assert tf.Variable(1.0).dtype == tf.float32
    assert tf.Variable(1).dtype == tf.int32


def test_numpy_values_keep_their_dtype():
    assert tf.constant(np.float64(2.0)).dtype == tf.float64
    assert tf.constant(np.array([1.0], np.float64)).dtype == tf.float64
    assert tf.constant(np.array([1], np.int64)).dtype == tf.int64
    assert tf.constant(np.float16(1.0)).dtype == tf.float16
    assert tf.Variable(np.zeros(2)).dtype == tf.float64


def test_python_scalar_takes_the_other_operands_dtype():
    x64 = tf.constant(np.array([1.0, 2.0]))
    assert (x64 + 1.0).dtype == tf.float64
    assert (2.0 * x64).dtype == tf.float64
    assert (x64 ** 2).dtype == tf.float64
    x16 = tf.constant([1.0], dtype=tf.float16)
    assert (x16 * 3.0).dtype == tf.float16
    i64 = tf.constant(np.array([1, 2], np.int64))
    assert (i64 + 1).dtype == tf.int64
    i32 = tf.constant([1, 2])
    assert (i32 * 3).dtype == tf.int32
    f32 = tf.constant([1.0, 2.0])
    assert (f32 + 1).dtype == tf.float32  # a Python int beside a float32 tensor
    assert tf.maximum(f32, 0).dtype == tf.float32


def test_float_dtypes_promote_as_numpy():
    f32 = tf.constant([1.0, 2.0])
    f64 = tf.constant(np.array([0.5, 0.25]))
    _eq(f32 + f64, [1.5, 2.25], tf.float64)
    _eq(f64 * f32, [0.5, 0.5], tf.float64)
    assert (tf.constant([1.0], dtype=tf.float16) + f32).dtype == tf.float32


def test_numpy_scalar_operand_is_not_weak():
    # NumPy scalars keep their dtype, so they promote like arrays (NEP 50).
    f32 = tf.constant([1.0, 2.0])
    assert (f32 * np.float64(2.0)).dtype == tf.float64
    assert (f32 * np.float32(2.0)).dtype == tf.float32


def test_gradient_has_its_sources_dtype():
    x64 = tf.constant(np.float64(2.0))
    x32 = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch([x64, x32])
        y = x64 * x32
    assert y.dtype == tf.float64
    g64, g32 = tape.gradient(y, [x64, x32])
    assert g64.dtype == tf.float64 and g64.numpy() == 3.0
    assert g32.dtype == tf.float32 and g32.numpy() == 2.0

    v = tf.Variable(np.float64(1.5))
    with tf.GradientTape() as tape:
        y = tf.cast(v, tf.float32) * 2.0
    g = tape.gradient(y, v)
    assert g.dtype == tf.float64 and g.numpy() == 2.0


def test_a_nan_converts_without_numpys_all_nan_warning():
    """Found while testing vmap: tf.constant(float('nan')) warned 'All-NaN axis
    encountered' (an error under -W error), from the check for ints past int64."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(tf.constant(float("nan")).numpy())
        assert tf.constant([[float("nan")], [2.0**64]]).dtype == tf.float32
