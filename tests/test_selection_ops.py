"""Issue 16's selection and indexing ops (srcxform/ops/selection.py) against TensorFlow
2.21: the values, dtypes, tie-breaking and gradients below were printed by it. Then the
same ops compiled (Numba and SRCXFORM_JIT=0) against eager at several sizes per
function, indices out of range raising there as eagerly, and NumPy dispatch.

The op table (tests/samples.py) checks their gradients against finite differences.
"""

import numpy as np
import pytest

import srcxform as tf
from srcxform.core.errors import IndexArgumentError
from srcxform.testing import check_grads

nan = np.nan

X = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, 5.0]], np.float32)
V = np.array([3.0, 1.0, 3.0, 2.0, 1.0], np.float32)
P = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
D = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)


def _same(tensor, values, dtype):
    assert tensor.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(tensor.numpy(), np.asarray(values, dtype))


# ----- values, dtypes and ties, as TensorFlow's -----


def test_argmax_argmin_take_the_first_of_ties_and_default_to_int64():
    _same(tf.argmax(X, axis=1), [1, 3], np.int64)
    _same(tf.math.argmin(X, axis=0), [0, 1, 1, 0], np.int64)
    _same(tf.argmax(X, output_type=tf.int32), [1, 0, 0, 1], np.int32)
    _same(tf.argmax(np.array([1, 7, 7], np.int32)), 1, np.int64)
    _same(tf.argmax(np.array([False, True])), 1, np.int64)


def test_argmax_argmin_skip_nans():
    _same(tf.argmax(np.array([1.0, nan, 3.0, nan])), 2, np.int64)
    _same(tf.argmax(np.array([nan, 1.0, 0.0])), 1, np.int64)
    _same(tf.argmin(np.array([nan, 1.0, 0.0])), 2, np.int64)
    _same(tf.argmin(np.array([1.0, nan, -3.0])), 2, np.int64)
    _same(tf.argmax(np.array([nan, nan])), 0, np.int64)


def test_argmax_of_a_scalar_raises():
    with pytest.raises(ValueError, match="argmax"):
        tf.argmax(tf.constant(1.0))


def test_argsort_and_sort_keep_ties_in_order():
    _same(tf.argsort(V), [1, 4, 3, 0, 2], np.int32)
    _same(tf.argsort(V, direction="DESCENDING"), [0, 2, 3, 1, 4], np.int32)
    _same(tf.argsort(V, direction="DESCENDING", stable=True), [0, 2, 3, 1, 4], np.int32)
    _same(tf.argsort(np.array([2, 5, 5, 1], np.int32), direction="DESCENDING"), [1, 2, 0, 3],
          np.int32)
    _same(tf.sort(V, direction="DESCENDING"), [3, 3, 2, 1, 1], np.float32)
    _same(tf.sort(np.array([3, 1, 2], np.int32)), [1, 2, 3], np.int32)
    _same(tf.sort(X, axis=0), [[1, 2, -1, 0], [2, 3, 3, 5]], np.float32)
    # NaN sorts last, as in TensorFlow.
    _same(tf.sort(np.array([3.0, nan, 1.0], np.float32)), [1, 3, nan], np.float32)
    _same(tf.argsort(np.array([3.0, nan, 1.0], np.float32)), [2, 0, 1], np.int32)
    with pytest.raises(ValueError, match="direction"):
        tf.sort(V, direction="UP")


def test_top_k_values_and_indices():
    values, indices = tf.math.top_k(V, k=3)
    _same(values, [3, 3, 2], np.float32)
    _same(indices, [0, 2, 3], np.int32)
    values, indices = tf.math.top_k(np.array([3, 1, 2], np.int32), k=2)
    _same(values, [3, 2], np.int32)
    _same(indices, [0, 2], np.int32)
    with pytest.raises(ValueError, match="k=6"):
        tf.math.top_k(V, 6)


def test_one_hot():
    _same(tf.one_hot([0, 2, -1, 3], 3),
          [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]], np.float32)
    _same(tf.one_hot([0, 2], 3, axis=0), [[1, 0], [0, 0], [0, 1]], np.float32)
    _same(tf.one_hot([[0, 2]], 3, on_value=5, off_value=-1), [[[5, -1, -1], [-1, -1, 5]]],
          np.int32)
    _same(tf.one_hot([1], 2, dtype=tf.float64), [[0, 1]], np.float64)
    _same(tf.one_hot([1], 2, on_value=tf.constant(2.0, tf.float64)), [[0, 2]], np.float64)
    _same(tf.one_hot(np.array([1], np.int64), 2), [[0, 1]], np.float32)
    _same(tf.one_hot([[0, 1], [2, 0]], 3, axis=1),
          [[[1, 0], [0, 1], [0, 0]], [[0, 1], [0, 0], [1, 0]]], np.float32)
    with pytest.raises(TypeError, match="one dtype"):
        tf.one_hot([1], 2, on_value=tf.constant(1), off_value=tf.constant(0.0))


def test_one_hot_of_narrow_indices_past_their_range():
    """Found by helper 121: positions were uint8's, so 261 was 5 (two ones in a row)."""
    for ids in (tf.constant(np.array([5, 100], np.uint8)), np.array([5, 100], np.int8)):
        np.testing.assert_array_equal(tf.one_hot(ids, 300), np.eye(300)[[5, 100]])


def test_gather_with_batch_dims():
    _same(tf.gather(P, [[0, 2], [1, 1]], axis=1, batch_dims=1),
          [[[0, 1, 2, 3], [8, 9, 10, 11]], [[16, 17, 18, 19], [16, 17, 18, 19]]], np.float32)
    _same(tf.gather(P, [[[0, 3], [1, 1], [2, 0]], [[3, 3], [0, 1], [2, 2]]], axis=2,
                    batch_dims=2),
          [[[0, 3], [5, 5], [10, 8]], [[15, 15], [16, 17], [22, 22]]], np.float32)
    _same(tf.gather(P, [[0, 3], [1, 2]], axis=2, batch_dims=1),
          [[[0, 3], [4, 7], [8, 11]], [[13, 14], [17, 18], [21, 22]]], np.float32)


def test_gather_nd():
    _same(tf.gather_nd(P, [[1, 2], [0, 0]]), [[20, 21, 22, 23], [0, 1, 2, 3]], np.float32)
    _same(tf.gather_nd(P, [[1, 2, 3]]), [23], np.float32)
    _same(tf.gather_nd(P, [[1], [2]], batch_dims=1), [[4, 5, 6, 7], [20, 21, 22, 23]],
          np.float32)
    _same(tf.gather_nd(P.tolist(), [[[1, 0]], [[2, 3]]], batch_dims=1), [[4], [23]],
          np.float32)
    # TensorFlow takes no negative index here (unlike gather's Python-style ones).
    for bad, index in (([[-1, 0]], -1), ([[2, 0]], 2)):
        with pytest.raises(IndexArgumentError, match=f"gather_nd: index {index} is out of "
                           "bounds for a dimension of size 2"):
            tf.gather_nd(P, bad)


UPDATES = np.array([[1.0, 2.0], [10.0, 20.0], [5.0, 5.0]], np.float32)


def test_tensor_scatter_nd_add_and_update():
    zeros = np.zeros((4, 2), np.float32)
    _same(tf.tensor_scatter_nd_add(zeros, [[1], [1], [3]], UPDATES),
          [[0, 0], [11, 22], [0, 0], [5, 5]], np.float32)
    # Of repeated indices the last update stays, as on TensorFlow's CPU.
    _same(tf.tensor_scatter_nd_update(zeros, [[1], [1], [3]], UPDATES),
          [[0, 0], [10, 20], [0, 0], [5, 5]], np.float32)
    _same(tf.tensor_scatter_nd_update(zeros, [[1, 0], [3, 1]], [7.0, 8.0]),
          [[0, 0], [7, 0], [0, 0], [0, 8]], np.float32)
    for op in (tf.tensor_scatter_nd_add, tf.tensor_scatter_nd_update):
        for index in (4, -1):
            with pytest.raises(IndexArgumentError, match=f"index {index} is out of bounds"):
                op(zeros, [[index]], [[1.0, 2.0]])


def test_scatter_gradients_are_those_of_the_values_computed():
    tensor = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    updates = tf.constant(UPDATES)
    weight = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    for op, tensor_grad in (
            (tf.tensor_scatter_nd_add, [[0, 1], [2, 3], [4, 5], [6, 7]]),
            (tf.tensor_scatter_nd_update, [[0, 1], [0, 0], [4, 5], [0, 0]])):
        with tf.GradientTape() as tape:
            tape.watch([tensor, updates])
            y = op(tensor, [[1], [1], [3]], updates) * weight
        grads = tape.gradient(y, [tensor, updates])
        _same(grads[0], tensor_grad, np.float32)
        # An update a repeat replaces changes nothing: add's gets its slice, update's 0
        # (JAX's; TensorFlow gave it its slice too, unlike finite differences: helper 106).
        replaced = [0, 0] if op is tf.tensor_scatter_nd_update else [2, 3]
        _same(grads[1], [replaced, [2, 3], [6, 7]], np.float32)


def test_scatter_update_gradients_at_an_infinite_update_and_narrow_indices():
    # Helper 110: the replaced slices were zeroed as 0 * updates (NaN for an update of
    # -inf, a common mask), and the updates were numbered in the indices' dtype (uint8
    # wrapped past 255 updates: update 43 took 299's gradient).
    masked = tf.grad(lambda x: tf.reduce_max(tf.tensor_scatter_nd_update(x, [[0]], [-np.inf])))
    assert masked(np.array([5.0, 2.0, 3.0])).tolist() == [0.0, 0.0, 1.0]
    updates = tf.constant(np.arange(300.0))
    with tf.GradientTape() as tape:
        tape.watch(updates)
        y = tf.reduce_sum(tf.tensor_scatter_nd_update(tf.zeros(2, tf.float64),
                                                      np.zeros((300, 1), np.uint8), updates))
    assert np.flatnonzero(tape.gradient(y, updates).numpy()).tolist() == [299]


def test_segment_sums():
    _same(tf.math.segment_sum(D, [0, 0, 2]), [[4, 6], [0, 0], [5, 6]], np.float32)
    _same(tf.math.unsorted_segment_sum(D, [2, 0, 2], 4), [[3, 4], [0, 0], [6, 8], [0, 0]],
          np.float32)
    # A negative id drops its slice.
    _same(tf.math.unsorted_segment_sum(D, [-1, 0, 2], 3), [[3, 4], [0, 0], [5, 6]],
          np.float32)
    _same(tf.math.unsorted_segment_sum(D, [[0, 1], [1, 1], [0, 0]], 2), [12, 9], np.float32)
    _same(tf.math.unsorted_segment_sum(np.array([1, 2, 3], np.int32), [0, 0, 1], 2), [3, 3],
          np.int32)
    with pytest.raises(IndexArgumentError, match="unsorted_segment_sum: index 3 is out of "
                       "bounds for a dimension of size 3"):
        tf.math.unsorted_segment_sum(D, [3, 0, 2], 3)
    with pytest.raises(IndexArgumentError, match="not increasing"):
        tf.math.segment_sum(D, [1, 0, 2])
    with pytest.raises(IndexArgumentError, match="negative"):
        tf.math.segment_sum(D, [-1, 0, 0])


# ----- gradients, as TensorFlow's -----


def _gradient(f, x, weight):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x) * weight
    return tape.gradient(y, x)


def test_sort_and_top_k_gradients_go_back_through_the_permutation():
    ramp = np.arange(1.0, 6.0, dtype=np.float32)
    _same(_gradient(tf.sort, V, ramp), [4, 1, 5, 3, 2], np.float32)
    _same(_gradient(lambda v: tf.sort(v, direction="DESCENDING"), V, ramp), [1, 4, 2, 3, 5],
          np.float32)
    _same(_gradient(lambda v: tf.math.top_k(v, 2).values, V, np.array([1.0, 10.0], np.float32)),
          [1, 0, 10, 0, 0], np.float32)


def test_index_valued_ops_have_no_gradient():
    x = tf.constant(X)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        outs = [tf.argmax(x), tf.argmin(x), tf.argsort(x), tf.math.top_k(x, 2).indices,
                tf.one_hot(tf.argmax(x, axis=1), 4, on_value=x[0, 0])]
    assert [tape.gradient(out, x) for out in outs] == [None] * 5


def test_boolean_mask_with_axis_as_tensorflow():
    _same(tf.boolean_mask(P, [True, False, True], axis=1), P[:, [0, 2]], np.float32)
    _same(tf.boolean_mask(P, [[True, False, True, False]] * 3, axis=1),
          [[0, 2, 4, 6, 8, 10], [12, 14, 16, 18, 20, 22]], np.float32)
    _same(tf.boolean_mask(P, np.array([False, True])), P[1:], np.float32)
    _same(tf.boolean_mask(P, P > 20.0), [21, 22, 23], np.float32)
    _same(tf.boolean_mask(D, [True, False], axis=-1), [[1], [3], [5]], np.float32)  # TF: axis>=0
    assert tf.boolean_mask(P, [False] * 3, axis=1).shape == (2, 0, 4)
    with pytest.raises(TypeError, match="rank 1 or more"):
        tf.boolean_mask(P, True)
    with pytest.raises(tf.ShapeError, match=r"boolean_mask: mask bool\[2\] does not match "
                       r"the axes from 1 on of f32\[2,3,4\]"):
        tf.boolean_mask(P, [True, False], axis=1)


def test_boolean_mask_gradient_is_scattered_back():
    mask = np.array([[True, False, True, False], [False, False, True, True],
                     [True, True, False, False]])
    weights = np.arange(1.0, 13.0, dtype=np.float32).reshape(2, 6)
    _same(_gradient(lambda x: tf.boolean_mask(x, mask, axis=1), P, weights),
          [[[1, 0, 2, 0], [0, 0, 3, 4], [5, 6, 0, 0]],
           [[7, 0, 8, 0], [0, 0, 9, 10], [11, 12, 0, 0]]], np.float32)
    check_grads(lambda x: tf.boolean_mask(tf.sin(x), mask, axis=1) ** 2,
                [P.astype(np.float64) / 10], compiled=False, order=2)


@pytest.mark.parametrize("jit", ["1", "0"])
def test_compiled_boolean_mask_says_it_is_eager_only_at_the_users_line(jit, monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    mask = np.array([True, False, True])  # known while tracing, yet the shape is data's
    for f in (lambda x: tf.boolean_mask(x, mask, axis=1),
              lambda x: tf.reduce_sum(x[x > 0.0])):
        with pytest.raises(tf.TracingError, match=r"test_selection_ops\.py:\d+: .*"
                           r"\n  boolean_mask \(x\[mask\]\): its shape depends on the "
                           r"mask's values, so it cannot be compiled; use "
                           r"srcxform\.where\(mask, x, 0\)"):
            tf.differentiable(f)(P.astype(np.float64))


# ----- compiled, at several sizes, and as Python (SRCXFORM_JIT=0) -----


def _ranked(x):
    top = tf.math.top_k(x, 2)
    return (tf.argmax(x, axis=1), tf.argmin(x, axis=0, output_type=tf.int32),
            tf.argsort(x, direction="DESCENDING"), tf.sort(x, axis=0), top.values, top.indices,
            tf.one_hot(tf.argmax(x, axis=1), x.shape[1], axis=0),
            tf.gather(x, tf.argsort(x)[:, ::-1], axis=1, batch_dims=1))


def _indexed(x, ids, updates, segments):
    return (tf.gather_nd(x, ids), tf.tensor_scatter_nd_add(x, ids, updates),
            tf.tensor_scatter_nd_update(x, ids, updates),
            tf.math.unsorted_segment_sum(x, segments, 3))


def _ranked_inputs(rng):
    """Ties (small integers), a NaN row, and sizes that change."""
    for shape in ((3, 4), (5, 6), (2, 3)):
        x = rng.integers(0, 3, shape).astype(np.float64)
        x[-1, :2] = nan
        yield (x,)


def _indexed_inputs(rng):
    for rows, cols, n in ((4, 3, 5), (6, 2, 6), (3, 5, 2)):
        x = rng.normal(size=(rows, cols))
        ids = np.stack([rng.integers(0, rows, n), rng.integers(0, cols, n)], axis=1)
        segments = rng.integers(-1, 3, rows)
        yield x, ids, rng.normal(size=n), segments


def _agree(f, inputs):
    compiled = tf.differentiable(f)
    for args in inputs:
        eager = f(*[tf.constant(a) for a in args])
        for got, want in zip(compiled(*args), eager):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.slow
@pytest.mark.parametrize("jit", ["1", "0"])
def test_compiled_as_eager_at_several_sizes(jit, monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    rng = np.random.default_rng(0)
    _agree(_ranked, _ranked_inputs(rng))
    _agree(_indexed, _indexed_inputs(rng))


@pytest.mark.parametrize("jit", ["1", "0"])
def test_compiled_indices_out_of_range_raise(jit, monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    compiled = tf.differentiable(_indexed)
    x, updates = np.ones((4, 3)), np.ones(2)
    segments = np.array([0, 1, 2, -1])
    compiled(x, np.array([[3, 2], [0, 0]]), updates, segments)  # in range
    for ids, message in (([[4, 2], [0, 0]], "index 4 is out of bounds for a dimension of size 4"),
                         ([[0, 3], [0, 0]], "index 3 is out of bounds for a dimension of size 3"),
                         ([[0, -1], [0, 0]], "index -1 is out of bounds")):
        # The gather's check or a scatter's, whichever the kernel runs first.
        with pytest.raises(IndexArgumentError, match=r"(gather_nd|tensor_scatter_nd_\w+): "
                           + message):
            compiled(x, np.array(ids), updates, segments)
    with pytest.raises(IndexArgumentError, match="unsorted_segment_sum: index 3 is out of "
                       "bounds for a dimension of size 3"):
        compiled(x, np.array([[3, 2], [0, 0]]), updates, np.array([0, 3, 2, -1]))


@pytest.mark.parametrize("jit", ["1", "0"])
def test_compiled_gather_with_batch_dims_names_the_index_itself(jit, monkeypatch):
    # Index 4 of a batch element's 4 columns is a row of the next element in the table
    # that gather reads: the check must name the index, not the row. (Negative indices
    # count from the end in srcxform's gather, where TensorFlow's raise.)
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    compiled = tf.differentiable(lambda x, ids: tf.gather(x, ids, axis=1, batch_dims=1))
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(compiled(x, np.array([[3], [-4], [1]])).numpy(),
                                  [[3], [4], [9]])
    for bad in (4, -5):
        with pytest.raises(IndexArgumentError, match=f"gather: index {bad} is out of bounds "
                           "for a dimension of size 4"):
            compiled(x, np.array([[0], [bad], [1]]))
    # Each batch element's first row is computed from the sizes: one kernel for all
    # (helper 115: a kernel per size, sort's along an axis too).
    for rows, cols in ((5, 4), (4, 6)):
        x = np.arange(rows * cols, dtype=float).reshape(rows, cols)
        np.testing.assert_array_equal(compiled(x, np.ones((rows, 1), np.int64)), x[:, 1:2])
    assert compiled.cache_info().kernels == 1
    # Offsets past int16's range (helper 119: they wrapped in the indices' dtype, 723 rows
    # of 4,000 were another element's).
    x = np.arange(40000.0).reshape(4000, 10)
    for gathered in (compiled, tf.gather):
        got = gathered(x, np.full((4000, 1), 3, np.int16), **(
            {} if gathered is compiled else {"axis": 1, "batch_dims": 1}))
        np.testing.assert_array_equal(got, x[:, 3:4])


def test_checked_indices_are_int64_in_every_indices_dtype():
    # The mechanism under the per-op fixes above: row numbers computed from checked
    # indices (times a stride, plus a batch offset) cannot wrap in the indices' dtype,
    # uint8's 3 * 100 is 300, eagerly and compiled.
    from srcxform.ops.shape import checked_indices

    def rows(ids):
        return checked_indices(ids, 4, "gather", "raise") * 100

    for ids in (np.array([3, 0, 2], np.uint8), np.array([3, 0, 2], np.int16)):
        for got in (rows(tf.constant(ids)), tf.differentiable(rows)(ids)):
            _same(got, [300, 0, 200], np.int64)


@pytest.mark.slow
def test_compiled_gradients_at_several_sizes():
    def loss(x, ids):
        return (tf.reduce_sum(tf.sort(x, axis=0) * np.arange(x.shape[0])[:, None])
                + tf.reduce_sum(tf.math.top_k(x, 2).values ** 2)
                + tf.reduce_sum(tf.tensor_scatter_nd_update(x, ids, tf.gather_nd(x, ids) * 3.0)))

    compiled = tf.differentiable(loss)
    rng = np.random.default_rng(1)
    for rows, cols in ((3, 4), (5, 3)):
        x = rng.normal(size=(rows, cols))
        ids = np.array([[rows - 1, 0], [0, cols - 1]])
        xt = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            y = loss(xt, ids)
        np.testing.assert_allclose(compiled.grad(x, ids), tape.gradient(y, xt).numpy(),
                                   rtol=1e-12)


def test_a_number_of_segments_from_tf_shape_compiles():
    """Found by helper 117: (tf.shape(M)[0] + 1) // 2 raised 'a traced value used as an
    index or count', where M.shape[0] compiled."""
    halves = tf.differentiable(lambda m, ids: tf.math.unsorted_segment_sum(
        m, ids, (tf.shape(m)[0] + 1) // 2))
    for rows in (4, 6):
        m, ids = np.arange(rows * 3.0).reshape(rows, 3), np.arange(rows) % (rows // 2)
        np.testing.assert_array_equal(halves(m, ids),
                                      tf.math.unsorted_segment_sum(m, ids, rows // 2))


def test_segment_sum_of_traced_ids_says_it_cannot_be_compiled():
    compiled = tf.differentiable(lambda x, ids: tf.math.segment_sum(x, ids))
    with pytest.raises(tf.TracingError, match="unsorted_segment_sum"):
        compiled(D.astype(np.float64), np.array([0, 0, 1]))
    # Ids known while tracing (a constant) give the number of segments there.
    constant_ids = tf.differentiable(lambda x: tf.math.segment_sum(x, np.array([0, 0, 2])))
    np.testing.assert_array_equal(constant_ids(D.astype(np.float64)).numpy(),
                                  [[4, 6], [0, 0], [5, 6]])


# ----- NumPy dispatch -----


def test_numpy_dispatch():
    x = tf.constant(X)
    for func, kwargs in ((np.argmax, {}), (np.argmax, {"axis": 1}), (np.argmin, {"axis": 0}),
                         (np.sort, {}), (np.sort, {"axis": None}), (np.argsort, {"axis": 0}),
                         (np.argsort, {"kind": "stable"})):
        got, want = func(x, **kwargs), func(X, **kwargs)
        assert isinstance(got, tf.Tensor) and got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)
    with pytest.raises(TypeError, match="keepdims"):
        np.argmax(x, axis=0, keepdims=True)
    # NaNs are skipped, as in TensorFlow (NumPy would return the NaN's index).
    assert np.argmax(tf.constant([1.0, nan, 3.0])).numpy() == 2
