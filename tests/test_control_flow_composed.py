"""Compiled control flow on the paths the first tests left out: jacobian and hessian
through a loop, parallel=True with a loop, a scan inside a differentiated loop body, a
cond inside a while inside a fori_loop, grad of grad through scan, and threads calling
one compiled loop at different trip counts. Each result is checked against the eager
tape and finite differences (or a closed form), at several trip counts through one
kernel."""

import threading

import numpy as np
import pytest
from corpus import eager_value_and_grad

import srcxform as tf
from srcxform.codegen.lower import PARALLEL_MIN
from srcxform.testing import check_grads


def central_jacobian(fn, x, eps=1e-6):
    """d fn(x) / dx by central differences: shape fn(x).shape + x.shape."""
    columns = []
    for k in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[k] = eps
        columns.append((np.asarray(fn(x + step)) - np.asarray(fn(x - step))) / (2 * eps))
    return np.moveaxis(np.array(columns), 0, -1).reshape(np.shape(fn(x)) + x.shape)


# ----- jacobian and hessian through a loop -----


def tape_hessian(fn, x, n):
    """fn's hessian wrt x by nested eager tapes (the loop runs as Python)."""
    v = tf.constant(x)
    with tf.GradientTape() as outer:
        outer.watch(v)
        with tf.GradientTape() as inner:
            inner.watch(v)
            y = fn(v, n)
        g = inner.gradient(y, v)
    return outer.jacobian(g, v)


def mixing_loop(x, n):
    """A vector map iterated n times (n traced): each element feeds the others."""
    return tf.fori_loop(0, n, lambda i, v: tf.sin(v) * x + 0.5 * v[::-1], x)


def mixing_loss(x, n):
    return tf.reduce_sum(mixing_loop(x, n) ** 2)


def test_jacobian_through_a_loop_at_every_trip_count():
    jac = tf.jacobian(mixing_loop)
    x = np.array([0.3, -0.7, 1.1])
    for n in (3, 0, 1, 6):
        got = jac(x, np.int64(n))
        with tf.GradientTape() as tape:
            v = tf.constant(x)
            tape.watch(v)
            out = mixing_loop(v, n)
        np.testing.assert_allclose(got, tape.jacobian(out, v), rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(got, central_jacobian(
            lambda z, n=n: mixing_loop(tf.constant(z), n), x), rtol=1e-6, atol=1e-8)
    assert jac.cache_info().kernels == 1
    np.testing.assert_array_equal(jac(x, np.int64(0)), np.eye(3))


@pytest.mark.slow
def test_hessian_through_a_loop_at_every_trip_count():
    hess, gradient = tf.hessian(mixing_loss), tf.grad(mixing_loss)
    x = np.array([0.3, -0.7, 1.1])
    for n in (2, 5):
        got = hess(x, np.int64(n))
        np.testing.assert_allclose(got, got.T, rtol=1e-12)
        np.testing.assert_allclose(got, central_jacobian(
            lambda z, n=n: gradient(z, np.int64(n)), x), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(got, tape_hessian(mixing_loss, x, n), rtol=1e-12)
    assert hess.cache_info().kernels == 1
    np.testing.assert_allclose(hess(x, np.int64(0)), 2 * np.eye(3))  # sum(x ** 2)


# ----- parallel=True with a loop whose body has parallel nests -----


def smoothing_loop(x, n):
    """n smoothing sweeps over a long vector: each sweep's slices are nests big enough
    to run in parallel chunks, inside the loop and in its adjoint."""
    def sweep(i, v):
        inner = 0.5 * v[1:-1] + 0.25 * (v[2:] + v[:-2])
        return tf.concat([v[:1], tf.tanh(inner) * x[1:-1], v[-1:]], 0)

    return tf.reduce_sum(tf.fori_loop(0, n, sweep, x) ** 2)


@pytest.mark.slow
def test_parallel_loop_equals_serial_and_eager():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1.0, 1.0, PARALLEL_MIN + 37)
    parallel = tf.differentiable(smoothing_loop, parallel=True)
    serial = tf.differentiable(smoothing_loop)
    assert "prange(" in parallel.source(x, np.int64(2))
    for n in (3, 1, 0):
        value, grad = parallel.value_and_grad(x, np.int64(n))
        serial_value, serial_grad = serial.value_and_grad(x, np.int64(n))
        np.testing.assert_allclose(value, serial_value, rtol=1e-12)
        np.testing.assert_allclose(grad, serial_grad, rtol=1e-12, atol=1e-15)
        eager_value, eager_grad = eager_value_and_grad(smoothing_loop, [x, n], 0)
        np.testing.assert_allclose(value, eager_value, rtol=1e-12)
        np.testing.assert_allclose(grad, eager_grad, rtol=1e-12, atol=1e-15)
    assert parallel.cache_info().kernels == 1


# ----- a scan inside a differentiated loop body -----


def scan_in_loop(w, xs, n):
    """n passes of an RNN over xs, each starting from the last pass's mean state."""
    def rnn_pass(i, h):
        hs = tf.scan(lambda a, x: tf.tanh(w * a + x), xs, initializer=h)
        return tf.reduce_mean(hs, axis=0) + 0.1 * tf.cast(i, tf.float64)

    return tf.reduce_sum(tf.fori_loop(0, n, rnn_pass, w) ** 2)


def test_scan_inside_a_loop_body_every_length_and_trip_count():
    f = tf.differentiable(scan_in_loop, wrt=(0, 1))
    rng = np.random.default_rng(1)
    w = np.array([0.8, -0.4])
    for length, n in ((4, 3), (2, 1), (5, 0), (3, 4)):
        xs = rng.uniform(-1.0, 1.0, (length, 2))
        value, grads = f.value_and_grad(w, xs, np.int64(n))
        eager_value, eager_grads = eager_value_and_grad(scan_in_loop, [w, xs, n], (0, 1))
        np.testing.assert_allclose(value, eager_value, rtol=1e-13)
        for g, expected in zip(grads, eager_grads):
            np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-15)
        if n:
            check_grads(scan_in_loop, [w, xs, np.int64(n)], wrt=(0, 1), compiled=False)
    assert f.cache_info().kernels == 1


# ----- a cond inside a while inside a fori_loop -----


def halving_sweeps(a, n):
    """For j in range(n): j + 1 trips of a while whose body halves its value or scales
    it by a, on the value's side of 1: inner trip counts that change with j."""
    def sweep(j, s):
        def steps_left(k, v):
            return k <= j

        def step(k, v):
            return k + 1, tf.cond(v > 1.0, lambda: 0.5 * v + a, lambda: v * a + 0.3)

        _, v = tf.while_loop(steps_left, step, (tf.constant(0, tf.int64), s))
        return tf.sin(v) + v

    return tf.fori_loop(0, n, sweep, a)


def test_cond_inside_while_inside_fori(monkeypatch):
    f = tf.differentiable(halving_sweeps)
    for a, n in ((0.7, 4), (1.3, 3), (0.9, 0), (1.1, 1)):
        value, grad = f.value_and_grad(np.float64(a), np.int64(n))
        np.testing.assert_allclose((value, grad), eager_value_and_grad(
            halving_sweeps, [a, n], 0), rtol=1e-13)
        if n:
            check_grads(halving_sweeps, [a, np.int64(n)], wrt=0, compiled=False)
    assert f.cache_info().kernels == 1


# ----- grad of grad through scan -----


def scanned_sines(a, xs):
    hs = tf.scan(lambda h, x: tf.sin(a * h) + x, xs, initializer=a)
    return tf.reduce_sum(hs * hs)


@pytest.mark.parametrize("jit", ["1", "0"])
def test_grad_of_grad_through_scan(jit, monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    second = tf.differentiable(tf.grad(scanned_sines))
    first = tf.grad(scanned_sines)
    rng = np.random.default_rng(2)
    for length in (5, 2, 3, 1):
        xs = rng.uniform(-1.0, 1.0, length)
        a = tf.constant(np.float64(0.6))
        with tf.GradientTape() as outer:
            outer.watch(a)
            with tf.GradientTape() as inner:
                inner.watch(a)
                y = scanned_sines(a, xs)
            g = inner.gradient(y, a)
        value, got = second.value_and_grad(np.float64(0.6), xs)
        np.testing.assert_allclose((value, got), (g, outer.gradient(g, a)), rtol=1e-12)
        eps = 1e-6
        numeric = (first(0.6 + eps, xs) - first(0.6 - eps, xs)) / (2 * eps)
        np.testing.assert_allclose(got, numeric, rtol=1e-6)
    assert second.cache_info().kernels == 2  # a length of 1 is a signature of its own


# ----- threads calling one compiled loop at different trip counts -----


def powers(x, n):
    """x ** n elementwise, by a loop of n multiplications."""
    return tf.reduce_sum(tf.fori_loop(0, n, lambda i, p: p * x, tf.ones_like(x)))


def test_threads_call_one_compiled_loop_at_different_trip_counts():
    f = tf.differentiable(powers)
    f.value_and_grad(np.ones(3), np.int64(1))  # compiled once, before the threads start
    barrier, failures = threading.Barrier(6), []

    def caller(n, size):
        x = np.linspace(0.5, 1.5, size)
        barrier.wait(60)
        for _ in range(200):
            value, grad = f.value_and_grad(x, np.int64(n))
            if not (np.isclose(value, np.sum(x ** n), rtol=1e-13)
                    and np.allclose(grad, n * x ** (n - 1), rtol=1e-13)):
                failures.append((n, size, value, grad))
                return

    threads = [threading.Thread(target=caller, args=(n, size))
               for n, size in ((0, 3), (1, 4), (2, 3), (7, 5), (30, 4), (100, 6))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not failures, failures[:3]
    assert f.cache_info().kernels == 1


# ----- a tape inside a loop body, differentiating a loop of its own -----


def descent_through_loops(a, n):
    """n steps of gradient descent on v, each step's gradient that of a loop of k + 1
    trips (a while_loop inside the fori_loop's body, under the body's tape): the outer
    gradient differentiates the inner loop's adjoint, which reads the inner stacks."""
    def descend(k, v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            _, u = tf.while_loop(lambda j, u: j <= k, lambda j, u: (j + 1, tf.sin(u) * a),
                                 (tf.constant(0, tf.int64), v))
        return v - 0.1 * tape.gradient(u, v)

    return tf.fori_loop(0, n, descend, a * 1.0)  # a * 1.0: v is never `a` itself


def test_a_tape_inside_a_loop_body_differentiates_an_inner_loop():
    f = tf.differentiable(descent_through_loops)
    for a, n in ((0.7, 3), (1.2, 1), (0.4, 5)):
        value, grad = f.value_and_grad(np.float64(a), np.int64(n))
        np.testing.assert_allclose((value, grad), eager_value_and_grad(
            descent_through_loops, [a, n], 0), rtol=1e-13)
        check_grads(descent_through_loops, [a, np.int64(n)], wrt=0, compiled=False)
    assert f.cache_info().kernels == 1


# ----- a Variable read only inside a loop body, trained by a compiled step -----


class LoopModel:
    """A step that reads its Variable only inside a fori_loop's body."""

    def __init__(self):
        self.w = tf.Variable(np.array([0.5, -0.2, 0.9]), name="w")
        self.optimizer = tf.optimizers.Adam(learning_rate=0.05)

    def train_step(self, x, n):
        with tf.GradientTape() as tape:
            y = tf.fori_loop(0, n, lambda i, c: tf.tanh(c * self.w) + x, x)
            loss = tf.reduce_sum(y ** 2)
        grads = tape.gradient(loss, [self.w])
        self.optimizer.apply(grads, [self.w])
        return loss, grads[0]


def test_a_variable_read_in_a_loop_body_gets_its_gradient():
    compiled, eager = LoopModel(), LoopModel()
    step = tf.differentiable(compiled.train_step, wait=True)
    x = np.array([0.3, -0.7, 1.1])
    for n in (3, 1, 4):
        loss, grad = step(x, np.int64(n))
        eager_loss, eager_grad = eager.train_step(tf.constant(x), tf.constant(np.int64(n)))
        np.testing.assert_allclose(loss, eager_loss, rtol=1e-13)
        np.testing.assert_allclose(grad, eager_grad, rtol=1e-12)
        assert np.all(np.asarray(grad) != 0.0)
        np.testing.assert_allclose(compiled.w.numpy(), eager.w.numpy(), rtol=1e-12)
    assert step.cache_info().kernels == 1


# ----- gradient stops inside a body: the adjoint evaluates the body again -----


def stopped(x, n):
    """A fori_loop and a cond whose bodies stop the gradient through part of them."""
    v = tf.fori_loop(0, n, lambda i, c: tf.stop_gradient(c) * x * x + 0.5 * tf.sin(c), x)
    s = tf.reduce_sum(v)
    return tf.cond(s > 0.0, lambda: s * tf.stop_gradient(s), lambda: -s)


def test_stop_gradient_inside_a_loop_and_a_branch():
    f = tf.differentiable(stopped)
    x = np.array([0.3, -0.7, 1.1])
    value, grad = f.value_and_grad(x, np.int64(1))  # v = x**3 + 0.5 sin(x), s = sum(v) > 0
    s = np.sum(x ** 3 + 0.5 * np.sin(x))
    np.testing.assert_allclose(value, s * s, rtol=1e-14)
    np.testing.assert_allclose(grad, s * (2 * x * x + 0.5 * np.cos(x)), rtol=1e-14)
    for n, sign in ((3, 1.0), (0, 1.0), (2, -1.0)):
        value, grad = f.value_and_grad(sign * x, np.int64(n))
        eager_value, eager_grad = eager_value_and_grad(stopped, [sign * x, n], 0)
        np.testing.assert_allclose(value, eager_value, rtol=1e-13)
        np.testing.assert_allclose(grad, eager_grad, rtol=1e-13)
    assert f.cache_info().kernels == 1


def test_stop_gradient_inside_a_loop_second_order(monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")  # the generated code as Python: no compile
    hess = tf.hessian(stopped)
    x = np.array([0.3, -0.7, 1.1])
    for n in (1, 3):
        np.testing.assert_allclose(hess(x, np.int64(n)), tape_hessian(stopped, x, n),
                                   rtol=1e-12)


@tf.custom_gradient
def clipped_gradient(x):
    return x * 1.0, lambda g: tf.clip_by_value(g, -0.1, 0.1)


def custom_in_a_loop(x, n):
    return tf.reduce_sum(tf.fori_loop(0, n, lambda i, c: tf.sin(clipped_gradient(c * x)), x))


def test_custom_gradient_in_a_differentiated_loop_body_is_refused(monkeypatch):
    """The loop's adjoint evaluates the body's equations again, where the gradient
    function is gone: an error, rather than the gradient of the forward operations."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    f = tf.differentiable(custom_in_a_loop)
    x = np.array([0.3, -0.7, 1.1])
    with pytest.raises(tf.TracingError, match=r"clipped_gradient\(c \* x\).*\n  "
                                              r"custom_gradient inside a compiled loop body"):
        f.grad(x, np.int64(2))
    eager = custom_in_a_loop(tf.constant(x), 2)
    np.testing.assert_allclose(f(x, np.int64(2)), eager, rtol=1e-15)  # no tape: it runs


# ----- while_loop's maximum_iterations known only at run time -----


def growth_capped(x, cap):
    """x grown until its sum passes 100, or `cap` times (cap traced)."""
    _, v = tf.while_loop(lambda k, v: tf.reduce_sum(v) < 100.0,
                         lambda k, v: (k + 1, v * 1.5 + x), (0, x), maximum_iterations=cap)
    return tf.reduce_sum(v)


def test_maximum_iterations_from_data(monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    f = tf.differentiable(growth_capped)
    x = np.array([0.3, 0.7, 1.1])
    # v = a_k x after k trips, a_k = 3 * 1.5**k - 2; its sum passes 100 after 7 trips.
    for cap, trips in ((3, 3), (0, 0), (50, 7)):
        value, grad = f.value_and_grad(x, np.int64(cap))
        factor = 3.0 * 1.5 ** trips - 2.0
        np.testing.assert_allclose(value, factor * np.sum(x), rtol=1e-14)
        np.testing.assert_allclose(grad, np.full(3, factor), rtol=1e-14)
        eager_value, eager_grad = eager_value_and_grad(growth_capped, [x, np.int64(cap)], 0)
        np.testing.assert_allclose(value, eager_value, rtol=1e-14)
        np.testing.assert_allclose(grad, eager_grad, rtol=1e-14)
    assert f.cache_info().kernels == 1
