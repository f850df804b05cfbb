"""Every use srcxform makes of Numba beyond its public API (and of one CPython detail),
behind one gate: `enabled()`.

With a Numba of VERSIONS, and unless SRCXFORM_NUMBA_INTERNALS=0, srcxform
- keeps kernels and the runtime's helpers in an on-disk cache of its own, whose files are
  sealed with a checksum (a damaged one is a miss) and which loads a kernel without
  parsing its bitcode (jit.py: CompileResult's pickled form, a code library restored
  from object code, the JIT engine's table of defined symbols);
- compiles kernels without their C-callable wrapper (Numba's `no_cfunc_wrapper`);
- calls a kernel through its overload's compiled entry, without the dispatcher's type
  matching (`jit.entry_point`);
- multiplies matrices through Numba's BLAS helpers numba_xxgemm and numba_xxgemv
  (runtime/blas.py, `jit.call_numba_helper`), compiled once per dtype;
- and lets a warm entry fill again the output arrays it returned last call when CPython's
  reference count says nothing else holds them (`sole_reference_count`).
Otherwise it uses Numba's public API only (`cache=True`, whose files Numba reads as they
are, the dispatcher, np.dot) and allocates new outputs each call: slower first and warm
calls, the same results.

The switch is read when a kernel is compiled or its entry made, and by runtime/blas.py
when a process first imports it; this package imports only the switches' rule (jit.py imports Numba).
"""

import functools
import sys

from srcxform.core import settings

# The Numba versions whose internals this was written against (pyproject.toml's numba
# range allows these only).
VERSIONS = ("0.68",)


def enabled():
    """Whether srcxform uses Numba's internals: with a Numba of VERSIONS, unless the
    environment sets SRCXFORM_NUMBA_INTERNALS to 0."""
    import numba

    return _switched_on() and ".".join(numba.__version__.split(".")[:2]) in VERSIONS


def _switched_on():
    return settings.switch("SRCXFORM_NUMBA_INTERNALS", default=True)


def sole_reference_count():
    """What sys.getrefcount reports, in a warm entry, for an output array that nothing but
    the entry holds (`o, o_shape = spare` from its global, then getrefcount(o)); None
    where a reference count cannot say so: without the GIL (another thread's references
    race it), or with the switch off."""
    if not _switched_on() or not getattr(sys, "_is_gil_enabled", lambda: True)():
        return None
    return _probed_count()


@functools.cache
def _probed_count():
    """The count measured, by code of the entry's shape, rather than assumed: what it
    includes (the argument, borrowed references) differs between Python versions."""
    namespace = {"getrefcount": sys.getrefcount, "spare": (object(), ())}
    exec("def probe():\n    o, o_shape = spare\n    return getrefcount(o)\n",  # noqa: S102 - fixed text
         namespace)
    return namespace["probe"]()


def compiling_elsewhere():
    """Whether another thread holds Numba's compiler lock (compiling, or loading a kernel),
    asked without waiting; False where Numba is not imported or the switch is off."""
    module = sys.modules.get("numba.core.compiler_lock")
    if module is None or not enabled():
        return False
    lock = module.global_compiler_lock._lock
    if lock.acquire(blocking=False):
        lock.release()
        return False
    return True
