"""Bad input (SPEC "Bad input"): clear exceptions that name the op, the shapes and dtypes
and the user's line; NaN and Inf propagate; empty arrays give empty gradients."""

import re
import warnings

import numpy as np
import pytest

import srcxform as tf

HERE = "test_errors.py:"


def _raises(kind, fn):
    with pytest.raises(kind) as info:
        fn()
    return str(info.value)


# ----- shape mismatches -----


def test_shape_error_is_a_value_error():
    assert issubclass(tf.ShapeError, ValueError)
    assert issubclass(tf.ShapeError, tf.SrcxformError)


def test_broadcast_mismatch_names_op_shapes_dtypes_and_line():
    a = tf.constant([1.0, 2.0, 3.0])
    b = tf.constant(np.array([1.0, 2.0]))
    with pytest.raises(tf.ShapeError) as info:
        a + b  # the line the message must quote
    message = str(info.value)
    assert "add" in message
    assert "f32[3]" in message and "f64[2]" in message
    assert "do not broadcast" in message
    assert re.search(r"test_errors\.py:\d+: a \+ b", message), message


def test_shape_error_caught_as_value_error():
    with pytest.raises(ValueError, match="multiply"):
        tf.multiply(tf.ones((2, 3)), tf.ones((3, 2)))


def test_matmul_inner_dimension_mismatch():
    message = _raises(tf.ShapeError, lambda: tf.matmul(tf.ones((2, 3)), tf.ones((2, 3))))
    assert "matmul(f32[2,3], f32[2,3])" in message
    assert "3 and 2" in message
    assert HERE in message


def test_matmul_operator_mismatch_names_matmul():
    message = _raises(tf.ShapeError, lambda: tf.ones((4,)) @ tf.ones((3, 2)))
    assert "matmul" in message and "f32[" in message and HERE in message


def test_matmul_of_scalars():
    message = _raises(ValueError, lambda: tf.matmul(tf.constant(2.0), tf.ones((2, 2))))
    assert "matmul" in message and "f32[]" in message and "f32[2,2]" in message


def test_reshape_mismatch():
    message = _raises(tf.ShapeError, lambda: tf.reshape(tf.ones((3,)), (2, 2)))
    assert "reshape(f32[3])" in message and "(2, 2)" in message and HERE in message


def test_reshape_with_inferred_dim_mismatch():
    message = _raises(tf.ShapeError, lambda: tf.reshape(tf.ones((2, 3)), (4, -1)))
    assert "reshape" in message and "f32[2,3]" in message and HERE in message


def test_concat_and_stack_mismatch():
    message = _raises(tf.ShapeError, lambda: tf.concat([tf.ones((2, 3)), tf.ones((3, 2))], 0))
    assert "concat(f32[2,3], f32[3,2])" in message and HERE in message
    message = _raises(tf.ShapeError, lambda: tf.stack([tf.ones((3,)), tf.ones((2,))]))
    assert "concat" in message and HERE in message


def test_broadcast_to_mismatch():
    message = _raises(tf.ShapeError, lambda: tf.broadcast_to(tf.ones((3,)), (2, 2)))
    assert "broadcast_to(f32[3])" in message and HERE in message


def test_where_mismatch():
    x = tf.constant([1.0, 2.0, 3.0])
    message = _raises(tf.ShapeError, lambda: tf.where(x > 1.0, x, tf.ones((2,))))
    assert "where(bool[3], f32[3], f32[2])" in message and HERE in message


def test_squeeze_of_non_unit_axis():
    message = _raises(tf.ShapeError, lambda: tf.squeeze(tf.ones((2, 3)), axis=0))
    assert "squeeze" in message and "f32[2,3]" in message and HERE in message


def test_tile_with_wrong_number_of_multiples():
    message = _raises(tf.ShapeError, lambda: tf.tile(tf.ones((2, 3)), [2]))
    assert "tile" in message and HERE in message


def test_reduction_axis_out_of_range():
    message = _raises(tf.ShapeError, lambda: tf.reduce_sum(tf.ones((3,)), axis=3))
    assert "reduce_sum" in message and "axis 3" in message and HERE in message


def test_variable_assign_wrong_shape():
    v = tf.Variable([1.0, 2.0], name="w")
    message = _raises(ValueError, lambda: v.assign([1.0, 2.0, 3.0]))
    assert "assign" in message and "(3,)" in message and "(2,)" in message and "w" in message


def test_shape_error_inside_a_tape():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(tf.ShapeError, match="subtract"):
            x - tf.ones((3,))


def test_output_gradients_of_wrong_shape():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(ValueError):
        tape.gradient(y, x, output_gradients=tf.ones((3,)))


# ----- wrong argument types and counts -----


def test_string_operand_is_a_type_error():
    x = tf.constant([1.0, 2.0])
    message = _raises(TypeError, lambda: x + "a")
    assert "add" in message and "str" in message
    assert "multiply" in _raises(TypeError, lambda: x * None)
    assert "dict" in _raises(TypeError, lambda: tf.subtract(x, {}))


def test_string_values_are_not_tensors():
    with pytest.raises(TypeError, match="str"):
        tf.constant("abc")
    with pytest.raises(TypeError, match="dtype"):
        tf.exp(np.array(["a", "b"]))


def test_ragged_list_is_rejected():
    with pytest.raises((TypeError, ValueError)):
        tf.constant([[1.0], [2.0, 3.0]])
    with pytest.raises(TypeError, match="add"):
        tf.constant([1.0]) + [[1.0], [2.0, 3.0]]


def test_wrong_argument_counts():
    with pytest.raises(TypeError):
        tf.exp()
    with pytest.raises(TypeError):
        tf.add(tf.constant(1.0))
    with pytest.raises(TypeError):
        tf.reduce_sum(tf.constant([1.0]), 0, False, None, "extra")


def test_exp_of_int_tells_to_cast():
    message = _raises(TypeError, lambda: tf.exp(tf.constant([1, 2])))
    assert "exp(i32[2])" in message
    assert "int32" in message
    assert "cast" in message
    assert HERE in message


def test_float_only_ops_reject_ints():
    for op in (tf.log, tf.sqrt, tf.sin, tf.tanh, tf.sigmoid, tf.nn.softplus):
        with pytest.raises(TypeError, match="cast"):
            op(tf.constant(4))


def test_reduce_of_bool_tells_to_cast():
    with pytest.raises(TypeError, match="cast"):
        tf.reduce_sum(tf.constant([True, False]))


def test_where_condition_must_be_bool():
    x = tf.constant([1.0, 2.0])
    with pytest.raises(TypeError, match="bool"):
        tf.where(x, x, x)


def test_where_needs_x_and_y():
    with pytest.raises(TypeError, match="where"):
        tf.where(tf.constant([True]))


def test_shape_argument_must_be_integers():
    with pytest.raises(TypeError, match="ones"):
        tf.ones(2.5)
    with pytest.raises(TypeError, match="zeros"):
        tf.zeros("abc")
    with pytest.raises(TypeError, match="fill"):
        tf.fill([1.5], 1.0)


def test_boolean_mask_of_another_shape_is_rejected():
    # x[mask] is tf.boolean_mask (eager only; test_tf_dtypes_and_errors): the mask must fit x.
    x = tf.constant([1.0, 2.0])
    with pytest.raises(tf.ShapeError, match="does not match"):
        x[tf.constant([True, False, True])]


def test_gradient_source_must_be_a_tensor():
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(TypeError, match="sources"):
        tape.gradient(y, [x, "x"])


def test_gradient_target_must_be_a_tensor():
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
    with pytest.raises(TypeError, match="gradient"):
        tape.gradient("y", x)


def test_custom_gradient_wrong_number_of_gradients():
    @tf.custom_gradient
    def f(a, b):
        return a * b, lambda dy: dy  # one gradient for two inputs

    a, b = tf.constant(1.0), tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = f(a, b)
    with pytest.raises((TypeError, ValueError), match="2 inputs"):
        tape.gradient(y, [a, b])


# ----- NumPy functions with no srcxform op -----


def test_numpy_function_without_op_names_it():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    message = _raises(TypeError, lambda: np.linalg.lstsq(x, x))
    assert "lstsq" in message
    message = _raises(TypeError, lambda: np.nancumsum(x))
    assert "numpy.nancumsum" in message
    assert "np.asarray" in message  # says what to do instead


def test_numpy_ufunc_method_without_op_names_it():
    x = tf.constant([1.0, 2.0])
    message = _raises(TypeError, lambda: np.add.accumulate(x))
    assert "add.accumulate" in message


def test_numpy_asarray_is_the_escape_hatch():
    x = tf.constant([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(np.cumsum(np.asarray(x)), [1.0, 3.0, 6.0])


# ----- non-float sources -----


def test_watching_an_int_tensor_warns_and_gives_none():
    i = tf.constant([1, 2])
    with tf.GradientTape() as tape:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tape.watch(i)
        y = tf.cast(i, tf.float32) * 2.0
    assert len(caught) == 1
    assert "float" in str(caught[0].message) and "int32" in str(caught[0].message)
    assert caught[0].filename.endswith("test_errors.py")
    assert tape.gradient(y, i) is None


# ----- IEEE special values -----


def test_nan_and_inf_propagate_forward():
    x = tf.constant([np.nan, np.inf, -np.inf, 1.0])
    y = x * 2.0 + 1.0
    np.testing.assert_array_equal(y.numpy(), [np.nan, np.inf, -np.inf, 3.0])
    z = tf.constant([1.0, -1.0, 0.0]) / tf.constant(0.0)
    np.testing.assert_array_equal(z.numpy(), [np.inf, -np.inf, np.nan])
    np.testing.assert_array_equal(tf.math.log(tf.constant([0.0, -1.0])).numpy(),
                                  [-np.inf, np.nan])
    assert np.isnan(tf.reduce_sum(x).numpy())
    assert np.isnan(tf.reduce_max(tf.constant([1.0, np.nan])).numpy())


def test_nan_and_inf_propagate_in_gradients():
    x = tf.constant([0.0, 4.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        s = tf.sqrt(x)
        lg = tf.math.log(x)
    np.testing.assert_array_equal(tape.gradient(s, x).numpy(), [np.inf, 0.25])
    np.testing.assert_array_equal(tape.gradient(lg, x).numpy(), [np.inf, 0.25])
    x = tf.constant([np.nan, 1.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [np.nan, 2.0])


def test_no_floating_point_warnings_from_ieee_results():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tf.constant(1.0) / tf.constant(0.0)
        tf.math.log(tf.constant(0.0))
        tf.exp(tf.constant(1000.0))


# ----- empty arrays -----


def test_empty_arrays_give_empty_gradients():
    e = tf.zeros((0, 3))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(e)
        rows = tf.reduce_sum(e * e, axis=1)
        total = tf.reduce_sum(tf.exp(e))
        mean = tf.reduce_mean(e, axis=0)
    assert rows.shape == (0,)
    assert total.numpy() == 0.0
    for target in (rows, total, mean):
        g = tape.gradient(target, e)
        assert g.shape == (0, 3) and g.dtype == tf.float32


def test_empty_matmul_gradient():
    a = tf.zeros((2, 0))
    b = tf.ones((0, 3))
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = a @ b
    np.testing.assert_array_equal(y.numpy(), np.zeros((2, 3)))
    ga, gb = tape.gradient(y, [a, b])
    assert ga.shape == (2, 0) and gb.shape == (0, 3)


def test_empty_jacobian():
    e = tf.zeros((0,))
    with tf.GradientTape() as tape:
        tape.watch(e)
        y = e * 2.0
    assert tape.jacobian(y, e).shape == (0, 0)



@pytest.mark.parametrize("shape, perm", [((1, 3), [2, 1]), ((2,), [5]), ((2, 3), [0, -3])])
def test_transpose_refuses_a_perm_naming_an_axis_out_of_range(shape, perm):
    # perm was taken modulo the rank: [2, 1] of a (1, 3) matrix returned it unchanged
    # (helper 90); TensorFlow raises. Negative axes count from the end, as NumPy's.
    with pytest.raises(tf.ShapeError, match="names an axis out of range"):
        tf.transpose(tf.ones(shape), perm)
    assert tf.transpose(tf.ones((2, 3)), [-1, 0]).shape == (3, 2)


@pytest.mark.parametrize("perm", [[1.7, 0], [True, False]])
def test_transpose_refuses_a_perm_that_is_no_ints(perm):
    with pytest.raises(TypeError, match="transpose: an axis must be an int"):  # 1.7 was 1
        tf.transpose(tf.ones((2, 3)), perm)


def test_an_error_inside_numpys_own_python_names_the_users_line():
    # Helper 106: np.sum of a list of traced values named NumPy's fromnumeric.py line.
    @tf.differentiable
    def sums_a_list(x):
        return np.sum([x[0, 0], x[1, 1]])

    with pytest.raises(tf.errors.TracingError, match=r"test_errors\.py:\d+: return np\.sum"):
        sums_a_list(np.ones((2, 2)))


def test_a_compiled_runtime_check_names_the_users_line_as_eager():
    # An index out of range or an integer divisor of 0 found inside a kernel named no line
    # of the user's (and tf.slice's raised another kind than eager's): the kernel's error
    # is now the one the function raises run eagerly, warm calls too, and the Variables
    # keep what the function assigned before the failing op, as eagerly and in
    # TensorFlow's tf.function (helper 132).
    v = tf.Variable([0.0, 0.0, 0.0])

    @tf.differentiable
    def f(x, i, d):
        v.assign_add(x)
        picked = tf.gather(x, i)  # the line the message must quote
        return tf.reduce_sum(picked) + tf.cast(tf.reduce_sum(d // d), tf.float32)

    @tf.differentiable
    def g(x, begin):
        return tf.reduce_sum(tf.slice(x, begin, [3]))

    x, ok = np.ones(3, np.float32), np.array([1])
    for _ in range(2):  # the slow path, then the warm entry
        assert f(x, ok, np.array([2])).numpy() == 2.0
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            f(x, np.array([5]), np.array([2]))
        assert re.search(r"gather: index 5 .*\n  at .*test_errors\.py:\d+: picked = ",
                         str(info.value)), str(info.value)
        with pytest.raises(ZeroDivisionError, match=r"floordiv.*\n  at .*test_errors\.py"):
            f(x, ok, np.array([0]))
        assert g(np.arange(6.0), ok).numpy() == 6.0
        with pytest.raises(tf.ShapeError, match="slice: begin .4,. and size .3,. reach outside"):
            g(np.arange(6.0), np.array([4]))
    assert v.numpy().tolist() == [6.0, 6.0, 6.0]  # each of the six calls assigned first


def test_an_index_known_when_tracing_names_the_users_line():
    # Helper 130: the trace checks indices it knows (an argument array on a first call):
    # the error named no line.
    @tf.differentiable
    def g(x, i):
        return tf.gather(x, i) * 2.0  # the line the message must quote

    with pytest.raises(IndexError, match=r"index 5 is out of bounds.*\n  at .*test_errors"):
        g(np.ones(3), np.array([0, 5]))


def test_a_failed_call_keeps_other_threads_updates():
    # Helper 130: the eager rerun after a kernel's error copied the Variables' values
    # before taking their locks and put them back after, undoing other threads' updates.
    # Each failed call counts too: it assigns before the failing op, as eagerly.
    import concurrent.futures
    import sys

    count = tf.Variable(0, dtype=tf.int64)
    x = np.array([1.0, 2.0, 3.0])

    @tf.differentiable
    def f(x, i):
        count.assign_add(1)
        return tf.gather(x, i)

    f(x, np.array([0]))
    count.assign(0)

    def good():
        for _ in range(200):
            f(x, np.array([0]))

    def bad():
        for _ in range(40):
            with pytest.raises(IndexError):
                f(x, np.array([7]))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the threads interleave often
    try:
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            for job in [pool.submit(run) for run in (good, bad, good)]:
                job.result()
    finally:
        sys.setswitchinterval(interval)
    assert count.numpy() == 440
