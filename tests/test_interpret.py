"""Tier 0 (tiered.py) computes a call's results by running the kernel's traced program on
NumPy (srcxform/jit/interpret.py), not the function: its results must be the kernel's, for
every program the compiler makes, control flow (stacks, checkpointed segments) included,
and at sizes other than the traced ones."""

import numpy as np
import pytest
from corpus import CASES, assert_trees_close
from hypothesis import HealthCheck, given, note, settings
from test_control_flow_compiled import newton_sqrt, three_loops
from test_random_programs import make_program, programs

import srcxform as tf
from srcxform.jit import tiered


def interpreted_and_compiled(f, form, *args):
    """The form's results at args by the interpreted program, then by its kernel."""
    kernel, leaves = f._kernel(form, args, {})
    return tiered.results(kernel, leaves), kernel.run(leaves)


@pytest.mark.slow  # every corpus program compiled in each form
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_corpus_interpreted_is_the_kernel(case):
    f = tf.differentiable(case.fn, wrt=case.wrt)
    for form in ("value", "value_and_grad"):
        interpreted, compiled = interpreted_and_compiled(f, form, *case.args)
        assert_trees_close(interpreted, compiled, what=f"{case.name} {form}")


@pytest.mark.slow
def test_control_flow_interpreted_is_the_kernel():
    f = tf.differentiable(three_loops, wrt=(0, 1, 2))
    p, z0 = np.array([0.7, -0.4, 0.3, 0.9]), np.array([1.1, 0.8])
    xs = np.random.default_rng(1).standard_normal((5, 2))
    for k in (None, 3):
        for steps in (7, 2):  # one kernel, other trip counts
            interpreted, compiled = interpreted_and_compiled(
                f, "value_and_grad", p, z0, xs, np.int64(steps), k)
            assert_trees_close(interpreted, compiled, rtol=1e-13, what=f"k={k}")
    g = tf.differentiable(newton_sqrt)
    for a in (2.0, 50.0):
        interpreted, compiled = interpreted_and_compiled(g, "value_and_grad", a)
        assert_trees_close(interpreted, compiled)


def test_other_sizes_and_a_cond_interpreted():
    def f(x, w):
        y = tf.reduce_sum(x[1:] * w[:-1])
        return tf.cond(y > 0, lambda: y * y, lambda: -y) + tf.reduce_mean(tf.reshape(x, [-1]))

    compiled = tf.differentiable(f, wrt=(0, 1))
    for n in (4, 9):
        for sign in (1.0, -1.0):
            x, w = np.linspace(0.1, 1.0, n), sign * np.ones(n)
            interpreted, native = interpreted_and_compiled(compiled, "value_and_grad", x, w)
            assert_trees_close(interpreted, native)
    assert compiled.cache_info().kernels == 1


def test_variables_are_assigned_once_as_by_the_kernel():
    v = tf.Variable(np.zeros(2))

    def step(x):
        v.assign_add(x)
        return tf.reduce_sum(v)

    f = tf.differentiable(step)
    kernel, leaves = f._kernel("value", (np.ones(2),), {})
    assert float(tiered.results(kernel, leaves)) == 2.0
    np.testing.assert_array_equal(v.numpy(), [1.0, 1.0])
    assert float(kernel.run(leaves)) == 4.0
    np.testing.assert_array_equal(v.numpy(), [2.0, 2.0])


@pytest.mark.slow
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_interpreted_are_their_kernels(program):
    """The random programs of test_random_programs.py, which draw every elementwise,
    reduction and structural primitive (the same examples: their kernels are cached)."""
    steps, inputs = program
    note(f"steps: {steps}")
    f = tf.differentiable(make_program(steps, len(inputs)), wrt=tuple(range(len(inputs))))
    interpreted, compiled = interpreted_and_compiled(f, "value_and_grad", *inputs)
    assert_trees_close(interpreted, compiled, rtol=1e-12, atol=1e-14)
