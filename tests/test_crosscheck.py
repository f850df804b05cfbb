"""The debugging switch: check=True (or SRCXFORM_CHECK=1) runs the eager tape beside each
kernel's first call with new shapes and raises CheckError with both results where they
differ beyond the rounding the computation allows."""

import numpy as np
import pytest

import srcxform as tf
from srcxform.core.tensor import eager_tensor
from srcxform.jit.kernel import Kernel


def _loss(w, x):
    return tf.reduce_sum(tf.tanh(x * w))


def test_a_right_kernel_passes_the_check_and_its_results_are_kept():
    f = tf.differentiable(_loss, check=True)
    x = np.linspace(-1.0, 1.0, 5)
    value, grad = f.value_and_grad(np.ones(5), x)
    assert value == pytest.approx(np.tanh(x).sum())
    np.testing.assert_allclose(grad, x * (1 - np.tanh(x) ** 2))


def test_a_wrong_kernel_raises_with_both_results(monkeypatch):
    run = Kernel.run

    def wrong(self, leaves):
        value, grads = run(self, leaves)
        return value * 2.0, grads

    monkeypatch.setattr(Kernel, "run", wrong)
    f = tf.differentiable(_loss, check=True)
    x = np.linspace(0.1, 1.0, 5)
    with pytest.raises(tf.CheckError, match="disagrees with the eager tape") as err:
        f.value_and_grad(np.ones(5), x)
    message = str(err.value)
    assert "result 0" in message and "result 1" not in message
    assert f"{2 * np.tanh(x).sum():.8f}"[:8] in message  # the compiled value, shown


def test_the_environment_switch_checks_as_the_argument_does(monkeypatch):
    monkeypatch.setenv("SRCXFORM_CHECK", "1")
    monkeypatch.setattr(Kernel, "run", lambda self, leaves: np.float64(0.0))
    f = tf.differentiable(lambda x: tf.reduce_sum(x * x))
    with pytest.raises(tf.CheckError):
        f(np.arange(3.0))


def test_a_checked_training_step_updates_its_variables_once():
    w = tf.Variable(np.float64(1.0))
    steps = tf.Variable(np.float64(0.0))

    @tf.differentiable(check=True)
    def step(x):
        with tf.GradientTape() as tape:
            loss = (w * x - 3.0) ** 2
        w.assign_sub(0.1 * tape.gradient(loss, w))
        steps.assign_add(1.0)
        return loss

    assert step(2.0).numpy() == pytest.approx(1.0)
    assert w.numpy() == pytest.approx(1.0 - 0.1 * 2 * (2.0 - 3.0) * 2.0)
    assert steps.numpy() == 1.0
    step(2.0)  # the kernel is checked once: the second call is the kernel's alone
    assert steps.numpy() == 2.0


def test_a_kernel_is_checked_again_at_each_new_size(monkeypatch):
    """A kernel takes any size: one right at the size it was traced at may be wrong at the
    next, which a warm call there would otherwise run unchecked."""
    run = Kernel.run

    def wrong_at_four(self, leaves):
        value, grads = run(self, leaves)
        return (value * 2.0 if len(leaves[1]) == 4 else value), grads

    monkeypatch.setattr(Kernel, "run", wrong_at_four)
    f = tf.differentiable(_loss, check=True)
    for _ in range(2):  # the second call is a warm one
        f.value_and_grad(np.ones(3), np.linspace(0.1, 1.0, 3))
    with pytest.raises(tf.CheckError, match="disagrees with the eager tape"):
        f.value_and_grad(np.ones(4), np.linspace(0.1, 1.0, 4))
    with pytest.raises(tf.CheckError):  # still unchecked there: it raises again
        f.value_and_grad(np.ones(4), np.linspace(0.1, 1.0, 4))


@pytest.mark.parametrize("check", [True, False])
def test_each_shape_is_checked_once(check, monkeypatch):
    monkeypatch.delenv("SRCXFORM_CHECK", raising=False)
    eager_runs = []

    def loss(x):
        if eager_tensor(x):  # the eager tape's run, not the trace (a traced x is a Tensor)
            eager_runs.append(x.shape[0])
        return tf.reduce_sum(x * x)

    f = tf.differentiable(loss, check=check)
    for n in (3, 3, 4, 4, 3, 5):
        assert f.grad(np.arange(float(n))) == pytest.approx(2 * np.arange(float(n)))
    assert eager_runs == ([3, 4, 5] if check else [])
    assert ("checked_shapes" in f.grad.__code__.co_names) == check  # unchecked, no test


def _cancelling(n=100_000):
    """Terms of about 1e8 whose sum cancels to rounding noise."""
    rng = np.random.default_rng(0)
    x = rng.uniform(1e8, 2e8, n) * rng.choice([-1.0, 1.0], n)
    return x - x.mean()


def test_a_sum_that_cancels_passes_within_its_rounding():
    """The kernel and NumPy add the terms in other orders: both sums are rounding noise
    the size of eps times the terms (1e-3 here), not of the result (1e-4)."""
    x = _cancelling()
    f = tf.differentiable(lambda x: tf.reduce_sum(x) * 2.0, check=True)
    bound = x.size * np.finfo(np.float64).eps * np.abs(x).sum()
    assert abs(f(x).numpy() - 2 * np.sum(x)) < bound
    value, grad = f.value_and_grad(x)
    assert abs(value - 2 * np.sum(x)) < bound
    np.testing.assert_array_equal(grad, np.full(x.size, 2.0))
    # Squared, the sum's rounding reaches the gradient: 2 * sum(x) at each element.
    squared = tf.differentiable(lambda x: tf.reduce_sum(x) ** 2, check=True)
    assert np.all(np.abs(squared.grad(x) - 2 * np.sum(x)) < 2 * bound)


def test_a_sum_missing_a_term_raises(monkeypatch):
    run = Kernel.run

    def drops_the_last_term(self, leaves):
        value, grads = run(self, leaves)
        return value - 2.0 * leaves[0][-1], grads

    monkeypatch.setattr(Kernel, "run", drops_the_last_term)
    f = tf.differentiable(lambda x: tf.reduce_sum(x) * 2.0, check=True)
    with pytest.raises(tf.CheckError, match="beyond rounding"):
        f.value_and_grad(_cancelling())


def test_a_small_error_in_a_well_conditioned_sum_raises(monkeypatch):
    """Where the relative tolerance (1e-7) fails, the noisy reruns measure what rounding
    can do, and add little for a sum of terms of one sign: one part in a million is wrong."""
    run = Kernel.run

    def a_millionth_off(self, leaves):
        value, grads = run(self, leaves)
        return value * (1 + 1e-6), grads

    monkeypatch.setattr(Kernel, "run", a_millionth_off)
    f = tf.differentiable(_loss, check=True)
    with pytest.raises(tf.CheckError):
        f.value_and_grad(np.ones(1000), np.linspace(0.1, 1.0, 1000))
