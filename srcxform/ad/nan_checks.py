"""debug_nans: FloatingPointError at the first op that makes a NaN or an inf.

Eager ops check their own results (primitive.py's `_check_finite`, behind one flag test
of recording.DEBUG_NANS). A compiled function compiles a kernel of its own with the
checks generated into it (codegen/lower.py's nan_check), cached apart from the plain one
(api.py keys kernels by the flag); this module only keeps the flag.
"""

from srcxform.core import recording

# Called with no arguments when the flag changes: api.py drops the compiled functions'
# warm entries, each bound to a kernel made with or without the checks.
ON_CHANGE: list = []


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
    gradient, whose result holds a NaN or inf that none of its inputs held raises
    FloatingPointError naming the user's file:line, the op, and for a gradient op the
    forward line it is the gradient of. Also on with SRCXFORM_DEBUG_NANS=1.

    Example:
        >>> srcxform.debug_nans(True)          # on from here
        >>> with srcxform.debug_nans(True):    # on inside the block only
        ...     tape.gradient(loss, w)
    """
    previous = recording.DEBUG_NANS
    _set(enable)
    return _DebugNans(previous)


def enabled() -> bool:
    return recording.DEBUG_NANS


def _set(enable):
    changed = recording.DEBUG_NANS != bool(enable)
    recording.DEBUG_NANS = bool(enable)
    if changed:
        for listener in ON_CHANGE:
            listener()
