"""GradientTape: one test per TensorFlow behaviour listed in SPEC "GradientTape", plus the
numerically delicate ops (stable softmax family, ties, zeros in products)."""

import numpy as np
import pytest

import srcxform as tf
from helpers import assert_tensor_equal as _eq


# ----- watching -----


def test_constants_are_not_watched():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x) is None


def test_watch_tensor():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    _eq(tape.gradient(y, x), 6.0, tf.float32)


def test_watch_nested_structure():
    a = tf.constant(2.0)
    b = tf.constant([1.0, 3.0])
    c = tf.constant([[1.0, 1.0]])
    with tf.GradientTape() as tape:
        tape.watch({"a": a, "rest": [b, (c,)]})
        y = a * tf.reduce_sum(b * b) + tf.reduce_sum(c) * a
    g = tape.gradient(y, {"a": a, "rest": [b, (c,)]})
    assert set(g) == {"a", "rest"}
    _eq(g["a"], 12.0)  # sum(b*b) + sum(c)
    _eq(g["rest"][0], [4.0, 12.0])
    _eq(g["rest"][1][0], [[2.0, 2.0]])
    assert isinstance(g["rest"], list) and isinstance(g["rest"][1], tuple)


def test_watch_rejects_non_tensors():
    with tf.GradientTape() as tape, pytest.raises(TypeError, match="watch"):
        tape.watch(3.0)


def test_unwatched_tensor_gives_none_even_when_connected():
    # Only watched values have gradients: x takes part in y but nobody watched it.
    x = tf.constant(2.0)
    w = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(w)
        y = x * w
    gx, gw = tape.gradient(y, [x, w])
    assert gx is None
    _eq(gw, 2.0)


def test_trainable_variables_watched_on_read():
    v = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = v * v
    _eq(tape.gradient(y, v), 6.0, tf.float32)


def test_non_trainable_variable_not_watched():
    v = tf.Variable(3.0)
    frozen = tf.Variable(2.0, trainable=False)
    with tf.GradientTape() as tape:
        y = v * frozen
    gv, gfrozen = tape.gradient(y, [v, frozen])
    _eq(gv, 2.0)
    assert gfrozen is None
    assert [id(w) for w in tape.watched_variables()] == [id(v)]


def test_non_trainable_variable_watched_explicitly():
    frozen = tf.Variable(2.0, trainable=False)
    with tf.GradientTape() as tape:
        tape.watch(frozen)
        y = frozen * frozen * frozen
    _eq(tape.gradient(y, frozen), 12.0)


def test_watch_accessed_variables_false():
    v = tf.Variable(3.0)
    w = tf.Variable(5.0)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(w)
        y = v * w
    gv, gw = tape.gradient(y, [v, w])
    assert gv is None
    _eq(gw, 3.0)
    assert [id(x) for x in tape.watched_variables()] == [id(w)]


def test_watched_variables_in_first_watched_order():
    a, b, c = tf.Variable(1.0), tf.Variable(2.0), tf.Variable(3.0, trainable=False)
    with tf.GradientTape() as tape:
        b * a + c + b
    watched = tape.watched_variables()
    assert isinstance(watched, tuple)
    assert [id(v) for v in watched] == [id(b), id(a)]  # identity: == is elementwise


def test_variable_read_before_assign_keeps_its_gradient():
    v = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = v * v
        v.assign(10.0)
    _eq(tape.gradient(y, v), 4.0)


# ----- gradient(): sources, targets, weights -----


def test_sources_list_tuple_dict_keep_their_structure():
    x, y = tf.Variable(2.0), tf.Variable(3.0)
    with tf.GradientTape(persistent=True) as tape:
        z = x * x * y
    as_list = tape.gradient(z, [x, y])
    as_tuple = tape.gradient(z, (x, y))
    as_dict = tape.gradient(z, {"x": x, "y": y})
    nested = tape.gradient(z, {"pair": (x, [y])})
    assert isinstance(as_list, list) and isinstance(as_tuple, tuple)
    assert [float(g) for g in as_list] == [12.0, 4.0]
    assert [float(g) for g in as_tuple] == [12.0, 4.0]
    assert float(as_dict["x"]) == 12.0 and float(as_dict["y"]) == 4.0
    assert float(nested["pair"][0]) == 12.0 and float(nested["pair"][1][0]) == 4.0


def test_same_source_twice():
    x = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = x * x
    g1, g2 = tape.gradient(y, [x, x])
    _eq(g1, 4.0)
    _eq(g2, 4.0)


def test_list_of_targets_is_summed():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        a = x * x
        b = 3.0 * x
    _eq(tape.gradient([a, b], x), 7.0)


def test_non_scalar_target_is_summed():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    _eq(tape.gradient(y, x), [2.0, 4.0, 6.0])


def test_output_gradients_weight_the_target():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    _eq(tape.gradient(y, x, output_gradients=tf.constant([10.0, 100.0])), [20.0, 400.0])


def test_output_gradients_for_a_list_of_targets():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        a = x * x
        b = 2.0 * x
    g = tape.gradient([a, b], x, output_gradients=[tf.constant(1.0), tf.constant(10.0)])
    _eq(g, 26.0)  # 1 * 2x + 10 * 2


def test_unconnected_gradients():
    x = tf.constant(2.0)
    u = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, u])
        y = x * x
    assert tape.gradient(y, u) is None
    assert tape.gradient(y, u, unconnected_gradients=tf.UnconnectedGradients.NONE) is None
    zero = tape.gradient(y, u, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    _eq(zero, [0.0, 0.0], tf.float32)
    _eq(tape.gradient(y, u, unconnected_gradients="zero"), [0.0, 0.0], tf.float32)
    _eq(tape.gradient(y, [x, u], unconnected_gradients="zero")[0], 4.0)


def test_unconnected_zero_keeps_source_dtype():
    x = tf.constant(2.0)
    u = tf.constant(np.zeros((2, 1)))
    with tf.GradientTape() as tape:
        tape.watch([x, u])
        y = x * x
    _eq(tape.gradient(y, u, unconnected_gradients="zero"), [[0.0], [0.0]], tf.float64)


def test_integer_source_gives_none():
    i = tf.constant([1, 2])
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.cast(i, tf.float32) * x
    gi, gx = tape.gradient(y, [i, x])
    assert gi is None
    _eq(gx, 3.0)


def test_integer_variable_gives_none():
    v = tf.Variable([1, 2])
    with tf.GradientTape() as tape:
        y = tf.cast(v, tf.float32) * 2.0
    assert tape.gradient(y, v) is None


def test_watching_int_tensor_warns():
    i = tf.constant(3)
    with tf.GradientTape() as tape:
        with pytest.warns(UserWarning, match="int32") as caught:
            tape.watch(i)
        y = i * i
    assert caught[0].filename == __file__  # points at the user's line
    assert tape.gradient(y, i) is None


def test_integer_cast_cuts_the_gradient():
    x = tf.constant(3.7)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.cast(tf.cast(x, tf.int32), tf.float32) * x
    _eq(tape.gradient(y, x), 3.0)


# ----- tape lifetime -----


def test_non_persistent_tape_used_twice_raises():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="persistent"):
        tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="persistent"):
        tape.jacobian(y, x)


def test_non_persistent_jacobian_then_gradient_raises():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.jacobian(y, x)
    with pytest.raises(RuntimeError):
        tape.gradient(y, x)


def test_persistent_tape():
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    _eq(tape.gradient(z, x), 108.0)
    _eq(tape.gradient(y, x), 6.0)
    _eq(tape.gradient(z, x), 108.0)
    _eq(tape.jacobian(y, x), 6.0)


def test_gradient_wrt_intermediate_tensors():
    x = tf.ones((2, 2))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.reduce_sum(x)
        z = tf.multiply(y, y)
        w = z * 2.0
    _eq(tape.gradient(z, y), 8.0)
    _eq(tape.gradient(w, y), 16.0)
    _eq(tape.gradient(w, z), 2.0)
    _eq(tape.gradient(w, [x, y])[0], np.full((2, 2), 16.0))


def test_gradient_of_target_wrt_itself():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
    _eq(tape.gradient(x, x), [1.0, 1.0])


# ----- higher order -----


def test_nested_tapes_third_order():
    x = tf.constant(1.5)
    with tf.GradientTape() as t3:
        t3.watch(x)
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t1:
                t1.watch(x)
                y = x ** 4
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x)
    _eq(d1, 4 * 1.5 ** 3)  # 13.5
    _eq(d2, 12 * 1.5 ** 2)  # 27.0
    _eq(d3, 24 * 1.5)  # 36.0


def test_nested_tapes_with_variable():
    x = tf.Variable(2.0)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = tf.sin(x) * x
        dy = inner.gradient(y, x)
    d2y = outer.gradient(dy, x)
    np.testing.assert_allclose(dy.numpy(), np.cos(2.0) * 2.0 + np.sin(2.0), rtol=1e-6)
    np.testing.assert_allclose(d2y.numpy(), -np.sin(2.0) * 2.0 + 2 * np.cos(2.0), rtol=1e-6)


def test_persistent_tape_hessian_by_jacobian_of_gradient():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = x[0] ** 2 * x[1] ** 3
        g = inner.gradient(y, x)
    h = outer.jacobian(g, x)
    # d2/dx0^2 = 2 x1^3, d2/dx0dx1 = 6 x0 x1^2, d2/dx1^2 = 6 x0^2 x1
    _eq(h, [[16.0, 24.0], [24.0, 12.0]])


# ----- jacobians -----


def test_jacobian_shape_and_values():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x[:, None] * x[None, :]
    j = tape.jacobian(y, x)
    assert j.shape == (3, 3, 3)
    expected = np.zeros((3, 3, 3), np.float32)
    for a in range(3):
        for b in range(3):
            expected[a, b, a] += x.numpy()[b]
            expected[a, b, b] += x.numpy()[a]
    _eq(j, expected, tf.float32)


def test_jacobian_of_matrix_wrt_matrix_and_list_sources():
    w = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    v = tf.constant([5.0, 6.0])
    with tf.GradientTape() as tape:
        tape.watch([w, v])
        y = tf.matmul(w, v[:, None])
    jw, jv = tape.jacobian(y, [w, v])
    assert jw.shape == (2, 1, 2, 2)
    assert jv.shape == (2, 1, 2)
    _eq(jv, [[[1.0, 2.0]], [[3.0, 4.0]]])
    _eq(jw[0, 0], [[5.0, 6.0], [0.0, 0.0]])
    _eq(jw[1, 0], [[0.0, 0.0], [5.0, 6.0]])


def test_jacobian_unconnected():
    x = tf.constant([1.0, 2.0])
    u = tf.constant([3.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, u])
        y = x * 2.0
    assert tape.jacobian(y, u) is None
    _eq(tape.jacobian(y, u, unconnected_gradients="zero"), np.zeros((2, 1)))


def test_batch_jacobian():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    w = tf.constant([[1.0, 0.0, 2.0], [0.0, 1.0, 3.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.matmul(x * x, w)  # [3, 3]; row b depends on x[b] only
    bj = tape.batch_jacobian(y, x)
    assert bj.shape == (3, 3, 2)
    expected = np.stack([(2 * x.numpy()[b][None, :] * w.numpy().T) for b in range(3)])
    _eq(bj, expected)


def test_batch_jacobian_batch_mismatch():
    x = tf.constant([[1.0], [2.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.ones((3, 1)) * tf.reduce_sum(x)
    with pytest.raises(ValueError, match="batch"):
        tape.batch_jacobian(y, x)


# ----- recording control -----


def test_stop_recording():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        a = x * x
        with tape.stop_recording():
            b = x * x * x
        c = a + b
    _eq(tape.gradient(c, x), [2.0, 4.0, 6.0])


def test_stop_recording_outside_context_raises():
    tape = tf.GradientTape()
    with pytest.raises(ValueError), tape.stop_recording():
        pass


def test_reset():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        tape.reset()
        tape.watch(x)
        z = x * x * x
    _eq(tape.gradient([y, z], x), 12.0)  # only z (3x^2) is still recorded


def test_reset_forgets_watches():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        tape.reset()
        y = x * x
    assert tape.gradient(y, x) is None


def test_reset_forgets_watched_variables():
    v = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        v * v
        tape.reset()
        assert tape.watched_variables() == ()


def test_operations_after_the_context_are_not_recorded():
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    z = y * x
    _eq(tape.gradient(y, x), 4.0)
    assert tape.gradient(z, x) is None


def test_tape_can_be_reentered():
    x = tf.constant(2.0)
    tape = tf.GradientTape(persistent=True)
    with tape:
        tape.watch(x)
        y = x * x
    with tape:
        z = y * x
    _eq(tape.gradient(z, x), 12.0)


def test_stop_gradient():
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * tf.stop_gradient(x)
        z = tf.stop_gradient(x * x)
    _eq(y, 9.0)
    _eq(tape.gradient(y, x), 3.0)
    assert tape.gradient(z, x) is None


# ----- custom_gradient -----


def test_custom_gradient_replaces_the_gradient():
    @tf.custom_gradient
    def clip_gradient(x):
        return x * 1.0, lambda dy: tf.clip_by_value(dy, -1.0, 1.0)

    x = tf.constant([2.0, -3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = clip_gradient(x) * 5.0
    _eq(y, [10.0, -15.0])
    _eq(tape.gradient(y, x), [1.0, 1.0])


def test_custom_gradient_identity_output():
    @tf.custom_gradient
    def double_grad(x):
        return x, lambda dy: dy * 2.0

    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = double_grad(x) * x
    _eq(tape.gradient(y, x), 3.0 * 2.0 + 3.0)


def test_custom_gradient_stable_log1pexp():
    # TensorFlow's documented example: the gradient stays finite where autodiff gives nan.
    @tf.custom_gradient
    def log1pexp(x):
        e = tf.exp(x)

        def grad(dy):
            return dy * (1 - 1 / (1 + e))

        return tf.math.log(1 + e), grad

    x = tf.constant(100.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = log1pexp(x)
    _eq(tape.gradient(y, x), 1.0)


def test_custom_gradient_two_inputs():
    @tf.custom_gradient
    def mul(a, b):
        return a * b, lambda dy: (dy * 10.0, dy * 100.0)

    a, b = tf.constant(2.0), tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = mul(a, b)
    ga, gb = tape.gradient(y, [a, b])
    _eq(ga, 10.0)
    _eq(gb, 100.0)


def test_custom_gradient_forward_is_not_recorded_inside():
    calls = []

    @tf.custom_gradient
    def f(x):
        y = x * x
        calls.append(1)
        return y, lambda dy: dy * 0.0 + 7.0

    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    _eq(tape.gradient(y, x), 7.0)  # not 2x: the inner ops are hidden
    assert calls == [1]


def test_custom_gradient_second_order_under_outer_tape():
    @tf.custom_gradient
    def cube(x):
        def grad(dy):
            return dy * 3.0 * x * x

        return x * x * x, grad

    x = tf.constant(3.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = cube(x)
        g = inner.gradient(y, x)
    _eq(y, 27.0)
    _eq(g, 27.0)  # 3x^2
    _eq(outer.gradient(g, x), 18.0)  # 6x, through the user's grad function


def test_custom_gradient_with_variable():
    v = tf.Variable(2.0)

    @tf.custom_gradient
    def scaled(x):
        return x * 4.0, lambda dy: dy * 0.5

    with tf.GradientTape() as tape:
        y = scaled(v)
    _eq(tape.gradient(y, v), 0.5)


# ----- numerically stable ops at 1000 -----

BIG = [1000.0, 0.0, -1000.0]


def _value_and_grad(f, x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return y, tape.gradient(y, x)


def _all_finite(*ts):
    return all(np.all(np.isfinite(t.numpy())) for t in ts)


def test_softmax_stable():
    y, g = _value_and_grad(lambda x: tf.nn.softmax(x)[1], BIG)
    assert _all_finite(y, g)
    _eq(tf.nn.softmax(tf.constant(BIG)), [1.0, 0.0, 0.0])
    _eq(g, [0.0, 0.0, 0.0])
    y, g = _value_and_grad(lambda x: tf.nn.softmax(x)[0], [1000.0, 1000.0])
    _eq(y, 0.5)
    _eq(g, [0.25, -0.25])


def test_log_softmax_stable():
    y, g = _value_and_grad(lambda x: tf.reduce_sum(tf.nn.log_softmax(x)), BIG)
    assert _all_finite(y, g)
    _eq(tf.nn.log_softmax(tf.constant(BIG)), [0.0, -1000.0, -2000.0])
    _eq(g, [-2.0, 1.0, 1.0])  # 1 - n * softmax


def test_reduce_logsumexp_stable():
    y, g = _value_and_grad(tf.reduce_logsumexp, BIG)
    assert _all_finite(y, g)
    _eq(y, 1000.0)
    _eq(g, [1.0, 0.0, 0.0])
    y, g = _value_and_grad(lambda x: tf.reduce_logsumexp(x, axis=1), [[1000.0, 1000.0]])
    np.testing.assert_allclose(y.numpy(), [1000.0 + np.log(2.0)], rtol=1e-6)
    _eq(g, [[0.5, 0.5]])


def test_reduce_logsumexp_of_all_minus_inf():
    _eq(tf.reduce_logsumexp(tf.constant([-np.inf, -np.inf])), -np.inf)


def test_softmax_cross_entropy_stable():
    labels = tf.constant([0.0, 1.0, 0.0])
    y, g = _value_and_grad(
        lambda x: tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=x), BIG)
    assert _all_finite(y, g)
    _eq(y, 1000.0)
    _eq(g, [1.0, -1.0, 0.0])  # softmax - labels


def test_sigmoid_cross_entropy_stable():
    labels = tf.constant([0.0, 1.0, 1.0])
    y, g = _value_and_grad(
        lambda x: tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=x), BIG)
    assert _all_finite(y, g)
    np.testing.assert_allclose(y.numpy(), [1000.0, np.log(2.0), 1000.0], rtol=1e-6)
    _eq(g, [1.0, -0.5, -1.0])  # sigmoid(x) - labels


def test_sigmoid_and_softplus_at_large_inputs():
    y, g = _value_and_grad(lambda x: tf.reduce_sum(tf.nn.softplus(x)), BIG)
    assert _all_finite(y, g)
    _eq(g, [1.0, 0.5, 0.0])
    y, g = _value_and_grad(lambda x: tf.reduce_sum(tf.sigmoid(x)), BIG)
    assert _all_finite(y, g)
    _eq(g, [0.0, 0.25, 0.0])


# ----- broadcasting, ties, zeros -----


def test_broadcasting_gradients_summed_to_input_shapes():
    a = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    b = tf.constant([10.0, 20.0, 30.0])
    c = tf.constant([[1.0], [2.0]])
    s = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch([a, b, c, s])
        y = a * b + c * s
    ga, gb, gc, gs = tape.gradient(y, [a, b, c, s])
    _eq(ga, [[10.0, 20.0, 30.0], [10.0, 20.0, 30.0]])
    _eq(gb, [5.0, 7.0, 9.0])
    _eq(gc, [[6.0], [6.0]])
    _eq(gs, 9.0)


def test_broadcasting_with_size_one_leading_axis():
    a = tf.constant([[[1.0, 2.0]]])  # (1, 1, 2)
    b = tf.ones((3, 4, 1))
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = a * b
    ga, gb = tape.gradient(y, [a, b])
    _eq(ga, [[[12.0, 12.0]]])
    _eq(gb, np.full((3, 4, 1), 3.0))


def test_python_scalar_operand_has_no_gradient_but_tensor_does():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = 3.0 * x + 1
    _eq(tape.gradient(y, x), [3.0, 3.0])


def test_reduce_max_ties_share_gradient():
    x = tf.constant([1.0, 3.0, 3.0, 2.0])
    _, g = _value_and_grad(tf.reduce_max, x.numpy())
    _eq(g, [0.0, 0.5, 0.5, 0.0])
    _, g = _value_and_grad(tf.reduce_min, [2.0, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(g.numpy(), [0.0, 1 / 3, 1 / 3, 1 / 3], rtol=1e-6)
    _, g = _value_and_grad(lambda v: tf.reduce_max(v, axis=1), [[5.0, 5.0], [1.0, 4.0]])
    _eq(g, [[0.5, 0.5], [0.0, 1.0]])


def test_reduce_prod_with_zeros_is_exact():
    _, g = _value_and_grad(tf.reduce_prod, [2.0, 0.0, 3.0, 4.0])
    _eq(g, [0.0, 24.0, 0.0, 0.0])
    _, g = _value_and_grad(tf.reduce_prod, [0.0, 0.0, 3.0])
    _eq(g, [0.0, 0.0, 0.0])
    _, g = _value_and_grad(tf.reduce_prod, [1.0, 2.0, 3.0])
    _eq(g, [6.0, 3.0, 2.0])
    _, g = _value_and_grad(lambda v: tf.reduce_prod(v, axis=0), [[0.0, 2.0], [5.0, 3.0]])
    _eq(g, [[5.0, 3.0], [0.0, 2.0]])


def test_maximum_ties_send_gradient_to_first():
    a, b = tf.constant([1.0, 2.0, 3.0]), tf.constant([2.0, 2.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = tf.maximum(a, b)
    ga, gb = tape.gradient(y, [a, b])
    _eq(ga, [0.0, 1.0, 1.0])
    _eq(gb, [1.0, 0.0, 0.0])


def test_relu_gradient_at_zero_is_zero():
    _, g = _value_and_grad(lambda v: tf.reduce_sum(tf.nn.relu(v)), [-1.0, 0.0, 2.0])
    _eq(g, [0.0, 0.0, 1.0])


def test_gradients_through_indexing_and_shape_ops():
    x = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = (x[0, 1] * 10.0 + tf.reduce_sum(x[:, ::2]) + tf.reduce_sum(tf.transpose(x)[2])
             + tf.reduce_sum(tf.gather(x, [1, 1])))
    _eq(tape.gradient(y, x), [[1.0, 10.0, 2.0], [3.0, 2.0, 4.0]])


def test_matmul_gradient():
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    b = tf.constant([[5.0], [6.0]])
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = tf.matmul(a, b)
    ga, gb = tape.gradient(y, [a, b])
    _eq(ga, [[5.0, 6.0], [5.0, 6.0]])
    _eq(gb, [[4.0], [6.0]])


def test_gradient_through_numpy_functions():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(np.exp(x) * 2.0)
    assert isinstance(y, tf.Tensor)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 2 * np.exp([1.0, 2.0, 3.0]),
                               rtol=1e-6)


def test_elementwise_gradients_and_nondifferentiable_ops():
    x = tf.constant([1.0, 2.0, 3.0])
    _, g = _value_and_grad(lambda v: tf.reduce_sum(2.0 ** v), x.numpy())
    np.testing.assert_allclose(g.numpy(), np.log(2.0) * 2.0 ** x.numpy(), rtol=1e-6)
    _, g = _value_and_grad(lambda v: tf.reduce_sum(v % 2.0), x.numpy())
    _eq(g, [1.0, 1.0, 1.0])
    _, g = _value_and_grad(lambda v: tf.reduce_sum(tf.abs(v - 2.0)), x.numpy())
    _eq(g, [-1.0, 0.0, 1.0])
    _, g = _value_and_grad(lambda v: tf.reduce_sum(tf.clip_by_value(v, 1.5, 2.5)), x.numpy())
    _eq(g, [0.0, 1.0, 0.0])
    _, g = _value_and_grad(lambda v: tf.reduce_sum(tf.where(v > 1.5, v * v, -v)), x.numpy())
    _eq(g, [-1.0, 4.0, 6.0])
    _, g = _value_and_grad(lambda v: tf.reduce_mean(v), x.numpy())
    np.testing.assert_allclose(g.numpy(), [1 / 3] * 3, rtol=1e-7)
    # No gradient, never a wrong one: None from the tape, as TensorFlow.
    for op in (lambda v: v // 2.0, tf.round, tf.floor, lambda v: v > 1.0):
        _, g = _value_and_grad(op, x.numpy())
        assert g is None
    # sign's gradient is zero, not None, in TensorFlow.
    _, g = _value_and_grad(tf.sign, x.numpy())
    _eq(g, [0.0, 0.0, 0.0])


def test_variable_jacobian():
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        y = v * v
    _eq(tape.jacobian(y, v), [[2.0, 0.0], [0.0, 4.0]])


def test_every_read_of_a_variable_sends_its_gradient():
    v = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = v * v
        v.assign_add(1.0)
        z = v * v
    _eq(tape.gradient([y, z], v), 10.0)  # 2*2 + 2*3


def test_float16_gradient():
    x = tf.constant([1.0, 2.0], dtype=tf.float16)
    _, g = _value_and_grad(lambda v: tf.reduce_sum(v * v), x.numpy())
    _eq(g, [2.0, 4.0], tf.float16)


def test_unconnected_gradients_rejects_unknown_option():
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(ValueError, match="bogus"):
        tape.gradient(y, x, unconnected_gradients="bogus")


def test_pows_exponent_gradient_is_made_only_where_the_exponent_needs_one(monkeypatch):
    # pow's VJP returns the exponent's cotangent as a function (Primitive.vjp): the reverse
    # walk calls it only for an exponent it differentiates.
    from srcxform.ops import elementwise

    logs = []
    real_log = elementwise.log
    monkeypatch.setattr(elementwise, "log", lambda x: logs.append(x) or real_log(x))
    x, y = tf.Variable([0.5, 2.0]), tf.Variable(3.0)
    with tf.GradientTape(persistent=True) as tape:
        z = tf.reduce_sum(x ** y)
    np.testing.assert_allclose(tape.gradient(z, x).numpy(), 3.0 * np.array([0.25, 4.0]))
    assert logs == []
    np.testing.assert_allclose(tape.gradient(z, y).numpy(),
                               0.125 * np.log(0.5) + 8.0 * np.log(2.0), rtol=1e-6)
    assert len(logs) == 1


def _two_targets(weights):
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        a, b = x * x, x * 3.0
    return tape.gradient([a, b], x, output_gradients=weights)


def test_a_none_output_gradient_is_that_target_s_ones():
    # Helper 88: flattening dropped the None, so the next target's weight weighed this one
    # ([None, 10] gave 40, not 4 + 30), and zip dropped the last targets' weights.
    assert float(_two_targets([None, tf.constant(10.0)])) == 34.0
    assert float(_two_targets([tf.constant(1.0), None])) == 7.0
    assert float(_two_targets([None, None])) == 7.0
    with pytest.raises(ValueError, match="output_gradients has 1 entries for 2 targets"):
        _two_targets([2.0])


def _wrt_an_unchanged_copy(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x[:]
        z = tf.reduce_sum(x * y)
    return tape.gradient(z, y)


def _an_unwatched_source_reversed_on_no_axes(x):
    with tf.GradientTape() as tape:
        y = tf.reverse(x, [])
    return tape.gradient(y, x)


def _a_copy_made_before_the_tape(x):
    r = x[...]
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(r * x)
    return tape.gradient(y, x)


@pytest.mark.parametrize("fn, expected", [
    (_wrt_an_unchanged_copy, [1.5, 2.0]),
    (_an_unwatched_source_reversed_on_no_axes, None),
    (_a_copy_made_before_the_tape, [1.5, 2.0]),
])
def test_an_op_that_changes_nothing_makes_a_new_value_compiled_too(fn, expected):
    # Helper 88: traced, x[:], reverse(x, []), reshape(x, x.shape) ... returned x itself,
    # so the compiled gradients were [3, 4], [1, 1] and [3, 4].
    x = np.array([1.5, 2.0])
    for run in (fn, tf.differentiable(fn)):
        got = run(tf.constant(x))
        assert got is None if expected is None else np.array_equal(np.asarray(got), expected)


@tf.custom_gradient
def _doubled_and_tripled(x):
    def grad(da, db):
        return da * 2.0 + db * 3.0
    return (x * 2.0, x * 3.0), grad


def _through_two_outputs(x):
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        a, b = _doubled_and_tripled(x)
        z = a + 2.0 * b
    return tape.gradient(z, x), tape.gradient(a, x)


def test_custom_gradient_of_several_outputs_takes_an_upstream_for_each():
    # TensorFlow's rule: grad_fn(*upstreams), zeros for an output with none (helper 88:
    # the outputs were stacked and grad_fn called with one argument, a TypeError).
    x = tf.constant(1.5, tf.float64)
    for run in (_through_two_outputs, tf.differentiable(_through_two_outputs)):
        total, first = run(x)
        assert (float(total), float(first)) == (8.0, 2.0)
    with tf.autodiff.ForwardAccumulator(x, tf.constant(1.0, tf.float64)) as acc:
        a, b = _doubled_and_tripled(x)
    assert (float(acc.jvp(a)), float(acc.jvp(b))) == (2.0, 3.0)



@tf.custom_gradient
def _constant_then_doubled(r):
    return (tf.constant(0.0, tf.float64), r * 2.0), lambda d1, d2: d2 * 100.0


def test_custom_gradient_whose_first_output_is_a_constant_keeps_its_gradient():
    # Helper 90: only a traced first output marked the record's outputs, so the rows'
    # reroll differentiated f's own ops (2, not 100); a constant after a traced output
    # raised AttributeError.
    rows = tf.differentiable(lambda x: tf.reduce_sum(tf.stack(
        [_constant_then_doubled(x[i])[1] for i in range(x.shape[0])])))
    np.testing.assert_array_equal(rows.grad(np.arange(12.0).reshape(6, 2)), np.full((6, 2), 100.0))
    assert float(tf.differentiable(lambda x: tf.reduce_sum(_constant_then_doubled(x)[::-1][0]))(
        np.ones(2))) == 4.0


@pytest.mark.parametrize("target, sources", [
    (None, "x"), (["y", None], "x"), ({"a": "y", "b": None}, "x")])
def test_a_none_target_raises_as_tensorflows(target, sources):
    # Helper 125: a None was taken for an empty structure, and the gradient of a None
    # target was None, quietly (TensorFlow 2.21 raises TypeError). A None among the
    # sources stays a pytree's empty node (test_structures).
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    named = {"x": x, "y": y}

    def filled(s):
        if isinstance(s, dict):
            return {k: filled(v) for k, v in s.items()}
        if isinstance(s, list):
            return [filled(v) for v in s]
        return named.get(s) if s is not None else None

    with pytest.raises(TypeError, match="got None in"):
        tape.gradient(filled(target), filled(sources))
