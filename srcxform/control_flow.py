"""Structured control flow under TensorFlow's and JAX's names: cond, while_loop, fori_loop,
scan and map_fn.

Each runs as the Python it stands for, as TensorFlow runs them eagerly: the tape records
the operations of the branch taken and of every iteration, so gradients flow through them
to any order. Inside a compiled function the same holds while the predicate and the trip
count are known when tracing (a Python value, or a tensor computed from constants): the
branch taken is traced and the loop unrolls. A predicate or bound computed from the
function's arguments (or a size) makes a structured IR operation instead
(structured.py): the branches and the body are traced once, and one kernel runs a real
`if`, `while` or `for` for every trip count; a fori_loop (JAX's) too over Python-int
bounds, but where its body needs i as a Python int.

The loops take `checkpoint=k` (srcxform's own option; None: every iteration's carries
are stored for the gradient): a compiled loop's gradient then stores the carries of
every k-th iteration only and recomputes the others from them (structured.py), the same
gradient to the bit for a fraction of the memory. Eager loops record every iteration
on the tape regardless.
"""

import functools
import math

import numpy as np

from srcxform.passes import structured
from srcxform.core.aval import Aval
from srcxform.core.dims import Dim
from srcxform.core.dtypes import as_dtype
from srcxform.core.errors import IndexArgumentError, TracingError, user_line
from srcxform.ops.creation import convert_to_tensor, zeros
from srcxform.ops.elementwise import identity
from srcxform.ops.shape import stack
from srcxform.core.tensor import Value, as_value
from srcxform.ad.trace import Rerolled, Tracer
from srcxform.core.recording import CONTEXT
from srcxform.core.tree import leaf_paths, tree_flatten, tree_unflatten

__all__ = ["cond", "fori_loop", "map_fn", "scan", "while_loop"]


def cond(pred, true_fn=None, false_fn=None, name=None):
    """true_fn() if pred else false_fn() (tf.cond). pred is a Python bool or a scalar
    tensor; the functions take no arguments and may return any structure."""
    for label, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        if fn is None:
            raise TypeError(f"cond(): '{label}' argument required")
        if not callable(fn):
            raise TypeError(f"cond(): '{label}' must be callable")
    if isinstance(pred, Tracer):
        return _compiled_cond(pred, true_fn, false_fn)
    return true_fn() if _truth(pred, "cond") else false_fn()


def switch_case(branch_index, branch_fns, default=None, name=None):
    """branch_fns[branch_index]() (tf.switch_case): branch_fns is a list of functions of no
    arguments, or a dict or list of (int, function) pairs whose keys are 0 .. n-1; an index
    out of range runs `default`, or the last branch where there is none. An index known
    only at run time compiles as a chain of conds."""
    fns = _branches(branch_fns)
    if not _integer_scalar(branch_index):
        raise TypeError(f"switch_case: branch_index must be an integer scalar; got "
                        f"{branch_index!r}\n  at {user_line()}")
    cases, otherwise = (fns, default) if default is not None else (fns[:-1], fns[-1])
    if isinstance(branch_index, Tracer):
        chain = otherwise
        for k in reversed(range(len(cases))):
            chain = functools.partial(cond, branch_index == k, cases[k], chain)
        return chain()
    index = int(branch_index)
    return cases[index]() if 0 <= index < len(cases) else otherwise()


def _branches(branch_fns):
    """switch_case's functions in the order of their keys."""
    pairs = list(branch_fns.items()) if isinstance(branch_fns, dict) else list(branch_fns)
    if pairs and all(isinstance(pair, tuple) for pair in pairs):
        keys = [key for key, _ in pairs]
        if not all(type(key) is int for key in keys) or \
                sorted(keys) != list(range(len(keys))):
            raise ValueError(f"switch_case: the branches' keys must be the ints 0 to "
                             f"{len(keys) - 1}, got {keys}")
        pairs = [fn for _, fn in sorted(pairs, key=lambda pair: pair[0])]
    if not pairs or not all(callable(fn) for fn in pairs):
        raise TypeError(f"switch_case: branch_fns must be a non-empty list or dict of "
                        f"functions, got {branch_fns!r}")
    return pairs


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, maximum_iterations=None, name=None,
               checkpoint=None):
    """Repeats `loop_vars = body(*loop_vars)` while `cond(*loop_vars)` is true, at most
    `maximum_iterations` times (tf.while_loop). loop_vars is a tuple or list (its leaves
    become tensors, as TensorFlow converts them); body returns the same structure."""
    checkpoint = structured.checked_checkpoint(checkpoint, "while_loop")
    if not isinstance(loop_vars, (tuple, list)) or not loop_vars:
        raise ValueError("while_loop: 'loop_vars' must be provided, as a non-empty tuple or "
                         "list")
    # Python numbers become tensors (TensorFlow's rule); compiled, each takes the dtype the
    # body gives it, as eagerly, where float32 + float64 promotes.
    numbers = {k for k, leaf in enumerate(tree_flatten(loop_vars)[0])
               if type(leaf) in (int, float)}
    loop_vars = _as_tensors(loop_vars)
    _check_iterations(maximum_iterations)
    if CONTEXT.traces and isinstance(maximum_iterations, (Tracer, Dim)):  # known at run time
        return _compiled_while_bounded(cond, body, loop_vars, maximum_iterations, checkpoint,
                                       numbers)
    structure = tree_flatten(loop_vars)[1]
    count = 0
    while maximum_iterations is None or count < int(maximum_iterations):
        pred = cond(*loop_vars)
        if isinstance(pred, Tracer):  # known at run time: the rest of the loop compiles
            numbers = numbers if count == 0 else set()  # else the body's dtypes already
            if maximum_iterations is not None:
                return _compiled_while_bounded(cond, body, loop_vars,
                                               int(maximum_iterations) - count, checkpoint,
                                               numbers)
            return _compiled_while(cond, body, loop_vars, checkpoint, numbers)
        if not _truth(pred, "while_loop"):
            break
        result = _like_loop_vars(body(*loop_vars), loop_vars)
        if not isinstance(result, (tuple, list)) or tree_flatten(result)[1] != structure:
            raise ValueError("while_loop: body must return the structure of loop_vars "
                             f"({_kind(loop_vars)} of {len(loop_vars)}), got {_kind(result)}")
        loop_vars = _as_tensors(result)
        count += 1
    return loop_vars


def kept_while_loop(cond, body, loop_vars):
    """while_loop for autograph's `while` on a traced test: the loop variables are kept
    as they are (a NumPy value stays NumPy's, as in the eager loop), where TensorFlow's
    while_loop makes them tensors."""
    if not CONTEXT.traces:
        return while_loop(cond, body, loop_vars)
    return _compiled_while(cond, body, loop_vars, None)


def fori_loop(lower, upper, body_fun, init_val, checkpoint=None):
    """`val = body_fun(i, val)` for i in range(lower, upper), then val (jax.lax.fori_loop).

    Eagerly i is a Python int. Compiled, the body is traced once into one loop, whatever
    the trip count: i is a traced int64 scalar, weak (a Python int's dtype: c * i is
    float32 for a float32 c) where the bounds are known when tracing (Python ints). It
    indexes: `x[i]`, `x[i - 1]` wrapping as in Python. A body that needs i as a Python
    int (`range(i)`, `int(i)`, `if i == 0`, a shape, a list index) unrolls silently, as
    it did (the same values; SlowCompileWarning tells of a long compile), as does a loop
    of fewer than two trips, or one that reads no traced value."""
    checkpoint = structured.checked_checkpoint(checkpoint, "fori_loop")
    if CONTEXT.traces and any(isinstance(b, Dim) for b in (lower, upper)) \
            and not any(isinstance(b, Tracer) for b in (lower, upper)):
        restore = structured.restorer()
        try:
            return named_fori_loop(lower, upper, body_fun, init_val, checkpoint=checkpoint)
        except TracingError:  # a body that needs i as a Python int: unrolled at these sizes
            restore()  # (autograph's range loop unrolls on its own, keeping Python's names)
            lower, upper = int(lower), int(upper)  # (a size's int guards the kernel)
    return named_fori_loop(lower, upper, body_fun, init_val, checkpoint=checkpoint)


def named_fori_loop(lower, upper, body_fun, init_val, names=None, checkpoint=None):
    """fori_loop; `names`, one per leaf of init_val, name the loop variables in errors
    where the body's parameter and the leaf's path would not (autograph's loop state,
    a dict of the user's variables)."""
    if CONTEXT.traces and any(isinstance(b, (Tracer, Dim)) for b in (lower, upper)):
        return _compiled_fori(lower, upper, body_fun, init_val, checkpoint, names)
    lower, upper = _int_bound(lower, "lower"), _int_bound(upper, "upper")
    if CONTEXT.traces and upper - lower > 1 and not structured.UNROLLING.get():
        rolled = _rolled_fori(lower, upper, body_fun, init_val, checkpoint, names)
        if rolled is not None:
            return rolled
    val = init_val
    for i in range(lower, upper):
        val = body_fun(i, val)
    return val


def _check_iterations(bound):
    """TypeError for a maximum_iterations that is no integer scalar: eagerly int() would
    truncate 2.5 to 2, and compiled the counter would be compared with 2.5 (3 trips)."""
    if bound is not None and not isinstance(bound, Dim) and not _integer_scalar(bound):
        raise TypeError(f"while_loop: maximum_iterations must be an integer scalar; got "
                        f"{bound!r}\n  at {user_line()}")


def _int_bound(bound, which):
    """A fori_loop bound known when tracing, as a Python int; a float one is a TypeError,
    as in JAX (int() would truncate 2.5 to 2 silently)."""
    if not _integer_scalar(bound):
        raise TypeError(f"fori_loop: the {which} bound must be an integer scalar; got "
                        f"{bound!r}")
    return bound if isinstance(bound, int) else int(bound)  # a Python int of any size


def _integer_scalar(bound):
    """Whether a loop bound is an integer scalar: a Python int (not a bool), or a tensor,
    traced value or array of an integer dtype and no axis."""
    if isinstance(bound, int):
        return not isinstance(bound, bool)
    aval = getattr(bound, "aval", None)
    kind, ndim = (aval.dtype.kind, len(aval.shape)) if aval is not None else \
        (np.asarray(bound).dtype.kind, np.ndim(bound))
    return kind in "iu" and not ndim


def _rolled_fori(lower, upper, body_fun, init_val, checkpoint, names):
    """The loop over Python-int bounds as one loop, i a traced weak int64; None, the traces
    put back, where it reads no traced value or fails (the Python loop then is as it was)."""
    restore = structured.restorer()
    try:
        out = _compiled_fori(lower, upper, body_fun, init_val, checkpoint, names, static=True)
    except Rerolled:  # the whole function is traced again (compiler.py)
        raise
    except Exception:  # noqa: BLE001 - any failure: the Python loop, as before
        out = None
    if out is None:
        restore()
    return out


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None, checkpoint=None):
    """The accumulators `a = fn(a, x)` for each x along elems' first axis, stacked
    (tf.scan). elems and the accumulator may be structures of tensors; without an
    initializer the first element starts the accumulator and is the first output."""
    checkpoint = structured.checked_checkpoint(checkpoint, "scan")
    leaves, elems_def = tree_flatten(elems)
    leaves = [convert_to_tensor(leaf) for leaf in leaves]
    length = _row_count(leaves, elems, "scan")
    if initializer is None and length == 0:
        raise IndexArgumentError("scan: elems has no elements, and without an initializer "
                                 "the first element starts the accumulator")
    if any(isinstance(leaf, Tracer) for leaf in leaves):
        return _compiled_scan(fn, leaves, elems_def, initializer, reverse, checkpoint)
    order = list(range(length))[::-1] if reverse else list(range(length))

    def element(k):
        return tree_unflatten(elems_def, [leaf[k] for leaf in leaves])

    if initializer is None:
        acc, rest = element(order[0]), order[1:]
        outputs = [acc]
    else:
        acc, rest, outputs = initializer, order, []
    for k in rest:
        acc = fn(acc, element(k))
        outputs.append(acc)
    if not outputs:  # no elements: the accumulator's leaves stacked zero times (as compiled)
        flat, acc_def = tree_flatten(initializer)
        flat = [convert_to_tensor(leaf) for leaf in flat]
        return tree_unflatten(acc_def, [zeros((0, *leaf.shape), leaf.dtype) for leaf in flat])
    if reverse:
        outputs.reverse()
    flat = [tree_flatten(out)[0] for out in outputs]
    acc_def = tree_flatten(outputs[0])[1]
    return tree_unflatten(acc_def, [stack([f[j] for f in flat]) for j in range(len(flat[0]))])


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True,
           swap_memory=False, infer_shape=True, name=None, fn_output_signature=None):
    """fn applied to each row of elems (the slices of its leaves along their first axis),
    the results stacked (tf.map_fn). elems may be a structure, and fn may return any
    structure of tensors; `fn_output_signature` (or TF1's `dtype`), a dtype or a structure
    of them, says what fn returns and is checked. Compiled, rows known only at run time
    make one loop, as scan's do."""
    signature = fn_output_signature if fn_output_signature is not None else dtype
    leaves, elems_def = tree_flatten(elems)
    leaves = [convert_to_tensor(leaf) for leaf in leaves]
    length = _row_count(leaves, elems, "map_fn")
    if any(isinstance(leaf, Tracer) for leaf in leaves):
        outs, out_def = _compiled_map(fn, leaves, elems_def, length)
    elif length == 0:  # TensorFlow's empty result: a vector per leaf of the signature
        spec = signature if signature is not None else tree_unflatten(
            elems_def, [leaf.dtype for leaf in leaves])
        dtypes, spec_def = tree_flatten(spec)
        return tree_unflatten(spec_def, [zeros((0,), d) for d in dtypes])
    else:
        rows = [_flat(fn(tree_unflatten(elems_def, [leaf[k] for leaf in leaves])),
                      "map_fn: fn") for k in range(length)]
        out_def = rows[0][1]
        if any(row_def != out_def for _, row_def in rows):
            raise ValueError("map_fn: fn must return the same structure for every row")
        outs = [stack([row[j] for row, _ in rows]) for j in range(len(rows[0][0]))]
    if signature is not None:
        expected = [as_dtype(d) for d in tree_flatten(signature)[0]]
        if expected != [out.dtype for out in outs]:
            raise TypeError(f"map_fn: fn_output_signature says {[d.name for d in expected]}, "
                            f"but fn returns {[out.dtype.name for out in outs]}")
    return tree_unflatten(out_def, outs)


# ----- compiled (structured.py) -----


def _compiled_map(fn, leaves, elems_def, length):
    """map_fn as one fori_loop over the rows, stacking what fn gives for each."""
    trees = {}

    def body(i, carries, rows):
        out, trees["out"] = _flat(fn(tree_unflatten(elems_def, rows)), "map_fn: fn")
        return [], out

    python_floats = set()
    outs = structured.fori_loop(0, length, body, [], [], leaves,
                                _stacking(length, python_floats))
    return _stacked_as_eagerly(outs, python_floats), trees["out"]


def _stacking(length, python_floats):
    """fori_loop's stacked outputs' avals, of the rows the body gives; it notes in
    `python_floats` those rows that are Python floats (weak)."""
    def stacked(rows):
        python_floats.update(k for k, r in enumerate(rows) if r.weak and r.dtype.kind == "f")
        return [Aval((length,) + tuple(r.shape), r.dtype) for r in rows]

    return stacked


def _stacked_as_eagerly(outs, python_floats):
    """Stacked rows of Python floats, exact (float64) in the loop, as float32: eager's stack
    of the Python floats (TensorFlow's conversion). Python ints stay int64, so that none
    wraps where eagerly one past int32 would make the stack int64."""
    from srcxform.ops import cast

    return [cast(y, np.float32) if k in python_floats else y for k, y in enumerate(outs)]


def _flat(tree, what):
    """The leaves of a loop's variables or a branch's results, each checked to be a value:
    Python numbers and NumPy values are kept as they are, so that the loop or cond knows
    what each is in an eager run (structured.eager_kinds); the rest as values."""
    leaves, treedef = tree_flatten(tree)
    try:
        values = [as_value(leaf) for leaf in leaves]
    except TypeError:
        raise TypeError(f"{what} must give tensors, numbers or structures of them, got "
                        f"{_kind(tree)}") from None
    return [leaf if isinstance(leaf, (bool, int, float, np.generic, np.ndarray)) else value
            for leaf, value in zip(leaves, values)], treedef


def _leaf_names(tree, root):
    """A name for each leaf of a loop's variables: `x`, `state[1]`."""
    return [root + "".join(f"[{k!r}]" for k in keys) for keys in leaf_paths(tree_flatten(
        tree)[1])]


def _compiled_cond(pred, true_fn, false_fn):
    trees = {}

    def branch(name, fn):
        def flat():
            leaves, trees[name] = _flat(fn(), f"cond(): {name}")
            return leaves
        return flat

    outs = structured.cond(pred, branch("true_fn", true_fn), branch("false_fn", false_fn))
    if trees["true_fn"] != trees["false_fn"]:
        raise ValueError("cond(): true_fn and false_fn must return the same structure")
    return tree_unflatten(trees["true_fn"], outs)


def _compiled_while(cond, body, loop_vars, checkpoint, numbers=()):
    leaves, treedef = _flat(loop_vars, "while_loop: loop_vars")
    names = _loop_var_names(body, loop_vars)

    def body_flat(carries):
        result = _like_loop_vars(body(*tree_unflatten(treedef, carries)), loop_vars)
        if not isinstance(result, (tuple, list)) or tree_flatten(result)[1] != treedef:
            raise ValueError("while_loop: body must return the structure of loop_vars "
                             f"({_kind(loop_vars)} of {len(loop_vars)}), got {_kind(result)}")
        return _flat(result, "while_loop: body")[0]

    outs = structured.while_loop(lambda c: cond(*tree_unflatten(treedef, c)), body_flat,
                                 leaves, names, checkpoint, numbers)
    return tree_unflatten(treedef, outs)


def _like_loop_vars(result, loop_vars):
    """The body's result, a tuple for tuple loop_vars and a list for list ones: TensorFlow
    takes either at the top (below it, the structure must match)."""
    if type(result) in (tuple, list) and type(loop_vars) in (tuple, list):
        return type(loop_vars)(result)
    return result


def _compiled_while_bounded(cond, body, loop_vars, remaining, checkpoint, numbers):
    """maximum_iterations as a counter carried beside the loop variables."""
    from srcxform.ops import logical_and

    def counted_cond(count, *vs):
        return logical_and(count < remaining, as_value(cond(*vs)) != 0)

    def counted_body(count, *vs):
        return (count + 1, *body(*vs))

    zero = convert_to_tensor(0)
    out = _compiled_while(counted_cond, counted_body, (zero, *loop_vars), checkpoint,
                          {k + 1 for k in numbers})[1:]
    return type(loop_vars)(out) if isinstance(loop_vars, list) else out


def _loop_var_names(body, loop_vars):
    """The body's parameter names for the loop variables (a structure's leaves get paths)."""
    params = structured.param_names(body, len(loop_vars), "loop_var")
    return [name for p, v in zip(params, loop_vars) for name in _leaf_names(v, p)]


def _compiled_fori(lower, upper, body_fun, init_val, checkpoint, names=None, static=False):
    """The structured fori_loop; `static`: see structured.fori_loop."""
    leaves, treedef = _flat(init_val, "fori_loop: init_val")
    if names is None:
        names = _leaf_names(init_val, structured.param_names(body_fun, 2, "arg")[1])

    def body_flat(i, carries):
        result = body_fun(i, tree_unflatten(treedef, carries))
        if tree_flatten(result)[1] != treedef:
            raise ValueError(f"fori_loop: body_fun must return the structure of init_val "
                             f"({_kind(init_val)}), got {_kind(result)}")
        return _flat(result, "fori_loop: body_fun")[0], []

    outs = structured.fori_loop(lower, upper, lambda i, c, rows: body_flat(i, c), leaves, names,
                                checkpoint=checkpoint, static=static)
    return None if outs is None else tree_unflatten(treedef, outs)


def _compiled_scan(fn, leaves, elems_def, initializer, reverse, checkpoint):
    """scan as one fori_loop over the elements (any number of them), reading a row of
    each element array and stacking each accumulator's rows."""
    from srcxform.ops import concat, expand_dims

    if reverse:
        leaves = [leaf[::-1] for leaf in leaves]
    if initializer is None:
        acc = tree_unflatten(elems_def, [leaf[0] for leaf in leaves])
        leaves = [leaf[1:] for leaf in leaves]
    else:
        acc = initializer
    acc_leaves, acc_def = _flat(acc, "scan: initializer")
    length = leaves[0].shape[0]

    python_floats = set()
    def body(i, carries, rows):
        new = fn(tree_unflatten(acc_def, carries), tree_unflatten(elems_def, rows))
        new_leaves, new_def = _flat(new, "scan: fn")
        if new_def != acc_def:
            raise ValueError("scan: fn must return the structure of its accumulator "
                             f"({_kind(acc)}), got {_kind(new)}")
        return new_leaves, new_leaves

    outs = structured.fori_loop(0, length, body, acc_leaves, _leaf_names(acc, "acc"),
                                leaves, _stacking(length, python_floats), checkpoint)
    outs = _stacked_as_eagerly(outs[len(acc_leaves):], python_floats)
    if initializer is None:  # the first element is the first output
        outs = [concat([expand_dims(a, 0), y], 0) for a, y in zip(acc_leaves, outs)]
    if reverse:
        outs = [y[::-1] for y in outs]
    return tree_unflatten(acc_def, outs)


def _row_count(leaves, elems, op):
    """The number of rows elems' leaves share (their first axis; compared with guards where
    traced, so a kernel is reused only for leaves of one length); ValueError for a leaf of
    rank 0 or leaves of different lengths (a compiled loop would read past the shorter)."""
    if not leaves or any(leaf.ndim == 0 for leaf in leaves):
        raise ValueError(f"{op}: elems must be tensors of rank 1 or more, whose rows fn "
                         f"takes; got {_kind(elems)}")
    length = leaves[0].shape[0]
    if any(leaf.shape[0] != length for leaf in leaves):
        raise ValueError(f"{op}: the elems have different numbers of rows: "
                         f"{[leaf.shape[0] for leaf in leaves]}")
    return length


def _truth(pred, op):
    """A predicate's truth; a tensor of more than one element is ambiguous, as in TF."""
    if isinstance(pred, Value) and math.prod(pred.shape) != 1:
        raise ValueError(f"{op}: the predicate has shape {tuple(pred.shape)}; it must be a "
                         "scalar (use reduce_all or reduce_any)")
    return bool(pred)


def _as_tensors(values):
    """Loop variables as TensorFlow converts them: Python numbers and arrays become
    tensors (a traced array argument too: the compiled call returns a Tensor where one
    comes back unchanged, as eagerly); a value is kept as it is, a weak one too (a Python
    number traced: autograph's carries)."""
    leaves, treedef = tree_flatten(values)
    return tree_unflatten(treedef, [
        (identity(leaf) if getattr(leaf, "eager_kind", None) == "numpy" else as_value(leaf))
        if isinstance(leaf, Value) else convert_to_tensor(leaf) for leaf in leaves])


def _kind(value):
    return type(value).__name__
