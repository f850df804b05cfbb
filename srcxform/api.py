"""The compiled face: `differentiable` and the JAX-like function forms.

A Differentiable holds a kernel per form (value, grad, value_and_grad) and signature
(array ndim, dtype and which dims are 1, plus static values), made by compiler.py at the
first call like it or loaded from the on-disk index; a warm call is the kernel's
generated entry: check the arguments still fit, one kernel call, build the results
(codegen/entry.py). It pickles as its function and options, never its kernels: a process
that receives it compiles (or loads) them itself, once.
"""

import functools
import hashlib
import inspect
import io
import linecache
import os
import pickle
import sys
import threading
import types
import weakref
from collections import namedtuple
from collections.abc import Callable
from typing import Any, Literal, Protocol, overload, runtime_checkable

import numpy as np

from srcxform import autograph
from srcxform.autograph.rewrite import arrived, code_key, installed
from srcxform.ad import forward, nan_checks
from srcxform.ad.trace import NumpyTensor
from srcxform.jit import backend, captures, compiler, crosscheck, index, openmp, tiered
from srcxform.passes import structured
from srcxform.codegen.callconv import FORMS
from srcxform.core import settings, signature
from srcxform.core.errors import InvalidArgumentError, OutputNotScalarError, TracingError
from srcxform.jit.kernel import NO, Counter, PerInstance, array_shapes, method_recipe
from srcxform.core.tensor import Tensor, Updating, Value, Variable
from srcxform.core.tree import tree_flatten, tree_unflatten, unequal_key

CacheInfo = namedtuple("CacheInfo", "hits misses kernels loaded")
# The method of a Differentiable's own class that runs each form's newest entry (_chain).
_METHODS = {"value": "__call__", "grad": "grad", "value_and_grad": "value_and_grad"}
KernelSignature = namedtuple("KernelSignature", "inputs outputs")


@runtime_checkable
class Compiled(Protocol):
    """What `differentiable` gives on every device: a Differentiable (the CPU) or a
    srcxform.cuda.CudaDifferentiable. The CPU's has more (jvp, ir, kernel, compile)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def grad(self, *args: Any, **kwargs: Any) -> Any: ...
    def value_and_grad(self, *args: Any, **kwargs: Any) -> tuple: ...
    def source(self, *args: Any, **kwargs: Any) -> str: ...


class Differentiable:
    """A function compiled with its gradient. See `differentiable`.

    f(*args) is the function's value, computed by its kernel; f.grad(*args) the gradient
    wrt `wrt` (one structure for an int wrt, a tuple of them for a tuple wrt);
    f.value_and_grad(*args) both, the gradient as `grad` gives it. With `has_aux` the
    function returns (output, aux): f.grad gives (gradient, aux), f.value_and_grad
    ((value, aux), gradient).
    """

    def __new__(cls, *args, **kwargs):
        """A Differentiable is made an instance of a class of its own, which holds the
        newest entry of each form as its methods grad, value_and_grad and __call__ (until
        there is one, Differentiable's forwarders to it). CPython 3.11 finds `f.grad` for a
        call quickly on f's class, by a cache it checks against the class's version, and
        makes no bound method; an attribute of the instance, read to be called, it looks
        up anew at every call (30 to 50 ns, a fifth of a small warm call: a bound method
        kept per instance would cost so). Made here, not by assigning __class__
        later: that would move the instance's attributes into a dict, which defeats the
        cache too."""
        own = type(cls.__name__, (cls,), {"__module__": cls.__module__,
                                          "__qualname__": cls.__qualname__})
        return super().__new__(own)

    def __init__(self, fn, wrt=0, parallel=False, check=False, wait=False, autograph=True,
                 has_aux=False):
        # functools.update_wrapper's own assignments, less its update of the instance's
        # dict, which would leave it a dict CPython cannot look attributes up in quickly
        # (f.grad is read at every call).
        for name in functools.WRAPPER_ASSIGNMENTS:
            if hasattr(fn, name):
                setattr(self, name, getattr(fn, name))
        self.__wrapped__ = fn
        self.fn = fn
        self.wrt = wrt
        self.parallel = parallel
        if parallel:
            openmp.passive_idle_workers()
        self.check = check
        self.wait = wait
        self.autograph = autograph
        self.has_aux = has_aux
        # How another process makes f again (pickling): a maker and its arguments.
        self._recipe = (Differentiable, (fn, wrt, parallel, check, wait, autograph, has_aux))
        self._python = None  # fn as traced: its control flow converted (autograph.py)
        # The plain call returns what the eager function would (Tensors where it makes
        # them); jacobian's, as the gradient forms, NumPy values (JAX's convention).
        self._as_eager = True
        # tf.function's rules: a Python float argument is static, an array a tensor.
        self._tf_rules = False
        self._kernels = {}
        self._compiling = {}  # kernel: its tiered.Job, while the worker compiles it
        # The warm path, per form: the newest generated entry (bound to self), which passes
        # a call it does not fit to the entry made before it, and the first one to the
        # slow path.
        self._warm = {form: functools.partial(self._slow, form) for form in FORMS}
        self._chained = set()  # (kernel, form) pairs with an entry in self._warm's chain
        self._hits, self._misses, self._loaded = Counter(), 0, 0
        self._traces = 0  # how often tracing ran the function's Python
        _LIVE.add(self)  # its warm entries are dropped when debug_nans changes
        self._bound = PerInstance()
        self._lock = threading.RLock()  # held finding or compiling a kernel, and chaining
        if tiered.enabled(wait):
            tiered.start_worker()  # ready by the first call, where it can be

    def __repr__(self):
        return f"<srcxform.differentiable {getattr(self.fn, '__qualname__', self.fn)}>"

    def __get__(self, obj, objtype=None):
        """A method decorated in a class body: each instance gets its own compiled method
        (the instance is not an argument the kernel could take)."""
        if obj is None:
            return self

        def make():
            bound = Differentiable(self.fn.__get__(obj, objtype), self.wrt, self.parallel,
                                   self.check, self.wait, self.autograph, self.has_aux)
            bound._as_eager, bound._tf_rules = self._as_eager, self._tf_rules
            bound._recipe = method_recipe(self, obj) or bound._recipe
            return bound

        return self._bound.get(obj, make)

    # ----- public calls -----
    def __call__(self, *args, **kwargs):
        """The function's value at args, computed by its kernel."""
        return self._warm["value"](*args, **kwargs)

    # f's own class overrides these three with its newest entries (_chain; a reference
    # taken before, as srcxform.grad(fn) holds, calls the forwarder and stays on the warm
    # path).
    def grad(self, *args: Any, **kwargs: Any) -> Any:
        """The gradient at args wrt `wrt`, computed by the kernel."""
        return self._warm["grad"](*args, **kwargs)

    def value_and_grad(self, *args: Any, **kwargs: Any) -> tuple:
        """(value, gradient) at args, computed by the kernel."""
        return self._warm["value_and_grad"](*args, **kwargs)

    def jvp(self, primals: tuple, tangents: tuple) -> tuple:
        """(f(*primals), its Jacobian-vector product along `tangents`), JAX's jvp:
        primals and tangents are tuples of positional arguments. Compiled: the forward
        pass and its tangents are one kernel (forward.py derives each op's JVP)."""
        return _jvp_form(self)(*forward.argument_tuples(primals, tangents))

    def source(self, *args: Any, device: str = "cpu", **kwargs: Any) -> str:
        """The generated fused forward-and-adjoint source (the forward's for a non-scalar
        output) for these arguments; with device="cuda", the CUDA module of srcxform.cuda."""
        if settings.device(device) == "cuda":
            from srcxform import cuda

            return cuda.differentiable(self).source(*args, **kwargs)
        return self._shown(args, kwargs).source

    def ir(self, *args: Any, **kwargs: Any) -> str:
        """The printed IR (forward and adjoint, after optimization) for these arguments."""
        return str(self._shown(args, kwargs).program)

    def loop_stacks(self, *args: Any, **kwargs: Any) -> list:
        """What the gradient's loops store for their adjoints, for these arguments: a
        structured.LoopStacks per loop (its bytes per iteration, its checkpoint)."""
        return structured.loop_stacks(self._shown(args, kwargs).program)

    def _shown(self, args, kwargs):
        """What source and ir show: value and gradient, or the value where it has none."""
        try:
            return self._kernel("value_and_grad", args, kwargs)[0]
        except OutputNotScalarError:
            return self._kernel("value", args, kwargs)[0]

    def kernel(self, *args: Any, **kwargs: Any) -> Callable:
        """The compiled value-and-gradient for arguments like these, as a Numba function
        you can call from your own `@njit` code.

        It takes the array arguments flattened (nested structures in sorted-key order,
        static arguments left out), then the values of any Variables the function reads,
        and returns a tuple: the value's leaves, the gradient's leaves, then the new values
        of any Variables the function assigns. `kernel_signature` names them in order.
        """
        return self._kernel("value_and_grad", args, kwargs)[0].callable()

    def kernel_signature(self, *args: Any, **kwargs: Any) -> KernelSignature:
        """KernelSignature(inputs, outputs): what `f.kernel(*args)` takes and returns, in
        order, as names: the arguments' leaves by parameter name (params_w for
        params['w']), each Variable by the name the function knows it by, `value` (with
        its path: value[0]) and `grad <leaf>` for the results, `new <variable>` for the
        Variables' new values. Leaves the trace fixed (a string, None) are not outputs."""
        conv = self._kernel("value_and_grad", args, kwargs)[0].conv
        return KernelSignature(list(conv.in_names), list(conv.out_names))

    def cache_info(self) -> CacheInfo:
        """CacheInfo(hits, misses, kernels, loaded): hits and misses count the calls that
        found a kernel and those that did not (as functools.lru_cache counts); kernels is
        how many kernels f holds, and loaded how many of those came from the on-disk index
        (an earlier process traced them) rather than being traced in this process."""
        return CacheInfo(self._hits.n, self._misses, sum(len(v) for v in self._kernels.values()),
                         self._loaded)

    def compile(self, *args: Any, **kwargs: Any) -> "Differentiable":
        """Compiles, here and now, the kernels f.grad and f.value_and_grad run for
        arguments like these (f.grad's computes the gradient alone), so that their first
        call runs natively rather than on the eager tape while the kernel compiles in the
        background (srcxform.jit.tiered). Returns f. `differentiable(..., wait=True)` makes
        every first call wait so."""
        for form in ("grad", "value_and_grad"):
            self._kernel(form, args, kwargs)
        return self

    # ----- pickling (processes, Dask) -----
    def __reduce__(self):
        """f pickles by reference where its module holds it under its name (the receiving
        process imports that module's own f), else as what makes it again: its function
        and options (_shipped), never its kernels, locks or caches, which a receiving
        process makes itself, once (_received)."""
        if _importable(self):
            return self.__qualname__
        return (_received, _shipped(self._state()))

    def __copy__(self):  # a function's copy is itself (a copy by pickling had Variables
        return self      # of its own: helper 110); deepcopy makes one, as pickle does

    def __dask_tokenize__(self):
        """Dask's token for f: the same for the same function and options in every process
        (the on-disk index's digest of the function, else its pickled form)."""
        state = make, args, flags = self._state()
        digest = index.function_digest(self.fn) or \
            hashlib.sha256(_shipped(state)[0]).hexdigest()
        return ("srcxform", make.__qualname__, digest, repr(args[1:]), flags)

    def _state(self):
        """What makes f again: the maker, its arguments, and the flags forms set later."""
        make, args = self._recipe
        return make, args, (self._as_eager, self._tf_rules)

    # ----- compiling and running -----
    def _slow(self, form, *args, **kwargs):
        """The slow path: inline under a tape or a trace; else find or compile the kernel
        for these arguments, and put an entry for calls like this one in front of the warm
        path. The arguments an entry passes on end with a NO for each one the call left out."""
        while args and args[-1] is NO:
            args = args[:-1]
        if self._through_class(args):
            return getattr(self.__get__(args[0], type(args[0])), _METHODS[form])(*args[1:],
                                                                                  **kwargs)
        args, kwargs = self._positional(args, kwargs)
        if compiler.inline_here():
            return self._inline(form, args, kwargs)
        if form == "grad" and nan_checks.enabled():
            # The gradient's kernel drops forward values the gradient does not read, and
            # their checks with them: the value's kernel checks every op, as the tape does.
            value, grad = self._slow("value_and_grad", *args, **kwargs)
            return (grad, value[1]) if self.has_aux else grad
        with backend.gc_paused():  # a first call compiles
            # A checked kernel (debug_nans) is waited for: the first calls' NumPy run
            # while the worker compiles (tiered) would not check.
            kernel, leaves = self._kernel(form, args, kwargs, tier0=not nan_checks.enabled())

            def eager():
                return self._inline(form, *_as_tensors(args, kwargs, self._tf_rules))

            try:
                # The worker compiles it (or compiled it for a call that another thread's
                # found stale since: helper 134): this call runs on NumPy.
                if kernel.fn is None:
                    return self._tier0(kernel, leaves)
                results = self._run(kernel, leaves, eager)
            except InvalidArgumentError as err:  # a runtime check's, naming no user line
                raise _as_eager_raises(err, eager, kernel.variables(leaves)) from None
            # The entry, made once the call has compiled the kernel, calls it directly.
            if not kwargs and (kernel, form) not in self._chained and \
                    not captures.serves_one_call(kernel.probes):
                self._chain(kernel, form, args)
        return results

    def _run(self, kernel, leaves, eager):
        """The kernel's results for a call with these leaves; at its first call with their
        shapes (it takes any size), checked against eager()'s (crosscheck.py): not where
        what it captured moved while traced, which eager() reads anew."""
        if not crosscheck.enabled(self.check) or array_shapes(leaves) in kernel.checked or \
                captures.serves_one_call(kernel.probes):
            return kernel.run(leaves)
        variables = kernel.variables(leaves)
        # Both runs, and the values put back between them, are one update of each Variable
        # (as the kernel's call is), not interleaved with other threads'.
        with Updating(variables):
            results = crosscheck.first_call(
                getattr(self.fn, "__qualname__", "the function"), lambda: kernel.run(leaves),
                eager, variables, not any(type(leaf) is float for leaf in leaves))
        kernel.checked.add(array_shapes(leaves))  # once right: a wrong one raises again
        return results

    def _positional(self, args, kwargs):
        """The keyword arguments naming the parameters right after args moved into args, so
        that h(x, n=2) finds h(x, 2)'s kernel (TensorFlow binds both to one signature; each
        was traced apart: helper 113). Not where args leave a wrt position out (a gradient
        wrt a keyword raises, as JAX's)."""
        parameters = self._parameter_list
        if not kwargs or parameters is None or \
                len(args) <= max(compiler.wrt_positions(self.wrt), default=-1):
            return args, kwargs
        kwargs = dict(kwargs)
        while len(args) < len(parameters) and parameters[len(args)].name in kwargs and \
                parameters[len(args)].kind == inspect.Parameter.POSITIONAL_OR_KEYWORD:
            args += (kwargs.pop(parameters[len(args)].name),)
        return args, kwargs

    @functools.cached_property
    def _parameter_list(self):
        """fn's parameters in order, or None where it has no signature to read or is a
        compiled function's form (f.grad)."""
        if _compiled_form(self.fn):
            return None
        try:
            return list(inspect.signature(self.fn).parameters.values())
        except (TypeError, ValueError):
            return None

    def _through_class(self, args):
        """Whether this is M.f(m, x), a method called through its class (A.f(self, x) from
        B's override too, and f set on a class under another name): then it runs as
        m.f(x), as Python's and TensorFlow's (the warm entries send it on to _slow)."""
        if not args or isinstance(args[0], _ARGUMENTS):
            return False
        leaves = tree_flatten(args[0])[0]
        if len(leaves) != 1 or leaves[0] is not args[0]:  # a pytree's node: an argument
            return False  # (helper 126: f.grad(params, x) was taken for a method's call)
        return method_recipe(self, args[0]) is not None

    def _unchain(self):
        """Drops the warm entries: the next call of each form takes the slow path."""
        with self._lock:
            self._drop([])

    def _chain(self, kernel, form, args):
        """Puts an entry for calls like `args` to `kernel` in front of the warm path."""
        with self._lock:
            if (kernel, form) in self._chained:  # another thread's call made it first
                return
            self._chained.add((kernel, form))
            head = kernel.entry(args, self._warm[form], self._hits, self._keywords(),
                                crosscheck.enabled(self.check))
            # The name CPython's errors give a call the entry refuses (a keyword).
            head.__qualname__ = f"{getattr(self.fn, '__qualname__', 'f')}.{form}"
            self._warm[form] = types.MethodType(head, self)
            # f.grad is the head itself, one call less than a forwarder; f(...) too, unless
            # f's class calls more than the entry (tf.function conforms the arguments).
            method = _METHODS[form]
            if method != "__call__" or type(self).__base__.__call__ is Differentiable.__call__:
                setattr(type(self), method, head)

    def _inline(self, form, args, kwargs):
        """Runs the Python function itself, for a caller that is tracing (composition:
        differentiable(f.grad)) or recording on a tape."""
        return compiler.inline(self._traced_fn(), self.wrt, self.has_aux, form, args, kwargs)

    def _keywords(self):
        """Whether a call of f.grad or f.value_and_grad passing an argument by keyword can
        succeed: only one after the last `wrt` position (those before it must be
        positional, or the slow path raises), a keyword-only one or **kwargs. A
        Differentiable's method (f.grad) is its function's, under both wrts."""
        fn, last = self.fn, max(compiler.wrt_positions(self.wrt), default=-1)
        while _compiled_form(fn):
            owner = fn.__self__
            fn, last = owner.fn, max([last, *compiler.wrt_positions(owner.wrt)])
        try:
            parameters = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):  # no signature to read: it may take any
            return True
        return any(p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) or
                   p.kind == p.POSITIONAL_OR_KEYWORD and i > last
                   for i, p in enumerate(parameters))

    def _traced_fn(self):
        """fn as tracing runs it: with `if`/`while`/`for` on traced values converted into
        cond/while_loop/fori_loop (autograph.py), unless autograph=False."""
        if self._python is None:
            self._python = autograph.convert(self.fn) if self.autograph else self.fn
        return self._python

    def _kernel(self, kernel_form, args, kwargs, tier0=False):
        """The kernel for these arguments, found or compiled, and their leaves. One thread
        at a time: a first call racing another waits for its kernel. With `tier0`, a new
        kernel may be left compiling in the worker (then it is in self._compiling, and
        the call runs eagerly); without, the kernel returned is compiled."""
        with self._lock:
            kernel, leaves = self._find_or_compile(kernel_form, args, kwargs, tier0)
            job = self._compiling.get(kernel)
        if job is not None and (job.ready() or not tier0):
            job.wait()  # outside the lock: other threads' calls run eagerly meanwhile
            with self._lock:
                if kernel in self._compiling:  # not switched by another thread already
                    self._switch(kernel, job)
        return kernel, leaves

    def _switch(self, kernel, job):
        """Loads a kernel the worker compiled (from the disk cache: a damaged file there
        is a miss, and it compiles here), or compiles it here where the worker could not."""
        if job.lost:
            tiered.warn_lost(job, getattr(self.fn, "__qualname__", "the function"))
        if kernel.spec is None:  # generating it failed in the tier-up thread: raises here
            kernel.generated(job.generate())
        spec = kernel.spec
        kernel.fn = backend.load(spec.source, spec.func_name, parallel=spec.parallel)
        del self._compiling[kernel]  # after kernel.fn is set: other threads test this

    def _tier0(self, kernel, leaves):
        """The call's results from the kernel's traced program run on NumPy, while the
        kernel compiles (tiered.py), as the kernel would return them."""
        try:
            return tiered.results(kernel, leaves)
        finally:  # last: what it starts shares the GIL with the calls after this one
            job = self._compiling.get(kernel)
            if job is not None:
                job.hand_off()
            tiered.prepare_native()

    def _find_or_compile(self, kernel_form, args, kwargs, tier0=False):
        leaves, treedef = tree_flatten((args, kwargs))
        if unequal_key(treedef) is not None:
            raise TypeError(f"{self.__name__}: a dict key or pytree aux data not equal to "
                            "itself (NaN) cannot be part of a compiled call's arguments (its "
                            "kernel is found by them); use another value")
        # A kernel checking for NaN and inf (debug_nans) is another kernel, cached apart.
        key = (kernel_form, treedef, signature.key(leaves, self._tf_rules),
               *(("debug_nans",) if nan_checks.enabled() else ()))
        candidates = self._kernels.setdefault(key, [])
        stale = [kernel for kernel in candidates if not kernel.current()]
        if stale:
            self._drop(stale)

        @functools.cache
        def trace():  # at most once a call: it runs the function's Python
            self._traces += 1
            return compiler.trace_function(self._traced_fn(), self.wrt, kernel_form, args,
                                           kwargs, leaves, self.has_aux, self._tf_rules)

        shapes = array_shapes(leaves)
        for kernel in candidates:
            general = kernel.general
            if kernel.conv.admits_variables(leaves) and \
                    (not kernel.guards or kernel.admits(kernel.arguments(leaves))) and \
                    compiler.right_for(kernel, shapes, trace):
                if kernel.general and not general:  # its entries passed other shapes on
                    self._drop([])
                self._hits.n += 1
                return kernel, leaves
        self._misses += 1
        found = self._index_key(key)
        # The index is not read while SRCXFORM_DUMP asks to see the pipeline. A kernel it
        # has is traced all the same, for the function's Python to run once per signature
        # in this process whatever the cache holds (JAX, too, traces before its persistent
        # cache's lookup): what the index saves is code generation and Numba's compile.
        indexed = found and not os.environ.get("SRCXFORM_DUMP") and \
            compiler.load_indexed(found, leaves, trace())
        if indexed:
            self._loaded += 1
        kernel = indexed or self._compile(kernel_form, args, kwargs, leaves, found, tier0,
                                          trace())
        candidates.append(kernel)
        return kernel, leaves

    def _compile(self, kernel_form, args, kwargs, leaves, found, tier0, traced):
        """Generates the kernel from its trace (compiler.py) and compiles it: here, or with
        `tier0` and tiers on, in the worker (self._compiling), the kernel only traced so far."""
        how = {"wrt": self.wrt, "parallel": self.parallel, "as_eager": self._as_eager,
               "keywords": self._keywords(), "has_aux": self.has_aux,
               "tf_rules": self._tf_rules, "nan_checks": nan_checks.enabled(),
               "traced": traced}
        if tier0 and tiered.enabled(self.wait):
            tiered.start_worker()  # where it was not started with f, or has died
            # Its module is generated after this call returns (_tier0), in another thread.
            kernel, generate = compiler.trace_kernel(self._traced_fn(), kernel_form, args,
                                                     kwargs, leaves, found, **how)
            self._compiling[kernel] = tiered.compile_later(kernel, generate, leaves)
            return kernel
        kernel = compiler.generate_kernel(self._traced_fn(), kernel_form, args, kwargs, leaves,
                                          found, **how)
        kernel.fn = backend.load(kernel.spec.source, kernel.spec.func_name,
                                 parallel=kernel.spec.parallel)
        return kernel

    def _drop(self, stale):
        """Forgets kernels whose captured objects changed (captures.py), and the warm
        entries (every entry holds the ones made before it): calls make them anew."""
        for candidates in self._kernels.values():
            candidates[:] = [k for k in candidates if k not in stale]
        for kernel in stale:
            self._compiling.pop(kernel, None)
        self._chained.clear()
        for form in FORMS:
            self._warm[form] = functools.partial(self._slow, form)
            if _METHODS[form] in vars(type(self)):
                delattr(type(self), _METHODS[form])  # back to Differentiable's forwarder

    def _index_key(self, key):
        """The on-disk index's key for a signature, or None if fn is not indexable. The
        digest is taken anew each time: a global fn reads may have changed."""
        digest = index.function_digest(self.fn)
        return digest and index.key(digest, key, self.wrt, self.parallel, self._as_eager,
                                    *(() if self.autograph else ("no autograph",)),
                                    *(("has_aux",) if self.has_aux else ()),
                                    *(("tf rules",) if self._tf_rules else ()))






# Each Differentiable's jvp form: a Differentiable of its function's forward mode.
_JVP_FORMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _jvp_form(f):
    form = _JVP_FORMS.get(f)
    if form is None:
        traced = f._traced_fn()

        def jvp_of(primals, tangents):
            return forward.jvp(traced, primals, tangents)

        jvp_of.__name__ = f"jvp_of_{getattr(f.fn, '__name__', 'f')}"
        form = _JVP_FORMS[f] = Differentiable(jvp_of, parallel=f.parallel, wait=f.wait,
                                              autograph=False)
        form._as_eager = f._as_eager
    return form


# What a kernel takes as an argument: never a method's object.
_ARGUMENTS = (Value, np.ndarray, np.generic, int, float, complex, str, list, tuple, dict)
# The Differentiables alive, whose warm entries a change of debug_nans drops.
_LIVE: weakref.WeakSet = weakref.WeakSet()
nan_checks.ON_CHANGE.append(lambda: [f._unchain() for f in list(_LIVE)])


def _after_fork():
    """In a forked child: each function's lock made anew. A thread of the parent tracing
    one held it, and the child, which does not have that thread, would wait for it at the
    function's next slow call forever (helper 122); what the trace had not finished is
    not in the function's kernels, so the child traces again."""
    for f in list(_LIVE):
        f._lock._at_fork_reinit()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _compiled_form(fn):
    """Whether fn is a Differentiable's method (f.grad)."""
    return isinstance(fn, types.MethodType) and isinstance(fn.__self__, Differentiable)


# A Differentiable another function calls (or composes) is indexed as its function, and
# f.grad as a method of it (index.py), by the name of its form.
index.DESCRIBERS[Differentiable] = lambda d, describe: (
    "differentiable", describe(d.fn), d.wrt, d.parallel, d.has_aux)


def _as_tensors(args, kwargs, tf_rules=False):
    """args and kwargs with each leaf a trace would make a Tracer as a Tensor instead, as
    the function meets its arguments when traced (a Python float is a weak float64)."""
    leaves, tree = tree_flatten((args, kwargs))
    rules = [signature.rule_of(leaf, tf_rules) for leaf in leaves]
    leaves = [_as_tensor(leaf, rule.eager) if rule.traced and not isinstance(leaf, Value)
              else leaf for leaf, rule in zip(leaves, rules)]
    return tree_unflatten(tree, leaves)


def _as_tensor(leaf, eager):
    """A leaf as a Tensor; a NumPy array or a Python number stays what it is to the
    function's operators (NumpyTensor)."""
    tensor = Tensor._new(np.asarray(leaf), weak=eager == "python")
    return NumpyTensor.of(tensor, eager) if eager in ("numpy", "python") else tensor


def _importable(d):
    """Whether d's module holds d under d's qualified name (a decorated module-level
    function), so that pickle can name it. Not in __main__: another process's __main__ is
    another program (cloudpickle's and Dask's rule)."""
    module = sys.modules.get(getattr(d, "__module__", None) or "")
    qualname = getattr(d, "__qualname__", None)  # a partial's or an instance's has none
    if module is None or module.__name__ == "__main__" or qualname is None:
        return False
    found = module
    for name in qualname.split("."):
        found = getattr(found, name, None)
    return found is d


def _shipped(state):
    """state as bytes, whether it holds state of its own (_pickled), and the sources of
    the code in it: pickled by reference where pickle can name each function in it (no
    sources: None); else by value with cloudpickle (a lambda, a closure, a function of
    __main__), whose code forgets its file: (each code's file, each file's lines), so that
    autograph reads it where it arrives (rewrite.arrived)."""
    try:
        payload, holds_state, _ = _pickled(state, pickle.Pickler)
        if b"__main__" not in payload:
            return payload, holds_state, None
    except (pickle.PicklingError, AttributeError, TypeError):
        pass  # a function pickle cannot name
    try:
        import cloudpickle
    except ImportError:
        raise pickle.PicklingError(
            f"srcxform: cannot pickle {state[1][0]!r}: pickle names a function by its module "
            "and name, and this one has none another process can import (a lambda, a "
            "closure, a function of __main__); install cloudpickle to pickle it by value, "
            "or define it at the top level of a module") from None
    payload, holds_state, files = _pickled(state, cloudpickle.CloudPickler)
    lines = {name: linecache.getlines(name) for name in set(files.values())}
    return payload, holds_state, (files, {name: text for name, text in lines.items() if text})


def _pickled(state, pickler):
    """state pickled by `pickler`, whether it holds state of its own (_stateful), and the
    file of each code object in it (rewrite.code_key -> file name)."""

    class Watching(pickler):
        holds_state = False

        def persistent_id(self, obj):  # sees every object; returning None pickles it
            if _stateful(obj):
                self.holds_state = True
            elif isinstance(obj, types.CodeType):
                self.files[code_key(obj)] = obj.co_filename

    out = io.BytesIO()
    watching = Watching(out, protocol=pickle.HIGHEST_PROTOCOL)
    watching.files = {}
    watching.dump(state)
    return out.getvalue(), watching.holds_state, watching.files


def _stateful(obj):
    """Whether a pickled object may hold state a call changes: a Variable, or an object of
    the user's own classes or a Keras layer (a model that makes its Variables at its first
    call); not functions, classes or modules, nor the objects of srcxform (a compiled
    function's own payload says), the standard library or installed packages."""
    if isinstance(obj, Variable):
        return True
    if isinstance(obj, (type, types.FunctionType, types.MethodType, types.ModuleType,
                        types.BuiltinFunctionType, functools.partial)):
        return False
    module = type(obj).__module__ or ""
    if module.startswith("srcxform."):
        return module.startswith("srcxform.keras")
    path = getattr(sys.modules.get(module), "__file__", None)
    return module == "__main__" or path is not None and not installed(path)


def _received(payload: bytes, holds_state: bool = False,
              sources: tuple | None = None) -> "Differentiable":
    """The Differentiable a pickled payload describes: one per process for equal payloads
    (_received_once), so that a worker traces and compiles it once, however many tasks
    bring it; its first call may find the kernel in the on-disk cache. A payload holding
    state (_pickled) makes a function of its own each time, as pickle.loads does: one
    function would carry its Variables' updates from one task to the next (helpers 74,
    107). `sources`: _shipped's."""
    if sources is not None:
        arrived(*sources)
    return _made(payload) if holds_state else _received_once(payload)


def _made(payload):
    make, args, flags = pickle.loads(payload)
    made = make(*args)
    if flags is not None:  # a Differentiable's (vmap's forms have none)
        made._as_eager, made._tf_rules = flags
    return made


_received_once = functools.lru_cache(maxsize=256)(_made)


# ----- public forms -----


@overload
def differentiable(fn: Callable, *, wrt: int | tuple = 0, parallel: bool = False,
                   check: bool = False, wait: bool = False, autograph: bool = True,
                   has_aux: bool = False, device: Literal["cpu"] | None = None
                   ) -> Differentiable: ...


@overload  # @differentiable(wrt=1): the decorator
def differentiable(fn: None = None, *, wrt: int | tuple = 0, parallel: bool = False,
                   check: bool = False, wait: bool = False, autograph: bool = True,
                   has_aux: bool = False, device: Literal["cpu"] | None = None
                   ) -> Callable[[Callable], Differentiable]: ...


@overload  # device="cuda", or a device chosen at run time: what every device gives
def differentiable(fn: Callable, *, wrt: int | tuple = 0, parallel: bool = False,
                   check: bool = False, wait: bool = False, autograph: bool = True,
                   has_aux: bool = False, device: str) -> Compiled: ...


@overload
def differentiable(fn: None = None, *, wrt: int | tuple = 0, parallel: bool = False,
                   check: bool = False, wait: bool = False, autograph: bool = True,
                   has_aux: bool = False, device: str) -> Callable[[Callable], Compiled]: ...


def differentiable(fn: Callable | None = None, *, wrt: int | tuple = 0, parallel: bool = False,
                   check: bool = False, wait: bool = False, autograph: bool = True,
                   has_aux: bool = False, device: str | None = None
                   ) -> Compiled | Callable[[Callable], Compiled]:
    """Compiles fn with its gradient; use as `@differentiable` or `differentiable(f, wrt=1)`.

    With `check` (or SRCXFORM_CHECK=1 in the environment) each kernel's first call with
    new shapes also runs the eager tape and raises srcxform.CheckError if the two disagree.

    A new kernel's first calls run on the eager tape while Numba compiles the kernel in a
    background process; the first call after it is ready runs it (srcxform.jit.tiered). With
    `wait` (or SRCXFORM_TIERED=0) first calls wait for the kernel instead; f.compile(*args)
    compiles the gradient forms' kernel ahead of their first call.

    Its `if`, `while` and `for i in range(n)` statements on traced values compile, as
    srcxform.cond, while_loop and fori_loop (its source is rewritten: autograph.py);
    `autograph=False` traces it as written, where only static control flow works.

    f.grad and f.value_and_grad need a scalar float output (JAX's rule); with `has_aux`
    the function returns (output, aux), f.grad gives (gradient, aux) and
    f.value_and_grad ((value, aux), gradient), the aux as values with no gradient.

    `device="cuda"` (or SRCXFORM_DEVICE=cuda where device is not given) compiles it to
    CUDA kernels instead (srcxform.cuda: f(...), f.grad, f.value_and_grad, f.source); the
    default is "cpu". The static type of a call that names no device is Differentiable,
    the CPU's: code meant for SRCXFORM_DEVICE=cuda uses only what `Compiled` has.

    Example:
        >>> @srcxform.differentiable
        ... def loss(w, x):
        ...     return srcxform.reduce_sum(srcxform.tanh(x * w))
        >>> loss.grad(np.ones(3), np.arange(3.0))
    """
    on_cuda = settings.device(device) == "cuda"
    if on_cuda and (parallel or check):
        raise ValueError("differentiable: parallel and check are options of the CPU kernel, "
                         "not of device='cuda'")
    if fn is None:
        return lambda f: differentiable(f, wrt=wrt, parallel=parallel, check=check, wait=wait,
                                        autograph=autograph, has_aux=has_aux, device=device)
    if isinstance(wrt, bool) or not isinstance(wrt, (int, tuple, list)):
        raise TypeError(f"differentiable: wrt must be an int or a tuple of ints, got {wrt!r}")
    if on_cuda:
        return _on_cuda(fn, wrt, autograph, has_aux)
    return Differentiable(fn, wrt, parallel, check, wait, autograph, has_aux)


def _on_cuda(fn, wrt, converts, has_aux):
    """fn compiled to CUDA kernels (srcxform.cuda, imported at the first such call), its
    control flow converted as the CPU kernel's is."""
    from srcxform import cuda

    return cuda.differentiable(fn, wrt=wrt, has_aux=has_aux,
                               convert=autograph.convert if converts else None)


def _as_eager_raises(err, eager, variables):
    """A kernel's runtime check failed (an index out of range, an integer divisor of 0, a
    singular matrix: `err`), which names no line of the user's: the error eager() raises,
    which does (TensorFlow's InvalidArgumentError, as err is). The kernel assigned nothing;
    the Variables keep what eager() assigned before its error, as an eager call and
    TensorFlow's tf.function leave them (helper 132). err itself, the Variables' values
    put back, where eager() raises none or another kind (never a guess)."""
    with Updating(variables):  # no other thread's update comes between (helper 130)
        before = [v._array.copy() for v in variables]
        found = None
        try:
            eager()
        except InvalidArgumentError as raised:
            found = raised
        except Exception:  # noqa: BLE001  (the kernel's error stands)
            found = None
        if found is not None:
            return found
        for v, value in zip(variables, before):
            v._array = value
    return err


def grad(fn: Callable, wrt: int | tuple = 0, has_aux: bool = False) -> Callable:
    """The compiled gradient function of fn (JAX's grad): fn returns a scalar float, or
    with `has_aux` a pair (output, aux), and the function returns (gradient, aux)."""
    return differentiable(fn, wrt=wrt, has_aux=has_aux).grad


def value_and_grad(fn: Callable, wrt: int | tuple = 0, has_aux: bool = False) -> Callable:
    """The compiled (value, gradient) function of fn (JAX's value_and_grad); with
    `has_aux`, ((value, aux), gradient)."""
    return differentiable(fn, wrt=wrt, has_aux=has_aux).value_and_grad


__all__ = ["TracingError", "differentiable", "grad", "value_and_grad"]
