"""`srcxform.linalg`: TensorFlow's tf.linalg names for srcxform's ops."""

from srcxform.ops.creation import eye
from srcxform.ops.einsum import einsum, tensordot
from srcxform.ops.lapack import (
    cholesky, cholesky_solve, det, eigh, eigvalsh, inv, lstsq, norm, qr, slogdet, solve, svd,
    triangular_solve,
)
from srcxform.ops.linalg import (
    adjoint, band_part, cross, diag, diag_part, matmul, matrix_transpose, matvec, set_diag,
    trace,
)
from srcxform.optimizers import global_norm

__all__ = [
    "adjoint", "band_part", "cholesky", "cholesky_solve", "cross", "det", "diag", "diag_part",
    "eigh", "eigvalsh", "einsum", "eye", "global_norm", "inv", "lstsq", "matmul",
    "matrix_transpose", "matvec", "norm", "qr", "set_diag", "slogdet", "solve", "svd",
    "tensordot", "trace", "triangular_solve",
]
