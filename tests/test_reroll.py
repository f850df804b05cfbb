"""Rows computed alike and joined become one loop (srcxform/passes/reroll.py): the kernel's size
does not grow with the number of rows, and values and gradients are the eager tape's."""

import time

import numpy as np
import pytest

import srcxform as tf
from srcxform.jit import compiler
from srcxform.core.dims import guard_conditions
from srcxform.passes.reroll import MIN_ROWS

from objectives import gmm, gmm_inputs, gmm_numpy

RNG = np.random.default_rng(7)


def _eager(fn, args):
    variables = [tf.Variable(a) for a in args]
    with tf.GradientTape() as tape:
        y = fn(*variables)
    return y.numpy(), [g.numpy() for g in tape.gradient(y, variables)]


def _agree(fn, *shapes, jit=True, monkeypatch=None):
    """fn's compiled value and gradients equal the eager tape's, at each list of shapes in
    turn, through one Differentiable (a kernel traced at one size runs at the next)."""
    compiled = tf.differentiable(fn, wrt=tuple(range(len(shapes[0]))), wait=True)
    for call in shapes:
        args = [RNG.normal(size=s) for s in call]
        value, grads = compiled.value_and_grad(*args)
        want, want_grads = _eager(fn, args)
        np.testing.assert_allclose(value, want, rtol=1e-12)
        for g, w in zip(grads, want_grads):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)
    return compiled


def _rows_of(n):
    def f(x, mu):
        return tf.reduce_sum(tf.stack(tuple(x[i] - mu for i in range(n))) ** 2)
    return f


def test_a_stack_of_rows_is_one_loop_whatever_the_rows():
    x, mu = np.ones((64, 2)), np.ones((5, 2))
    small = tf.differentiable(_rows_of(8)).source(x, mu)
    large = tf.differentiable(_rows_of(56)).source(x, mu)
    assert "fori_loop" in tf.differentiable(_rows_of(8)).ir(x, mu)
    assert len(large.splitlines()) == len(small.splitlines())


@pytest.mark.slow
@pytest.mark.parametrize("jit", ["1", "0"])
def test_stacked_rows_give_the_tapes_values_and_gradients(jit, monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", jit)

    def f(x, mu):  # rows from 1 on, a transcendental, a captured constant, axis -1
        rows = [tf.tanh(x[i + 1] * 2.0) * np.arange(3.0) - mu for i in range(6)]
        return tf.reduce_sum(tf.stack(rows, -1) ** 2) + tf.reduce_max(tf.stack(rows))

    def g(x, mu):  # every other row, joined along an existing axis
        return tf.reduce_sum(tf.concat([x[2 * i] * mu for i in range(5)], axis=1) ** 3)

    def h(x, mu):  # two sources, each at its own stride
        return tf.reduce_sum(tf.stack([x[i] * mu[2 * i] for i in range(4)]) ** 2)

    for fn, shapes in [(f, [(13, 3), (5, 3)]), (g, [(12, 3), (5, 3)]), (h, [(4, 3), (8, 3)])]:
        compiled = _agree(fn, shapes, [(d + 3, 3) for d, _ in shapes])
        assert "fori_loop" in compiled.ir(*[np.ones(s) for s in shapes]), fn.__name__


def test_a_training_step_over_rows_updates_as_the_tape_does():
    w = tf.Variable(np.linspace(0.5, 1.5, 3))
    opt = tf.optimizers.SGD(0.1)

    def loss_of(x):
        return tf.reduce_sum(tf.stack([tf.sigmoid(x[i] * w) for i in range(6)]) ** 2)

    @tf.differentiable(wait=True)
    def step(x):
        with tf.GradientTape() as tape:
            loss = loss_of(x)
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        return loss

    x = RNG.normal(size=(6, 3))
    assert "fori_loop" in step.ir(x)
    eager_w = tf.Variable(w.numpy())
    for _ in range(3):
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(tf.stack([tf.sigmoid(x[i] * eager_w) for i in range(6)]) ** 2)
        eager_w.assign_sub(0.1 * tape.gradient(y, eager_w))
        step(x)
    np.testing.assert_allclose(w.numpy(), eager_w.numpy(), rtol=1e-12)


def test_rows_that_are_not_copies_are_joined_as_they_are():
    def different_ops(x):
        return tf.reduce_sum(tf.stack([x[i] * 2.0 if i % 2 else x[i] + 1.0 for i in range(6)]))

    def not_evenly_spaced(x):
        return tf.reduce_sum(tf.stack([x[i] * 2.0 for i in (0, 1, 2, 4, 5)]))

    def too_few(x):
        return tf.reduce_sum(tf.stack([x[i] * 2.0 for i in range(MIN_ROWS - 1)]))

    x = np.ones((6, 2))
    for fn in (different_ops, not_evenly_spaced, too_few):
        assert "fori_loop" not in tf.differentiable(fn).ir(x), fn.__name__
        _agree(fn, [(6, 2)], [(9, 2)])


def test_a_row_index_guards_the_size_once():
    """x[i] for i < n guards x's rows against n once, not n times: the warm entry tests
    the strongest condition only."""
    a = ("size", 0)
    guards = [(i, "<", a, True) for i in range(100)]
    assert guard_conditions(guards) == [(("-", a, 100), ">=")]


def _trace_and_generate(n):
    x, mu = np.ones((n, 2)), np.ones((5, 2))
    start = time.perf_counter()
    compiler.generate_kernel(_rows_of(n), "grad", (x, mu), {}, [x, mu], None, wrt=0,
                             parallel=False, as_eager=False)
    return time.perf_counter() - start


def test_tracing_and_generating_grow_no_faster_than_the_program():
    """The compiler-scaling issue's guard, without Numba: trace, passes and codegen at
    n = 100 rows take at most 15 times their time at n = 10 (the best of three, so a busy
    machine's pause is not counted)."""
    _trace_and_generate(10)  # imports and first-use costs
    small = min(_trace_and_generate(10) for _ in range(3))
    large = min(_trace_and_generate(100) for _ in range(3))
    assert large <= 15 * small, (small, large)


@pytest.mark.slow
def test_a_gaussian_mixture_written_with_python_loops_compiles_as_loops():
    """Our own version of GradBench's GMM objective (tests/objectives.py): its rows and
    its components are stacks of copies, so its kernel is the same size at every n, and
    its value and gradient are NumPy's and the eager tape's."""
    names = ("alpha", "mu", "q", "l", "x")
    compiled = tf.differentiable(lambda alpha, mu, q, l, x: gmm(tf, alpha, mu, q, l, x),
                                 wrt=(0, 1, 2, 3), wait=True)
    sources = []
    for n in (12, 40):
        inputs = gmm_inputs(3, 4, n)
        args = [inputs[a] for a in names]
        value, grads = compiled.value_and_grad(*args)
        np.testing.assert_allclose(value, gmm_numpy(**inputs), rtol=1e-12)
        x = tf.constant(inputs["x"])
        want, want_grads = _eager(lambda *p, x=x: gmm(tf, *p, x), args[:4])
        np.testing.assert_allclose(value, want, rtol=1e-12)
        for g, w in zip(grads, want_grads):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
        sources.append(compiled.source(*args))
    # range(n) made n copies, so each n is traced apart, but the kernel is no longer.
    assert len(sources[0].splitlines()) == len(sources[1].splitlines())
    assert "fori_loop" in compiled.ir(*args)
