"""TensorFlow names made of srcxform's ops (the composites in layout.py, selection.py,
mathfuncs.py and nn.py): values, dtypes and shapes as TensorFlow documents them,
gradients against finite differences, errors that name the op, and a compiled function
batching many of them against eager.
"""

import numpy as np
import pytest
from helpers import assert_tensor_equal as _eq

import srcxform as tf
from srcxform.testing import check_grads

RNG = np.random.default_rng(0)
A = RNG.normal(size=(3, 4))
INTS = np.array([[0, 3, -2], [5, 0, 1]], np.int32)


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


# ----- compiled: one function batching many of the ops, against eager -----


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


@pytest.mark.parametrize("fn, x", [(_tf_batch, DATA)], ids=["tensorflow"])
def test_compiled_equals_eager(fn, x):
    compiled = tf.differentiable(fn)
    eager = fn(tf.constant(x))
    np.testing.assert_allclose(compiled(x), eager.numpy(), rtol=1e-12, atol=1e-12)
    weight = RNG.normal(size=eager.shape)
    loss = tf.differentiable(lambda v: tf.reduce_sum(fn(v) * weight))
    with tf.GradientTape() as tape:
        v = tf.constant(x)
        tape.watch(v)
        y = tf.reduce_sum(fn(v) * weight)
    np.testing.assert_allclose(loss.grad(x), tape.gradient(y, v).numpy(), rtol=1e-10,
                               atol=1e-12)
