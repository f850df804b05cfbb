"""Linear algebra: matmul (2-D and batched, batch dims broadcast as NumPy's).

The primitive is the 2-D product, which compiles to a BLAS call; a batched product is a
broadcast multiply and a sum over the inner axis, which fuses into one loop nest.
Operands of different dtypes are cast to their common one first (NumPy's promotion, as
np.matmul), and a product BLAS has no routine for (integers, float16) is a multiply and
a sum too. Transpose lives in shape.py; dot and outer for NumPy dispatch are composites
here.
"""

import numpy as np

from srcxform.aval import Aval, broadcast_shapes
from srcxform.dtypes import promote
from srcxform.errors import shape_error, user_line
from srcxform.ops.elementwise import cast
from srcxform.ops.reduce import reduce_sum
from srcxform.ops.shape import expand_dims, reshape, transpose
from srcxform.primitive import primitive
from srcxform.tensor import as_value

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


# blas.matmul and .matvec call BLAS's gemm and gemv directly: np.dot's generic code,
# compiled for each operand layout, was most of a model's first-call compile time. They
# take C- and Fortran-ordered operands (a transposed matrix) as they are, and float32 or
# float64 operands of one dtype, as Numba's np.dot (which has no integer matmul either):
# matmul() gives them nothing else.
matmul_p = primitive("matmul", "opaque", np.matmul, _matmul_shape, "blas.matmul(x, y)",
                     vjp=lambda g, out, x, y: (_matmul(g, _swap(y)), _matmul(_swap(x), g)))


# A matrix times a vector is BLAS's gemv, several times faster than a one-column gemm.
matvec_p = primitive("matvec", "opaque", np.dot, _matvec_shape, "blas.matvec(x, v)",
                     vjp=lambda g, out, x, v: (expand_dims(g, 1) * expand_dims(v, 0),
                                               matvec_p.bind(_swap(x), g)))


def matmul(a, b, transpose_a=False, transpose_b=False, name=None):
    """The matrix product of the last two axes, batching over the others (tf.linalg.matmul).
    Both operands must have rank 2 or more, as in TensorFlow (`@` also takes vectors)."""
    x, y = as_value(a, "matmul"), as_value(b, "matmul")
    if x.ndim < 2 or y.ndim < 2:
        raise shape_error(f"matmul: operands must have rank 2 or more, got {x.aval.short()} "
                          f"and {y.aval.short()} (`@` takes vectors, as NumPy's)")
    x = _swap(x) if transpose_a else x
    y = _swap(y) if transpose_b else y
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
