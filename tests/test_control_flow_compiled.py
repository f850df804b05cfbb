"""Control flow that depends on data, compiled: cond on a traced predicate, while_loop,
fori_loop with a traced bound, as real branches and loops in one kernel for every trip
count, with reverse mode through them. Each result is checked against the eager tape
(the same Python run as Python) and against finite differences or a closed form; the
same kernels run as Python (SRCXFORM_JIT=0) too. (conftest's SRCXFORM_CHECK verifies
each program, its regions included, and crosschecks each kernel's first call.)"""

import re

import numpy as np
import pytest

import srcxform as tf
from srcxform.core.errors import IndexOutOfBounds, TracingError
from helpers import central_difference


@pytest.fixture(params=["numba", "python"])
def compile_mode(request, monkeypatch):
    """Numba-compiled kernels, or the same generated code run as Python."""
    monkeypatch.setenv("SRCXFORM_JIT", "1" if request.param == "numba" else "0")
    return request.param


def eager_value_and_grad(fn, *args, wrt=0):
    """fn's value and its gradient wrt args[wrt], by the eager tape."""
    args = [tf.constant(np.asarray(a, np.float64)) if i == wrt else a
            for i, a in enumerate(args)]
    with tf.GradientTape() as tape:
        tape.watch(args[wrt])
        y = fn(*args)
    return np.asarray(y), np.asarray(tape.gradient(y, args[wrt]))


def assert_eager_and_differences(f, fn, x):
    """f (fn compiled): its value and gradient at x against the eager tape's, and the
    gradient against central differences; returns the gradient."""
    value, grad = f.value_and_grad(x)
    eager_value, eager_grad = eager_value_and_grad(fn, x)
    np.testing.assert_allclose(value, eager_value, rtol=1e-13)
    np.testing.assert_allclose(grad, eager_grad, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(grad, central_difference(fn, x), rtol=1e-6, atol=1e-8)
    return grad


# ----- Newton's method: a while_loop whose trip count depends on the argument -----


def newton_sqrt(a):
    def not_converged(x, step):
        return abs(step) > 1e-13 * x

    def newton_step(x, step):
        new = 0.5 * (x + a / x)
        return new, new - x

    x, _ = tf.while_loop(not_converged, newton_step, (a, a))
    return x


def newton_trips(a):
    """How many times newton_sqrt's body runs at a (the same loop on Python floats)."""
    x, step, trips = a, a, 0
    while abs(step) > 1e-13 * x:
        new = 0.5 * (x + a / x)
        x, step, trips = new, new - x, trips + 1
    return trips


def test_newton_while_loop_one_kernel_for_trip_counts_1_to_50(compile_mode):
    f = tf.differentiable(newton_sqrt)
    points = [1.0] + [4.0 ** k * 1.3 for k in range(0, 80, 3)]
    trips = {newton_trips(a) for a in points}
    assert min(trips) == 1 and max(trips) >= 50
    for a in points:
        value, grad = f.value_and_grad(np.float64(a))
        np.testing.assert_allclose(value, np.sqrt(a), rtol=1e-14)
        np.testing.assert_allclose(grad, 0.5 / np.sqrt(a), rtol=1e-9)
    assert f.cache_info().kernels == 1  # no retrace when the trip count changes
    a = 7.0
    eager = eager_value_and_grad(newton_sqrt, a)
    np.testing.assert_allclose(f.value_and_grad(np.float64(a)), eager, rtol=1e-14)
    numeric = central_difference(lambda a: newton_sqrt(tf.constant(a)), a, 1e-6)
    np.testing.assert_allclose(f.grad(np.float64(a)), numeric, rtol=1e-7)


def test_compiled_while_loop_source_is_a_loop_with_a_growable_stack():
    source = tf.differentiable(newton_sqrt).source(np.float64(2.0))
    assert "while True:" in source and "arrays.grown(" in source
    assert re.search(r"for it\w* in range\(\w+ - 1, -1, -1\):", source)  # the adjoint


# ----- RK4 Lotka-Volterra: a fori_loop with a bound from data -----


def lotka_volterra(z, params):
    x, y = z[0], z[1]
    alpha, beta, gamma, delta = params[0], params[1], params[2], params[3]
    return tf.stack([alpha * x - beta * x * y, delta * x * y - gamma * y])


def rk4_final_state(params, z0, steps, h):
    def rk4_step(i, z):
        k1 = lotka_volterra(z, params)
        k2 = lotka_volterra(z + 0.5 * h * k1, params)
        k3 = lotka_volterra(z + 0.5 * h * k2, params)
        k4 = lotka_volterra(z + h * k3, params)
        return z + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)

    return tf.fori_loop(0, steps, rk4_step, z0)


def rk4_loss(params, z0, steps, h):
    return tf.reduce_sum(rk4_final_state(params, z0, steps, h) * np.array([1.0, 0.5]))


PARAMS = np.array([1.1, 0.4, 0.4, 0.1])
Z0 = np.array([10.0, 5.0])


@pytest.mark.slow  # 1,000 RK4 steps, as Python too: minutes on two cores
def test_rk4_lotka_volterra_1000_steps_gradient(compile_mode):
    f = tf.differentiable(rk4_loss, wrt=(0, 1))
    steps, h = np.int64(1000), 0.005
    (g_params, g_z0) = f.grad(PARAMS, Z0, steps, h)
    for k, arg in ((0, PARAMS), (1, Z0)):
        def loss_at(v, k=k):
            moved = [PARAMS, Z0]
            moved[k] = v
            return rk4_loss(tf.constant(moved[0]), tf.constant(moved[1]), int(steps), h)

        numeric = central_difference(loss_at, arg, 1e-6)
        np.testing.assert_allclose((g_params, g_z0)[k], numeric, rtol=1e-5)
    _, eager = eager_value_and_grad(rk4_loss, PARAMS, Z0, int(steps), h)
    np.testing.assert_allclose(g_params, eager, rtol=1e-10)
    # Another trip count, and none at all, through the same kernel.
    _, eager = eager_value_and_grad(rk4_loss, PARAMS, Z0, 7, h)
    np.testing.assert_allclose(f.grad(PARAMS, Z0, np.int64(7), h)[0], eager, rtol=1e-12)
    g_params, g_z0 = f.grad(PARAMS, Z0, np.int64(0), h)
    assert np.all(g_params == 0) and np.all(g_z0 == np.array([1.0, 0.5]))
    assert f.cache_info().kernels == 1


def test_fori_loop_over_a_size_is_one_loop_for_every_size():
    def cumulative_product(x):
        return tf.fori_loop(0, x.shape[0], lambda i, p: p * (1.0 + x[i]),
                            tf.constant(1.0, tf.float64))

    f = tf.differentiable(cumulative_product)
    for n in (3, 5):
        x = np.linspace(0.1, 0.9, n)
        value, grad = f.value_and_grad(x)
        eager_value, eager_grad = eager_value_and_grad(cumulative_product, x)
        np.testing.assert_allclose(value, eager_value, rtol=1e-13)
        np.testing.assert_allclose(grad, eager_grad, rtol=1e-13)
        np.testing.assert_allclose(grad, np.prod(1 + x) / (1 + x), rtol=1e-13)
    assert f.cache_info().kernels == 1
    assert re.search(r"for it\w* in range\(", f.source(np.ones(4)))


# ----- cond on a traced value -----


def piecewise(x):
    return tf.cond(x > 1.0, lambda: x * x * x, lambda: 3.0 * x - 2.0 + tf.sin(x - 1.0))


@pytest.mark.parametrize("x, slope", [(0.25, 3.0 + np.cos(-0.75)), (1.5, 3 * 1.5 ** 2),
                                      (1.0, 4.0)])
def test_piecewise_cond_on_both_sides_of_the_branch_point(x, slope, compile_mode):
    f = tf.differentiable(piecewise)
    value, grad = f.value_and_grad(np.float64(x))
    np.testing.assert_allclose((value, grad), eager_value_and_grad(piecewise, x), rtol=1e-15)
    np.testing.assert_allclose(grad, slope, rtol=1e-14)
    if x != 1.0:  # at the branch point the two one-sided slopes differ (3 and 4)
        numeric = central_difference(lambda v: piecewise(tf.constant(v)), x, 1e-7)
        np.testing.assert_allclose(grad, numeric, rtol=1e-6)


def test_cond_ir_shows_both_branches():
    text = tf.differentiable(piecewise).ir(np.float64(2.0))
    assert "= cond(" in text and "def true(" in text and "def false(" in text


# ----- bisection: a data-dependent while with a cond inside -----


def cube_root_by_bisection(a):
    """The root of t**3 = a in [0, a] (a >= 1) as a * t, t found on [0, 1]: a's
    gradient is the t found (the branch decisions are constants)."""
    def wide(lo, hi):
        return hi - lo > 1e-12

    def halve(lo, hi):
        mid = 0.5 * (lo + hi)
        return tf.cond((a * mid) ** 3 > a, lambda: (lo, mid), lambda: (mid, hi))

    lo, hi = tf.while_loop(wide, halve, (tf.constant(0.0, tf.float64),
                                         tf.constant(1.0, tf.float64)))
    return a * 0.5 * (lo + hi)


def test_bisection_while_with_a_cond_inside(compile_mode):
    f = tf.differentiable(cube_root_by_bisection)
    for a in (2.0, 30.0):
        value, grad = f.value_and_grad(np.float64(a))
        np.testing.assert_allclose(value, np.cbrt(a), rtol=1e-11)
        np.testing.assert_allclose(grad, value / a, rtol=1e-15)
        np.testing.assert_allclose((value, grad), eager_value_and_grad(
            cube_root_by_bisection, a), rtol=1e-15)
    assert f.cache_info().kernels == 1


# ----- while_loop's other forms -----


def doubling_capped(a):
    _, x = tf.while_loop(lambda i, x: x < a, lambda i, x: (i + 1, x * 2.0),
                         (0, tf.constant(1.0, tf.float64)), maximum_iterations=5)
    return x * a


def counting_from_a_constant(a):
    """The first predicate is known when tracing (x = 0.0), the next ones are not."""
    (x,) = tf.while_loop(lambda x: x < 10.0, lambda x: (x + a,), (tf.constant(0.0, tf.float64),))
    return x


@pytest.mark.parametrize("fn, a, expected", [
    (doubling_capped, 3.0, (12.0, 4.0)),
    (doubling_capped, 100.0, (3200.0, 32.0)),  # stopped by maximum_iterations
    (counting_from_a_constant, 3.0, (12.0, 4.0)),
    (counting_from_a_constant, 0.5, (10.0, 20.0)),
])
def test_maximum_iterations_and_a_predicate_traced_after_the_first_test(fn, a, expected,
                                                                        monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    assert tf.differentiable(fn).value_and_grad(np.float64(a)) == expected
    assert eager_value_and_grad(fn, a) == expected


def nested_loops(a, n):
    def outer_body(j, s):
        return tf.sin(tf.fori_loop(0, n, lambda i, p: p * a + 1.0, s))
    return tf.fori_loop(0, n, outer_body, a)


def test_a_loop_inside_a_loop_body(monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    f = tf.differentiable(nested_loops)
    for n in (3, 1):
        value, grad = f.value_and_grad(np.float64(0.3), np.int64(n))
        np.testing.assert_allclose((value, grad), eager_value_and_grad(nested_loops, 0.3, n),
                                   rtol=1e-14)
    assert f.cache_info().kernels == 1


# ----- second order: the adjoint of a loop is a loop, with an adjoint of its own -----


def power_by_loop(x):
    """x**3 by a fori_loop whose trip count is data (3, computed from x)."""
    count = tf.cast(tf.reduce_sum(x * 0.0) + 3.0, tf.int64)
    return tf.fori_loop(0, count, lambda i, p: p * x, tf.constant(1.0, tf.float64))


def power_by_checkpointed_loop(x):
    """power_by_loop with checkpoint=2: under nested tapes every carry is stored."""
    count = tf.cast(tf.reduce_sum(x * 0.0) + 3.0, tf.int64)
    return tf.fori_loop(0, count, lambda i, p: p * x, tf.constant(1.0, tf.float64),
                        checkpoint=2)


@pytest.mark.parametrize("fn, x, second", [
    (newton_sqrt, 2.0, -0.25 * 2.0 ** -1.5),
    (power_by_loop, 2.0, 6 * 2.0),
    (power_by_checkpointed_loop, 2.0, 6 * 2.0),
    (piecewise, 0.25, -np.sin(0.25 - 1.0)),
    (piecewise, 1.5, 6 * 1.5),
])
def test_grad_of_grad_through_loops_and_cond(fn, x, second, monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")  # the generated code as Python: no compile
    hessian = tf.differentiable(tf.grad(fn))
    np.testing.assert_allclose(hessian.grad(np.float64(x)), second, rtol=1e-9)
    args = tf.constant(np.float64(x))
    with tf.GradientTape() as outer:
        outer.watch(args)
        with tf.GradientTape() as inner:
            inner.watch(args)
            y = fn(args)
        g = inner.gradient(y, args)
    np.testing.assert_allclose(hessian.value_and_grad(np.float64(x)),
                               (g, outer.gradient(g, args)), rtol=1e-12)


# ----- errors -----


def test_a_body_changing_a_loop_variable_is_named():
    def grows(x):
        return tf.while_loop(lambda total, y: total < 10.0,
                             lambda total, y: (total + 1.0, tf.cast(y, tf.float32)),
                             (tf.reduce_sum(x), x))

    with pytest.raises(TracingError, match="loop variable 'y' from f64.* to f32"):
        tf.differentiable(grows)(np.ones(3))


def test_branches_of_different_shapes_are_refused():
    def mismatched(x):
        return tf.cond(tf.reduce_sum(x) > 0, lambda: x, lambda: tf.reduce_sum(x))

    with pytest.raises(TracingError, match="output 0 is f64.* from true_fn but f64"):
        tf.differentiable(mismatched)(np.ones(3))


# ----- scan: an RNN over a sequence of any length -----


def rnn_cell(w, u):
    def cell(h, x):
        return tf.tanh(tf.matmul(w, tf.expand_dims(h, 1))[:, 0] + u * x)
    return cell


def rnn_scanned(w, u, xs, h0):
    hs = tf.scan(rnn_cell(w, u), xs, initializer=h0)
    return tf.reduce_sum(hs * hs)


def rnn_unrolled(w, u, xs, h0):
    cell, h, total = rnn_cell(w, u), h0, 0.0
    for t in range(xs.shape[0]):
        h = cell(h, xs[t])
        total = total + tf.reduce_sum(h * h)
    return total


def test_rnn_scan_matches_the_unrolled_program(compile_mode):
    rng = np.random.default_rng(0)
    w, u, h0 = 0.5 * rng.standard_normal((3, 3)), rng.standard_normal(3), rng.standard_normal(3)
    scanned = tf.differentiable(rnn_scanned, wrt=(0, 1, 2, 3))
    for length in (6, 2):
        xs = rng.standard_normal((length, 3))
        value, grads = scanned.value_and_grad(w, u, xs, h0)
        args = [tf.constant(a) for a in (w, u, xs, h0)]
        with tf.GradientTape() as tape:
            tape.watch(args)
            unrolled = rnn_unrolled(*args)
        np.testing.assert_allclose(value, unrolled, rtol=1e-13)
        for g, expected in zip(grads, tape.gradient(unrolled, args)):
            np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-15)
    assert scanned.cache_info().kernels == 1  # one loop for every sequence length
    if compile_mode == "numba":  # the compiled unrolled program agrees too
        unrolled_grads = tf.differentiable(rnn_unrolled, wrt=(0, 1, 2, 3)).grad(w, u, xs, h0)
        for g, expected in zip(grads, unrolled_grads):
            np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-15)


def test_assigning_a_variable_in_a_loop_body_is_refused():
    v = tf.Variable(np.float64(1.0))

    def assigns(a, n):
        def body(i, p):
            v.assign(p)
            return p * a
        return tf.fori_loop(0, n, body, a)

    with pytest.raises(TracingError,
                       match=r"v.assign\(p\)\n  assigning a Variable inside a compiled loop"):
        tf.differentiable(assigns)(np.float64(0.3), np.int64(3))


def test_a_predicate_of_more_than_one_element_is_refused():
    def ambiguous(x):
        return tf.cond(x > 0, lambda: x, lambda: -x)

    with pytest.raises(ValueError, match=r"cond: the predicate has shape \(3,\)"):
        tf.differentiable(ambiguous)(np.ones(3))


# ----- checkpoint=k: every k-th carry stored, the iterations between recomputed -----


def three_loops(p, z0, xs, steps, k):
    """A fori_loop reading its index, a while_loop with an int counter and a trip count
    from the data, and a scan whose elements have a gradient: each checkpointed every k."""
    z = tf.fori_loop(0, steps, lambda i, z: z + 0.1 * tf.tanh(
        p[:2] * z + p[2] * tf.cast(i, tf.float64)), z0, checkpoint=k)
    count, w = tf.while_loop(lambda c, w: tf.reduce_sum(w) < 30.0,
                             lambda c, w: (c + 1, w * (1.2 + 0.1 * tf.sin(w))),
                             (0, z * z + 1.0), checkpoint=k)
    hs = tf.scan(lambda h, x: tf.sin(h * p[3] + x), xs, initializer=w, checkpoint=k)
    return tf.reduce_sum(hs * hs) + tf.reduce_sum(w) * tf.cast(count, tf.float64)


CHECKPOINTS = [None, 1, 3, 50]  # 3 divides none of the trip counts; 50 exceeds them all


@pytest.mark.slow
def test_checkpointed_loops_give_the_stored_gradients_to_the_bit(compile_mode):
    p, z0 = np.array([0.7, -0.4, 0.3, 0.9]), np.array([1.1, 0.8])
    xs = np.random.default_rng(1).standard_normal((5, 2))
    f = tf.differentiable(three_loops, wrt=(0, 1, 2))
    found = {(k, steps): f.value_and_grad(p, z0, xs, np.int64(steps), k)
             for k in CHECKPOINTS for steps in (7, 2)}
    for (k, steps), (value, grads) in found.items():
        stored_value, stored_grads = found[None, steps]
        assert value == stored_value
        for g, stored in zip(grads, stored_grads):
            np.testing.assert_array_equal(g, stored)
    assert f.cache_info().kernels == len(CHECKPOINTS)  # k is part of the kernel's key
    source = f.source(p, z0, xs, np.int64(7), 3)
    assert source.count("% 3 == 0") == 3 and "for segment_index in range(" in source
    assert f.ir(p, z0, xs, np.int64(7), 3).count("checkpoint=3") == 3  # the loops' params
    # Eager loops record every iteration whatever k is: the same tape, the same numbers.
    eager = {}
    for k in (None, 3):
        args = [tf.constant(a) for a in (p, z0, xs)]
        with tf.GradientTape() as tape:
            tape.watch(args)
            y = three_loops(*args, 7, k)
        eager[k] = [np.asarray(g) for g in tape.gradient(y, args)]
    for g, g_none, compiled in zip(eager[3], eager[None], found[3, 7][1]):
        np.testing.assert_array_equal(g, g_none)
        np.testing.assert_allclose(compiled, g, rtol=1e-12)
    with pytest.raises(ValueError, match="fori_loop: checkpoint must be a positive int"):
        f.grad(p, z0, xs, np.int64(7), 0)


def drifting(z0, steps, k):
    return tf.reduce_sum(tf.fori_loop(0, steps, lambda i, z: z + 0.01 * tf.sin(z), z0,
                                      checkpoint=k))


def drifting_gradient(z0, steps):
    """d drifting / d z0: the product of the steps' derivatives, 1 + 0.01 cos z."""
    z, grad = z0.copy(), np.ones_like(z0)
    for _ in range(steps):
        z, grad = z + 0.01 * np.sin(z), grad * (1 + 0.01 * np.cos(z))
    return grad


@pytest.mark.slow
def test_checkpoint_cuts_the_stacks_peak_memory(monkeypatch):
    """Measured with tracemalloc on the generated code run as Python, its allocations
    NumPy's; and as loop_stacks reports it."""
    import tracemalloc

    from srcxform.runtime import arrays
    from srcxform.passes.structured import LoopStacks

    monkeypatch.setenv("SRCXFORM_JIT", "0")
    monkeypatch.setattr(arrays, "empty", lambda shape, dtype: np.empty(shape, dtype))
    f = tf.differentiable(drifting)
    z0, steps = np.linspace(-3.0, 3.0, 500), np.int64(200)
    peaks, grads = {}, {}
    for k in (None, 10):
        f.grad(z0, steps, k)  # traced and generated before the measurement
        tracemalloc.start()
        grads[k] = f.grad(z0, steps, k)
        peaks[k] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    np.testing.assert_array_equal(grads[10], grads[None])
    np.testing.assert_allclose(grads[None], drifting_gradient(z0, 200), rtol=1e-13)
    row = 500 * 8  # a carry of 500 float64
    assert peaks[None] > 200 * row > 4 * peaks[10]
    (stored,), (checkpointed,) = f.loop_stacks(z0, steps, None), f.loop_stacks(z0, steps, 10)
    assert stored == LoopStacks("fori_loop", row, None) and stored.bytes_per_iteration == row
    assert checkpointed == LoopStacks("fori_loop", row, 10)
    assert checkpointed.bytes_per_iteration == row / 10
    assert (stored.peak_bytes(200), checkpointed.peak_bytes(200)) == (200 * row, 30 * row)
    assert checkpointed.peak_bytes(5) == 6 * row  # a checkpoint and a 5-row segment


def test_an_array_carry_updated_in_place_is_never_shared():
    """Array carries whose new value a loop nest computes are filled into a spare buffer,
    the two swapping: a carry that takes another's old value (or a view of it) must not
    then see it overwritten."""
    def swapping(x, n):
        def body(i, c):
            a, b, total = c
            return b, a + 1.0, total + tf.reduce_sum(a * b)
        return tf.fori_loop(0, n, body, (x, 2.0 * x, tf.constant(0.0, tf.float64)))[2]

    f = tf.differentiable(swapping)
    x = np.array([0.5, -1.0, 2.0])
    value, grad = f.value_and_grad(x, np.int64(5))
    eager_value, eager_grad = eager_value_and_grad(swapping, x, 5)
    np.testing.assert_allclose(value, eager_value, rtol=1e-14)
    np.testing.assert_allclose(grad, eager_grad, rtol=1e-14)
    assert re.search(r"\w+ = \w+\.copy\(\)", f.source(x, np.int64(5)))  # the adjoint's


def smoothed_energy(x):
    y, total = x[0], 0.0 * x[0]
    for i in range(1, len(x)):
        y = 0.9 * y + 0.1 * x[i]
        total += y ** 2 + x[i] * x[i - 1]
    return total


def row_energy(x, w):
    total = 0.0 * w[0]
    for i in range(x.shape[0]):
        total += tf.reduce_sum(tf.tanh(x[i] * w))
    return total


@pytest.mark.parametrize("fn, shape, reads", [(smoothed_energy, (7,), 2),
                                              (row_energy, (5, 3), 1)])
def test_a_loop_reading_rows_adds_their_gradients_in_place(fn, shape, reads, compile_mode):
    """The adjoint of a loop that reads x[i] carries x's gradient and adds each trip's row
    into its buffer (add_row): a trip costs its row, where adding a scatter of it to the
    whole gradient cost len(x), a quadratic gradient (helper 137). The row is read and
    added straight, with no vector of one index (arrays.gather) made each trip."""
    f = tf.differentiable(fn)
    w = np.array([0.5, -1.5, 2.0])
    for rows in (1, 2, shape[0]):
        x = np.linspace(-1.0, 1.5, rows * int(np.prod(shape[1:]))).reshape((rows,) + shape[1:])
        args = (x, w) if fn is row_energy else (x,)
        value, grad = f.value_and_grad(*args)
        assert x.tolist() == np.linspace(-1.0, 1.5, x.size).reshape(x.shape).tolist()
        eager_value, eager_grad = eager_value_and_grad(fn, *args)
        np.testing.assert_allclose(value, eager_value, rtol=1e-13)
        np.testing.assert_allclose(grad, eager_grad, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(grad, central_difference(
            lambda v, rest=args[1:]: fn(v, *rest), x), rtol=1e-6, atol=1e-8)
    source = f.source(*args)
    assert "scatter_add" not in source and source.count("arrays.add_row(") == reads
    # Each read checks its index in the kernel's own code (a helper that may raise is
    # called, not inlined: 5 ns a trip), with no vector of one index (arrays.gather).
    assert "arrays.gather(" not in source and "raise arrays.IndexOutOfBounds('gather'" in source


def shifted_sum(x, k):
    total = 0.0 * x[0]
    for i in range(len(x)):
        total += x[i + k] * x[i]
    return total


def test_a_loop_reading_past_its_array_raises_naming_the_line(compile_mode):
    f = tf.differentiable(shifted_sum)
    x = np.arange(1.0, 5.0)
    np.testing.assert_allclose(f.grad(x, -1), [6.0, 4.0, 6.0, 4.0])  # x[-1] from the end
    for k in (1, -5):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"index (4|-5) is out of bounds.*\n  at .*total \+= x\[i \+ k\]"):
            f.grad(x, k)
    assert str(IndexOutOfBounds("gather", 7, 4)) == \
        "gather: index 7 is out of bounds for a dimension of size 4"



def weighted_cells(x, w):
    total = 0.0 * w[0]
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            total += x[i, j] * w[j] * x[i, j - 1]
    return total


def three_deep(x, w):
    total = 0.0 * w[0]
    for i in range(x.shape[0]):
        inner = 0.0 * w[0]
        for j in range(x.shape[1]):
            for k in range(x.shape[2]):
                inner += tf.sin(x[i, j, k]) * w[k]
        total += inner * inner
    return total


def checkpointed_rows(x, w):
    def row(i, total):
        def cell(j, acc):
            return acc + x[i, j] * w[j]
        return total + tf.fori_loop(0, x.shape[1], cell, 0.0 * w[0]) ** 2
    return tf.fori_loop(0, x.shape[0], row, 0.0 * w[0], checkpoint=2)


def two_inner_loops(x, w):
    total = 0.0 * w[0]
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            total += x[i, j] * w[j]
        for j in range(x.shape[1]):
            total += tf.sin(x[i, j])
    return total


def row_and_cells(x, w):
    total = 0.0 * w[0]
    for i in range(x.shape[0]):
        total += tf.reduce_sum(x[i] * w) ** 2
        for j in range(x.shape[1]):
            total += x[i, j] * x[i, j - 1]
    return total


def branching_rows(x, w):
    total = 0.0 * x[0, 0]
    for i in range(x.shape[0]):
        if x[i, 0] > 0:
            for j in range(x.shape[1]):
                total += x[i, j] * x[i, j] * w[j]
        elif x[i, 1] > 0:
            total += x[i, 1] * w[0]
        else:
            total += w[1]  # nothing of x: that branch adds zeros
    return total


@pytest.mark.parametrize("fn, shape", [(weighted_cells, (5, 3)), (three_deep, (3, 2, 4)),
                                       (checkpointed_rows, (5, 3)), (two_inner_loops, (4, 3)),
                                       (row_and_cells, (4, 3)), (branching_rows, (6, 3))])
def test_nested_loops_add_their_gradients_into_one_buffer(fn, shape, compile_mode):
    """The adjoint of `for i: for j: ... x[i, j]` runs the inner loop once per row, each
    run adding into x's gradient from zeros, then added to the outer loop's carry: a whole
    array of zeros and a sum of it per row, a gradient quadratic in the rows. The inner
    loop now starts from the outer carry and adds into its buffer (control.py's
    _into_loop): no array the size of x is made inside a loop. Two inner loops in a row,
    or a row's scatter beside one, add in turn (helper 142); so do the branches of an if
    (each made x's gradient of zeros and a sum of it per row)."""
    f = tf.differentiable(fn)
    rng = np.random.default_rng(3)
    w = rng.normal(size=shape[-1])
    for rows in (1, 2, shape[0]):
        x = rng.normal(size=(rows,) + shape[1:])
        value, grad = f.value_and_grad(x, w)
        eager_value, eager_grad = eager_value_and_grad(fn, x, w)
        np.testing.assert_allclose(value, eager_value, rtol=1e-13)
        np.testing.assert_allclose(grad, eager_grad, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(grad, central_difference(lambda v: fn(v, w), x),
                                   rtol=1e-6, atol=1e-8)
        w_grad = tf.differentiable(fn, wrt=1).grad(x, w)
        np.testing.assert_allclose(w_grad, central_difference(lambda v, x=x: fn(x, v), w),
                                   rtol=1e-6, atol=1e-8)
    whole = "(" + ", ".join(f"n{a}" for a in range(len(shape))) + ")"
    source = f.source(x, w)
    assert whole in source  # the gradient's zeros, made once before the loops
    assert [line for line in source.splitlines() if whole in line and
            line.startswith(" " * 8)] == []
    # x[i, j] reads row i in place (a view), not a copy of it per element (helper 142)
    assert (re.search(r"\]\.copy\(\)", source) is None) == (fn is not row_and_cells)
    # and its gradient is added at [i, j] (add_at), not as a row of zeros per element
    inside = [line for line in source.splitlines() if line.startswith(" " * 8)]
    assert not any("arrays.zeros(" in line for line in inside)
    assert any(re.search(r"\w\[\w+, \w+(, \w+)?\] \+= \w+$", line) for line in inside)


def fixed_rows(x):
    total = 0.0 * x[0, 0]
    for j in range(x.shape[1]):
        total += x[0, j] * x[-1, j]
    return total


def fixed_columns(x):
    total = 0.0 * x[0, 0]
    for i in range(x.shape[0]):
        total += x[i, 0] * tf.sin(x[i, -1])
    return total


@pytest.mark.parametrize("fn", [fixed_rows, fixed_columns])
def test_a_fixed_index_beside_a_loops_index_reads_and_adds_one_element(fn, compile_mode):
    """x[0, j] in a loop over j read column j of x's transpose (a copy), and its adjoint
    added an array the size of x each trip (630 ms at 800 x 800, cubic in the side); x[i,
    0] added a row of zeros. Each index now reads a row in turn, a fixed one too: a view
    of the row, and the element's gradient added at [0, j]."""
    f = tf.differentiable(fn)
    x = np.random.default_rng(5).normal(size=(4, 5))
    assert_eager_and_differences(f, fn, x)
    inside = [line for line in f.source(x).splitlines() if line.startswith(" " * 8)]
    assert not any(part in line for line in inside for part in (".T", ".copy()", "zeros("))


def column_cells(x):
    total = 0.0 * x[0, 0]
    for j in range(x.shape[1]):
        col = x[:, j]
        for i in range(x.shape[0]):
            total += col[i] * col[i - 1]
    return total


def column_sums(x):
    total = 0.0 * x[0, 0, 0]
    for j in range(x.shape[1]):
        total += tf.reduce_sum(tf.sin(x[:, j]) * x[:, j - 1])  # (n0, n2) of (n0, n1, n2)
    return total


def last_axis_slices(x):
    total = 0.0 * x[0, 0, 0]
    for k in range(x.shape[2]):
        if x[0, 0, k] > 0:
            total += tf.reduce_sum(x[:, :, k] ** 2)
    return total


@pytest.mark.parametrize("fn, shape", [(column_cells, (4, 5)), (column_sums, (3, 4, 2)),
                                       (last_axis_slices, (2, 3, 5))])
def test_a_column_reads_gradient_adds_into_a_view_of_the_carry(fn, shape, compile_mode):
    """x[:, j] in a loop reads row j of x's transpose; its adjoint scattered the column's
    gradient into zeros shaped as x.T and transposed them back, an array the size of x
    each trip (39.6 ms at 256 x 256, 605 ns an element). The column is added into the
    carry's own buffer now, seen with its axes swapped (add_rows' axes): 1.3 ms."""
    f = tf.differentiable(fn)
    x = np.random.default_rng(6).normal(size=shape)
    assert_eager_and_differences(f, fn, x)
    inside = [line for line in f.source(x).splitlines() if line.startswith(" " * 8)]
    assert not any("zeros(" in line for line in inside)


def too_many_indices(x):
    total = 0.0 * x[0, 0]
    for i in range(x.shape[0]):
        total += x[i, 0, 0]
    return total


def test_too_many_indices_beside_a_loops_index_are_counted_as_written():
    # Helper 144: counted after the traced index took its axis ("(2) for a value of rank
    # 1"), with no line of the user's
    with pytest.raises(IndexError, match=r"too_many_indices|total \+= x\[i, 0, 0\]") as err:
        tf.differentiable(too_many_indices).grad(np.ones((3, 2)))
    assert "too many indices (3) for a value of rank 2" in str(err.value)


def test_an_inner_loop_is_not_run_again_for_its_trip_count_alone():
    """The adjoint of an outer loop ran each row's inner loop again, its values unread,
    only for the count of its trips, which its bounds give."""
    x, w = np.ones((3, 4)), np.ones(4)
    source = tf.differentiable(weighted_cells).source(x, w)
    assert len(re.findall(r"# (?!grad of)\S+: total \+= x\[i, j\]", source)) == 1


def broadcast_rows(x):
    acc = tf.zeros((x.shape[0], x.shape[1]), tf.float64)
    for i in range(x.shape[0]):
        row = tf.zeros((1, x.shape[1]), tf.float64)
        for j in range(x.shape[1]):
            row = tf.tensor_scatter_nd_add(row, [[0]], [x[i] * x[i, j]])
        acc = acc + row  # (n, m) + (1, m): each row of acc gets it
    return tf.reduce_sum(acc * acc)


def wrapping_counts(c):
    acc = tf.zeros(c.shape, tf.float64)
    for i in range(c.shape[0]):
        k = tf.zeros(c.shape, tf.int8)
        for j in range(c.shape[0]):
            k = tf.tensor_scatter_nd_add(k, [[0]], tf.cast([c[j]], tf.int8))
        acc = acc + k  # int8 sums wrap before they are added
    return acc


def test_an_inner_loop_summing_in_another_shape_or_dtype_keeps_its_own_sum(compile_mode):
    """Helper 142: an inner loop's carry that the outer add broadcasts ((1, m) into (n, m))
    or casts (int8 into float64) was started from the outer carry all the same: its rows
    all landed in row 0 (747 for 1494), its int8 sums did not wrap (900 for 132)."""
    x = np.arange(6.0).reshape(2, 3) / 4
    value, grad = tf.differentiable(broadcast_rows).value_and_grad(x)
    eager_value, eager_grad = eager_value_and_grad(broadcast_rows, x)
    np.testing.assert_allclose(value, eager_value, rtol=1e-13)
    np.testing.assert_allclose(grad, eager_grad, rtol=1e-13)
    c = np.full(3, 100.0)
    np.testing.assert_array_equal(tf.differentiable(wrapping_counts, wrt=())(c),
                                  wrapping_counts(tf.constant(c)))

def _switched(i, x):
    return tf.switch_case(i, [lambda: x * 2.0, lambda: x * x, lambda: -x])


def _switched_with_default(i, x):
    return tf.switch_case(i, {1: lambda: x * x, 0: lambda: x * 2.0}, default=lambda: x + 100.0)


def test_switch_case_one_kernel_for_every_index_with_tensorflows_fallbacks():
    # An index out of range runs the default, else the last branch (TensorFlow's rule).
    compiled = tf.differentiable(_switched, wrt=1)
    defaulted = tf.differentiable(_switched_with_default, wrt=1)
    for i, value, slope, other, other_slope in [(-1, -3.0, -1.0, 103.0, 1.0),
                                                (0, 6.0, 2.0, 6.0, 2.0), (1, 9.0, 6.0, 9.0, 6.0),
                                                (2, -3.0, -1.0, 103.0, 1.0),
                                                (7, -3.0, -1.0, 103.0, 1.0)]:
        assert float(_switched(i, 3.0)) == float(compiled(np.int32(i), 3.0)) == value
        assert float(compiled.grad(np.int32(i), 3.0)) == slope
        assert float(defaulted(np.int32(i), 3.0)) == float(_switched_with_default(i, 3.0)) == other
        assert float(defaulted.grad(np.int32(i), 3.0)) == other_slope
    assert compiled.cache_info().kernels == 2  # the value's and the gradient's, every index
    with pytest.raises(ValueError, match="keys must be the ints 0 to 1"):
        tf.switch_case(0, [(0, lambda: 1.0), (2, lambda: 2.0)])
    with pytest.raises(TypeError, match="branch_index must be an integer scalar"):
        tf.switch_case(1.0, [lambda: 1.0])



def _carried_unchanged(x):
    return tf.while_loop(lambda i, c: i < 3, lambda i, c: (i + 1, c), (0, x))[1]


def test_while_loop_returns_its_array_argument_as_a_tensor_compiled_too():
    # tf.while_loop makes its loop variables tensors; compiled, a carry the body returned
    # unchanged came back as the caller's ndarray (helper 90).
    x = np.ones(2)
    for run in (_carried_unchanged, tf.differentiable(_carried_unchanged)):
        assert isinstance(run(x), tf.Tensor)


def test_while_loop_reads_a_variable_carry_as_a_tensor_even_without_trips():
    # Helper 91: 346790a kept a Variable leaf itself, so a loop of no trips returned the
    # Variable, whose later assign changed the result.
    v = tf.Variable([1.0, 2.0])
    result = tf.while_loop(lambda a: False, lambda a: (a,), [v])[0]
    v.assign([5.0, 5.0])
    assert not isinstance(result, tf.Variable)
    np.testing.assert_array_equal(result.numpy(), [1.0, 2.0])


def test_a_python_number_carry_is_not_cast_where_that_loses_it():
    # Helper 127: a loop variable starting as a Python number was cast to the body's
    # dtype even from float to int or int to bool, so a loop of no trips returned -1.5 as
    # -1 (NaN as int32's minimum); TensorFlow and JAX raise, and so does srcxform now.
    def sentinel(k, n, start):
        s = start
        i = 0
        while i < n:
            s = k[i] > 4 if isinstance(start, int) else k[i]
            i = i + 1
        return s

    compiled = tf.differentiable(sentinel, wrt=())
    for start in (-1.5, float("nan"), 2, 2**40):
        with pytest.raises(tf.TracingError, match="changes loop variable 's' from"):
            compiled(np.array([4, 5], np.int32), np.int64(0), start)
    # Helper 130: an int the body's uint8 cannot hold, and one int64 cannot.
    with pytest.raises(tf.TracingError, match="changes loop variable 's' from i64"):
        compiled(np.array([4, 5], np.uint8), np.int64(0), -1)
    with pytest.raises(tf.TracingError, match="'s' starts as 1208925819614629174706176, past"):
        compiled(np.array([4.0, 5.0]), np.int64(0), 2**80)
    # Helper 132: tf.while_loop makes the start an int32 tensor first; its -1 became 255.
    with pytest.raises(tf.TracingError, match="changes loop variable 'b' from i32"):
        tf.function(lambda n, u8: tf.while_loop(
            lambda i, b: i < n, lambda i, b: (i + 1, tf.cast(b, tf.uint8) + u8), [0, -1])[1])(
                np.int32(0), np.uint8(1))
    with pytest.raises(tf.TracingError, match="changes loop variable 's' from f32"):
        tf.differentiable(lambda k: tf.while_loop(
            lambda i, s: i < tf.shape(k)[0], lambda i, s: (i + 1, k[i]), (0, 0.5)))(
                np.array([], np.int32))


def cond_of_one_value_twice(x):
    total = tf.zeros([], x.dtype)
    for j in range(x.shape[0]):
        a = x[j]
        b = tf.identity(a)
        total = tf.cond(a > 0, lambda: total + a * b, lambda: total)  # noqa: B023 (run now)
    return total


def loop_of_one_value_twice(x):
    total = tf.zeros([], x.dtype)
    for j in range(x.shape[0]):
        a, b = tf.sin(x[j]), tf.sin(x[j])
        total = tf.fori_loop(0, 2, lambda i, t: t + a * b, total)  # noqa: B023 (run now)
    return total


def columns_equal_at_one_column(x):
    total = tf.zeros([], x.dtype)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            a, b = x[:, j], x[:, -j - 1]
            if x[i, j] > 0:
                total += tf.reduce_sum(a * b)
    return total


@pytest.mark.parametrize("fn, shape", [(cond_of_one_value_twice, (3,)),
                                       (loop_of_one_value_twice, (3,)),
                                       (columns_equal_at_one_column, (3, 1))])
def test_a_region_taking_one_value_twice_counts_its_gradient_once(fn, shape, compile_mode):
    """Helper 146: inside an enclosing loop, CSE made `a` and `b = tf.identity(a)` (or
    two equal columns) one value, which the cond or inner loop then took twice; its rule
    watched both and gave each the whole gradient: twice the gradient and the tangent
    (x = [1, 2, -1]: [4, 8, 0] for [2, 4, 0])."""
    x = np.random.default_rng(8).uniform(0.5, 1.5, size=shape) * np.where(
        np.arange(shape[0]) % 3 == 2, -1, 1).reshape((-1,) + (1,) * (len(shape) - 1))
    f = tf.differentiable(fn)
    grad = assert_eager_and_differences(f, fn, x)
    v = np.ones(shape)
    np.testing.assert_allclose(tf.jvp(f, (x,), (v,))[1], np.sum(grad * v), rtol=1e-12)


def captured_rows(x, w):
    total = 0.0 * w[0]
    for i in range(x.shape[0]):
        total += tf.reduce_sum(tf.sin(x[i]) * w)
    return total


def unread_carry(x, w):
    total, scale, running = 0.0 * w[0], 1.0 + 0.0 * w[0], 0.0 * w[0]
    for i in range(x.shape[0]):
        running = running + x[i, 0]  # read by total: stays
        total += running * tf.reduce_sum(x[i] * w)
        scale = scale * tf.exp(x[i, 1])  # read by nothing after the loop
    return total


@pytest.mark.parametrize("fn", [captured_rows, unread_carry])
def test_a_loop_carries_only_what_is_read_after_it(fn, compile_mode):
    """A loop's adjoint carried the gradient of every float it captures: a kernel for
    x's gradient summed w's too, a trip (sin(x[i]) and a row added each trip, read by
    nothing); a user's loop computed a carry nothing read. passes/carries.py drops a
    carry whose result nothing reads and that no carry read comes from."""
    rng = np.random.default_rng(7)
    x, w = rng.normal(size=(5, 3)), rng.normal(size=3)
    for wrt in (0, 1):
        f = tf.differentiable(fn, wrt=wrt)
        value, grad = f.value_and_grad(x, w)
        eager_value, eager_grad = eager_value_and_grad(fn, x, w, wrt=wrt)
        np.testing.assert_allclose(value, eager_value, rtol=1e-13)
        np.testing.assert_allclose(grad, eager_grad, rtol=1e-13, atol=1e-15)
        source = f.source(x, w)
        assert "np.exp(" not in source  # scale, read by nothing
        if wrt == 0:
            adjoint = source[source.rindex("# ---- adjoint"):]
            assert "np.sin(" not in adjoint  # only w's gradient read sin(x[i])



def column_terms(x):
    total = 0.0 * x[0, 0]
    for j in range(x.shape[1]):
        col = x[:, j]
        total += tf.reduce_sum(tf.sin(col) * x[:, j - 1]) + tf.reduce_sum(col * col * col)
    return total


def test_an_hvp_through_a_loop_carries_no_array_it_does_not_read(compile_mode):
    """Helper 146: tf.hvp of a loop over columns was quadratic (56 -> 284 ns an element
    from 100 x 100 to 800 x 800): its kernel carried a cotangent of x's shape that
    nothing read after the loop, rewritten whole every trip. carries.py drops it."""
    rng = np.random.default_rng(9)
    x, v = rng.normal(size=(4, 5)), rng.normal(size=(4, 5))
    hvp = tf.hvp(column_terms)
    grad = tf.differentiable(column_terms).grad
    eps = 1e-6
    np.testing.assert_allclose(hvp(x, v), (grad(x + eps * v) - grad(x - eps * v)) / (2 * eps),
                               rtol=1e-6, atol=1e-7)
    nested = [line for line in hvp.source(x, v).splitlines() if line.startswith(" " * 16)]
    assert not any("[i0, i1]" in line for line in nested)  # no loop nest over x in the loop


def jacobian_through_an_if(x, w):
    with tf.GradientTape() as tape:
        tape.watch(x)
        acc = 0.0 * w
        for i in range(x.shape[0]):
            if x[i] > 0:
                acc = acc + x[i] ** 2 * w
    return tf.reduce_sum(tape.jacobian(acc, x))


def test_the_gradient_of_a_jacobian_through_a_loop_with_an_if(compile_mode):
    """Helper 145: the gradient raised check_sized's TracingError (an array shaped as a
    loop's stack made while tracing): the loop's adjoint made zeros for the cotangent of
    each stacked output, given or not. It makes rows of the given ones only now."""
    x, w = np.array([1.0, -2.0, 3.0]), np.array([0.5, 2.0])
    f = tf.differentiable(jacobian_through_an_if)
    value, grad = f.value_and_grad(x, w)
    assert value == 2 * (1.0 + 3.0) * 2.5
    np.testing.assert_array_equal(grad, [5.0, 0.0, 5.0])  # 2 sum(w) where x > 0


def sines(x, w):
    a = w * 1.0
    for i in range(x.shape[0]):
        a = tf.sin(a) * x[i]
    return a


def test_a_third_derivative_by_reverse_mode_raises_naming_it():
    """Helper 147: grad of grad of grad through a compiled loop adds stack-shaped
    cotangents outside the loop; its TracingError spoke of forward mode only. It names
    this case, and the hessian of the gradient (forward over reverse) computes it."""
    x, w = np.array([0.5, 1.2, -0.7]), 0.8
    first = tf.differentiable(sines, wrt=1)
    second = tf.differentiable(lambda x, w: first.grad(x, w), wrt=1)
    third = tf.differentiable(lambda x, w: second.grad(x, w), wrt=1)
    with pytest.raises(tf.errors.TracingError, match="third derivative by reverse mode"):
        third.grad(x, w)
    hessian = tf.hessian(lambda x, w: first.grad(x, w), wrt=1)(x, w)
    eps = 1e-4
    np.testing.assert_allclose(hessian, (second.grad(x, w + eps) - second.grad(x, w - eps))
                               / (2 * eps), rtol=1e-6)


def temporary_per_trip(x):
    """A window's gradient: two small arrays a trip, read within it only."""
    total = 0.0 * x[0]
    for i in range(len(x) - 2):
        w = x[i:i + 3]
        total += tf.reduce_sum(w * w) * w[1]
    return total


def temporaries_kept(x):
    """Arrays made in a trip (each read by a product, so made whole) that outlive it: a
    carry, a view carried, an inner loop's init and a branch's operand carried, a stacked
    row; beside arrays that do not (allocated once)."""
    m = tf.reshape(x[:9], (3, 3))

    def body(i, c):
        a, b, v, total = c
        t = tf.sin(a * x[i])  # carried
        u = tf.tanh(b) * 0.5  # carried as a view of it
        s = tf.cos(v) + x[i]  # an inner loop's init, whose result is carried
        d = tf.exp(-t * t)  # dropped at the trip's end
        inner = tf.fori_loop(0, i % 2, lambda j, z: z * 0.9, s)
        kept = tf.cond(total > 0.0, lambda: t * 1.0, lambda: a + 0.0)
        products = [tf.linalg.matvec(m, w) for w in (t, u, s, d)]
        return (kept, tf.reshape(u, (3,))[::-1], inner,
                total + tf.reduce_sum(tf.stack(products) * d))
    a, b, v, total = tf.fori_loop(0, x.shape[0] - 9, body, (x[:3], x[1:4], x[:3] * 2.0,
                                                             tf.constant(0.0, tf.float64)))
    rows = tf.scan(lambda acc, r: tf.tanh(tf.linalg.matvec(m, acc) * r),
                   tf.reshape(x[:6], (2, 3)), x[1:4])
    return tf.reduce_sum(a * b * v) + total + tf.reduce_sum(rows)


def test_an_array_a_trip_makes_and_drops_is_allocated_once(compile_mode):
    # Allocated before the loop and filled at every trip (codegen/control.py _hoisted):
    # a window's gradient made two small arrays a trip, most of its time.
    f = tf.differentiable(temporary_per_trip)
    x = np.linspace(-1.0, 1.5, 9)
    assert_eager_and_differences(f, temporary_per_trip, x)
    kernel = f.source(x).split("# Bound per kernel")[0]
    loop = re.search(r"for \w+ in range\(\w+ - 1, -1, -1\):", kernel).start()  # the adjoint's
    assert len(re.findall(r"= arrays\.empty\(\(3,\)", kernel[:loop])) == 2
    assert "arrays.empty" not in kernel[loop:]


def test_an_array_a_trip_makes_and_keeps_has_its_own(compile_mode):
    f = tf.differentiable(temporaries_kept)
    for trips in (1, 2, 3, 8):
        assert_eager_and_differences(f, temporaries_kept, np.linspace(-0.7, 0.9, trips + 9))
