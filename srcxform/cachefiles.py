"""The files of srcxform's on-disk cache: where they live, and how they are written and read.

The on-disk cache is only a cache: a file in it that cannot be used (cut short, written
over, a flipped bit) is a miss, rebuilt and written anew, with one CacheWarning naming it.
What srcxform writes there besides the generated source is sealed with a checksum
(write_sealed) and checked before it is unpickled or unmarshalled (read_sealed), as a
flipped bit may well leave something that loads, and computes something else.
"""

import atexit
import contextlib
import functools
import os
import shutil
import sys
import tempfile
import threading
import warnings
import zlib

from srcxform.errors import CacheWarning


def cache_dir():
    """$SRCXFORM_CACHE_DIR, else the user cache folder (~/.cache/srcxform on Linux); where
    that folder cannot be made or written to, a temporary one of this process's own."""
    path = os.environ.get("SRCXFORM_CACHE_DIR")
    if not path:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                ".cache")
        path = os.path.join(base, "srcxform")
    return _usable(path)


@functools.cache
def _usable(path):
    """path, once it is a folder this process can write in; else a private temporary
    folder, removed at exit (warned once a path)."""
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()  # a read-only folder or mount
        return path
    except OSError as err:
        fallback = tempfile.mkdtemp(prefix="srcxform-cache-")
        atexit.register(shutil.rmtree, fallback, ignore_errors=True)
        _warn(f"srcxform cannot use {path} as its cache folder ({err}); this process "
              f"caches in {fallback}, removed when it exits. Set SRCXFORM_CACHE_DIR to a "
              f"folder it can write in to keep compiled kernels between processes.")
        return fallback


def write_atomic(path, data):
    """Writes a file other processes and threads may be writing too: whole, or not at all
    (each writer writes a temporary file of its own, then renames it)."""
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_sealed(path, payload):
    """Writes payload after its checksum, atomically: read_sealed checks it."""
    write_atomic(path, zlib.crc32(payload).to_bytes(4, "big") + payload)


def read_sealed(path, parse):
    """parse(payload) of the file write_sealed wrote at path, or None: when there is none
    yet, and, with a CacheWarning, when it is damaged (its checksum does not match) or
    parse fails on it. A CRC-32 catches the damage a cache meets (truncation, a burst of
    flipped bits, another file's bytes) at twice a SHA-256's speed: 0.1 ms for a large
    kernel's 220 KB."""
    try:
        with open(path, "rb") as f:
            data = memoryview(f.read())
        if len(data) < 4 or zlib.crc32(data[4:]) != int.from_bytes(data[:4], "big"):
            raise ValueError("its checksum does not match its content")
        return parse(data[4:])
    except FileNotFoundError:
        return None
    except Exception as err:  # noqa: BLE001 - whatever is wrong with the file, it is rebuilt
        damaged(path, err)
        return None


def damaged(path, reason):
    """Warns that the cache file at path could not be used and is rebuilt; once a process
    and file (a caller may read it again before rewriting it, as Numba does its index)."""
    if path not in _DAMAGED:
        _DAMAGED.add(path)
        _warn(f"srcxform's cache file {path} could not be used ({reason}); it is rebuilt")


_DAMAGED = set()


def _warn(message):
    """A CacheWarning, attributed to the innermost frame outside srcxform, Numba and
    importlib (the user's call that compiled or loaded)."""
    inside = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep
                   for m in (sys.modules[__package__], sys.modules.get("numba")) if m)
    level, frame = 1, sys._getframe()
    while frame is not None and (frame.f_code.co_filename.startswith("<frozen") or
                                 os.path.abspath(frame.f_code.co_filename).startswith(inside)):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, CacheWarning, stacklevel=level)
