"""fori_loop over bounds known when tracing (Python ints), compiled: one loop in the kernel
whose index is a traced weak int64, as jax.lax.fori_loop keeps a loop for static bounds,
computing what the eager Python loop computes (values, gradients of every order); a body
that needs i as a Python int unrolls, as it did, leaving nothing of the attempt behind.
The kernels run as Python (SRCXFORM_JIT=0) but for one Numba test; conftest's
SRCXFORM_CHECK crosschecks each against the eager tape besides."""

import re
import warnings

import numpy as np
import pytest

import srcxform as tf
from srcxform.ad.trace import Tracer
from srcxform.passes.structured import unrolling
from srcxform.core.errors import TracingError
from helpers import central_difference, value_and_two_orders

X = np.array([0.3, -0.7, 1.1, 0.5, -0.2])
M = np.linspace(-1.0, 1.0, 15).reshape(5, 3)
# (lower, upper), static arguments: zero, one and two trips, a start past 0, and an empty
# range going down.
RANGES = [(0, 0), (0, 1), (0, 2), (2, 5), (0, 5), (3, 1)]


@pytest.fixture(autouse=True)
def python_kernels(monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")


def loops(ir):
    """How many fori_loops the program's forward part has."""
    return ir.split("---- adjoint ----")[0].count("= fori_loop(")


def eager_value_and_grad(fn, x, *rest):
    v = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(v)
        y = fn(v, *rest)
    return np.asarray(y), np.asarray(tape.gradient(y, v, unconnected_gradients="zero"))


# ----- rolled bodies: the index read, computed with, and carried around -----


def accumulate(x, lower, upper):
    """x[i] * x[i - 1] summed: x[-1] at i = 0, as Python's index wraps."""
    return tf.fori_loop(lower, upper, lambda i, c: c + x[i] * x[i - 1],
                        tf.constant(0.0, tf.float64))


def row_reads(x, lower, upper):
    """Rows of a matrix read by the index, a vector carried."""
    m = tf.reshape(tf.concat([x, x * x, tf.sin(x)], 0), (3, 5))
    m = tf.transpose(m)  # (5, 3): a row per trip
    v = tf.fori_loop(lower, upper, lambda i, v: tf.tanh(v * m[i]) + m[i], m[0] * 0.5)
    return tf.reduce_sum(v ** 2)


def several_leaves(x, lower, upper):
    """A dict of a vector and a tuple carried; the index in an integer op."""
    def body(i, state):
        b, c = state["bc"]
        return {"a": state["a"] * 0.9 + b * c, "bc": (tf.sin(state["a"]) * c, c + x[i % 3])}

    out = tf.fori_loop(lower, upper, body, {"a": x[:2], "bc": (x[1:3], x[2])})
    return tf.reduce_sum(out["a"]) + tf.reduce_sum(out["bc"][0]) * out["bc"][1]


def nested(x, lower, upper):
    """A fori_loop over Python ints in the body of another (both rolled), reading i."""
    def outer(i, v):
        return tf.fori_loop(1, 3, lambda j, w: tf.sin(w) * x[j] + 0.1 * i, v)

    return tf.reduce_sum(tf.fori_loop(lower, upper, outer, x) ** 2)


def index_arithmetic(x, lower, upper):
    """c * i: the index is a weak int, so the float32 carry stays float32."""
    c = tf.cast(x, tf.float32)
    v = tf.fori_loop(lower, upper, lambda i, v: v * 0.5 + c * i - tf.cast(i // 2, tf.float32), c)
    return tf.reduce_sum(v * v)


BODIES = [accumulate, row_reads, several_leaves, nested, index_arithmetic]


@pytest.mark.parametrize("fn", BODIES)
def test_rolled_loop_computes_the_eager_values_and_gradients(fn):
    f = tf.differentiable(fn)
    for lower, upper in RANGES:
        value, grad = eager_value_and_grad(fn, X, lower, upper)
        got_value, got_grad = f.value_and_grad(X, lower, upper)
        rtol = 1e-6 if fn is index_arithmetic else 1e-13
        np.testing.assert_allclose(got_value, value, rtol=rtol, atol=1e-14)
        np.testing.assert_allclose(got_grad, grad, rtol=rtol, atol=1e-14)
        assert np.asarray(got_value).dtype == value.dtype
        trips = upper - lower
        inner = fn is nested and trips > 0  # its inner loop, of two trips, rolls too
        assert loops(f.ir(X, lower, upper)) == (trips > 1) + inner, (lower, upper)
    single = fn is index_arithmetic  # float32: a wider step, a looser match
    np.testing.assert_allclose(f.grad(X, 0, 5), central_difference(
        lambda z: fn(tf.constant(z), 0, 5), X, 1e-2 if single else 1e-6),
        rtol=1e-3 if single else 1e-5, atol=1e-7)


def test_bounds_that_are_tensors_known_when_tracing():
    def fn(x):
        return accumulate(x, tf.constant(1), tf.constant(2) * 2)

    f = tf.differentiable(fn)
    assert loops(f.ir(X)) == 1
    np.testing.assert_allclose(f(X), X[1] * X[0] + X[2] * X[1] + X[3] * X[2], rtol=1e-15)


def test_the_kernel_does_not_grow_with_the_trip_count():
    f = tf.differentiable(row_reads)
    assert len(f.ir(X, 0, 5).splitlines()) == len(f.ir(X, 0, 2).splitlines())
    assert len(f.source(X, 0, 5)) == len(f.source(X, 0, 2))


def test_index_is_a_python_int_eagerly_and_traced_once_compiled():
    seen = []

    def fn(x, lower, upper):
        return tf.fori_loop(lower, upper, lambda i, v: seen.append(i) or v * x[i], x)

    fn(tf.constant(X), 0, 3)
    assert seen == [0, 1, 2] and all(type(i) is int for i in seen)
    seen.clear()
    np.testing.assert_allclose(tf.differentiable(fn)(X, 0, 3), X * X[0] * X[1] * X[2])
    traced = [i for i in seen if isinstance(i, Tracer)]  # (SRCXFORM_CHECK runs it eagerly too)
    assert len(traced) == 1 and traced[0].dtype == np.int64 and traced[0].aval.weak


@pytest.mark.parametrize("checkpoint", [1, 2])
def test_checkpointed_static_loop_has_the_same_gradient(checkpoint):
    def fn(x, k):
        return tf.reduce_sum(tf.fori_loop(0, 5, lambda i, v: tf.sin(v) * x + 0.1 * i, x,
                                          checkpoint=k) ** 2)

    f = tf.differentiable(fn)
    np.testing.assert_array_equal(f.grad(X, checkpoint), f.grad(X, None))


@pytest.mark.parametrize("lower, upper, k", [(1, 3, 1), (2, 7, 2), (5, 8, 7)])
def test_checkpointed_loop_from_a_nonzero_lower_bound(lower, upper, k):
    """The stack's row is (i - lower): written unbracketed, `i - lower % k` kept no rows
    and the adjoint read uninitialized memory (a segfault past the stack's end)."""
    def fn(x, lower, upper):
        return tf.fori_loop(lower, upper, lambda i, c: c * x[i] + x[i - 1], x[0],
                            checkpoint=k)

    x = np.linspace(1.5, 3.0, 9)
    value, grad = eager_value_and_grad(fn, x, lower, upper)
    f = tf.differentiable(fn)
    for bounds in [(lower, upper), (np.int64(lower), np.int64(upper))]:  # static, run time
        got_value, got_grad = f.value_and_grad(x, *bounds)
        np.testing.assert_allclose(got_value, value, rtol=1e-14)
        np.testing.assert_allclose(got_grad, grad, rtol=1e-14)


def test_the_weak_index_takes_a_narrow_carrys_dtype():
    """Eagerly, i is a Python int: uint8 arithmetic wraps and float32 rounds each step."""
    a = np.array([3, 200, 7, 9], np.uint8)
    x = np.linspace(0.1, 1.0, 6).astype(np.float32)

    def narrow(a, x):
        wrapped = tf.fori_loop(0, 5, lambda i, c: (c * 7 + i) // 3, a)
        rounded = tf.fori_loop(0, 5, lambda i, c: c + x[i] * i, x[0] * 0)
        return wrapped, rounded

    f = tf.differentiable(narrow)
    for got, want in zip(f(a, x), narrow(tf.constant(a), tf.constant(x))):
        assert got.dtype == want.numpy().dtype
        np.testing.assert_array_equal(got, want.numpy())


# ----- higher orders: the adjoint and tangent loops recompute the body at a weak i -----


def vector_loop(x):
    """Four outputs of three inputs (jacobian: forward mode), i read and computed with in
    float32 (float32 while i is weak in every recomputation)."""
    c = tf.cast(x, tf.float32)
    v = tf.fori_loop(0, 4, lambda i, v: tf.sin(v) * c[i % 3] + 0.5 * i * v, c)
    return tf.cast(tf.concat([v, v[:1] * c[2]], 0), tf.float64)


def test_jacobian_and_hessian_through_a_rolled_loop():
    x = X[:3]
    v = tf.constant(x)
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(v)
        with tf.GradientTape() as inner:
            inner.watch(v)
            out = vector_loop(v)
            loss = tf.reduce_sum(out ** 2)
        g = inner.gradient(loss, v)
    np.testing.assert_allclose(tf.jacobian(vector_loop)(x), outer.jacobian(out, v),
                               rtol=1e-6)
    hessian = tf.hessian(lambda z: tf.reduce_sum(vector_loop(z) ** 2))
    np.testing.assert_allclose(hessian(x), outer.jacobian(g, v), rtol=1e-5)
    assert loops(tf.differentiable(lambda z: tf.reduce_sum(vector_loop(z))).ir(x)) == 1


def test_forward_mode_in_a_compiled_function_through_a_rolled_loop():
    def jvp_sum(x):
        with tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)) as acc:
            y = vector_loop(x)
        return tf.reduce_sum(acc.jvp(y))

    f = tf.differentiable(jvp_sum)
    np.testing.assert_allclose(f(X[:3]), jvp_sum(tf.constant(X[:3])), rtol=1e-6)
    assert not re.search(r"f64\[n0\] = (multiply|add)", f.ir(X[:3]))  # all float32


def test_gradient_of_a_gradient_through_a_rolled_loop():
    def fn(x):  # float32 c * i: f32 only while i is weak in every recomputation
        c = tf.cast(x, tf.float32)
        return tf.cast(tf.fori_loop(1, 4, lambda i, v: v * tf.sin(c) + c * i, c), tf.float64)

    x = np.float64(0.7)
    _, g, gg = value_and_two_orders(fn, x)
    second = tf.differentiable(tf.grad(fn))
    np.testing.assert_allclose(second(x), g, rtol=1e-6)
    np.testing.assert_allclose(second.grad(x), gg, rtol=1e-6)
    assert "f64[] = multiply" not in second.ir(x)  # c * i recomputed as traced, in float32


# ----- a body that needs i as a Python int unrolls, as before -----


def python_fori(lower, upper, body, init):
    """The loop fori_loop stands for, as plain Python: what the fallback must trace."""
    val = init
    for i in range(lower, upper):
        val = body(i, val)
    return val


K = tf.constant([2.0, 3.0, 5.0])


def ranged(i, v):
    for _ in range(i):
        v = v * 0.5
    return v


PYTHON_INDEX = {
    "int": lambda x, i, v: v * x[int(i)],
    "branch": lambda x, i, v: v * 2.0 if i == 0 else v + x,
    "list index": lambda x, i, v: v + [x, 2.0 * x][i % 2],
    "shape": lambda x, i, v: v + tf.reduce_sum(tf.ones([i + 1], tf.float64)),
    # a constant read at the traced i (a gather capturing K) before int(i) fails
    "after a constant": lambda x, i, v: v * K[i] + x[int(i)],
}


def looped(loop, body):
    def fn(x):
        return tf.reduce_sum(loop(0, 3, lambda i, v: body(x, i, v), x[:3]))
    return fn


def test_a_range_over_the_index_in_a_helper_the_body_calls_stays_a_loop():
    """`for _ in range(i)` in a helper: converted where the body calls it (TensorFlow's
    recursive conversion), a loop inside the loop; it unrolled the loop before."""
    x = X[:3]
    rolled, unrolled = (tf.differentiable(looped(loop, lambda x, i, v: ranged(i, v) + x))
                        for loop in (tf.fori_loop, python_fori))
    assert loops(rolled.ir(x)) == 2 and loops(unrolled.ir(x)) == 0
    np.testing.assert_allclose(rolled(x), unrolled(x), rtol=1e-14)
    np.testing.assert_allclose(rolled.grad(x), unrolled.grad(x), rtol=1e-14)


@pytest.mark.parametrize("name", PYTHON_INDEX)
def test_body_needing_a_python_index_unrolls_silently_as_before(name):
    body = PYTHON_INDEX[name]
    x = X[:3]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = tf.differentiable(looped(tf.fori_loop, body))
        ir = f.ir(x)
    assert loops(ir) == 0
    # Nothing of the attempt is left: the program is the plain Python loop's.
    assert ir == tf.differentiable(looped(python_fori, body)).ir(x)
    value, grad = eager_value_and_grad(looped(tf.fori_loop, body), x)
    np.testing.assert_allclose(f.value_and_grad(x)[0], value, rtol=1e-13)
    np.testing.assert_allclose(f.grad(x), grad, rtol=1e-13)


def test_loop_reading_no_traced_value_is_computed_when_tracing():
    def fn(x):
        return x * tf.fori_loop(0, 4, lambda i, v: v * 2.0 + i, 1.0)

    f = tf.differentiable(lambda x: tf.reduce_sum(fn(x)))
    assert loops(f.ir(X)) == 0
    np.testing.assert_allclose(f(X), np.sum(X) * 27.0)  # 1, 2, 5, 12, 27


def test_value_leaked_from_a_rolled_body_raises():
    """As JAX's UnexpectedTracerError: the body is traced once, its values are its own."""
    def fn(x):
        kept = []
        tf.fori_loop(0, 3, lambda i, v: kept.append(v * x) or v + 1.0, x)
        return tf.reduce_sum(kept[0])

    with pytest.raises(TracingError, match="loop body is used after its trace ended"):
        tf.differentiable(fn)(X)


def test_unrolling_keeps_the_copies_for_a_target_without_loops():
    """srcxform/cuda lowers no structured loop: its trace unrolls, i a Python int."""
    with unrolling():
        ir = tf.differentiable(row_reads).ir(X, 0, 5)
    assert loops(ir) == 0
    assert loops(tf.differentiable(row_reads).ir(X, 0, 5)) == 1


def test_autograph_python_range_still_unrolls():
    def fn(x):
        v = x
        for i in range(3):
            v = v * x[i]
        return tf.reduce_sum(v)

    f = tf.differentiable(fn)
    assert loops(f.ir(X)) == 0
    np.testing.assert_allclose(f(X), np.sum(X * X[0] * X[1] * X[2]))


# ----- Numba: the weak index in compiled code -----


@pytest.mark.slow
def test_numba_kernel_of_a_rolled_loop(monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "1")
    f = tf.differentiable(index_arithmetic)
    for lower, upper in [(0, 5), (3, 1)]:
        value, grad = eager_value_and_grad(index_arithmetic, X, lower, upper)
        got_value, got_grad = f.value_and_grad(X, lower, upper)
        assert np.asarray(got_value).dtype == np.float32
        np.testing.assert_allclose(got_value, value, rtol=1e-6)
        np.testing.assert_allclose(got_grad, grad, rtol=1e-6)
    g = tf.differentiable(accumulate)
    np.testing.assert_allclose(g.grad(X, 0, 5), eager_value_and_grad(accumulate, X, 0, 5)[1],
                               rtol=1e-13)


def test_several_traced_indices_and_an_ellipsis_or_new_axis_around_one(monkeypatch):
    # Helpers 105 and 106: m[i, i] in a loop, x[..., i], x[None, i] and x[i, j] of argmax
    # and argmin raised TypeError compiled ("a traced integer among ints and slices").
    def picks(x):
        i = tf.argmax(tf.reduce_sum(x, axis=(1, 2)))
        j = tf.argmin(tf.reduce_sum(x, axis=(0, 2)))
        diagonal = tf.fori_loop(0, 2, lambda k, s: s + x[k, k, k] + x[..., k][0, 0], 0.0)
        return (tf.reduce_sum(x[i, j]) + tf.reduce_sum(x[..., j]) + diagonal
                + 2.0 * tf.reduce_sum(x[None, i]) + tf.reduce_sum(x[i, ..., j]))

    m = np.arange(24.0).reshape(2, 3, 4)
    i, j = 1, 0
    want = (m[i, j].sum() + m[..., j].sum() + m[0, 0, 0] + m[1, 1, 1] + m[0, 0, 0]
            + m[0, 0, 1] + 2.0 * m[None, i].sum() + m[i, ..., j].sum())
    value, grad = tf.differentiable(picks).value_and_grad(m)
    x = tf.constant(m)
    with tf.GradientTape() as tape:
        tape.watch(x)
        eager = picks(x)
    assert value == float(eager) == want
    np.testing.assert_array_equal(grad, tape.gradient(eager, x).numpy())
    # Beside an array index NumPy puts the indexed axes first (x[0, :, idx] is (2, 3)):
    # refused, as eagerly (helper 111: it gave (3, 2)). Without the eager cross-check
    # these tests run with, which would raise eager's error first.
    monkeypatch.setenv("SRCXFORM_CHECK", "0")
    with pytest.raises(TypeError, match="one integer-array index"):
        tf.differentiable(lambda x, i, idx: x[i, :, idx])(m, np.array(0), np.array([0, 2]))


# ----- windows: a slice the index slides, x[i:i + 2] -----


def pairs(x):
    """x[i:i + 2] over a range of sizes: a block of 2 at each trip."""
    acc = tf.constant(0.0, tf.float64)
    for i in range(x.shape[0] - 1):
        acc += tf.reduce_sum(x[i:i + 2] ** 2) * x[i]
    return acc


def centred(x):
    """x[i - 1:i + 2] from 1, in a tf.fori_loop; a block read by an index after."""
    return tf.fori_loop(1, x.shape[0] - 1,
                        lambda i, c: c + tf.reduce_sum(tf.sin(x[i - 1:i + 2])) * x[i - 1:i + 2][2],
                        tf.constant(0.0, tf.float64))


def columns(x):
    """A window on the second axis of a matrix, with the rows all taken."""
    m = tf.reshape(x, (2, -1))
    acc = tf.constant(0.0, tf.float64)
    for j in range(1, m.shape[1] - 1):
        acc += tf.reduce_sum(m[:, j - 1:j + 1] * m[1, j])
    return acc


def outer_index_inside(x):
    """The enclosing loop's index slides the window of a loop inside it."""
    acc = tf.constant(0.0, tf.float64)
    for i in range(x.shape[0] - 2):
        acc = tf.fori_loop(0, 2, lambda j, c, i=i: c + tf.reduce_sum(x[i + 1:i + 3] * x[j]),
                           acc)
    return acc


def spellings(x):
    """TensorFlow's int32 index (tf.range), a step, a range going down, a bound from
    tf.shape, and the index scaled and negated (x[n - 2 - i:n - i])."""
    n = x.shape[0]
    acc = tf.constant(0.0, tf.float64)
    for i in tf.range(n - 1):
        acc += tf.reduce_sum(x[i:i + 2] ** 2)
    for i in range(0, n - 2, 2):
        acc += tf.reduce_sum(tf.sin(x[i + 1:i + 3])) * x[i]
    for i in range(n - 3, -1, -1):
        acc = acc * 0.9 + tf.reduce_sum(x[i:i + 3] * x[i * 1])
    for i in range(tf.shape(x)[0] - 1):
        acc += tf.reduce_sum(x[n - 2 - i:n - i] * tf.cast(i, tf.float64))
    return acc


WINDOWS = [pairs, centred, columns, outer_index_inside, spellings]


@pytest.mark.parametrize("fn", WINDOWS)
def test_a_window_the_index_slides_is_one_loop_at_every_size(fn):
    # It raised TracingError inside the loop, which then unrolled: n copies of the body,
    # a compile growing faster than n (86 s at 200 trips).
    f = tf.differentiable(fn)
    for n in (6, 8, 10):
        x = np.linspace(-1.0, 1.3, n)
        value, grad = eager_value_and_grad(fn, x)
        got_value, got_grad = f.value_and_grad(x)
        np.testing.assert_allclose(got_value, value, rtol=1e-13)
        np.testing.assert_allclose(got_grad, grad, rtol=1e-13, atol=1e-15)
        assert loops(f.ir(x)) == {outer_index_inside: 2, spellings: 4}.get(fn, 1)
    np.testing.assert_allclose(got_grad, central_difference(
        lambda z: fn(tf.constant(z)), x), rtol=1e-6, atol=1e-8)
    assert len(f.ir(np.ones(6))) == len(f.ir(np.ones(10)))


def test_a_window_some_trip_would_clip_unrolls_as_python_slices_it():
    # x[i:i + 2] at the last i, or x[i - 1:i + 1] at i = 0, is shorter (empty) in Python:
    # no one block size, so the loop unrolls and each trip slices as Python does.
    def past_the_end(x):
        acc = tf.constant(0.0, tf.float64)
        for i in range(x.shape[0]):
            acc += tf.reduce_sum(x[i:i + 2] ** 2) * (i + 1.0)
        return acc

    def before_the_start(x):
        return tf.fori_loop(0, 4, lambda i, c: c + tf.reduce_sum(x[i - 1:i + 1]) * x[i],
                            tf.constant(0.0, tf.float64))

    def sizes_past_the_end(x):  # a fori_loop over sizes: unrolled at each size too
        return tf.fori_loop(0, x.shape[0], lambda i, c: c + tf.reduce_sum(x[i:i + 2]) * x[i],
                            tf.constant(0.0, tf.float64))

    def narrow_index(x):  # int8 would wrap past 127: no one block, Python's slices
        acc = tf.constant(0.0, tf.float64)
        for i in range(x.shape[0] - 2):
            j = tf.cast(i, tf.int8)
            acc += tf.reduce_sum(x[j:j + 2]) * (i + 1.0)
        return acc

    def names_after(x):  # unrolled, the loop keeps Python's names: its index, a body's w
        acc = tf.constant(0.0, tf.float64)
        for i in range(x.shape[0]):
            w = x[i:i + 2]
            acc += tf.reduce_sum(w)
        return acc * tf.reduce_sum(w) + tf.cast(i, tf.float64)

    for fn in (past_the_end, before_the_start, sizes_past_the_end, names_after):
        assert_loops_at_sizes(fn, [(4, 0), (5, 0)])
    assert_loops_at_sizes(narrow_index, [(8, 1), (131, 0)])


def test_a_window_kernel_is_guarded_to_the_sizes_where_no_trip_clips():
    # Bounds known now (range(4)) with a window to i + 2: one loop where the array has 5
    # elements or more; at 4 the last block is clipped, and the call traces again.
    def fixed_trips(x):
        return tf.fori_loop(0, 4, lambda i, c: c + tf.reduce_sum(x[i:i + 2] ** 2),
                            tf.constant(0.0, tf.float64))

    assert_loops_at_sizes(fixed_trips, [(7, 1), (5, 1), (4, 0), (6, 1)])


def assert_loops_at_sizes(fn, sizes):
    """fn compiled, called at each (n, loops) of sizes in turn: the eager tape's value and
    gradient at x of n elements, from a program of that many loops."""
    f = tf.differentiable(fn)
    for n, rolled in sizes:
        x = np.linspace(0.5, 2.0, n)
        value, grad = eager_value_and_grad(fn, x)
        got_value, got_grad = f.value_and_grad(x)
        np.testing.assert_allclose(got_value, value, rtol=1e-13)
        np.testing.assert_allclose(got_grad, grad, rtol=1e-13)
        assert loops(f.ir(x)) == rolled, n
