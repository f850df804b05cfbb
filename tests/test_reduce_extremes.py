"""reduce_max and reduce_min (issue 34), eager and compiled, against NumPy bit for bit: a
NaN anywhere gives NaN, infs, integer dtypes, float32, partial reductions. Mixed signed
zeros, where NumPy's answer depends on the order its SIMD lanes meet them in, follow
IEEE 754-2019's maximum and minimum (-0.0 below +0.0), as JAX's do. The compiled loop is
vecmath.maximum, LLVM's llvm.maximum, which its loop vectorizer turns into vector code."""

import re

import numba
import numpy as np
import pytest

import srcxform as tf
from srcxform.runtime import vecmath

nan, inf = np.nan, np.inf

# Shared by the tests: one compile per dtype and rank.
EXTREMES = tf.differentiable(lambda x: (tf.reduce_max(x), tf.reduce_min(x)), wait=True)
PARTIAL = tf.differentiable(lambda x: (
    tf.reduce_max(x, axis=0), tf.reduce_max(x, axis=1, keepdims=True),
    tf.reduce_min(x, axis=0, keepdims=True), tf.reduce_min(x, axis=1),
    tf.reduce_max(x, axis=(0, 1), keepdims=True)), wait=True)


def largest(x):
    return tf.reduce_max(x)


MAX = tf.differentiable(largest, wait=True)
ROW_MINS = tf.differentiable(lambda x: tf.reduce_sum(tf.reduce_min(x, axis=1)), wait=True)


def _same(got, want):
    """Bitwise equal up to NaN payloads: dtype, shape, values, NaNs and zeros' signs."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def _both(x):
    """(max, min) of x eagerly and compiled, which must agree; then the eager pair."""
    eager = (tf.reduce_max(x).numpy(), tf.reduce_min(x).numpy())
    compiled = [t.numpy() for t in EXTREMES(x)]
    for e, c in zip(eager, compiled):
        _same(c, e)
    return eager


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [5, 37, 1000])  # under a vector, a vector and a tail, many
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_a_nan_anywhere_gives_nan_as_numpys(dtype, n, where):
    x = np.random.default_rng(n).standard_normal(n).astype(dtype)
    x[{"first": 0, "middle": n // 2, "last": n - 1}[where]] = nan
    top, bottom = _both(x)
    _same(top, np.max(x))
    _same(bottom, np.min(x))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("values", [[1.0, inf, -2.0], [-inf, -inf], [inf, inf], [-inf, 3.0],
                                    [-inf, nan, inf], [2.5, -7.0, 2.5, 3e38, -1e-30]])
def test_infs_and_finite_values_as_numpys(dtype, values):
    x = np.array(values, dtype)
    top, bottom = _both(x)
    _same(top, np.max(x))
    _same(bottom, np.min(x))


@pytest.mark.parametrize("values", [[-0.0, 0.0], [0.0, -0.0], [-0.0, -0.0], [0.0, 0.0],
                                    [-0.0, -1.0, 0.0, -0.0], [0.0, 1.0, -0.0]])
def test_mixed_signed_zeros_order_negative_below_positive(values):
    for dtype in (np.float64, np.float32):
        x = np.array(values, dtype)
        top, bottom = _both(x)
        if np.max(x) == 0:  # +0.0 if any zero is, else -0.0
            _same(top, dtype(0.0 if (~np.signbit(x[x == 0])).any() else -0.0))
        if np.min(x) == 0:  # -0.0 if any zero is
            _same(bottom, dtype(-0.0 if np.signbit(x[x == 0]).any() else 0.0))


def test_many_mixed_zeros_give_the_same_zero_whatever_their_order():
    rng = np.random.default_rng(0)
    for n in (2, 9, 64, 1001):
        x = np.where(rng.random(n) < 0.5, -0.0, 0.0)
        plus, minus = rng.choice(n, 2, replace=False)
        x[plus], x[minus] = 0.0, -0.0
        top, bottom = _both(x)
        _same(top, np.float64(0.0))
        _same(bottom, np.float64(-0.0))
    for zero in (0.0, -0.0):  # all zeros of one sign: that sign
        top, bottom = _both(np.full(17, zero))
        _same(top, np.float64(zero))
        _same(bottom, np.float64(zero))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
def test_integers_as_numpys(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(1)
    for x in (rng.integers(info.min, info.max, 301, dtype=dtype, endpoint=True),
              np.array([info.min, info.max, 0, 1], dtype), np.array([info.min] * 3, dtype)):
        top, bottom = _both(x)
        _same(top, np.max(x))
        _same(bottom, np.min(x))


def test_empty_reductions_give_the_identity():
    top, bottom = _both(np.zeros(0))
    _same(top, np.float64(-inf))
    _same(bottom, np.float64(inf))
    top, bottom = _both(np.zeros(0, np.int32))
    _same(top, np.int32(np.iinfo(np.int32).min))
    _same(bottom, np.int32(np.iinfo(np.int32).max))


def _partials_numpy(x):
    return (np.max(x, axis=0), np.max(x, axis=1, keepdims=True),
            np.min(x, axis=0, keepdims=True), np.min(x, axis=1),
            np.max(x, axis=(0, 1), keepdims=True))


def test_partial_reductions_as_numpys():
    x = np.random.default_rng(2).standard_normal((7, 33))
    x[3, 5] = nan  # a NaN row and column
    x[:, 9] = inf
    x[0, :] = -inf
    x[6, 20] = -inf
    want = _partials_numpy(x)
    for got, eager, expected in zip(PARTIAL(x), _eager_partials(x), want):
        _same(got.numpy(), expected)
        _same(eager, expected)


def _eager_partials(x):
    return [tf.reduce_max(x, axis=0).numpy(), tf.reduce_max(x, axis=1, keepdims=True).numpy(),
            tf.reduce_min(x, axis=0, keepdims=True).numpy(), tf.reduce_min(x, axis=1).numpy(),
            tf.reduce_max(x, axis=(0, 1), keepdims=True).numpy()]


def test_partial_reductions_of_signed_zeros_agree_with_eager():
    x = np.zeros((3, 4))
    x[:, 0] = -0.0  # a column of -0.0: its max is -0.0
    x[1, 1] = -0.0
    x[2, 2] = -0.0
    x[0, 3] = -1.0
    got, eager = PARTIAL(x), _eager_partials(x)
    for g, e in zip(got, eager):
        _same(g.numpy(), e)
    _same(eager[0], np.array([-0.0, 0.0, 0.0, 0.0]))  # a max: +0.0 if one zero is
    _same(eager[3], np.array([-1.0, -0.0, -0.0]))  # a min: -0.0 if one zero is


def test_the_gradient_shares_ties_equally_as_before():
    x = np.array([1.0, 3.0, -2.0, 3.0, 3.0])
    np.testing.assert_array_equal(MAX.grad(x), [0, 1 / 3, 0, 1 / 3, 1 / 3])
    zeros = np.array([-0.0, 0.0, -1.0])  # -0.0 == 0.0: both are maxima
    np.testing.assert_array_equal(MAX.grad(zeros), [0.5, 0.5, 0.0])
    assert np.isnan(MAX.grad(np.array([1.0, nan, 2.0]))).all()


@pytest.mark.slow  # a gradient kernel of its own
def test_the_gradient_of_partial_minima_matches_the_tapes():
    x = np.array([[2.0, -1.0, -1.0], [0.5, 4.0, 0.5], [7.0, 7.0, 7.0]])
    v = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.reduce_min(v, axis=1))
    eager = tape.gradient(y, v).numpy()
    np.testing.assert_array_equal(eager, [[0, 0.5, 0.5], [0.5, 0, 0.5], [1 / 3] * 3])
    np.testing.assert_array_equal(ROW_MINS.grad(x), eager)


def test_the_source_shows_the_max_with_its_line():
    source = MAX.source(np.ones(3))
    line = r"# test_reduce_extremes\.py:\d+: return tf\.reduce_max\(x\)"
    assert re.search(line + r"\n +(\w+) = vecmath\.maximum\(\1, x\[i0\]\)\n", source)


def test_llvm_vectorizes_a_loop_of_maxima():
    @numba.njit
    def largest(x):
        acc = -inf
        for i in range(x.shape[0]):
            acc = vecmath.maximum(acc, x[i])
        return acc

    _same(largest(np.array([1.0, nan, 2.0])), np.float64(nan))
    optimized = largest.inspect_llvm(largest.signatures[0])
    assert re.search(r"llvm\.maximum\.v\d+f64", optimized)  # a vector of maxima at once


def _offset_extremes(a, b, x):
    total = a + b  # int32: Numba alone would compute it in int64
    return (tf.reduce_sum(x) + tf.cast(tf.reduce_max(total), tf.float64)
            + tf.cast(tf.reduce_min(total * 2), tf.float64))


def test_narrow_integer_arithmetic_keeps_its_dtype_and_wraps_as_eager():
    """The extremes of int32 sums, computed in the loop: the sum wraps around at 2**31 as
    TensorFlow's does (2**31 - 1 + 1 is -2**31), and the step compares two int32s."""
    a = np.array([2**31 - 1, 5, -3, 2**30], np.int32)
    b = np.array([1, 2, 3, 2**30], np.int32)
    x = np.arange(4.0)
    f = tf.differentiable(_offset_extremes, wrt=2, wait=True)
    want = _offset_extremes(tf.constant(a), tf.constant(b), tf.constant(x)).numpy()
    # a + b wraps to [-2**31, 7, 0, -2**31]: its max is 7; doubled, [0, 14, 0, 0]: min 0
    assert want == 6.0 + 7.0 + 0.0
    assert float(f(a, b, x)) == want
    np.testing.assert_array_equal(f.grad(a, b, x), np.ones(4))
