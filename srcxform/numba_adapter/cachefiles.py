"""The files of srcxform's on-disk cache: where they live, and how they are written and read.

The on-disk cache is only a cache: a file in it that cannot be used (cut short, written
over, a flipped bit) is a miss, rebuilt and written anew, with one CacheWarning naming it.
What srcxform writes there besides the generated source is sealed with a checksum
(write_sealed) and checked before it is unpickled or unmarshalled (read_sealed), as a
flipped bit may well leave something that loads, and computes something else.

Loading a file runs what it holds, so a checksum, which anyone can compute, is not
enough: srcxform loads only what `untrusted` finds no fault with (the user's own, and
writable by no one else), in a folder it finds none with either.

Nor is a write that fails an error: a full disk, a file size limit, a folder made
read-only end the process's writing to the cache (write_atomic, with one CacheWarning),
and what it compiles from then on runs from memory. The cache is kept within its size
limit by cachesize.py.
"""

import atexit
import contextlib
import functools
import os
import shutil
import stat
import sys
import tempfile
import threading
import time
import warnings
import zlib

from srcxform.core.errors import PACKAGE_DIR, CacheWarning


def cache_dir():
    """$SRCXFORM_CACHE_DIR, else the user cache folder (~/.cache/srcxform on Linux); where
    that folder cannot be made or written to, or is not to be trusted, a temporary one of
    this process's own."""
    path = os.environ.get("SRCXFORM_CACHE_DIR")
    if not path:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                ".cache")
        path = os.path.join(base, "srcxform")
    return _usable(path, _shared())


# The folders in a cache folder that srcxform loads files from: the code of generated
# modules, the kernel index, Numba's files (index and compiled code) of the kernels, and
# of the runtime's helpers (numba_adapter/jit.py).
SUBFOLDERS = ("code", "index", "__pycache__", "runtime")


@functools.cache
def _usable(path, shared):
    """path, once it is a folder this process can write in and trust; else a private
    temporary folder, removed at exit (warned once a path)."""
    try:
        unsafe = _make(path, shared)
        if unsafe is None:
            return path
        folder, reason = unsafe
        problem = f"srcxform does not trust {path} as its cache folder: {folder} is " \
            f"{reason}, so another user could run code as you through it"
        remedy = "make it yours and writable by you alone (chmod go-w), point " \
            "SRCXFORM_CACHE_DIR at a private folder, or share it deliberately with " \
            "SRCXFORM_CACHE_TRUST=shared"
    except OSError as err:
        problem = f"srcxform cannot use {path} as its cache folder ({err})"
        remedy = "set SRCXFORM_CACHE_DIR to a folder it can write in"
    fallback = tempfile.mkdtemp(prefix="srcxform-cache-")
    atexit.register(shutil.rmtree, fallback, ignore_errors=True)
    _TEMPORARY.add(fallback)
    _make(fallback, shared=False)
    _warn(f"{problem}; this process caches in {fallback}, removed when it exits. To keep "
          f"compiled kernels between processes, {remedy}.")
    return fallback


_TEMPORARY = set()  # the temporary cache folders of this process, removed as it exits


def temporary(path):
    """Whether path is a temporary cache folder of this process's, removed as it exits."""
    return path in _TEMPORARY


def _make(path, shared):
    """Makes the cache folder at path and its SUBFOLDERS where they are missing (private
    ones, unless the cache is shared) and tests that it can write there; (a folder, why
    it is untrusted), or None."""
    for folder in (path, *(os.path.join(path, name) for name in SUBFOLDERS)):
        if folder != path and os.path.isfile(folder) and not os.path.islink(folder):
            damaged(folder, "it is a file, where a folder should be")
            os.unlink(folder)
        os.makedirs(folder, mode=0o777 if shared else 0o700, exist_ok=True)
        reason = untrusted(folder)
        if reason is not None:
            return folder, reason
    tempfile.TemporaryFile(dir=path).close()  # a read-only folder or mount
    return None


def untrusted(path, status=None):
    """Why srcxform must not load from `path` (a cache folder, or a file in one; `status`,
    its os.stat, is the open file's), or None if it may: the rule ssh applies to its files.

    Loading a cache file runs what it holds, as the user srcxform runs as. So the file,
    and the folder it is in, must be that user's own and writable by no one else: then
    only that user could have written them. Any is trusted where the user shares the
    cache deliberately (SRCXFORM_CACHE_TRUST=shared), or on a system without POSIX owners.
    """
    if _shared() or not hasattr(os, "geteuid"):
        return None
    status = status or os.stat(path)
    if status.st_uid != current_user():
        return f"owned by user {status.st_uid}, not by user {current_user()}, who runs this " \
            "process"
    if status.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"writable by others than its owner (mode {stat.filemode(status.st_mode)})"
    return None


def current_user():
    """The user whose files srcxform trusts: the one it runs as (tests stand in another)."""
    return os.geteuid()


def _shared():
    return os.environ.get("SRCXFORM_CACHE_TRUST", "private") == "shared"


# Told the size of each file written (cachesize.grown, which sets it when imported: the
# cache's limit is that module's job, and it reads and writes through this one).
after_write = None


def write_atomic(path, data):
    """Writes a file other processes and threads may be writing too: whole, or not at all.
    A write that fails (no space left, a file size limit, a folder made read-only or
    unwritable) ends this process's writing to the cache, with one CacheWarning: nothing
    is written from then on (`writing()`), and what this process compiles runs from
    memory, as the cache is only a cache."""
    if _WRITE_ERROR is not None:
        return
    try:
        _write_file(path, data)
    except OSError as err:
        stop_writing(path, err)
        return
    if after_write is not None:
        after_write(len(data))


def _write_file(path, data):
    """Writes data to path through a temporary file of this writer's own, renamed into
    place; a folder in its place is removed. (A folder that has gone is not made again:
    that of a process removed as it exits would outlast it.)"""
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)  # left by a process of this id that died writing it
    try:
        # Made anew, never through a link planted there, and writable by its owner alone
        # whatever the umask, as `untrusted` requires of what is loaded.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                     0o644)
        with open(fd, "wb") as f:
            f.write(data)
        try:
            os.replace(tmp, path)
        except OSError:
            if not os.path.isdir(path) or os.path.islink(path):
                raise
            shutil.rmtree(path)  # a folder where the file should be: a damaged entry
            os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def writing():
    """Whether this process still writes to the cache (no write of its has failed)."""
    return _WRITE_ERROR is None


def stop_writing(path, err):
    """Ends this process's writing to the cache, as writing `path` (a file, or the folder
    of one) failed with `err` (warned once)."""
    global _WRITE_ERROR
    with _STOPPING:
        if _WRITE_ERROR is not None:
            return
        _WRITE_ERROR = err
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    _warn(f"srcxform could not write to its cache in {folder} ({err}); this process writes "
          f"nothing more there: what it compiles from now on runs in memory, and is "
          f"compiled again by the next process")


_WRITE_ERROR = None  # the OSError that ended this process's writing to the cache
_STOPPING = threading.Lock()


# The seal's format, in the names of the sealed files a content's hash does not name
# (Numba's; code/'s digest): a new format is a new name, so a file of the last one is
# never taken for damage. sx2: the checksum covers the file's name too.
SEAL = "sx2"


def write_sealed(path, payload):
    """Writes payload after its checksum, atomically: read_sealed checks it."""
    write_atomic(path, _checksum(path, payload).to_bytes(4, "big") + payload)


def _checksum(path, payload):
    """The CRC-32 of the file's name and payload: a sealed file copied over another's name
    is damage too (one function's code ran as another's: helper 107)."""
    return zlib.crc32(payload, zlib.crc32(os.path.basename(path).encode()))


def read_sealed(path, parse):
    """parse(payload) of the file write_sealed wrote at path, or None: when there is none
    yet, and, with a CacheWarning, when it is not to be trusted (`untrusted`: checked on
    the file opened, before anything is read), damaged (its checksum does not match) or
    parse fails on it. A CRC-32 catches the damage a cache meets (truncation, a burst of
    flipped bits, another file's bytes) at twice a SHA-256's speed."""
    try:
        # Never waiting on a FIFO there (it hung the first call: helper 134).
        with open(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as f:
            status = os.fstat(f.fileno())
            reason = "not a regular file" if not stat.S_ISREG(status.st_mode) else \
                untrusted(path, status)
            if reason is not None:
                raise ValueError(f"it is not trusted: it is {reason}")
            data = memoryview(f.read())
            _mark_used(f.fileno(), status)
        if len(data) < 4 or _checksum(path, data[4:]) != int.from_bytes(data[:4], "big"):
            raise ValueError("its checksum does not match its name and content")
        return parse(data[4:])
    except FileNotFoundError:
        return None
    except Exception as err:  # noqa: BLE001 - whatever is wrong with the file, it is rebuilt
        damaged(path, err)
        return None


def _mark_used(fd, status):
    """Sets the open file's access time to now (its modification time kept), whatever the
    file system's atime policy: cachesize.py removes the entries used least recently."""
    with contextlib.suppress(OSError, NotImplementedError):  # another's file; no futimens
        os.utime(fd, ns=(time.time_ns(), status.st_mtime_ns))


def damaged(path, reason):
    """Warns that the cache file at path could not be used and is rebuilt; once a process
    and file (a caller may read it again before rewriting it, as Numba does its index)."""
    if path not in _DAMAGED:
        _DAMAGED.add(path)
        _warn(f"srcxform's cache file {path} could not be used ({reason}); it is rebuilt")


_DAMAGED = set()


def _warn(message):
    """A CacheWarning, attributed to the innermost frame outside srcxform, the modules it
    generates (in the cache folder: helper 134), Numba and importlib (the user's call
    that compiled or loaded)."""
    numba = sys.modules.get("numba")
    inside = (PACKAGE_DIR + os.sep,) + (
        (os.path.dirname(os.path.abspath(numba.__file__)) + os.sep,) if numba else ())
    level, frame = 1, sys._getframe()
    while frame is not None and (
            frame.f_code.co_filename.startswith("<frozen") or
            os.path.abspath(frame.f_code.co_filename).startswith(inside) or
            str(frame.f_globals.get("__name__")).startswith("srcxform_generated.")):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, CacheWarning, stacklevel=level)
