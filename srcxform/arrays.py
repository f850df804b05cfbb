"""Array allocation for generated code: `arrays.empty((n0, n1), np.float64)` where NumPy
code would call np.empty.

Numba types and lowers each np.empty call site anew, error paths included; a model's
kernel has a dozen of them, and that was a tenth of its first call's compile time. Here
one small function per rank and dtype is compiled once and kept in Numba's on-disk
cache, and a kernel only calls it. Imported only by generated code.
"""

import numpy as np

from srcxform.numba_cache import helper


@helper
def empty(shape, dtype):
    """np.empty(shape, dtype): shape a tuple of sizes, dtype a NumPy scalar type."""
    return np.empty(shape, dtype)
