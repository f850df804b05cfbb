"""Special functions for generated code: erf, erfc and lgamma (C's, as Python's math
module has them), and digamma and the polygamma functions, which Numba has not.

`polygamma(n, x)` is the n-th derivative of digamma (n = 0 is digamma itself; n may be
a float holding an integer, and any other n gives NaN). x is shifted up by the
recurrence psi_n(x) = psi_n(x + 1) - (-1)**n n! / x**(n + 1) until it is large, where the
asymptotic series converges to float64 precision in eight Bernoulli terms; negative x is
reflected first for n = 0 and 1. Values at the poles (0, -1, -2, ...)
and at infinities are TensorFlow's: NaN for digamma, +inf for odd n. Imported only by
generated code; eager evaluation uses SciPy's (srcxform.ops.mathfuncs).
"""

import math

from srcxform.numba_adapter.jit import helper

# B_2k / (2k)! for k = 1 .. 8 (Bernoulli numbers over factorials), and B_2k / 2k.
_B_OVER_FACTORIAL = (1 / 12, -1 / 720, 1 / 30240, -1 / 1209600, 1 / 47900160,
                     -691 / 1307674368000, 1 / 74724249600, -3617 / 10670622842880000)
_B_OVER_2K = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12,
              -3617 / 8160)


@helper
def _large(n, x):
    """psi_n(x) for x >= 10 + n, by the asymptotic series."""
    if n == 0:  # psi(x) ~ log(x) - 1/(2x) - sum_k B_2k / (2k x**2k)
        total = math.log(x) - 0.5 / x
        power = 1.0
        for k in range(8):
            power *= x * x
            total -= _B_OVER_2K[k] / power
        return total
    # psi_n(x) ~ (-1)**(n+1) [(n-1)!/x**n + n!/(2 x**(n+1))
    #                          + sum_k B_2k (2k+n-1)! / ((2k)! x**(2k+n))]
    power = x ** n
    total = math.gamma(n) / power + math.gamma(n + 1) / (2 * power * x)
    for k in range(8):
        power *= x * x
        total += _B_OVER_FACTORIAL[k] * math.gamma(2 * k + 2 + n) / power
    return total if n % 2 == 1 else -total


@helper
def polygamma_positive(n, t):
    """psi_n(t) for t not a pole, shifted up by the recurrence."""
    sign_fact = math.gamma(n + 1) * (1.0 if n % 2 == 0 else -1.0)  # (-1)**n n!
    shift = 0.0
    while t < 10.0 + n:
        shift -= sign_fact / t ** (n + 1)
        t += 1.0
    return shift + _large(n, t)


@helper
def polygamma(n, x):
    """The n-th derivative of digamma at x (float64); NaN for an order n that is negative
    or not an integer, as TensorFlow's."""
    t = float(x)
    if math.isnan(t) or not (n >= 0 and n == math.floor(n)):
        return math.nan
    if math.isinf(t):
        if t < 0:
            return math.nan
        return math.inf if n == 0 else 0.0
    if t <= 0 and t == math.floor(t):
        return math.nan if n % 2 == 0 else math.inf
    if t < 0 and n == 0:  # psi(x) = psi(1 - x) - pi / tan(pi x)
        return polygamma_positive(0, 1 - t) - math.pi / math.tan(math.pi * t)
    if t < 0 and n == 1:  # psi_1(x) = pi**2 / sin(pi x)**2 - psi_1(1 - x)
        s = math.sin(math.pi * t)
        return math.pi * math.pi / (s * s) - polygamma_positive(1, 1 - t)
    return polygamma_positive(n, t)


# Generated code imports only NumPy and srcxform's runtime modules, so C's functions that
# NumPy has no ufunc for are called through these.
@helper
def erf(x):
    return math.erf(x)


@helper
def erfc(x):
    return math.erfc(x)


@helper
def lgamma(x):
    return math.lgamma(x)
