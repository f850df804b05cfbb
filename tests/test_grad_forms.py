"""The gradient forms (f.grad, f.value_and_grad, srcxform.grad, srcxform.value_and_grad)
need a scalar float output, as JAX's do; anything else is a TypeError naming what the
function returned, never the gradient of a silent sum. `has_aux=True` returns the
function's other values beside the gradient. The tape's `gradient` still sums a
non-scalar target, as TensorFlow's does."""

import numpy as np
import pytest

import srcxform as tf


def loss_and_input(x):
    return tf.reduce_sum(x * x), x


def vector(x):
    return x * x


def as_dict(x):
    return {"loss": tf.reduce_sum(x * x), "x": x}


def integer(x):
    return tf.cast(tf.reduce_sum(x), tf.int32)


@pytest.mark.parametrize("fn, said", [
    (loss_and_input, "tuple of 2"), (vector, "shape (3,)"), (as_dict, "dict of 2"),
    (integer, "int32"),
])
@pytest.mark.parametrize("form", ["f.grad", "f.value_and_grad", "tf.grad", "tf.value_and_grad"])
def test_a_non_scalar_output_raises_naming_it(fn, said, form):
    f = {"f.grad": lambda: tf.differentiable(fn).grad,
         "f.value_and_grad": lambda: tf.differentiable(fn).value_and_grad,
         "tf.grad": lambda: tf.grad(fn), "tf.value_and_grad": lambda: tf.value_and_grad(fn)}
    with pytest.raises(TypeError, match="scalar") as caught:
        f[form]()(np.ones(3))
    message = str(caught.value)
    assert said in message and "has_aux=True" in message and "jacobian" in message


def test_a_non_scalar_output_raises_on_the_eager_path_too():
    """Under a recording tape the forms run inline, on the eager tape: the same rule."""
    f = tf.differentiable(loss_and_input)
    with tf.GradientTape(), pytest.raises(TypeError, match="has_aux=True"):
        f.grad(tf.constant(np.ones(3)))


def test_has_aux_returns_the_gradient_and_the_aux():
    f = tf.differentiable(loss_and_input, has_aux=True)
    x = np.array([1.0, 2.0, 3.0])
    g, aux = f.grad(x)
    np.testing.assert_array_equal(g, 2 * x)  # not 2x + 1: aux has no gradient
    np.testing.assert_array_equal(aux, x)
    (value, aux), g = f.value_and_grad(x)
    assert value == 14.0
    np.testing.assert_array_equal(aux, x)
    np.testing.assert_array_equal(g, 2 * x)
    assert f(x)[0] == 14.0  # the plain call returns what the function returns


def test_has_aux_in_the_function_forms_with_structures():
    def loss(w, b, x):
        y = x @ w + b
        return tf.reduce_sum(y * y), {"y": y, "scale": 2}

    w, b, x = np.ones(2), np.float64(0.5), np.array([[1.0, 2.0]])
    (g_w, g_b), aux = tf.grad(loss, wrt=(0, 1), has_aux=True)(w, b, x)
    np.testing.assert_allclose(g_w, 2 * 3.5 * x[0])
    np.testing.assert_allclose(g_b, 7.0)
    np.testing.assert_allclose(aux["y"], [3.5])
    assert aux["scale"] == 2
    (value, aux), g = tf.value_and_grad(loss, has_aux=True)(w, b, x)
    assert value == 12.25
    np.testing.assert_allclose(g, 7.0 * x[0])


def test_has_aux_under_a_tape_runs_inline_alike():
    f = tf.differentiable(loss_and_input, has_aux=True)
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape():
        g, aux = f.grad(x)
    np.testing.assert_array_equal(np.asarray(g), [2.0, 4.0])
    np.testing.assert_array_equal(np.asarray(aux), [1.0, 2.0])


def test_has_aux_needs_a_pair():
    f = tf.differentiable(lambda x: tf.reduce_sum(x), has_aux=True)
    with pytest.raises(TypeError, match=r"has_aux=True.*pair"):
        f.grad(np.ones(2))


def test_a_scalar_float_output_is_fine_whatever_its_kind():
    assert tf.grad(lambda x: x * 3.0)(2.0) == 3.0
    assert tf.grad(lambda x: tf.reduce_sum(x) + 1.0)(np.ones(2)).tolist() == [1.0, 1.0]


def test_the_tapes_gradient_of_a_vector_still_sums():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 4.0])

    @tf.differentiable
    def summed(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * x
        return t.gradient(y, x)

    np.testing.assert_array_equal(np.asarray(summed(np.array([1.0, 2.0]))), [2.0, 4.0])


def test_one_tensor_passed_for_two_arguments_gets_a_gradient_for_each():
    """Compiled, f.grad(t, t) gave one gradient per argument (JAX's rule, as for arrays);
    under a tape, where the function runs on it, it gave their totals twice, and check=True
    raised CheckError (helper 100). Each place is its own source on every path now."""
    def g(a, b):
        return tf.reduce_sum(a * 2.0) + tf.reduce_sum(b * b * 3.0)

    t = tf.constant([0.3, -0.5, 0.8])
    want = [[2.0] * 3, (6.0 * t.numpy()).tolist()]
    f = tf.differentiable(g, wrt=(0, 1), check=True)
    np.testing.assert_allclose(f.grad(t, t), want, rtol=1e-6)
    with tf.GradientTape() as tape:
        tape.watch(t)
        inline = f.grad(t, t)
        total = tf.reduce_sum(inline[1])
    np.testing.assert_allclose([inline[0].numpy(), inline[1].numpy()], want, rtol=1e-6)
    np.testing.assert_allclose(tape.gradient(total, t).numpy(), [6.0] * 3)  # still linked


def test_a_wrt_tensor_also_read_elsewhere_gets_its_own_gradient():
    """Helper 101 on b46eb3f: the same tensor at a wrt and another position, or read as a
    global, gave the totals under a tape and a CheckError with check=True (JAX's rule: the
    argument's own partial)."""
    t = tf.constant([1.0, 2.0])
    f = tf.differentiable(lambda a, b: tf.reduce_sum(a * b ** 2), check=True)
    g = tf.differentiable(lambda a: tf.reduce_sum(a * t ** 2), check=True)
    np.testing.assert_array_equal(f.grad(t, t), [1.0, 4.0])
    np.testing.assert_array_equal(g.grad(t), [1.0, 4.0])
    with tf.GradientTape():
        np.testing.assert_array_equal(f.grad(t, t).numpy(), [1.0, 4.0])


@pytest.mark.parametrize("form", ["grad", "jacobian", "method"])
def test_a_nested_gradient_takes_a_closed_over_value_as_a_constant(form):
    """Helper 103: inside a compiled function, tf.grad(lambda z: sum(z * x))(x), its
    jacobian and a compiled function's .grad counted the closure's x as the variable too
    (6.0 for 3.0; JAX's jit gives 8.0 for the y = 2x case below, as eagerly)."""
    nested = {"grad": lambda f, v: tf.grad(f)(v), "jacobian": lambda f, v: tf.jacobian(f)(v),
              "method": lambda f, v: tf.differentiable(f).grad(v)}[form]

    def outer(x):
        y = x * 2.0
        return (tf.reduce_sum(nested(lambda z: tf.reduce_sum(z * x), x)),
                tf.reduce_sum(nested(lambda z: tf.reduce_sum(z * y), y)))

    x = np.array([1.0, 2.0])
    eager = [float(v) for v in outer(tf.constant(x))]
    assert [float(v) for v in tf.differentiable(outer)(x)] == eager == [3.0, 6.0]
