"""The call path around a kernel, generated into its module from the calling convention
(callconv.py): what a call of the kernel's form runs, and the wrapper `f.kernel()` returns.

For a kernel `loss__value_and_grad` it writes `loss_value_and_grad(w, x)` (for
`loss__grad`, `loss_grad(w, x)`), which takes the argument leaves, allocates the arrays
the kernel fills, calls it, assigns the Variables it assigns and returns the form's
structure; and `loss_kernel(w, x)` (when the kernel has buffers or captured arrays, or
returns its one output bare), jitted by `f.kernel()`, which allocates the buffers and
returns every output, as a tuple. They call `leaf`, `tensor` and `assign`
(runtime/calls.py, imported by the module: IMPORTS); the kernel and captured objects they
read are bound per kernel by `bindings`: the module is shared by every kernel with the
same text.
"""

import ast
import builtins
import re

import astor
import numpy as np

from srcxform.codegen.exprs import dtype_ast
from srcxform.core.dims import render
from srcxform.core.names import identifier
from srcxform.core.tree import (DATACLASS, DICT, NAMEDTUPLE, NONE, SEQUENCE, dict_type,
                                 spelled_key, unflatten_function)
from srcxform.core import syntax

# The globals the call path reads; names made by counting (sizes n<k>, captured objects)
# are kept apart from the user's names too.
_GLOBALS = frozenset({"np", "leaf", "tensor", "assign", "tuple"})
# The import lines of a module with a call path: what it and the warm entries call.
IMPORTS = ("from srcxform.runtime.calls import (",
           "    CONTEXT, NO, OPEN_ANYWHERE, InvalidArgumentError, asarray, assign, empty,",
           "    getrefcount, leaf, tensor, updating,",
           ")")
_COUNTED = re.compile(r"(n|var|const|fixed|node)\d+")
# What a returned constant is written as: a literal where its repr is one.
_LITERALS = (bool, int, float, str, type(None))


def function_name(name, form):
    """The generated function running `form` for a kernel of the user function `name`."""
    return f"{name}_{form}"


def kernel_name(name):
    return f"{name}_kernel"


def entry_name(name, form):
    """The warm entry running `form` (codegen/entry.py)."""
    return f"{name}_{form}_entry"


def returns_one(conv):
    """Whether the kernel returns one output as itself rather than a tuple of them (what
    it returns is each output it does not fill; lower.py writes the return)."""
    return len(conv.outs) - len(conv.buffers) == 1


def emit(conv, consts, name, kernel, size_label):
    """The source of the call-path functions of a kernel named `kernel`, for the user
    function `name`; size symbol k is n<size_label(k)>, as in the kernel. A block before
    them declares what they read that is one kernel's own (bindings: `consts`, the
    arrays the trace captured, and more)."""
    functions = [_form_function(conv, name, kernel, size_label)]
    if conv.form == "value_and_grad" and (conv.consts or conv.buffers or returns_one(conv)):
        functions.append(_kernel_function(conv, name, kernel, size_label))
    bound = bindings(conv, consts)
    block = ("# Bound per kernel (kernel.py): what the trace captured (arrays, Variables) and\n"
             "# the objects the results are made with.\n" +
             "".join(f"{k} = {spelled(v)}\n" for k, v in bound.items()) + "\n\n"
             if bound else "")
    return block + "\n\n\n".join(astor.to_source(f).rstrip("\n") for f in functions) + "\n"


def spelled(value):
    """A constant as the module's text spells it: a NumPy dtype or type, a builtin type,
    a shape or a dict's keys (a tuple of str and int, repr'd); anything else (a captured
    object) is None with a comment saying what."""
    if isinstance(value, np.dtype):
        return f"np.dtype({value.name if value.isnative else value.str!r})"
    if isinstance(value, type) and getattr(builtins, value.__name__, None) is value:
        return value.__name__
    if isinstance(value, type) and value.__module__ == "numpy" and \
            getattr(np, value.__name__, None) is value:
        return f"np.{value.__name__}"
    if value is None or isinstance(value, tuple) and all(type(d) in (int, str) for d in value):
        return repr(value)
    return f"None  # {type(value).__name__}"


def bindings(conv, consts):
    """The globals the call path reads that are this kernel's own: captured Variables,
    captured arrays (`consts`), and returned constants without a literal."""
    found = dict(zip(_captured_names(conv), _captured(conv)))
    found.update((f"const{k}", c) for k, c in enumerate(consts))
    for k, how in enumerate(conv.returns):
        if how[0] == "const" and not _literal(how[1]):
            found[f"fixed{k}"] = how[1]
    names = _NodeNames()
    results_ast(conv, [None] * len(conv.returns), names)
    found.update((f"node{k}", obj) for k, obj in enumerate(names.objects))
    return found


class _NodeNames:
    """node<k> for each object the results' structure refers to (a NamedTuple's or
    dataclass's type, a registered type's unflatten function and aux data), in order."""

    def __init__(self):
        self.objects = []

    def __call__(self, obj):
        k = next((k for k, o in enumerate(self.objects) if o is obj), None)
        if k is None:
            k = len(self.objects)
            self.objects.append(obj)
        return ast.Name(f"node{k}", ast.Load())


def _captured(conv):
    """The captured Variables the kernel reads or assigns, each once, in order."""
    found = {}
    for v in conv.variables + conv.writes:
        if not isinstance(v, int):
            found.setdefault(id(v), v)
    return list(found.values())


def _captured_names(conv):
    return [f"var{k}" for k in range(len(_captured(conv)))]


def _literal(value):
    return isinstance(value, _LITERALS) and (not isinstance(value, float) or np.isfinite(value))


class _Names:
    """Distinct local names: the user's, suffixed where they clash."""

    def __init__(self, reserved):
        self.taken = set(reserved) | _GLOBALS

    def __call__(self, hint):
        base = identifier(hint)
        name, k = base, 1
        while name in self.taken or _COUNTED.fullmatch(name):
            name, k = f"{base}_{k}", k + 1
        self.taken.add(name)
        return name


class _Body:
    """Statements calling the kernel: sizes, buffers, the call; and the outputs' names."""

    def __init__(self, conv, kernel, inputs, names, size_label):
        self.conv, self.statements = conv, []
        outs = [names(n) for n in conv.out_names]
        used = {}

        def size(k):
            index, axis = conv.sizes[k]
            used[k] = _parse(f"n{size_label(k)} = {inputs[index]}.shape[{axis}]")
            return f"n{size_label(k)}"

        allocations = []
        for p in conv.buffers:
            shape, dtype = conv.outs[p]
            shape_ast = _parse(f"({''.join(render(e, size) + ', ' for e in shape)})").value
            empty = _parse(f"{outs[p]} = np.empty(())")
            empty.value.args = [shape_ast] + ([] if dtype == np.float64 else
                                              [dtype_ast(dtype)])
            allocations.append(empty)
        self.statements += [used[k] for k in sorted(used)] + allocations
        call = f"{kernel}({', '.join(list(inputs) + [outs[p] for p in conv.buffers])})"
        returned = [outs[p] for p in range(len(outs)) if p not in conv.buffers]
        # One output comes back bare (returns_one), more as a tuple to unpack.
        targets = returned[0] if len(returned) == 1 else "".join(f"{r}, " for r in returned)
        self.statements.append(_parse(f"{targets} = {call}" if returned else call))
        self.outs = outs


def _form_function(conv, name, kernel, size_label):
    """`def loss_grad(w, x)`: the call of the kernel's form, from the argument leaves."""
    form = conv.form
    names = _Names({kernel})
    params = [names(n) for n in conv.leaf_names]
    returned_args = {how[1] for how in conv.returns if how[0] == "arg"}
    statements, inputs = [], []
    for i in conv.traced:  # the leaf as the kernel takes it
        value = names(f"{params[i]}_value") if i in returned_args else params[i]
        statements.append(_parse(f"{value} = leaf({params[i]})"))
        inputs.append(value)
    variables = dict(zip(map(id, _captured(conv)), _captured_names(conv)))

    def variable(v):
        return params[v] if isinstance(v, int) else variables[id(v)]

    inputs += [f"leaf({variable(v)})" for v in conv.variables]
    inputs += [f"const{k}" for k in range(conv.consts)]
    body = _Body(conv, kernel, inputs, names, size_label)
    statements += body.statements
    first_write = len(conv.outs) - len(conv.writes)
    for k, v in enumerate(conv.writes):
        statements.append(_parse(f"assign({variable(v)}, {body.outs[first_write + k]})"))
    leaves = conv.result_leaves(ResultExprs(params, body.outs))
    statements.append(ast.Return(results_ast(conv, leaves, _NodeNames())))
    doc = f"What {name}{'' if form == 'value' else '.' + form}(...) returns, for arguments " \
          "like the traced ones."
    return _function(function_name(name, form), params, doc, statements)


def _kernel_function(conv, name, kernel, size_label):
    """`def loss_kernel(w, x)`: the kernel with its buffers allocated and its captured
    arrays bound, returning every output (jitted by f.kernel())."""
    names = _Names({kernel})
    params = [names(n) for n in conv.in_names]
    body = _Body(conv, kernel, params + [f"const{k}" for k in range(conv.consts)], names,
                 size_label)
    ret = ast.Return(_parse(f"({''.join(o + ', ' for o in body.outs)})").value)
    doc = f"f.kernel(...) of {name}: the kernel with its output arrays allocated."
    return _function(kernel_name(name), params, doc, body.statements + [ret])


class ResultExprs:
    """Convention.result_leaves' maker of expressions, from the names of the argument
    leaves and the outputs' expressions (the warm entry's, entry.py, names constants its
    own way)."""

    def __init__(self, params, outs):
        self.params, self.outs = params, outs

    def arg(self, i):
        return ast.Name(self.params[i], ast.Load())

    def const(self, k, value):
        return ast.Constant(value) if _literal(value) else ast.Name(f"fixed{k}", ast.Load())

    def out(self, j):
        return syntax.parse(self.outs[j], mode="eval").body

    def spell(self, t):
        """An expression naming a NumPy dtype or scalar type."""
        return dtype_ast(t)

    def asarray(self, x, dtype):
        return ast.Call(_parse("np.asarray").value, [x, self.spell(dtype)], [])

    def tensor(self, x, weak):
        return ast.Call(ast.Name("tensor", ast.Load()), [x, ast.Constant(weak)], [])

    def scalar(self, x, dtype):
        return ast.Call(self.spell(dtype.type), [x], [])


def results_ast(conv, leaves, name):
    """What a call returns (Convention.results) as one expression, from an expression per
    leaf; `name(obj)` is an expression naming an object its containers are made with."""
    return structure(conv.results(leaves, lambda node, children: _node(node, children, name)))


def _node(node, children, name):
    """A container of a structure (tree.TreeDef `node`) as an expression making it."""
    if node.how == NONE:
        return ast.Constant(None)
    if node.how == DICT:
        by_key = dict(zip(node.keys, children))
        built = ast.Dict([ast.Constant(k) if spelled_key(k) else name(k) for k in node.order],
                         [by_key[k] for k in node.order])
        kind = dict_type(node.kind)
        return built if kind is dict else ast.Call(name(kind), [built], [])
    if node.how == SEQUENCE and node.kind in (tuple, list):
        return structure(node.kind(children))
    if node.how == SEQUENCE:  # a subclass
        return ast.Call(name(node.kind), [ast.List(children, ast.Load())], [])
    if node.how == NAMEDTUPLE:  # tuple.__new__, as its _make: half the time of its __new__
        new = ast.Attribute(ast.Name("tuple", ast.Load()), "__new__", ast.Load())
        return ast.Call(new, [name(node.kind), ast.Tuple(children, ast.Load())], [])
    if node.how == DATACLASS:
        return ast.Call(name(node.kind), [], [ast.keyword(k, c)
                                              for k, c in zip(node.keys, children)])
    return ast.Call(name(unflatten_function(node.kind)),  # a registered type
                    [name(node.keys), ast.List(children, ast.Load())], [])


def structure(value):
    """A structure of expressions (Convention.results') as one expression."""
    if isinstance(value, dict):
        return ast.Dict([ast.Constant(k) for k in value], [structure(v) for v in value.values()])
    if isinstance(value, (list, tuple)):
        kind = ast.List if isinstance(value, list) else ast.Tuple
        return kind([structure(v) for v in value], ast.Load())
    return value


def _function(name, params, doc, statements):
    args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    body = [ast.Expr(ast.Constant(doc))] + statements
    return ast.FunctionDef(name, args, body, [], None)


def _parse(source):
    return syntax.parse(source).body[0]
