"""A compile that takes long says so, once: a program whose kernel takes minutes to compile
must look neither like a hang nor, with tiered execution's eager calls meanwhile, like a
slow program that works as it should.

`SRCXFORM_SLOW_COMPILE` is the number of seconds after which a compile still running is
reported (5 by default; 0 turns the report off).
"""

import os
import threading
import time
import warnings

from srcxform.core.errors import SlowCompileWarning, user_frame


def limit():
    """Seconds before a compile says it is slow: SRCXFORM_SLOW_COMPILE, else 5 (0: never;
    warned once where it is not a number)."""
    text = os.environ.get("SRCXFORM_SLOW_COMPILE", "").strip()
    try:
        return float(text) if text else 5.0
    except ValueError:
        if text not in _WARNED:
            _WARNED.add(text)
            warnings.warn(f"SRCXFORM_SLOW_COMPILE={text!r} is not a number of seconds: a "
                          f"compile says it is slow after 5", stacklevel=2)
        return 5.0


_WARNED = set()


class Watch:
    """Warns (SlowCompileWarning) if it is not stopped within the limit of a compile of
    `what`, a kernel whose generated source is `source`, naming the user's line that asked
    for it (`where`, errors.user_frame()'s: else the caller's), not the timer's thread."""

    def __init__(self, what, source, where=None):
        self._what, self._lines = what, source.count("\n")
        self._where = where or user_frame() or ("srcxform", 0)
        self._start = time.monotonic()
        seconds = limit()
        self._timer = threading.Timer(seconds, self._warn) if seconds > 0 else None
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()

    def _warn(self):
        warnings.warn_explicit(SlowCompileWarning(
            f"srcxform: compiling {self._what} has taken "
            f"{time.monotonic() - self._start:.0f} s so far; its generated source is "
            f"{self._lines:,} lines (f.source(...) shows it, f.ir(...) its program)"),
            SlowCompileWarning, *self._where)

    def stop(self):
        if self._timer is not None:
            self._timer.cancel()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
