"""srcxform behaves as TensorFlow 2.x where the README documents no difference.

Each test is one reproducer; the expected value is TensorFlow's result for it.
"""

import numpy as np
import pytest
from helpers import assert_tensor_equal as _eq
from helpers import value_and_two_orders

import srcxform as tf
from srcxform.testing import check_grads

# ----- values -----


def test_python_ints_beyond_int32_become_int64():
    _eq(tf.constant(2**40), 1099511627776, tf.int64)
    _eq(tf.constant(2**31), 2147483648, tf.int64)
    _eq(tf.constant([1, 2**40]), [1, 1099511627776], tf.int64)
    v = tf.Variable(2**40)
    assert v.dtype == tf.int64 and v.numpy() == 2**40
    _eq(tf.constant([1, -2**31]), [1, -2**31], tf.int32)  # fits: int32 as before


def test_a_python_int_that_does_not_fit_the_dtype_raises():
    with pytest.raises(TypeError, match="2147483648 does not fit in int32"):
        tf.constant(2**31, dtype=tf.int32)
    with pytest.raises(TypeError, match="does not fit in int32"):
        tf.Variable(1).assign(2**40)


def test_gather_batch_dims():
    params = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    _eq(tf.gather(params, [[1], [0]], batch_dims=1), [[2.0], [3.0]])
    # Against per-element NumPy takes, with params axes before and after `axis`.
    x = np.arange(2 * 3 * 4 * 5.0).reshape(2, 3, 4, 5)
    idx = np.array([[0, 3, -1], [2, 2, 0]])
    expected = np.stack([np.take(x[i], idx[i], axis=1) for i in range(2)])
    _eq(tf.gather(x, idx, axis=2, batch_dims=1), expected, tf.float64)
    expected = np.stack([np.take(x[i], idx[i], axis=2) for i in range(2)])
    _eq(tf.gather(x, idx, axis=-1, batch_dims=-1), expected, tf.float64)


def test_gather_batch_dims_checks_each_index_against_its_own_slice():
    # Index 2 would be a valid row of the flattened batch; TensorFlow raises for it.
    with pytest.raises(IndexError, match="index 2 is out of bounds"):
        tf.gather(tf.constant([[1.0, 2.0], [3.0, 4.0]]), [[2], [0]], batch_dims=1)
    with pytest.raises(ValueError, match="batch_dims"):
        tf.gather(tf.constant([[1.0, 2.0]]), [[0]], axis=0, batch_dims=1)


def test_gather_batch_dims_gradient():
    idx = np.array([[1, 1, 0], [2, 0, 0]])
    check_grads(lambda p: tf.gather(p, idx, axis=1, batch_dims=1),
                [np.arange(6.0).reshape(2, 3)], compiled=False)


def test_linspace_of_integers_is_float64():
    _eq(tf.linspace(0, 1, 3), [0.0, 0.5, 1.0], tf.float64)
    _eq(tf.linspace(0.0, 1.0, 3), [0.0, 0.5, 1.0], tf.float32)


def test_and_or_xor_invert_are_bitwise_on_integers():
    a, b = tf.constant([6, 5]), tf.constant([3, 1])
    _eq(a & b, [2, 1], tf.int32)
    _eq(a | b, [7, 5], tf.int32)
    _eq(a ^ b, [5, 4], tf.int32)
    _eq(~a, [-7, -6], tf.int32)
    _eq(3 & a, [2, 1], tf.int32)


def test_and_or_xor_invert_stay_logical_on_bools():
    p, q = tf.constant([True, True, False]), tf.constant([True, False, False])
    _eq(p & q, [True, False, False], tf.bool)
    _eq(p | q, [True, True, False], tf.bool)
    _eq(p ^ q, [False, True, False], tf.bool)
    _eq(~p, [False, False, True], tf.bool)


def test_bitwise_operators_reject_floats():
    with pytest.raises(TypeError, match="bool or integer"):
        tf.constant([1.0]) & tf.constant([1.0])


def test_a_list_index_is_a_tuple_of_indices():
    x = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    _eq(x[[0, 1]], 2.0)
    _eq(x[[1]], [4.0, 5.0, 6.0])


def test_assigning_a_float_to_an_integer_variable_raises():
    v = tf.Variable([1, 2])
    with pytest.raises(TypeError, match="cannot convert a float value to int32"):
        v.assign([1.5, 2.5])
    _eq(v.read_value(), [1, 2], tf.int32)  # unchanged
    w = tf.Variable(1)
    with pytest.raises(TypeError, match="cannot convert a float value to int32"):
        w.assign_add(0.5)
    w.assign_add(2)
    _eq(w.read_value(), 3, tf.int32)


def test_converting_python_floats_to_ints_or_a_tensor_to_another_dtype_raises():
    with pytest.raises(TypeError, match="cannot convert a float value to int32"):
        tf.constant(1.5, dtype=tf.int32)
    # A NumPy value converts as NumPy casts it (tests/test_tf_conversions.py).
    _eq(tf.constant(np.array([1.5]), dtype=tf.int32), [1], tf.int32)
    with pytest.raises(TypeError, match="got a tensor of dtype float32"):
        tf.constant(tf.constant(1.0), dtype=tf.float64)
    with pytest.raises(ValueError, match="requested for a tensor of dtype float32"):
        tf.convert_to_tensor(tf.constant(1.0), dtype=tf.float64)
    # Integers convert to floats, and NumPy floats to other floats, as in TensorFlow.
    _eq(tf.constant(1, dtype=tf.float32), 1.0, tf.float32)
    _eq(tf.constant(np.array([0.5]), dtype=tf.float32), [0.5], tf.float32)


def test_integer_division_by_zero_raises():
    with pytest.raises(ZeroDivisionError, match="integer division by zero"):
        tf.constant([1, 0]) // 0
    with pytest.raises(ZeroDivisionError, match="integer division by zero"):
        tf.constant([1, 0]) % tf.constant([2, 0])
    _eq(tf.constant([1.0, -1.0]) // 0.0, [np.inf, -np.inf], tf.float32)
    with pytest.raises(ZeroDivisionError, match=r"zero\n  at test_tf_compat.py:\d+: "
                                                r"tf.constant\(\[3\]\) // 0"):
        tf.constant([3]) // 0  # the user's line, as shape and dtype errors name it


def test_clip_by_value_with_min_above_max_gives_min():
    _eq(tf.clip_by_value(tf.constant([0.0, 5.0]), 3.0, 1.0), [3.0, 3.0])


# ----- gradients -----


def _grad(f, x, upstream=None):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x, output_gradients=upstream)


def test_sqrt_gradient_is_zero_where_the_upstream_gradient_is():
    g = _grad(lambda x: tf.where(x > 0, tf.sqrt(x), 0.0), [1.0, 0.0, -1.0])
    _eq(g, [0.5, 0.0, 0.0])


def test_relu_gradient_passes_nan_and_inf_upstream():
    upstream = tf.constant([np.nan, np.nan, np.inf, np.inf, 2.0])
    g = _grad(tf.nn.relu, [1.0, -1.0, 1.0, -1.0, -1.0], upstream)
    _eq(g, [np.nan, np.nan, np.inf, np.nan, 0.0])


def test_pow_exponent_gradient_follows_tensorflow_at_nonpositive_bases():
    # grad * out * (log(x) where x > 0 else 0): NaN where out is NaN or inf, else 0.
    base = tf.constant([-1.0, 0.0, -2.0, 0.0, 2.0])
    g = _grad(lambda e: tf.pow(base, e), [0.5, -1.0, 2.0, 2.0, 1.0])
    _eq(g, np.float32([np.nan, np.nan, 0.0, 0.0, 2.0 * np.log(2.0)]))


def test_sign_gradient_and_second_derivatives_of_abs_and_relu_are_zeros():
    x = [1.0, -2.0, 0.5]
    _eq(_grad(tf.sign, x), [0.0, 0.0, 0.0])
    second = value_and_two_orders(tf.abs, x)[2]
    _eq(second * second, [0.0, 0.0, 0.0])
    _eq(value_and_two_orders(tf.nn.relu, x)[2], [0.0, 0.0, 0.0])


def test_batch_jacobian_of_an_unconnected_source_is_zeros():
    x, u = tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([[1.0], [2.0]])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, u])
        y = x * 2.0
        rounded = tf.floor(x) + tf.round(x)
    _eq(tape.batch_jacobian(y, u), np.zeros((2, 2, 1)), tf.float32)
    _eq(tape.batch_jacobian(rounded, x), np.zeros((2, 2, 2)), tf.float32)


def test_unconnected_zero_gradient_of_an_integer_variable_is_integer_zero():
    v, w = tf.Variable(1), tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = w * 3.0
    gv, gw = tape.gradient(y, [v, w], unconnected_gradients="zero")
    _eq(gv, 0, tf.int32)
    _eq(gw, 3.0, tf.float32)


def _changed_vjps(x, b):
    """sqrt behind a where, relu, pow's exponent, sign and a batch gather in one kernel."""
    rows = tf.gather(tf.reshape(x, (1, 3)), [[2, 0]], batch_dims=1)
    return tf.reduce_sum(tf.where(x > 0, tf.sqrt(x), 0.0) + tf.nn.relu(x) * x + b ** x
                         + tf.sign(x) * x) + tf.reduce_sum(rows * rows)


@pytest.mark.slow  # every changed VJP compiled
def test_changed_vjps_compiled_match_eager():
    x, b = np.array([1.0, 0.0, -1.0]), np.array([2.0, -2.0, 0.0])
    eager = [_grad_of(_changed_vjps, x, b, i) for i in range(2)]
    compiled = tf.differentiable(_changed_vjps, wrt=(0, 1)).grad(x, b)
    for want, got in zip(eager, compiled):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)  # NaN where NaN
    assert np.isnan(eager[0][2]) and eager[0][1] == 0.0  # pow's NaN, sqrt's masked 0


def _grad_of(f, x, b, i):
    args = [tf.constant(x), tf.constant(b)]
    with tf.GradientTape() as tape:
        tape.watch(args[i])
        y = f(*args)
    return tape.gradient(y, args[i]).numpy()


def test_changed_vjps_against_finite_differences():
    # Away from the kinks, tape and compiled gradients agree with central differences.
    check_grads(_changed_vjps, [np.array([1.5, 0.4, -1.2]), np.array([0.5, 1.5, 2.0])])


def test_second_order_through_relu_sign_and_abs():
    check_grads(lambda x: tf.reduce_sum(tf.nn.relu(x) * x + tf.sign(x) * x * x + tf.abs(x) ** 3),
                [np.array([1.5, 0.4, -1.2])], order=2, compiled=False)


# ----- found by the differential test (issue 18); TensorFlow 2.21's results -----


def test_a_source_that_is_also_a_target_gets_its_output_gradient():
    x0 = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        v1 = tf.reduce_mean(x0)  # x0 is not watched: nothing is recorded
    g = tape.gradient(v1, [x0, v1])
    assert g[0] is None
    _eq(g[1], 1.0, tf.float32)
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * 3.0
    gx, gy = tape.gradient([y, z], [x, y])  # y's own weight plus z's through it
    _eq(gx, [8.0, 16.0])
    _eq(gy, [4.0, 4.0])
    _eq(tape.gradient(y, y, output_gradients=tf.constant([5.0, 6.0])), [5.0, 6.0])
    # jacobian slices its target first: an unwatched target is unconnected even to itself.
    assert tape.jacobian(x0, x0) is None
    _eq(tape.jacobian(x, x), np.eye(2, dtype=np.float32))


def test_jacobian_of_a_variable_target_watches_it():
    v = tf.Variable([[1.0, 2.0]])
    with tf.GradientTape(persistent=True) as tape:
        pass
    _eq(tape.jacobian(v, v), np.eye(2, dtype=np.float32).reshape(1, 2, 1, 2))
    _eq(tape.batch_jacobian(v, v), np.eye(2, dtype=np.float32).reshape(1, 2, 2))
    assert tape.watched_variables() == (v,)
    with tf.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        pass
    assert tape.jacobian(v, v) is None
    _eq(tape.batch_jacobian(v, v), np.zeros((1, 2, 2), np.float32))


def test_the_output_of_an_op_with_no_gradient_is_on_the_tape():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        f = tf.floor(x)
        d = tf.math.floordiv(x, 0.7)
        r = tf.round(x)
        s = tf.stop_gradient(x)  # not recorded, as TensorFlow's NotDifferentiable ops
        ys = [f ** 2, d * x, r * r, s ** 2]
    for y, out, want in zip(ys, [f, d, r, s], [[2.0, 4.0], [1.0, 2.0], [2.0, 4.0], None]):
        gx, gout = tape.gradient(y, [x, out])
        if want is None:
            assert gx is None and gout is None
        else:
            assert (gx is None) == (out is not d)  # d * x: x's own path
            _eq(gout, want)


def test_an_op_that_changes_nothing_returns_a_new_tensor():
    x = tf.constant([1.0, 2.0])
    v = tf.Variable(0.2, trainable=False)
    with tf.GradientTape(persistent=True) as tape:
        same = [x[...], x[:], tf.reshape(x, [2]), tf.transpose(x), tf.broadcast_to(x, [2]),
                tf.squeeze(x), tf.concat([x], 0), tf.pad(x, [[0, 0]])]
        tiled = tf.tile(v, [])
    for y in same:
        assert y is not x
        gx, gy = tape.gradient(y, [x, y])
        assert gx is None
        _eq(gy, [1.0, 1.0])
    _eq(tape.gradient(tiled, v, unconnected_gradients="zero"), 0.0)


def _sqrt_second(x, upstream):
    """d/dx and d/d(upstream) of sqrt's gradient weighted by upstream."""
    x, upstream = tf.constant(x), tf.constant(upstream)
    with tf.GradientTape(persistent=True) as outer:
        outer.watch([x, upstream])
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.sqrt(x)
        g = tape.gradient(y, x, output_gradients=upstream)
    return g, outer.gradient(g, x), outer.gradient(g, upstream)


def test_sqrt_second_derivative_follows_tensorflow_sqrt_grad_grad():
    g, gx, gup = _sqrt_second(np.array([4.0, 1.0], np.float32), np.array([0.0, 2.0], np.float32))
    _eq(g, [0.0, 1.0])
    _eq(gx, [0.0, -0.5])
    _eq(gup, [0.25, 0.5])  # not 0 where the upstream gradient is 0
    x = tf.constant([0.0, 4.0, 1.0])
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.where(x > 0, tf.sqrt(x), 0.0)
        g = tape.gradient(y, x)
    _eq(g, [0.0, 0.25, 0.5])
    np.testing.assert_array_equal(outer.gradient(g, x).numpy(), [np.nan, -0.03125, -0.25])


def test_sqrt_second_order_compiled_matches_eager():
    def f(x, w):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.sqrt(x) * w)
        return tf.reduce_sum(tape.gradient(y, x) * x)

    check_grads(f, [np.array([1.5, 0.4, 2.0]), np.array([0.0, 1.5, -2.0])], order=1)


def test_float_floordiv_is_floor_of_the_quotient():
    x, y = tf.constant([7.0, 12.6]), tf.constant([-1.4, 1.8])
    _eq(tf.math.floordiv(x, y), [-5.0, 7.0], tf.float32)
    _eq(x // y, [-5.0, 7.0], tf.float32)
    _eq(x % y, np.array([-1.3999999, 7.1525574e-07], np.float32), tf.float32)
    _eq(tf.constant([7, -12]) // tf.constant([-2, 5]), [-4, -3], tf.int32)
    # np.floor_divide keeps NumPy's meaning.
    _eq(np.floor_divide(x, y), np.floor_divide(x.numpy(), y.numpy()), tf.float32)
    compiled = tf.differentiable(lambda a, b: tf.reduce_sum((a // b) * a))
    np.testing.assert_allclose(np.asarray(compiled(x, y)), 7.0 * -5.0 + 12.6 * 7, rtol=1e-6)
    # On NumPy arrays `//` is NumPy's, as the function computes it called on them.
    np.testing.assert_allclose(np.asarray(compiled(x.numpy(), y.numpy())), 7.0 * -6.0 + 12.6 * 7,
                               rtol=1e-6)


def test_pow_at_minus_inf_and_log_softmax_of_inf_follow_tensorflow():
    x = tf.constant([-np.inf, 4.0, -0.0])
    _eq(x ** 0.5, [np.inf, 2.0, 0.0])
    _eq(tf.pow(x, tf.constant([0.5, -0.5, 3.0])), [np.inf, 0.5, -0.0])
    compiled = tf.differentiable(lambda a: tf.reduce_sum(a ** 0.5))
    assert np.asarray(compiled(np.array([-np.inf, 4.0]))) == np.inf
    np.testing.assert_array_equal(tf.nn.log_softmax([3.0, np.inf]).numpy(), [np.nan, np.nan])
    _eq(tf.nn.log_softmax([3.0, -np.inf]), [0.0, -np.inf])


def test_reduce_prod_second_derivative_at_a_zero_is_symmetric():
    # A documented difference: TensorFlow gives [[0, 3, 2], [0, 0, 0], [0, 0, 0]].
    x = tf.constant([0.0, 2.0, 3.0])
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_prod(x)
        g = tape.gradient(y, x)
    _eq(outer.jacobian(g, x), [[0.0, 3.0, 2.0], [3.0, 0.0, 0.0], [2.0, 0.0, 0.0]])


def test_softmax_cross_entropy_of_a_certain_prediction_is_plus_zero():
    loss = tf.nn.softmax_cross_entropy_with_logits(labels=[[1.0]], logits=[[1.4]])
    _eq(loss ** -1.0, [np.inf])  # TensorFlow's +0; a -0 would give -inf


# TensorFlow 2.21's namespaces: [n for n in dir(tf) if a module and not _private].
_TF_NAMESPACES = {
    "audio", "autodiff", "autograph", "bitwise", "compat", "config", "data", "debugging",
    "distribute", "dtensor", "dtypes", "errors", "experimental", "feature_column", "graph_util",
    "image", "initializers", "io", "keras", "linalg", "lite", "lookup", "losses", "math",
    "metrics", "mlir", "nest", "nn", "optimizers", "profiler", "quantization", "queue", "ragged",
    "random", "raw_ops", "saved_model", "security", "sets", "signal", "sparse", "strings",
    "summary", "sysconfig", "test", "tools", "tpu", "train", "types", "version", "xla",
}


def test_dir_lists_tensorflows_namespaces_and_hides_the_implementations_modules():
    import importlib
    from types import ModuleType

    names = dir(tf)
    modules = {n for n in names if isinstance(getattr(tf, n), ModuleType)}
    assert modules <= _TF_NAMESPACES | {"testing"}  # srcxform.testing: its own, as numpy's
    assert {"math", "nn", "keras", "errors", "optimizers"} <= modules
    assert {"GradientTape", "reduce_sum", "differentiable", "newaxis", "__version__"} <= set(names)
    for internal in ("core", "ad", "passes", "codegen", "jit", "ops", "runtime", "numba_adapter"):
        assert internal not in names
        assert getattr(tf, internal) is importlib.import_module(f"srcxform.{internal}")


def test_tf_random_lists_its_functions_not_its_imports():
    assert dir(tf.random) == sorted(tf.random.__all__)
    assert {"Generator", "normal", "set_seed", "shuffle", "uniform"} <= set(dir(tf.random))


@pytest.mark.parametrize("shift, axis", [(1, 0), (-1, 1), (5, 2), ([1, 2], [0, 2]),
                                         ([1, 1], [2, 2]), (0, 1), ([2, -3], [1, 1])])
def test_roll_moves_elements_round_as_numpy(shift, axis):
    x = np.arange(24.0).reshape(2, 3, 4)
    axes = axis if np.ndim(axis) == 0 else tuple(axis)
    np.testing.assert_array_equal(np.asarray(tf.roll(x, shift, axis)), np.roll(x, shift, axes))
    np.testing.assert_array_equal(np.asarray(np.roll(tf.constant(x), shift, axes)),
                                  np.roll(x, shift, axes))


@pytest.mark.slow  # a kernel and its gradient's for each of three sizes: about 9 s
def test_roll_compiles_for_every_size_with_its_gradient():
    weights = np.arange(5.0)
    rolled = tf.differentiable(lambda x: tf.reduce_sum(tf.roll(x, [2, -1], [1, 0]) ** 2 *
                                                       weights[:x.shape[1]]))
    for n in (1, 3, 5):
        x = np.arange(2.0 * n).reshape(2, n) + 1
        np.testing.assert_allclose(float(rolled(x)),
                                   np.sum(np.roll(x, (2, -1), (1, 0)) ** 2 * weights[:n]))
        check_grads(rolled, (x,))
    assert tf.roll(tf.zeros((0, 3)), 2, 0).shape == (0, 3)
    with pytest.raises(tf.ShapeError, match="shift and axis must be of one length"):
        tf.roll(np.ones((2, 2)), [1], [0, 1])
    with pytest.raises(TypeError, match="roll's shift must be ints"):
        tf.roll(np.ones(2), 1.5, 0)


def test_roll_by_a_shift_known_at_run_time_and_numpys_broadcast_shift():
    # Helper 90: a traced shift raised (.numpy() of a traced value); np.roll broadcasts
    # shift against axis, where tf.roll wants one length.
    weights = np.arange(5.0)
    by = tf.differentiable(lambda x, s: tf.reduce_sum(tf.roll(x, s, 0) * weights), wrt=0)
    x = np.arange(5.0) + 1
    for s in (0, 1, -2, 7):
        assert float(by(x, np.int32(s))) == np.sum(np.roll(x, s) * weights)
        np.testing.assert_array_equal(by.grad(x, np.int32(s)), np.roll(weights, -s))
    half = tf.differentiable(lambda x: tf.roll(x, tf.shape(x)[0] // 2, 0))
    np.testing.assert_array_equal(np.asarray(half(np.arange(4.0))), [2.0, 3.0, 0.0, 1.0])
    a = np.arange(6.0).reshape(2, 3)
    for shift, axis in [([1, 2], None), (1, (0, 1)), ([1, 2], 0), ([2], [0, 1])]:
        np.testing.assert_array_equal(np.asarray(np.roll(tf.constant(a), shift, axis)),
                                      np.roll(a, shift, axis))


@pytest.mark.parametrize("axis", [tf.constant(1), np.array(1), np.int64(1)])
def test_an_axis_given_as_a_scalar_tensor_or_array(axis):
    # normalize_axes called tuple() on it: a bare TypeError naming no op (helper 89).
    x = tf.ones((2, 3))
    assert tf.reduce_sum(x, axis=axis).shape == (2,)
    assert tf.concat([x, x], axis).shape == (2, 6)
    assert tf.nn.softmax(x, axis=axis).shape == (2, 3)
    assert len(tf.unstack(x, axis=axis)) == 3


def test_a_reduction_of_a_python_number_is_tensorflows_dtype():
    # It kept the weak number's float64 or int64 (helper 89); tf.exp(1.5) was float32.
    assert tf.reduce_sum(1.5).dtype == tf.float32
    assert tf.reduce_mean(2.5).dtype == tf.float32
    assert tf.reduce_max(2.5).dtype == tf.float32
    assert tf.reduce_sum(3).dtype == tf.int32
    assert tf.reduce_prod(3).dtype == tf.int32
    assert float(tf.reduce_sum(1.5) + np.float64(1.0)) == 2.5  # weak: the array's dtype


def test_roll_refuses_a_float_shift_compiled_and_shifts_by_int64s_minimum():
    # Helper 91: a traced float shift was truncated (1.7 rolled by 1), and i - shift
    # overflowed for a shift of -2**63.
    rolled = tf.differentiable(lambda x, s: tf.roll(x, s, 0))
    x = np.arange(12.0).reshape(3, 4)
    with pytest.raises(TypeError, match="roll's shift must be ints"):
        rolled(x, 1.7)
    np.testing.assert_array_equal(np.asarray(rolled(x, np.int64(-2**63))), np.roll(x, -2**63, 0))
    with pytest.raises(TypeError, match="scalars or 1D sequences"):
        np.roll(tf.constant(x), [[1], [2]], axis=(0, 1))


def test_mean_variance_and_std_of_a_python_float_agree_compiled_and_with_the_sum():
    # Helper 92: after 06b1a41 the sum of a Python float stayed weak but its mean was a
    # strong float64 compiled and float32 eagerly; the sum and the mean then differed.
    stats = (lambda s: (tf.reduce_mean(s), tf.math.reduce_std(s), tf.reduce_sum(s),
                        tf.math.reduce_variance(s)))
    for run in (stats, tf.differentiable(stats)):
        assert [r.dtype for r in run(0.1)] == [tf.float32] * 4
    x64 = np.float64(1.0)
    assert float(tf.reduce_sum(0.1) + x64) == float(tf.reduce_mean(0.1) + x64) == 1.1


@pytest.mark.parametrize("axis", [[1.7], tf.constant([1.5]), np.array([1.0]), ["1"], 1.7,
                                  tf.constant(1.0), [[0, 1]], True])
def test_an_axis_that_is_no_int_raises_naming_the_op(axis):
    # Helper 92: int() truncated [1.7] to 1 and read "1" as 1; a float scalar axis raised
    # a bare "'float' object is not iterable".
    with pytest.raises(TypeError, match="reduce_sum: an axis must be an int"):
        tf.reduce_sum(tf.ones((2, 3)), axis=axis)
    assert tf.reduce_sum(tf.ones((2, 3)), axis=[tf.rank(tf.ones((2, 3))) - 1]).shape == (2,)


def test_roll_refuses_a_shift_of_two_dimensions_eager_and_compiled():
    x, shift = np.arange(6.0).reshape(2, 3), np.array([[1, 2]])  # compiled flattened it
    for run in (tf.roll, tf.differentiable(lambda x, s, a: tf.roll(x, s, a))):
        with pytest.raises(tf.ShapeError, match="shift must be a scalar or a vector"):
            run(x, shift, [0, 1])


@pytest.mark.parametrize("op", [lambda x: tf.concat([x, x], axis=(1, 2)),
                                lambda x: tf.gather(x, [0, 1], axis=(2, 0)),
                                lambda x: tf.split(x, 2, axis=(2, 0)),
                                lambda x: tf.unstack(x, axis=(2, 0)),
                                lambda x: tf.expand_dims(x, [1, 2]),
                                lambda x: tf.concat([x, x], axis=[])])
def test_an_op_of_one_axis_refuses_several(op):
    # Helper 93: the smallest of several was taken (gather on axis 0 for (2, 0)); an
    # empty list raised a bare IndexError.
    with pytest.raises(TypeError, match="axis must be one int"):
        op(tf.ones((2, 3, 4)))


@pytest.mark.parametrize("op", [lambda x: tf.cumsum(x, axis=True), lambda x: tf.argmax(x, True),
                                lambda x: tf.sort(x, axis=True), lambda x: tf.reverse(x, [True]),
                                lambda x: tf.roll(x, 1, axis=True),
                                lambda x: tf.one_hot([0, 1], 3, axis=True),
                                lambda x: tf.cumsum(x, axis=1.0)])
def test_a_bool_or_float_axis_raises_where_it_was_read_as_1(op):
    with pytest.raises(TypeError, match="must be an int|must be ints"):
        op(tf.ones((2, 3)))


def test_roll_by_a_traced_unsigned_shift_past_int64():
    # Helper 93: a uint64 shift of 2**64 - 1 was cast to int64 (-1) before its mod.
    rolled = tf.differentiable(lambda x, s: tf.roll(x, s, 0))
    x = np.array([10.0, 20.0, 30.0])
    for shift in (2**64 - 1, 2**63 + 1):
        np.testing.assert_array_equal(np.asarray(rolled(x, np.array(shift, np.uint64))),
                                      np.roll(x, shift % 3))


def test_roll_by_a_traced_uint8_shift_along_a_long_axis():
    # Helper 94 on 7a14827: the unsigned shift's mod ran in uint8, where 256 does not fit.
    rolled = tf.differentiable(lambda x, s: tf.reduce_sum(np.roll(x, s) * np.arange(256.0)))
    x = np.arange(256.0)
    assert float(rolled(x, np.uint8(3))) == np.sum(np.roll(x, 3) * np.arange(256.0))


@pytest.mark.parametrize("axes", [tf.constant(1), np.array(1), [1, 0], ([1], [0])])
def test_tensordot_takes_numpys_axes_forms(axes):
    a, b = np.arange(12.0).reshape(3, 4), np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(np.asarray(tf.tensordot(a, b, axes)), a @ b)


@pytest.mark.parametrize("axes", [([1.7], [0.2]), [[True], [False]]])
def test_tensordot_refuses_axes_that_are_no_ints(axes):
    # Helper 94: they were cast to int64 (1.7 as 1, True as 1): a @ b silently.
    with pytest.raises(TypeError, match="tensordot: an axis must be an int"):
        tf.tensordot(np.ones((3, 4)), np.ones((4, 3)), axes)


@pytest.mark.parametrize("axes", [[1], [[1]], [1, 0, 1]])
def test_tensordot_refuses_axes_of_other_than_two_lists(axes):
    # Helper 93: a raw "not enough values to unpack".
    with pytest.raises(ValueError, match="tensordot: axes must be an int or a pair"):
        tf.tensordot(np.ones((3, 4)), np.ones((4, 3)), axes)


@pytest.mark.parametrize("depth", [True, 2.5, "3"])
def test_one_hot_refuses_a_depth_that_is_no_int(depth):
    # Helper 93: True was a depth of 1; a float or string raised Python's own message.
    with pytest.raises(TypeError, match="one_hot: depth must be an int"):
        tf.one_hot([0, 1], depth)


@pytest.mark.parametrize("call, op", [
    (lambda: tf.nn.softmax(tf.constant(1.0)), "softmax"),
    (lambda: tf.nn.log_softmax(tf.constant(1.0)), "log_softmax"),
    (lambda: tf.nn.softmax_cross_entropy_with_logits([1.0], [1.0], axis=1),
     "softmax_cross_entropy_with_logits"),
    (lambda: tf.math.reduce_std(tf.ones(2), axis=3), "reduce_std"),
    (lambda: tf.math.reduce_variance(tf.ones(2), axis=3), "reduce_variance"),
    (lambda: tf.math.reduce_euclidean_norm(tf.ones(2), axis=3), "reduce_euclidean_norm"),
    (lambda: tf.math.l2_normalize(tf.ones(2), axis=3), "l2_normalize"),
    (lambda: tf.reduce_logsumexp(3), "reduce_logsumexp"),
])
def test_a_composite_op_names_itself_in_its_errors(call, op):
    # Helper 93: they named the op they are built of (reduce_max, reduce_mean, reduce_sum,
    # exp), which the user never called.
    with pytest.raises((ValueError, TypeError), match=f"^{op}[:(]"):
        call()
