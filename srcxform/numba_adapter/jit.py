"""Compiling with Numba, and the internals srcxform uses where the package's gate allows
(numba_adapter.enabled()): a kernel cache, no C-callable wrapper, a kernel's compiled
entry, Numba's BLAS helpers. Where it does not, Numba's public API alone.

The on-disk cache for srcxform's kernels is Numba's, less the work a load does not need.

Numba keeps a compiled function as object code plus the optimized module's LLVM bitcode,
and parses that bitcode at every load, only to list the symbols the module defines and
to have the module at hand should other jitted code link the function in. For a large
kernel that parse and listing are most of the time a new process spends loading it.
This cache stores the defined symbols' names beside Numba's own payload and parses
the bitcode only when something links the kernel (a user's @njit calling f.kernel()).
It leaves out the type annotation's text (a third of a file), which serves only
inspect_types, and Numba disables that for cached code anyway.

It relies on Numba internals: CompileResult's pickled form, and how a CPU code library
restores itself from object code (CPUCodeLibrary._unserialize, done here with the parse
left out). So srcxform uses it only where the gate allows, and plain `cache=True`
otherwise; and a load that fails for any reason is a cache miss, after which the kernel
compiles again. Its index and data files are sealed with a checksum
(cachefiles.write_sealed): Numba's own raise on most damage, in every later process, and
unpickle whatever a flipped bit made of the rest. They are unpickled only where the file
is the user's own (cachefiles.untrusted); Numba's own files, where the gate leaves them
to Numba, are checked before Numba may look (KernelCache.numba_may_read).

`helper` compiles the functions generated code calls (srcxform.runtime) with Numba's own
payload in sealed files, made when first used.

Both keep their files in srcxform's cache folder (_Locator), never beside srcxform's
package or in Numba's user-wide folder: a read-only install compiles as any other, and
what is loaded is what cachefiles trusts. A write that fails ends the process's writing
to the cache (cachefiles.write_atomic), Numba's making of its folder included.
"""

import contextlib
import functools
import inspect
import os
import pickle
import shutil

import llvmlite.binding as ll
import numba
from numba.core import caching, compiler
from numba.core.codegen import JITCodeLibrary

from srcxform.numba_adapter import cachefiles
from srcxform.numba_adapter import enabled


class _Library(JITCodeLibrary):
    """A code library restored from object code, whose module for linking into other
    code is parsed from its bitcode when first asked for."""

    bitcode = None

    def _get_module_for_linking(self):
        if self._shared_module is None and self.bitcode is not None:
            self._shared_module = ll.parse_bitcode(self.bitcode)
        return super()._get_module_for_linking()


class _SealedFile(caching.IndexDataCacheFile):
    """Numba's index and data files, sealed: one that is damaged is a miss (warned once),
    and the save after compiling writes it anew. A data file holds its key beside its
    data: two processes saving overloads of one function at once may leave the index
    naming, for one key, the data file the other wrote (helper 110); that is a miss too."""

    def save(self, key, data):
        super().save(key, (key, data))

    def load(self, key):
        name = self._load_index().get(key)
        found = None if name is None else cachefiles.read_sealed(self._data_path(name),
                                                              pickle.loads)
        return found[1] if isinstance(found, tuple) and len(found) == 2 and found[0] == key \
            else None

    def _load_index(self):
        index = cachefiles.read_sealed(self._index_path, pickle.loads)
        if index is None or index[:2] != (self._version, self._source_stamp):
            return {}  # none yet, damaged, or another Numba's or source file's
        return index[2]

    def _save_index(self, overloads):
        cachefiles.write_sealed(self._index_path,
                             self._dump((self._version, self._source_stamp, overloads)))

    def _save_data(self, name, data):
        cachefiles.write_sealed(self._data_path(name), self._dump(data))


class _SealedCache(caching.Cache):
    """A Numba cache whose files are sealed. Their layout is not Numba's, and their names
    differ (cachefiles.SEAL): no cache=True reads one, nor this class an earlier
    srcxform's unsealed file."""

    def __init__(self, py_func):
        super().__init__(py_func)
        numbas = self._cache_file
        name = f"{cachefiles.SEAL}-{self._impl.filename_base}"
        self._cache_file = _SealedFile(numbas._cache_path, name, numbas._source_stamp)

    def _index_key(self, sig, codegen):
        # Code compiled with bounds checks (NUMBA_BOUNDSCHECK=1) is other code: Numba's key
        # does not say so.
        return super()._index_key(sig, codegen) + (numba.config.BOUNDSCHECK,)

    def save_overload(self, sig, data):
        """Numba's save, unless this process writes to the cache no more; making the
        folder failing ends its writing, as a file's failing does."""
        if not cachefiles.writing():
            return
        try:
            super().save_overload(sig, data)
        except OSError as err:
            cachefiles.stop_writing(self._cache_path, err)


class _Locator(caching._CacheLocator):
    """Where a function's Numba files are kept: a folder of srcxform's cache."""

    def __init__(self, py_func, folder, stamp):
        self._folder, self._stamp = folder, stamp
        self._lineno = py_func.__code__.co_firstlineno
        self._py_file = py_func.__code__.co_filename  # where Numba's warnings point

    def ensure_cache_path(self):
        """Nothing: cachefiles made the folder (Numba's would test it with a file)."""

    def get_cache_path(self):
        return self._folder

    def get_source_stamp(self):
        return self._stamp

    def get_disambiguator(self):
        return str(self._lineno)


class _KernelLocator(_Locator):
    @classmethod
    def from_function(cls, py_func, py_file):
        """Beside the generated module, in the cache folder. The module's name is a hash
        of its source, so it is the stamp: the file need not be read, nor be there (not
        written, or removed by cachesize.py)."""
        return cls(py_func, os.path.join(os.path.dirname(py_file), "__pycache__"),
                   os.path.basename(py_file))


class _HelperLocator(_Locator):
    @classmethod
    def from_function(cls, py_func, py_file):
        """In the cache folder's `runtime` folder, stamped with the hash of the runtime
        module's source (as Numba stamps a file's)."""
        status = os.stat(py_file)
        stamp = caching._hash_source_file(py_file, status.st_mtime, status.st_size)
        return cls(py_func, os.path.join(cachefiles.cache_dir(), "runtime"), stamp)


class _Impl(caching.CompileResultCacheImpl):
    _locator_classes = (_KernelLocator,)

    def reduce(self, cres):
        # Without the type annotation, which _reduce would format (milliseconds for a large
        # kernel) only for it to be dropped.
        libdata, fndesc, env, signature, objectmode, lifted, _, reload_init, envs = \
            cres._replace(type_annotation=None)._reduce()
        module = cres.library._final_module
        defined = tuple(value.name for values in (module.functions, module.global_variables)
                        for value in values if not value.is_declaration)
        return (libdata, fndesc, env, signature, objectmode, lifted, reload_init, envs,
                defined)

    def rebuild(self, target_context, payload):
        try:
            return _rebuild(target_context, *payload)
        except Exception:  # noqa: BLE001 - whatever wrote the file, compiling again is right
            return None


class KernelCache(_SealedCache):
    _impl_class = _Impl

    @staticmethod
    def numba_may_read(fn):
        """Whether Numba's own cache=True may read the files it keeps of a generated
        kernel: Numba unpickles them unchecked, from the __pycache__ beside the kernel's
        module (in srcxform's cache folder, whose folders cachefiles checks), named after
        the module. One that is not to be trusted there (cachefiles.untrusted) is removed,
        with a CacheWarning, so Numba compiles and writes it anew."""
        module = fn.__code__.co_filename
        if not os.path.isfile(module):
            return False  # not written, or removed (cachesize.py): Numba would raise
        folder = os.path.join(os.path.dirname(module), "__pycache__")
        stem = os.path.splitext(os.path.basename(module))[0] + "."
        with contextlib.suppress(FileNotFoundError):
            for name in sorted(n for n in os.listdir(folder) if n.startswith(stem)):
                path = os.path.join(folder, name)
                if os.path.isdir(path) and not os.path.islink(path):  # Numba would raise
                    cachefiles.damaged(path, "it is a folder")
                    remove = functools.partial(shutil.rmtree, path)
                else:
                    reason = cachefiles.untrusted(path)
                    if reason is None:
                        continue
                    cachefiles.damaged(path, f"it is not trusted: it is {reason}")
                    remove = functools.partial(os.unlink, path)
                try:
                    remove()
                except OSError:
                    return False  # compiled in memory rather than loaded
        return True


class _HelperImpl(caching.CompileResultCacheImpl):
    _locator_classes = (_HelperLocator,)


class _HelperCache(_SealedCache):
    _impl_class = _HelperImpl


def _jit(fn, cache, **options):
    """fn compiled as srcxform compiles code (Numba's nopython mode, NumPy's error model,
    `options`), kept on disk by `cache(fn)`, a Numba cache; by Numba's own `cache=True`
    where the gate does not allow internals (if `cache.numba_may_read(fn)`, and while
    this process writes to the cache: Numba's own raises where a write fails)."""
    if not enabled():
        cached = cachefiles.writing() and cache.numba_may_read(fn)
        try:
            return numba.njit(error_model="numpy", cache=cached, **options)(fn)
        except RuntimeError:  # Numba found no place for its files: the module just went
            if not cached:
                raise
            return numba.njit(error_model="numpy", **options)(fn)
    dispatcher = numba.njit(error_model="numpy", **options)(fn)
    dispatcher._cache = cache(fn)
    return dispatcher


def kernel(fn, parallel=False):
    """A generated kernel's dispatcher. With internals, no C-callable wrapper: it was 7%
    of a small MLP's compiled module, and jitted code calls the kernel without it (also as
    a first-class function value)."""
    internal = {"no_cfunc_wrapper": True} if enabled() else {}
    return _jit(fn, KernelCache, parallel=parallel, **internal)


def helper(fn=None, /, *, contract=False):
    """fn compiled as generated code's helpers are (srcxform.runtime's). Its cache is made
    when first used, in the cache folder of the process then: a process that only loads
    kernels never compiles or loads a helper (each kernel holds the code of those it
    calls). With contract=True (as `@helper(contract=True)`), LLVM may fuse a multiply
    and an add into one FMA instruction where the machine has one: one rounding, not two,
    wherever fn is inlined."""
    if fn is None:
        return functools.partial(helper, contract=contract)
    return _jit(fn, _LazyCache, **({"fastmath": {"contract"}} if contract else {}))


def function(fn):
    """fn compiled as generated kernels are, not cached (small wrappers made in memory)."""
    return numba.njit(error_model="numpy")(fn)


def entry_point(dispatcher, args, exact=()):
    """The compiled code's own entry for calls typed as `args` are, which skips the
    dispatcher's type matching; None without internals, unless that signature is
    compiled, and unless each array in it is C-contiguous, aligned and writeable (but
    those at the positions `exact`, whose type the caller tests exactly). A caller must
    test that each call's arguments type the same."""
    if not enabled():
        return None
    signature = tuple(dispatcher.typeof_pyval(a) for a in args)
    overload = dispatcher.overloads.get(signature)
    if overload is None or any(t.layout != "C" or not t.mutable or not t.aligned
                               for p, t in enumerate(signature)
                               if isinstance(t, numba.types.Array) and p not in exact):
        return None
    return overload.entry_point


def call_numba_helper(builder, symbol, arguments):
    """A call of the function `symbol` of Numba's helper library (numba_xxgemm: an int
    status, 0 when it worked), declared by name: an external the loader resolves, never
    an address, so code calling it stays valid in the on-disk cache."""
    from llvmlite import ir
    from numba.core import cgutils

    fnty = ir.FunctionType(ir.IntType(32), [a.type for a in arguments])
    return builder.call(cgutils.get_or_insert_function(builder.module, fnty, symbol),
                        arguments)


def read_only_operand(ty):
    """An array type `ty` as a call_as_core core takes an operand it only reads: layout
    'A' (any strides) and writable, so one compiled core serves every layout and every
    read-only view. An operand the core writes keeps its own type's mutability."""
    return ty.copy(layout="A", readonly=False)


def call_as_core(public, core_for):
    """Numba's typing and lowering of calls of `public(*args)` as calls of a jitted core:
    core_for(*arg types) gives (the core, the argument types it takes), each the same data
    under another type (an array's layout: the cast is free), or None where another
    template types the call. A call site compiles nothing of its own; a jitted wrapper
    or an overload would compile again for each combination of layouts that calls it."""
    from numba.core import types
    from numba.extending import lower_builtin, type_callable

    def core_signature(typingctx, args):
        core, retyped = core_for(*args)
        return core, typingctx.resolve_function_type(types.Dispatcher(core), retyped, {})

    @type_callable(public)
    def typer(typingctx):
        def typing(*args):
            if core_for(*args) is not None:
                return core_signature(typingctx, args)[1].return_type
        typing.pysig = inspect.signature(core_for)  # fixed arity, not *args, for lowering
        return typing

    @lower_builtin(public, types.VarArg(types.Any))
    def lower(context, builder, sig, args):
        core, signature = core_signature(context.typing_context, sig.args)
        retyped = [context.cast(builder, v, t, to)
                   for v, t, to in zip(args, sig.args, signature.args)]
        return context.get_function(types.Dispatcher(core), signature)(builder, retyped)


# ----- internals used with the gate open or shut: Numba has no public form of them -----


def refresh_cpu_target():
    """Initializes Numba's CPU target (what a first compile or cache load would do), under
    the lock a compile in another thread holds."""
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target

    with global_compiler_lock:
        cpu_target.target_context.refresh()


def argument_type(value):
    """The Numba type a dispatcher gives `value` as an argument: numba.typeof's."""
    from numba.core.typing.typeof import Purpose

    return numba.typeof(value, Purpose.argument)


def ensure_blas():
    """Raises, as np.dot compiled does, where SciPy's BLAS cannot be imported. Imported
    when a product is compiled: numba.np.linalg's import costs more than loading a kernel
    does, too much for every process that loads one."""
    from numba.np.linalg import ensure_blas as numba_ensure_blas

    numba_ensure_blas()


class _LazyCache:
    """A sealed cache of a function's compiled code, made at its first use."""

    def __init__(self, fn):
        self._fn, self._cache = fn, None

    @staticmethod
    def numba_may_read(fn):
        """Never: Numba's own cache=True would keep a runtime helper's files beside
        srcxform's package, or in a folder of Numba's, where nothing checks them and a
        read-only install cannot write. Without the internals that choose the folder,
        helpers compile with the kernel that calls them."""
        return False

    def __getattr__(self, name):
        if self._cache is None:
            self._cache = _HelperCache(self._fn)
        return getattr(self._cache, name)


def _rebuild(target_context, libdata, fndesc, env, signature, objectmode, lifted,
             reload_init, envs, defined):
    """CompileResult._rebuild, with the library restored by _library."""
    for init in reload_init or ():
        init()
    codegen = target_context.codegen()
    library = _library(codegen, libdata, defined)
    cres = compiler.CompileResult(
        target_context=target_context, typing_context=target_context.typing_context,
        library=library, environment=env,
        entry_point=target_context.get_executable(library, fndesc, env),
        fndesc=fndesc, type_annotation="", signature=signature, objectmode=objectmode,
        lifted=lifted, typing_error=None, call_helper=None, metadata=None,
        reload_init=reload_init, referenced_envs=envs)
    for referenced in envs:
        library.codegen.set_env(referenced.env_name, referenced)
    return cres


def _library(codegen, libdata, defined):
    """What CPUCodeLibrary._unserialize makes of object code, the bitcode kept unparsed
    and the engine told the defined symbols' names."""
    name, kind, (object_code, bitcode) = libdata
    if kind != "object" or codegen._library_class is not JITCodeLibrary:
        raise ValueError(f"cannot restore a {kind!r} library for {codegen!r}")
    library = _Library(codegen, name)
    library.enable_object_caching()
    library._set_compiled_object(object_code)
    library.bitcode = bitcode
    library._finalize_final_module()
    codegen._engine._defined_symbols.update(defined)
    return library
