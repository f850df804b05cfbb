"""Array helpers for generated code: allocation (`arrays.empty((n0, n1), np.float64)`
where NumPy code would call np.empty), and gathering and scattering rows at indices with
their bounds checked, as NumPy checks them (Numba does not: an index out of range would
read or write past the array).

Numba types and lowers each np.empty call site anew, error paths included; a model's
kernel has a dozen of them, and that was a tenth of its first call's compile time. Here
one small function per rank and dtype is compiled once and kept in Numba's on-disk
cache, and a kernel only calls it. Imported only by generated code.
"""

import numpy as np

from srcxform.errors import IndexArgumentError, ZeroDivisionArgumentError
from srcxform.numba_cache import helper


@helper
def empty(shape, dtype):
    """np.empty(shape, dtype): shape a tuple of sizes, dtype a NumPy scalar type."""
    return np.empty(shape, dtype)


@helper
def check_indices(indices, size, op):
    """Raises IndexError (as eager raises it: also TensorFlow's InvalidArgumentError) if an
    index is outside [-size, size)."""
    for k in range(indices.shape[0]):
        i = indices[k]
        if i < -size or i >= size:
            raise IndexArgumentError(op + ": index " + str(i) + " is out of bounds for a "
                                     "dimension of size " + str(size))


@helper
def gather(x, indices):
    """x[indices] for a vector of indices (negative ones count from the end)."""
    check_indices(indices, x.shape[0], "gather")
    return x[indices]


@helper
def scatter_add(g, indices, size):
    """Zeros of `size` rows with g's rows added at indices (repeats add up)."""
    check_indices(indices, size, "scatter_add")
    out = np.zeros((size,) + g.shape[1:], g.dtype)
    for k in range(indices.shape[0]):
        out[indices[k]] += g[k]
    return out


# Integer x // y and x % y: Numba's error_model="numpy" gives 0 for a divisor of 0, where
# eager raises (TensorFlow's InvalidArgumentError). Floats divide inline, unchecked.
@helper
def floordiv(x, y):
    if y == 0:
        raise ZeroDivisionArgumentError("floordiv: integer division by zero")
    return x // y


@helper
def mod(x, y):
    if y == 0:
        raise ZeroDivisionArgumentError("mod: integer division by zero")
    return x % y
