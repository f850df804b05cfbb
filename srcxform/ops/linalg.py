"""Linear algebra: matmul (2-D and batched, batch dims broadcast as NumPy's).

The primitive is the 2-D product, which compiles to a BLAS call; a batched product is a
broadcast multiply and a sum over the inner axis, which fuses into one loop nest.
Operands of different dtypes are cast to their common one first (NumPy's promotion, as
np.matmul), and a product BLAS has no routine for (integers, float16) is a multiply and
a sum too. Transpose lives in shape.py; dot and outer for NumPy dispatch are composites
here, as are tf.linalg's matvec, matrix_transpose, diag, diag_part, set_diag, band_part,
trace and cross. The LAPACK ops are in lapack.py, einsum and tensordot in einsum.py.
"""

import numpy as np

from srcxform.core.aval import Aval, broadcast_shapes, is_one
from srcxform.core.dtypes import promote
from srcxform.core.errors import shape_error, user_line
from srcxform.ops.creation import eye, iota
from srcxform.ops.elementwise import cast, where
from srcxform.ops.reduce import reduce_sum
from srcxform.ops.shape import expand_dims, getitem, reshape, stack, transpose
from srcxform.core.primitive import IDENTITY_ROWS, primitive
from srcxform.core.tensor import as_value

# The dtypes BLAS multiplies, and so the matmul and matvec primitives take.
_BLAS_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _check_operands(x, y):
    # !r: a traced size shows this call's value, as the operands' avals do.
    if x.shape[-1] != y.shape[-2]:
        raise ValueError(f"inner dimensions differ: {x.shape[-1]!r} and {y.shape[-2]!r}")
    return broadcast_shapes(x.shape[:-2], y.shape[:-2])


def _check_blas_dtypes(x, y):
    if x.dtype != y.dtype or x.dtype not in _BLAS_DTYPES:
        raise TypeError("the primitive takes float32 or float64 operands of one dtype; "
                        "matmul() promotes")


def _matmul_shape(x, y):
    if x.ndim != 2 or y.ndim != 2:
        raise ValueError("the matmul primitive takes matrices; matmul() batches")
    _check_operands(x, y)
    _check_blas_dtypes(x, y)
    return Aval((x.shape[0], y.shape[1]), x.dtype)


def _swap(x):
    return transpose(x, tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))


def _matvec_shape(x, v):
    if x.ndim != 2 or v.ndim != 1:
        raise ValueError("the matvec primitive takes a matrix and a vector; matmul() batches")
    if x.shape[1] != v.shape[0]:
        raise ValueError(f"inner dimensions differ: {x.shape[1]!r} and {v.shape[0]!r}")
    _check_blas_dtypes(x, v)
    return Aval((x.shape[0],), x.dtype)


def _matmul_batch(flags, avals):
    """Rows of x times y: one product of the rows laid end to end; x times rows of y: the
    transposed products, y's rows' transposes laid end to end times x's transpose. Not
    where both have rows, nor for a product of a short inner dimension (see _gemm_pays)."""
    if all(flags) or not _gemm_pays(avals[0].shape[1]):
        return None
    if flags[1] is IDENTITY_ROWS and is_one(avals[1].shape[1]):  # x @ e_i: x's column i
        return lambda x, y: reshape(_swap(x), (y.shape[0], x.shape[0], 1))
    if flags[0]:
        return lambda x, y: reshape(matmul_p.bind(reshape(
            x, (x.shape[0] * x.shape[1], x.shape[2])), y), x.shape[:2] + y.shape[1:])

    def rows_of_y(x, y):
        k, b, c = y.shape
        if is_one(c):  # columns: the transposes are reshapes
            return reshape(matmul_p.bind(reshape(y, (k, b)), _swap(x)), (k, x.shape[0], 1))
        laid = reshape(transpose(y, (0, 2, 1)), (k * c, b))
        return transpose(reshape(matmul_p.bind(laid, _swap(x)), (k, c, x.shape[0])), (0, 2, 1))

    return rows_of_y


# blas.matmul and .matvec call BLAS's gemm and gemv directly: np.dot's generic code,
# compiled for each operand layout, was most of a model's first-call compile time. They
# take C- and Fortran-ordered operands (a transposed matrix) as they are, and float32 or
# float64 operands of one dtype, as Numba's np.dot (which has no integer matmul either):
# matmul() gives them nothing else.
matmul_p = primitive("matmul", "opaque", np.matmul, _matmul_shape, "blas.matmul(x, y)", sums=True,
                     vjp=lambda g, out, x, y: (_matmul(g, _swap(y)), _matmul(_swap(x), g)),
                     batch=_matmul_batch, by_rows=True)


# A matrix times a vector is BLAS's gemv, several times faster than a one-column gemm.
matvec_p = primitive("matvec", "opaque", np.dot, _matvec_shape, "blas.matvec(x, v)", sums=True,
                     vjp=lambda g, out, x, v: (expand_dims(g, 1) * expand_dims(v, 0),
                                               matvec_p.bind(_swap(x), g)),
                     batch=lambda flags, avals: not all(flags) and _gemm_pays(
                         avals[0].shape[1]) and _matvec_batch(flags[0], flags[1]))


def _gemm_pays(inner):
    """Whether a product with this inner dimension gains from running a batch's rows as one
    product: under 16 terms a row, GEMM's blocking gains little, and the loop a Jacobian
    falls back to compiles less code (GradBench ht's 4 x 4 products: its Jacobian's first
    call 80 s looped against 120 s batched, benchmarks/README.md)."""
    return type(inner) is not int or inner >= 16  # a Dim: any size


def _matvec_batch(x_has_rows, v_rows):
    """Rows of x times v: one gemv of the rows laid end to end; x times rows of v: the rows
    of v times x's transpose, one product."""
    if x_has_rows:
        return lambda x, v: reshape(matvec_p.bind(reshape(
            x, (x.shape[0] * x.shape[1], x.shape[2])), v), x.shape[:2])
    if v_rows is IDENTITY_ROWS:  # x @ e_i: x's column i
        return lambda x, v: _swap(x)
    return lambda x, v: matmul_p.bind(v, _swap(x))


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           name=None):
    """The matrix product of the last two axes, batching over the others (tf.linalg.matmul).
    Both operands must have rank 2 or more, as in TensorFlow (`@` also takes vectors).
    For real matrices the adjoint is the transpose."""
    x, y = as_value(a, "matmul"), as_value(b, "matmul")
    if x.ndim < 2 or y.ndim < 2:
        raise shape_error(f"matmul: operands must have rank 2 or more, got {x.aval.short()} "
                          f"and {y.aval.short()} (`@` takes vectors, as NumPy's)")
    if transpose_a and adjoint_a or transpose_b and adjoint_b:
        raise ValueError("matmul: give transpose_ or adjoint_ for an operand, not both")
    x = _swap(x) if transpose_a or adjoint_a else x
    y = _swap(y) if transpose_b or adjoint_b else y
    return numpy_matmul(x, y)


def numpy_matmul(a, b):
    """NumPy's matmul (`@`): as matmul, and a rank-1 operand is a row or column vector."""
    x, y = as_value(a, "matmul"), as_value(b, "matmul")
    if x.ndim == 0 or y.ndim == 0:
        raise shape_error(f"matmul: operands must not be scalars, got {x.aval.short()} and "
                          f"{y.aval.short()}")
    x, y = _promoted(x, y)
    x2 = expand_dims(x, 0) if x.ndim == 1 else x
    y2 = expand_dims(y, -1) if y.ndim == 1 else y
    if x.ndim + y.ndim == 3 and x.dtype in _BLAS_DTYPES and \
            x2.shape[-1] == y2.shape[-2]:  # else matmul reports it
        return matvec_p.bind(x, y) if y.ndim == 1 else matvec_p.bind(_swap(y), x)
    if x.ndim >= 2 and y.ndim >= 2:
        return _matmul(x2, y2)
    out = _matmul(x2, y2)
    shape = out.shape[:-2] + (() if x.ndim == 1 else out.shape[-2:-1]) + \
        (() if y.ndim == 1 else out.shape[-1:])
    return reshape(out, shape)


def _promoted(x, y):
    """x and y cast to their common dtype, the one np.matmul computes in: the products
    take operands of one dtype, and each cast's VJP gives a gradient its operand's dtype."""
    if x.dtype.kind not in "fiu" or y.dtype.kind not in "fiu":
        raise TypeError(f"matmul({x.aval.short()}, {y.aval.short()}): needs numeric operands"
                        f"\n  at {user_line()}")
    dtype = promote([x.aval, y.aval])[0]
    return tuple(v if v.dtype == dtype else cast(v, dtype) for v in (x, y))


def _matmul(x, y):
    if x.ndim == 2 and y.ndim == 2 and x.dtype in _BLAS_DTYPES:
        return matmul_p.bind(x, y)
    try:
        _check_operands(x.aval, y.aval)
    except ValueError as err:
        raise shape_error(f"matmul({x.aval.short()}, {y.aval.short()}): {err}") from None
    return reduce_sum(expand_dims(x, -1) * expand_dims(y, -3), axis=-2)


def matvec(a, b, transpose_a=False, adjoint_a=False, name=None):
    """Each matrix of `a` times the vector of `b` at its batch index (tf.linalg.matvec)."""
    v = as_value(b, "matvec")
    if v.ndim < 1:
        raise shape_error(f"matvec: expects a vector or a batch of them, got {v.aval.short()}")
    out = matmul(a, expand_dims(v, -1), transpose_a=transpose_a, adjoint_a=adjoint_a)
    return reshape(out, out.shape[:-1])


def matrix_transpose(a, conjugate=False, name=None):
    """Each matrix of the last two axes transposed (tf.linalg.matrix_transpose)."""
    return _swap(_matrix(a, "matrix_transpose"))


def adjoint(matrix, name=None):
    """The conjugate transpose of each matrix, the transpose for real ones
    (tf.linalg.adjoint)."""
    return _swap(_matrix(matrix, "adjoint"))


def tensordot_1d(a, b):
    """The inner product of two vectors."""
    return reduce_sum(as_value(a, "dot") * as_value(b, "dot"))


def dot(a, b):
    """NumPy's dot for rank ≤ 2: products of scalars, inner product of vectors, matmul."""
    x, y = as_value(a, "dot"), as_value(b, "dot")
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    if x.ndim == 1 and y.ndim == 1:
        return tensordot_1d(x, y)
    if x.ndim > 2 or y.ndim > 2:
        raise TypeError("dot: srcxform supports operands of rank ≤ 2; use matmul for batches")
    return numpy_matmul(x, y)


def outer(a, b):
    """The outer product of two vectors (flattened first, as NumPy's outer)."""
    x, y = as_value(a, "outer"), as_value(b, "outer")
    x, y = reshape(x, (-1,)), reshape(y, (-1,))
    return expand_dims(x, 1) * expand_dims(y, 0)


# ----- diagonals and triangles: where() with a constant mask, so an infinity off the
# diagonal stays out of it (a multiply by 0 would make it NaN) -----


def _matrix(x, op):
    x = as_value(x, op)
    if x.ndim < 2:
        raise shape_error(f"{op}: expects matrices (rank 2 or more), got {x.aval.short()}")
    return x


def _eye(rows, columns):  # made at run time where a size is traced
    return eye(rows, columns, dtype=np.bool_)


def diag_part(input, name=None):
    """The main diagonal of each matrix of the last two axes (tf.linalg.diag_part)."""
    x = _matrix(input, "diag_part")
    m, n = x.shape[-2:]
    k = min(m, n)
    square = x[..., :k, :k] if (m, n) != (k, k) else x
    return reduce_sum(where(_eye(k, k), square, 0), axis=-1)


def diag(diagonal, name=None):
    """Square matrices with `diagonal`'s last axis on their diagonal, zeros elsewhere
    (tf.linalg.diag, main diagonal only)."""
    d = as_value(diagonal, "diag")
    if d.ndim < 1:
        raise shape_error(f"diag: expects a vector or a batch of them, got {d.aval.short()}")
    k = d.shape[-1]
    return where(_eye(k, k), expand_dims(d, -1), 0)


def set_diag(input, diagonal, name=None):
    """input with the main diagonal of each matrix replaced by `diagonal`
    (tf.linalg.set_diag)."""
    x, d = _matrix(input, "set_diag"), as_value(diagonal, "set_diag")
    m, n = x.shape[-2:]
    if d.ndim < 1 or d.shape[-1] != min(m, n):
        raise shape_error(f"set_diag: the diagonal of {x.aval.short()} has {min(m, n)} "
                          f"entries, got {d.aval.short()}")
    # Each row (each column, for a tall matrix) holds its diagonal entry throughout.
    spread = expand_dims(d, -1 if m <= n else -2)
    return where(_eye(m, n), spread, x)


def band_part(input, num_lower, num_upper, name=None):
    """input with the entries more than num_lower below the diagonal, or num_upper above
    it, set to zero; a negative count keeps that whole triangle (tf.linalg.band_part)."""
    x = _matrix(input, "band_part")
    m, n = x.shape[-2:]
    below = reshape(iota(m, np.int64), (m, 1)) - iota(n, np.int64)  # row - column
    keep = ((num_lower < 0) | (below <= num_lower)) & ((num_upper < 0) | (-below <= num_upper))
    return where(keep, x, 0)


def trace(x, name=None):
    """The sum of each matrix's main diagonal (tf.linalg.trace)."""
    return reduce_sum(diag_part(_matrix(x, "trace")), axis=-1)


def cross(a, b, name=None):
    """The cross products of the 3-vectors along the last axis of a and b, which have one
    shape (tf.linalg.cross)."""
    a, b = as_value(a, "cross"), as_value(b, "cross")
    if tuple(a.shape) != tuple(b.shape):
        raise shape_error(f"cross: a and b must have the same shape, got {a.aval.short()} "
                          f"and {b.aval.short()}")
    if not a.ndim or a.shape[-1] != 3:
        raise shape_error(f"cross: the last axis must hold 3-vectors, got {a.aval.short()}")

    def part(x, k):
        return getitem(x, (Ellipsis, k))

    return stack([part(a, 1) * part(b, 2) - part(a, 2) * part(b, 1),
                  part(a, 2) * part(b, 0) - part(a, 0) * part(b, 2),
                  part(a, 0) * part(b, 1) - part(a, 1) * part(b, 0)], axis=-1)
