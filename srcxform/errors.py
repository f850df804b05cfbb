"""srcxform's exceptions and the helpers that make their messages.

Every message names the op, the shapes and dtypes involved and the user's `file:line`.
This module knows no primitive and imports nothing from the rest of the package.
"""

import linecache
import os
import sys

import numpy as np

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


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


class ZeroDivisionArgumentError(InvalidArgumentError, ZeroDivisionError):
    """An integer division by zero (NumPy would give 0 silently)."""


class LinAlgArgumentError(InvalidArgumentError, np.linalg.LinAlgError):
    """A matrix LAPACK cannot factor as the op needs: singular (inv, solve), not positive
    definite (cholesky), or a decomposition that did not converge (a NaN in it). Also
    NumPy's LinAlgError (and so a ValueError), which NumPy code catches."""


class CompileError(SrcxformError):
    """Numba could not compile the generated source; the message quotes the generated line."""


class CacheWarning(UserWarning):
    """srcxform's on-disk cache could not be used as it was: a damaged file in it (rebuilt),
    or a folder it cannot write in (a temporary one serves the process instead)."""


class TieredWarning(UserWarning):
    """srcxform's compiler worker (tiered.py) could not compile a kernel: it died, or could
    not start. The kernel compiles in the calling process instead."""


def user_frame():
    """Returns (filename, lineno) of the innermost frame outside srcxform, or None."""
    frame = user_frame_object()
    return None if frame is None else (frame.f_code.co_filename, frame.f_lineno)


def user_frame_object():
    """The innermost Python frame outside srcxform's own modules, or None."""
    frame = sys._getframe(1)
    while frame is not None:
        if not os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep):
            return frame
        frame = frame.f_back
    return None


def user_line(origin=None):
    """Formats an origin (filename, lineno) as `file.py:12: <source line>`."""
    origin = origin or user_frame()
    if origin is None:
        return "<unknown>"
    filename, lineno = origin
    line = linecache.getline(filename, lineno).strip()
    return f"{os.path.basename(filename)}:{lineno}: {line}" if line else f"{filename}:{lineno}"


def cut(text, width):
    """text, cut to `width` characters with an ellipsis where it is longer (a user's line
    quoted in a comment)."""
    return text if len(text) <= width else text[:width - 3] + "..."


def shape_error(message):
    """A ShapeError (and InvalidArgumentError) for a check made outside a shape rule (a
    wrapper's own argument check), ending with the user's line as the shape rules' errors
    do."""
    return ShapeArgumentError(f"{message}\n  at {user_line()}")
