"""The debugging switch: `SRCXFORM_CHECK=1` or `differentiable(..., check=True)` runs the
eager tape beside each kernel's first call with new shapes (a kernel takes any size, and
may be right at one and wrong at another) and raises CheckError, with both results, where
they differ by more than rounding. A wrong compiled gradient in a user's program then
fails loudly at its first call instead of training silently on it.

The eager run starts from the Variables' values before the kernel ran and ends with the
kernel's values put back, so a checked training step updates its Variables once.

How far apart rounding may put them. The kernel and the eager tape compute one function
with different roundings: sums add their terms in other orders (a loop, its lanes and
chunks, against NumPy's pairwise sums and another BLAS), and transcendental functions are
other implementations (vecmath's polynomials, libm), a few units in the last place apart.
The rest gives the same bits in both: +, -, *, / and sqrt are correctly rounded (no
fast-math), and comparisons, selections, max, min and moving elements are exact. How far
those roundings can move a result is not a fraction of the result: a sum of 10^5 terms
of 10^8 that cancel to 10^-4 is rounding noise in both, as large as eps times the terms.

So a result leaf passes at once where it is within a relative tolerance (_RTOL) of its
largest magnitude of the eager one, as nearly all do. Only where it is not does the check
measure what rounding can do to it: it reruns the eager tape (_RERUNS times, seeded, so
that a check is deterministic) with each rounding op's result moved by a random normal
multiple of that op's own error bound. For a sum of n terms in any order that bound is
gamma(n - 1) * sum(|term|), gamma(k) = k u / (1 - k u), u = eps / 2 (Higham, Accuracy and
Stability of Numerical Algorithms, 2nd ed., section 4.2); a primitive marked `sums` gives
sum(|term|) as itself applied to its inputs' magnitudes and n as itself applied to ones.
For a transcendental function (`expensive`) it is _ULPS units in the last place. The
noise flows through the rest of the computation as the real rounding does, amplified
where later ops amplify (an exp, a difference of close values) and into the gradient
through the backward pass's own sums: Monte Carlo arithmetic (Parker, 1997) at the level
of ops, with worst-case noise. The leaf passes where the compiled result is within
_SPREAD times the reruns' largest deviation from the eager one, on top of the relative
tolerance. To first order a rerun's deviation is normal, of a standard deviation s that
is already a worst case (a sum's real error grows like sqrt(n) u, not n u); the largest
of three falls below s / _SPREAD with probability 1e-3. A wrong kernel's error is the
size of a term or of the result (a term left out, a value read stale), far beyond.

Not modelled: LAPACK's factorizations (SciPy's in compiled code, NumPy's eagerly), which
differ by their condition number times u, and products in another order (n u of the
result), which the relative tolerance alone covers.
"""

import contextlib
import functools

import numpy as np

from srcxform.core import settings
from srcxform.core.errors import SrcxformError
from srcxform.core.recording import CONTEXT, PERTURBING
from srcxform.core.tree import tree_flatten

# Relative tolerance by dtype, of each result leaf's largest magnitude (at least 1).
_RTOL = {np.dtype(np.float64): 1e-7, np.dtype(np.float32): 1e-3, np.dtype(np.float16): 1e-2}
# The noisy reruns, and how many times their largest deviation a result may be off.
_RERUNS = 3
_SPREAD = 8
# How many units in the last place apart a transcendental function's implementations are.
_ULPS = 4


class CheckError(SrcxformError, AssertionError):
    """A compiled kernel gave another result than the eager tape."""


def enabled(check):
    """Whether a Differentiable created with `check` checks its kernels."""
    return check or settings.switch("SRCXFORM_CHECK")


def first_call(name, compiled, eager, variables, dtypes=True):
    """compiled()'s results, after checking them against eager()'s (and, where they are
    not close, against eager() rerun with rounding noise): a kernel's first call with new
    shapes. The test suite (SRCXFORM_CHECK_DTYPES) compares their dtypes too, where
    `dtypes`: README's differences (a Python float argument float64 compiled, a Python
    number a loop returns, NumPy's functions on traced values) would fail a user's check.

    Each is run from the same values of `variables` (the Variables the kernel reads or
    assigns); the kernel's new values stay assigned."""
    before = [v._array.copy() for v in variables]
    results = compiled()
    after = [v._array for v in variables]

    def reference(seed=None):
        for v, value in zip(variables, before):
            v._array = value.copy()
        with _perturbing(seed):
            expected = eager()
        return tree_flatten(expected)[0] + [v._array for v in variables]

    try:
        differences = _differences(tree_flatten(results)[0] + after, reference(),
                                   lambda: [reference(seed) for seed in range(_RERUNS)],
                                   dtypes and settings.switch("SRCXFORM_CHECK_DTYPES"))
    finally:
        for v, value in zip(variables, after):
            v._array = value
    if differences:
        raise CheckError(f"srcxform check: {name}'s compiled kernel disagrees with the eager "
                         "tape beyond rounding (please report it):\n" + "\n".join(differences))
    return results


def _differences(got, want, reruns, dtypes):
    """A line for each result leaf that differs beyond rounding, or in dtype where
    `dtypes`. `reruns()` gives the results of the noisy reruns, asked for only where a
    float leaf is beyond _RTOL."""
    if len(got) != len(want):
        return [f"  {len(got)} results compiled, {len(want)} eager"]
    lines, beyond = {}, {}
    for k, (a, b) in enumerate(zip(got, want)):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or dtypes and a.dtype != b.dtype:
            lines[k] = f"  result {k}: {a.dtype}{list(a.shape)} compiled, " \
                f"{b.dtype}{list(b.shape)} eager"
        elif b.dtype.kind not in "fc":
            if not np.array_equal(a, b):
                lines[k] = _both(k, a, b)
        elif not _close(a, b, 0.0):
            beyond[k] = a, b
    if beyond:
        noisy = reruns()
        for k, (a, b) in beyond.items():
            if not _close(a, b, _SPREAD * _spread(b, [run[k] for run in noisy])):
                lines[k] = _both(k, a, b)
    return [lines[k] for k in sorted(lines)]


def _close(a, b, atol):
    """Whether a is b to _RTOL of b's largest magnitude, plus `atol` (an array of b's shape)."""
    rtol = _RTOL.get(b.dtype, 1e-7)
    scale = float(np.max(np.abs(b[np.isfinite(b)]), initial=1.0))
    return bool(np.all(np.isclose(a, b, rtol=rtol, atol=rtol * scale + atol, equal_nan=True)))


def _spread(b, runs):
    """The largest deviation of the reruns' values from b, elementwise; infinite where a
    rerun's is not finite and b's is (rounding can move it out of the domain)."""
    spread = np.zeros(b.shape)
    for run in runs:
        run = np.asarray(run).astype(np.float64)
        if run.shape != b.shape:
            return np.full(b.shape, np.inf)
        with np.errstate(invalid="ignore"):
            deviation = np.abs(run - b)
        spread = np.fmax(spread, np.where(np.isfinite(run) | ~np.isfinite(b), deviation, np.inf))
    return spread


def _both(k, a, b):
    return f"  result {k}:\n    compiled {_show(a)}\n    eager    {_show(b)}"


def _show(array):
    return np.array2string(array, threshold=8, precision=8).replace("\n", " ")


# ----- the noisy reruns -----


@contextlib.contextmanager
def _perturbing(seed):
    """Eager ops of this thread, in the block, add noise to their results (seed None: none)."""
    if seed is None:
        yield
        return
    outer = CONTEXT.perturb  # a check of a kernel the rerun calls returns to its rerun's
    CONTEXT.perturb = perturb = functools.partial(_perturbed, np.random.default_rng(seed))
    PERTURBING.append(perturb)
    try:
        yield
    finally:
        PERTURBING.remove(perturb)
        CONTEXT.perturb = outer


def _perturbed(rng, prim, arrays, params, result):
    """An eager op's float result moved by a normal random multiple of its rounding error
    bound, elementwise, where the op rounds otherwise in compiled code (see the module's
    docstring); else the result."""
    if result.dtype.kind != "f" or not (prim.algebra.sums or prim.codegen.expensive):
        return result
    u = np.finfo(result.dtype).eps / 2
    if prim.algebra.sums:
        floats = [a.dtype.kind == "f" for a in arrays]
        with np.errstate(all="ignore"):
            magnitude = np.abs(prim.impl(*[np.abs(a) if f else a
                                           for a, f in zip(arrays, floats)], **params))
            terms = prim.impl(*[np.ones_like(a) if f else a
                                for a, f in zip(arrays, floats)], **params)
        ku = np.maximum(np.asarray(terms, np.float64) - 1, 0) * u
        bound = np.where(ku < 0.5, ku / (1 - np.minimum(ku, 0.5)), 1.0) * magnitude
    else:
        bound = 2 * _ULPS * u * np.abs(result)
    with np.errstate(all="ignore"):
        return np.asarray(result + bound * rng.standard_normal(result.shape), result.dtype)
