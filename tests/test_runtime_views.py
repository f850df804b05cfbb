"""Compiled transposes and slice copies (srcxform.runtime.arrays.transpose and copy_into:
views and copies that compile nothing per kernel) give NumPy's values on arrays of every
layout, and the gradients of the ops that emit them are the tape's."""

import itertools
import sys

import numpy as np
import pytest
from numba import njit

import srcxform as tf
from helpers import assert_compiled_is_the_tapes
from srcxform.runtime import arrays

RNG = np.random.default_rng(11)
BASE = RNG.normal(size=(4, 6, 5))
LAYOUTS = [BASE, BASE[:, ::2, 1:], np.asfortranarray(BASE), BASE[::-1, :, ::3]]


@njit
def _transposed(x, perm):
    return arrays.transpose(x, perm)


@njit
def _copied(out, value, start):
    arrays.copy_into(out[start:start + value.shape[0]], value)
    return out


@pytest.mark.parametrize("perm", list(itertools.permutations(range(3))))
def test_transpose_is_numpys_on_each_layout(perm):
    for x in LAYOUTS:
        got = _transposed(x, perm)
        np.testing.assert_array_equal(got, np.transpose(x, perm))
        assert np.shares_memory(got, x)  # a view, as NumPy's


def test_copy_into_writes_only_the_view():
    for value in (BASE[:2, ::2], np.asfortranarray(BASE[1:3, :3])):
        out = np.zeros((5,) + value.shape[1:])
        expected = out.copy()
        expected[1:3] = value
        np.testing.assert_array_equal(_copied(out, value, 1), expected)


def _sliced(x, w):
    y = tf.transpose(x, (2, 0, 1))[1:, :, ::2]  # its gradient embeds g in zeros
    return tf.reduce_sum(tf.sin(y) * w)


SLICED = tf.differentiable(_sliced, wrt=(0, 1))


def test_gradients_through_transposes_and_slices_are_the_tapes():
    for x in LAYOUTS[:2]:
        w = RNG.normal(size=np.transpose(x, (2, 0, 1))[1:, :, ::2].shape)
        assert_compiled_is_the_tapes(SLICED, _sliced, x, w)
    source = SLICED.source(x, w)
    assert "arrays.transpose(x, (2, 0, 1))" in source and "arrays.copy_into(" in source


def _weighted_slice(x, c):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x[1:3, ::-1]
    return tf.reduce_sum(tape.gradient(y, x, output_gradients=c) * np.arange(20.0).reshape(5, 4))


WEIGHTED = tf.differentiable(_weighted_slice)


@pytest.mark.parametrize("weight, expected", [
    (np.ones((2, 4)), 60.0), (np.array([[1.0], [2.0]]), 98.0),
    (np.array([1.0, 2.0, 3.0, 4.0]), 140.0), (np.array(3.0), 180.0),
    (np.arange(8.0).reshape(4, 2), 232.0)])  # as many elements: reshaped, as TensorFlow
def test_output_gradients_broadcast_to_the_target_eagerly_and_compiled(weight, expected):
    """Each op's gradient takes a cotangent of its output's shape: a broadcastable weight
    is broadcast first (compiled, the slice's gradient copied a (2, 1) weight's first
    column only, and a wider one past its buffer)."""
    x = np.zeros((5, 4))
    assert _weighted_slice(tf.constant(x), tf.constant(weight)).numpy() == expected
    assert float(WEIGHTED(x, weight)) == expected


def test_output_gradients_that_do_not_broadcast_raise_eagerly_and_compiled():
    x, weight = np.zeros((5, 4)), np.arange(12.0).reshape(2, 6)
    for call in (lambda: _weighted_slice(tf.constant(x), tf.constant(weight)),
                 lambda: WEIGHTED(x, weight)):
        with pytest.raises(ValueError, match=r"output_gradients of shape \(2, 6\) neither"):
            call()


@njit
def _allocated(size):
    return arrays.empty((size,), np.float64)


def _advised_for_huge_pages(array):
    """Whether Linux holds the array's first whole page in a mapping advised for huge
    pages (VmFlags `hg` in /proc/self/smaps)."""
    address = -(-array.ctypes.data // 4096) * 4096
    inside = False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            field = line.split()[0]
            if not field.endswith(":"):  # a mapping's first line: "start-end perms ..."
                start, end = (int(bound, 16) for bound in field.split("-"))
                inside = start <= address < end
            elif inside and field == "VmFlags:":
                return "hg" in line.split()[1:]
    raise AssertionError(f"{address:#x} is not mapped")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's madvise")
def test_arrays_of_4_mib_or_more_ask_for_huge_pages_as_numpys_do():
    big = _allocated(1 << 19)  # 4 MiB
    assert _advised_for_huge_pages(big)
    big[:] = 1.5  # the memory is the array's, whole
    assert big.sum() == 1.5 * (1 << 19)
    # A kernel's product (BLAS's output) and its outputs are allocated so too.
    f = tf.differentiable(lambda a, b: tf.matmul(a, b) * 2.0, wait=True)
    a, b = RNG.normal(size=(1024, 3)), RNG.normal(size=(3, 1024))
    product = np.asarray(f(a, b))
    np.testing.assert_allclose(product, 2.0 * a @ b, rtol=1e-14)
    assert _advised_for_huge_pages(product)
