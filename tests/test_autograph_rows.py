"""A loop over a tensor's rows and len() of a tensor in converted code, as TensorFlow's
autograph gives them: a loop compiled once for every size (a fori_loop over the row
numbers), a length that stays a size of the input."""

import numpy as np
import pytest

import srcxform as tf


def rows_with_a_branch(x, weights):
    out = 0.0
    for w in weights:  # a Python list: as Python iterates it
        out = out + w * tf.reduce_sum(x)
    for (a, b) in [(1.0, 2.0)]:  # a target Python unpacks
        out = out + a * b
    for row in x:  # a tensor's rows: one compiled loop
        if tf.reduce_sum(row) > 0:
            out = out + tf.reduce_sum(tf.sin(row))
        else:
            out = out - 1.0
    else:  # noqa: PLW0120 - a loop's else, converted with it
        out = out * 2.0
    return out / len(x)


def _twin(x, weights):
    """rows_with_a_branch in NumPy, with its gradient."""
    out, grad = sum(weights) * x.sum() + 2.0, np.full(x.shape, float(sum(weights)))
    for k, row in enumerate(x):
        if row.sum() > 0:
            out, grad[k] = out + np.sin(row).sum(), grad[k] + np.cos(row)
        else:
            out -= 1.0
    return 2.0 * out / len(x), 2.0 * grad / len(x)


def test_a_loop_over_a_tensors_rows_is_one_kernel_for_every_size():
    f = tf.differentiable(rows_with_a_branch)
    rng = np.random.default_rng(7)
    for n in (3, 6, 2):
        x = rng.normal(size=(n, 2))
        value, grad = f.value_and_grad(x, [1.0, 2.0])
        want_value, want_grad = _twin(x, [1.0, 2.0])
        assert float(value) == pytest.approx(want_value, rel=1e-12)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-12)
    assert f.cache_info().kernels == 1
    assert "= fori_loop(0, n0, " in f.ir(x, [1.0, 2.0])


def first_two_rows(x):
    total, taken = 0.0, []
    for row in x:  # a break: not compiled as a loop, so it unrolls for the size
        total = total + tf.reduce_sum(row) * len(row)
        taken.append(row)
        if len(taken) == 2:
            break
    return total


def test_a_loop_over_rows_autograph_cannot_compile_unrolls_for_that_size():
    f = tf.differentiable(first_two_rows)
    for n in (3, 4, 3):
        x = np.arange(2.0 * n).reshape(n, 2)
        assert float(f(x)) == 2.0 * x[:2].sum()
    assert f.cache_info().kernels == 2  # one for each size: the unrolled loop guards it


def test_len_of_a_tensor_is_its_size_and_len_of_anything_else_is_pythons():
    f = tf.differentiable(lambda x: tf.reduce_sum(x) / len(x) + len([1, 2]))
    for n in (1, 3, 5):
        assert float(f(np.ones((n, 2)))) == 4.0
    assert f.cache_info().kernels == 2  # a size of 1 is a broadcast dim: its own kernel


def last_row_in_else(x):
    total, last = 0.0, 0.0
    for row in x:
        last = tf.reduce_sum(row)
    else:  # noqa: PLW0120 - it reads what the loop's last trip assigned
        total = total + last
    for i in range(x.shape[0]):
        last = tf.reduce_sum(x[i]) * 2.0
    else:  # noqa: PLW0120
        total = total + last
    return total


def test_a_loops_else_reads_what_its_last_trip_assigned():
    x = np.arange(6.0).reshape(3, 2)
    assert float(tf.differentiable(last_row_in_else)(x)) == 9.0 + 18.0


def test_a_row_read_after_a_compiled_loop_raises_naming_it():
    def f(x):
        for row in x:
            pass
        return row[0]

    with pytest.raises(tf.TracingError, match="'row' has no value here"):
        tf.differentiable(f)(np.ones((3, 2)))
