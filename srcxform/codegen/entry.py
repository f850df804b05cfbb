"""The warm entry of a kernel: a small Python function, generated for positional calls
like one call's, that a warm call runs instead of the general path.

It checks that what the trace captured from outside is unchanged (captures.py) and that
the arguments still fit the signature (their kinds' tests, which core/signature.py writes
from the rules that key the slow path's cache, and the trace's guards on sizes),
unpacks them, finds the output arrays the kernel fills (those it returned last call when
nothing else holds them, else new ones), makes the one kernel call (holding the locks of
the Variables it assigns) and shapes the results as the calling convention says
(callconv.py). The call goes straight into the compiled
code when each array is laid out as Numba typed the first call's (C-contiguous, aligned,
writeable), and through Numba's dispatcher otherwise. A call it does not fit goes on to
its fallback: the entry made before it, and in the end the slow path.

The entry is written as lines of text, as lower.py writes a kernel's loop headers: it is a
flat run of guards over names of the writer's own scheme (a<i>, s<k>, k<k>), each
`if test:` then `return fallback(...)`; it substitutes no templates, where ast keeps a
kernel's expressions well formed. What it shares with the call path, the result leaves and
their structure, is built as ast by callpath's functions and printed. In its module, a
block before it declares the names it reads that are one kernel's own (`in_module`).
"""

import ast

import astor
import numpy as np

from srcxform.codegen.callpath import ResultExprs, results_ast, returns_one, spelled
from srcxform.codegen.exprs import name_ast
from srcxform.core.dims import render
from srcxform.core.signature import ArgumentTests, failing, guard, kernel_expr, number_key
from srcxform.core.tree import tree_flatten
from srcxform.core.tensor import Variable


def _buffer_shapes(conv, size, shape_names):
    """(shape, dtype argument) as source for each output buffer: size(k) names size symbol
    k, and `shape_names` maps an input's shape, as size expressions, to a name holding it."""
    shapes = []
    for exprs, dtype in (conv.outs[p] for p in conv.buffers):
        shape = shape_names.get(exprs) or \
            f"({''.join(render(e, size) + ', ' for e in exprs).rstrip()})"
        shapes.append((shape, "" if dtype == np.float64 else f", np.{dtype.name}"))
    return shapes


def _output_exprs(conv, buffers):
    """An expression per kernel output: a buffer's name, or the kernel's result: r[j] of
    its tuple, or r itself where it returns one output bare (callpath.returns_one)."""
    filled = dict(zip(conv.buffers, buffers))
    returned = iter(["r"] if returns_one(conv) else [f"r[{j}]" for j in range(len(conv.outs))])
    return [filled[p] if p in filled else next(returned) for p in range(len(conv.outs))]


class _EntryWriter(ArgumentTests):
    """Builds the source of one entry function: the tests of its arguments
    (core/signature.py), and what the kernel's call reads of them."""

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
# else holds them (a reference count of `sole`: the pair in its global spare<b> and its
# local name, as numba_adapter.sole_reference_count measures it; None: never reuse),
# rather than allocating: nobody can see the difference. The pair is the array and its
# shape, read and replaced at once: a call in another thread that replaces the array
# between this call's tests cannot pair it with the other array's shape.


def _identity_tests(conv, w, leaves):
    """Tests that the call's Variable argument leaves are alike to the trace's
    (Convention.identities): each the object (a leaf or captured Variable) it was, or
    distinct from the others and from the captured ones."""
    captured, own = conv.captured_variables(), []
    variables = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Variable)]
    for i, token in zip(variables, conv.identities):
        if token < 0:
            w.fails(f"{w.names[i]} is not {w.constant(captured[-1 - token])}")
        elif token != i:
            w.fails(f"{w.names[i]} is not {w.names[token]}")
        else:
            own.append(w.names[i])
    if captured and own:
        ids = w.constant(frozenset(id(v) for v in captured))
        for name in own:
            w.fails(f"id({name}) in {ids}", "a Variable the kernel captured")
    if len(own) > 1:
        w.fails(f"len({{{', '.join(f'id({name})' for name in own)}}}) != {len(own)}",
                "one Variable passed twice")


def in_module(entries):
    """The entries, (source, own globals) pairs from `emit`, as a generated module holds
    them: each after a block declaring the globals it reads that are one kernel's own,
    which kernel.py binds for each kernel (constants this text can spell are spelled)."""
    if not entries:
        return ""
    text = ("\n\n# The warm entries: what a call like the traced one runs. A call they do not "
            "fit\n# goes on to `fallback`, and in the end to the general path above.\n")
    for source, own in entries:
        declared = [f"{name} = {spelled(value)}" for name, value in own.items()]
        text += ("\n# Bound per kernel (kernel.py): the kernel, called straight (direct) and "
                 "through\n# Numba's dispatcher (checked); the entry made before this one "
                 "(fallback); a\n# count of the calls taken (hits); the shapes checked "
                 "against the eager tape\n# (checked_shapes); each output array the "
                 "entry returned last, with its shape\n# (spare<b>); its constants (k<k>), "
                 "and the shapes of the last call's arrays.\n"
                 "direct = checked = fallback = hits = checked_shapes = None\n" +
                 "".join(f"{line}\n" for line in declared) + f"\n\n{source}")
    return text


def emit(conv, consts, probes, name, args, sole, keywords=True, check=False, exact=False):
    """The source of `def name(...)`, the entry for the form of a kernel ("value", "grad"
    or "value_and_grad") called as `conv` says, for positional calls like
    `args`, as a method of the Differentiable; and the values of the globals it reads
    that are its own (constants, and the shapes its last call saw). The rest the caller
    binds (kernel.py): `direct` and `checked` (the kernel, straight and through Numba's
    dispatcher), `fallback`, `hits` (a Counter), `spare<b>` (each buffer the entry
    returned last, with its shape), and NumPy's and srcxform's few helpers (`updating`:
    tensor.Updating). A gradient
    form's entry without `keywords` (no call passing one can succeed:
    Differentiable._keywords) has no **kwargs, and CPython refuses such a call itself.
    With `check` (SRCXFORM_CHECK), a call whose arrays' shapes are not in the global
    `checked_shapes` (kernel.array_shapes's tuples) goes on to the fallback, and in the
    end to the slow path, which checks it against the eager tape (crosscheck.py). With
    `exact` (a kernel not yet known to be right at other sizes: compiler.right_for), a
    call whose arrays' shapes are not `args`' goes on the same way."""
    keywords = keywords or conv.form == "value"  # no wrt: a value takes what the function takes
    w = _EntryWriter(args, conv.tf_rules, exact)
    leaves = tree_flatten(list(args))[0]
    kernel_args = [kernel_expr(w.names[i], leaves[i]) for i in conv.traced]
    for source in conv.variables:
        v, variable = w.variable(source, leaves)
        kernel_args.append(kernel_expr(v, variable))
        if variable.ndim and not isinstance(source, int):  # a leaf's is tested with it
            w.layout(f"{v}._array", variable.dtype, fixed=True)
    _identity_tests(conv, w, leaves)
    for c in consts:
        kernel_args.append(w.constant(c))
        w.captured_layout(kernel_args[-1], c)
    sizes = {}

    def size(k):
        index, axis = conv.sizes[k]
        sizes[k] = f"size{k} = {w.size(kernel_args[index], axis)}"
        return f"size{k}"

    guards = failing(conv.guards, size)
    allocate, buffers, kept = _reused_buffers(conv, w, kernel_args, size, sole)
    outputs = _output_exprs(conv, buffers)
    results = conv.result_leaves(_ResultExprs(w, outputs))
    assigned = kept + ([] if exact else list(w.last_shapes))
    body = [f"global {', '.join(assigned)}"] if assigned else []
    # `run` is the kernel a layout test may send the call through Numba's dispatcher by;
    # without arrays there is none, and the entry calls the compiled code directly.
    run = "run" if any("run = checked" in line for line in w.checks) else "direct"
    body += _prologue(w, len(args), keywords) + (["run = direct"] if run == "run" else [])
    body += _probe_tests(probes, w) + w.checks
    body += [line for _, line in sorted(sizes.items())]
    for test in guards:
        body += guard(test, w.fall_back)
    if check:
        shapes = "".join(f"{shape}, " for shape, ndim in w.shapes.values() if ndim)
        body += guard(f"({shapes}) not in checked_shapes", w.fall_back)
    body += ["hits.n = hits.n + 1"] + allocate  # quicker than +=
    call = f"{run}({', '.join(kernel_args + buffers)})"
    fills_only = len(conv.buffers) == len(conv.outs)  # no output is returned in r
    update = [call if fills_only else f"r = {call}"] + _variable_writes(conv, w, leaves, outputs)
    body += _checked(_holding_locks(conv, w, leaves, update), conv, w)
    returned = results_ast(conv, results, lambda obj: name_ast(w.constant(obj)))
    body.append("return " + astor.to_source(returned).strip())
    source = _def_line(name, len(args), keywords) + "".join(f"    {line}\n" for line in body)
    return source, dict(w.constants, **w.last_shapes, **dict.fromkeys(kept))


def _def_line(name, n_args, keywords):
    """The entry's def line: `this`, the Differentiable (the entry is a method of its
    class), then positional-only parameters, faster to call than *args; each defaults
    to NO, an object of the caller's (the call gave fewer arguments). NO is of no leaf's
    type: the first test of a missing argument, a type test, sends the call on, with
    the NOs (the slow path drops them). `**kwargs` (where a keyword can be passed) would
    cost at every call: CPython makes its dict and cannot specialize the call."""
    params = "".join(f"a{i}=NO, " for i in range(n_args))
    return f"def {name}(this, {params}/, *more{', **kwargs' if keywords else ''}):\n"


def _prologue(w, n_args, keywords):
    """The entry's first lines: calls with keywords, more arguments, or under a tape or a
    trace of this thread go to the fallback; then the arguments' leaves, unpacked. (Fewer
    arguments fail a type test, _def_line.) Extra arguments that are all NO come from an
    entry of more parameters that a call with fewer arguments missed: this one may fit."""
    given = "".join(f"a{i}, " for i in range(n_args))
    test, passed = (" or kwargs", ", **kwargs") if keywords else ("", "")
    lines = [f"if more and more[0] is not NO{test} or OPEN_ANYWHERE and CONTEXT.open:",
             f"    return fallback({given}*more{passed})"]
    if any("[" in line for line in w.unpack):  # unpacking containers can fail
        return lines + ["try:"] + [f"    {line}" for line in w.unpack] + [
            "except (KeyError, IndexError, TypeError):", f"    {w.fall_back}"]
    return lines + w.unpack


def _probe_tests(probes, w):
    """Lines sending the call on to the fallback where something the trace captured from
    outside has changed (captures.py): an identity test each, and for a number or string
    the value's type and equality."""
    lines = []
    for probe in probes:
        holder = w.constant(probe.holder)
        read = {"global": f"{holder}.get({probe.key!r})", "cell": f"{holder}.cell_contents",
                "attr": f"{holder}.{probe.key}"}[probe.kind]
        seen = w.constant(probe.value)
        if probe.by_value:
            kind = w.constant(type(probe.value))
            differs = f"{w.constant(number_key)}(p) != {number_key(probe.value)!r}" if \
                isinstance(probe.value, (float, complex)) else f"p != {seen}"  # as Probe.holds
            test = f"(p := {read}) is not {seen} and (type(p) is not {kind} or {differs})"
        else:
            test = f"{read} is not {seen}"
        lines += guard(test, w.fall_back)
    return lines


class _ResultExprs(ResultExprs):
    """Result leaves as the call path writes them, with the entry's constants for fixed
    values, dtypes and types."""

    def __init__(self, w, outputs):
        super().__init__(w.names, outputs)
        self.w = w

    def const(self, k, value):
        return name_ast(self.w.constant(value))

    def spell(self, t):
        return name_ast(self.w.constant(t))

    def asarray(self, x, dtype):
        return ast.Call(name_ast("asarray"), [x, self.spell(dtype)], [])


def _reused_buffers(conv, w, kernel_args, size, sole):
    """Lines finding each output buffer: the array the entry returned last call (with
    its shape, the pair in the entry's global spare<b>) where nothing else refers to it
    and its shape fits, else a new one; the buffers' names; and the globals the lines assign.
    A buffer with an input's exact shape uses that input's shape tuple."""
    shape_names = {}
    for index, arg in enumerate(kernel_args):
        axes = {axis: k for k, (i, axis) in enumerate(conv.sizes) if i == index}
        if arg in w.shapes and len(axes) == w.shapes[arg][1]:
            shape_names[tuple(("size", axes[a]) for a in range(len(axes)))] = w.shapes[arg][0]
    lines, names, kept = [], [], []
    for b, (shape, dtype) in enumerate(_buffer_shapes(conv, size, shape_names)):
        if sole is not None:
            lines += [f"o{b}, o{b}_shape = spare{b}",
                      (f"if getrefcount(o{b}) != {sole} or o{b}_shape != {shape}:  "
                      f"# {sole}: held by spare{b}, o{b} and getrefcount alone"),
                      f"    o{b} = empty({shape}{dtype})",
                      f"    spare{b} = o{b}, o{b}.shape"]
            kept.append(f"spare{b}")
        else:
            lines.append(f"o{b} = empty({shape}{dtype})")
        names.append(f"o{b}")
    return lines, names, kept


def _holding_locks(conv, w, leaves, lines):
    """`lines` (the kernel's call and the Variables' writes) holding the locks of the
    Variables the function assigns, so that no other thread's update of one comes between
    the call's read of its value and the write; a function that assigns none takes no
    lock. They are taken in order of creation, as tensor.Updating takes them: for
    captured Variables (the entry's constants) or a single one, in the order found here,
    each by its acquire and release (half the cost of a `with`); for several where one
    is an argument, by `updating` at each call."""
    if not conv.writes:
        return lines
    written = dict(w.variable(source, leaves) for source in conv.writes)
    body = [f"    {line}" for line in lines]
    if len(written) > 1 and any(name not in w.constants for name in written):
        return [f"with updating(({', '.join(written)})):"] + body
    ordered = sorted(written.items(), key=lambda item: (item[1]._id, id(item[1])))
    locks = [w.constant(v._lock) if name in w.constants else f"{name}._lock"
             for name, v in ordered]
    return ([f"{lock}.acquire()" for lock in locks] + ["try:"] + body + ["finally:"] +
            [f"    {lock}.release()" for lock in reversed(locks)])


def _checked(lines, conv, w):
    """`lines` (the kernel's call), and where the kernel may raise (a runtime check), the
    call sent on to the fallback if it does: the slow path runs the kernel again and
    raises the error as the function run eagerly does, naming the user's line."""
    if not conv.raises:
        return lines
    return (["try:"] + [f"    {line}" for line in lines] +
            ["except InvalidArgumentError:  # the slow path names the user's line",
             f"    {w.fall_back}"])


def _variable_writes(conv, w, leaves, results):
    """Lines giving each Variable the function assigns its new value (the last results).
    A value the kernel returns rather than fills (an argument, a view of one, another
    Variable's array) is copied, as an eager assign copies: the Variable would share the
    caller's memory (helper 90: `v.assign(x[...])`, then `x[0] = 100` changed v)."""
    lines, start = [], len(results) - len(conv.writes)
    for j, source in enumerate(conv.writes):
        v, variable = w.variable(source, leaves)
        value = results[start + j]
        if not variable.ndim:
            lines.append(f"{v}._array = np.asarray({value}, {w.constant(variable.dtype)})")
        else:
            lines.append(f"{v}._array = {value}{'.copy()' if value.startswith('r') else ''}")
    return lines
