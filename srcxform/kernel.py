"""One compiled signature: the generated function, its calling convention, and the warm
entry that calls it.

The entry is a small Python function generated for the kernel: it checks that the
arguments still fit the signature (types, ranks, dtypes, which dims are 1, guards),
unpacks them, makes the one kernel call and shapes the results. It answers MISS when the
arguments do not fit, and the caller then takes the slow path (flatten, look up, trace).
"""

import numpy as np

from srcxform import backend
from srcxform.dims import evaluate, render
from srcxform.tensor import Tensor, Variable
from srcxform.tree import tree_flatten, tree_unflatten

MISS = object()


def kernel_arg(leaf):
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
        # Variables read (passed after the leaves) and assigned (their new values come
        # last): each a leaf index (a Variable argument) or the captured Variable itself.
        self.variables = variables
        self.consts = [array for _, array in program.consts]
        self.out_trees = out_trees  # treedefs of the results, in output order
        self.writes = writes
        self.guards = guards
        self.scalar_types = [a.aval.dtype.type if not a.aval.shape else None
                             for a in program.outs]
        self.entries = {}

    # ----- the general path (any call, keyword arguments too) -----
    def arguments(self, leaves):
        args = [kernel_arg(leaves[i]) for i in self.traced]
        args += [kernel_arg(_variable(v, leaves)) for v in self.variables]
        return args + self.consts

    def admits(self, args):
        """Whether the sizes of these arguments satisfy every guard of the trace."""
        sizes = [np.shape(args[i])[axis] for i, axis in self.program.sizes]
        holds = {">=": lambda v: v >= 0, "==": lambda v: v == 0, "!=": lambda v: v != 0}
        return all(holds[op](evaluate(expr, sizes)) for expr, op in self.guards)

    def run(self, args, leaves):
        results = self.fn(*args)
        results = [t(r) if t is not None else r for t, r in zip(self.scalar_types, results)]
        for v, value in zip(self.writes, results[len(results) - len(self.writes):]):
            variable = _variable(v, leaves)
            variable._value = np.asarray(value, variable.dtype).reshape(variable.shape)
        structures, start = [], 0
        for tree in self.out_trees:
            structures.append(tree_unflatten(tree, results[start:start + tree.num_leaves]))
            start += tree.num_leaves
        return structures

    # ----- the warm path -----
    def entry(self, form, args):
        """The generated entry for positional calls like `args`; `form` says which results
        it returns: "value", "grad" or "value_and_grad" (with `wrt` an int or a tuple)."""
        if form not in self.entries:
            self.entries[form] = _build_entry(self, form, args)
        return self.entries[form]

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


def _variable(source, leaves):
    return leaves[source] if isinstance(source, int) else source


class _EntryWriter:
    """Builds the source of one entry function."""

    def __init__(self):
        self.unpack, self.checks, self.names, self.constants = [], [], [], {}

    def constant(self, value):
        name = f"k{len(self.constants)}"
        self.constants[name] = value
        return name

    def leaves(self, value, expr):
        """Unpacks the leaves of an argument like `value` found at `expr`, in the order
        tree_flatten visits them, checking the containers on the way."""
        if isinstance(value, dict):
            self.unpack.append(f"if type({expr}) is not dict or len({expr}) != {len(value)}: "
                               "return MISS")
            for k in sorted(value):
                self.leaves(value[k], f"{expr}[{k!r}]")
        elif isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
            kind = type(value).__name__
            self.unpack.append(f"if type({expr}) is not {kind} or len({expr}) != {len(value)}: "
                               "return MISS")
            for i, v in enumerate(value):
                self.leaves(v, f"{expr}[{i}]")
        else:
            name = f"x{len(self.names)}"
            self.unpack.append(f"{name} = {expr}")
            self.names.append(name)
            self.check(name, value)

    def check(self, name, leaf):
        """The test that a later leaf has the kind, dtype and 1-dims this one had."""
        if isinstance(leaf, (bool, int, str, type(None))) and not isinstance(leaf, np.generic):
            self.checks.append(f"type({name}) is not {self.constant(type(leaf))} or "
                               f"{name} != {self.constant(leaf)}")
            return
        array = leaf._value if isinstance(leaf, (Tensor, Variable)) else leaf
        tests = [f"type({name}) is not {self.constant(type(leaf))}"]
        if isinstance(leaf, Tensor):
            tests.append(f"{name}._weak")
        if isinstance(array, np.ndarray) or isinstance(leaf, (Tensor, Variable)):
            value = f"{name}._value" if isinstance(leaf, (Tensor, Variable)) else name
            tests += [f"{value}.ndim != {array.ndim}",
                      f"{value}.dtype.num != {array.dtype.num}"]
            tests += [f"{value}.shape[{a}] {'!=' if d == 1 else '=='} 1"
                      for a, d in enumerate(array.shape)]
        self.checks.append(" or ".join(tests))


def _arg_expr(name, leaf):
    """How the kernel receives a leaf held in `name`."""
    if isinstance(leaf, (Tensor, Variable)):
        name = f"{name}._value"
        leaf = leaf._value
    return f"{name}[()]" if isinstance(leaf, np.ndarray) and leaf.ndim == 0 else name


def _build_entry(kernel, form, args):
    w = _EntryWriter()
    for i, arg in enumerate(args):
        w.leaves(arg, f"a{i}")
    leaves = tree_flatten(list(args))[0]
    kernel_args = [_arg_expr(w.names[i], leaves[i]) for i in kernel.traced]

    def bound(source):
        """The name holding a Variable, and the Variable as this call sees it."""
        if isinstance(source, int):
            return w.names[source], leaves[source]
        return w.constant(source), source

    for source in kernel.variables:
        v, variable = bound(source)
        kernel_args.append(f"{v}._value" if variable.ndim else f"{v}._value[()]")
    kernel_args += [w.constant(c) for c in kernel.consts]
    sizes, guards = {}, []
    for expr, op in kernel.guards:
        def size(k):
            index, axis = kernel.program.sizes[k]
            sizes[k] = f"n{k} = {kernel_args[index]}.shape[{axis}]"
            return f"n{k}"

        fails = {">=": "<", "==": "!=", "!=": "=="}[op]
        guards.append(f"{render(expr, size)} {fails} 0")
    results = [f"r[{i}]" if t is None or t is np.float64 else f"{w.constant(t)}(r[{i}])"
               for i, t in enumerate(kernel.scalar_types)]
    writes = []
    start = len(results) - len(kernel.writes)
    for j, source in enumerate(kernel.writes):
        v, variable = bound(source)
        value = results[start + j]
        writes.append(f"{v}._value = {value}" if variable.ndim
                      else f"{v}._value = np.asarray({value}, {w.constant(variable.dtype)})")
    value = _render_tree(kernel.out_trees[0], results)
    grads, offset = [], kernel.out_trees[0].num_leaves
    for child in kernel.out_trees[1].children if len(kernel.out_trees) > 1 else ():
        grads.append(_render_tree(child, results[offset:offset + child.num_leaves]))
        offset += child.num_leaves
    body = ["def entry(" + ", ".join(f"a{i}" for i in range(len(args))) + "):"]
    if any("[" in line for line in w.unpack):  # unpacking containers can fail
        body += ["    try:"] + [f"        {line}" for line in w.unpack]
        body += ["    except (KeyError, IndexError, TypeError):", "        return MISS"]
    else:
        body += [f"    {line}" for line in w.unpack]
    body += [f"    if {test}: return MISS" for test in w.checks]
    body += [f"    {line}" for _, line in sorted(sizes.items())]
    body += [f"    if {test}: return MISS" for test in guards]
    body.append(f"    r = kernel({', '.join(kernel_args)})")
    body += [f"    {line}" for line in writes]
    body.append(f"    return {_result(form, value, grads)}")
    namespace = dict(w.constants, MISS=MISS, np=np, kernel=kernel.fn)
    exec("\n".join(body), namespace)
    return namespace["entry"]


def _result(form, value, grads):
    """The entry's return expression: the value, the gradient, or both; a gradient wrt
    one argument is that argument's structure, wrt several a tuple of them."""
    kind, single = form
    if kind == "value":
        return value
    grad = grads[0] if single else "(" + ", ".join(grads) + ("," if len(grads) == 1 else "") + ")"
    return grad if kind == "grad" else f"({value}, {grad})"


def _render_tree(tree, leaves):
    """Python source building the structure `tree` from leaf expressions."""
    it = iter(leaves)

    def build(t):
        if t.kind is None:
            return next(it)
        parts = [build(c) for c in t.children]
        if t.kind is dict:
            by_key = dict(zip(t.keys, parts))
            return "{" + ", ".join(f"{k!r}: {by_key[k]}" for k in t.order) + "}"
        if t.kind is list:
            return "[" + ", ".join(parts) + "]"
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"

    return build(tree)
