"""Convolution, pooling and normalization (srcxform/ops/conv.py, ops/normalization.py):
values and gradients against TensorFlow 2.21's (the numbers below were printed by it,
float64) and against the convolution's definition over many window geometries; then
compiled (Numba and SRCXFORM_JIT=0) against eager, one kernel for two batch sizes, and
the errors for inputs that do not fit.

The op table (tests/samples.py) checks their gradients against finite differences.
"""

import itertools

import numpy as np
import pytest

import srcxform as tf
from srcxform.testing import check_grads

X = (np.arange(40) % 7 - 3.0).reshape(1, 5, 4, 2)
W = (np.arange(36) % 5 - 2.0).reshape(3, 2, 2, 3)
# Distinct values: no ties in a pooling window.
P = np.array([7, 3, 12, 0, 21, 15, 9, 1, 18, 4, 23, 11, 6, 16, 2, 13, 20, 5, 24, 8, 10, 19, 14,
              22, 17], np.float64).reshape(1, 5, 5, 1)


def _with_gradients(f, *args):
    """f(*args) and the gradients of sum(f * arange) wrt each argument (eager)."""
    xs = [tf.constant(a) for a in args]
    with tf.GradientTape() as tape:
        tape.watch(xs)
        y = f(*xs)
        weighted = tf.reduce_sum(y * np.arange(y.numpy().size).reshape(y.shape))
    return [y.numpy()] + [g.numpy() for g in tape.gradient(weighted, xs)]


# ----- against TensorFlow -----

# (strides, padding): output shape, output, gradients wrt X and W, from TensorFlow.
CONV2D = {
    (2, "SAME"): ((1, 3, 2, 3),
                  [0, 2, -6, 10, 3, 1, 3, 4, -5, -1, 15, 1, 7, 1, -10, 6, -2, 0],
                  [5, -1, -2, 2, 14, -10, 1, 2, -23, 9, 1, -12, -35, 21, -8, -12, 23, -19, 4, 2,
                   32, -28, 7, 2, -47, 33, -17, -12, -59, 45, -26, -12, 41, -37, 10, 2, 50, -46,
                   13, 2],
                  [-39, -42, -45, 3, 4, 5, -18, -20, -22, 24, 26, 28, 6, 5, 4, -12, -14, -16, 33,
                   37, 41, -27, -31, -35, -21, -24, -27, -3, -2, -1, -6, -8, -10, 12, 14, 16]),
    (1, "VALID"): ((1, 3, 3, 3),
                   [4, 3, -3, -5, -9, 7, -7, -7, 3, 3, 4, -5, 15, -1, -2, -1, 15, 1, -5, -9, 7,
                    -7, -7, 3, -9, -5, -1],
                   [-1, -2, -8, -3, -17, -3, 2, -10, -23, 6, -23, -11, -20, -20, 6, -17, -27, -7,
                    -22, -26, -31, -23, -4, -22, 46, -23, 40, -14, 40, -11, -24, 15, -22, 59,
                    -80, 84, -92, 96, -73, 22],
                   [90, 90, 90, 30, 32, 34, 33, 37, 41, -48, -49, -50, 30, 32, 34, 33, 37, 41,
                    -48, -49, -50, -24, -23, -22, 33, 37, 41, -48, -49, -50, -24, -23, -22, -63,
                    -67, -71]),
}


@pytest.mark.parametrize("strides, padding", CONV2D)
def test_conv2d_as_tensorflow(strides, padding):
    shape, *expected = CONV2D[strides, padding]
    got = _with_gradients(lambda x, w: tf.nn.conv2d(x, w, strides, padding), X, W)
    assert got[0].shape == shape
    for g, want in zip(got, expected):
        np.testing.assert_array_equal(g.ravel(), want)


def test_pools_as_tensorflow():
    """3x3 windows, stride 2, SAME: overlapping windows, and padding on both sides (the
    average over the window's part inside the image, as TensorFlow's)."""
    max_y, max_g = _with_gradients(lambda x: tf.nn.max_pool2d(x, 3, 2, "SAME"), P)
    np.testing.assert_array_equal(max_y.ravel(), [15, 18, 21, 23, 24, 24, 20, 24, 24])
    np.testing.assert_array_equal(max_g.ravel(), [0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 3, 0, 0, 0, 0,
                                                  0, 6, 0, 24, 0, 0, 0, 0, 0, 0])
    avg_y, avg_g = _with_gradients(lambda x: tf.nn.avg_pool2d(x, 3, 2, "SAME"), P)
    np.testing.assert_allclose(avg_y.ravel(), [
        8.5, 7.166666666666667, 10.75, 15.166666666666666, 12.222222222222221, 12.0, 15.5,
        17.333333333333332, 17.75], rtol=1e-14)
    np.testing.assert_allclose(avg_g.ravel(), [
        0.0, 0.16666666666666666, 0.16666666666666666, 0.6666666666666666, 0.5, 0.5,
        1.1111111111111112, 0.611111111111111, 1.9444444444444444, 1.3333333333333333, 0.5,
        0.9444444444444444, 0.4444444444444444, 1.2777777777777777, 0.8333333333333333, 2.0,
        3.611111111111111, 1.611111111111111, 4.444444444444445, 2.833333333333333, 1.5,
        2.6666666666666665, 1.1666666666666665, 3.1666666666666665, 2.0], rtol=1e-14)


def test_max_pool_ties_share_the_gradient():
    # TensorFlow's MaxPoolGrad gives all of it to the first of the tied values instead.
    x = tf.constant(np.array([1.0, 3.0, 3.0, 0.0]).reshape(1, 2, 2, 1))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.max_pool2d(x, 2, 2, "VALID")
    np.testing.assert_array_equal(tape.gradient(y, x).numpy().ravel(), [0, 0.5, 0.5, 0])


def test_pools_by_rank_with_tensorflows_window_forms():
    """tf.nn.max_pool and avg_pool pick the 1-D, 2-D or 3-D pool by the input's rank, and
    take ksize and strides as an int or 1, N or N + 2 ints (values from TensorFlow)."""
    seq = np.arange(10.0).reshape(1, 10, 1)
    for y, want in ((tf.nn.max_pool(seq, 3, 2, "SAME"), [2, 4, 6, 8, 9]),
                    (tf.nn.avg_pool(seq, [3], [2], "SAME"), [1, 3, 5, 7, 8.5]),
                    (tf.nn.avg_pool(seq, [1, 3, 1], [1, 2, 1], "VALID"), [1, 3, 5, 7]),
                    (tf.nn.max_pool1d(seq, [3], [2], "VALID"), [2, 4, 6, 8]),
                    (tf.nn.avg_pool1d(seq, 3, 2, "SAME"), [1, 3, 5, 7, 8.5])):
        assert y.shape == (1, len(want), 1)
        np.testing.assert_array_equal(y.numpy().ravel(), want)
    np.testing.assert_array_equal(tf.nn.max_pool(P, [3, 3], [1, 2, 2, 1], "SAME").numpy(),
                                  tf.nn.max_pool2d(P, 3, 2, "SAME").numpy())
    np.testing.assert_array_equal(tf.nn.avg_pool(P, [1, 2, 3, 1], [2, 1], "VALID").numpy(),
                                  tf.nn.avg_pool2d(P, (2, 3), (2, 1), "VALID").numpy())
    assert tf.nn.max_pool(np.ones((2, 5, 7, 3)), [2, 3], [1, 2], "VALID").shape == (2, 4, 3, 3)
    assert tf.nn.max_pool(np.ones((1, 3, 3, 3, 1)), 2, 1, "VALID").shape == (1, 2, 2, 2, 1)


def _pool3d_reference(x, ksize, strides, padding, reduce):
    """Each window's max or mean over the part of it inside the volume, one at a time."""
    sizes, starts = [], []
    for size, k, s in zip(x.shape[1:4], ksize, strides):
        if padding == "SAME":
            out = -(-size // s)
            starts.append(-(max(0, (out - 1) * s + k - size) // 2))
        else:
            out = (size - k) // s + 1
            starts.append(0)
        sizes.append(out)
    y = np.zeros((x.shape[0], *sizes, x.shape[4]))
    for index in itertools.product(*map(range, sizes)):
        box = tuple(slice(max(0, start + i * s), start + i * s + k)
                    for i, start, s, k in zip(index, starts, strides, ksize))
        y[(slice(None),) + index] = reduce(x[(slice(None),) + box], axis=(1, 2, 3))
    return y


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_pool3d_as_defined(padding):
    x = np.random.default_rng(4).normal(size=(2, 4, 5, 6, 3))
    for ksize, strides in (((2, 3, 2), (1, 2, 2)), ((3, 2, 4), (2, 1, 3)), ((1, 1, 1), 1)):
        strides3 = strides if isinstance(strides, tuple) else (strides,) * 3
        np.testing.assert_allclose(
            tf.nn.max_pool3d(x, ksize, strides, padding).numpy(),
            _pool3d_reference(x, ksize, strides3, padding, np.max), rtol=1e-14)
        np.testing.assert_allclose(
            tf.nn.avg_pool(x, [1, *ksize, 1], strides, padding).numpy(),
            _pool3d_reference(x, ksize, strides3, padding, np.mean), rtol=1e-13)


def test_pool1d_and_pool3d_gradients_against_finite_differences():
    rng = np.random.default_rng(5)
    seq, vol = rng.normal(size=(2, 7, 2)), rng.normal(size=(1, 3, 4, 5, 2))
    check_grads(lambda x: tf.nn.max_pool1d(x, 3, 2, "SAME"), [seq], compiled=False)
    check_grads(lambda x: tf.nn.avg_pool1d(x, 3, 2, "SAME"), [seq], compiled=False)
    check_grads(lambda x: tf.nn.max_pool3d(x, 2, [1, 2, 2], "SAME"), [vol], compiled=False)
    check_grads(lambda x: tf.nn.avg_pool3d(x, [2, 2, 3], 2, "SAME"), [vol], compiled=False)


V = np.array([[3.0, -4.0, 0.0], [1.0, 2.0, 2.0]])
U = np.array([[1.0, 2.0, -1.0], [0.5, -3.0, 2.0]])


def _weighted_gradient(f, x, weights):
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = f(xt)
        total = tf.reduce_sum(y * weights)
    return y.numpy(), tape.gradient(total, xt).numpy()


def test_normalization_as_tensorflow():
    y, g = _weighted_gradient(lambda x: tf.nn.l2_normalize(x, axis=1), V, U)
    np.testing.assert_allclose(y, [[0.6, -0.8, 0.0], [1 / 3, 2 / 3, 2 / 3]], rtol=1e-15)
    np.testing.assert_allclose(g, [[0.32000000000000006, 0.24, -0.2],
                                   [0.2222222222222222, -0.8888888888888888, 0.7777777777777777]],
                               rtol=1e-14)
    mean, variance = tf.nn.moments(V, axes=[0])
    np.testing.assert_array_equal(mean.numpy(), [2.0, -1.0, 1.0])
    np.testing.assert_array_equal(variance.numpy(), [1.0, 9.0, 1.0])
    _, g = _weighted_gradient(lambda x: tf.nn.moments(x, axes=[0])[1], V, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(g, [[1.0, -6.0, -3.0], [-1.0, 6.0, 3.0]], rtol=1e-15)
    y, g = _weighted_gradient(lambda x: tf.nn.batch_normalization(
        x, *tf.nn.moments(x, axes=[0]), np.array([0.5, 0.0, -1.0]), np.array([2.0, 1.0, 0.5]),
        0.01), V, U)
    np.testing.assert_allclose(y, [[2.490074380419979, -0.9994449069791544, -1.4975185951049945],
                                   [-1.4900743804199785, 0.9994449069791544,
                                    -0.5024814048950053]], rtol=1e-14)
    np.testing.assert_allclose(g, [[0.00492592668420766, 0.0009243848566213853,
                                    -0.007388890026311601],
                                   [-0.004925926684207882, -0.0009243848566213853,
                                    0.007388890026311601]], rtol=1e-9)


def test_l2_normalize_of_zeros_is_zeros():
    np.testing.assert_array_equal(tf.nn.l2_normalize(np.zeros((2, 3)), axis=1).numpy(), 0)


def test_moments_second_order_is_tensorflows():
    """Not the variance's exact second derivative: TensorFlow stops the mean's gradient in
    the variance, and its nested tapes give these numbers; so do srcxform's."""
    xt = tf.constant(np.array([[3.0, -4.0, 0.0], [1.0, 2.0, 2.0], [0.5, 1.0, -1.0]]))
    with tf.GradientTape() as outer:
        outer.watch(xt)
        with tf.GradientTape() as inner:
            inner.watch(xt)
            z = tf.reduce_sum(tf.nn.moments(xt, axes=[0])[1] * [1.0, 2.0, 3.0])
        g = inner.gradient(z, xt)
        gg = tf.reduce_sum(g * g)
    np.testing.assert_allclose(outer.gradient(gg, xt).numpy(), [
        [1.3333333333333333, -13.037037037037035, -2.6666666666666665],
        [-0.4444444444444444, 8.296296296296296, 13.333333333333334],
        [-0.8888888888888888, 4.7407407407407405, -10.666666666666666]], rtol=1e-13)


# ----- against the definition -----


def _same_pads(size, k, stride, dilation):
    """TensorFlow's SAME padding, as its documentation states it."""
    out = -(-size // stride)
    total = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def _direct_conv2d(x, w, strides, padding, dilations):
    """out[b, i, j] = sum over p, q of x_padded[b, i*s + p*d, j*s + q*d] @ w[p, q]."""
    kh, kw = w.shape[:2]
    pads = [(0, 0), (0, 0)] if padding == "VALID" else [
        _same_pads(n, k, s, d) for n, k, s, d in zip(x.shape[1:3], (kh, kw), strides, dilations)]
    xp = np.pad(x, [(0, 0)] + pads + [(0, 0)])
    oh, ow = ((n - (k - 1) * d - 1) // s + 1 for n, k, s, d in
              zip(xp.shape[1:3], (kh, kw), strides, dilations))
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]))
    for i, j, p, q in itertools.product(range(oh), range(ow), range(kh), range(kw)):
        row, col = i * strides[0] + p * dilations[0], j * strides[1] + q * dilations[1]
        out[:, i, j] += xp[:, row, col] @ w[p, q]
    return out


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_conv2d_and_conv1d_as_defined(padding):
    rng = np.random.default_rng(0)
    for size, kernel, strides, dilations in itertools.product(
            [(5, 7), (6, 4)], [(3, 3), (2, 1), (1, 4)], [(1, 1), (2, 2), (1, 3)],
            [(1, 1), (2, 1)]):
        x = rng.normal(size=(2,) + size + (3,))
        w = rng.normal(size=kernel + (3, 2))
        want = _direct_conv2d(x, w, strides, padding, dilations)
        got = tf.nn.conv2d(x, w, strides, padding, dilations=dilations).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12,
                                   err_msg=f"{size} {kernel} {strides} {dilations}")
        # conv1d: the same over images one pixel high.
        got = tf.nn.conv1d(x[:, 0], w[0], strides[1], padding, dilations=dilations[1]).numpy()
        want = _direct_conv2d(x[:, :1], w[:1], (1, strides[1]), padding, (1, dilations[1]))
        np.testing.assert_allclose(got, want[:, 0], rtol=1e-12, atol=1e-12)


def test_conv2d_explicit_padding():
    rng = np.random.default_rng(1)
    x, w = rng.normal(size=(2, 5, 4, 3)), rng.normal(size=(3, 2, 3, 2))
    padded = np.pad(x, [(0, 0), (1, 2), (0, 1), (0, 0)])
    np.testing.assert_allclose(
        tf.nn.conv2d(x, w, 2, [[0, 0], [1, 2], [0, 1], [0, 0]]).numpy(),
        tf.nn.conv2d(padded, w, 2, "VALID").numpy(), rtol=1e-14)


def test_dtypes():
    x32, w32 = X.astype(np.float32), W.astype(np.float32)
    assert tf.nn.conv2d(x32, w32, 1, "SAME").dtype == np.float32
    assert tf.nn.conv2d(x32, W, 1, "SAME").dtype == np.float64  # NumPy's promotion
    assert tf.nn.max_pool2d(x32, 2, 2, "VALID").dtype == np.float32
    mean, variance = tf.nn.moments(np.ones((2, 3), np.float16), axes=[0])
    assert mean.dtype == variance.dtype == np.float16


# ----- compiled -----


def _net(x, w):
    y = tf.nn.relu(tf.nn.conv2d(x, w, 2, "SAME"))
    return (tf.reduce_sum(tf.nn.max_pool2d(y, 3, 2, "SAME") ** 2)
            + tf.reduce_sum(tf.nn.avg_pool2d(y, 2, 1, "VALID"))
            + tf.reduce_sum(tf.nn.l2_normalize(y, axis=-1)))


@pytest.mark.slow
@pytest.mark.parametrize("jit", ["1", "0"])
def test_compiled_as_eager_one_kernel_for_two_batch_sizes(jit, monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    compiled = tf.differentiable(_net, wrt=(0, 1))
    rng = np.random.default_rng(2)
    w = rng.normal(size=(3, 2, 3, 4))
    for batch in (2, 5):  # odd image sizes: SAME pads one side more than the other
        x = rng.normal(size=(batch, 7, 5, 3))
        value, (gx, gw) = compiled.value_and_grad(x, w)
        xt, wt = tf.constant(x), tf.constant(w)
        with tf.GradientTape() as tape:
            tape.watch([xt, wt])
            y = _net(xt, wt)
        ex, ew = tape.gradient(y, [xt, wt])
        np.testing.assert_allclose(value, y.numpy(), rtol=1e-12)
        np.testing.assert_allclose(gx, ex.numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(gw, ew.numpy(), rtol=1e-12, atol=1e-12)
    assert compiled.cache_info().kernels == 1


def _pools(seq, vol):
    return (tf.reduce_sum(tf.nn.max_pool(seq, 3, 2, "SAME") ** 2)
            + tf.reduce_sum(tf.nn.avg_pool1d(seq, 2, 1, "VALID") ** 2)
            + tf.reduce_sum(tf.nn.max_pool(vol, 2, [1, 2, 1], "SAME") ** 2)
            + tf.reduce_sum(tf.nn.avg_pool(vol, [2, 1, 2], 2, "SAME") ** 2))


@pytest.mark.slow
@pytest.mark.parametrize("jit", ["1", "0"])
def test_compiled_pool1d_and_pool3d_as_eager_one_kernel_for_two_sizes(jit, monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    compiled = tf.differentiable(_pools, wrt=(0, 1))
    rng = np.random.default_rng(6)
    # No size of 1 (the signature tells it apart) and odd depths: SAME pads a stride-2 axis
    # by its size's parity, a guard.
    for batch, depth in ((2, 3), (3, 5)):
        seq, vol = rng.normal(size=(batch, 7, 2)), rng.normal(size=(batch, depth, 5, 4, 2))
        value, grads = compiled.value_and_grad(seq, vol)
        xs = [tf.constant(seq), tf.constant(vol)]
        with tf.GradientTape() as tape:
            tape.watch(xs)
            y = _pools(*xs)
        np.testing.assert_allclose(value, y.numpy(), rtol=1e-12)
        for got, want in zip(grads, tape.gradient(y, xs)):
            np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-12)
    assert compiled.cache_info().kernels == 1


def _pooled(x, w):
    y = tf.nn.conv2d(x, w, 2, "SAME")
    return (tf.reduce_sum(tf.nn.avg_pool2d(y * y, 2, 1, "VALID") ** 2)
            + tf.reduce_sum(tf.nn.max_pool2d(y, 2, 2, "SAME") ** 3))


@pytest.mark.slow  # a second-order kernel of convolutions and pools
def test_compiled_second_order_as_eager():
    """The gradient of a compiled gradient: patches and fold, each the other's VJP."""
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=(2, 5, 4, 2)), rng.normal(size=(2, 2, 2, 3))
    grad_w = tf.differentiable(_pooled, wrt=1).grad
    compiled = tf.differentiable(lambda x, w: tf.reduce_sum(grad_w(x, w) ** 2), wrt=(0, 1))
    xt, wt = tf.constant(x), tf.constant(w)
    with tf.GradientTape() as outer:
        outer.watch([xt, wt])
        with tf.GradientTape() as inner:
            inner.watch(wt)
            y = _pooled(xt, wt)
        z = tf.reduce_sum(inner.gradient(y, wt) ** 2)
    for got, want in zip(compiled.grad(x, w), outer.gradient(z, [xt, wt])):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-12)


def test_compiled_channel_mismatch_raises_as_eager():
    compiled = tf.differentiable(lambda x, w: tf.reduce_sum(tf.nn.conv2d(x, w, 1, "VALID")))
    w = np.ones((2, 2, 3, 1))
    assert compiled(np.ones((1, 4, 4, 3)), w).numpy() == 4 * 9 * 3 * 1
    with pytest.raises(tf.ShapeError, match="the input has 2 channels but the filters take 3"):
        compiled(np.ones((1, 4, 4, 2)), w)


# ----- bad input -----


@pytest.mark.parametrize("call, error, message", [
    (lambda: tf.nn.conv2d(np.ones((1, 4, 4, 2)), np.ones((3, 3, 3, 1)), 1, "SAME"),
     ValueError, (r"conv2d: the input has 2 channels but the filters take 3 \(input "
                  r"f64\[1,4,4,2\], filters f64\[3,3,3,1\]\)")),
    (lambda: tf.nn.conv2d(np.ones((4, 4, 2)), np.ones((3, 3, 2, 1)), 1, "SAME"),
     ValueError, r"conv2d: input must be NHWC images \(rank 4\), got f64\[4,4,2\]"),
    (lambda: tf.nn.conv2d(np.ones((1, 4, 4, 2)), np.ones((3, 2, 1)), 1, "SAME"),
     ValueError, "conv2d: filters must be HWIO"),
    (lambda: tf.nn.conv2d(np.ones((1, 2, 4, 1)), np.ones((3, 3, 1, 1)), 1, "VALID"),
     ValueError, r"conv2d: a window spans 3 elements, more than the padded input's 2"),
    (lambda: tf.nn.conv2d(np.ones((1, 4, 4, 1)), np.ones((3, 3, 1, 1)), 1, "FULL"),
     ValueError, "conv2d: padding must be 'SAME' or 'VALID' or"),
    (lambda: tf.nn.conv2d(np.ones((1, 4, 4, 1)), np.ones((3, 3, 1, 1)), [1, 2, 2, 2], "SAME"),
     ValueError, "conv2d: strides must be an int or 1, 2 or 4 positive ints"),
    (lambda: tf.nn.conv2d(np.ones((1, 4, 4, 1)), np.ones((3, 3, 1, 1)), 0, "SAME"),
     ValueError, "conv2d: strides must be"),
    (lambda: tf.nn.conv2d(np.ones((1, 4, 4, 1)), np.ones((3, 3, 1, 1)), 1, "SAME",
                          data_format="NCHW"),
     ValueError, "conv2d: only data_format='NHWC' is supported"),
    (lambda: tf.nn.conv2d(np.ones((1, 4, 4, 1), np.int32), np.ones((3, 3, 1, 1)), 1, "SAME"),
     TypeError, r"conv2d: input must be float, got i32\[1,4,4,1\]"),
    (lambda: tf.nn.conv2d(np.ones((1, 4, 4, 1)), np.ones((3, 3, 1, 1), np.int32), 1, "SAME"),
     TypeError, r"conv2d: filters must be float, got i32\[3,3,1,1\]"),
    (lambda: tf.nn.conv1d(np.ones((1, 4, 4, 1)), np.ones((3, 1, 1)), 1, "SAME"),
     ValueError, "conv1d: input must be NWC"),
    (lambda: tf.nn.max_pool2d(np.ones((1, 4, 4, 1)), 2, 2, [[0, 0], [1, 1], [1, 1], [0, 0]]),
     ValueError, r"max_pool2d: padding must be 'SAME' or 'VALID', got"),
    (lambda: tf.nn.avg_pool2d(np.ones((1, 4, 4)), 2, 2, "SAME"),
     ValueError, "avg_pool2d: input must be NHWC images"),
    (lambda: tf.nn.max_pool(np.ones((3, 3)), 2, 1, "VALID"),
     ValueError, r"max_pool: input must have rank 3, 4 or 5 \(NWC, NHWC or NDHWC\), got f64\[3"),
    (lambda: tf.nn.avg_pool(np.ones((1, 2, 2, 2, 2, 1)), 2, 1, "VALID"),
     ValueError, "avg_pool: input must have rank 3, 4 or 5"),
    (lambda: tf.nn.max_pool(np.ones((1, 5, 5, 1)), [2, 3, 1], 1, "VALID"),
     ValueError, r"max_pool2d: ksize must be an int or 1, 2 or 4 positive ints \(NHWC"),
    (lambda: tf.nn.max_pool1d(np.ones((1, 5, 1)), [3, 1], 1, "VALID"),
     ValueError, r"max_pool1d: ksize must be an int or 1 or 3 positive ints \(NWC"),
    (lambda: tf.nn.avg_pool3d(np.ones((1, 4, 4, 1)), 2, 1, "VALID"),
     ValueError, r"avg_pool3d: input must be NDHWC volumes \(rank 5\), got f64\[1,4,4,1\]"),
    (lambda: tf.nn.max_pool(np.ones((1, 5, 1)), 2, 1, "VALID", data_format="NCW"),
     ValueError, "max_pool1d: only data_format='NWC' is supported"),
    (lambda: tf.nn.max_pool3d(np.ones((1, 2, 4, 4, 1)), 3, 1, "VALID"),
     ValueError, "max_pool3d: a window spans 3 elements, more than the padded input's 2"),
])
def test_errors_name_the_op_and_shapes(call, error, message):
    with pytest.raises(error, match=message):
        call()
