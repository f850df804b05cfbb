"""vmap and vectorized_map (srcxform/vmap.py): a loop over lanes, each lane with its own
branch and trip count, over eager and compiled functions."""

import numpy as np
import pytest

import srcxform as tf
from srcxform.ad.trace import Tracer


def loss(w, xi):
    return (tf.reduce_sum(w * xi) - 1.) ** 2


def test_vmap_of_a_compiled_grad_gives_per_example_gradients():
    X = np.arange(6.).reshape(3, 2)
    per = tf.vmap(tf.grad(loss), in_axes=(None, 0))(np.ones(2), X)
    np.testing.assert_allclose(per, [2 * (X[i].sum() - 1.) * X[i] for i in range(3)])


def logistic(w, x, y):
    z = tf.reduce_sum(w * x)
    return tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=z)


def test_vmap_grad_of_logistic_regression_equals_per_example_tape_gradients():
    rng = np.random.default_rng(0)
    X, y, w = rng.standard_normal((5, 3)), (rng.random(5) < 0.5) * 1.0, rng.standard_normal(3)
    per = tf.vmap(tf.grad(logistic), in_axes=(None, 0, 0))(w, X, y)
    for i in range(5):
        wt = tf.constant(w)
        with tf.GradientTape() as tape:
            tape.watch(wt)
            out = logistic(wt, tf.constant(X[i]), tf.constant(y[i]))
        np.testing.assert_allclose(per[i], tape.gradient(out, wt).numpy(), rtol=1e-12)


def halve_or_decrement(x):
    return tf.cond(x > 4.0, lambda: x / 2.0, lambda: x - 1.0)


def collatz_like(x):
    """A data-dependent cond and while: the trip count depends on the example."""
    steps = 0
    while x > 1.0:
        x = halve_or_decrement(x)
        steps += 1
    return x, steps


def test_each_lane_takes_its_own_branch_and_trip_count():
    xs = np.array([0.5, 3.5, 9.0, 17.0])
    trips = []

    def counted(x):
        out, steps = collatz_like(x)
        trips.append(steps)
        return out

    got = tf.vmap(counted)(tf.constant(xs))
    want, want_trips = zip(*[collatz_like(tf.constant(x)) for x in xs])
    np.testing.assert_allclose(got.numpy(), [float(w) for w in want])
    assert trips == list(want_trips) == [0, 3, 4, 5]


def test_in_axes_and_out_axes():
    A = np.arange(12.).reshape(3, 4)
    columns = tf.vmap(lambda c: c * 2.0, in_axes=1, out_axes=1)(tf.constant(A))
    np.testing.assert_allclose(columns.numpy(), A * 2)
    outer = tf.vmap(lambda a, b: (a * b, a), in_axes=(0, None), out_axes=(1, 0))(
        tf.constant([1., 2.]), tf.constant([3., 4., 5.]))
    np.testing.assert_allclose(outer[0].numpy(), np.outer([3., 4., 5.], [1., 2.]))
    np.testing.assert_allclose(outer[1].numpy(), [1., 2.])
    with pytest.raises(ValueError, match="different sizes"):
        tf.vmap(lambda a, b: a * b)(np.ones(2), np.ones(3))


def test_vmap_is_differentiable_on_the_tape():
    x = tf.constant([1., 2., 3.], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.vmap(lambda e: tf.sin(e) * e)(x))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(),
                               np.cos(x.numpy()) * x.numpy() + np.sin(x.numpy()))


def test_vectorized_map_over_a_structure():
    elems = {"a": tf.constant([[1., 2.], [3., 4.]]), "b": tf.constant([10., 20.])}
    got = tf.vectorized_map(lambda e: tf.reduce_sum(e["a"]) * e["b"], elems)
    np.testing.assert_allclose(got.numpy(), [30., 140.])


def test_vmap_of_a_differentiable_is_one_loop_kernel_for_every_batch_size():
    """The lanes are a compiled loop over the function traced once: a new batch size
    traces nothing (the loop's trip count is the size)."""
    traced = []

    @tf.differentiable(wait=True)
    def tanh_sum(x):
        if isinstance(x, Tracer):
            traced.append(1)
        return tf.reduce_sum(tf.tanh(x))

    batched = tf.vmap(tanh_sum)
    counts = []
    for rows in (4, 6):
        X = np.linspace(-1, 1, 2 * rows).reshape(rows, 2)
        np.testing.assert_allclose(np.asarray(batched(X)), np.tanh(X).sum(axis=1), rtol=1e-14)
        counts.append(len(traced))
    assert counts[0] == counts[1]


def test_vmap_inside_a_compiled_function(monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")

    @tf.differentiable(wait=True)
    def total(w, X):
        return tf.reduce_sum(tf.vmap(lambda x: tf.tanh(tf.reduce_sum(w * x)))(X))

    X, w = np.arange(6.).reshape(3, 2) / 5, np.array([0.5, -1.0])
    np.testing.assert_allclose(float(total(w, X)), np.tanh(X @ w).sum(), rtol=1e-14)
    np.testing.assert_allclose(total.grad(w, X), (1 - np.tanh(X @ w) ** 2) @ X, rtol=1e-13)
    total(w, np.arange(8.).reshape(4, 2) / 5)
    assert total.cache_info().kernels == 2  # value and grad: not one per batch size


@tf.differentiable(wait=True)
def halvings(x):
    """A compiled data-dependent while (autograph) and cond: returns (value, trips)."""
    trips = x * 0.0
    while x > 1.0:
        if x > 4.0:
            x = x / 4.0
        else:
            x = x / 2.0
        trips = trips + 1.0
    return x, trips


def test_vmap_of_a_compiled_while_runs_each_lanes_trip_count():
    xs = np.array([0.5, 3.0, 20.0, 1000.0])
    values, trips = tf.vmap(halvings)(xs)
    want = []
    for x in xs:
        n = 0
        while x > 1.0:
            x, n = x / (4.0 if x > 4.0 else 2.0), n + 1
        want.append((x, n))
    np.testing.assert_allclose(values, [w[0] for w in want], rtol=1e-15)
    np.testing.assert_array_equal(trips, [w[1] for w in want])
