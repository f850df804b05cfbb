"""srcxform.runtime.blas: matmul and matvec through BLAS equal np.dot for float64 and float32
operands in C, Fortran and strided layouts, at zero and unit sizes; their jitted core
compiles once per dtype whatever the layouts; other dtypes are a typing error; and a
compiled function with strided and transposed matrix products matches the eager tape.

Each wrapper below compiles once per layout combination, so the cases share few of them:
strided operands of any kind are all typed layout 'A'.
"""

import numba
import numpy as np
import pytest
from corpus import assert_trees_close, eager_value_and_grad

import srcxform as tf
from srcxform.runtime import blas


@numba.njit(error_model="numpy")
def _matmul(a, b):
    return blas.matmul(a, b)


@numba.njit(error_model="numpy")
def _matvec(a, v):
    return blas.matvec(a, v)


def _normal(*shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def _rtol(dtype):
    return 1e-12 if dtype == np.float64 else 1e-5


def _strided(x, kind):
    """x (r×c) as a view Numba types as layout 'A': inside a larger C array (rows
    contiguous, ld > c), inside a larger Fortran array (columns contiguous), or every
    other element of a larger array (no unit stride: copied before BLAS sees it)."""
    r, c = x.shape
    if kind == "rows":
        big = np.zeros((r + 2, c + 3), x.dtype)
        big[1:r + 1, 2:c + 2] = x
        return big[1:r + 1, 2:c + 2]
    if kind == "columns":
        big = np.zeros((r + 3, c + 2), x.dtype, order="F")
        big[2:r + 2, 1:c + 1] = x
        return big[2:r + 2, 1:c + 1]
    big = np.zeros((2 * r, 2 * c), x.dtype)
    big[::2, ::2] = x
    return big[::2, ::2]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_matmul_of_c_and_fortran_operands_equals_np_dot(dtype):
    a, b = _normal(5, 3, dtype=dtype), _normal(3, 4, dtype=dtype, seed=1)
    cases = [(a, b)] if dtype == np.float32 else [
        (a, b), (np.asfortranarray(a), b), (a, b.T.copy().T)]  # C·C, F·C, C·F (a view .T)
    for x, y in cases:
        out = _matmul(x, y)
        assert out.dtype == dtype and out.shape == (5, 4) and out.flags.c_contiguous
        np.testing.assert_allclose(out, np.dot(x, y), rtol=_rtol(dtype))


def test_c_typed_operands_whose_unit_dims_have_any_stride_equal_np_dot():
    """NumPy calls an array C-contiguous whatever the stride of a dim of 1, and Numba then
    types it C: such operands go to the core that never copies."""
    row = _normal(4, 5)[::3][:1]  # 1×5, rows 120 bytes apart
    column = _normal(5, 1, seed=1)
    vector = _normal(3, seed=2)[::3]  # 1 element, 24 bytes apart
    assert numba.typeof(row).layout == "C" and numba.typeof(vector).layout == "C"
    np.testing.assert_allclose(_matmul(row, column), np.dot(row, column), rtol=1e-12)
    np.testing.assert_allclose(_matmul(column, row), np.dot(column, row), rtol=1e-12)
    np.testing.assert_allclose(_matvec(column, vector), np.dot(column, vector), rtol=1e-12)


@pytest.mark.parametrize("kind_a", ["rows", "columns", "copied"])
@pytest.mark.parametrize("kind_b", ["rows", "columns", "copied"])
def test_matmul_of_strided_operands_equals_np_dot(kind_a, kind_b):
    a, b = _strided(_normal(4, 6), kind_a), _strided(_normal(6, 3, seed=1), kind_b)
    np.testing.assert_allclose(_matmul(a, b), np.dot(a, b), rtol=1e-12)


@pytest.mark.parametrize("shape_a, shape_b", [
    ((3, 0), (0, 2)),  # an empty inner dim: zeros
    ((0, 3), (3, 2)), ((3, 2), (2, 0)),  # an empty result
    ((1, 1), (1, 1)), ((1, 5), (5, 1)), ((5, 1), (1, 4)), ((2, 7), (7, 9)),
])
@pytest.mark.parametrize("kind", ["C", "rows"])  # the in-place core, and the one for any layout
def test_matmul_at_zero_unit_and_nonsquare_sizes(shape_a, shape_b, kind):
    a, b = _normal(*shape_a), _normal(*shape_b, seed=1)
    if kind != "C":
        a, b = _strided(a, kind), _strided(b, kind)
    out = _matmul(a, b)
    assert out.shape == (shape_a[0], shape_b[1])
    np.testing.assert_allclose(out, np.dot(a, b), rtol=1e-12, atol=0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_matvec_equals_np_dot(dtype):
    a, v = _normal(5, 3, dtype=dtype), _normal(3, dtype=dtype, seed=1)
    cases = [(a, v)] if dtype == np.float32 else [(a, v), (np.asfortranarray(a), v)]
    for x, y in cases:
        out = _matvec(x, y)
        assert out.dtype == dtype and out.shape == (5,)
        np.testing.assert_allclose(out, np.dot(x, y), rtol=_rtol(dtype))


@pytest.mark.parametrize("kind", ["C", "rows", "columns", "copied"])
@pytest.mark.parametrize("shape", [(4, 6), (1, 6), (4, 1), (3, 0), (0, 3)])
def test_matvec_of_strided_operands_equals_np_dot(kind, shape):
    a = _normal(*shape) if kind == "C" else _strided(_normal(*shape), kind)
    v = np.zeros(2 * shape[1])
    v[::2] = _normal(shape[1], seed=1)
    for u in (v[::2], v[: shape[1]]):  # a strided vector (copied) and a contiguous one
        np.testing.assert_allclose(_matvec(a, u), np.dot(a, u), rtol=1e-12, atol=0)


def test_the_core_compiles_once_per_dtype_whatever_the_layouts():
    a, b = _normal(3, 3), _normal(3, 3, seed=1)
    for x, y in [(a, b), (np.asfortranarray(a), b), (a, b.T), (a[:, :2], b[:2])]:
        _matmul(x, y)
    signatures = blas._matmul.signatures
    assert all(t.layout == "A" and t.mutable for sig in signatures for t in sig)
    assert len({sig[0].dtype for sig in signatures}) == len(signatures)


def test_other_dtypes_are_a_typing_error_naming_blas():
    ints = np.ones((2, 2), np.int64)
    with pytest.raises(numba.core.errors.TypingError, match="float32 or float64"):
        _matmul(ints, ints)
    with pytest.raises(numba.core.errors.TypingError, match="float32 or float64"):
        _matmul(np.ones((2, 2), np.float32), np.ones((2, 2)))


def test_run_as_python_they_are_np_dot():
    """Generated code run uncompiled (SRCXFORM_JIT=0) calls them as Python functions."""
    a, b = _normal(3, 2), _normal(2, 4, seed=1)
    np.testing.assert_array_equal(blas.matmul(a, b), np.dot(a, b))
    np.testing.assert_array_equal(blas.matvec(a, b[:, 0]), np.dot(a, b[:, 0]))


def _model(W, X, v):
    h = X[:, ::2] @ W  # a strided operand (copied) and a C one
    y = tf.matmul(h, h, transpose_b=True)  # a transposed one
    return tf.reduce_sum(y * y) + tf.reduce_sum(h @ v) + tf.reduce_sum(X[1:, 1:4] @ W)


def test_a_compiled_function_with_matrix_products_matches_the_eager_tape():
    # Not differentiated in X: its gradient would be a strided embed, whose assignment
    # costs Numba seconds of compile time (a shape-mismatch message) and tests no BLAS.
    args, wrt = (_normal(3, 4), _normal(5, 6, seed=1), _normal(4, seed=2)), (0, 2)
    compiled = tf.differentiable(_model, wrt=wrt)
    source = compiled.source(*args)
    assert "blas.matmul(" in source and "blas.matvec(" in source and "np.dot" not in source
    value, grads = compiled.value_and_grad(*args)
    eager_value, eager_grads = eager_value_and_grad(_model, args, wrt)
    np.testing.assert_allclose(value, eager_value, rtol=1e-12)
    assert_trees_close(grads, eager_grads, 1e-12, 1e-12, "compiled vs eager")


def _nearest(points, centroids):
    """GradBench kmeans' cost, and a sum along the product's rows: a k x n product that one
    loop nest reads, reduced along both axes."""
    squared = (tf.reduce_sum(centroids * centroids, 1)[:, None]
               + tf.reduce_sum(points * points, 1)[None, :]
               - 2.0 * tf.matmul(centroids, tf.transpose(points)))
    return tf.reduce_sum(tf.reduce_min(squared, 0)) + tf.reduce_sum(tf.reduce_max(squared, 1))


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_a_product_one_nest_reads_is_made_a_block_of_rows_at_a_time(dtype, rtol):
    # 70 centroids by 40,000 points: blocks of 32 rows in float64 (32, 32 and a last of
    # 6), 52 in float32 (52 and 18); the value is the tape's.
    points, centroids = _normal(40000, 3, dtype=dtype), _normal(70, 3, dtype=dtype, seed=1)
    compiled = tf.differentiable(_nearest)
    value = compiled(points, centroids)
    kernel = compiled._kernel("value", (points, centroids), {})[0].source
    assert "for i0_first in range(0, n2, i0_rows):" in kernel
    assert "blas.matmul(centroids[i0_first:i0_first + i0_rows], " in kernel
    assert value.dtype == dtype
    np.testing.assert_allclose(value, _nearest(tf.constant(points), tf.constant(centroids)),
                               rtol=rtol)


def _layer(w, x):
    return tf.reduce_sum(tf.tanh(tf.matmul(x, w) + 0.5) ** 2)


def test_a_layers_product_is_made_in_blocks_in_its_gradient_too():
    # tanh's VJP reads its output (stored), and 1 - out**2, which the adjoint recomputes,
    # reads that store, not the product: the forward's product is made in blocks (70 rows
    # by 40,000 columns: 32, 32 and 6), and the gradient is the tape's.
    args = (_normal(3, 40000, seed=2), _normal(70, 3, seed=3))
    compiled = tf.differentiable(_layer)
    source = compiled.source(*args)
    assert "blas.matmul(x[i0_first:i0_first + i0_rows], w)" in source
    value, grad = compiled.value_and_grad(*args)
    eager_value, eager_grad = eager_value_and_grad(_layer, args, 0)
    np.testing.assert_allclose(value, eager_value, rtol=1e-12)
    np.testing.assert_allclose(grad, eager_grad, rtol=1e-10, atol=1e-12)


def test_a_product_the_adjoint_reads_again_is_made_whole():
    # The forward's product is read by the forward's nest and the adjoint's: made whole.
    # The gradient's product (40 x 300 by 300 x 3) is read by one nest, in one block.
    args = (_normal(300, 3), _normal(40, 3, seed=1))
    compiled = tf.differentiable(_nearest, wrt=1)
    source = compiled.source(*args)
    assert "blas.matmul(centroids, " in source and "if 2 * (n0) > i0_rows:" in source
    value, grad = compiled.value_and_grad(*args)
    eager_value, eager_grad = eager_value_and_grad(_nearest, args, 1)
    np.testing.assert_allclose(value, eager_value, rtol=1e-12)
    np.testing.assert_allclose(grad, eager_grad, rtol=1e-10, atol=1e-12)


@pytest.mark.slow
def test_every_blas_the_rates_benchmark_times_gives_numpys_product():
    """benchmarks/blas_rates.py binds NumPy's OpenBLAS (64-bit sizes) and PyTorch's MKL
    (Fortran, column-major) by address: each binding gives NumPy's product at a shape
    where a swapped size or transposition would not."""
    from benchmarks import blas_rates

    a, b = _normal(5, 3), _normal(3, 7, seed=1)
    products = blas_rates._products()
    assert {"srcxform (SciPy's OpenBLAS)", "NumPy's OpenBLAS"} <= set(products)
    for name, product in products.items():
        out = np.full((5, 7), np.nan)
        got = product(a, b, out)
        np.testing.assert_allclose(out if got is None else got, a @ b, rtol=1e-12,
                                   err_msg=name)
