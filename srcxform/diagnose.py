"""srcxform.ad.explain for a function (compiled or not): tape.explain on one eager run of it.

A compiled gradient is zeros where the tape's is None (SPEC); the eager run's explanation
names the cut that makes them zeros, with the user's lines. Computes nothing of its own.
"""

from collections.abc import Callable

from srcxform.api import Differentiable, _as_tensors
from srcxform.ad.explain import Explanation
from srcxform.ad.tape import GradientTape
from srcxform.core.tree import tree_flatten, tree_unflatten


def explain(fn: Callable, *args, wrt: int | tuple = 0, **kwargs):
    """Why the gradient of fn(*args, **kwargs) wrt the arguments at `wrt` is what it is:
    fn runs once on the eager tape (a compiled function's Python function), and each
    argument leaf gets tape.explain's Explanation, in the argument's structure (a tuple of
    them for a tuple `wrt`).

    Example:
        >>> print(srcxform.ad.explain(loss, w, x, wrt=0))
    """
    python = fn.fn if isinstance(fn, Differentiable) else fn
    args, kwargs = _as_tensors(args, kwargs)
    positions = (wrt,) if isinstance(wrt, int) else tuple(wrt)
    with GradientTape(persistent=True) as tape:
        for position in positions:
            tape.watch(args[position])
        out = python(*args, **kwargs)
    found = tuple(_explained(tape, out, args[position]) for position in positions)
    return found[0] if isinstance(wrt, int) else found


def _explained(tape, out, argument) -> Explanation:
    leaves, tree = tree_flatten(argument)
    return tree_unflatten(tree, [tape.explain(out, leaf) for leaf in leaves])
