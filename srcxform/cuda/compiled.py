"""A function and its gradient compiled for a GPU: traced, differentiated and optimized as
the CPU kernel is (jit/compiler.py), then lowered to CUDA kernels (lower.py) and run
through numba-cuda, one compiled module per signature.

Arguments: NumPy arrays (each copied to the device at every call: one host-to-device
transfer of its bytes), arrays with __cuda_array_interface__ (CuPy, PyTorch, numba's own;
used where they are, no copy), Python floats and NumPy scalars (8 bytes each), static
ints, strings and None, in tuples, lists and dicts. Results: device arrays when any
argument was one, else NumPy arrays (copied back); a scalar result is copied back as a
NumPy scalar either way. Variables (arguments or captured: a model's, an optimizer's) are
copied to the device at each call, and those assigned copied back.
"""

import functools
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from srcxform.passes.structured import unrolling
from srcxform.core.dims import evaluate
from srcxform.core.errors import CompileError, source_text
from srcxform.core.signature import static_key
from srcxform.core.tensor import Updating, Variable, eager_tensor
from srcxform.core.tree import tree_flatten, tree_unflatten
from srcxform.cuda.lower import generate
from srcxform.jit import backend, compiler
from srcxform.jit.kernel import PerInstance, array_shapes, method_recipe

FORMS = ("value", "grad", "value_and_grad")


class CudaDifferentiable:
    """fn compiled to CUDA kernels: `f(*args)`, `f.grad(*args)`, `f.value_and_grad(*args)`
    as srcxform.differentiable's, and `f.source(*args)`, the generated CUDA module."""

    def __init__(self, fn: Callable, wrt: int | tuple = 0, has_aux: bool = False,
                 convert: Callable | None = None):
        """`convert(fn)`: fn as tracing runs it (autograph's), made at the first call."""
        self.fn, self.wrt, self.has_aux = fn, wrt, has_aux
        self._convert, self._python = convert, None
        self._kernels = {}  # signature key: [_Kernel, ...], one per set of guards
        self._lock = threading.RLock()
        self._bound = PerInstance()  # as the CPU's: a dataclass's instance does not hash
        self._method = None  # a bound method's recipe (jit/kernel.py's method_recipe)

    def __get__(self, obj, objtype=None):
        """A method decorated in a class body: each instance gets its own compiled method
        (the instance is not an argument a kernel could take), as on the CPU."""
        if obj is None:
            return self

        def make():
            bound = CudaDifferentiable(self.fn.__get__(obj, objtype), self.wrt, self.has_aux,
                                       self._convert)
            bound._method = method_recipe(self, obj)
            return bound

        return self._bound.get(obj, make)

    def __repr__(self):
        return f"<srcxform.differentiable {getattr(self.fn, '__qualname__', self.fn)} on CUDA>"

    def __reduce__(self):  # its kernels are this process's: a copy traces its own
        return self._method or \
            (CudaDifferentiable, (self.fn, self.wrt, self.has_aux, self._convert))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._run("value", args, kwargs)

    def grad(self, *args: Any, **kwargs: Any) -> Any:
        return self._run("grad", args, kwargs)

    def value_and_grad(self, *args: Any, **kwargs: Any) -> tuple:
        return self._run("value_and_grad", args, kwargs)

    def source(self, *args: Any, form: str = "value_and_grad", **kwargs: Any) -> str:
        """The generated CUDA module (kernels and host driver) for these arguments."""
        return self._kernel(form, args, kwargs)[0].source

    def ptx(self, *args, form="value_and_grad", cc=(8, 0), **kwargs):
        """{kernel name: its PTX} for these arguments, compiled for compute capability `cc`
        with no GPU needed (numba-cuda's compile_ptx, which needs NVVM: the packages
        nvidia-nvvm and nvidia-cuda-nvrtc). Not under the simulator, which compiles
        nothing. What a real GPU would compile, checked where there is none."""
        from numba import cuda

        kernel = self._kernel(form, args, kwargs)[0]
        module = sys.modules[kernel.driver.__module__]
        found = {}
        for name, types in kernel.signatures.items():
            fn = getattr(module, name).py_func
            found[name] = cuda.compile_ptx(fn, f"({', '.join(types)},)", cc=cc)[0]
        return found

    def _traced_fn(self):
        """fn as tracing runs it (its control flow converted), made at the first call."""
        with self._lock:
            if self._python is None:
                self._python = self._convert(self.fn) if self._convert else self.fn
            return self._python

    def _run(self, form, args, kwargs):
        if compiler.inline_here():  # under a tape or a trace: its Python, as the CPU's
            return compiler.inline(self._traced_fn(), self.wrt, self.has_aux, form, args,
                                   kwargs)
        kernel, leaves = self._kernel(form, args, kwargs)
        return kernel.run(leaves)

    def _kernel(self, form, args, kwargs):
        leaves, treedef = tree_flatten((args, kwargs))
        key = (form, treedef, tuple(_leaf_key(leaf) for leaf in leaves))
        stand_ins = [_stand_in(leaf) for leaf in leaves]
        with self._lock:
            python = self._traced_fn()

            @functools.cache
            def trace():  # at most once a call: it runs the function's Python
                return _trace(python, self.wrt, self.has_aux, form, args, kwargs,
                              stand_ins)

            # A kernel whose trace captured what has changed since (a global rebound, a
            # Variable replaced, a learning rate set: captures.py) is traced again.
            candidates = [kernel for kernel in self._kernels.get(key, ())
                          if all(probe.holds() for probe in kernel.probes)]
            self._kernels[key] = candidates
            shapes = array_shapes(stand_ins)
            for kernel in candidates:
                if kernel.admits(leaves) and compiler.right_for(kernel, shapes, trace):
                    return kernel, leaves
            kernel = _Kernel(trace(), self.wrt, self.has_aux, form, shapes)
            kernel.probes = kernel.traced.probes
            candidates.append(kernel)
            return kernel, leaves


def _trace(fn, wrt, has_aux, form, args, kwargs, stand_ins):
    """fn traced on the arguments as their stand-ins (_stand_in)."""
    call_args, call_kwargs = tree_unflatten(tree_flatten((args, kwargs))[1], stand_ins)
    # A fori_loop over Python ints unrolls into the nests around it: a structured loop
    # runs on the host here, launching its body's kernels at each trip.
    with unrolling():
        return compiler.trace_function(fn, wrt, form, call_args, call_kwargs, stand_ins,
                                       has_aux)


class _Kernel:
    """One signature: its traced program, its generated module and its driver."""

    def __init__(self, traced, wrt, has_aux, form, shapes):
        self.form, self.traced, self.program = form, traced, traced.program
        self.single, self.has_aux = isinstance(wrt, int), has_aux
        # What compiler.right_for compares a trace at other shapes with.
        self.traced_as, self.consts = compiler.trace_digest(traced), [a for _, a in
                                                                      self.program.consts]
        self.right_at, self.general = {shapes}, None
        func_name = f"{traced.name}__{form}_cuda"
        ins = ", ".join(a.aval.short(symbolic=True) for a in self.program.ins)
        doc = source_text(f"srcxform: {traced.name}({ins}) -> {form} on CUDA; "
                          f"{len(self.program.eqns)} equations", quote='"')
        self.source, self.signatures = generate(self.program, func_name, doc)
        self.driver = backend.load(self.source, func_name, jit=False)
        self.local = threading.local()  # each thread's launch.Buffers

    def admits(self, leaves):
        """Whether these arguments' sizes satisfy the trace's guards."""
        if not self.traced.guards:
            return True
        shapes = [np.shape(_array(value)) for value in self.inputs(leaves)]
        shapes += [np.shape(a) for _, a in self.program.consts]
        sizes = [shapes[i][axis] for i, axis in self.program.sizes]
        holds = {">=": lambda v: v >= 0, "==": lambda v: v == 0, "!=": lambda v: v != 0}
        return all(holds[op](evaluate(expr, sizes)) for expr, op in self.traced.guards)

    def inputs(self, leaves):
        """The traced argument leaves, then the Variables the function reads."""
        return [leaves[i] for i in self.traced.leaves] + \
            [leaves[v] if isinstance(v, int) else v for v in self.traced.variables]

    def run(self, leaves):
        """The form's results; the Variables the function assigns take their new values
        (copied to the host: a Variable lives there), each locked as on the CPU."""
        from numba.core.errors import NumbaError

        from srcxform.cuda import launch

        writes = [leaves[v] if isinstance(v, int) else v for v in self.traced.writes]
        with Updating(writes):  # the Variables read under their locks too, as on the CPU
            args = [launch.to_device(_array(value), var.aval.dtype)
                    for value, var in zip(self.inputs(leaves), self.program.ins)]
            # Captured arrays too, at every call: one changed in place is read as the CPU
            # kernel reads it (a copy made once kept its first values).
            consts = [launch.to_device(a, a.dtype) for _, a in self.program.consts]
            try:
                outs = self.driver(*args, *consts, self.buffers())
            except NumbaError as err:
                raise CompileError(f"srcxform.cuda: numba-cuda could not compile a kernel of "
                                   f"{self.traced.name} (see f.source(..., device='cuda')): "
                                   f"{err}") from err
            for variable, new in zip(writes, outs[len(outs) - len(writes):]):
                variable.assign(launch.to_host(new).reshape(variable.shape))
        device = any(_on_device(leaves[i]) for i in self.traced.leaves)
        return self._structured([self._returned(how, outs, leaves, device)
                                 for how in self.traced.returns])

    def buffers(self):
        """This thread's intermediate device arrays: a call at once in another thread
        must not write them (a lock would serialize the calls instead)."""
        found = getattr(self.local, "buffers", None)
        if found is None:
            from srcxform.cuda import launch

            found = self.local.buffers = launch.Buffers()
        return found

    def _returned(self, how, outs, leaves, device):
        """One result leaf: an argument, a value the trace fixed, or a kernel output (a
        scalar's 1-element array copied back as a NumPy scalar)."""
        if how[0] == "arg":
            return leaves[how[1]]
        if how[0] == "const":
            return how[1]
        from srcxform.cuda import launch

        out = outs[how[1]]
        if not self.program.outs[how[1]].aval.shape:
            return launch.to_host(out)[0]
        return out if device else launch.to_host(out)

    def _structured(self, results):
        """The results in the structures the function returned, as the CPU kernel's."""
        trees = self.traced.trees
        n = trees[0].num_leaves
        value = tree_unflatten(trees[0], results[:n])
        if self.form == "value":
            return value
        grads = tree_unflatten(trees[1], results[n:])
        grads = grads[0] if self.single else tuple(grads)
        if self.form == "grad":
            return (grads, value) if self.has_aux else grads
        return value, grads


def _array(leaf):
    return leaf._array if eager_tensor(leaf) or isinstance(leaf, Variable) else leaf


def _on_device(leaf):
    """Whether an argument leaf is a device array (numba-cuda is asked only of a value
    that is not one of the host's)."""
    if eager_tensor(leaf) or isinstance(leaf, (np.ndarray, np.generic, Variable, int, float, str)) or \
            leaf is None:
        return False
    from srcxform.cuda import launch

    return launch.on_device(leaf)


def _stand_in(leaf):
    """What tracing sees of a device array: a NumPy array of its shape and dtype that
    holds one element (zero strides), so no data crosses to the host."""
    if not _on_device(leaf):
        return leaf
    return np.lib.stride_tricks.as_strided(np.zeros(1, np.dtype(leaf.dtype)), leaf.shape,
                                           (0,) * len(leaf.shape))


def _leaf_key(leaf):
    """The part of the cache key one argument leaf gives: as the CPU kernel's (api.py),
    a device array's as a NumPy array's of its shape and dtype."""
    leaf = _array(leaf)
    if isinstance(leaf, np.ndarray) or _on_device(leaf):
        shape, dtype = tuple(leaf.shape), np.dtype(leaf.dtype)
        return (len(shape), dtype.char, tuple(d == 1 for d in shape))
    if isinstance(leaf, np.generic):
        return ("scalar", leaf.dtype.char)
    if isinstance(leaf, float):
        return "float"
    return static_key(leaf)
