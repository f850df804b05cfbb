"""The on-disk kernel index: in a new process, a function's first call finds the kernel an
earlier process generated for the same signature, without generating or compiling it
again (the function is still traced once, for its Python to run as in any process).

An entry is keyed by a digest of everything the trace could depend on besides the
arguments' signature: the function's code (its bytecode, constants, names, defaults and
the place it is defined), the values of the globals and closure variables it reads
(functions it calls are digested the same way), srcxform's own source and NumPy's
version. Library code (srcxform's, NumPy's, the standard modules') is described by its
name, as its source or version is in the key; but a function library code made at run
time (a closure, such as the function `jacobian` returns) is also described by what it
was made with: its cells and defaults.

The key is conservative: a function that reads anything else (an array, an object, a
Variable, a class of its own), or may read a global the digest cannot see (through
`globals()`, `vars`, `eval`, `getattr`, a function's `__globals__`, an import of a module
of its own), is not indexed, and is traced in every process as before. Numba's cache then
supplies the machine code.
"""

import dis
import functools
import hashlib
import os
import pickle
import types

import numpy as np

from srcxform.core.errors import PACKAGE_DIR
from srcxform.numba_adapter import cachefiles

# Values a trace may read whose description is their repr: they cannot change unseen.
_SIMPLE = (bool, int, float, complex, str, bytes, type(None))
# Library code is described by its name: srcxform's source and NumPy's version are in the key.
_LIBRARIES = ("srcxform", "numpy", "math", "builtins", "operator", "functools")
# Names through which code can read a global whose name is not among its code's names:
# builtins that look a name up at run time, and attributes that expose a namespace. Code
# using one (as a name, or a constant string: getattr(f, "__globals__")) is not indexed.
# getattr is among them whether or not its name argument is a constant.
_UNSEEN_READS = frozenset({
    "globals", "vars", "eval", "exec", "compile", "__import__", "getattr", "attrgetter",
    "methodcaller", "__globals__", "__dict__", "__builtins__", "__closure__", "__code__",
    "f_globals", "f_locals", "f_builtins"})


class _Unknown(Exception):
    """A value the digest cannot describe safely: the function is not indexed."""


# How to describe srcxform's own callables, by type (or a base of it): api.py registers
# Differentiable's.
# A describer gets the object and a function describing any value it reads.
DESCRIBERS = {}


def function_digest(fn):
    """The digest of fn's code and of what it reads, or None if fn is not indexable."""
    try:
        return hashlib.sha256(repr(_digestible(fn, {})).encode()).hexdigest()
    except _Unknown:
        return None


def load(key):
    """The Specs stored under key, or [] (none yet, or a damaged file: a CacheWarning)."""
    return cachefiles.read_sealed(_path(key), _specs) or []


def _specs(payload):
    """The Specs a sealed entry holds: anything else in it is damage, as a bad checksum."""
    from srcxform.jit.kernel import Spec  # which imports what imports this module

    specs = pickle.loads(payload)
    if not isinstance(specs, list) or not all(isinstance(s, Spec) for s in specs):
        raise ValueError(f"it holds a {type(specs).__name__}, not a list of kernels")
    return specs


def store(key, spec):
    """Adds spec to the entry for key (written atomically and sealed: a flipped bit could
    make another valid Spec, and a concurrent writer may win)."""
    specs = [s for s in load(key) if s != spec] + [spec]
    cachefiles.write_sealed(_path(key), pickle.dumps(specs))


def key(function_digest, *signature):
    """The key of one signature of a function with that digest."""
    text = repr((function_digest, _library_digest(), signature))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _path(key):
    return os.path.join(cachefiles.cache_dir(), "index", f"{key}.pkl")


def digest_library():
    """Digests srcxform's source ahead of the first key (tiered.py, in its tier-up thread,
    when a function is made): reading files that a first call need not wait for."""
    _library_digest()


@functools.cache
def _library_digest():
    """srcxform's own source (a change to it may change any kernel) and NumPy's version."""
    digest = hashlib.sha256(np.__version__.encode())
    for folder, dirs, files in sorted(os.walk(PACKAGE_DIR)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")  # Numba's cache files
        for name in sorted(f for f in files if f.endswith(".py")):
            with open(os.path.join(folder, name), "rb") as f:
                digest.update(f.read())
    return digest.hexdigest()


def _function(fn, seen):
    # A function met again (recursion, or two names for one function) is the one described
    # n-th: two functions may share a name.
    if fn in seen:
        return f"function #{seen[fn]}"
    seen[fn] = len(seen)
    code = fn.__code__
    module = fn.__globals__.get("__name__") or ""  # where it was defined, whatever __module__ says
    if _library(module):
        # Its code is in the key. One defined at import time is its name; one made at
        # run time (defined inside another function) is also what it was made with.
        name = f"{module}.{_qualname(fn)}:{code.co_firstlineno}"
        return repr([name] + _made_with(fn, seen)) if "<locals>" in name else name
    if _reads_unseen(code):
        raise _Unknown
    reads = sorted(name for name in code_names(code) if name in fn.__globals__)
    return repr([module, fn.__qualname__, code.co_filename, code.co_firstlineno, _code(code),
                 [(name, _digestible(fn.__globals__[name], seen)) for name in reads]]
                + _made_with(fn, seen))


def _made_with(fn, seen):
    """What a function object holds besides its code: its closure's cells, its defaults
    and its attributes (f.scale = 2.0; f.__wrapped__)."""
    return [[_cell(cell, seen) for cell in fn.__closure__ or ()],
            _digestible(fn.__defaults__, seen),
            _digestible(tuple(sorted((fn.__kwdefaults__ or {}).items())), seen),
            _digestible(tuple(sorted(fn.__dict__.items())), seen)]


def _cell(cell, seen):
    try:
        return _digestible(cell.cell_contents, seen)
    except ValueError:  # not assigned yet
        return "empty cell"


def _qualname(fn):
    """The qualified name fn's code was compiled with, which setting fn.__qualname__ does
    not change (Python 3.11+; before, fn.__qualname__)."""
    return getattr(fn.__code__, "co_qualname", fn.__qualname__)


def _reads_unseen(code):
    """Whether code, or code nested in it, may read a global that is not among its names:
    through a name in _UNSEEN_READS, or by importing a module outside the libraries."""
    strings = {c for c in code.co_consts if isinstance(c, str)}
    if _UNSEEN_READS & (set(code.co_names) | strings):
        return True
    if any(i.opname == "IMPORT_NAME" and not _library(i.argval)
           for i in dis.get_instructions(code)):
        return True
    return any(_reads_unseen(c) for c in code.co_consts if isinstance(c, types.CodeType))


def _library(module_name):
    return module_name.split(".")[0] in _LIBRARIES


def code_names(code):
    """The global (and attribute) names code and the code nested in it use."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= code_names(const)
    return names


def _code(code):
    consts = [_code(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts]
    return repr((code.co_code.hex(), consts, code.co_names, code.co_varnames,
                 code.co_freevars, code.co_cellvars))


def _digestible(value, seen):
    if isinstance(value, _SIMPLE):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, tuple):
        return tuple(_digestible(v, seen) for v in value)
    describer = next((DESCRIBERS[t] for t in type(value).__mro__ if t in DESCRIBERS), None)
    if describer is not None:  # a Differentiable's class is a subclass of its own (api.py)
        return describer(value, lambda v: _digestible(v, seen))
    if isinstance(value, types.FunctionType):  # before the library rule: closures differ
        return _function(value, seen)
    if isinstance(value, types.MethodType):
        return f"{value.__func__.__name__} of {_digestible(value.__self__, seen)}"
    if isinstance(value, types.ModuleType) and _library(value.__name__):
        return f"module {value.__name__}"
    if hasattr(value, "__qualname__") and _library(getattr(value, "__module__", "") or ""):
        return f"{value.__module__}.{value.__qualname__}"  # library classes and builtins
    if isinstance(value, np.ufunc):
        return f"numpy.{value.__name__}"
    raise _Unknown
