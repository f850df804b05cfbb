"""TensorFlow names that ported programs use (issue 30, items 7 and 8): linalg.cross, the
nn losses and activations, reverse, strided_slice, truediv, map_fn and the dtype names.
Each is a composite of srcxform's ops: eager values are TensorFlow 2.21's for the same
call, gradients are checked against finite differences, eager against compiled.
"""

import numpy as np
import pytest
from helpers import assert_tensor_equal as _eq

import srcxform as tf
from srcxform.testing import check_grads

LOGITS = np.array([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0]])
SOFT_LABELS = np.array([[0.0, 1.0, 0.5], [1.0, 0.2, 0.0]])


def _close(t, expected, dtype=tf.float32, rtol=1e-6):
    assert t.dtype == dtype
    np.testing.assert_allclose(t.numpy(), expected, rtol=rtol)


# ----- linalg.cross -----


def test_cross_is_tensorflows():
    a = tf.constant([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    b = tf.constant([[0.0, 1.0, 4.0], [2.0, 1.0, 1.0]])
    _eq(tf.linalg.cross(a, b), [[5.0, -4.0, 1.0], [-3.0, 3.5, 2.5]], tf.float32)
    _eq(tf.linalg.cross([1, 0, 0], [0, 1, 0]), [0, 0, 1], tf.int32)
    with pytest.raises(ValueError, match="3"):
        tf.linalg.cross(tf.constant([1.0, 0.0]), tf.constant([0.0, 1.0]))
    with pytest.raises(ValueError, match="shape"):  # TensorFlow needs equal shapes
        tf.linalg.cross(a, tf.constant([0.0, 1.0, 0.0]))


def test_cross_gradients():
    rng = np.random.default_rng(0)
    check_grads(lambda a, b: tf.reduce_sum(tf.linalg.cross(a, b) * [1.0, 2.0, 3.0]),
                (rng.normal(size=(2, 3)), rng.normal(size=(2, 3))), order=2)


# ----- nn -----


def test_l2_loss_is_half_the_sum_of_squares():
    _eq(tf.nn.l2_loss(tf.constant([[1.0, 2.0], [3.0, 4.0]], tf.float64)), 15.0, tf.float64)
    _eq(tf.nn.l2_loss(3.0), 4.5, tf.float32)
    with pytest.raises(TypeError):
        tf.nn.l2_loss(tf.constant([1, 2]))
    check_grads(lambda x: tf.nn.l2_loss(x), (LOGITS,), order=2)


def test_relu6_and_its_gradient_are_tensorflows():
    x = tf.constant([-1.0, 0.0, 3.0, 6.0, 7.0, np.nan])
    _eq(tf.nn.relu6(x), [0.0, 0.0, 3.0, 6.0, 6.0, np.nan], tf.float32)
    _eq(tf.nn.relu6(tf.constant([-1, 0, 3, 6, 7])), [0, 0, 3, 6, 6], tf.int32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.relu6(x[:5])
    _eq(tape.gradient(y, x), [0.0, 0.0, 1.0, 0.0, 0.0, 0.0], tf.float32)  # 0 at 0 and 6
    check_grads(lambda x: tf.reduce_sum(tf.nn.relu6(x * 4)), (LOGITS,))


def test_bias_add_adds_along_the_channels():
    _eq(tf.nn.bias_add(tf.ones((2, 3)), [1.0, 2.0, 3.0]), [[2, 3, 4]] * 2, tf.float32)
    _eq(tf.nn.bias_add(tf.ones((1, 2, 1, 1)), [1.0, 2.0], data_format="NCHW"),
        [[[[2.0]], [[3.0]]]], tf.float32)
    _eq(tf.nn.bias_add(tf.ones((1, 2)), [1.0, 2.0], data_format="NC"), [[2.0, 3.0]])
    for value, bias in (((2, 3), (2,)), ((2, 3), (1, 3)), ((3,), (3,))):
        with pytest.raises(ValueError):  # TensorFlow's InvalidArgumentError
            tf.nn.bias_add(tf.ones(value), tf.ones(bias))
    check_grads(lambda x, b: tf.reduce_sum(tf.nn.bias_add(x, b) ** 2), (LOGITS, LOGITS[0]))


def test_sparse_softmax_cross_entropy_is_tensorflows():
    logits = tf.constant(LOGITS, tf.float32)
    _close(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1, 2], logits=logits),
           [0.4643688, 0.07077423])
    three_d = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.constant([[1], [2]], tf.int64), logits=tf.reshape(logits, (2, 1, 3)))
    _close(three_d, [[0.4643688], [0.07077423]])
    with tf.GradientTape() as tape:
        tape.watch(logits)
        y = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1, 2], logits=logits)
    _close(tape.gradient(y, logits), [[0.2312239, -0.3714683, 0.14024438],
                                      [0.0512636, 0.017064173, -0.068327785]], rtol=1e-5)
    for labels in ([3, 0], [-1, 0]):
        with pytest.raises(IndexError):  # TensorFlow's InvalidArgumentError
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    with pytest.raises(TypeError):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1.0, 2.0], logits=logits)
    with pytest.raises(ValueError):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1], logits=logits)


def test_compiled_sparse_softmax_cross_entropy_equals_eager():
    def loss(logits, labels):
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))

    check_grads(loss, (LOGITS, np.array([1, 2])), wrt=0, order=2)


def test_weighted_cross_entropy_is_tensorflows():
    logits, labels = tf.constant(LOGITS, tf.float32), tf.constant(SOFT_LABELS, tf.float32)
    _close(tf.nn.weighted_cross_entropy_with_logits(labels, logits, pos_weight=2.5),
           [[1.3132617, 0.31732, 1.0796347], [1.6109917, 0.9072402, 3.0485873]])
    _close(tf.nn.weighted_cross_entropy_with_logits(labels, logits, tf.constant([1., 2., 3.])),
           [[1.3132617, 0.253856, 1.198154], [0.64439666, 0.77591413, 3.0485873]])
    _close(tf.nn.weighted_cross_entropy_with_logits([1.0, 0.0], [-100.0, 100.0], 2.0),
           [200.0, 100.0])  # stable where exp would overflow
    with pytest.raises(ValueError, match="shape"):
        tf.nn.weighted_cross_entropy_with_logits(labels[:1], logits, 2.5)
    check_grads(lambda z, x: tf.reduce_sum(tf.nn.weighted_cross_entropy_with_logits(z, x, 2.5)),
                (SOFT_LABELS, LOGITS), order=2)


# ----- shapes -----

X = np.arange(24.0).reshape(2, 3, 4)


def test_reverse_is_tensorflows():
    x = tf.constant([[1, 2], [3, 4]])
    _eq(tf.reverse(x, [0]), [[3, 4], [1, 2]], tf.int32)
    _eq(tf.reverse(x, [-1, 0]), [[4, 3], [2, 1]], tf.int32)
    _eq(tf.reverse(x, tf.constant([1])), [[2, 1], [4, 3]], tf.int32)
    _eq(tf.reverse(x, []), [[1, 2], [3, 4]], tf.int32)
    for axis in ([1, 1], [2], 1):
        with pytest.raises(ValueError):  # TensorFlow's InvalidArgumentError
            tf.reverse(x, axis)
    check_grads(lambda x: tf.reduce_sum(tf.reverse(x, [0, 2]) * X), (X,))


STRIDED = [  # (begin, end, strides, masks): TensorFlow's result is X[index]
    (([0, 1, 0], [2, 3, 4], [1, 1, 2], {}), np.s_[0:2, 1:3, 0:4:2]),
    (([1, -1, 0], [0, 0, 4], [-1, -1, 1], {}), np.s_[1:0:-1, -1:0:-1, 0:4]),
    (([1, 1, 1], [2, 3, 3], None, {"begin_mask": 0b101}), np.s_[:2, 1:3, :3]),
    (([1, 1, 1], [2, 2, 3], None, {"end_mask": 0b110}), np.s_[1:2, 1:, 1:]),
    (([1, 0, 2], [2, 3, 3], None, {"shrink_axis_mask": 0b101}), np.s_[1, 0:3, 2]),
    (([0, 0], [1, 2], None, {"new_axis_mask": 0b01}), np.s_[None, 0:2]),
    (([0, 1], [1, 2], None, {"ellipsis_mask": 0b01}), np.s_[..., 1:2]),
    (([1, 0, 1], [2, 0, 2], None, {"ellipsis_mask": 0b010}), np.s_[1:2, ..., 1:2]),
    (([0, 0, 0], [10, 20, 30], None, {}), np.s_[0:10, 0:20, 0:30]),
    (([-1], [0], None, {"shrink_axis_mask": 1}), np.s_[-1]),
]


@pytest.mark.parametrize("args, index", STRIDED)
def test_strided_slice_is_the_index_its_masks_spell(args, index):
    begin, end, strides, masks = args
    _eq(tf.strided_slice(tf.constant(X), begin, end, strides, **masks), X[index], tf.float64)


def test_strided_slice_errors_and_gradient():
    x = tf.constant(X)
    with pytest.raises(IndexError):
        tf.strided_slice(x, [5], [6], shrink_axis_mask=1)
    with pytest.raises(ValueError):
        tf.strided_slice(x, [0], [1], [0])
    with pytest.raises(ValueError):
        tf.strided_slice(x, [0, 0], [1])
    check_grads(lambda x: tf.reduce_sum(tf.strided_slice(x, [0, 1, 0], [2, 3, 4], [1, 1, 2])
                                        ** 2), (X,))


def test_truediv_casts_integers_to_floats_as_tensorflow():
    _eq(tf.math.truediv(tf.constant([1, 2]), tf.constant([2, 4])), [0.5, 0.5], tf.float64)
    _eq(tf.math.truediv(tf.constant([1., 2.]), 2), [0.5, 1.0], tf.float32)
    _eq(tf.truediv(3, 2), 1.5, tf.float64)
    int8 = tf.constant([1, 2], tf.int8)
    _eq(tf.math.truediv(int8, int8 * 2), [0.5, 0.5], tf.float32)  # narrow ints: float32
    _eq(int8 / 2, [0.5, 1.0], tf.float32)


# ----- dtypes -----


@pytest.mark.parametrize("name, dtype", [
    ("int8", np.int8), ("int16", np.int16), ("uint8", np.uint8), ("uint16", np.uint16),
    ("uint32", np.uint32), ("uint64", np.uint64), ("half", np.float16),
    ("double", np.float64)])
def test_tensorflows_dtype_names_exist(name, dtype):
    assert getattr(tf, name) == np.dtype(dtype) == getattr(tf.dtypes, name)
    assert tf.zeros((2,), getattr(tf, name)).dtype == dtype


def test_small_integer_dtypes_compute_eager_and_compiled():
    x = tf.constant([1, 2], tf.int8)
    _eq(x + 1, [2, 3], tf.int8)
    _eq(tf.cast(tf.constant([1.5, 300.0]), tf.uint8) // 2, [0, 22], tf.uint8)
    double = tf.differentiable(lambda x, y: tf.reduce_sum(tf.cast(x * 2, tf.float32) * y))
    assert double(np.array([1, 2], np.uint8), np.ones(2, np.float32)).numpy() == 6.0
    half = tf.differentiable(lambda x: tf.math.truediv(x, 2))
    _eq(half(np.array([1, 2], np.int8)), [0.5, 1.0], tf.float32)


# ----- map_fn -----


def test_map_fn_maps_rows_and_structures():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    _eq(tf.map_fn(lambda r: r * 2, x), [[2, 4], [6, 8]], tf.float32)
    _eq(tf.map_fn(tf.reduce_sum, x), [3.0, 7.0], tf.float32)
    pair = tf.map_fn(lambda xy: (xy[0] * xy[1], xy[0]), (tf.constant([1., 2.]),
                                                         tf.constant([3., 4.])))
    _eq(pair[0], [3.0, 8.0], tf.float32)
    _eq(pair[1], [1.0, 2.0], tf.float32)
    cast = tf.map_fn(lambda r: tf.cast(r, tf.int32), x, fn_output_signature=tf.int32)
    _eq(cast, [[1, 2], [3, 4]], tf.int32)
    with pytest.raises(TypeError, match="int32"):  # the signature says what fn returns
        tf.map_fn(lambda r: r, x, fn_output_signature=tf.int32)
    with pytest.raises(ValueError):
        tf.map_fn(lambda r: r, tf.constant(1.0))
    _eq(tf.map_fn(lambda r: r, tf.zeros((0, 3))), np.zeros((0,)), tf.float32)


def test_map_fn_gradients_eager_and_compiled():
    check_grads(lambda x: tf.reduce_sum(tf.map_fn(lambda r: tf.sin(r) * r[0], x)),
                (X[0],), order=2)


def test_compiled_map_fn_is_one_kernel_for_every_row_count():
    f = tf.differentiable(lambda x: tf.reduce_sum(tf.map_fn(lambda r: r * r[0], x)))
    for rows in (2, 5):
        x = np.arange(rows * 3.0).reshape(rows, 3)
        np.testing.assert_allclose(f.grad(x), _row_grad(x))
    assert f.cache_info().kernels == 1


def _row_grad(x):
    grad = np.repeat(x[:, :1], 3, axis=1)
    grad[:, 0] += x.sum(axis=1)
    return grad
