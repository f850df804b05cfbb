"""Random numbers from Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as
1, 2, 3", SC'11), a counter-based generator: element i of a draw is a pure function of the
key and the counter value `counter + i`, so any element can be made alone, in any order.

This module is plain NumPy, written in whole-array operations that Numba also compiles
(srcxform.runtime.philox_jit): eager evaluation calls these functions as they are, and
compiled kernels call Numba's compilation of the same source. Every step is integer
arithmetic or IEEE float64 +, -, *, / and sqrt (correctly rounded in both), with no
library log or cos (NumPy's SIMD versions and the C library's may differ in the last
bit), so eager and compiled draws are equal bit for bit.

Each element takes one Philox block, counter words (c mod 2**32, c >> 32, attempt, 0):
`attempt` counts a truncated normal's redraws. Counter and key: uint64s (an int64's bits).
"""

import numpy as np

_MUL0 = np.uint64(0xD2511F53)
_MUL1 = np.uint64(0xCD9E8D57)
_WEYL0 = np.uint64(0x9E3779B9)
_WEYL1 = np.uint64(0xBB67AE85)
_LOW = np.uint64(0xFFFFFFFF)
_HALF = np.uint64(32)
_SIGNIFICAND = np.uint64((1 << 52) - 1)
_HALF_EXPONENT = np.uint64(1022 << 52)  # the exponent bits of 0.5
_LN2 = 0.6931471805599453
_SQRT_HALF = 0.7071067811865476
_TWO_PI = 6.283185307179586
_2_POW_53 = 9007199254740992.0


def blocks(counters, key, attempt):
    """The four 32-bit words (each in a uint64 array) of the Philox blocks at `counters`
    (a uint64 array) under `key`, on redraw `attempt`."""
    c0, c1 = counters & _LOW, counters >> _HALF
    c2 = np.full(counters.size, np.uint64(attempt))
    c3 = np.zeros(counters.size, np.uint64)
    k0, k1 = np.uint64(key) & _LOW, np.uint64(key) >> _HALF
    for _ in range(10):
        p0, p1 = _MUL0 * c0, _MUL1 * c2  # 32 x 32 -> 64 bits: hi and lo halves below
        c0, c1, c2, c3 = ((p1 >> _HALF) ^ c1 ^ k0, p1 & _LOW,
                          (p0 >> _HALF) ^ c3 ^ k1, p0 & _LOW)
        k0, k1 = (k0 + _WEYL0) & _LOW, (k1 + _WEYL1) & _LOW
    return c0, c1, c2, c3


def _top_bits(hi, lo, digits):
    """The top `digits` (at most 53) of the 64-bit word hi:lo, as exact float64s."""
    return (((hi << _HALF) | lo) >> np.uint64(64 - digits)).astype(np.float64)


# Each draw is a vector of `count` elements, so that Numba compiles one version of each
# whatever the shape a caller gives it.


def uniform(counter, key, count, digits):
    """Uniform in [0, 1) on the grid of 2**-digits: exact in a float type of `digits`
    significand bits, so that rounding to it cannot reach 1.0."""
    w0, w1, _, _ = blocks(_counters(counter, count), key, 0)
    return _top_bits(w0, w1, digits) * (1.0 / 2.0 ** digits)


def integers(counter, key, count):
    """Uniform non-negative int64 values (63 random bits: bits' shifted right by one)."""
    w0, w1, _, _ = blocks(_counters(counter, count), key, 0)
    return (((w0 << _HALF) | w1) >> np.uint64(1)).astype(np.int64)


def bits(counter, key, count):
    """Uniform uint64 values (64 random bits)."""
    w0, w1, _, _ = blocks(_counters(counter, count), key, 0)
    return (w0 << _HALF) | w1


def normal(counter, key, count):
    """Standard normal float64 values, one Box-Muller transform per element."""
    return _normal(_counters(counter, count), key, 0)


def truncated_normal(counter, key, count):
    """Standard normal values within 2 of 0: an element outside is drawn again from its
    own counter with the next `attempt`, until it falls within."""
    counters = _counters(counter, count)
    out = _normal(counters, key, 0)
    pending = np.nonzero(np.abs(out) >= 2.0)[0]
    attempt = 1
    while pending.size:
        again = _normal(counters[pending], key, attempt)
        out[pending] = again
        pending = pending[np.abs(again) >= 2.0]
        attempt += 1
    return out


def _counters(counter, count):
    """counter, counter + 1, ..., counter + count - 1 as uint64s."""
    return np.arange(count).astype(np.uint64) + np.uint64(counter)


def _normal(counters, key, attempt):
    w0, w1, w2, w3 = blocks(counters, key, attempt)
    u1 = (_top_bits(w0, w1, 53) + 1.0) * (1.0 / _2_POW_53)  # in (0, 1]: log is finite
    u2 = _top_bits(w2, w3, 53) * (1.0 / _2_POW_53)  # in [0, 1)
    return np.sqrt(-2.0 * _log(u1)) * _cos_two_pi(u2)


def _log(u):
    """log(u) for u in (0, 1]: u = m 2**e with m in [sqrt(1/2), sqrt(2)), and
    log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.172, by its series to s**23."""
    bits = u.view(np.uint64)  # u is normal (at least 2**-53): frexp from its bits
    m = ((bits & _SIGNIFICAND) | _HALF_EXPONENT).view(np.float64)  # in [1/2, 1)
    e = (bits >> np.uint64(52)).astype(np.float64) - 1022.0
    low = m < _SQRT_HALF
    m = np.where(low, m * 2.0, m)
    e = np.where(low, e - 1.0, e)
    s = (m - 1.0) / (m + 1.0)
    s2 = s * s
    series = np.zeros_like(s)
    for k in range(11, -1, -1):
        series = series * s2 + 1.0 / (2 * k + 1)
    return 2.0 * s * series + e * _LN2


def _cos_two_pi(t):
    """cos(2 pi t) for t in [0, 1): its Taylor series at 0 on [0, pi/2] (to x**24), the
    rest of the circle by symmetry: cos(2 pi t) = cos(2 pi |t - round(t)|) and
    cos(x) = -cos(pi - x)."""
    a = np.abs(t - np.where(t >= 0.5, 1.0, 0.0))  # in [0, 1/2]
    flip = a > 0.25
    x = _TWO_PI * np.where(flip, 0.5 - a, a)  # in [0, pi/2]; 0.5 - a is exact here
    x2 = x * x
    series = np.zeros_like(x)
    for k in range(12, 0, -1):  # 1 - x2/2! (1 - x2/(3*4) (1 - ...))
        series = 1.0 - x2 / ((2 * k - 1) * (2 * k)) * series
    return np.where(flip, -series, series)


# What the entry points above call: Numba must compile these with them (philox_jit).
INTERNALS = (blocks, _top_bits, _counters, _normal, _log, _cos_two_pi)
