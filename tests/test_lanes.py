"""Float sums in compiled code add chunks of terms in eight lanes (codegen/lanes.py): in a
fixed order, so the same at every call, and at least as accurate as one accumulator."""

import math

import numpy as np
import pytest

import srcxform as tf
from srcxform.runtime import CHUNK


def _lane_sum(terms):
    """runtime.arrays.lane_sum, in Python: term j in lane j % 8, the last len % 8 in lane 0,
    then the lanes pairwise."""
    lanes = [0.0] * 8
    full = len(terms) - len(terms) % 8
    for j in range(full):
        lanes[j % 8] += terms[j]
    for t in terms[full:]:
        lanes[0] += t
    a = lanes
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))


def _reference(values):
    """The order codegen/lanes.py documents: chunk by chunk, each chunk's lane sum."""
    total = 0.0
    for start in range(0, len(values), CHUNK):
        total += _lane_sum([float(v) for v in values[start:start + CHUNK]])
    return total


def _sequential(values):
    total = 0.0
    for v in values:
        total += float(v)
    return total


def _total(x):
    return tf.reduce_sum(x)


def _row_totals(x):
    return tf.reduce_sum(x, axis=1)


TOTAL = tf.differentiable(_total)
ROW_TOTALS = tf.differentiable(_row_totals)

# Every tail 0..7 of a lane block, within a chunk, at a chunk's end and past it.
SIZES = [2, 3, 5, 7, 8, 9, 15, 16, 17, 23, CHUNK - 1, CHUNK, CHUNK + 1, CHUNK + 7,
         3 * CHUNK + 4, 3 * CHUNK + 5, 3 * CHUNK + 6]


def _adversarial(n, seed):
    """Terms whose magnitudes span 40 decades, with signs mixed: large ones cancel, and one
    accumulator loses the small ones beside them."""
    rng = np.random.default_rng(seed)
    return rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-20, 20, n)


@pytest.mark.parametrize("n", SIZES)
def test_a_sum_adds_in_the_documented_order_at_every_size(n):
    x = _adversarial(n, n)
    value, grad = TOTAL.value_and_grad(x)
    assert value == _reference(x)  # exactly: the order is fixed
    assert TOTAL.value_and_grad(x)[0] == value  # and the same at the next call
    np.testing.assert_array_equal(grad, np.ones(n))
    assert TOTAL.cache_info().kernels == 1  # one kernel for every size


def test_a_sum_along_rows_adds_each_row_in_the_documented_order():
    x = np.stack([_adversarial(CHUNK + 13, seed) for seed in range(3)])
    for cols in (2, 7, 8, 9, CHUNK + 13):
        rows = np.asarray(ROW_TOTALS(x[:, :cols].copy()))
        assert rows.tolist() == [_reference(row) for row in x[:, :cols]]


def test_lanes_are_at_least_as_accurate_as_one_accumulator():
    # One large term first, then many small ones: one accumulator rounds each small one
    # away; lanes 1-7 add the small ones among themselves.
    x = np.concatenate([[1.0], np.full(4000, 1e-16)])
    exact = math.fsum(x)
    assert abs(TOTAL.value_and_grad(x)[0] - exact) < abs(_sequential(x) - exact) / 4
    # Over adversarial data, within the documented error bound, and no worse than one
    # accumulator over many trials.
    lanes_error = sequential_error = 0.0
    eps = np.finfo(np.float64).eps
    for seed in range(20):
        x = _adversarial(3 * CHUNK + 5, 100 + seed)
        exact = math.fsum(x)
        error = abs(TOTAL.value_and_grad(x)[0] - exact)
        bound = (x.size / CHUNK + CHUNK / 8 + 3) * eps * np.abs(x).sum()
        assert error <= bound
        lanes_error += error
        sequential_error += abs(_sequential(x) - exact)
    assert lanes_error <= sequential_error


def test_a_chunked_loop_reads_its_arrays_with_plain_vector_loads():
    """The chunk loop counts chunks and offsets from 0, so LLVM can prove an index is
    non-negative: Numba's wraparound of negative indices folds away and the terms' loop
    vectorizes with contiguous loads and stores. Written `for i in range(start, start +
    count)`, it vectorized with gathers and scatters, 4x slower (lse's exp-and-sum)."""
    import re

    import numba

    def logsumexp(x):
        top = tf.reduce_max(x)
        return tf.math.log(tf.reduce_sum(tf.exp(x - top))) + top

    x = np.random.default_rng(3).random(3 * CHUNK + 5)
    source = tf.differentiable(logsumexp).source(x)
    assert "t2_terms[i0_offset] = t1_i" in source, source
    module: dict = {}
    # Compiled afresh (not loaded from the cache), so Numba keeps its LLVM to inspect.
    exec(compile(source, "<generated>", "exec"), module)  # noqa: S102 -- our text
    kernel = numba.njit(error_model="numpy")(module["logsumexp__value_and_grad"])
    bx = np.empty_like(x)
    top = x.max()
    value = kernel(x, bx)
    llvm = kernel.inspect_llvm(kernel.signatures[0])
    assert re.search(r"<\d+ x double>", llvm)  # vectorized
    assert not re.search(r"masked\.(gather|scatter)", llvm)
    assert value == pytest.approx(np.log(np.exp(x - top).sum()) + top, rel=1e-14)
    e = np.exp(x - top)
    np.testing.assert_allclose(bx, e / e.sum(), rtol=1e-13)


def _quads(x):
    return tf.reduce_sum(tf.reshape(x, (-1, 4)) * 2.0, 1)


def test_a_sum_of_fewer_terms_than_lanes_fixed_by_the_trace_adds_them_in_place():
    # The reshape fixes each sum at 4 terms, under the 8 lanes: each term is added into
    # its row's total, in order (lane 0's order), with no chunk; 8 terms keep the lanes.
    x = _adversarial(40, 5)
    f = tf.differentiable(_quads)
    source = f._kernel("value", (x,), {})[0].source
    assert "lane_sum" not in source and "_terms" not in source, source
    assert np.asarray(f(x)).tolist() == [_sequential(2.0 * row) for row in x.reshape(-1, 4)]
    eights = tf.differentiable(lambda x: tf.reduce_sum(tf.reshape(x, (-1, 8)), 1))
    assert "lane_sum" in eights._kernel("value", (x,), {})[0].source
