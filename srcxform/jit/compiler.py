"""From a function and its arguments to a Kernel: trace the function under a tape,
optimize the program, generate the kernel with its call path and warm entries into one
module, and store it in the on-disk index (load_indexed finds it there in a later process).
Differentiable (api.py) decides when, and where Numba compiles it: in this process or in
tiered.py's worker.
"""

import dataclasses
import functools
import hashlib
import inspect
import os
import pickle
import types
from collections import Counter, deque, namedtuple

import numpy as np

from srcxform import numba_adapter
from srcxform.core import settings, signature
from srcxform.jit import backend, captures, index
from srcxform.passes import reroll
from srcxform.codegen.callconv import Convention, form_result, variable_identities
from srcxform.codegen import callpath, entry
from srcxform.codegen import generate as generate_source
from srcxform.codegen.exprs import size_label
from srcxform.core.dims import Dim, concrete, expr_of, guard_conditions, printing
from srcxform.core.errors import OutputNotScalarError, item_store, source_text
from srcxform.jit.kernel import Kernel, Spec, array_shapes
from srcxform.core.ir import may_raise
from srcxform.core.names import function_name
from srcxform.passes.cse import same_array
from srcxform.passes.pipeline import optimize
from srcxform.core.recording import CONTEXT
from srcxform.ad.tape import GradientTape
from srcxform.core.tensor import Tensor, Value, Variable, as_value, eager_tensor
from srcxform.ad.trace import Rerolled, Trace, Tracer, eager_kind, of_kind
from srcxform.core.tree import leaf_paths, tree_flatten, tree_unflatten


def wrt_positions(wrt):
    """The argument positions a gradient is taken with respect to."""
    return (wrt,) if isinstance(wrt, int) else tuple(wrt)


def generate_kernel(fn, kernel_form, args, kwargs, leaves, found, *, wrt, parallel, as_eager,
                    keywords=True, has_aux=False, tf_rules=False, nan_checks=False,
                    traced=None):
    """Traces and generates the kernel, not yet compiled (its fn is None), and stores it in
    the index under the key `found` (None: fn is not indexable) unless it captured arrays
    or Variables."""
    kernel, generate = trace_kernel(fn, kernel_form, args, kwargs, leaves, found, wrt=wrt,
                                    parallel=parallel, as_eager=as_eager, keywords=keywords,
                                    has_aux=has_aux, tf_rules=tf_rules, nan_checks=nan_checks,
                                    traced=traced)
    kernel.generated(generate())
    return kernel


def trace_kernel(fn, kernel_form, args, kwargs, leaves, found, *, wrt, parallel, as_eager,
                 keywords=True, has_aux=False, tf_rules=False, nan_checks=False, traced=None):
    """Traces fn (unless given its trace_function `traced` on these arguments): the kernel,
    its module not generated yet (its spec is None: its convention lacks only the buffers,
    which codegen chooses), and a function generating it (and storing it in the index, as
    generate_kernel says) that returns its Spec. A tiered first call returns before that
    runs, in another thread (tiered.py)."""
    traced = traced or trace_function(fn, wrt, kernel_form, args, kwargs, leaves, has_aux,
                                      tf_rules)
    digest = trace_digest(traced)
    if traced.created:  # allowed once (Keras's build): not when a trace creates again
        _refuse_created(fn, trace_function(fn, wrt, kernel_form, args, kwargs, leaves,
                                           has_aux, tf_rules).created)
    program = traced.program
    signature.check_computed_dtypes(program)  # the CUDA target keeps float16
    consts = [array for _, array in program.consts]
    outs = tuple((tuple(expr_of(d) for d in a.aval.shape), a.aval.dtype)
                 for a in program.outs)
    draft = Convention(
        kernel_form, traced.leaves, traced.variables, traced.writes, len(consts),
        tuple(program.sizes), outs, (), traced.trees, traced.returns, traced.guards,
        isinstance(wrt, int), as_eager, traced.leaf_names, traced.in_names,
        traced.out_names, has_aux, tf_rules, raises=may_raise(program))
    if any(isinstance(leaf, Variable) for leaf in leaves):  # `a is b` may decide a branch
        draft = dataclasses.replace(draft, identities=variable_identities(
            leaves, draft.captured_variables()))
    probes = traced.probes

    def generate():
        func_name = f"{traced.name}__{kernel_form}"
        ins = ", ".join(a.aval.short(symbolic=True) for a in program.ins)
        doc = source_text(f"srcxform: {traced.name}({ins}) -> {kernel_form}; "
                          f"{len(program.eqns)} equations"
                          + ("; checked for NaN and inf (debug_nans)" if nan_checks else ""),
                          quote='"')
        source, buffers, threaded = generate_source(program, func_name, doc,
                                                    parallel=parallel, nan_checks=nan_checks,
                                                    imports=callpath.IMPORTS)
        conv = dataclasses.replace(draft, buffers=tuple(buffers))
        source += "\n\n" + callpath.emit(conv, consts, traced.name, func_name,
                                              size_label(program))
        # The warm entry, for positional calls like this one (others get none, and so
        # does a kernel that serves its own call alone).
        emitted = () if kwargs or captures.serves_one_call(probes) else (
            entry.emit(conv, consts, probes, callpath.entry_name(traced.name, kernel_form),
                       args, numba_adapter.sole_reference_count(), keywords, exact=True),)
        source += entry.in_module(emitted)
        entries = tuple((kernel_form, text) for text, _ in emitted)
        if "source" in os.environ.get("SRCXFORM_DUMP", ""):
            print(source)
        # Compiled parallel only where it has a prange (Numba warns of a kernel with none)
        spec = Spec(func_name, source, threaded, conv, traced.name, entries, digest)
        # What a kernel captured (arrays, Variables) is this process's: not indexed; nor
        # is a result of a type another process cannot import (a class made in a function).
        if found and not consts and all(isinstance(v, int)
                                        for v in conv.variables + conv.writes) and \
                all(how[0] != "const" or isinstance(how[1], captures.SIMPLE)
                    for how in conv.returns) and _pickles(conv.out_trees):
            index.store(found, spec)
        return spec

    return Kernel(None, None, consts, traced, probes, conv=draft, shapes=array_shapes(leaves),
                  traced_as=digest), generate


def load_indexed(found, leaves, traced):
    """A kernel an earlier process generated under the index key `found` from a trace like
    `traced` (this process's, on these arguments), if its guards admit them: code
    generation is skipped, and Numba's cache has the machine code. The key says which
    function and signature; what the function's Python made of them may differ from
    process to process (a setting it reads), which the trace's digest tells."""
    digest = trace_digest(traced)
    for spec in index.load(found):
        kernel = Kernel(spec, None)
        if spec.traced_as == digest and spec.conv.admits_variables(leaves) and \
                (not spec.conv.guards or kernel.admits(kernel.arguments(leaves))):
            compiled = backend.load(spec.source, spec.func_name, parallel=spec.parallel)
            return Kernel(spec, compiled, traced=traced, probes=traced.probes,
                          shapes=array_shapes(leaves))
    return None


def right_for(kernel, shapes, trace):
    """Whether `kernel` (of either target) is right for a call its guards admit, of array
    shapes `shapes`. A kernel takes any size its guards admit, but its trace may have
    decided something by a size that the function's Python kept from an earlier call (a
    list holding that call's x.shape[0]), which no guard records. So a kernel's first call
    at other shapes than its trace's traces the function again (`trace()`, on this call's
    arguments) and compares, with equal captured arrays:
    - one program in the sizes' symbols: the kernel is right at every size (general);
    - one program as this call runs it (each size its value): right at these shapes;
    - else, where the new trace holds a size to a number the kernel's did not (a derived
      size of 0 or 1 is a constant under a guard), it tells nothing of the kernel's other
      sizes: the call compiles its own, kept to such sizes by its guards, and the next
      call at other shapes compares again;
    - else the kernel is right at the shapes found so far alone (general is False)."""
    if kernel.general or shapes in kernel.right_at:
        return True
    if kernel.general is None:
        traced = trace()
        same = _equal_arrays([array for _, array in traced.program.consts], kernel.consts)
        if same and trace_digest(traced) == kernel.traced_as:
            kernel.general = True
        elif same and _as_run(kernel.traced, traced) == _as_run(traced, traced):
            kernel.right_at.add(shapes)
        elif not {g for g in traced.guards if g[1] == "=="} - set(kernel.traced.guards):
            kernel.general = False
    return kernel.general or shapes in kernel.right_at


def trace_digest(traced):
    """A digest of what a trace made: its program's text (sizes as their symbols; not its
    comments, the user lines the equations came from, which name the caller's line where
    srcxform's own code made them) and what the calling convention takes from the trace.
    Traces with one digest and equal captured arrays make one kernel."""
    fields = (traced.leaves, traced.variables, traced.writes, traced.trees, traced.returns,
              traced.guards)
    return hashlib.sha256(_text(traced.program, fields).encode()).hexdigest()


def _as_run(traced, call):
    """The text of `traced`'s program and fields (but its guards) as a call of the input
    sizes of `call` (a trace) runs it: each size its value."""
    shapes = [[concrete(d) for d in v.aval.shape] for v in call.program.ins]
    fields = (traced.leaves, traced.variables, traced.writes, traced.trees, traced.returns)
    try:
        sizes = [shapes[i][axis] for i, axis in traced.program.sizes]
    except IndexError:  # another signature's inputs: another program
        return None
    return _text(traced.program, fields, sizes)


def _text(program, fields, sizes=None):
    with printing(sizes):
        lines = str(program).splitlines()
    lines = [line for line in lines if not line.lstrip().startswith("#")]
    return "\n".join(lines + [_spelled(fields)])


def _spelled(value):
    """repr(value), but a Variable by its identity (its repr shows its value)."""
    if isinstance(value, tuple) and type(value) is tuple:
        return f"({''.join(_spelled(v) + ', ' for v in value)})"
    return f"Variable#{id(value)}" if isinstance(value, Variable) else repr(value)


def _equal_arrays(arrays, others):
    return len(arrays) == len(others) and all(a is b or same_array(a, b)
                                              for a, b in zip(arrays, others))


def trace_function(fn, wrt, kernel_form, args, kwargs, leaves, has_aux=False,
                   tf_rules=False):
    """Traces fn on these arguments and optimizes the program. With `tf_rules`
    (tf.function's), a Python float argument is static, not a traced float64 scalar, and
    an array argument is a tensor to the function's code (its ops give Tensors)."""
    before = captures.of_function(fn)
    try:
        traced = _trace_function(fn, wrt, kernel_form, args, kwargs, leaves, has_aux,
                                 tf_rules, rerolls=True)
    except Rerolled:  # a tape in fn differentiates wrt a value a loop went around
        traced = _trace_function(fn, wrt, kernel_form, args, kwargs, leaves, has_aux,
                                 tf_rules, rerolls=False)
    except ValueError as err:  # NumPy's own words where a traced value met its setitem
        stored = item_store(err)
        if stored is None:
            raise
        raise stored from None
    return traced._replace(probes=captures.settled(before, captures.of_function(fn))
                           + traced.probes)


def _trace_function(fn, wrt, kernel_form, args, kwargs, leaves, has_aux, tf_rules,
                    rerolls):
    name = function_name(getattr(fn, "__name__", "f"))
    trace = Trace(name)
    if rerolls:
        trace.joiner, trace.folder = reroll.joined, reroll.Folder()
    names = _leaf_names(fn, args, kwargs)
    rules = [signature.rule_of(leaf, tf_rules) for leaf in leaves]
    traced = [i for i, rule in enumerate(rules) if rule.traced]
    with trace:
        # A NumpyTensor (an eager reference run's NumPy array) keeps its eager kind.
        inputs = {i: trace.new_input(signature.kernel_value(leaves[i]), names[i],
                                     getattr(leaves[i], "eager_kind", rules[i].eager),
                                     getattr(leaves[i], "_weak", False))
                  for i in traced}
        call_leaves = [inputs.get(i, leaf) for i, leaf in enumerate(leaves)]
        call_args, call_kwargs = tree_unflatten(tree_flatten((args, kwargs))[1], call_leaves)
        if kernel_form == "value":
            out = fn(*call_args, **call_kwargs)
            results = [out]
        else:
            out, grads = traced_value_and_grad(fn, call_args, call_kwargs,
                                                wrt_positions(wrt), has_aux, fresh=True)
            # The gradient-only kernel does not return the value (but an aux): the passes
            # drop what only the value needs (dce.py), such as the sum of a loss's terms.
            results = [form_value(kernel_form, out, has_aux), grads]
        writes = trace.variable_writes()
        # A Variable passed as an argument is found by its position at each call; one the
        # function reaches by itself (a global, a closure, self) is the same object always,
        # and so is an argument that is also one of those, or whose identity the trace
        # relied on (Convention.identities).
        arguments = {id(leaf) for leaf in leaves if isinstance(leaf, Variable)}
        pinned = trace.identities | _reached_variables(fn, arguments) if arguments else set()
        flat, trees, returns = [], [], []
        # What the function returned: its argument leaves themselves (the plain call's
        # own), values the kernel computes, or values fixed by the trace.
        # (Under tf.function's rules an array argument is a tensor to the function: one
        # it returns comes back a Tensor, a kernel output.)
        def given_back(i, leaf):  # returned as the argument leaf itself
            if id(leaf) in pinned:
                return False
            if isinstance(leaf, Variable):
                return True
            return kernel_form == "value" and not (tf_rules and i in inputs and rules[
                i].eager == "tensor" and not eager_tensor(leaves[i]))

        given = {id(leaf): i for i, leaf in enumerate(call_leaves) if given_back(i, leaf)}
        for result in results:
            result_leaves, tree = tree_flatten(result)
            trees.append(tree)
            returns += [_returned(fn, leaf, given, flat) for leaf in result_leaves]
        program = trace.program(flat + [value for _, value in writes])
    check, dump = settings.switch("SRCXFORM_CHECK"), os.environ.get("SRCXFORM_DUMP", "")
    if check:
        program.check()
    if "ir" in dump:
        print(f"# traced\n{program}\n")
    program = optimize(program, check=check)
    position = {id(leaf): i for i, leaf in enumerate(leaves)
                if isinstance(leaf, Variable) and id(leaf) not in pinned}
    variables = [position.get(id(v), v)
                 for v, _ in sorted(trace.variable_inputs(), key=lambda p: p[1])]
    writes = [position.get(id(v), v) for v, _ in writes]
    returned = [how[1] for how in returns if how[0] == "const"]
    in_names, out_names = _kernel_names(wrt_positions(wrt), args, names, program, traced, variables,
                                             writes, trees, returns)
    return _Traced(name, program, tuple(traced), tuple(variables), tuple(writes),
                   tuple(trees), tuple(returns), tuple(guard_conditions(trace.guards)),
                   _probes(trace.captured), trace.created(returned), tuple(names),
                   in_names, out_names)


# Objects searched for Variables a function reaches by itself; past it, every argument is
# taken as reached (its kernel then serves those objects only).
_SEARCHED = 20000
_OPAQUE = (str, bytes, int, float, complex, type(None), np.generic, Value)


def _reached_variables(fn, wanted):
    """The ids among `wanted` (Variable arguments') of the Variables fn reaches by itself:
    what it reads (captures.py's globals, closures and attributes), its defaults, and
    whatever those hold (attributes, items, slots, a partial's arguments, the user's
    classes and modules), searched to _SEARCHED objects (past them, all of `wanted`)."""
    todo = [fn, getattr(fn, "__defaults__", None), getattr(fn, "__kwdefaults__", None)]
    todo += [probe.value for probe in captures.of_function(fn)]
    seen, found = set(), set()
    while todo and len(found) < len(wanted):
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, _OPAQUE) and id(obj) not in wanted:
            continue
        seen.add(id(obj))
        if id(obj) in wanted:
            found.add(id(obj))
        elif len(seen) > _SEARCHED:
            return set(wanted)
        elif isinstance(obj, (type, types.ModuleType)):  # the user's classes and modules
            todo += () if captures.is_library(obj) else vars(obj).values()
        elif isinstance(obj, dict):
            todo += obj.values()
        elif isinstance(obj, (list, tuple, set, frozenset, deque)):
            todo += obj
        elif isinstance(obj, np.ndarray):
            todo += obj.ravel().tolist() if obj.dtype == object else ()
        elif isinstance(obj, functools.partial):
            todo += [obj.func, obj.args, obj.keywords]
        elif isinstance(obj, types.MethodType):
            todo += [obj.__self__, obj.__func__]
        elif isinstance(obj, types.FunctionType):
            if captures.is_library(obj):
                continue
            todo += [obj.__defaults__, obj.__kwdefaults__]
            todo += [obj.__globals__.get(name) for name in index.code_names(obj.__code__)]
            todo += [captures.cell_value(c) for c in obj.__closure__ or ()]
        else:
            todo += vars(obj).values() if hasattr(obj, "__dict__") else ()
            todo += [getattr(obj, k, None) for c in type(obj).__mro__
                     for k in getattr(c, "__slots__", ())]
    return found


def _kernel_names(positions, args, names, program, traced, variables, writes, trees, returns):
    """Names of the kernel's inputs (less captured arrays) and outputs, as
    kernel_signature gives them: params_w, the Variable's name; value[0], grad
    params_w, new v."""
    def variable_name(k, v):
        if isinstance(v, int):
            return names[v]
        return program.hints.get(program.ins[len(traced) + k], v.name) if k is not None \
            else v.name

    def key(v):  # a leaf index, or the captured Variable itself
        return v if isinstance(v, int) else id(v)

    read = {key(v): variable_name(k, v) for k, v in enumerate(variables)}
    inputs = [names[i] for i in traced] + list(read.values())
    paths = [_path("value", p) for p in leaf_paths(trees[0])]
    for p, tree in zip(positions, trees[1].children if len(trees) > 1 else ()):
        start = sum(len(tree_flatten(a)[0]) for a in args[:p])
        paths += [f"grad {names[start + k]}" for k in range(tree.num_leaves)]
    outputs = [path for path, how in zip(paths, returns) if how[0] == "out"]
    outputs += [f"new {read.get(key(v)) or variable_name(None, v)}" for v in writes]
    return tuple(inputs), tuple(outputs)


_Traced = namedtuple("_Traced", "name program leaves variables writes trees returns guards "
                                "probes created leaf_names in_names out_names")


def _probes(captured):
    """The probes for what library code told a trace it relied on (Trace.capture)."""
    probes = []
    for obj, name in captured:
        probes += [captures.attribute(obj, name)] if name else captures.of_function(obj)
    return probes


def _path(root, keys):
    """A leaf's path as an expression: value, value[0], params['w']."""
    return root + "".join(f"[{k!r}]" for k in keys)


# A returned bool, int, str or None (not NumPy's str_) is a value the trace fixes, as a
# returned Python float is.
_FIXED = (bool, int, str, type(None))


def _returned(fn, leaf, given, flat):
    """How one leaf of what the traced function returned comes back (Spec.returns); the
    kernel's outputs are appended to `flat`."""
    if id(leaf) in given:
        return ("arg", given[id(leaf)])
    if isinstance(leaf, Tracer):
        flat.append(leaf)
        return ("out", len(flat) - 1, leaf.eager_kind, leaf.aval.weak)
    if isinstance(leaf, Dim):  # x.shape[0]: a Python int eagerly, read at each call
        flat.append(as_value(leaf))
        return ("out", len(flat) - 1, "python", False)
    if isinstance(leaf, (Variable, float, complex)) or \
            isinstance(leaf, _FIXED) and not isinstance(leaf, np.generic):
        return ("const", leaf)
    if eager_tensor(leaf) or isinstance(leaf, (np.ndarray, np.generic)) \
            and leaf.dtype.kind in "biuf":
        flat.append(leaf)
        return ("out", len(flat) - 1, "tensor" if eager_tensor(leaf) else "numpy",
                eager_tensor(leaf) and leaf._weak)
    name = getattr(fn, "__qualname__", "the function")
    raise TypeError(f"srcxform.differentiable: {name} returns {_short_repr(leaf)} (of type "
                    f"{type(leaf).__name__}); a compiled function returns arrays, tensors, "
                    "Variables and numbers (and strings and None, as fixed values), in "
                    "tuples, lists and dicts: return it from an uncompiled function that "
                    "calls this one")


def _pickles(value):
    try:
        pickle.dumps(value)
    except Exception:  # noqa: BLE001 - whatever pickle raises, the value does not pickle
        return False
    return True


def _short_repr(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _refuse_created(fn, created):
    """Raises where tracing fn again creates Variables again: eagerly each call would
    make new ones (tf.function raises likewise)."""
    if not created:
        return
    name = getattr(fn, "__qualname__", "the function")
    lines = "\n".join(f"  {name!r}, first used at {origin}" for name, origin in created)
    raise ValueError(f"srcxform.differentiable: {name} creates a new Variable at each call, "
                     f"which a compiled function may not (it would keep the first one):\n"
                     f"{lines}\nCreate it outside the function and pass it in or close over "
                     "it, or create it only once (at the first call: `if self.v is None: "
                     "self.v = tf.Variable(...)`, as Keras layers build their weights)")


def form_value(form, out, has_aux):
    """What a kernel of a gradient form returns beside the gradients, from fn's output:
    value_and_grad's all of it, grad's nothing (with has_aux, the aux)."""
    if form == "grad":
        return out[1] if has_aux else ()
    return out


def check_positions(positions, args):
    """TypeError for a `wrt` position past the positional arguments given."""
    for p in positions:
        if not -len(args) <= p < len(args):
            raise TypeError(f"wrt={p}, but the function got {len(args)} positional arguments")


def inline_here():
    """Whether a compiled function called now runs its Python instead: a caller is
    tracing (composition: differentiable(f.grad)), or recording on a tape or accumulator."""
    tapes = CONTEXT.tapes
    return bool(CONTEXT.traces or CONTEXT.accumulators or
                tapes and any(t._recording for t in tapes))


def inline(fn, wrt, has_aux, form, args, kwargs):
    """What `form` of fn (as tracing runs it) returns, run on the caller's values."""
    if form == "value":
        return fn(*args, **kwargs)
    out, grads = traced_value_and_grad(fn, args, kwargs, wrt_positions(wrt), has_aux)
    return form_result(form, isinstance(wrt, int), form_value(form, out, has_aux), grads,
                       has_aux)


def _own_source(leaf):
    """identity(leaf), a source of its own of leaf's eager kind (a NumPy array's stays
    one)."""
    from srcxform.ops import identity  # the ops are above this layer

    return of_kind(identity(leaf), eager_kind(leaf))


def traced_value_and_grad(fn, args, kwargs, positions, has_aux=False, fresh=False):
    """Runs fn under a tape watching the args at `positions`; unconnected gradients are
    zeros, as JAX gives. Works on Tracers (emitting the adjoint) and on Tensors; `fresh`:
    the args are a kernel's own input leaves. Returns fn's output (with has_aux, its
    pair) and the gradients of the scalar it differentiates."""
    check_positions(positions, args)
    _check_wrt(fn, args, positions)
    sources = []
    # Each tensor argument is a source of its own, as a kernel's leaves are (JAX's rule):
    # not its uses elsewhere (another argument, a global, a closure of fn). A kernel's own
    # leaves (`fresh`) are sources of their own already unless passed twice; a Variable is
    # one object wherever it is.
    counts = Counter(id(leaf) for leaf in tree_flatten((args, kwargs))[0])
    with GradientTape(persistent=False, watch_accessed_variables=False) as tape:
        for p in positions:
            leaves, tree = tree_flatten(args[p])
            leaves = [_own_source(leaf) if isinstance(leaf, Value) and not isinstance(
                leaf, Variable) and (counts[id(leaf)] > 1 or not fresh)
                else leaf if isinstance(leaf, Value) else
                of_kind(Tensor(np.asarray(leaf)), eager_kind(leaf))
                for leaf in leaves]
            sources.append((leaves, tree))
            tape.watch(leaves)
        call_args = list(args)
        for p, (leaves, tree) in zip(positions, sources):
            call_args[p] = tree_unflatten(tree, leaves)
        out = fn(*call_args, **kwargs)
    target = _differentiated(fn, out, has_aux, scalar=bool(positions))
    every = [leaf for leaves, _ in sources for leaf in leaves]
    found = [g if g is not None else _zeros_like(leaf)
             for g, leaf in zip(tape._gradient_leaves(target, every, None), every)]  # one sweep
    if CONTEXT.traces:
        for g, leaf in zip(found, every):
            CONTEXT.traces[-1].name_gradient(g, leaf)
    grads, start = [], 0
    for leaves, tree in sources:
        grads.append(tree_unflatten(tree, found[start:start + len(leaves)]))
        start += len(leaves)
    return out, grads


def _differentiated(fn, out, has_aux, scalar=True):
    """The output the gradient forms differentiate: fn's (with has_aux, the first of the
    pair it returns), a scalar float as JAX's grad requires (where a gradient is taken:
    `scalar`); a TypeError naming it else: never the gradient of a sum the user did not
    write."""
    name = getattr(fn, "__qualname__", "the function")
    if has_aux:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError(f"{name} is differentiated with has_aux=True, so it must return "
                            f"a pair (output, aux), but it returned {described(out)}")
        out = out[0]
    shape, dtype = _shape_and_dtype(out)
    if not scalar or shape == () and dtype is not None and dtype.kind == "f":
        return out
    raise OutputNotScalarError(
        f"grad and value_and_grad need a scalar float output, as JAX's do (\"Gradient only "
        f"defined for scalar-output functions\"), but {name} returned {described(out)}. "
        "To get other values back beside the gradient, return (output, aux) and pass "
        "has_aux=True; for the derivatives of each element of a non-scalar output, use "
        "srcxform.jacobian; for the gradient of its sum, return tf.reduce_sum(...)")


def _shape_and_dtype(out):
    """An output leaf's shape and dtype; (None, None) for anything else (a structure)."""
    if isinstance(out, bool):
        return (), np.dtype(bool)
    if isinstance(out, (int, float)):  # a Python number is a scalar of NumPy's dtype for it
        return (), np.asarray(out).dtype
    dtype = getattr(out, "dtype", None)
    if isinstance(dtype, np.dtype) and not isinstance(out, (tuple, list, dict)):
        return tuple(getattr(out, "shape", ())), dtype
    return None, None


def described(out):
    """What a function returned, for a message: a tuple of 2 values, an output of shape
    (3,) and dtype float64."""
    shape, dtype = _shape_and_dtype(out)
    if dtype is not None:
        return f"an output of shape {shape} and dtype {dtype.name}"
    if isinstance(out, (tuple, list, dict)):
        return f"a {type(out).__name__} of {len(out)} values"
    return "None" if out is None else f"a {type(out).__name__}"


def _check_wrt(fn, args, positions):
    """Refuses a wrt argument with a leaf that is not a float, as JAX's grad does: the
    tape gives such a source no gradient, and zeros in its dtype would claim a gradient of
    0 where the true one need not be (x * x at integer x)."""
    params = _param_names(fn)
    for p in positions:
        for path, leaf in _leaf_paths(args[p], params[p] if p < len(params) else f"arg{p}"):
            got = _non_float(leaf, path)
            if got:
                name = getattr(fn, "__name__", "f")
                raise TypeError(f"the gradient of {name} wrt argument {p} ({path}): grad "
                                f"requires real-valued (float) inputs, as JAX's does, but got "
                                f"{got}")


def _non_float(leaf, path):
    """What a wrt leaf that cannot have a gradient is, and the way out; None for a float."""
    static = "a static argument (part of the cache key) with no gradient"
    if isinstance(leaf, bool):
        return f"a Python bool, {static}; leave it out of wrt"
    if isinstance(leaf, int):  # a Python int (NumPy's integers are not ints)
        return (f"a Python int, {static}; pass a float ({float(leaf)!r}) to differentiate "
                f"it, or leave it out of wrt")
    if isinstance(leaf, float):
        return None
    dtype = getattr(leaf, "dtype", None)
    if isinstance(dtype, np.dtype):
        if dtype.kind == "f":
            return None
        return f"{dtype.name}; cast it first (np.asarray({path}, np.float64)), or leave it " \
               "out of wrt"
    what = "None" if leaf is None else f"a {type(leaf).__name__}"
    return f"{what}, which has no gradient; leave it out of wrt"


def _leaf_paths(value, root):
    """(path, leaf) for each leaf of an argument, in tree_flatten's order: params['w'][0]."""
    leaves, tree = tree_flatten(value)
    return [(_path(root, keys), leaf) for keys, leaf in zip(leaf_paths(tree), leaves)]



def _zeros_like(leaf):
    from srcxform.ops import zeros_like

    return zeros_like(leaf)


def _param_names(fn):
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return []


def _leaf_names(fn, args, kwargs):
    """A readable name for each argument leaf: the parameter name, with the path into
    nested structures (params['w'] -> params_w)."""
    params = _param_names(fn)
    named = [(params[i] if i < len(params) else f"arg{i}", arg) for i, arg in enumerate(args)]
    named += [(k, kwargs[k]) for k in sorted(kwargs)]
    return ["_".join(map(str, (name, *keys)))
            for name, arg in named for keys in leaf_paths(tree_flatten(arg)[1])]
