"""The random primitive: a draw from Philox-4x32-10 at a counter and a key.

srcxform.random keeps the counter and the key in int64 Variables and advances the counter
by each draw's size, so that a compiled function reads them as inputs and writes the
counter back: each call draws anew. Element i of a draw is a function of (key, counter +
i) alone (srcxform.core.philox), computed by the same source eagerly (NumPy) and in
kernels (Numba): the two are equal bit for bit. A draw has no gradient: it is a constant
to the tape, as TensorFlow's random ops are.
"""

import numpy as np

from srcxform.core import philox
from srcxform.core.aval import Aval
from srcxform.core.primitive import primitive

# What a draw gives: uniform in [0, 1), standard normal, standard normal within 2 of 0
# (floats, of the draw's dtype), uniform non-negative int64s with 63 random bits, or
# uniform uint64s (all 64 bits; their halves are the integers).
DISTRIBUTIONS = ("uniform", "normal", "truncated_normal", "integers", "bits")
_INTEGERS = {"integers": np.dtype(np.int64), "bits": np.dtype(np.uint64)}


def _philox_shape(counter, key, *, count, dist, dtype):
    for name, a in (("counter", counter), ("key", key)):
        if a.shape != () or a.dtype != np.int64:
            raise TypeError(f"the {name} must be an int64 scalar, got {a.short()}")
    if count < 0:
        raise ValueError(f"cannot draw a negative number ({count}) of values")
    if dist not in DISTRIBUTIONS:
        raise ValueError(f"unknown distribution {dist!r}")
    if dtype != _INTEGERS[dist] if dist in _INTEGERS else dtype.kind != "f":
        raise TypeError(f"a {dist} draw cannot be of dtype {dtype.name}")
    return Aval((count,), dtype)


def _digits(dtype):
    """The significand bits of a float dtype: a uniform draw's grid is 2**-digits."""
    return np.finfo(dtype).nmant + 1


def _extra(dist, dtype):
    """The arguments after (counter, key, count) of philox.<dist>."""
    return (_digits(dtype),) if dist == "uniform" else ()


def _philox_impl(counter, key, count, dist, dtype):
    # A negative int64 state (a counter past 2**63, a key from from_state) as the uint64
    # of its bits, as the compiled draws take it.
    return getattr(philox, dist)(int(counter) % 2**64, int(key) % 2**64, int(count),
                                 *_extra(dist, dtype))


def _philox_emit(counter, key, out, *, count, dist, dtype):
    # np.int64: a literal int (a count of 1, the digits) would type, and compile, the
    # helper anew for its value.
    extra = "".join(f", np.int64({a})" for a in _extra(dist, dtype))
    return f"philox_jit.{dist}(counter, key, np.int64(count){extra}).astype(dtype)"


# A vector of `count` draws (srcxform.random reshapes it): one compiled helper a
# distribution, whatever the shape.
philox_p = primitive("philox", "opaque", _philox_impl, _philox_shape,
                     "philox_jit.normal(counter, key, np.int64(count)).astype(dtype)",
                     nondiff=True, emit_for=_philox_emit)
