"""The LAPACK-backed linear algebra generated code calls (`lapack.inv(x)` where NumPy code
would call np.linalg.inv): Numba's np.linalg functions, which take one contiguous matrix,
looped over the leading (batch) axes. Each result has the layout the eager op's NumPy
code gives (srcxform/ops/lapack.py): the multi-output ones are packed into one array,
and eigen- and singular vectors have the sign convention of `column_signs`, so that
compiled and eager agree whichever LAPACK build each calls. Imported only by generated
code.

Numba's np.linalg raises NumPy's LinAlgError for a matrix it cannot factor (singular,
not positive definite, not finite). Each call below notes that it failed and `check`
raises srcxform's LinAlgArgumentError (TensorFlow's InvalidArgumentError) naming the op
and the input's shape, as eager raises it (primitive.py): the same exception whichever
runs. (Numba cannot raise from an `except` block, hence the flag.)
"""

import numpy as np

from srcxform.core.dtypes import SIGN_TIE
from srcxform.core.errors import LinAlgArgumentError
from srcxform.numba_adapter.jit import helper

SINGULAR = "the matrix is singular (not invertible) or not finite"
NOT_FACTORED = "LAPACK could not factor the matrix (is it finite?)"


@helper
def _matrices(x):
    """x as a C-contiguous stack of matrices: (batch, rows, columns)."""
    rows, columns = x.shape[-2], x.shape[-1]
    batch = 1  # counted, not -1: a reshape cannot infer it where a matrix is 0 x 0
    for k in range(x.ndim - 2):
        batch *= x.shape[k]
    return np.ascontiguousarray(x).reshape((batch, rows, columns))


@helper
def _shape_text(shape):
    text = "("
    for k in range(len(shape)):
        text += str(shape[k]) + (", " if k < len(shape) - 1 else "")
    return text + ")"


@helper
def check(failed, op, reason, shape, k):
    """Raises LinAlgArgumentError if LAPACK failed on matrix k of an input of `shape`."""
    if failed:
        raise LinAlgArgumentError(op + ": " + reason + ": matrix " + str(k) + " of an input "
                                  "of shape " + _shape_text(shape))


@helper
def _swapped(m):
    """m's transpose, C-contiguous (what Numba's np.linalg takes)."""
    return np.ascontiguousarray(m.T)


@helper
def inv(x):
    flat = _matrices(x)
    out = np.empty(flat.shape, x.dtype)
    for k in range(flat.shape[0]):
        failed = False
        try:
            out[k] = np.linalg.inv(flat[k])
        except Exception:  # noqa: BLE001 - the only class Numba catches
            failed = True
        check(failed, "inv", SINGULAR, x.shape, k)
    return out.reshape(x.shape)


@helper
def det(x):
    flat = _matrices(x)
    out = np.empty(flat.shape[0], x.dtype)
    for k in range(flat.shape[0]):
        failed = False
        try:
            out[k] = np.linalg.det(flat[k])
        except Exception:  # noqa: BLE001 - the only class Numba catches
            failed = True
        check(failed, "det", NOT_FACTORED, x.shape, k)
    return out.reshape(x.shape[:-2])


@helper
def slogdet(x):
    """(..., 2): the sign and the log of the absolute value of each determinant."""
    flat = _matrices(x)
    out = np.empty((flat.shape[0], 2), x.dtype)
    for k in range(flat.shape[0]):
        failed = False
        try:
            sign, logabs = np.linalg.slogdet(flat[k])
            out[k, 0] = sign
            out[k, 1] = logabs
        except Exception:  # noqa: BLE001 - the only class Numba catches
            failed = True
        check(failed, "slogdet", NOT_FACTORED, x.shape, k)
    return out.reshape(x.shape[:-2] + (2,))


@helper
def solve(a, b, adjoint):
    """a⁻¹ b (a's transpose's where adjoint) for each matrix of a batch (equal batches)."""
    return _solve(a, b, adjoint, "solve")


@helper
def _solve(a, b, adjoint, op):
    flat_a, flat_b = _matrices(a), _matrices(b)
    out = np.empty(flat_b.shape, b.dtype)
    for k in range(flat_a.shape[0]):
        failed = False
        try:
            out[k] = np.linalg.solve(_swapped(flat_a[k]) if adjoint else flat_a[k],
                                     flat_b[k])
        except Exception:  # noqa: BLE001 - the only class Numba catches
            failed = True
        check(failed, op, SINGULAR, a.shape, k)
    return out.reshape(b.shape)


@helper
def triangular_solve(a, b, lower, adjoint):
    """solve with a's lower (or upper) triangle only, the other one read as zeros."""
    flat_a = _matrices(a)
    triangles = np.empty(flat_a.shape, a.dtype)
    for k in range(flat_a.shape[0]):
        triangles[k] = np.tril(flat_a[k]) if lower else np.triu(flat_a[k])
    return _solve(triangles.reshape(a.shape), b, adjoint, "triangular_solve")


@helper
def cholesky(x):
    flat = _matrices(x)
    out = np.empty(flat.shape, x.dtype)
    for k in range(flat.shape[0]):
        failed = False
        try:
            out[k] = np.linalg.cholesky(flat[k])
        except Exception:  # noqa: BLE001 - the only class Numba catches
            failed = True
        check(failed, "cholesky", "the matrix is not positive definite", x.shape, k)
    return out.reshape(x.shape)


@helper
def column_signs(vectors):
    """+1 or -1 for each column: the sign of its entry of largest magnitude, the first of
    those within SIGN_TIE of it (a column times its sign has that entry positive)."""
    signs = np.ones(vectors.shape[1], vectors.dtype)
    tie = 1 - SIGN_TIE * np.finfo(vectors.dtype).eps
    for j in range(vectors.shape[1]):
        top = 0.0
        for i in range(vectors.shape[0]):
            top = max(top, abs(vectors[i, j]))
        for i in range(vectors.shape[0]):
            if abs(vectors[i, j]) >= top * tie:
                if vectors[i, j] < 0:
                    signs[j] = -1
                break
    return signs



@helper
def eigh(x):
    """(..., n + 1, n): the ascending eigenvalues, then the eigenvectors as columns."""
    flat = _matrices(x)
    n = flat.shape[1]
    out = np.empty((flat.shape[0], n + 1, n), x.dtype)
    for k in range(flat.shape[0]):
        failed = False
        try:
            # The lower triangle alone, as NumPy's eigh reads it (Numba's checks both).
            lower = np.tril(flat[k])
            values, vectors = np.linalg.eigh(lower + np.tril(lower, -1).T)
            out[k, 0] = values
            out[k, 1:] = vectors * column_signs(vectors)
        except Exception:  # noqa: BLE001 - the only class Numba catches
            failed = True
        check(failed, "eigh", NOT_FACTORED, x.shape, k)
    return out.reshape(x.shape[:-2] + (n + 1, n))


@helper
def svd(x, full_matrices):
    """(..., 1 + m + n, p): the descending singular values, then u's columns, then v's
    (TensorFlow's v, not NumPy's vh); p is min(m, n), or max(m, n) for full matrices,
    where zeros pad s and the narrower of u and v on the right."""
    flat = _matrices(x)
    m, n = flat.shape[1], flat.shape[2]
    size = min(m, n)
    width = max(m, n) if full_matrices else size
    out = np.zeros((flat.shape[0], 1 + m + n, width), x.dtype)
    if size == 0:  # no singular values (Numba's svd raises): NumPy's identities, if full
        for i in range(m if full_matrices else 0):
            out[:, 1 + i, i] = 1
        for i in range(n if full_matrices else 0):
            out[:, 1 + m + i, i] = 1
        return out.reshape(x.shape[:-2] + (1 + m + n, width))
    for k in range(flat.shape[0]):
        failed = False
        try:
            u, s, vh = np.linalg.svd(flat[k], full_matrices=full_matrices)
            v = vh.T
            u_signs, v_signs = pair_signs(u, v, size)
            out[k, 0, :size] = s
            out[k, 1:1 + m, :u.shape[1]] = u * u_signs
            out[k, 1 + m:, :v.shape[1]] = v * v_signs
        except Exception:  # noqa: BLE001 - the only class Numba catches
            failed = True
        check(failed, "svd", NOT_FACTORED, x.shape, k)
    return out.reshape(x.shape[:-2] + (1 + m + n, width))


@helper
def pair_signs(u, v, size):
    """The signs of u's and v's columns: u's first `size` (each the sign of a pair of
    singular vectors) also v's; column_signs for the rest (full matrices' extra ones)."""
    u_signs, v_signs = column_signs(u), column_signs(v)
    v_signs[:size] = u_signs[:size]
    return u_signs, v_signs


@helper
def qr(x, full_matrices):
    """(..., m + k, max(k, n)): q's k columns (k = min(m, n), or m for full matrices) above
    r's k rows, each pair flipped so that r's diagonal is not negative. For full matrices
    with m > n, the QR of [x | I] (Numba's qr is the reduced one), r's first n columns."""
    flat = _matrices(x)
    m, n = flat.shape[1], flat.shape[2]
    k = m if full_matrices else min(m, n)
    out = np.zeros((flat.shape[0], m + k, max(k, n)), x.dtype)
    for b in range(flat.shape[0] if k else 0):  # no columns: nothing to factor
        failed = False
        try:
            a = flat[b]
            if full_matrices and m > n:
                a = np.zeros((m, n + m), x.dtype)
                a[:, :n] = flat[b]
                for i in range(m):
                    a[i, n + i] = 1
            q, r = np.linalg.qr(a)
            for j in range(k):
                sign = -1 if r[j, j] < 0 else 1
                out[b, :m, j] = q[:, j] * sign
                out[b, m + j, :n] = r[j, :n] * sign
        except Exception:  # noqa: BLE001 - the only class Numba catches
            failed = True
        check(failed, "qr", NOT_FACTORED, x.shape, b)
    return out.reshape(x.shape[:-2] + (m + k, max(k, n)))
