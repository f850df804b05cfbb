"""`srcxform.linalg`: TensorFlow's tf.linalg names for srcxform's ops."""

from srcxform.ops.creation import eye  # noqa: F401
from srcxform.ops.einsum import einsum, tensordot  # noqa: F401
from srcxform.ops.lapack import (  # noqa: F401
    cholesky, det, eigh, eigvalsh, inv, norm, slogdet, solve, svd, triangular_solve,
)
from srcxform.ops.linalg import (  # noqa: F401
    adjoint, band_part, cross, diag, diag_part, matmul, matrix_transpose, matvec, set_diag,
    trace,
)
from srcxform.optimizers import global_norm  # noqa: F401
