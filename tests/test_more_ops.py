"""NumPy functions and TensorFlow names made of srcxform's ops (numpy_composites.py, and the
composites in layout.py, selection.py, mathfuncs.py and nn.py): values, dtypes and shapes
against NumPy (or TensorFlow's documented results), gradients against finite
differences, errors that name the op, and two compiled functions, each batching many of
them, against eager.
"""

import numpy as np
import pytest
from helpers import assert_tensor_equal as _eq

import srcxform as tf
from srcxform.testing import check_grads

RNG = np.random.default_rng(0)
A = RNG.normal(size=(3, 4))
B = RNG.normal(size=(2, 3))
V = RNG.normal(size=4)
INTS = np.array([[0, 3, -2], [5, 0, 1]], np.int32)


def _tensors(args):
    return [tf.constant(a) if isinstance(a, np.ndarray) else a for a in args]


def _same(got, want, exact):
    if isinstance(want, (list, tuple)):
        assert isinstance(got, type(want)) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w, exact)
        return
    want = np.asarray(want)
    assert isinstance(got, tf.Tensor)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    if exact:
        np.testing.assert_array_equal(got.numpy(), want)
    else:  # float32 to an ulp or two (an op's order of rounding)
        tol = 1e-6 if want.dtype in (np.float32, np.float16) else 1e-12
        np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol * 1e-2)


def case(fn, *args, exact=True, id):
    return pytest.param(fn, args, exact, id=id)


NUMPY_CASES = [
    case(lambda a: np.pad(a, 2), A, id="pad-int"),
    case(lambda a: np.pad(a, ((1, 2), (0, 3)), constant_values=((1.0, 2.0), (3.0, 4.0))), A,
         id="pad-constant-per-axis"),
    case(lambda a: np.pad(a, 2, constant_values=1.7), np.arange(5, dtype=np.int32),
         id="pad-int-cast"),
    *[case(lambda a, m=mode: np.pad(a, ((1, 2), (5, 3)), mode=m), A, id=f"pad-{mode}")
      for mode in ("edge", "reflect", "symmetric", "wrap")],
    case(lambda a: np.pad(a, (1, 2), mode="reflect"), A, id="pad-reflect-within"),
    case(lambda a: np.split(a, 2, axis=1), A, id="split"),
    case(lambda a: np.split(a, [1, 5, 2]), A, id="split-indices"),
    case(lambda a: np.array_split(a, 3, axis=1), A, id="array_split"),
    case(lambda a: np.repeat(a, 2), A, id="repeat-flat"),
    case(lambda a: np.repeat(a, [1, 0, 2], axis=0), A, id="repeat-counts"),
    case(lambda a: np.repeat(a, np.array([3]), axis=-1), INTS, id="repeat-one-count"),
    case(np.diff, A, id="diff"),
    case(lambda a: np.diff(a, 2, axis=0), A, id="diff-2"),
    case(lambda a: np.diff(a, prepend=0.0, append=A[:, :1]), A, id="diff-prepend-append"),
    case(np.diff, np.array([True, False, False]), id="diff-bool"),
    case(np.diff, INTS, id="diff-int"),
    *[case(lambda a, k=k: np.triu(a, k), A, id=f"triu{k}") for k in (-1, 0, 2)],
    *[case(lambda a, k=k: np.tril(a, k), A, id=f"tril{k}") for k in (-2, 0, 1)],
    case(np.tril, np.arange(3.0), id="tril-vector"),
    case(lambda a: np.triu(a, 1), RNG.normal(size=(2, 3, 3)), id="triu-batched"),
    case(np.triu, INTS > 0, id="triu-bool"),
    case(np.atleast_1d, np.array(2.0), id="atleast_1d"),
    case(np.atleast_2d, V, id="atleast_2d"),
    case(lambda a, v: np.atleast_2d(a, v), A, V, id="atleast_2d-several"),
    case(lambda a: np.full_like(a, 2.5), A, id="full_like"),
    case(lambda a: np.full_like(a, 2.7), INTS, id="full_like-cast"),
    case(lambda a: np.full_like(a, 1, dtype=np.float32, shape=(2,)), A, id="full_like-dtype"),
    case(np.inner, A, RNG.normal(size=(5, 4)), exact=False, id="inner"),
    case(np.inner, INTS, INTS, id="inner-int"),
    case(np.inner, 2.0, V, id="inner-scalar"),
    case(np.vdot, A, A.T, exact=False, id="vdot"),
    case(np.kron, A, B, id="kron"),
    case(np.kron, np.arange(3, dtype=np.int32), np.ones(2, np.float32), id="kron-dtypes"),
    case(np.kron, A, V, id="kron-ranks"),
    case(lambda a, v: np.column_stack([v[:3], a[:, :2], v[1:]]), A, V, id="column_stack"),
    case(lambda v: np.column_stack([v[0], 1.5]), V, id="column_stack-scalars"),
    case(np.logaddexp, A, B[:1, :1], exact=False, id="logaddexp"),
    case(np.logaddexp, np.array([0.0, -np.inf, np.inf, 1000.0, -np.inf, 3.0, np.nan]),
         np.array([0.0, -np.inf, np.inf, 999.0, 5.0, -np.inf, 1.0]), exact=False,
         id="logaddexp-extremes"),
    case(np.logaddexp, np.arange(3, dtype=np.int8), np.int8(1), exact=False,
         id="logaddexp-int8"),
    case(np.logaddexp, A.astype(np.float32), 2, exact=False, id="logaddexp-weak"),
    case(np.hypot, A, 3 * A[:, ::-1], exact=False, id="hypot"),
    case(np.hypot, np.array([np.inf, np.nan, 1e300, 0.0, -3.0]),
         np.array([np.nan, -np.inf, 1e300, 0.0, 4.0]), exact=False, id="hypot-extremes"),
    case(np.hypot, INTS, 1, exact=False, id="hypot-int"),
    case(np.average, A, exact=False, id="average"),
    case(lambda a: np.average(a, axis=1, weights=np.arange(1.0, 5.0)), A, exact=False,
         id="average-weights-axis"),
    case(lambda a, w: np.average(a, weights=w, returned=True), A, np.abs(A), exact=False,
         id="average-returned"),
    case(lambda a: np.average(a, returned=True), np.arange(4, dtype=np.int32), exact=False,
         id="average-int"),
    case(np.ptp, A, id="ptp"),
    case(lambda a: np.ptp(a, axis=0, keepdims=True), INTS, id="ptp-axis"),
    case(np.isclose, np.array([1.0, np.nan, np.inf, -np.inf, 1e-9, 1.00001, 1.0001]),
         np.array([1.0, np.nan, np.inf, np.inf, 0.0, 1.0, 1.0]), id="isclose"),
    case(lambda a, b: np.isclose(a, b, equal_nan=True, atol=0.0),
         np.array([1.0, np.nan, 1e-9]), np.array([1.0, np.nan, 0.0]), id="isclose-nan"),
    case(lambda a: np.isclose(a, 1), np.arange(3), id="isclose-int"),
    case(np.count_nonzero, INTS, id="count_nonzero"),
    case(lambda a: np.count_nonzero(a, axis=0, keepdims=True), INTS, id="count_nonzero-axis"),
]


@pytest.mark.parametrize("fn, args, exact", NUMPY_CASES)
def test_numpy_functions_give_numpys_values_dtypes_and_shapes(fn, args, exact):
    with np.errstate(invalid="ignore"):
        want = fn(*args)
    _same(fn(*_tensors(args)), want, exact)


def test_allclose_is_a_python_bool_eagerly():
    x, y = np.array([1.0, 2.0 + 1e-9]), np.array([1.0, 2.0])
    assert np.allclose(tf.constant(x), y) is True
    assert np.allclose(tf.constant(x), y + 1.0) is False
    assert np.allclose(tf.constant([np.nan]), np.nan, equal_nan=True) is True


# ----- gradients against finite differences (eager; compiled below, batched) -----

NUMPY_GRADS = {
    "pad": lambda a: np.pad(a, ((1, 0), (2, 1)), constant_values=5.0),
    "pad-reflect": lambda a: np.pad(a, ((2, 1), (1, 3)), mode="reflect"),
    "pad-wrap": lambda a: np.pad(a, ((4, 0), (0, 1)), mode="wrap"),
    "pad-edge": lambda a: np.pad(a, 2, mode="edge"),
    "split": lambda a: np.split(a, [1, 3], axis=1)[1] * np.array_split(a, 3, axis=1)[2][:, :1],
    "repeat": lambda a: np.repeat(a, [2, 0, 3], axis=0) * np.repeat(a[:2], 2)[:4],
    "diff": lambda a: np.diff(a, 2, axis=1, prepend=a[:, :1] * 2.0),
    "triangles": lambda a: np.triu(a, 1) * 2.0 + np.tril(a, -1),
    "products": lambda a: np.kron(a, a[:2, :2]).sum() + np.inner(a, a) * np.vdot(a, a),
    "column_stack": lambda a: np.column_stack([a[:, 0], a]) ** 2,
    "logaddexp": lambda a: np.logaddexp(a, a[::-1]) + np.logaddexp(a, 0.5),  # ties too
    "hypot": lambda a: np.hypot(a, a[:, ::-1]) + np.hypot(a, 3.0),  # ties too
    "average": lambda a: np.average(a, axis=0, weights=np.arange(1.0, 4.0)) +
    np.average(a, weights=a * a)[None],
    "ptp": lambda a: np.ptp(a, axis=1),
}


@pytest.mark.parametrize("name", sorted(NUMPY_GRADS))
def test_numpy_function_gradients(name):
    check_grads(NUMPY_GRADS[name], (A,), compiled=False)


def test_logaddexp_and_hypot_gradients_at_special_points():
    x = tf.constant([0.0, -np.inf, 2.0, 0.0])
    y = tf.constant([0.0, -np.inf, -np.inf, 0.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        s, h = np.logaddexp(x, y), np.hypot(x, y)
    _eq(tape.gradient(s, x), [0.5, 0.5, 1.0, 0.5])
    _eq(tape.gradient(h, x), [0.0, 0.0, 0.0, 0.0])  # 0 at (0, 0) and at inf, no NaN
    _eq(tape.gradient(h, y), [0.0, 0.0, 0.0, 0.0])


# ----- TensorFlow names -----


def test_tensorflow_names_give_tensorflows_documented_values():
    _eq(tf.repeat(tf.constant([1, 2, 3]), [3, 0, 2]), [1, 1, 1, 3, 3], tf.int32)
    _eq(tf.repeat(tf.constant([[1, 2], [3, 4]]), 2, axis=1), [[1, 1, 2, 2], [3, 3, 4, 4]])
    _eq(tf.repeat(tf.constant([[1, 2], [3, 4]]), [1, 2], axis=0), [[1, 2], [3, 4], [3, 4]])
    _eq(tf.scatter_nd([[4], [3], [1], [7]], [9, 10, 11, 12], [8]),
        [0, 11, 0, 10, 9, 0, 0, 12], tf.int32)
    _eq(tf.scatter_nd([[0, 1], [0, 1]], [1.5, 2.0], tf.constant([2, 3])),
        [[0.0, 3.5, 0.0], [0.0, 0.0, 0.0]], tf.float32)
    t = tf.constant(np.arange(8.0))
    _eq(tf.tensor_scatter_nd_sub(t, [[1], [1], [3]], [1.0, 2.0, 3.0]),
        [0.0, -2.0, 2.0, 0.0, 4.0, 5.0, 6.0, 7.0], tf.float64)
    _eq(tf.tensor_scatter_nd_max(t, [[1], [1], [3]], [9.0, 10.0, -1.0]),
        [0.0, 10.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    _eq(tf.tensor_scatter_nd_min(t, [[1], [1], [3]], [9.0, 10.0, -1.0]),
        [0.0, 1.0, 2.0, -1.0, 4.0, 5.0, 6.0, 7.0])
    x, y = tf.meshgrid([1, 2, 3], [4, 5])
    _eq(x, [[1, 2, 3], [1, 2, 3]], tf.int32)
    _eq(y, [[4, 4, 4], [5, 5, 5]], tf.int32)
    grids = tf.meshgrid(np.arange(3.0), np.arange(2.0), np.arange(4.0), indexing="ij")
    for got, want in zip(grids, np.meshgrid(np.arange(3.0), np.arange(2.0), np.arange(4.0),
                                            indexing="ij")):
        _eq(got, want, tf.float64)
    _eq(tf.sequence_mask([1, 3, 2], 5), [[True, False, False, False, False],
                                         [True, True, True, False, False],
                                         [True, True, False, False, False]], tf.bool)
    _eq(tf.sequence_mask([[1, 3], [2, 0]]), np.arange(3) < np.array([[1, 3], [2, 0]])[..., None])
    _eq(tf.sequence_mask([1, 2], dtype=tf.float32), [[1.0, 0.0], [1.0, 1.0]], tf.float32)
    _eq(tf.ensure_shape(tf.constant(A), [None, 4]), A, tf.float64)
    _eq(tf.math.reciprocal_no_nan(tf.constant([0.0, 2.0, -4.0])), [0.0, 0.5, -0.25], tf.float32)
    _eq(tf.math.polyval([2, 1, 0], 3), 21, tf.int32)
    _eq(tf.math.polyval([1.0, -2.0, 3.0], tf.constant([0.0, 1.0, 2.0])), [3.0, 2.0, 3.0])
    _eq(tf.math.polyval([], tf.constant([1.0, 2.0])), [0.0, 0.0], tf.float32)
    _eq(tf.nn.embedding_lookup(tf.constant(A), [[2, 0], [2, 2]]), A[[[2, 0], [2, 2]]])


DATA = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, -6.0], [7.0, 8.0]])


def test_segment_ops_are_tensorflows():
    ids = [0, 2, 0, -1]  # a negative id drops its row; segments 1 and 3 are empty
    low, high = np.finfo(np.float64).min, np.finfo(np.float64).max
    _eq(tf.math.unsorted_segment_max(DATA, ids, 4), [[5, 2], [low, low], [3, 4], [low, low]])
    _eq(tf.math.unsorted_segment_min(DATA, ids, 4), [[1, -6], [high] * 2, [3, 4], [high] * 2])
    _eq(tf.math.unsorted_segment_mean(DATA, ids, 4), [[3, -2], [0, 0], [3, 4], [0, 0]])
    _eq(tf.math.unsorted_segment_max(tf.constant([1, 5, 3]), [1, 1, 0], 3),
        [3, 5, np.iinfo(np.int32).min], tf.int32)
    _eq(tf.math.unsorted_segment_max(tf.constant([-np.inf, 1.0]), [0, 1], 2), [-np.inf, 1.0])
    sorted_ids = np.array([0, 0, 2, 2])  # sorted: an empty segment is 0
    _eq(tf.math.segment_max(DATA, sorted_ids), [[3, 4], [0, 0], [7, 8]])
    _eq(tf.math.segment_min(DATA, sorted_ids), [[1, 2], [0, 0], [5, -6]])
    _eq(tf.math.segment_mean(DATA, sorted_ids), [[2, 3], [0, 0], [6, 1]])
    _eq(tf.math.segment_sum(DATA, sorted_ids), [[4, 6], [0, 0], [12, 2]])


TF_GRADS = {
    "repeat": lambda x: tf.repeat(x, [2, 0, 1, 3], axis=0) * 1.5 + tf.repeat(x, 2)[:6, None],
    "scatter_nd": lambda x: tf.scatter_nd([[1, 0], [1, 0], [0, 1]], x[:3, 0], [2, 2]),
    "tensor_scatter_nd_sub": lambda x: tf.tensor_scatter_nd_sub(x, [[3], [0], [3]], x[:3] ** 2),
    "tensor_scatter_nd_max": lambda x: tf.tensor_scatter_nd_max(x, [[3], [0], [3]], -x[1:]),
    "tensor_scatter_nd_min": lambda x: tf.tensor_scatter_nd_min(x, [[2, 1], [0, 0]], x[0]),
    # no empty segment of max or min: their value there, the dtype's lowest or highest,
    # would overflow the finite differences
    "unsorted_segments": lambda x: tf.math.unsorted_segment_max(x, [1, -1, 1, 0], 2) +
    tf.math.unsorted_segment_min(x, [1, 0, 1, 0], 2) * tf.math.unsorted_segment_mean(
        x, [2, 2, 0, 1], 3)[:2],
    "sorted_segments": lambda x: tf.math.segment_max(x, np.array([0, 0, 2, 2])) *
    tf.math.segment_mean(x, np.array([0, 1, 1, 2])) - tf.math.segment_min(
        x, np.array([0, 0, 2, 2])),
    "embedding_lookup": lambda x: tf.nn.embedding_lookup(x, [[3, 0], [3, 3]]) ** 2,
    "meshgrid": lambda x: tf.meshgrid(x[:, 0], x[:3, 1])[0] * tf.meshgrid(x[:, 0], x[:3, 1])[1],
    "reciprocal_no_nan": lambda x: tf.math.reciprocal_no_nan(x * x + 1.0),
    "polyval": lambda x: tf.math.polyval([x[0], 2.0, x[1]], x),
    "ensure_shape": lambda x: tf.ensure_shape(x, (4, None)) * x,
}


@pytest.mark.parametrize("name", sorted(TF_GRADS))
def test_tensorflow_name_gradients(name):
    check_grads(TF_GRADS[name], (DATA + RNG.uniform(0.1, 0.2, DATA.shape),), compiled=False)


def test_reciprocal_no_nan_gradient_is_zero_at_zero():
    x = tf.constant([0.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.math.reciprocal_no_nan(x)
    _eq(tape.gradient(y, x), [0.0, -0.25], tf.float32)


# ----- errors name the op -----


@pytest.mark.parametrize("call, error, words", [
    (lambda: np.pad(tf.constant(A), 1, mode="median"), TypeError, "numpy.pad.*median"),
    (lambda: np.pad(tf.constant(A), -1), ValueError, "negative"),
    (lambda: np.pad(tf.constant(A), 1.5), TypeError, "integral"),
    (lambda: np.split(tf.constant(A), 3, axis=1), ValueError, "equal division"),
    (lambda: np.repeat(tf.constant(A), [1, 2], axis=0), ValueError, "repeat.*2 repeats"),
    (lambda: np.repeat(tf.constant(A), -1), ValueError, "repeat.*0 or more"),
    (lambda: np.diff(tf.constant(2.0)), ValueError, "at least one dimensional"),
    (lambda: np.inner(tf.constant(A), tf.constant(B)), ValueError, "inner.*not aligned"),
    (lambda: np.vdot(tf.constant(A), tf.constant(B)), ValueError, "vdot"),
    (lambda: np.average(tf.constant(A), weights=np.ones(4)), TypeError, "Axis must be"),
    (lambda: np.average(tf.constant(A), weights=np.zeros((3, 4))), ZeroDivisionError, "zero"),
    (lambda: np.ptp(tf.constant(INTS > 0)), TypeError, "ptp"),
    (lambda: tf.repeat(tf.constant(A), [1.5, 2.0, 1.0], axis=0), TypeError, "repeat"),
    (lambda: tf.meshgrid([1, 2], indexing="yx"), ValueError, "meshgrid"),
    (lambda: tf.sequence_mask(tf.constant([1.0, 2.0])), TypeError, "sequence_mask"),
    (lambda: tf.ensure_shape(tf.constant(A), [3, 5]), ValueError, r"ensure_shape.*\[3, 5\]"),
    (lambda: tf.math.reciprocal_no_nan(tf.constant([1, 2])), TypeError, "reciprocal_no_nan"),
    (lambda: tf.math.polyval((1.0, 2.0), 3.0), ValueError, "polyval.*list"),
    (lambda: tf.math.unsorted_segment_max(DATA, [0, 5, 0, 0], 3), IndexError,
     "unsorted_segment_max"),
    (lambda: tf.math.segment_min(DATA, np.array([1, 0, 2, 2])), IndexError, "segment_min"),
    (lambda: tf.math.unsorted_segment_mean(INTS, [0, 1], 2), TypeError, "floats"),
    (lambda: tf.tensor_scatter_nd_max(DATA, [[1]], [[1.0]]), ValueError, "tensor_scatter_nd_max"),
    (lambda: tf.nn.embedding_lookup([DATA, DATA], [0]), TypeError, "one table"),
])
def test_bad_input_raises_naming_the_op(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_traced_values_that_fix_a_shape_raise_tracing_error():
    with pytest.raises(tf.TracingError, match="sequence_mask"):
        tf.differentiable(lambda x: tf.reduce_sum(tf.cast(tf.sequence_mask(x), tf.float64)))(
            np.array([1, 2], np.int32))
    with pytest.raises(tf.TracingError, match="segment_max"):
        tf.differentiable(lambda x, i: tf.reduce_sum(tf.math.segment_max(x, i)))(
            DATA, np.array([0, 0, 1, 1]))


# ----- compiled: two functions, each batching many of the ops, against eager -----


def _numpy_batch(a):
    """Many NumPy composites in one function: one kernel to compile."""
    parts = [np.pad(a, ((1, 0), (2, 1)), mode="reflect").sum(axis=0)[:4],
             np.pad(a, 1, mode="wrap")[1:4, 1:5].sum(axis=0),
             np.repeat(np.split(a, 2, axis=1)[1].sum(axis=1)[:1], 4),
             np.repeat(a, [1, 2, 1], axis=0)[:4].sum(axis=1),
             np.diff(a, axis=0, prepend=0.0).sum(axis=0),
             (np.triu(a, 1) - np.tril(a)).sum(axis=0),
             np.kron(a[:2, :2], a[:2, :2]).sum(axis=0),
             np.repeat(np.inner(a, a).sum(axis=0)[:1], 4) + np.vdot(a, a),
             np.repeat(np.column_stack([a[:, 0], a[:, 1]]).sum(axis=0)[:1], 4),
             np.logaddexp(a, a[::-1]).sum(axis=0),
             np.hypot(a, 2.0 * a[:, ::-1]).sum(axis=0),
             np.average(a, axis=0, weights=np.array([1.0, 2.0, 3.0])),
             np.ptp(a, axis=0)]
    return np.stack(parts) * np.where(np.all(np.isclose(a, a + 1e-12)), 1.0, 0.0)


def _tf_batch(x):
    parts = [tf.repeat(x, [2, 0, 1, 1], axis=0)[:, 0],
             tf.tensor_scatter_nd_max(x, [[3], [0], [3]], -x[1:])[:, 1],
             tf.tensor_scatter_nd_min(x, [[2], [0]], x[:2] * 2.0)[:, 0],
             tf.tensor_scatter_nd_sub(x, [[1], [1]], x[2:])[:, 1],
             tf.scatter_nd([[1], [3], [1]], x[:3, 0], [4]),
             tf.math.unsorted_segment_max(x, [1, -1, 1, 0], 4)[:, 0],
             tf.math.unsorted_segment_min(x, [1, 0, 1, 0], 4)[:, 1],
             tf.math.unsorted_segment_mean(x, [2, 2, 0, 1], 4)[:, 0],
             tf.nn.embedding_lookup(x, [3, 0, 3, 2])[:, 1],
             tf.meshgrid(x[:2, 0], x[:, 1])[1][:, 0],
             tf.math.reciprocal_no_nan(x - x[0])[:, 0],
             tf.math.polyval([x[0, 0], 2.0, x[1, 1]], x[:, 0]),
             tf.cast(tf.sequence_mask([1, 3, 0, 2], 2), x.dtype)[:, 1]]
    return tf.stack(parts)


@pytest.mark.slow  # two compiles of 750-line kernels: about 40 s of one core
@pytest.mark.parametrize("fn, x", [(_numpy_batch, A), (_tf_batch, DATA)],
                         ids=["numpy", "tensorflow"])
def test_compiled_equals_eager(fn, x):
    """One kernel a function (Numba compiles take seconds): its value and gradient of a
    random weighting of all the outputs, which any one output's error would change."""
    weight = RNG.normal(size=fn(tf.constant(x)).shape)
    value, grad = tf.differentiable(lambda v: tf.reduce_sum(fn(v) * weight)).value_and_grad(x)
    with tf.GradientTape() as tape:
        v = tf.constant(x)
        tape.watch(v)
        y = tf.reduce_sum(fn(v) * weight)
    np.testing.assert_allclose(value, y.numpy(), rtol=1e-12)
    np.testing.assert_allclose(grad, tape.gradient(y, v).numpy(), rtol=1e-10, atol=1e-12)


def test_index_arithmetic_in_narrow_dtypes_and_edge_values():
    """Found by helper 120: row numbers, segment numbers and mask positions were computed
    in the indices' dtype (int8's [1, 0] of 2 x 200 was row 144; uint8's segment 256 was
    0; a uint8 length's mask held 256..260 too), logaddexp of two equal 1e308 overflowed,
    diff's Python-number prepend kept float32, a scalar's pad raised IndexError and
    tensor_scatter_nd_max of bools NumPy's 'Invalid integer data type'."""
    table = np.arange(400.0).reshape(2, 200)
    assert tf.gather_nd(table, tf.constant([[1, 0]], tf.int8)).numpy().tolist() == [200.0]
    placed = tf.scatter_nd(tf.constant([[1, 0]], tf.int8), tf.constant([1.0]), (2, 200))
    assert np.argwhere(placed.numpy()).tolist() == [[1, 0]]
    moved = tf.tensor_scatter_nd_sub(tf.zeros((2, 300)), tf.constant([[1, 5]], tf.uint8),
                                     tf.constant([1.0]))
    assert np.argwhere(moved.numpy()).tolist() == [[1, 5]]
    empty = tf.math.unsorted_segment_max(tf.constant([1.0, 2.0]), tf.constant([0, 1], tf.uint8),
                                         257)
    assert empty.numpy()[256] == np.finfo(np.float32).min
    mask = tf.sequence_mask(tf.constant([5], tf.uint8), 300)
    assert np.flatnonzero(mask.numpy()).tolist() == [0, 1, 2, 3, 4]
    big = tf.constant(np.array([1e308, -1e308]))
    np.testing.assert_array_equal(np.logaddexp(big, big), [1e308, -1e308])
    assert np.diff(tf.constant(np.float32([1, 5])), prepend=0.1).dtype == tf.float64
    assert np.pad(tf.constant(3.0), 1).numpy() == 3.0
    with pytest.raises(TypeError, match="tensor_scatter_nd_max: tensor must hold numbers"):
        tf.tensor_scatter_nd_max(tf.constant([False, True]), [[0]], tf.constant([True]))


def test_xdivy_xlog1py_and_lbeta_are_tensorflows():
    # Helper 125 found them missing; the values and gradients below are TensorFlow 2.21's.
    xs = np.array([0.0, 1.0, 0.0, -2.0, 3.0], np.float32)
    ys = np.array([0.0, 2.0, np.nan, 0.0, -1.0], np.float32)
    want = {"xdivy": ([0, 0.5, 0, -np.inf, -3], [0, 0.5, 0, np.inf, -1],
                      [0, -0.25, 0, np.inf, -3]),
            "xlog1py": ([0, np.log(3), 0, 0, -np.inf], [0, np.log(3), 0, 0, -np.inf],
                        [0, 1 / 3, 0, -2, np.inf])}
    for name, (value, dx, dy) in want.items():
        x, y = tf.constant(xs), tf.constant(ys)
        with tf.GradientTape() as tape:
            tape.watch([x, y])
            r = getattr(tf.math, name)(x, y)
        gx, gy = tape.gradient(r, [x, y])
        for got, expected in ((r, value), (gx, dx), (gy, dy)):
            np.testing.assert_allclose(got.numpy(), np.float32(expected), rtol=1e-6)
    a = tf.constant([[1.0, 2.0], [0.5, 3.0]])
    with tf.GradientTape() as tape:
        tape.watch(a)
        r = tf.math.lbeta(a)
    np.testing.assert_allclose(r.numpy(), [-0.69314718, 0.06453852], rtol=1e-6)
    np.testing.assert_allclose(tape.gradient(r, a).numpy(),
                               [[-1.5, -0.5], [-3.06666667, -0.18037231]], rtol=1e-6)
    assert tf.math.lbeta(np.zeros((2, 0))).numpy().tolist() == [-np.inf, -np.inf]
    assert tf.math.log_softmax is tf.nn.log_softmax


def test_multiply_no_nan_is_tensorflows():
    # Helper 125 found it missing; values and gradients are TensorFlow 2.21's: 0 (not -0)
    # wherever y is 0, and the gradient wrt y there x times the upstream one.
    x = tf.constant([-2.0, np.inf, np.nan, 3.0, 2.0])
    y = tf.constant([0.0, 0.0, -0.0, 2.0, -0.0])
    w = tf.constant([1.0, 0.0, 2.0, 3.0, np.inf])
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        r = tf.math.multiply_no_nan(x, y)
        s = tf.reduce_sum(r * w)
    assert r.numpy().tolist() == [0, 0, 0, 6, 0] and not np.signbit(r.numpy()).any()
    gx, gy = tape.gradient(s, [x, y])
    np.testing.assert_array_equal(gx.numpy(), [0, 0, 0, 6, 0])
    np.testing.assert_array_equal(gy.numpy(), [-2, 0, np.nan, 9, np.inf])


def test_float_only_composites_take_python_numbers_beside_floats():
    # As TensorFlow's (a Python number takes the tensor's dtype); they raised TypeError.
    x = tf.constant([1.0, 0.0])
    assert tf.math.divide_no_nan(x, 2).numpy().tolist() == [0.5, 0.0]
    assert tf.math.xdivy(x, 2).numpy().tolist() == [0.5, 0.0]
    got = tf.math.xlog1py(x, 1)
    assert got.dtype == tf.float32 and got.numpy().tolist() == [np.float32(np.log(2)), 0.0]
    assert tf.nn.l2_loss(2.0).numpy() == 2.0
    # Python numbers alone settle as TensorFlow's (float32); a float64 before (helper 132)
    for got in (tf.math.divide_no_nan(3.0, 0), tf.math.xdivy(0, 2.0)):
        assert got.dtype == tf.float32 and float(got) == 0.0
    for op, args in ((tf.math.xdivy, (1, 2)), (tf.math.reciprocal_no_nan, ([1, 0],)),
                     (tf.math.xdivy, (tf.constant([1]), 2.0)), (tf.nn.l2_loss, ([1],)),
                     (tf.math.reduce_std, ([1, 2],))):
        with pytest.raises(tf.errors.InvalidArgumentError, match="expects float inputs"):
            op(*args)


_CUMULATIVE_LOGSUMEXP = {  # (exclusive, reverse): TensorFlow 2.21's value and gradient
    (False, False): ([[1.0, 1.0, 3.1269280110429727, 3.4076059644443806],
                      [0.0, 0.6931471805599453, 1.0986122886681096, 1.3862943611198906]],
                     [[-0.5973759473484572, 0.0, 2.9750117118210575, 0.12236423552739878],
                      [1.125, 0.125, 1.125, 0.125]]),
    (False, True): ([[3.4076059644443806, 3.313261687518223, 3.313261687518223, 2.0],
                     [1.3862943611198906, 1.0986122886681096, 0.6931471805599453, 0.0]],
                    [[0.09003057317038043, 0.0, 1.3962995344048261, 1.0136698924247924],
                     [0.25, -0.41666666666666674, 1.0833333333333333, 1.5833333333333333]]),
    (True, False): ([[-np.inf, 1.0, 1.0, 3.1269280110429727],
                     [-np.inf, 0.0, 0.6931471805599453, 1.0986122886681096]],
                    [[1.059601461011058, 0.0, 0.4403985389889411, 0.0],
                     [-0.3333333333333335, 1.6666666666666665, 0.16666666666666669, 0.0]]),
    (True, True): ([[3.313261687518223, 3.313261687518223, 2.0, -np.inf],
                    [1.0986122886681096, 0.6931471805599453, 0.0, -np.inf]],
                   [[0.0, 0.0, -0.7310585786300048, 2.7310585786300043],
                    [0.0, 0.33333333333333337, -0.6666666666666666, 2.333333333333333]]),
}


def test_cumulative_logsumexp_is_tensorflows():
    # Helper 125 found it missing. An entry 1000 below the others neither underflows the
    # running total nor takes a gradient; exclusive's first entry is log(0).
    x = tf.constant([[1.0, -1000.0, 3.0, 2.0], [0.0, 0.0, 0.0, 0.0]], tf.float64)
    w = tf.constant([1.0, -2.0, 3.0, 0.5], tf.float64)
    for (exclusive, reverse), (value, grad) in _CUMULATIVE_LOGSUMEXP.items():
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.math.cumulative_logsumexp(x, axis=1, exclusive=exclusive, reverse=reverse)
            total = tf.reduce_sum(y * w)
        np.testing.assert_allclose(y.numpy(), value, rtol=1e-13)
        np.testing.assert_allclose(tape.gradient(total, x).numpy(), grad, rtol=1e-12)

    @tf.differentiable
    def both(x):  # the -inf of the exclusive running total left out
        ahead = tf.math.cumulative_logsumexp(x, axis=1, exclusive=True, reverse=True)
        return tf.reduce_sum(tf.math.cumulative_logsumexp(x, axis=1) * w) + \
            tf.reduce_sum(ahead[:, :3] * w[:3])

    np.testing.assert_allclose(both.grad(x.numpy()), np.add(_CUMULATIVE_LOGSUMEXP[False, False][1],
                               _CUMULATIVE_LOGSUMEXP[True, True][1]), rtol=1e-12)
    assert tf.math.cumulative_logsumexp([np.inf, 1.0, -np.inf]).numpy().tolist() == [np.inf] * 3
    with pytest.raises(TypeError, match="cumulative_logsumexp.*expects float inputs"):
        tf.math.cumulative_logsumexp(tf.constant([1, 2]))
