"""The linear algebra LAPACK computes: det, slogdet, inv, solve, triangular_solve,
cholesky, eigh, svd and qr (tf.linalg's names), over any leading batch axes; and norm, whose
matrix 2-norm is the largest singular value.

Each is a primitive whose eager impl is NumPy's np.linalg and whose compiled code calls
srcxform.runtime.lapack (Numba's np.linalg, one matrix at a time). Each VJP is
TensorFlow's (its linalg_grad.py), written in srcxform ops, so every order of derivative
comes from the same formulas. An op with several results returns them packed in one
array, which its wrapper slices: slogdet (..., 2) as [sign, log|det|]; eigh
(..., n + 1, n) as the eigenvalues above the eigenvectors; svd (..., 1 + m + n, k) as the
singular values above u and v (k = min(m, n); max(m, n) for full matrices, zeros padding
s and the narrower of u and v); qr (..., m + k, max(k, n)) as q's k columns above r's k
rows. Eigen- and singular vectors are only defined up to sign: each column is flipped so
that its entry of largest magnitude is positive, the same choice eagerly and compiled
(LAPACK builds differ), where TensorFlow leaves it to LAPACK; qr's pairs so that r's
diagonal is not negative.
"""

from collections import namedtuple

import numpy as np

from srcxform.core.aval import Aval, broadcast_shapes, dims_equal, normalize_axes, normalize_axis
from srcxform.core.dtypes import SIGN_TIE
from srcxform.core.errors import shape_error
from srcxform.ops.elementwise import abs, pow, sqrt, where
from srcxform.ops.linalg import _swap, matmul
from srcxform.ops.reduce import reduce_max, reduce_sum
from srcxform.ops.shape import broadcast_to, concat, expand_dims, reshape, transpose
from srcxform.core.primitive import primitive
from srcxform.core.tensor import as_value

_LAPACK_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


# ----- shape rules -----


def _check_matrices(x, square=True):
    if x.dtype not in _LAPACK_DTYPES:
        raise TypeError(f"expects float32 or float64 matrices, got {x.dtype.name}")
    if x.ndim < 2:
        raise ValueError(f"expects matrices (rank 2 or more), got rank {x.ndim}")
    if square and not dims_equal(x.shape[-1], x.shape[-2]):
        raise ValueError(f"expects square matrices, got {x.shape[-2]!r}×{x.shape[-1]!r}")


def _same_shape(x):
    _check_matrices(x)
    return Aval(x.shape, x.dtype)


def _det_shape(x):
    _check_matrices(x)
    return Aval(x.shape[:-2], x.dtype)


def _slogdet_shape(x):
    _check_matrices(x)
    return Aval(x.shape[:-2] + (2,), x.dtype)


def _solve_shape(a, b, *, adjoint):
    _check_matrices(a)
    _check_matrices(b, square=False)
    if a.dtype != b.dtype:
        raise TypeError(f"the matrix and the right-hand side differ in dtype: "
                        f"{a.dtype.name} and {b.dtype.name}")
    if a.shape[:-2] != b.shape[:-2] or not dims_equal(a.shape[-1], b.shape[-2]):
        raise ValueError(f"the right-hand side must have {a.shape[-1]!r} rows and the "
                         f"matrix's batch shape")
    return Aval(b.shape, b.dtype)


def _triangular_solve_shape(a, b, *, lower, adjoint):
    return _solve_shape(a, b, adjoint=adjoint)


def _eigh_shape(x):
    _check_matrices(x)
    n = x.shape[-1]
    return Aval(x.shape[:-2] + (n + 1, n), x.dtype)


def _svd_shape(x, *, full_matrices):
    _check_matrices(x, square=False)
    m, n = x.shape[-2:]
    return Aval(x.shape[:-2] + (1 + m + n, max(m, n) if full_matrices else min(m, n)), x.dtype)


def _qr_shape(x, *, full_matrices):
    _check_matrices(x, square=False)
    m, n = x.shape[-2:]
    k = m if full_matrices else min(m, n)
    return Aval(x.shape[:-2] + (m + k, max(k, n)), x.dtype)


# ----- eager implementations -----


def _column_signs(vectors):
    """runtime.lapack.column_signs for a batch: each column's sign of its entry of
    largest magnitude (the first of those within SIGN_TIE of it), as (..., 1, k); 1 for
    columns of no entries."""
    if vectors.shape[-2] == 0:
        return np.ones(vectors.shape[:-2] + (1, vectors.shape[-1]), vectors.dtype)
    magnitudes = np.abs(vectors)
    tie = 1 - SIGN_TIE * np.finfo(vectors.dtype).eps
    near = magnitudes >= magnitudes.max(axis=-2, keepdims=True) * tie
    first = np.argmax(near, axis=-2)[..., None, :]
    return np.where(np.take_along_axis(vectors, first, -2) < 0, -1, 1).astype(vectors.dtype)


def _slogdet_impl(x):
    return np.stack(np.linalg.slogdet(x), axis=-1)


def _solve_impl(a, b, adjoint):
    return np.linalg.solve(np.swapaxes(a, -1, -2) if adjoint else a, b)


def _triangular_solve_impl(a, b, lower, adjoint):
    return _solve_impl(np.tril(a) if lower else np.triu(a), b, adjoint)


def _eigh_impl(x):
    values, vectors = np.linalg.eigh(x)
    return np.concatenate([values[..., None, :], vectors * _column_signs(vectors)], axis=-2)


def _svd_impl(x, full_matrices):
    u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    v = np.swapaxes(vh, -1, -2)
    k = s.shape[-1]
    u_signs, v_signs = _column_signs(u), _column_signs(v)
    v_signs[..., :k] = u_signs[..., :k]  # a pair of singular vectors shares its sign
    width = max(u.shape[-1], v.shape[-1])
    pad = [(0, 0)] * (x.ndim - 1)
    return np.concatenate([np.pad(part, pad + [(0, width - part.shape[-1])]) for part in
                           (s[..., None, :], u * u_signs, v * v_signs)], axis=-2)


def _qr_impl(x, full_matrices):
    m, n = x.shape[-2:]
    if full_matrices and m > n:  # q's last m - n columns: the QR of [x | I]'s, as compiled
        x = np.concatenate([x, np.broadcast_to(np.eye(m, dtype=x.dtype),
                                               x.shape[:-2] + (m, m))], axis=-1)
    q, r = np.linalg.qr(x)
    k = q.shape[-1]
    signs = np.where(np.diagonal(r, axis1=-2, axis2=-1)[..., :k] < 0, -1, 1).astype(x.dtype)
    packed = np.zeros(x.shape[:-2] + (m + k, max(k, n)), x.dtype)
    packed[..., :m, :k] = q * signs[..., None, :]
    packed[..., m:, :n] = r[..., :n] * signs[..., :, None]
    return packed


# ----- gradients (TensorFlow's linalg_grad.py) -----


def _matrix_of(v):
    """A batch of scalars as a batch of 1×1 matrices, to scale matrices by."""
    return expand_dims(expand_dims(v, -1), -1)


def _constant(matrix, like):
    return np.asarray(matrix, dtype=like.dtype)


def _lower_mask(n, like, diagonal=1.0):
    """The lower triangle's ones, `diagonal` on the diagonal (a constant matrix)."""
    return _constant(np.tril(np.ones((n, n))) - (1.0 - diagonal) * np.eye(n), like)


def _safe_reciprocal(x):
    """1 / x, and 0 at 0 (TensorFlow's _SafeReciprocal, for repeated eigen- or singular
    values and zero singular values)."""
    return x / (x * x + 1e-20)


def _gap_reciprocals(values):
    """f[..., i, j] = 1 / (values[j] - values[i]) off the diagonal, 0 on it. The diagonal
    is set by where(), as TensorFlow's matrix_set_diag: through x / (x² + 1e-20) at 0 its
    derivative would be 1e20, and second derivatives would lose the rest to rounding."""
    n = values.shape[-1]
    gaps = expand_dims(values, -2) - expand_dims(values, -1)
    return where(np.eye(n, dtype=bool), 0, _safe_reciprocal(gaps))


def _det_vjp(g, out, x):
    return (_matrix_of(g * out) * _swap(inv_p.bind(x)),)


def _slogdet_vjp(g, out, x):
    return (_matrix_of(g[..., 1]) * _swap(inv_p.bind(x)),)


def _inv_vjp(g, out, x):
    return (-matmul(out, matmul(g, out, transpose_b=True), transpose_a=True),)


def _solve_gradients(g, out, gb, adjoint):
    """(grad a, grad b) of a solve, from grad b (the solve of g with the other adjoint)."""
    ga = matmul(out, gb, transpose_b=True) if adjoint else matmul(gb, out, transpose_b=True)
    return -ga, gb


def _solve_vjp(g, out, a, b, *, adjoint):
    return _solve_gradients(g, out, solve_p.bind(a, g, adjoint=not adjoint), adjoint)


def _triangular_solve_vjp(g, out, a, b, *, lower, adjoint):
    gb = triangular_solve_p.bind(a, g, lower=lower, adjoint=not adjoint)
    ga, gb = _solve_gradients(g, out, gb, adjoint)
    mask = _lower_mask(a.shape[-1], a)
    return ga * (mask if lower else mask.T), gb


def _cholesky_vjp(g, l, x):
    # l⁻ᵀ ((lᵀ g) * (tril(ones) - eye / 2)) l⁻¹, symmetrized.
    n = l.shape[-1]
    eye = broadcast_to(_constant(np.eye(n), l), l.shape)
    l_inverse = triangular_solve_p.bind(l, eye, lower=True, adjoint=False)
    middle = matmul(l, g, transpose_a=True) * _lower_mask(n, l, diagonal=0.5)
    grad = matmul(matmul(l_inverse, middle, transpose_a=True), l_inverse)
    return ((grad + _swap(grad)) * 0.5,)


def _eigh_vjp(g, out, x):
    # Assumes distinct eigenvalues: the eigenvectors of a repeated one are defined only up
    # to a rotation, and f below is 1 / 0 there (0 by _safe_reciprocal, as TensorFlow's).
    values, vectors = out[..., 0, :], out[..., 1:, :]
    g_values, g_vectors = g[..., 0, :], g[..., 1:, :]
    f = _gap_reciprocals(values)
    n = x.shape[-1]
    inner = expand_dims(g_values, -1) * _constant(np.eye(n), x) + \
        f * matmul(vectors, g_vectors, transpose_a=True)
    grad = matmul(vectors, matmul(inner, vectors, transpose_b=True))
    # eigh reads the lower triangle only.
    return ((grad + _swap(grad)) * _lower_mask(n, x, diagonal=0.5),)


def _svd_parts(packed, m, n, full_matrices):
    """s, u and v out of svd's packed result (or its cotangent), the padding left out."""
    k = min(m, n)
    return (packed[..., 0, :k], packed[..., 1:1 + m, :m if full_matrices else k],
            packed[..., 1 + m:, :n if full_matrices else k])


def _svd_vjp(g, out, x, *, full_matrices):
    # TensorFlow's _SvdGrad. Assumes distinct, nonzero singular values (f and 1 / s below).
    m, n = x.shape[-2:]
    s, u, v = _svd_parts(out, m, n, full_matrices)
    g_s, g_u, g_v = _svd_parts(g, m, n, full_matrices)
    wide = m <= n
    if not wide:  # the formula is for m <= n: differentiate the transpose
        u, v, g_u, g_v, m, n = v, u, g_v, g_u, n, m
    if full_matrices and n - m > 1:
        # v's last n - m columns are any basis of what the first m leave: not a function.
        raise NotImplementedError(f"svd: the gradient of full_matrices=True is defined for "
                                  f"inputs whose sides differ by at most 1 (TensorFlow's "
                                  f"rule), got {x.aval.short()}")
    v1, g_v1 = v[..., :m], g_v[..., :m]
    f = _gap_reciprocals(s * s)
    f_u = f * matmul(u, g_u, transpose_a=True)
    f_v = f * matmul(v1, g_v1, transpose_a=True)
    rows, columns = expand_dims(s, -1), expand_dims(s, -2)
    inner = expand_dims(g_s, -1) * _constant(np.eye(m), x) + \
        (f_u + _swap(f_u)) * columns + rows * (f_v + _swap(f_v))
    grad = matmul(u, matmul(inner, v1, transpose_b=True))
    if m != n:
        g_v1t = _swap(g_v1)
        rest = g_v1t - matmul(matmul(g_v1t, v1), v1, transpose_b=True)
        if full_matrices:  # v's last column, fixed by the others up to its sign
            rest = rest - matmul(matmul(v1, g_v[..., m:], transpose_a=True), v[..., m:],
                                 transpose_b=True)
        grad = grad + matmul(u * expand_dims(_safe_reciprocal(s), -2), rest)
    return (grad if wide else _swap(grad),)


def _qr_parts(packed, m, n, full_matrices):
    """q and r out of qr's packed result (or its cotangent)."""
    k = m if full_matrices else min(m, n)
    return packed[..., :m, :k], packed[..., m:, :n]


def _times_r_inverse_t(x, r):
    """x r⁻ᵀ, r upper triangular (TensorFlow's _TriangularSolve)."""
    return _swap(triangular_solve_p.bind(r, _swap(x), lower=False, adjoint=False))


def _qr_square_or_deep(q, r, g_q, g_r):
    """TensorFlow's _QrGradSquareAndDeepMatrices: the gradient for m >= n."""
    qdq = matmul(q, g_q, transpose_a=True)
    rdr = matmul(r, g_r, transpose_b=True)
    tril = (qdq - _swap(qdq) + rdr - _swap(rdr)) * _lower_mask(r.shape[-1], r)
    return matmul(q, g_r + _times_r_inverse_t(tril, r)) + \
        _times_r_inverse_t(g_q - matmul(q, qdq), r)


def _qr_vjp(g, out, x, *, full_matrices):
    # TensorFlow's _QrGrad. Assumes r's diagonal nonzero (x of full rank).
    m, n = x.shape[-2:]
    if full_matrices and m > n:
        # q's last m - n columns are any basis of what the first n leave: not a function.
        raise NotImplementedError(f"qr: the gradient of full_matrices=True is defined for "
                                  f"inputs with no more rows than columns (TensorFlow's "
                                  f"rule), got {x.aval.short()}")
    q, r = _qr_parts(out, m, n, full_matrices)
    g_q, g_r = _qr_parts(g, m, n, full_matrices)
    if m >= n:
        return (_qr_square_or_deep(q, r, g_q, g_r),)
    # Wide: x = [a | y], r = [u | v], and a = q u is a square QR.
    g_v, y = g_r[..., m:], x[..., m:]
    g_a = _qr_square_or_deep(q, r[..., :m], g_q + matmul(y, g_v, transpose_b=True),
                             g_r[..., :m])
    return (concat([g_a, matmul(q, g_v)], -1),)


# ----- the primitives -----

# Each raises: its runtime helper reports a matrix LAPACK could not factor
# (runtime/lapack.check), so codegen keeps it out of a prange.

det_p = primitive("det", "opaque", np.linalg.det, _det_shape, "lapack.det(x)", vjp=_det_vjp,
                  raises=True)
slogdet_p = primitive("slogdet", "opaque", _slogdet_impl, _slogdet_shape, "lapack.slogdet(x)",
                      vjp=_slogdet_vjp, raises=True)
inv_p = primitive("inv", "opaque", np.linalg.inv, _same_shape, "lapack.inv(x)", vjp=_inv_vjp,
                  raises=True)
solve_p = primitive("solve", "opaque", _solve_impl, _solve_shape, "lapack.solve(a, b, adjoint)",
                    vjp=_solve_vjp, raises=True)
triangular_solve_p = primitive(
    "triangular_solve", "opaque", _triangular_solve_impl, _triangular_solve_shape,
    "lapack.triangular_solve(a, b, lower, adjoint)", vjp=_triangular_solve_vjp, raises=True)
cholesky_p = primitive("cholesky", "opaque", np.linalg.cholesky, _same_shape,
                       "lapack.cholesky(x)", vjp=_cholesky_vjp, raises=True)
eigh_p = primitive("eigh", "opaque", _eigh_impl, _eigh_shape, "lapack.eigh(x)", vjp=_eigh_vjp,
                   raises=True)
svd_p = primitive("svd", "opaque", _svd_impl, _svd_shape, "lapack.svd(x, full_matrices)",
                  vjp=_svd_vjp, raises=True)
qr_p = primitive("qr", "opaque", _qr_impl, _qr_shape, "lapack.qr(x, full_matrices)",
                 vjp=_qr_vjp, raises=True)


# ----- tf.linalg's functions -----


def det(input, name=None):
    """The determinant of each matrix of the last two axes (tf.linalg.det)."""
    return det_p.bind(as_value(input, "det"))


Slogdet = namedtuple("Slogdet", ["sign", "log_abs_determinant"])


def slogdet(input, name=None):
    """The sign and the log of the absolute value of each determinant (tf.linalg.slogdet),
    without the overflow of det. The sign has no gradient (it is piecewise constant)."""
    packed = slogdet_p.bind(as_value(input, "slogdet"))
    return Slogdet(packed[..., 0], packed[..., 1])


def inv(input, adjoint=False, name=None):
    """The inverse of each matrix (tf.linalg.inv); of its transpose where `adjoint`."""
    x = inv_p.bind(as_value(input, "inv"))
    return _swap(x) if adjoint else x


def _batched(matrix, rhs, op):
    """matrix and rhs with their batch axes broadcast against each other."""
    a, b = as_value(matrix, op), as_value(rhs, op)
    if a.ndim < 2 or b.ndim < 2:
        raise shape_error(f"{op}: the matrix and the right-hand side must have rank 2 or "
                          f"more, got {a.aval.short()} and {b.aval.short()}")
    try:
        batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError as err:
        raise shape_error(f"{op}({a.aval.short()}, {b.aval.short()}): batch shapes: {err}"
                          ) from None
    return (x if x.shape[:-2] == batch else broadcast_to(x, batch + x.shape[-2:])
            for x in (a, b))


def solve(matrix, rhs, adjoint=False, name=None):
    """x with matrix @ x = rhs (tf.linalg.solve; matrixᵀ @ x = rhs where `adjoint`), for
    each matrix of a batch; rhs is (..., n, k) and batch axes broadcast."""
    a, b = _batched(matrix, rhs, "solve")
    return solve_p.bind(a, b, adjoint=bool(adjoint))


def triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """solve with matrix's lower (or upper) triangle, the rest taken as zeros
    (tf.linalg.triangular_solve)."""
    a, b = _batched(matrix, rhs, "triangular_solve")
    return triangular_solve_p.bind(a, b, lower=bool(lower), adjoint=bool(adjoint))


def cholesky_solve(chol, rhs, name=None):
    """x with (chol @ cholᵀ) @ x = rhs, chol lower triangular (tf.linalg.cholesky_solve:
    two triangular solves)."""
    l, b = _batched(chol, rhs, "cholesky_solve")
    inner = triangular_solve_p.bind(l, b, lower=True, adjoint=False)
    return triangular_solve_p.bind(l, inner, lower=True, adjoint=True)


def lstsq(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    """The least-squares x of matrix @ x = rhs (tf.linalg.lstsq), by the normal equations
    and Cholesky, as TensorFlow's fast path: (aᵀa + λI)⁻¹ aᵀ b for m >= n, aᵀ (aaᵀ + λI)⁻¹ b
    (the minimum-norm solution) for m < n. Both need a of full rank (or λ > 0). TensorFlow's
    fast=False (a complete orthogonal decomposition, for rank-deficient a, with no
    gradient) is not supported: NotImplementedError."""
    if not fast:
        raise NotImplementedError("lstsq: fast=False (TensorFlow's complete orthogonal "
                                  "decomposition) is not supported; use fast=True")
    a, b = _batched(matrix, rhs, "lstsq")
    m, n = a.shape[-2:]
    deep = m >= n
    gramian = matmul(a, a, transpose_a=deep, transpose_b=not deep)
    if not isinstance(l2_regularizer, (int, float)) or l2_regularizer:
        gramian = gramian + l2_regularizer * _constant(np.eye(n if deep else m), a)
    chol = cholesky_p.bind(gramian)
    if deep:
        return cholesky_solve(chol, matmul(a, b, transpose_a=True))
    return matmul(a, cholesky_solve(chol, b), transpose_a=True)


def cholesky(input, name=None):
    """The lower-triangular l with l @ lᵀ = input, for symmetric positive definite
    matrices, from their lower triangle (tf.linalg.cholesky). Its gradient is symmetric,
    as TensorFlow's."""
    return cholesky_p.bind(as_value(input, "cholesky"))


def eigh(tensor, name=None):
    """The eigenvalues (ascending) and eigenvectors (columns) of each symmetric matrix,
    from its lower triangle (tf.linalg.eigh). The gradient assumes distinct eigenvalues
    (it is infinite where two meet) and a loss that does not depend on the vectors'
    signs, as TensorFlow's."""
    packed = eigh_p.bind(as_value(tensor, "eigh"))
    return packed[..., 0, :], packed[..., 1:, :]


def eigvalsh(tensor, name=None):
    """The eigenvalues of each symmetric matrix, ascending (tf.linalg.eigvalsh)."""
    return eigh(tensor)[0]


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """s, u, v with tensor = u @ diag(s) @ vᵀ (tf.linalg.svd: v, not NumPy's vᵀ), the
    singular values descending; u is m×m and v n×n where `full_matrices` (the extra
    columns: an orthonormal basis of what the others leave, LAPACK's choice). The gradient
    assumes distinct nonzero singular values and a loss that does not depend on the
    vectors' signs, as TensorFlow's; with full_matrices it is defined only where m and n
    differ by at most 1 (NotImplementedError otherwise, as TensorFlow)."""
    x = as_value(tensor, "svd")
    full_matrices = bool(full_matrices and compute_uv)
    packed = svd_p.bind(x, full_matrices=full_matrices)
    s, u, v = _svd_parts(packed, *x.shape[-2:], full_matrices)
    return (s, u, v) if compute_uv else s


Qr = namedtuple("Qr", ["q", "r"])


def qr(input, full_matrices=False, name=None):
    """q, r with input = q @ r (tf.linalg.qr): q's columns orthonormal, r upper triangular,
    over any leading batch axes; k = min(m, n) columns of q, or m where `full_matrices`
    (for m > n its last m - n columns are the QR of [input | I]'s: any basis of what the
    others leave). Each column of q and row of r is flipped so that r's diagonal is not
    negative, the same eagerly and compiled (TensorFlow leaves the signs to LAPACK). The
    gradient is TensorFlow's: it assumes r's diagonal nonzero, and with full_matrices is
    defined only for m <= n (NotImplementedError otherwise, as TensorFlow)."""
    x = as_value(input, "qr")
    packed = qr_p.bind(x, full_matrices=bool(full_matrices))
    return Qr(*_qr_parts(packed, *x.shape[-2:], bool(full_matrices)))


# ----- norm -----


def _matrix_norm(x, ord, rows, columns):
    """A matrix norm over two axes, kept as axes of 1."""
    if ord in ("fro", "euclidean"):
        return sqrt(reduce_sum(x * x, axis=(rows, columns), keepdims=True))
    if ord == 2:
        rest = tuple(k for k in range(x.ndim) if k not in (rows, columns))
        s = svd(transpose(x, rest + (rows, columns)), compute_uv=False)
        kept = list(s.shape[:-1])
        for axis in sorted((rows, columns)):
            kept.insert(axis, 1)
        return reshape(reduce_max(s, axis=-1), tuple(kept))
    summed, largest = (rows, columns) if ord == 1 else (columns, rows)  # 1: column sums
    return reduce_max(reduce_sum(abs(x), axis=summed, keepdims=True), axis=largest,
                      keepdims=True)


def _vector_norm(x, ord, axis):
    if ord in ("euclidean", 2):
        return sqrt(reduce_sum(x * x, axis=axis, keepdims=True))
    if ord == 1:
        return reduce_sum(abs(x), axis=axis, keepdims=True)
    if ord == np.inf:
        return reduce_max(abs(x), axis=axis, keepdims=True)
    return pow(reduce_sum(pow(abs(x), ord), axis=axis, keepdims=True), 1.0 / ord)


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):
    """A vector norm of the whole tensor (axis None) or along one axis, or a matrix norm
    over a pair of axes (tf.norm, tf.linalg.norm). Vector ords: 'euclidean', 1, 2, inf or
    any p > 0; matrix ords: 'fro', 'euclidean', 1, 2 (via svd), inf. The euclidean norm's
    gradient at zero is NaN, as TensorFlow's."""
    x = as_value(tensor, "norm")
    if isinstance(axis, (tuple, list)) and len(axis) == 2:
        rows, columns = (normalize_axis(a, x.ndim, "norm") for a in axis)
        if rows == columns or ord not in ("euclidean", "fro", 1, 2, np.inf):
            raise ValueError(f"norm: a matrix norm takes two distinct axes and ord "
                             f"'euclidean', 'fro', 1, 2 or inf, got axis={axis}, ord={ord!r}")
        axes = (rows, columns)
        out = _matrix_norm(x, ord, rows, columns)
    else:
        if not (axis is None or isinstance(axis, (int, np.integer))):
            raise ValueError(f"norm: axis must be None, an int or a pair, got {axis!r}")
        if isinstance(ord, str) and ord != "euclidean" or not isinstance(ord, str) and \
                not ord > 0:
            raise ValueError(f"norm: a vector norm takes ord 'euclidean' or a number > 0, "
                             f"got {ord!r}")
        axes = normalize_axes(axis, x.ndim, "norm")
        out = _vector_norm(x, ord, axes)
    return out if keepdims else reshape(out, tuple(
        d for k, d in enumerate(out.shape) if k not in axes))
