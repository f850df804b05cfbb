"""srcxform's exceptions and the helpers that make their messages.

Every message names the op, the shapes and dtypes involved and the user's `file:line`.
`source_text` is the one function that makes the user's text (a file name, a source
line) safe to write into generated source, in a comment or a docstring. This module
knows no primitive and imports nothing from the rest of the package.
"""

import dis
import importlib.util
import linecache
import os
import sys
import warnings

import numpy as np

# The srcxform package's folder: a file under it is srcxform's, not the user's.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class SrcxformError(Exception):
    """The base of every exception srcxform raises on its own account."""


class TracingError(SrcxformError):
    """A function cannot be traced: it asked a traced value for something only known at run time."""


class TracingAttributeError(TracingError, AttributeError):
    """A traced value asked for an attribute it does not have. An AttributeError too, so
    that hasattr() and getattr() with a default read it as a missing attribute."""


class ShapeError(SrcxformError, ValueError):
    """Operands whose shapes do not fit the op."""


class InvalidArgumentError(SrcxformError):
    """TensorFlow's tf.errors.InvalidArgumentError: an op met an argument it cannot take.

    srcxform raises it as one of the subclasses below, each also the Python exception that
    names the fault, so `except tf.errors.InvalidArgumentError` (TensorFlow code) and
    `except ZeroDivisionError` (Python code) both catch it."""


class ShapeArgumentError(InvalidArgumentError, ShapeError):
    """Operands whose shapes do not fit the op (a ShapeError and a ValueError too)."""


class DtypeArgumentError(InvalidArgumentError, TypeError):
    """An operand of a dtype the op does not take."""


class IndexArgumentError(InvalidArgumentError, IndexError):
    """An index outside the axis it indexes."""


class IndexOutOfBounds(IndexArgumentError):
    """An index outside [-size, size) found by compiled code, raised with (op, index,
    size) and worded here: a message built in compiled code costs each call of its helper."""

    def __str__(self):
        op, index, size = self.args
        return f"{op}: index {index} is out of bounds for a dimension of size {size}"


class ValueArgumentError(InvalidArgumentError, ValueError):
    """An operand value the op cannot take: an integer to a negative power."""


class ZeroDivisionArgumentError(InvalidArgumentError, ZeroDivisionError):
    """An integer division by zero (NumPy would give 0 silently)."""


class LinAlgArgumentError(InvalidArgumentError, np.linalg.LinAlgError):
    """A matrix LAPACK cannot factor as the op needs: singular (inv, solve), not positive
    definite (cholesky), or a decomposition that did not converge (a NaN in it). Also
    NumPy's LinAlgError (and so a ValueError), which NumPy code catches."""


class OutputNotScalarError(SrcxformError, TypeError):
    """grad or value_and_grad of a function whose output is not a scalar float."""


class CompileError(SrcxformError):
    """Numba could not compile the generated source; the message quotes the generated line."""


class CacheWarning(UserWarning):
    """srcxform's on-disk cache could not be used as it was: a damaged file in it (rebuilt),
    or a folder it cannot write in (a temporary one serves the process instead)."""


class SlowCompileWarning(UserWarning):
    """A kernel has been compiling for longer than SRCXFORM_SLOW_COMPILE seconds (5):
    said once a compile, naming it and the size of its generated source."""


class TieredWarning(UserWarning):
    """srcxform's compiler worker (tiered.py) could not compile a kernel: it died, or could
    not start. The kernel compiles in the calling process instead."""


class GradientCutWarning(UserWarning):
    """A gradient is silently cut: a watched tensor became a NumPy array or a Python number
    inside a recording tape, or an optimizer was given None gradients. Said once per line
    of the user's code; `warnings.simplefilter("error", GradientCutWarning)` makes it an
    error."""


class AutographWarning(UserWarning):
    """A function's Python control flow could not be converted into srcxform.cond,
    while_loop and fori_loop (srcxform/autograph): it is traced as written, where an `if`,
    `while` or `for` on a traced value raises TracingError. The message says why."""


# tf.errors's names and srcxform's own; the functions below are the implementation's.
__all__ = ["AutographWarning", "CacheWarning", "CompileError", "DtypeArgumentError",
           "GradientCutWarning", "IndexArgumentError", "InvalidArgumentError",
           "LinAlgArgumentError", "ShapeArgumentError", "ShapeError", "SlowCompileWarning",
           "SrcxformError", "TieredWarning", "TracingAttributeError", "TracingError",
           "ZeroDivisionArgumentError"]


def user_frame():
    """Returns (filename, lineno) of the innermost frame outside srcxform, or None."""
    frame = user_frame_object()
    return None if frame is None else (frame.f_code.co_filename, frame.f_lineno)


def user_frame_object():
    """The innermost Python frame outside srcxform's own modules, the modules it
    generates (a warm entry passing a call on, a kernel's module calling its compiled
    function), NumPy's (np.sum's Python wrapper dispatching to srcxform) and SciPy's (a
    function of it that is not a ufunc, running on a traced value), or None."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not is_own_file(filename) and not filename.startswith(_LIBRARY_DIRS) and \
                "__srcxform_generated__" not in frame.f_globals and \
                not str(frame.f_globals.get("__name__")).startswith("srcxform_generated."):
            return frame
        frame = frame.f_back
    return None


def library_call():
    """The SciPy function the user's line called, running now (a name such as
    scipy.special.logsumexp), or None. Its outermost frame, or the function that frame
    wraps where it is a decorator's closure."""
    user, frame, called = user_frame_object(), sys._getframe(1), None
    while frame is not None and frame is not user:
        if frame.f_code.co_filename.startswith(_SCIPY_DIR):
            called = frame
        frame = frame.f_back
    if called is None:
        return None
    wrapped = [v for k, v in called.f_locals.items() if k in called.f_code.co_freevars and
               callable(v) and getattr(v, "__module__", "").startswith("scipy")]
    function = wrapped[0] if wrapped else None
    module = getattr(function, "__module__", None) or called.f_globals["__name__"]
    name = getattr(function, "__qualname__", None) or getattr(
        called.f_code, "co_qualname", called.f_code.co_name)
    return ".".join(p for p in module.split(".") if p[0] != "_") + "." + name


_NUMPY_DIR = os.path.dirname(np.__file__) + os.sep
_SCIPY_SPEC = importlib.util.find_spec("scipy")  # found, not imported (its import is slow)
_SCIPY_DIR = os.path.dirname(_SCIPY_SPEC.origin or "") + os.sep if _SCIPY_SPEC else "\0"
_LIBRARY_DIRS = (_NUMPY_DIR, _SCIPY_DIR)


_OWN_FILES: dict = {}  # file name -> whether it is one of srcxform's modules


def is_own_file(filename):
    """Whether a code object's file is srcxform's; remembered per name, as a tape asks for
    the user's line at each op it records (abspath is the slow part)."""
    own = _OWN_FILES.get(filename)
    if own is None:
        own = _OWN_FILES[filename] = os.path.abspath(filename).startswith(PACKAGE_DIR + os.sep)
    return own


def warn_user(message, category):
    """warnings.warn, attributed to the innermost frame outside srcxform (the user's call)."""
    user = user_frame_object()
    level, frame = 1, sys._getframe()
    while frame is not None and frame is not user:
        level, frame = level + 1, frame.f_back
    warnings.warn(message, category, stacklevel=level)


# The registry of warn_once_at's warnings, as a module's __warningregistry__ is: Python's
# filters decide from it, and a change of filters (simplefilter("error")) clears it.
_REGISTRY: dict = {}


def warn_once_at(site, message, category):
    """warnings.warn, attributed to `site` (the user's (file, line)): once per site, as
    Python's default filter shows a warning once per place, however often the line runs
    (a training loop's); a filter of the user's ("error", "always", "ignore") decides."""
    if site is not None:
        warnings.warn_explicit(message, category, *site, registry=_REGISTRY)


def user_line(origin=None):
    """Formats an origin (filename, lineno) as `file.py:12: <source line>`, on one line
    (source_text)."""
    origin = origin or user_frame()
    if origin is None:
        return "<unknown>"
    filename, lineno = origin
    line = source_line(filename, lineno).strip()
    return source_text(f"{os.path.basename(filename)}:{lineno}: {line}" if line else
                       f"{filename}:{lineno}")


def item_store(err):
    """NumPy's ValueError for a traced value stored into an item of a NumPy array (`A[i]
    = x`, `A[i] += x`: NumPy's setitem takes the value for a sequence) as a TracingError
    naming the user's line; None for any other error."""
    if str(err) != "setting an array element with a sequence.":
        return None
    tb, found = err.__traceback__, None
    while tb is not None:
        if not is_own_file(tb.tb_frame.f_code.co_filename):
            found = tb
        tb = tb.tb_next
    if found is None or not any(i.offset == found.tb_lasti and i.opname == "STORE_SUBSCR"
                                for i in dis.get_instructions(found.tb_frame.f_code)):
        return None
    return TracingError(
        f"{user_line((found.tb_frame.f_code.co_filename, found.tb_lineno))}\n  NumPy: "
        f"{err} An item of a NumPy array holds a number, and cannot hold a traced value "
        "(known only when the kernel runs). Build the array from the values instead "
        "(np.stack, np.concatenate, np.where, srcxform.tensor_scatter_nd_update)")


def source_line(filename, lineno):
    """Line `lineno` of the user's file, or '' where linecache has none (as for a name
    the system cannot open: with a NUL in it, linecache raises ValueError)."""
    try:
        return linecache.getline(filename, lineno)
    except ValueError:
        return ""


def cut(text, width):
    """text as a comment in generated code quotes it (a user's line): on one line
    (source_text), cut to `width` characters with an ellipsis where it is longer."""
    text = source_text(text)
    return text if len(text) <= width else text[:width - 3] + "..."


def source_text(text, quote=""):
    """The user's text as generated source may hold it, in a comment or, with `quote` (the
    quote character of the string literal it goes in: '"' for a docstring), in a literal.

    Every character that is not printable (a line break of any kind, which would end a
    comment, another control or format character, a lone surrogate) is written as its
    Python escape, so the text is one line. In a literal, backslashes and the quote are
    escaped too: the text cannot end the literal, and the literal reads back as the text.
    Names are made identifiers instead (names.identifier).
    """
    escaped = "\\" + quote if quote else ""
    return "".join(repr(c)[1:-1] if not c.isprintable() else "\\" + c if c in escaped else c
                   for c in text)


_DOUBLE_WHERE = "where(c, f(where(c, x, safe_x)), y)"


def nan_message(op, what, line, gradient_of=None, called_at=None, forward_op=None):
    """debug_nans's message: `op` made `what` ("a NaN", "an inf") at `line`, the user's.
    An op of a gradient names instead the forward line it is the gradient of (and that
    line's op, `forward_op`, where known), and where known (eagerly) the line computing
    the gradient."""
    if gradient_of is None:
        return (f"{op} made {what} at {line}\n  (debug_nans; if a where() masks these "
                f"elements, their gradient is still NaN: make the input safe first, the "
                f"double-where pattern: {_DOUBLE_WHERE})")
    at = f"; computing the gradient at {called_at}" if called_at else ""
    of = f"{forward_op} at {gradient_of}" if forward_op else gradient_of
    return (f"{op} made {what} in the gradient of {of}\n  (debug_nans{at}; a "
            f"where() whose other branch is NaN or inf has a NaN gradient: use the "
            f"double-where pattern, {_DOUBLE_WHERE})")


def shape_error(message):
    """A ShapeError (and InvalidArgumentError) for a check made outside a shape rule (a
    wrapper's own argument check), ending with the user's line as the shape rules' errors
    do."""
    return ShapeArgumentError(f"{message}\n  at {user_line()}")
