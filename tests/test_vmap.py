"""vmap and vectorized_map (srcxform/vmap.py): a loop over lanes, each lane with its own
branch and trip count, over eager and compiled functions."""

import warnings

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


def test_bad_axes_and_lanes_out_axes_none_cannot_stand_for_are_refused():
    """Found by helper 114: raw NumPy and Python errors naming neither vmap nor the axis
    (an out axis past the result's, a float or bool axis), IndexArgumentError for an
    empty batch compiled, and lane 0's value for out_axes None where lanes differ."""
    X = np.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError, match=r"out_axes 2 for an output of rank 1 .* \[-2, 1\]"):
        tf.vmap(lambda r: r * 2, out_axes=2)(X)
    for bad in (1.0, True, (0, "1")):
        with pytest.raises(TypeError, match="in_axes must be an int, None, or a tuple"):
            tf.vmap(lambda r: r * 2, in_axes=bad)
    with pytest.raises(ValueError, match="differs between lanes"):
        tf.vmap(lambda r: r, out_axes=None)(X)
    np.testing.assert_array_equal(tf.vmap(lambda r: r * 0, out_axes=None)(X), [0, 0, 0])
    x = tf.constant(X)
    with tf.GradientTape() as tape, warnings.catch_warnings():  # lanes compared quietly
        warnings.simplefilter("error")
        tape.watch(x)
        same = tf.vmap(lambda r: (tf.constant(3), r[0] * np.nan), out_axes=None)(x)
    assert same[0].numpy() == 3 and np.isnan(same[1].numpy())
    g = tf.differentiable(lambda r, c: (r * c, tf.reduce_sum(r)))
    with pytest.raises(ValueError, match="out_axes None gives lane 0's value, and the batch "
                       "has no lanes"):
        tf.vmap(g, in_axes=(0, None), out_axes=(0, None))(np.zeros((0, 3)), 2.0)


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
    """The lanes are a compiled loop over the function traced once: the loop's trip count
    is the size. The first other size traces again, to find the trace unchanged
    (compiler.right_for); later ones trace nothing."""
    traced = []

    @tf.differentiable(wait=True)
    def tanh_sum(x):
        if isinstance(x, Tracer):
            traced.append(1)
        return tf.reduce_sum(tf.tanh(x))

    batched = tf.vmap(tanh_sum)
    counts = []
    for rows in (4, 6, 9):
        X = np.linspace(-1, 1, 2 * rows).reshape(rows, 2)
        np.testing.assert_allclose(np.asarray(batched(X)), np.tanh(X).sum(axis=1), rtol=1e-14)
        counts.append(len(traced))
    assert counts[1] == counts[0] + 1 and counts[2] == counts[1]


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


# ----- pickling, Dask tokens, Variables, keyword arguments -----


def scaled_square(x, scale=1.0):
    return tf.reduce_sum(x * x) * scale


SCALED_SQUARE = tf.differentiable(scaled_square, wait=True)


@pytest.mark.parametrize("form", ["function", "differentiable", "grad", "partial"])
def test_vmap_pickles_with_plain_pickle_when_its_function_is_importable(form, monkeypatch):
    """By reference to its function: pickle (no cloudpickle) names it; a process gets one
    object for equal payloads, so it compiles the loop kernel once."""
    import functools
    import pickle

    monkeypatch.setenv("SRCXFORM_JIT", "0")
    fn = {"function": scaled_square, "differentiable": SCALED_SQUARE,
          "grad": SCALED_SQUARE.grad,
          "partial": functools.partial(scaled_square, scale=1.0)}[form]  # no __qualname__
    batched = tf.vmap(fn)
    payload = pickle.dumps(batched)
    assert b"cloudpickle" not in payload
    again = pickle.loads(payload)
    assert again is pickle.loads(pickle.dumps(batched))
    X = np.arange(6.).reshape(3, 2)
    want = 2 * X if form == "grad" else (X * X).sum(axis=1)
    np.testing.assert_allclose(np.asarray(again(X)), want)


def test_vmap_of_a_lambda_pickles_by_value():
    import pickle

    cloudpickle = pytest.importorskip("cloudpickle")
    batched = tf.vmap(lambda x: tf.reduce_sum(x) * 3.0)
    again = pickle.loads(cloudpickle.dumps(batched))
    np.testing.assert_allclose(again(tf.constant(np.ones((2, 3)))).numpy(), [9., 9.])
    again = pickle.loads(pickle.dumps(batched))  # pickle itself ships it through cloudpickle
    np.testing.assert_allclose(again(tf.constant(np.ones((2, 3)))).numpy(), [9., 9.])


def test_the_dask_token_of_a_vmap_is_stable_across_calls(monkeypatch):
    from dask.base import tokenize

    monkeypatch.setenv("SRCXFORM_JIT", "0")
    batched = tf.vmap(tf.differentiable(scaled_square, wait=True))
    before = tokenize(batched)
    batched(np.ones((2, 3)))
    assert tokenize(batched) == before
    assert tokenize(tf.vmap(SCALED_SQUARE)) == tokenize(tf.vmap(SCALED_SQUARE))
    assert tokenize(tf.vmap(SCALED_SQUARE, in_axes=1)) != tokenize(tf.vmap(SCALED_SQUARE))


COUNTER = tf.Variable(0.0, dtype=tf.float64, name="counter")


def counts(x):
    COUNTER.assign(tf.reduce_sum(x))
    return x * 2.0


def test_a_variable_assigned_in_a_compiled_lane_is_refused_with_the_reason(monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    reason = r"test_vmap.py:\d+.*\n  vmap: counts assigns Variable 'counter:0' in each lane; the " \
             r"lanes of a vmap are independent.*assign after the vmap"
    with pytest.raises(tf.TracingError, match=reason):
        tf.vmap(tf.differentiable(counts, wait=True))(np.ones((2, 3)))

    @tf.differentiable(wait=True)
    def outer(X):
        return tf.reduce_sum(tf.vmap(counts)(X))

    with pytest.raises(tf.TracingError, match=reason):
        outer(np.ones((2, 3)))
    assert float(COUNTER) == 0.0


def test_keyword_arguments_are_mapped_over_axis_0(monkeypatch):
    """JAX's rule: in_axes covers the positional arguments; keywords are mapped on axis 0."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    X, scales = np.arange(6.).reshape(3, 2), np.array([1., 2., 3.])
    want = (X * X).sum(axis=1) * scales
    eager = tf.vmap(scaled_square)(tf.constant(X), scale=tf.constant(scales))
    np.testing.assert_allclose(eager.numpy(), want)
    np.testing.assert_allclose(np.asarray(tf.vmap(SCALED_SQUARE)(X, scale=scales)), want)
    per_example = tf.vmap(SCALED_SQUARE.grad, in_axes=0)(X, scale=scales)
    np.testing.assert_allclose(per_example, 2 * X * scales[:, None])
    with pytest.raises(ValueError, match=r"keyword argument 'scale' \(mapped over axis 0"):
        tf.vmap(scaled_square)(X, scale=2.0)
    with pytest.raises(ValueError, match="different sizes"):
        tf.vmap(SCALED_SQUARE)(X, scale=np.ones(4))


def _branchy_lane(x, w):
    y = tf.reduce_sum(tf.tanh(x * w))
    halved = tf.while_loop(lambda v: v > 0.1, lambda v: [v * 0.5], [tf.abs(y) + 1.0])[0]
    return tf.cond(y > 0, lambda: y * 2.0 + halved, lambda: y - 1.0)


def _gathering_lane(x, rows):
    return tf.reduce_sum(tf.gather(x, rows) ** 2)  # checks its indices: it may raise


def _lane_loop_source(fn, *args, in_axes):
    looped = tf.vmap(tf.differentiable(fn, parallel=True, wait=True).grad, in_axes=in_axes)
    looped(*args)
    (loop,) = looped._kernels.values()
    (kernel,), = loop._kernels.values()
    return kernel.spec.source


@pytest.mark.parametrize("jit", ["0", pytest.param("1", marks=pytest.mark.slow)])
def test_lanes_of_a_parallel_function_run_on_threads_unless_a_lane_may_raise(
        jit, monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    X, w = np.random.default_rng(3).normal(size=(9, 5)), np.linspace(-1, 1, 5)
    serial = tf.vmap(tf.differentiable(_branchy_lane, wait=True).grad, in_axes=(0, None))
    threaded = tf.vmap(tf.differentiable(_branchy_lane, parallel=True, wait=True).grad,
                       in_axes=(0, None))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.testing.assert_array_equal(threaded(X, w), serial(X, w))
    # compiled, the prange really runs on threads (its rows' writes cannot raise)
    assert not [w for w in caught if "will not be executed in parallel" in str(w.message)]
    assert "in prange(" in _lane_loop_source(_branchy_lane, X, w, in_axes=(0, None))
    # a prange would drop the IndexError of a lane's bad index: those lanes run in order
    source = _lane_loop_source(_gathering_lane, X, np.array([0, 4]), in_axes=(0, None))
    assert "prange" not in source
