"""The compiled face: `differentiable` and the JAX-like function forms.

A Differentiable traces its function once per signature (array ndim, dtype and which
dims are 1, plus static values), optimizes the IR, generates one Python function and
compiles it; a warm call is: flatten, one lookup, one kernel call, unflatten.
"""

import functools
import inspect
import os
from collections import namedtuple

import numpy as np

from srcxform import backend, recording
from srcxform.codegen import generate
from srcxform.errors import TracingError
from srcxform.names import identifier
from srcxform.passes.pipeline import optimize
from srcxform.tape import GradientTape
from srcxform.tensor import Tensor, Value, Variable
from srcxform.trace import Trace, Tracer
from srcxform.tree import tree_flatten, tree_unflatten

CacheInfo = namedtuple("CacheInfo", "hits misses kernels")

_STATIC = (bool, int, str, type(None))


def _is_static(leaf):
    return isinstance(leaf, _STATIC) and not isinstance(leaf, np.generic)


def _signature(leaf):
    """The part of the cache key one argument leaf contributes."""
    if isinstance(leaf, (Tensor, Variable)):
        leaf = leaf._value
    if isinstance(leaf, np.ndarray):
        return (leaf.ndim, leaf.dtype.char, tuple(d == 1 for d in leaf.shape))
    if isinstance(leaf, np.generic):
        return ("scalar", leaf.dtype.char)
    if isinstance(leaf, float):
        return "float"
    if _is_static(leaf):
        return ("static", type(leaf), leaf)
    raise TypeError(f"srcxform.differentiable: cannot pass a {type(leaf).__name__} "
                    "(arrays, tensors, Variables, floats, and static ints, bools, strings "
                    "and None are accepted, in tuples, lists and dicts)")


def _kernel_arg(leaf):
    """A traced leaf as the kernel receives it: arrays, with 0-d ones as scalars."""
    if isinstance(leaf, (Tensor, Variable)):
        leaf = leaf._value
    if isinstance(leaf, np.ndarray) and leaf.ndim == 0:
        return leaf[()]
    return leaf


class Kernel:
    """One compiled signature: the generated function and how to call it."""

    def __init__(self, fn, program, source, traced, variables, out_trees, writes, guards):
        self.fn = fn
        self.program = program
        self.source = source
        self.traced = traced  # indices of the leaves the kernel takes, in order
        self.variables = variables  # Variables read, passed after the leaves
        self.consts = [array for _, array in program.consts]
        self.out_trees = out_trees  # treedefs of the results, in output order
        self.writes = writes  # Variables assigned, whose new values come last
        self.guards = guards
        self.scalar_types = [a.aval.dtype.type if not a.aval.shape else None
                             for a in program.outs]

    def arguments(self, leaves):
        args = [_kernel_arg(leaves[i]) for i in self.traced]
        args += [v._value if v.ndim else v._value[()] for v in self.variables]
        return args + self.consts

    def callable(self):
        """The kernel with its constants bound, taking the leaves and Variable values."""
        fn = getattr(self.fn, "dispatcher", self.fn)
        if not self.consts:
            return fn
        names = [f"a{i}" for i in range(len(self.program.ins) - len(self.consts))]
        consts = {f"c{i}": c for i, c in enumerate(self.consts)}
        source = (f"def kernel({', '.join(names)}):\n"
                  f"    return inner({', '.join(names + list(consts))})\n")
        namespace = dict(consts, inner=fn)
        exec(source, namespace)
        return backend.jit_function(namespace["kernel"]) if fn is not self.fn else \
            namespace["kernel"]

    def admits(self, args):
        """Whether the sizes of these arguments satisfy every guard of the trace."""
        from srcxform.dims import evaluate

        sizes = [np.shape(args[i])[axis] for i, axis in self.program.sizes]
        ops = {"==": int.__eq__, "!=": int.__ne__, "<": int.__lt__, "<=": int.__le__,
               ">": int.__gt__, ">=": int.__ge__}
        return all(ops[op](evaluate(a, sizes), evaluate(b, sizes)) == result
                   for a, op, b, result in self.guards)

    def run(self, args):
        results = self.fn(*args)
        results = [t(r) if t is not None else r for t, r in zip(self.scalar_types, results)]
        for variable, value in zip(self.writes, results[len(results) - len(self.writes):]):
            variable._value = np.asarray(value, variable.dtype).reshape(variable.shape)
        structures, start = [], 0
        for tree in self.out_trees:
            structures.append(tree_unflatten(tree, results[start:start + tree.num_leaves]))
            start += tree.num_leaves
        return structures


class Differentiable:
    """A function compiled with its gradient. See `differentiable`."""

    def __init__(self, fn, wrt=0, parallel=False):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.wrt = wrt
        self.parallel = parallel
        self._kernels = {}
        self._hits = self._misses = 0

    def __repr__(self):
        return f"<srcxform.differentiable {getattr(self.fn, '__qualname__', self.fn)}>"

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    # ----- public calls -----
    def __call__(self, *args, **kwargs):
        if _inline(args, kwargs):
            return self.fn(*args, **kwargs)
        return self._run("value", args, kwargs)[0]

    def value_and_grad(self, *args, **kwargs):
        """(value, gradient) of the function at args; the gradient is as `grad` gives it."""
        if _inline(args, kwargs):
            return self._eager_value_and_grad(args, kwargs)
        value, grads = self._run("value_and_grad", args, kwargs)
        return value, self._shape_grads(grads)

    def grad(self, *args, **kwargs):
        """The gradient wrt `wrt`: one structure for an int wrt, a tuple for a tuple wrt."""
        return self.value_and_grad(*args, **kwargs)[1]

    def source(self, *args, **kwargs):
        """The generated fused forward-and-adjoint source for these arguments, as text."""
        return self._kernel("value_and_grad", args, kwargs)[0].source

    def ir(self, *args, **kwargs):
        """The printed IR (forward and adjoint, after optimization) for these arguments."""
        return str(self._kernel("value_and_grad", args, kwargs)[0].program)

    def kernel(self, *args, **kwargs):
        """The compiled value-and-gradient for arguments like these, as a Numba function
        you can call from your own `@njit` code.

        It takes the array arguments flattened (nested structures in sorted-key order,
        static arguments left out), then the values of any Variables the function reads,
        and returns a tuple: the value's leaves, the gradient's leaves, then the new values
        of any Variables the function assigns.
        """
        return self._kernel("value_and_grad", args, kwargs)[0].callable()

    def cache_info(self):
        """CacheInfo(hits, misses, kernels), as functools.lru_cache reports."""
        return CacheInfo(self._hits, self._misses, sum(len(v) for v in self._kernels.values()))

    # ----- compiling and running -----
    def _wrt_positions(self):
        return (self.wrt,) if isinstance(self.wrt, int) else tuple(self.wrt)

    def _shape_grads(self, grads):
        return grads[0] if isinstance(self.wrt, int) else tuple(grads)

    def _run(self, mode, args, kwargs):
        kernel, leaves = self._kernel(mode, args, kwargs)
        return kernel.run(kernel.arguments(leaves))

    def _kernel(self, mode, args, kwargs):
        leaves, treedef = tree_flatten((args, kwargs))
        key = (mode, treedef, tuple(_signature(leaf) for leaf in leaves))
        candidates = self._kernels.get(key, ())
        for kernel in candidates:
            if not kernel.guards or kernel.admits(kernel.arguments(leaves)):
                self._hits += 1
                return kernel, leaves
        self._misses += 1
        kernel = self._compile(mode, args, kwargs, leaves)
        self._kernels.setdefault(key, []).append(kernel)
        return kernel, leaves

    def _compile(self, mode, args, kwargs, leaves):
        name = identifier(getattr(self.fn, "__name__", "f"))
        trace = Trace(name)
        names = _leaf_names(self.fn, args, kwargs)
        traced = [i for i, leaf in enumerate(leaves) if not _is_static(leaf)
                  and not isinstance(leaf, Variable)]
        with trace:
            inputs = {i: trace.new_input(_kernel_arg(leaves[i]), names[i]) for i in traced}
            call_leaves = [inputs.get(i, leaf) for i, leaf in enumerate(leaves)]
            call_args, call_kwargs = tree_unflatten(tree_flatten((args, kwargs))[1], call_leaves)
            if mode == "value":
                out = self.fn(*call_args, **call_kwargs)
                results = [out]
            else:
                out, grads = _traced_value_and_grad(self.fn, call_args, call_kwargs,
                                                    self._wrt_positions())
                results = [out, grads]
            writes = trace.variable_writes()
        flat, trees = [], []
        for result in results:
            result_leaves, tree = tree_flatten(result)
            flat += result_leaves
            trees.append(tree)
        program = trace.program(flat + [value for _, value in writes])
        if os.environ.get("SRCXFORM_CHECK"):
            program.check()
        program = optimize(program, check=bool(os.environ.get("SRCXFORM_CHECK")))
        func_name = f"{name}__{mode}"
        doc = f"srcxform: {name}({', '.join(a.aval.short() for a in program.ins)}) -> {mode}"
        source = generate(program, func_name, doc, parallel=self.parallel)
        if "source" in os.environ.get("SRCXFORM_DUMP", ""):
            print(source)
        fn = backend.load(source, func_name, parallel=self.parallel)
        variables = [v for v, _ in sorted(trace.variable_inputs(), key=lambda p: p[1])]
        return Kernel(fn, program, source, traced, variables, trees, [v for v, _ in writes],
                      _relevant_guards(trace.guards))

    def _eager_value_and_grad(self, args, kwargs):
        value, grads = _traced_value_and_grad(self.fn, args, kwargs, self._wrt_positions())
        return value, self._shape_grads(grads)


def _traced_value_and_grad(fn, args, kwargs, positions):
    """Runs fn under a tape watching the args at `positions`; unconnected gradients are
    zeros, as JAX gives. Works on Tracers (emitting the adjoint) and on Tensors."""
    for p in positions:
        if p >= len(args):
            raise TypeError(f"wrt={p}, but the function got {len(args)} positional arguments")
    sources = []
    with GradientTape(persistent=False, watch_accessed_variables=False) as tape:
        for p in positions:
            leaves, tree = tree_flatten(args[p])
            leaves = [leaf if isinstance(leaf, Value) else Tensor(np.asarray(leaf))
                      for leaf in leaves]
            sources.append((leaves, tree))
            tape.watch([leaf for leaf in leaves if leaf.dtype.kind == "f"])
        call_args = list(args)
        for p, (leaves, tree) in zip(positions, sources):
            call_args[p] = tree_unflatten(tree, leaves)
        out = fn(*call_args, **kwargs)
    grads = []
    for leaves, tree in sources:
        found = [g if g is not None else _zeros_like(leaf)
                 for g, leaf in zip(tape._gradient_leaves(out, leaves, None), leaves)]
        for g, leaf in zip(found, leaves):
            if recording.TRACES:
                recording.TRACES[-1].name_gradient(g, leaf)
        grads.append(tree_unflatten(tree, found))
    return out, grads


def _zeros_like(leaf):
    from srcxform.ops import zeros_like

    return zeros_like(leaf)


def _inline(args, kwargs):
    """Whether to run the Python function itself: when called on values being traced
    (composition: differentiable(f.grad)) or under a recording tape (so it records)."""
    leaves = tree_flatten((args, kwargs))[0]
    if any(isinstance(leaf, Tracer) for leaf in leaves):
        return True
    return bool(recording.TRACES) or any(t._recording for t in recording.ACTIVE)


def _relevant_guards(guards):
    """The trace's guards less those every call with this signature satisfies (a dim
    that is not 1 is not 1), without repeats."""
    kept = []
    for guard in guards:
        a, op, b, result = guard
        implied = isinstance(a, tuple) and a[0] == "size" and b == 1 and op in ("==", "!=")
        if not implied and guard not in kept:
            kept.append(guard)
    return kept


def _leaf_names(fn, args, kwargs):
    """A readable name for each argument leaf: the parameter name, with the path into
    nested structures (params['w'] -> params_w)."""
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []
    names = []

    def walk(value, name):
        if isinstance(value, dict):
            for k in sorted(value):
                walk(value[k], f"{name}_{k}")
        elif isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
            for i, v in enumerate(value):
                walk(v, f"{name}_{i}")
        else:
            names.append(name)

    for i, arg in enumerate(args):
        walk(arg, params[i] if i < len(params) else f"arg{i}")
    for k in sorted(kwargs):
        walk(kwargs[k], k)
    return names


# ----- public forms -----


def differentiable(fn=None, *, wrt=0, parallel=False):
    """Compiles fn with its gradient; use as `@differentiable` or `differentiable(f, wrt=1)`.

    Example:
        >>> @srcxform.differentiable
        ... def loss(w, x):
        ...     return srcxform.reduce_sum(srcxform.tanh(x * w))
        >>> loss.grad(np.ones(3), np.arange(3.0))
    """
    if fn is None:
        return lambda f: Differentiable(f, wrt, parallel)
    if isinstance(wrt, bool) or not isinstance(wrt, (int, tuple, list)):
        raise TypeError(f"differentiable: wrt must be an int or a tuple of ints, got {wrt!r}")
    return Differentiable(fn, wrt, parallel)


def grad(fn, wrt=0):
    """The compiled gradient function of fn (JAX's grad)."""
    return differentiable(fn, wrt=wrt).grad


def value_and_grad(fn, wrt=0):
    """The compiled (value, gradient) function of fn (JAX's value_and_grad)."""
    return differentiable(fn, wrt=wrt).value_and_grad


def jacobian(fn, wrt=0):
    """The compiled jacobian function of fn: shape out.shape + arg.shape (JAX's jacrev)."""

    def jac(*args):
        positions = (wrt,) if isinstance(wrt, int) else tuple(wrt)
        with GradientTape(persistent=True, watch_accessed_variables=False) as tape:
            sources = [args[p] for p in positions]
            for s in sources:
                tape.watch(s)
            out = fn(*args)
        result = tape.jacobian(out, sources, unconnected_gradients="zero")
        return result[0] if isinstance(wrt, int) else tuple(result)

    jac.__name__ = f"jacobian_of_{getattr(fn, '__name__', 'f')}"
    return differentiable(jac)


def hessian(fn, wrt=0):
    """The compiled hessian function of fn: the jacobian of its gradient."""
    return jacobian(grad(fn, wrt=wrt), wrt=wrt)


__all__ = ["differentiable", "grad", "value_and_grad", "jacobian", "hessian", "TracingError"]
