"""One compiled signature: the generated function, its calling convention, and the warm
entry that calls it.

The entry is a small Python function generated for the kernel: it checks that what the
trace captured from outside is unchanged (captures.py) and that the arguments still fit
the signature (types, ranks, dtypes, which dims are 1, guards),
unpacks them, finds the output arrays the kernel fills (those it returned last call when
nothing else holds them, else new ones), makes the one kernel call and shapes the
results: for the plain call, as the function returns them eagerly (Tensors where its
srcxform ops make Tensors, NumPy's values where NumPy's operators do; see Spec.returns). The call goes straight into the compiled code when each array is laid out as
Numba typed the first call's (C-contiguous, aligned, writeable), and through Numba's
dispatcher otherwise. A call it does not fit goes on to its fallback: the entry made before
it, and in the end the slow path (flatten, look up, trace).
"""

import sys
from dataclasses import dataclass

import numpy as np

from srcxform import backend, captures, numba_adapter
from srcxform.dims import evaluate, expr_of, render
from srcxform.recording import CONTEXT, OPEN_ANYWHERE
from srcxform.tensor import Tensor, Variable
from srcxform.tree import tree_flatten, tree_unflatten


class Counter:
    """A count the warm path adds to: an attribute of an object with slots is quicker
    to update than one in an instance's dict."""

    __slots__ = ("n",)

    def __init__(self):
        self.n = 0


def kernel_arg(leaf):
    """A traced leaf as the kernel receives it: arrays in native byte order, with 0-d ones
    as scalars."""
    if isinstance(leaf, (Tensor, Variable)):
        leaf = leaf._value
    if isinstance(leaf, (np.ndarray, np.generic)) and not leaf.dtype.isnative:
        leaf = leaf.astype(leaf.dtype.newbyteorder("="))
    if isinstance(leaf, np.ndarray) and leaf.ndim == 0:
        return leaf[()]
    return leaf


@dataclass(frozen=True)
class Spec:
    """What calling a compiled signature needs, as plain data (the on-disk index keeps
    it): the generated function, where its sizes are read, and how its outputs come out."""

    func_name: str
    source: str
    parallel: bool
    inputs: int  # how many arguments the generated function takes before its buffers
    sizes: tuple  # (input index, axis) where each size symbol is read
    outs: tuple  # (shape as size expressions, dtype) of each output
    # Positions in outs of the outputs the kernel fills: arrays its caller allocates and
    # passes after the inputs. It returns the other outputs, in order.
    buffers: tuple
    traced: tuple  # indices of the leaves the kernel takes, in order
    # Variables read (passed after the leaves) and assigned (their new values come last):
    # each a leaf index (a Variable argument) or the captured Variable itself.
    variables: tuple
    writes: tuple
    out_trees: tuple  # treedefs of the results, in output order
    # How each leaf of the results comes back: ("out", j, eager, weak) is output j, which
    # the plain call returns as the eager run would have it (eager "tensor": a Tensor,
    # weak or not; "numpy": NumPy's array or scalar; "python": the Python number), the
    # gradient forms as NumPy values; ("arg", i) is argument leaf i itself (the function
    # returned it, or a Variable argument); ("const", value) a value fixed by the trace
    # (a string, None, a Python number, a captured Variable).
    returns: tuple
    guards: tuple  # (expr, op): conditions on the sizes the trace relied on

    @classmethod
    def of(cls, program, source, func_name, parallel, buffers, **calling):
        outs = tuple((tuple(expr_of(d) for d in a.aval.shape), a.aval.dtype)
                     for a in program.outs)
        return cls(func_name, source, parallel, len(program.ins), tuple(program.sizes), outs,
                   tuple(buffers), **{k: tuple(v) for k, v in calling.items()})


class Kernel:
    """One compiled signature: the generated function and how to call it."""

    def __init__(self, spec, fn, consts=(), program=None, probes=()):
        self.spec = spec
        self.fn = fn
        self.consts = list(consts)  # arrays the trace captured, passed after the leaves
        self.program = program  # the optimized IR, when this process traced it
        self.probes = list(probes)  # what the trace captured from outside (captures.py)
        self.source = spec.source
        self.buffers = spec.buffers
        self.guards = spec.guards
        # The type of each rank-0 output whose value Numba returns as a Python number of
        # another type (a float for float32); float64's float is as good as np.float64.
        self.scalar_types = [dtype.type if not shape and dtype != np.float64 else None
                             for shape, dtype in spec.outs]

    # ----- the general path (any call, keyword arguments too) -----
    def arguments(self, leaves):
        args = [kernel_arg(leaves[i]) for i in self.spec.traced]
        args += [kernel_arg(_variable(v, leaves)) for v in self.spec.variables]
        return args + self.consts

    def variables(self, leaves):
        """The Variables a call with these leaves reads or assigns."""
        found = {id(v): v for v in (_variable(v, leaves)
                                    for v in self.spec.variables + self.spec.writes)}
        return list(found.values())

    def current(self):
        """Whether everything the trace captured from outside is as the trace saw it."""
        return all(probe.holds() for probe in self.probes)

    def sizes(self, args):
        return [np.shape(args[i])[axis] for i, axis in self.spec.sizes]

    def admits(self, args):
        """Whether the sizes of these arguments satisfy every guard of the trace."""
        sizes = self.sizes(args)
        holds = {">=": lambda v: v >= 0, "==": lambda v: v == 0, "!=": lambda v: v != 0}
        return all(holds[op](evaluate(expr, sizes)) for expr, op in self.guards)

    def run(self, args, leaves, plain=False):
        """The results' structures; `plain`: as the plain call returns them (as eagerly),
        else as the gradient forms do (NumPy values)."""
        sizes = self.sizes(args)
        buffers = [np.empty([evaluate(expr, sizes) for expr in shape], dtype)
                   for shape, dtype in self._buffer_outs()]
        returned = iter(self.fn(*args, *buffers))
        filled = dict(zip(self.buffers, buffers))
        outputs = [filled[p] if p in filled else next(returned)
                   for p in range(len(self.spec.outs))]
        writes = self.spec.writes
        for v, value in zip(writes, outputs[len(outputs) - len(writes):]):
            variable = _variable(v, leaves)
            variable._value = np.asarray(value, variable.dtype).reshape(variable.shape)
        results = []
        for how in self.spec.returns:
            if how[0] == "out":
                results.append(self._output(outputs[how[1]], how, plain))
            else:
                results.append(leaves[how[1]] if how[0] == "arg" else how[1])
        structures, start = [], 0
        for tree in self.spec.out_trees:
            structures.append(tree_unflatten(tree, results[start:start + tree.num_leaves]))
            start += tree.num_leaves
        return structures

    def _output(self, value, how, plain):
        _, j, eager, weak = how
        shape, dtype = self.spec.outs[j]
        if not plain or eager == "numpy":
            scalar = self.scalar_types[j] or (plain and not shape and dtype.type)
            return scalar(value) if scalar else value
        if eager == "tensor":
            return Tensor._new(np.asarray(value, dtype), weak)
        return value  # "python": Numba returns the Python number

    def _buffer_outs(self):
        return [self.spec.outs[p] for p in self.buffers]

    # ----- the warm path -----
    def entry(self, form, args, fallback, hits):
        """A generated entry for positional calls like `args`; `form` says which results it
        returns: ("value", "grad" or "value_and_grad"; whether `wrt` is an int; whether
        the results are as eager, not NumPy values: see Kernel.run's `plain`). Calls
        it does not fit go to fallback(*args, **kwargs); each call it takes counts in
        `hits` (a Counter)."""
        return _build_entry(self, form, args, fallback, hits)

    def callable(self):
        """The kernel taking the leaves and Variable values and returning every output: its
        constants bound and its output arrays allocated by a small jitted wrapper."""
        fn = getattr(self.fn, "dispatcher", self.fn)
        if not self.consts and not self.buffers:
            return fn
        names = [f"a{i}" for i in range(self.spec.inputs - len(self.consts))]
        consts = {f"c{i}": c for i, c in enumerate(self.consts)}
        allocate, buffers = _allocations(self, names + list(consts))
        results = _output_exprs(self, buffers, [None] * len(self.spec.outs))
        source = "\n".join([f"def kernel({', '.join(names)}):"] +
                            [f"    {line}" for line in allocate] +
                            [f"    r = inner({', '.join(names + list(consts) + buffers)})",
                             f"    return ({''.join(r + ', ' for r in results)})"])
        namespace = dict(consts, inner=fn, np=np)
        exec(source, namespace)  # noqa: S102 - the wrapper generated just above
        return backend.jit_function(namespace["kernel"]) if fn is not self.fn else \
            namespace["kernel"]


def _allocations(kernel, arg_exprs):
    """Lines reading the sizes the output buffers need from the kernel's arguments and
    allocating the buffers, and the buffers' names (for jitted code)."""
    sizes = {}

    def size(k):
        index, axis = kernel.spec.sizes[k]
        sizes[k] = f"n{k} = {arg_exprs[index]}.shape[{axis}]"
        return f"n{k}"

    buffers = _buffer_shapes(kernel, size)
    allocations = [f"o{b} = np.empty({shape}{dtype})" for b, (shape, dtype) in enumerate(buffers)]
    return [line for _, line in sorted(sizes.items())] + allocations, \
        [f"o{b}" for b in range(len(buffers))]


def _buffer_shapes(kernel, size, shape_names=None):
    """(shape, dtype argument) as source for each output buffer: size(k) names size symbol
    k, and `shape_names` maps an input's shape, as size expressions, to a name holding it."""
    shapes = []
    for exprs, dtype in kernel._buffer_outs():
        shape = (shape_names or {}).get(exprs) or \
            f"({''.join(render(e, size) + ', ' for e in exprs).rstrip()})"
        shapes.append((shape, "" if dtype == np.float64 else f", np.{dtype.name}"))
    return shapes


def _output_exprs(kernel, buffers, scalar_types):
    """An expression per program output: a buffer's name, or the kernel's result r[j]
    (wrapped in its scalar type where one is given)."""
    filled = dict(zip(kernel.buffers, buffers))
    exprs, j = [], 0
    for p, t in enumerate(scalar_types):
        if p in filled:
            exprs.append(filled[p])
            continue
        exprs.append(f"r[{j}]" if t is None else f"{t}(r[{j}])")
        j += 1
    return exprs


def _variable(source, leaves):
    return leaves[source] if isinstance(source, int) else source


class _EntryWriter:
    """Builds the source of one entry function. Every name it binds is made by a scheme
    of its own (a<i>, x<k>, s<k>, k<k> …): the user's names reach an entry only as the
    dict keys it writes as literals, so none can clash with them."""

    def __init__(self, n_args):
        self.unpack, self.checks, self.names, self.constants = [], [], [], {}
        self._constant_names = {}  # id of each constant: its name
        # Each leaf array's shape tuple, by the array's name: (the tuple's name, its rank).
        self.shapes = {}
        # The globals holding the shape each leaf array had at the last call that passed
        # its tests (an equal shape passes them again), with their first values.
        self.last_shapes = {}
        # How a call the entry does not fit goes on to the next entry.
        self.fall_back = f"return fallback({', '.join(f'a{i}' for i in range(n_args))})"

    def fails(self, test):
        self.checks.append(f"if {test}: {self.fall_back}")

    def constant(self, value):
        """The entry's global name for `value`: one name per object (a captured Variable
        read and assigned, a type or dtype several leaves share). A dtype is NumPy's own
        instance of it, so that an entry's text is the same whether its kernel was traced
        in this process or its Spec unpickled from the index (the text is the key of the
        entry's cached bytecode)."""
        if isinstance(value, np.dtype) and value.isnative:
            value = np.dtype(value.str)
        name = self._constant_names.get(id(value))
        if name is None:
            name = self._constant_names[id(value)] = f"k{len(self.constants)}"
            self.constants[name] = value
        return name

    def leaves(self, value, expr):
        """Unpacks the leaves of an argument like `value` found at `expr`, in the order
        tree_flatten visits them, checking the containers on the way."""
        if isinstance(value, dict):
            self.unpack.append(f"if type({expr}) is not dict or len({expr}) != {len(value)}: "
                               f"{self.fall_back}")
            for k in sorted(value):
                self.leaves(value[k], f"{expr}[{k!r}]")
        elif isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
            kind = type(value).__name__
            self.unpack.append(f"if type({expr}) is not {kind} or len({expr}) != {len(value)}: "
                               f"{self.fall_back}")
            for i, v in enumerate(value):
                self.leaves(v, f"{expr}[{i}]")
        else:
            name = expr
            if not expr.isidentifier():
                name = f"x{len(self.names)}"
                self.unpack.append(f"{name} = {expr}")
            self.names.append(name)
            self.check(name, value)

    def check(self, name, leaf):
        """The tests that a later leaf has the kind, dtype, rank and 1-dims this one had."""
        if isinstance(leaf, (bool, int, str, type(None))) and not isinstance(leaf, np.generic):
            self.fails(f"type({name}) is not {self.constant(type(leaf))} or "
                       f"{name} != {self.constant(leaf)}")
            return
        array = leaf._value if isinstance(leaf, (Tensor, Variable)) else leaf
        tests = [f"type({name}) is not {self.constant(type(leaf))}"]
        if isinstance(leaf, Tensor):
            tests.append(f"{name}._weak")
        if not (isinstance(array, np.ndarray) or isinstance(leaf, (Tensor, Variable))):
            self.fails(" or ".join(tests))
            return
        value = f"{name}._value" if isinstance(leaf, (Tensor, Variable)) else name
        if array.ndim:
            self.fails(" or ".join(tests))
            self.layout(value, array.dtype)
        else:  # the kernel takes its value as a scalar
            self.fails(" or ".join(tests + [f"{value}.dtype.num != {array.dtype.num}"]))
        shape = f"s{len(self.shapes)}"
        self.shapes[value] = shape, array.ndim
        tests = [f"len({shape}) != {array.ndim}"]
        ones = [d == 1 for d in array.shape]
        if any(ones):  # which dims are 1 is part of the signature
            tests += [f"{shape}[{a}] {'!=' if one else '=='} 1" for a, one in enumerate(ones)]
        elif ones:
            tests.append(f"1 in {shape}")
        # Tested only when it differs from the last call's: one tuple comparison (about
        # 35 ns less for W2's 2x3 array than the rank and 1-dims tests).
        last = f"last_{shape}"
        self.last_shapes[last] = array.shape
        self.checks += [f"if ({shape} := {value}.shape) != {last}:",
                        f"    if {' or '.join(tests)}: {self.fall_back}",
                        f"    {last} = {shape}"]

    def layout(self, value, dtype, fixed=False):
        """Tests that the array `value` has `dtype` (unless its dtype is `fixed`: a captured
        array's or Variable's cannot change); and unless it is C-contiguous, aligned and
        writeable with the very dtype object NumPy uses natively, the kernel is run
        through `checked` (Numba's dispatcher), not `direct`."""
        native = self.constant(np.dtype(dtype.type))
        test = f"{value}.dtype is not {native} or not {value}.flags.carray"
        if fixed:
            self.checks.append(f"if {test}: run = checked")
            return
        self.checks += [f"if {test}:",
                        f"    if {value}.dtype.num != {dtype.num}: {self.fall_back}",
                        "    run = checked"]

    def variable(self, source, leaves):
        """The name holding a Variable (a leaf index, or the captured Variable itself),
        and the Variable as this call sees it."""
        if isinstance(source, int):
            return self.names[source], leaves[source]
        return self.constant(source), source

    def size(self, array_expr, axis):
        if array_expr in self.shapes:
            return f"{self.shapes[array_expr][0]}[{axis}]"
        return f"{array_expr}.shape[{axis}]"

# An entry keeps the output arrays it returned last, and fills them again when nothing
# else holds them (numba_adapter.sole_reference_count: the pair in its global spare<b>
# and its local name), rather than allocating: nobody can see the difference. The pair
# is the array and its shape, read and replaced at once: a call in another thread that
# replaces the array between this call's tests cannot pair it with the other array's
# shape.


def _arg_expr(name, leaf):
    """How the kernel receives a leaf held in `name`."""
    if isinstance(leaf, (Tensor, Variable)):
        name = f"{name}._value"
        leaf = leaf._value
    return f"{name}[()]" if isinstance(leaf, np.ndarray) and leaf.ndim == 0 else name


def _build_entry(kernel, form, args, fallback, hits):
    spec = kernel.spec
    w = _EntryWriter(len(args))
    for i, arg in enumerate(args):
        w.leaves(arg, f"a{i}")
    leaves = tree_flatten(list(args))[0]
    kernel_args = [_arg_expr(w.names[i], leaves[i]) for i in spec.traced]
    for source in spec.variables:
        v, variable = w.variable(source, leaves)
        kernel_args.append(f"{v}._value" if variable.ndim else f"{v}._value[()]")
        if variable.ndim and not isinstance(source, int):  # a leaf's is tested with it
            w.layout(f"{v}._value", variable.dtype, fixed=True)
    for c in kernel.consts:
        kernel_args.append(w.constant(c))
        w.layout(kernel_args[-1], c.dtype, fixed=True)
    sizes = {}

    def size(k):
        index, axis = spec.sizes[k]
        sizes[k] = f"n{k} = {w.size(kernel_args[index], axis)}"
        return f"n{k}"

    fails = {">=": "<", "==": "!=", "!=": "=="}
    guards = [f"{render(expr, size)} {fails[op]} 0" for expr, op in kernel.guards]
    allocate, buffers, kept = _reused_buffers(kernel, w, kernel_args, size)
    outputs = _output_exprs(kernel, buffers, [None] * len(spec.outs))
    results = _returned(kernel, w, outputs, plain=form[2])
    assigned = kept + list(w.last_shapes)
    body = [f"global {', '.join(assigned)}"] if assigned else []
    body += _prologue(w, len(args)) + ["run = direct"] + _probe_tests(kernel, w) + w.checks
    body += [line for _, line in sorted(sizes.items())]
    body += [f"if {test}: {w.fall_back}" for test in guards]
    body += ["hits.n += 1"] + allocate
    body.append(f"r = run({', '.join(kernel_args + buffers)})")
    body += _variable_writes(spec, w, leaves, outputs)
    body.append(f"return {_result(form, *_value_and_grads(spec, results))}")
    spare = [np.empty((0,) * len(exprs), dtype) for exprs, dtype in kernel._buffer_outs()]
    direct = kernel.fn
    if isinstance(kernel.fn, backend.Compiled):
        direct = kernel.fn.direct(kernel.arguments(leaves) + spare) or kernel.fn
    namespace = dict(w.constants, **w.last_shapes, __srcxform_generated__=True,
                     fallback=fallback, hits=hits, np=np,
                     empty=np.empty, array=np.array, tensor=Tensor._new,
                     getrefcount=sys.getrefcount, direct=direct,
                     checked=kernel.fn, OPEN_ANYWHERE=OPEN_ANYWHERE, CONTEXT=CONTEXT, NO=_NO)
    for b, array in enumerate(spare):  # globals: quicker to read than a list's items
        namespace[f"spare{b}"] = array, array.shape
    exec(backend.code(_signature(len(args)) + "\n".join(f"    {line}" for line in body)),  # noqa: S102 - the entry generated above
         namespace)
    return namespace["entry"]


# The default of an entry's parameters: the caller gave fewer arguments.
_NO = object()


def _signature(n_args):
    """The entry's def line: positional-only parameters, faster to call than *args."""
    params = "".join(f"a{i}=NO, " for i in range(n_args)) + ("/, " if n_args else "")
    return f"def entry({params}*more, **kwargs):\n"


def _prologue(w, n_args):
    """The entry's first lines: calls with keywords, another number of arguments, or
    under a tape or a trace of this thread go to the fallback; then the arguments' leaves,
    unpacked."""
    names = ", ".join(f"a{i}" for i in range(n_args)) + ("," if n_args == 1 else "")
    given = f"*[a for a in ({names}) if a is not NO], " if n_args else ""
    too_few = f" or a{n_args - 1} is NO" if n_args else ""
    lines = [f"if more or kwargs{too_few} or OPEN_ANYWHERE and CONTEXT.open:",
             f"    return fallback({given}*more, **kwargs)"]
    if any("[" in line for line in w.unpack):  # unpacking containers can fail
        return lines + ["try:"] + [f"    {line}" for line in w.unpack] + [
            "except (KeyError, IndexError, TypeError):", f"    {w.fall_back}"]
    return lines + w.unpack


def _probe_tests(kernel, w):
    """Lines sending the call on to the fallback where something the trace captured from
    outside has changed (captures.py): an identity test each, and for a number or string
    the value's type and equality."""
    lines = []
    for probe in kernel.probes:
        holder = w.constant(probe.holder)
        read = {"global": f"{holder}.get({probe.key!r})", "cell": f"{holder}.cell_contents",
                "attr": f"{holder}.{probe.key}"}[probe.kind]
        seen = w.constant(probe.value)
        if isinstance(probe.value, captures.SIMPLE):
            kind = w.constant(type(probe.value))
            test = f"(p := {read}) is not {seen} and (type(p) is not {kind} or p != {seen})"
        else:
            test = f"{read} is not {seen}"
        lines.append(f"if {test}: {w.fall_back}")
    return lines


def _returned(kernel, w, outputs, plain):
    """An expression per leaf of the results (Spec.returns): the plain call's as the eager
    run has them, the gradient forms' as NumPy values."""
    exprs = []
    for how in kernel.spec.returns:
        if how[0] == "arg":
            exprs.append(w.names[how[1]])
            continue
        if how[0] == "const":
            exprs.append(w.constant(how[1]))
            continue
        _, j, eager, weak = how
        shape, dtype = kernel.spec.outs[j]
        out, scalar = outputs[j], kernel.scalar_types[j]
        if plain and eager == "tensor":
            exprs.append(f"tensor({out}, {weak})" if shape else
                         f"tensor(array({out}, {w.constant(dtype)}), {weak})")
        elif plain and eager == "numpy" and not shape:
            exprs.append(f"{w.constant(dtype.type)}({out})")
        elif scalar is not None and not (plain and eager == "python"):
            exprs.append(f"{w.constant(scalar)}({out})")
        else:
            exprs.append(out)
    return exprs


def _reused_buffers(kernel, w, kernel_args, size):
    """Lines finding each output buffer: the array the entry returned last call (with
    its shape, the pair in the entry's global spare<b>) where nothing else refers to it
    and its shape fits, else a new one; the buffers' names; and the globals the lines assign.
    A buffer with an input's exact shape uses that input's shape tuple."""
    shape_names = {}
    for index, arg in enumerate(kernel_args):
        axes = {axis: k for k, (i, axis) in enumerate(kernel.spec.sizes) if i == index}
        if arg in w.shapes and len(axes) == w.shapes[arg][1]:
            shape_names[tuple(("size", axes[a]) for a in range(len(axes)))] = w.shapes[arg][0]
    lines, names, kept = [], [], []
    sole = numba_adapter.sole_reference_count()
    for b, (shape, dtype) in enumerate(_buffer_shapes(kernel, size, shape_names)):
        if sole is not None:
            lines += [f"o{b}, o{b}_shape = spare{b}",
                      f"if getrefcount(o{b}) != {sole} or o{b}_shape != {shape}:",
                      f"    o{b} = empty({shape}{dtype})",
                      f"    spare{b} = o{b}, o{b}.shape"]
            kept.append(f"spare{b}")
        else:
            lines.append(f"o{b} = empty({shape}{dtype})")
        names.append(f"o{b}")
    return lines, names, kept


def _variable_writes(spec, w, leaves, results):
    """Lines giving each Variable the function assigns its new value (the last results)."""
    lines, start = [], len(results) - len(spec.writes)
    for j, source in enumerate(spec.writes):
        v, variable = w.variable(source, leaves)
        value = results[start + j]
        lines.append(f"{v}._value = {value}" if variable.ndim
                     else f"{v}._value = np.asarray({value}, {w.constant(variable.dtype)})")
    return lines


def _value_and_grads(spec, results):
    """Source building the value's structure, and each gradient's (one per `wrt`)."""
    value = _render_tree(spec.out_trees[0], results)
    grads, offset = [], spec.out_trees[0].num_leaves
    for child in spec.out_trees[1].children if len(spec.out_trees) > 1 else ():
        grads.append(_render_tree(child, results[offset:offset + child.num_leaves]))
        offset += child.num_leaves
    return value, grads


def _result(form, value, grads):
    """The entry's return expression: the value, the gradient, or both; a gradient wrt
    one argument is that argument's structure, wrt several a tuple of them."""
    kind, single, _ = form
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
