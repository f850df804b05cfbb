"""Turning generated source into a callable: write it to a content-addressed file,
import it, and compile it with Numba (or run it as Python with SRCXFORM_JIT=0).

The only place that talks to Numba: its typing and lowering errors become CompileError,
quoting the generated line.

The on-disk cache is only a cache: a file in it that cannot be used (cut short, written
over, a flipped bit) is a miss, rebuilt and written anew, with one CacheWarning naming it.
What srcxform writes there besides the generated source is sealed with a checksum
(write_sealed) and checked before it is unpickled or unmarshalled (read_sealed), as a
flipped bit may well leave something that loads, and computes something else.
"""

import atexit
import contextlib
import functools
import gc
import hashlib
import importlib.util
import marshal
import os
import re
import shutil
import sys
import tempfile
import threading
import warnings
import zlib

from srcxform import runtime
from srcxform.errors import CacheWarning, CompileError


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


def jit_enabled():
    return os.environ.get("SRCXFORM_JIT", "1") not in ("0", "false", "no")


def load(source, func_name, jit=None, parallel=False):
    """The function `func_name` defined by `source`, compiled unless jit is off.

    The module is registered in sys.modules under a name made from its content hash once
    it has run: Numba's cache re-imports it by that name when it loads a kernel. The hash
    covers the runtime modules generated code calls too, because Numba's cache of a
    kernel holds its own copy of them and does not notice when they change. Threads load
    one at a time (a first call racing another loads the module and makes its dispatcher
    once; Numba compiles under its own lock anyway).
    """
    digest = hashlib.sha256(source.encode() + _runtime_digest()).hexdigest()[:16]
    module_name = f"srcxform_generated.{_safe(func_name)}_{digest}"
    with _LOADING:
        module = sys.modules.get(module_name)
        if module is None:
            path = os.path.join(cache_dir(), f"{_safe(func_name)}_{digest}.py")
            module = _import(module_name, path, source)
        fn = getattr(module, func_name)
        if not (jit_enabled() if jit is None else jit):
            return fn
        # One dispatcher per generated function and process: another Differentiable that
        # generates the same source reuses its compiled code.
        key = (module_name, parallel)
        if key not in _COMPILED:
            _COMPILED[key] = Compiled(fn, source, parallel)
        return _COMPILED[key]


_COMPILED = {}
_LOADING = threading.Lock()


def _import(module_name, path, source):
    """Writes `source` to `path` unless it is there, runs it as module `module_name` and
    registers it (a module half run is never in sys.modules for another thread to find)."""
    _write_source(path, source)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    # Its bytecode from our cache rather than a .pyc: kept even where
    # PYTHONDONTWRITEBYTECODE is set (compiling the module again costs each process up
    # to a millisecond), and checked, where a damaged .pyc fails the import.
    exec(code(source, path), vars(module))  # noqa: S102 - what importing it would run
    sys.modules.setdefault("srcxform_generated", type(sys)("srcxform_generated"))
    sys.modules[module_name] = module
    return module


def _write_source(path, source):
    """Writes source to path unless the file there holds it already; a file that holds
    anything else there was damaged (its name is the source's hash)."""
    data = source.encode()
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return
        damaged(path, "it is not the source its name is a hash of")
    except FileNotFoundError:
        pass
    except OSError as err:
        damaged(path, err)
    write_atomic(path, data)


def code(source, filename="<srcxform>"):
    """What `source` compiles to, its code objects naming `filename`, kept on disk by their
    hash (for generated modules, and small functions made at run time such as the warm
    entries: compiling one costs a new process about as much as Numba's loading the kernel
    it calls)."""
    path = _code_path(source, filename)
    compiled = read_sealed(path, marshal.loads)
    if compiled is None:
        compiled = compile(source, filename, "exec")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_sealed(path, marshal.dumps(compiled))
    return compiled


def _code_path(source, filename):
    digest = hashlib.sha256(f"{filename}\0{source}".encode()).hexdigest()[:24]
    return os.path.join(cache_dir(), "code", f"{digest}.{sys.implementation.cache_tag}")


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


@functools.cache
def _runtime_digest():
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runtime")
    digest = hashlib.sha256()
    for name in runtime.MODULES:
        with open(os.path.join(folder, f"{name}.py"), "rb") as f:
            digest.update(f.read())
    return digest.digest()


@functools.cache
def _import_runtime():
    """Imports the runtime modules once, with the first kernel of a process (whose call
    pays Numba's start-up anyway), rather than with whichever later kernel needs one."""
    for name in runtime.MODULES:
        importlib.import_module(f"srcxform.runtime.{name}")


@contextlib.contextmanager
def gc_paused():
    """Python's cyclic garbage collector held off for the block (then restored as it was).

    Compiling a kernel, Numba allocates a few hundred thousand objects that mostly die
    young; the collections they would trigger, one a full pass over the process's heap,
    cost W5's first call about 80 ms of its 0.9 s. The cycles it leaves are collected
    by the first collection after the block, in a pass over the young objects only."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def jit_function(fn):
    """fn compiled as generated kernels are (for small wrappers made in memory)."""
    import numba

    return numba.njit(error_model="numpy")(fn)


def _safe(name):
    return re.sub(r"\W", "_", name)


class Compiled:
    """A Numba dispatcher for a generated function; the first call per signature compiles,
    and a Numba failure is re-raised as CompileError naming the generated line."""

    def __init__(self, fn, source, parallel=False):
        from srcxform import numba_cache

        _import_runtime()
        self.source = source
        # Kept in Numba's cache as numba_cache.py loads it faster. No C-callable wrapper:
        # it was 7% of W5's compiled module, and jitted code calls the kernel without it
        # (also as a first-class function value).
        self.dispatcher = numba_cache.jit(fn, numba_cache.KernelCache, no_cfunc_wrapper=True,
                                          parallel=parallel)

    def __call__(self, *args):
        try:
            return self.dispatcher(*args)
        except IndexError:
            raise  # a gather's index out of range, as eager raises it
        except Exception as err:
            raise self.error(err) from err

    def direct(self, args):
        """The compiled code's own entry for calls typed as `args` are, which skips the
        dispatcher's type matching; None unless that signature is compiled and each array
        in it is C-contiguous, aligned and writeable. A caller must test that each call's
        arguments type the same (the entry's layout tests)."""
        from numba import types

        signature = tuple(self.dispatcher.typeof_pyval(a) for a in args)
        overload = self.dispatcher.overloads.get(signature)
        if overload is None or any(t.layout != "C" or not t.mutable or not t.aligned
                                   for t in signature if isinstance(t, types.Array)):
            return None
        return overload.entry_point

    def error(self, err):
        """What an exception out of the dispatcher means. Generated kernels raise nothing
        but IndexError (arrays.check_indices; NumPy's error model otherwise), so it came
        from compiling: typing, lowering, or an attribute Numba does not know."""
        return CompileError(_explain(err, self.source))


def _line_naming(lines, message):
    """The first line of code that mentions a name the message quotes ('frobnicate')."""
    for name in reversed(re.findall(r"'(\w+)'", message)):  # the specific name comes last
        for n, line in enumerate(lines, 1):
            code = line.strip()
            if re.search(rf"\b{name}\b", code) and not code.startswith(("#", "import", "from")):
                return n
    return None


def _explain(err, source):
    message = str(err)
    lines = source.splitlines()
    match = re.search(r"line (\d+)", message.split("During:")[-1]) or \
        re.search(r"\.py\", line (\d+)", message)
    n = int(match.group(1)) if match else _line_naming(lines, message)
    quoted = ""
    if n and 0 < n <= len(lines):
        origin = next((lines[k].strip() for k in range(n - 1, 0, -1)
                       if lines[k].strip().startswith("# ")), "")
        quoted = f"\n  generated line {n}: {lines[n - 1].strip()}" + \
            (f"\n  from: {origin[2:]}" if origin else "")
    first = message.strip().splitlines()[0] if message.strip() else type(err).__name__
    return f"Numba could not compile the generated code: {first}{quoted}"
