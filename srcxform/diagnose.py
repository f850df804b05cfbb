"""srcxform.ad.explain for a function (compiled or not): tape.explain on one eager run of it.

A compiled gradient is zeros where the tape's is None (SPEC); the eager run's explanation
names the cut that makes them zeros, with the user's lines. Computes nothing of its own.
"""

from collections.abc import Callable

from srcxform.api import Differentiable, _as_tensors
from srcxform.ad.tape import GradientTape
from srcxform.jit.compiler import check_positions


def explain(fn: Callable, *args, wrt: int | tuple = 0, has_aux: bool | None = None,
            **kwargs):
    """Why the gradient of fn(*args, **kwargs) wrt the arguments at `wrt` is what it is:
    fn runs once on the eager tape (a compiled function's Python function), and each
    argument leaf gets tape.explain's Explanation, in the argument's structure (a tuple of
    them for a tuple `wrt`). With `has_aux` (a Differentiable's own unless given) fn
    returns (output, aux), and only the output is explained, as only it is
    differentiated.

    Example:
        >>> print(srcxform.ad.explain(loss, w, x, wrt=0))
    """
    python = fn.fn if isinstance(fn, Differentiable) else fn
    if has_aux is None:
        has_aux = isinstance(fn, Differentiable) and fn.has_aux
    args, kwargs = _as_tensors(args, kwargs)
    positions = (wrt,) if isinstance(wrt, int) else tuple(wrt)
    check_positions(positions, args)
    with GradientTape(persistent=True) as tape:
        for position in positions:
            tape.watch(args[position])
        out = python(*args, **kwargs)
    if has_aux:
        out = _differentiated(out, python)
    found = tuple(tape.explain(out, args[position]) for position in positions)
    return found[0] if isinstance(wrt, int) else found


def _differentiated(out, python):
    """The output of a has_aux function's (output, aux) pair."""
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(f"explain: with has_aux, {getattr(python, '__name__', 'fn')} must "
                        f"return a pair (output, aux), got {type(out).__name__}")
    return out[0]
