"""Compiled concat and stack (srcxform.runtime.arrays.concatenate: one loop over a tuple of
arrays of one dtype and rank, whatever their number and layouts; np.concatenate for mixed
dtypes) give NumPy's values, and their gradients the tape's."""

import numpy as np
import pytest
from numba import njit

import srcxform as tf
from helpers import assert_compiled_is_the_tapes
from srcxform import numba_adapter
from srcxform.runtime import arrays

RNG = np.random.default_rng(5)


@njit
def _concat_many(a, b, c, d):
    return arrays.concatenate((a, b, c, d, a, b, c, d, a, b, c, d, a, b, c, d, a, b, c, d,
                               a, b), 1)


@njit
def _concat(xs, axis):
    return arrays.concatenate(xs, axis)


def test_twenty_two_arrays_along_a_middle_axis_are_numpys():
    xs = [RNG.normal(size=(2, k, 3)) for k in (1, 0, 4, 2)]
    expected = np.concatenate([*xs * 5, xs[0], xs[1]], 1)
    np.testing.assert_array_equal(_concat_many(*xs), expected)


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_each_axis_and_dtype_is_numpys(axis, dtype):
    xs = tuple((RNG.normal(size=(2, 3, 4)) > 0).astype(dtype) if dtype == np.bool_
               else RNG.normal(size=(2, 3, 4)).astype(dtype) for _ in range(3))
    out = _concat(xs, axis)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, np.concatenate(xs, axis))


def test_views_of_other_layouts_are_copied_in_order():
    base = RNG.normal(size=(4, 6))
    xs = (base[::2], base[1::2])  # strided views: one type, not contiguous
    np.testing.assert_array_equal(_concat(xs, 0), np.concatenate(xs, 0))
    mixed = (base[:2], base.T[:2], base[:2, ::-1])  # C, F and strided layouts
    np.testing.assert_array_equal(_concat(mixed, 1), np.concatenate(mixed, 1))
    base.flags.writeable = False
    np.testing.assert_array_equal(_concat((base, base[::-1]), 0),
                                  np.concatenate((base, base[::-1]), 0))


@pytest.mark.skipif(not numba_adapter.enabled(), reason="without Numba's internals, one "
                    "join is compiled for each tuple of layouts")
def test_one_join_is_compiled_for_every_mix_of_layouts():
    base = RNG.normal(size=(4, 4))
    mixes = [(base, base), (base, base.T), (base[::2], base[:2]), (base[:, 1:], base.T[::-1])]
    for xs in mixes:
        np.testing.assert_array_equal(_concat(xs, 1), np.concatenate(xs, 1))
    pairs = [xs for xs, _ in arrays._join.signatures
             if xs.count == 2 and xs.dtype.ndim == 2 and str(xs.dtype.dtype) == "float64"]
    assert [xs.dtype.layout for xs in pairs] == ["A"]


def test_mixed_dtypes_are_numpys():
    xs = (np.arange(3, dtype=np.int64), RNG.normal(size=2), np.ones(1, np.float32))
    out = _concat(xs, 0)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, np.concatenate(xs, 0))


def _stacked(x, w):
    rows = tf.stack([x * float(k) + w for k in range(22)])
    joined = tf.concat([rows, tf.transpose(rows, (0, 2, 1))[:, :1, :]], 1)
    return tf.reduce_sum(tf.sin(joined) * joined)


STACKED = tf.differentiable(_stacked, wrt=(0, 1))


@pytest.mark.slow  # ten seconds of Numba on a cold cache
def test_a_stack_of_twenty_two_and_its_gradient_compiled_equal_the_tape():
    x, w = RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3))
    assert_compiled_is_the_tapes(STACKED, _stacked, x, w)
    assert "arrays.concatenate((" in STACKED.source(x, w)


# ----- a concat that only loops read is never built: each read loads the piece -----


def _ode_rate(x, y):
    """GradBench ode's right-hand side, y_0' = x_0, y_i' = x_i y_{i-1}, read by a loop."""
    rate = tf.concat([x[:1], x[1:] * y[:-1]], 0)
    return tf.reduce_sum(tf.exp(y + 0.5 * rate))


def _columns(a, b):
    joined = tf.concat([a, tf.sin(b), a * b], 1)
    return tf.reduce_sum(tf.reduce_sum(joined * joined, axis=1) ** 2)


ODE_RATE = tf.differentiable(_ode_rate, wrt=(0, 1))
COLUMNS = tf.differentiable(_columns, wrt=(0, 1))


@pytest.mark.parametrize("n", [7, 513, 2, 1])
def test_a_concat_only_loops_read_is_read_where_its_pieces_lie(n):
    x, y = RNG.random(n), RNG.random(n)
    source = ODE_RATE.source(x, y)
    assert "arrays.concatenate" not in source, source
    if n > 1:
        assert "if i0 < 1 else" in source, source  # the piece holding element i0
    assert_compiled_is_the_tapes(ODE_RATE, _ode_rate, x, y)


def test_a_parallel_loop_reading_a_concat_runs_its_whole_range_in_prange():
    """A piece's test is not a slice's bound: chunking.py's interior (where a slice's
    tests hold) would have been the first piece alone, the rest of the loop serial."""
    x, y = RNG.random(7), RNG.random(7)
    source = tf.differentiable(_ode_rate, wrt=(0, 1), parallel=True).source(x, y)
    forward = source.split("# ---- adjoint ----")[0]
    assert "for i0 in prange(n0):" in forward and "lo = " not in forward, forward


def test_pieces_along_a_second_axis_each_read_at_their_own_offset():
    a, b = RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3))
    source = COLUMNS.source(a, b)
    assert "arrays.concatenate" not in source, source
    assert "i1 - n1" in source and "i1 - 2 * n1" in source, source
    assert_compiled_is_the_tapes(COLUMNS, _columns, a, b)


def test_a_concat_of_many_pieces_or_mixed_dtypes_is_built():
    x = RNG.random(5)

    def five(x):
        joined = tf.concat([x, x, x, x, x], 0)
        return tf.reduce_sum(joined * joined)

    def mixed(x):
        joined = tf.concat([x, tf.cast(x, tf.float32)], 0)
        return tf.reduce_sum(joined * joined)

    assert "arrays.concatenate" in tf.differentiable(five).source(x)
    # Pieces of two dtypes meet in one first (concat casts them), then fuse into the loop.
    assert "arrays.concatenate" not in tf.differentiable(mixed).source(x)
