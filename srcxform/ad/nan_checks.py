"""debug_nans: FloatingPointError at the first op that makes a NaN or an inf.

Owns the flag and the rule, which eager ops (here, through recording.NAN_CHECK) and
compiled kernels (codegen/nancheck.py generates the same tests into a kernel of its own,
cached apart by api.py) both follow:

- An op *makes* a NaN where an element of its result is NaN and none of the input
  elements it was computed from is; an inf where they were all finite. Elementwise ops
  are judged element by element (a broadcast input's element meets each element it
  broadcasts to), reductions by each result element and the terms reduced into it, other
  ops (matmul, a call) as a whole, and only where all their inputs are finite. Ops that
  only move elements (reshape, getitem, broadcast_to) make nothing.
- A NaN or inf an input held can be *lost*: compared (`x == nan` is False), or turned
  finite (`exp(-inf)`, `1 / inf`) by a result element that is not a copy of one of its
  inputs' elements (where, maximum and clip copy one). The value that lost it, and every
  value computed from it, is *tainted*: an op with a tainted input makes nothing, for its
  NaN may be the lost one (reduce_max's gradient at a NaN divides 0 matches by 0).
"""

import itertools

import numpy as np

from srcxform.core import recording
from srcxform.core.errors import nan_message, user_line
from srcxform.core.primitive import op_name

# Called with no arguments when the flag changes: api.py drops the compiled functions'
# warm entries, each bound to a kernel made with or without the checks.
ON_CHANGE: list = []

# The ids (never reused) of the eager tensors made tainted while the checks were on. Kept
# to a bound: the oldest half is forgotten, which can only make a check stricter.
_TAINTED: set = set()
_TAINTED_MAX = 1 << 16

# In a VJP (Holding), errors are held in this thread's CONTEXT.held, {id of a value made NaN
# or inf, or from one: (when made, error)}: a cotangent the walk drops (a literal's) raises none.
_MADE = itertools.count()


class _DebugNans:
    """debug_nans's result: the flag is already set; as a context manager it restores the
    previous state on exit."""

    def __init__(self, previous):
        self._previous = previous

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        _set(self._previous)
        return False


def debug_nans(enable: bool = True) -> _DebugNans:
    """Turns NaN and inf checks on (or off): an op, eager or compiled, forward or in a
    gradient, that makes a NaN or inf none of its inputs held raises FloatingPointError
    naming the user's file:line, the op, and for a gradient op the forward line it is the
    gradient of. Also on with SRCXFORM_DEBUG_NANS=1. The rule: this module's docstring.

    Example:
        >>> srcxform.debug_nans(True)          # on from here
        >>> with srcxform.debug_nans(True):    # on inside the block only
        ...     tape.gradient(loss, w)
    """
    if not isinstance(enable, (bool, np.bool_)):  # a string or None would be its truth
        raise TypeError(f"debug_nans: enable must be True or False, got {enable!r}")
    previous = recording.DEBUG_NANS
    _set(enable)
    return _DebugNans(previous)


def enabled() -> bool:
    return recording.DEBUG_NANS and not recording.CONTEXT.nans_quiet


def _set(enable):
    changed = recording.DEBUG_NANS != bool(enable)
    recording.DEBUG_NANS = bool(enable)
    if changed:
        for listener in ON_CHANGE:
            listener()


# ----- the eager check -----


def check(prim, values, arrays, params, out):
    """After an eager op made `out` from `values` (their arrays as the op met them): raises
    FloatingPointError if it made a NaN or an inf, else marks `out` tainted where it lost
    one or read a tainted value (the module's rule)."""
    if recording.CONTEXT.nans_quiet:  # explain's probe runs in this thread
        return
    held = recording.CONTEXT.held
    inherited = held and [held[v._id] for v in values if getattr(v, "_id", None) in held]
    if inherited:  # its NaN or inf is the held one's
        held[out._id] = min(inherited)
        return
    if any(getattr(v, "_id", None) in _TAINTED for v in values):
        _taint(out)
        return
    if prim.algebra.moves_only:
        return
    result = out._array
    floats = [a for a in arrays if a.dtype.kind == "f"]
    if prim.kind == "elementwise":
        made_nan, made_inf, lost = _elementwise(floats, result)
    elif prim.kind == "reduction" and floats:
        made_nan, made_inf, lost = _reduction(floats[0], result, params["axis"],
                                              params["keepdims"])
    else:
        made_nan, made_inf, lost = _whole(floats, result)
    if made_nan or made_inf:
        _raise(prim, "a NaN" if made_nan else "an inf", out)
    if lost:
        _taint(out)


def _elementwise(floats, result):
    """(made a NaN, made an inf, lost one), element by element."""
    ins = [np.broadcast_to(a, result.shape) for a in floats]
    if result.dtype.kind != "f":  # a comparison loses the NaNs it reads
        return False, False, any(np.isnan(a).any() for a in ins)
    held_nan = np.zeros(result.shape, bool)
    finite = np.ones(result.shape, bool)
    copied = np.zeros(result.shape, bool)
    for a in ins:
        held_nan |= np.isnan(a)
        finite &= np.isfinite(a)
        copied |= result == a
    return (bool((np.isnan(result) & ~held_nan).any()),
            bool((np.isinf(result) & finite).any()),
            bool((np.isfinite(result) & ~finite & ~copied).any()))


def _reduction(x, result, axis, keepdims):
    """(made a NaN, made an inf, lost one), by each result element and its terms."""
    if result.dtype.kind != "f":
        return False, False, bool(np.isnan(x).any())
    held_nan = np.isnan(x).any(axis=axis, keepdims=keepdims)
    finite = np.isfinite(x).all(axis=axis, keepdims=keepdims)
    each = result if keepdims else np.expand_dims(result, axis)
    copied = (x == each).any(axis=axis, keepdims=keepdims)
    return (bool((np.isnan(result) & ~held_nan).any()),
            bool((np.isinf(result) & finite).any()),
            bool((np.isfinite(result) & ~finite & ~copied).any()))


def _whole(floats, result):
    """(made a NaN, made an inf, lost one) of an op judged as a whole: only from finite
    inputs (where an inf goes is the implementation's: BLAS gives -inf for inf - inf)."""
    finite = all(np.isfinite(a).all() for a in floats)
    if result.dtype.kind != "f":
        return False, False, any(np.isnan(a).any() for a in floats)
    return (bool(np.isnan(result).any()) and finite,
            bool(np.isinf(result).any()) and finite,
            not finite and bool(np.isfinite(result).any()))


def _taint(out):
    if len(_TAINTED) >= _TAINTED_MAX:
        for old in sorted(_TAINTED)[:_TAINTED_MAX // 2]:
            _TAINTED.discard(old)
    _TAINTED.add(out._id)


def _raise(prim, what, out):
    """FloatingPointError naming the op and the user's line; for an op of a reverse sweep,
    the forward op and line it is the gradient of; held for `out` inside a VJP."""
    forward = next((rec for rec, _ in reversed(recording.CONTEXT.adjoint) if rec is not None),
                   None)
    if forward is None:
        raise FloatingPointError(nan_message(prim.name, what, user_line()))
    error = FloatingPointError(nan_message(prim.name, what, None, user_line(forward.origin),
                                           user_line(), op_name(forward.op)))
    if not recording.CONTEXT.holding:
        raise error
    recording.CONTEXT.held[out._id] = (next(_MADE), error)


class Holding:
    """Around a VJP (backprop.py), nested in this thread's CONTEXT.holding: errors held."""

    def __enter__(self):
        recording.CONTEXT.holding += 1
        return self

    def __exit__(self, *exc_info):
        recording.CONTEXT.holding -= 1
        if not recording.CONTEXT.holding:
            recording.CONTEXT.held.clear()
        return False

    @staticmethod
    def judge(cotangents):
        """Raises the first error made among those held for `cotangents`."""
        held = recording.CONTEXT.held
        held = [held[ct._id] for ct in cotangents if getattr(ct, "_id", None) in held]
        if held:
            raise min(held)[1]


recording.NAN_CHECK = check
