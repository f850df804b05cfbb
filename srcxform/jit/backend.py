"""Turning generated source into a callable: write it to a content-addressed file,
import it, and compile it with Numba (or run it as Python with SRCXFORM_JIT=0).

It compiles through numba_adapter (Numba's internals are used there, and only there), and
Numba's typing and lowering errors become CompileError here, quoting the generated line.
The files it writes are cachefiles.py's: a damaged one is a miss, rebuilt.
"""

import contextlib
import functools
import gc
import hashlib
import importlib.util
import marshal
import os
import re
import sys
import threading

from srcxform import runtime
from srcxform.core import settings
from srcxform.jit import heap, slow_compile
# Imported for its one effect: each write to the cache then keeps the cache in its limit.
from srcxform.numba_adapter import cachesize  # noqa: F401
from srcxform.numba_adapter.cachefiles import (SEAL, cache_dir, damaged, read_sealed,
                                               stop_writing, write_atomic, write_sealed)
from srcxform.core.errors import PACKAGE_DIR, CompileError, InvalidArgumentError


def jit_enabled():
    return settings.switch("SRCXFORM_JIT", default=True)


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
    with LOADING:
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
# Held importing a generated module or Numba's modules, which import one another in
# cycles: two threads at once could each meet a module the other has half run.
LOADING = threading.Lock()


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
        write_sealed(path, marshal.dumps(compiled))
    return compiled


def _code_path(source, filename):
    digest = hashlib.sha256(f"{SEAL}\0{filename}\0{source}".encode()).hexdigest()[:24]
    # A generated module's code is named after it: cachesize.py removes the two together.
    module = os.path.splitext(os.path.basename(filename))[0] + "-" \
        if filename.endswith(".py") else ""
    return os.path.join(cache_dir(), "code",
                        f"{module}{digest}.{sys.implementation.cache_tag}")


@functools.cache
def _runtime_digest():
    digest = hashlib.sha256()
    for path in [os.path.join("runtime", f"{name}.py") for name in runtime.MODULES] + \
            list(runtime.COMPILED_SOURCES):
        with open(os.path.join(PACKAGE_DIR, path), "rb") as f:
            digest.update(f.read())
    return digest.digest()


@functools.cache
def import_runtime():
    """Imports the runtime modules once, with the first kernel of a process (whose call
    pays Numba's start-up anyway), rather than with whichever later kernel needs one; and
    sets how malloc keeps kernels' temporaries (heap.py)."""
    heap.keep_temporaries()
    for name in runtime.MODULES:
        importlib.import_module(f"srcxform.runtime.{name}")


@contextlib.contextmanager
def gc_paused():
    """Python's cyclic garbage collector held off for the block (then restored as it was).

    Compiling a kernel, Numba allocates a few hundred thousand objects that mostly die
    young; the collections they would trigger, one a full pass over the process's heap,
    cost a large kernel's first call close to a tenth of its time. The cycles it leaves
    are collected by the first collection after the block, in a pass over the young
    objects only."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def jit_function(fn):
    """fn compiled as generated kernels are (for small wrappers made in memory)."""
    from srcxform.numba_adapter import jit

    return jit.function(fn)


def _safe(name):
    return re.sub(r"\W", "_", name)


class Compiled:
    """A Numba dispatcher for a generated function; the first call per signature compiles,
    and a Numba failure is re-raised as CompileError naming the generated line."""

    def __init__(self, fn, source, parallel=False):
        from srcxform.numba_adapter import jit

        import_runtime()
        self.source, self.parallel = source, parallel
        self.dispatcher = jit.kernel(fn, parallel)
        self.uncached = False  # made again without Numba's own cache, which failed to write

    def __call__(self, *args):
        # A call of new types compiles (the first, mostly): it says so if that takes long.
        watch = slow_compile.Watch(self.dispatcher.py_func.__name__, self.source) \
            if not self.dispatcher.signatures else contextlib.nullcontext()
        try:
            with watch:
                return self.dispatcher(*args)
        except (IndexError, InvalidArgumentError, FloatingPointError):
            # What a kernel checks and raises, as eager raises it (an index, a divisor, a
            # NaN under debug_nans).
            raise
        except OSError as err:  # Numba's own cache (SRCXFORM_NUMBA_INTERNALS=0) failed to
            if self.uncached:    # write: compiled again, in memory
                raise self.error(err) from err
            from srcxform.numba_adapter import jit

            stop_writing(err.filename or cache_dir(), err)
            self.dispatcher = jit.kernel(self.dispatcher.py_func, self.parallel)
            self.uncached = True
            return self(*args)
        except Exception as err:
            raise self.error(err) from err

    def direct(self, args, exact=()):
        """The compiled code's own entry for calls typed as `args` are, which skips the
        dispatcher's type matching, or None (numba_adapter.jit.entry_point; `exact`: its
        positions of any layout). A caller must test that each call's arguments type the
        same (the entry's layout tests)."""
        from srcxform.numba_adapter import jit

        return jit.entry_point(self.dispatcher, args, exact)

    def error(self, err):
        """What an exception out of the dispatcher means. Generated kernels raise nothing
        but the InvalidArgumentErrors the runtime's checks raise (an index out of range, an
        integer divisor of 0; NumPy's error model otherwise) and debug_nans's
        FloatingPointError, so it came from compiling:
        typing, lowering, or an attribute Numba does not know."""
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
