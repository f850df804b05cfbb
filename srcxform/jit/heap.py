"""How malloc keeps a kernel's temporaries between calls (glibc only).

A kernel allocates its temporaries and outputs with malloc (through Numba) at every call.
glibc serves an array above its mmap threshold (128 KiB, raised to the largest array
freed so far, 32 MiB at most) with fresh pages from the operating system, and gives the
top of its heap back once more than twice that threshold is free there: either way the
next call faults every page in again, zeroed. GradBench's ode gradient at n = 100,000
(dozens of 800 KB arrays a step) spent three quarters of its time so, or not, depending
on what the process had freed before (367-370 ms against 89-90).

With a process's first kernel, srcxform sets glibc's mmap threshold to 16 MiB and its trim
threshold to 64 MiB (mallopt): arrays below 16 MiB are reused from the heap, and up to
64 MiB of freed memory stays at its top. Not where the user set malloc's own variables
(MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_), not off glibc, and not
with SRCXFORM_MALLOC_TUNING=0.
"""

import ctypes
import os

from srcxform.core import settings

MMAP_THRESHOLD = 16 << 20
TRIM_THRESHOLD = 64 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters, glibc's malloc.h
_USERS_OWN = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")


def keep_temporaries():
    """Sets glibc's thresholds as the module says, where it applies."""
    if not settings.switch("SRCXFORM_MALLOC_TUNING", True) or not _glibc() or \
            any(name in os.environ for name in _USERS_OWN):
        return
    libc = ctypes.CDLL(None)
    libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)


def _glibc():
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") is not None  # "glibc 2.35"
    except (AttributeError, ValueError, OSError):  # no confstr (Windows), or not glibc's
        return False
