"""The random primitive: a draw from Philox-4x32-10 at a counter and a key.

srcxform.random keeps the counter and the key in int64 Variables and advances the counter
by each draw's size, so that a compiled function reads them as inputs and writes the
counter back: each call draws anew. Element i of a draw is a function of (key, counter +
i) alone (srcxform.philox), computed by the same source eagerly (NumPy) and in
kernels (Numba): the two are equal bit for bit. A draw has no gradient: it is a constant
to the tape, as TensorFlow's random ops are.
"""

import numpy as np

from srcxform import philox
from srcxform.aval import Aval
from srcxform.primitive import primitive

# What a draw gives: uniform in [0, 1), standard normal, standard normal within 2 of 0
# (floats, of the draw's dtype), or uniform non-negative int64s with 63 random bits.
DISTRIBUTIONS = ("uniform", "normal", "truncated_normal", "integers")


def _philox_shape(counter, key, *, shape, dist, dtype):
    for name, a in (("counter", counter), ("key", key)):
        if a.shape != () or a.dtype != np.int64:
            raise TypeError(f"the {name} must be an int64 scalar, got {a.short()}")
    if any(d < 0 for d in shape):
        raise ValueError(f"a shape has no negative sizes, got {tuple(shape)}")
    if dist not in DISTRIBUTIONS:
        raise ValueError(f"unknown distribution {dist!r}")
    if dtype != np.int64 if dist == "integers" else dtype.kind != "f":
        raise TypeError(f"a {dist} draw cannot be of dtype {dtype.name}")
    return Aval(tuple(shape), dtype)


def _digits(dtype):
    """The significand bits of a float dtype: a uniform draw's grid is 2**-digits."""
    return np.finfo(dtype).nmant + 1


def _philox_impl(counter, key, shape, dist, dtype):
    extra = (_digits(dtype),) if dist == "uniform" else ()
    draw = getattr(philox, dist)(int(counter), int(key), tuple(int(d) for d in shape), *extra)
    return draw.astype(dtype)


def _philox_emit(counter, key, out, *, shape, dist, dtype):
    """A call of runtime.philox_jit; generated code keeps a rank-0 value as a scalar."""
    extra = f", {_digits(dtype)}" if dist == "uniform" else ""
    call = f"philox_jit.{dist}(counter, key, {'shape' if out.ndim else '(1,)'}{extra})"
    return f"{call}.astype(dtype)" + ("" if out.ndim else "[0]")


philox_p = primitive("philox", "opaque", _philox_impl, _philox_shape,
                     "philox_jit.normal(counter, key, shape).astype(dtype)",
                     nondiff=True, emit_for=_philox_emit)
