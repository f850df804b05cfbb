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
from srcxform.numba_adapter.jit import helper


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


@helper
def cumulative(x, axis, product, exclusive, reverse):
    """The running sum (or product) of x along `axis`, TensorFlow's cumsum and cumprod:
    `exclusive` leaves each element out of its own total, `reverse` runs from the end.
    Works on x seen as (before, along, after), so one function serves every rank."""
    shape = x.shape
    before, after = 1, 1
    for i in range(x.ndim):
        if i < axis:
            before *= shape[i]
        elif i > axis:
            after *= shape[i]
    n = shape[axis]
    flat = np.ascontiguousarray(x).reshape((before, n, after))
    out = np.empty_like(flat)
    start = np.ones(1, flat.dtype)[0] if product else np.zeros(1, flat.dtype)[0]
    for a in range(before):
        for c in range(after):
            total = start
            for k in range(n):
                j = n - 1 - k if reverse else k
                if exclusive:
                    out[a, j, c] = total
                total = total * flat[a, j, c] if product else total + flat[a, j, c]
                if not exclusive:
                    out[a, j, c] = total
    return out.reshape(shape)


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
