"""The LAPACK-backed linear algebra generated code calls (`lapack.inv(x)` where NumPy code
would call np.linalg.inv): Numba's np.linalg functions, which take one contiguous matrix,
looped over the leading (batch) axes. Each result has the layout the eager op's NumPy
code gives (srcxform/ops/lapack.py): the multi-output ones are packed into one array,
and eigen- and singular vectors have the sign convention of `column_signs`, so that
compiled and eager agree whichever LAPACK build each calls. Imported only by generated
code.
"""

import numpy as np

from srcxform.numba_adapter.jit import helper


@helper
def _matrices(x):
    """x as a C-contiguous stack of matrices: (batch, rows, columns)."""
    rows, columns = x.shape[-2], x.shape[-1]
    return np.ascontiguousarray(x).reshape((-1, rows, columns))


@helper
def _swapped(m):
    """m's transpose, C-contiguous (what Numba's np.linalg takes)."""
    return np.ascontiguousarray(m.T)


@helper
def inv(x):
    flat = _matrices(x)
    out = np.empty(flat.shape, x.dtype)
    for k in range(flat.shape[0]):
        out[k] = np.linalg.inv(flat[k])
    return out.reshape(x.shape)


@helper
def det(x):
    flat = _matrices(x)
    out = np.empty(flat.shape[0], x.dtype)
    for k in range(flat.shape[0]):
        out[k] = np.linalg.det(flat[k])
    return out.reshape(x.shape[:-2])


@helper
def slogdet(x):
    """(..., 2): the sign and the log of the absolute value of each determinant."""
    flat = _matrices(x)
    out = np.empty((flat.shape[0], 2), x.dtype)
    for k in range(flat.shape[0]):
        sign, logabs = np.linalg.slogdet(flat[k])
        out[k, 0] = sign
        out[k, 1] = logabs
    return out.reshape(x.shape[:-2] + (2,))


@helper
def solve(a, b, adjoint):
    """a⁻¹ b (a's transpose's where adjoint) for each matrix of a batch (equal batches)."""
    flat_a, flat_b = _matrices(a), _matrices(b)
    out = np.empty(flat_b.shape, b.dtype)
    for k in range(flat_a.shape[0]):
        out[k] = np.linalg.solve(_swapped(flat_a[k]) if adjoint else flat_a[k], flat_b[k])
    return out.reshape(b.shape)


@helper
def triangular_solve(a, b, lower, adjoint):
    """solve with a's lower (or upper) triangle only, the other one read as zeros."""
    flat_a = _matrices(a)
    triangles = np.empty(flat_a.shape, a.dtype)
    for k in range(flat_a.shape[0]):
        triangles[k] = np.tril(flat_a[k]) if lower else np.triu(flat_a[k])
    return solve(triangles.reshape(a.shape), b, adjoint)


@helper
def cholesky(x):
    flat = _matrices(x)
    out = np.empty(flat.shape, x.dtype)
    for k in range(flat.shape[0]):
        out[k] = np.linalg.cholesky(flat[k])
    return out.reshape(x.shape)


@helper
def column_signs(vectors):
    """+1 or -1 for each column: the sign of its entry of largest magnitude, the first of
    ties (a column times its sign has that entry positive)."""
    signs = np.ones(vectors.shape[1], vectors.dtype)
    for j in range(vectors.shape[1]):
        best = 0
        for i in range(1, vectors.shape[0]):
            if abs(vectors[i, j]) > abs(vectors[best, j]):
                best = i
        if vectors[best, j] < 0:
            signs[j] = -1
    return signs


@helper
def eigh(x):
    """(..., n + 1, n): the ascending eigenvalues, then the eigenvectors as columns."""
    flat = _matrices(x)
    n = flat.shape[1]
    out = np.empty((flat.shape[0], n + 1, n), x.dtype)
    for k in range(flat.shape[0]):
        values, vectors = np.linalg.eigh(flat[k])
        out[k, 0] = values
        out[k, 1:] = vectors * column_signs(vectors)
    return out.reshape(x.shape[:-2] + (n + 1, n))


@helper
def svd(x):
    """(..., 1 + m + n, min(m, n)): the descending singular values, then u's columns,
    then v's (TensorFlow's v, not NumPy's vh)."""
    flat = _matrices(x)
    m, n = flat.shape[1], flat.shape[2]
    size = min(m, n)
    out = np.empty((flat.shape[0], 1 + m + n, size), x.dtype)
    for k in range(flat.shape[0]):
        u, s, vh = np.linalg.svd(flat[k], full_matrices=False)
        signs = column_signs(u)
        out[k, 0] = s
        out[k, 1:1 + m] = u * signs
        out[k, 1 + m:] = vh.T * signs
    return out.reshape(x.shape[:-2] + (1 + m + n, size))
