"""The debugging switch: check=True (or SRCXFORM_CHECK=1) runs the eager tape beside each
new kernel's first call and raises CheckError with both results where they differ."""

import numpy as np
import pytest

import srcxform as tf
from srcxform.kernel import Kernel


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
