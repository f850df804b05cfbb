"""The debugging switch: `SRCXFORM_CHECK=1` or `differentiable(..., check=True)` runs the
eager tape beside each new kernel's first call and raises CheckError, with both results,
where they differ. A wrong compiled gradient in a user's program then fails loudly at
its first call instead of training silently on it.

The eager run starts from the Variables' values before the kernel ran and ends with the
kernel's values put back, so a checked training step updates its Variables once.
"""

import os

import numpy as np

from srcxform.errors import SrcxformError
from srcxform.tree import tree_flatten

# Relative tolerance by dtype: compiled and eager code sum in different orders.
_RTOL = {np.dtype(np.float64): 1e-7, np.dtype(np.float32): 1e-3, np.dtype(np.float16): 1e-2}


class CheckError(SrcxformError, AssertionError):
    """A compiled kernel's first call gave another result than the eager tape."""


def enabled(check):
    """Whether a Differentiable created with `check` checks its new kernels."""
    return check or os.environ.get("SRCXFORM_CHECK", "") not in ("", "0")


def first_call(name, compiled, eager, variables):
    """compiled()'s results, after checking them against eager()'s.

    Both are run from the same values of `variables` (the Variables the kernel reads or
    assigns); the kernel's new values stay assigned."""
    before = [v._array.copy() for v in variables]
    results = compiled()
    after = [v._array for v in variables]
    for v, value in zip(variables, before):
        v._array = value
    try:
        expected = eager()
        differences = _differences(tree_flatten(results)[0] + after,
                                   tree_flatten(expected)[0] + [v._array for v in variables])
    finally:
        for v, value in zip(variables, after):
            v._array = value
    if differences:
        raise CheckError(f"srcxform check: {name}'s compiled kernel disagrees with the eager "
                         "tape at its first call (please report it):\n" +
                         "\n".join(differences))
    return results


def _differences(got, want):
    """A line for each result leaf that differs beyond rounding."""
    if len(got) != len(want):
        return [f"  {len(got)} results compiled, {len(want)} eager"]
    lines = []
    for k, (a, b) in enumerate(zip(got, want)):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            lines.append(f"  result {k}: shape {a.shape} compiled, {b.shape} eager")
            continue
        if b.dtype.kind not in "fc":
            same = np.array_equal(a, b)
        else:
            rtol = _RTOL.get(b.dtype, 1e-7)
            scale = float(np.max(np.abs(b[np.isfinite(b)]), initial=1.0))
            same = np.allclose(a, b, rtol=rtol, atol=rtol * scale, equal_nan=True)
        if not same:
            lines.append(f"  result {k}:\n    compiled {_show(a)}\n    eager    {_show(b)}")
    return lines


def _show(array):
    return np.array2string(array, threshold=8, precision=8).replace("\n", " ")
