"""The cache's size limit, SRCXFORM_CACHE_MAX (1 GiB unless set): past it, the entries
used least recently are removed. And what `python -m srcxform cache` reports, clears and
prunes (__main__.py).

An entry is what is used together and removed together: a kernel's generated module, its
code, and Numba's index and compiled code of it, all named after the module; a runtime
module's helpers' Numba files. Any other file (an index entry, the code of a small
function) is an entry of its own: an index entry is read with the kernel it names, and
ages with it. An entry is as recent as the last use of any of its files: the time a load
read it (cachefiles.read_sealed marks it), else when it was written. Another process may
remove an entry while this one loads it: each file's loss is then a miss, rebuilt.

Measuring the cache means a look at each of its files (seconds for a full cache), so it
is measured only when it may have outgrown its limit.
Each process appends the size of each file it writes to the cache's `ledger` file, and
reads the ledger's sum after the write (a small file, read at once); only when that sum passes the
limit does it measure the cache and remove entries, down to 90% of the limit (so that
the next writes have room), and start the ledger again from what remains. The ledger may
count a file twice (written by two processes), which prunes early; an append and a
rewrite take a lock on it (flock; on Windows a rewrite may miss an append made in the
moment it is rewritten). Something else at the ledger's path (a link, a FIFO, a folder)
is replaced by a ledger; a process that may not write the ledger measures the cache
itself each tenth of the limit it writes.
"""

import contextlib
import dataclasses
import errno
import os
import re
import shutil
import stat
import threading
import time

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

from srcxform.numba_adapter import cachefiles

DEFAULT_LIMIT = 1 << 30
PRUNED_TO = 0.9  # of the limit, once it is passed
LEDGER = "ledger"
_LEDGER_LINES = 1000  # beyond which a reader sums the ledger into one line
_STALE = 3600  # seconds after which a temporary file is a dead writer's, not a live one's
_KERNEL_FOLDERS = ("", "code", "__pycache__")  # where a kernel's files are
_MODULE = re.compile(r"\w+_[0-9a-f]{16}")  # a generated module's name (backend.load)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def limit():
    """The cache's size limit in bytes: SRCXFORM_CACHE_MAX ("500M", "2G", "1.5G", a number
    of bytes; K, M, G and T are powers of 1024), else 1 GiB (warned once where it does not
    parse)."""
    text = os.environ.get("SRCXFORM_CACHE_MAX", "")
    try:
        return parse_size(text) if text else DEFAULT_LIMIT
    except ValueError:
        if text not in _WARNED:
            _WARNED.add(text)
            cachefiles._warn(f"SRCXFORM_CACHE_MAX={text!r} is not a size (such as 500M, 2G "
                             f"or a number of bytes): the cache's limit is 1G")
        return DEFAULT_LIMIT


_WARNED = set()


def parse_size(text):
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([kmgt]?)(?:i?b)?\s*", text, re.IGNORECASE)
    if match is None:
        raise ValueError(f"not a size: {text!r}")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def grown(nbytes):
    """Counts nbytes this process has just written to the cache, and prunes the cache if
    the ledger says it has outgrown its limit (cachefiles.write_atomic, after a write)."""
    global _unledgered
    root = cachefiles.cache_dir()
    path = os.path.join(root, LEDGER)
    try:
        _append(path, nbytes)
    except (FileNotFoundError, IsADirectoryError, NotALedger):  # a cache written before it
        _prune(root, limit(), int(limit() * PRUNED_TO))  # had a ledger, or something else
        return                                            # in its place: made anew
    except OSError:  # a ledger this process may not write: it measures the cache itself,
        _unledgered += nbytes  # each tenth of the limit it writes
        if _unledgered > limit() // 10:
            _unledgered = 0
            _prune(root, limit(), int(limit() * PRUNED_TO))
        return
    counts = _ledger(path)
    if sum(counts) > limit():
        _prune(root, limit(), int(limit() * PRUNED_TO))
    elif len(counts) > _LEDGER_LINES:
        _rewrite_ledger(path, sum(counts), len(counts))


_unledgered = 0  # bytes this process wrote that no ledger counted


class NotALedger(OSError):
    """What is at the ledger's path is not a file (a link, a FIFO, a device)."""


def _open_ledger(path, flags):
    """The ledger at path opened with flags, never through a link and never waiting (a
    FIFO); NotALedger where it is not a regular file."""
    try:
        fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENXIO):  # a link; a FIFO no one reads
            raise NotALedger(err.errno, "not a ledger", path) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotALedger(errno.EINVAL, "not a ledger", path)
    return fd


def _append(path, nbytes):
    """Appends nbytes to the ledger at path, under a shared lock on it: a rewrite holds
    the exclusive one while it reads the ledger and replaces it, so an append lands in
    the ledger it reads or in the one that replaced it (the file at path once the lock
    is held)."""
    while True:  # again where a rewrite came between the open and the lock
        fd = _open_ledger(path, os.O_WRONLY | os.O_APPEND)
        try:
            _lock(fd, exclusive=False)
            if not _replaced(fd, path):
                os.write(fd, f"{nbytes}\n".encode())  # one short write, whole
                return
        finally:
            os.close(fd)  # which releases the lock


def _lock(fd, exclusive):
    """flock on fd, where the platform and the file system have it (not on Windows: there
    a rewrite may miss an append, as the module's docstring says)."""
    if fcntl is not None:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)


def _replaced(fd, path):
    """Whether the file open as fd is no longer the one at path."""
    return os.fstat(fd).st_ino != os.stat(path).st_ino


def prune(root=None):
    """Removes the entries used least recently until the cache is within its limit;
    (entries removed, bytes removed)."""
    return _prune(root or cachefiles.cache_dir(), limit(), limit())


def _prune(root, over, to):
    """Where the cache holds more than `over` bytes, removes the entries used least
    recently until it holds `to`; the ledger then starts from what it holds. One thread
    of a process at a time (another returns at once: the cache is being pruned)."""
    if not _PRUNING.acquire(blocking=False):
        return 0, 0
    try:
        path = os.path.join(root, LEDGER)
        counted = len(_ledger(path))
        entries = sorted(measure(root).values(), key=lambda e: e.used)
        total = sum(e.size for e in entries)
        removed = freed = 0
        if total > over:
            for entry in entries:
                if total - freed <= to:
                    break
                freed += entry.remove()
                removed += 1
        _rewrite_ledger(path, total - freed, counted)
        return removed, freed
    finally:
        _PRUNING.release()


_PRUNING = threading.Lock()


def clear(root=None):
    """Removes every entry of the cache, and any folder inside its folders (where a file
    should be); (files removed, bytes removed). The cache's own folders stay, as
    cachefiles made them, and so do the files being written; another process may use the
    cache meanwhile (its loads miss)."""
    root = root or cachefiles.cache_dir()
    path = os.path.join(root, LEDGER)
    counted = len(_ledger(path))  # what is appended later may be a file kept
    entries = measure(root).values()
    freed = sum(entry.remove() for entry in entries)
    for folder in cachefiles.SUBFOLDERS:
        with contextlib.suppress(OSError), os.scandir(os.path.join(root, folder)) as found:
            for item in found:
                if item.is_dir(follow_symlinks=False):
                    shutil.rmtree(item.path, ignore_errors=True)
    _rewrite_ledger(path, 0, counted)
    return sum(len(entry.files) for entry in entries), freed


@dataclasses.dataclass
class Entry:
    kind: str  # "kernel", "index", "runtime" or "other"
    files: list = dataclasses.field(default_factory=list)  # (path, size)
    used: float = 0.0  # the latest use of any of its files, in seconds since the epoch

    @property
    def size(self):
        return sum(size for _, size in self.files)

    def add(self, path, status):
        self.files.append((path, status.st_size))
        self.used = max(self.used, status.st_atime, status.st_mtime)

    def remove(self):
        """Removes its files (one another process removed first is gone already, and one
        that cannot be removed stays); the bytes removed."""
        freed = 0
        for path, size in self.files:
            with contextlib.suppress(OSError):
                os.unlink(path)
                freed += size
        return freed


def measure(root):
    """The cache's entries, by (kind, name): the files in the cache's folders, but for the
    ledger and the temporary files of writes in progress (those of an hour ago are a dead
    writer's)."""
    entries = {}
    now = time.time()
    for folder in dict.fromkeys(_KERNEL_FOLDERS + cachefiles.SUBFOLDERS):
        with contextlib.suppress(OSError), os.scandir(os.path.join(root, folder)) as found:
            for item in found:
                if folder == "" and item.name == LEDGER:
                    continue
                try:
                    if not item.is_file(follow_symlinks=False):
                        continue
                    status = item.stat(follow_symlinks=False)
                except OSError:
                    continue  # removed meanwhile
                writing = item.name.endswith(".tmp") or ".tmp." in item.name  # ours, Numba's
                if writing and now - status.st_mtime < _STALE:
                    continue
                key = _entry_of(folder, item.name)
                entries.setdefault(key, Entry(key[0])).add(item.path, status)
    return entries


def _entry_of(folder, name):
    """The entry (kind, name) a file in `folder` belongs to. A kernel's files are named
    after its module (f__grad_0123456789abcdef.py; in code/ and __pycache__/ that name
    begins theirs, after the seal's sx2-); a runtime helper's Numba files after its module."""
    stem = re.match(r"(?:sx\d+-)?([^.-]*)", name).group(1)
    if folder in _KERNEL_FOLDERS and _MODULE.fullmatch(stem):
        return "kernel", stem
    if folder == "runtime":
        return "runtime", stem
    return ("index" if folder == "index" else "other"), os.path.join(folder, name)


def _ledger(path):
    """The byte counts in the ledger at path (none where it is not a file)."""
    with contextlib.suppress(OSError), open(_open_ledger(path, os.O_RDONLY), "rb") as f:
        return [int(n) for n in f.read().split() if n.isdigit()]  # what is not, is skipped
    return []


def _rewrite_ledger(path, total, counted):
    """The ledger anew: `total`, then what other processes appended after its first
    `counted` lines were read, under the exclusive lock that appends wait for. Where
    another process rewrote it meanwhile, all that was appended to its rewrite is kept
    (a file counted twice prunes early; one missed would let the cache outgrow it)."""
    with contextlib.suppress(OSError), contextlib.ExitStack() as held:
        try:
            fd = _open_ledger(path, os.O_RDONLY)
        except (FileNotFoundError, NotALedger):  # replaced by the write below
            later = []
        else:
            held.callback(os.close, fd)
            _lock(fd, exclusive=True)
            later = _ledger(path)[1 if _replaced(fd, path) else counted:]
        cachefiles._write_file(path, "".join(f"{n}\n" for n in [total, *later]).encode())


cachefiles.after_write = grown
