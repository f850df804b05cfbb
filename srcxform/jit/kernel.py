"""One compiled signature at run time: its generated module's functions, bound to what
this kernel captured.

The module (codegen) holds the kernel, the call path for its form (the general path:
callpath.py) and the warm entries (entry.py), all written from one calling convention
(callconv.py). A module is shared by every kernel with its text, so its functions read
the objects that are one kernel's own (captured Variables and arrays, the entries'
constants and buffers) as globals bound here, per kernel: the names its "bound per
kernel" block declares (codegen/module.py).
"""

import builtins
import sys
import types
from dataclasses import dataclass

import numpy as np

from srcxform import numba_adapter
from srcxform.jit import backend
from srcxform.codegen.callconv import Convention
from srcxform.codegen import callpath, entry
from srcxform.core import signature
from srcxform.runtime import calls
from srcxform.runtime.calls import NO
from srcxform.core.tensor import Updating, Variable, eager_tensor
from srcxform.core.tree import tree_flatten


class Counter:
    """A count the warm path adds to: an attribute of an object with slots is quicker
    to update than one in an instance's dict."""

    __slots__ = ("n",)

    def __init__(self):
        self.n = 0


@dataclass(frozen=True)
class Spec:
    """A compiled signature as plain data (the on-disk index keeps it): the generated
    module, the kernel's name in it, and its calling convention."""

    func_name: str
    source: str
    parallel: bool
    conv: Convention
    name: str  # the user function's, which the call path's functions are named for
    entries: tuple  # (form, source) of the warm entry generated into the module, if any
    traced_as: str  # the trace's digest (compiler.trace_digest): what the module was made of


class Kernel:
    """One compiled signature: the generated module, its kernel, and how to call it."""

    def __init__(self, spec, fn, consts=(), traced=None, probes=(), conv=None, shapes=(),
                 traced_as=None):
        self.conv = conv or spec.conv  # without a spec: the trace's draft (no buffers yet)
        self.fn = fn
        self.consts = list(consts)  # arrays the trace captured, passed after the leaves
        # Their shapes and dtypes, which the kernel's code holds as the trace saw them.
        self.const_types = [(c.shape, c.dtype) for c in self.consts]
        self.traced = traced  # this process's trace of it (compiler.trace_function's)
        self.probes = list(probes)  # what the trace captured from outside (captures.py)
        # The array_shapes of the calls checked against the eager tape (crosscheck.py).
        self.checked = set()
        # The trace's digest; the array_shapes the kernel is known to be right at (its
        # trace's call's first); and whether it is right at every size its guards admit:
        # None until a call at other shapes finds out (compiler.right_for).
        self.traced_as = traced_as or spec.traced_as
        self.right_at, self.general = {shapes}, None
        self.spec = self.source = None
        if spec is not None:
            self.generated(spec)
        self.guards = self.conv.guards
        # The type of each rank-0 output whose value Numba returns as a Python number of
        # another type (a float for float32); float64's float is as good as np.float64.
        self.scalar_types = [dtype.type if not shape and dtype != np.float64 else None
                             for shape, dtype in self.conv.outs]
        self._call = None  # the call path's function running the form, bound to this kernel

    @property
    def program(self):
        """The optimized IR, where this process traced the kernel."""
        return self.traced and self.traced.program

    def generated(self, spec):
        """Sets the kernel's generated module (compiler.trace_kernel leaves it to later)."""
        self.conv = spec.conv
        self.source = spec.source
        self.buffers = spec.conv.buffers
        self.spec = spec  # last: tiered calls test it from other threads

    def arguments(self, leaves):
        """The kernel's inputs for a call with these leaves (their sizes, for the guards)."""
        args = [signature.kernel_value(leaves[i]) for i in self.conv.traced]
        args += [signature.kernel_value(_variable(v, leaves)) for v in self.conv.variables]
        return args + self.consts

    def variables(self, leaves):
        """The Variables a call with these leaves reads or assigns."""
        found = {id(v): v for v in (_variable(v, leaves)
                                    for v in self.conv.variables + self.conv.writes)}
        return list(found.values())

    def current(self):
        """Whether everything the trace captured from outside is as the trace saw it: its
        probes, and the captured arrays' shapes and dtypes (`a.shape = ...` reshapes an
        array in place)."""
        return all(probe.holds() for probe in self.probes) and \
            [(c.shape, c.dtype) for c in self.consts] == self.const_types

    def sizes(self, args):
        return [np.shape(args[i])[axis] for i, axis in self.conv.sizes]

    def admits(self, args):
        """Whether the sizes of these arguments satisfy every guard of the trace."""
        return signature.admits(self.guards, self.sizes(args))

    # ----- the general path (any call, keyword arguments too) -----
    def run(self, leaves):
        """What the kernel's form returns for a call with these argument leaves: the call
        path's generated function for it (codegen/callpath.py), run holding the locks of
        the Variables it assigns (tensor.Updating)."""
        if self._call is None:
            self._call = self._bound(callpath.function_name(self.spec.name, self.conv.form),
                                     self.fn)
        if not self.conv.writes:
            return self._call(*leaves)
        with Updating([_variable(v, leaves) for v in self.conv.writes]):
            return self._call(*leaves)

    def callable(self):
        """The kernel taking the leaves and Variable values and returning every output: its
        constants bound and its output arrays allocated by the generated wrapper, jitted."""
        fn = getattr(self.fn, "dispatcher", self.fn)
        if not self.consts and not self.buffers and not callpath.returns_one(self.conv):
            return fn  # it returns every output, as a tuple
        wrapper = self._bound(callpath.kernel_name(self.spec.name), fn)
        return backend.jit_function(wrapper) if fn is not self.fn else wrapper

    def _bound(self, name, kernel):
        """The generated module's function `name`, reading this kernel's own objects
        (callpath.bindings) and `kernel` as its kernel: the module is shared."""
        module = _module_of(self.fn)
        namespace = dict(vars(module), **callpath.bindings(self.conv, self.consts))
        namespace[self.spec.func_name] = kernel
        code = getattr(module, name).__code__
        return types.FunctionType(code, namespace, name)

    # ----- the warm path -----
    def entry(self, args, fallback, hits, keywords=True, check=False):
        """A generated entry for positional calls like `args`, a method of the
        Differentiable named for the kernel's form (which results it returns: "value",
        "grad" or "value_and_grad"). Calls it does not fit go to fallback(*args, **kwargs); each
        call it takes counts in `hits` (a Counter); `keywords`: whether the gradient forms
        take keywords; `check`: whether it passes on calls of shapes not in self.checked
        (codegen/entry.py)."""
        form = self.conv.form
        name = callpath.entry_name(self.spec.name, form)
        source, namespace = entry.emit(self.conv, self.consts, self.probes, name, args,
                                       numba_adapter.sole_reference_count(), keywords, check,
                                       exact=not self.general)
        spare = [np.empty((0,) * len(shape), dtype) for shape, dtype in self._buffer_outs()]
        direct = self.fn
        if isinstance(self.fn, backend.Compiled):
            leaves = tree_flatten(list(args))[0]
            arguments = self.arguments(leaves)
            captured = range(len(arguments) - len(self.consts), len(arguments))
            direct = self.fn.direct(arguments + spare, captured) or self.fn
        # Its own globals: the module's imports (runtime/calls.py), what is this kernel's
        # own, and __builtins__, where a Numba kernel that raises looks up the exception's
        # class (the frame calling it is the entry's).
        namespace.update({name: getattr(calls, name) for name in calls.__all__},
                         __builtins__=builtins, __srcxform_generated__=True,
                         np=np, fallback=fallback, hits=hits, direct=direct,
                         checked=self.fn, checked_shapes=self.checked)
        for b, array in enumerate(spare):  # globals: quicker to read than a list's items
            namespace[f"spare{b}"] = array, array.shape
        if dict(self.spec.entries).get(form) == source:  # the module's copy (its usual case)
            code = getattr(_module_of(self.fn), name).__code__
            return types.FunctionType(code, namespace, form, (NO,) * len(args))
        # Calls unlike the traced one, or probes this process added: compiled here.
        exec(backend.code(source), namespace)  # noqa: S102 - the entry generated above
        namespace[name].__name__ = form  # as the method is named (index.py describes it so)
        return namespace[name]

    def _buffer_outs(self):
        return [self.conv.outs[p] for p in self.buffers]


def _module_of(fn):
    """The generated module a kernel (compiled or not) was defined in."""
    return sys.modules[getattr(getattr(fn, "dispatcher", None), "py_func", fn).__module__]


def array_shapes(leaves):
    """The shapes of a call's arrays of rank 1 or more, in order: what tells apart the calls
    one kernel takes (the rest of a leaf is the kernel's signature)."""
    arrays = (leaf._array if eager_tensor(leaf) or isinstance(leaf, Variable) else leaf for leaf in leaves)
    return tuple(a.shape for a in arrays if isinstance(a, np.ndarray) and a.ndim)


def _variable(source, leaves):
    return leaves[source] if isinstance(source, int) else source


def method_recipe(descriptor, obj):
    """What makes a compiled method bound to obj again in another process: the descriptor
    looked up in the class that holds it and bound to obj (bound_method). Not the bound
    function: a method pickles as getattr(obj, name), which binds the compiled method
    anew, wrapping one more round it at each round trip (helper 122); nor obj's attribute
    of that name, which a subclass may override (super()'s copy was the override's:
    helper 126). None where obj's class does not hold it."""
    for owner in type(obj).__mro__:
        for name, value in vars(owner).items():
            if value is descriptor:
                return bound_method, (owner, name, obj)
    return None


def bound_method(owner, name, obj):
    """owner's attribute `name` bound to obj, as obj.name binds it where owner's is found."""
    return vars(owner)[name].__get__(obj, type(obj))


class PerInstance:
    """What a method decorated in a class body keeps for each instance, by the instance's
    id: a dataclass's instances do not hash (their __eq__), and a class with __slots__
    may not take weak references. The compiled method holds its instance, so both live
    as long as the decorated function (as with functools.lru_cache on a method)."""

    def __init__(self):
        self._by_id = {}

    def get(self, obj, make):
        found = self._by_id.get(id(obj))
        if found is None:
            found = self._by_id[id(obj)] = (obj, make())
        return found[1]
