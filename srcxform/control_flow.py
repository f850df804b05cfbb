"""Structured control flow under TensorFlow's and JAX's names: cond, while_loop, fori_loop
and scan.

Each runs as the Python it stands for, as TensorFlow runs them eagerly: the tape records
the operations of the branch taken and of every iteration, so gradients flow through them
to any order. Inside a compiled function the same holds while the predicate and the trip
count are known when tracing (a Python value, or a tensor computed from constants): the
branch taken is traced and the loop unrolls. A predicate computed from the function's
arguments raises TracingError at the user's line; compiling data-dependent branches and
loops into real ones is the control-flow issue's work, not done yet.
"""

import math

from srcxform.ops.creation import convert_to_tensor
from srcxform.ops.shape import stack
from srcxform.tensor import Value
from srcxform.tree import tree_flatten, tree_unflatten

__all__ = ["cond", "fori_loop", "scan", "while_loop"]


def cond(pred, true_fn=None, false_fn=None, name=None):
    """true_fn() if pred else false_fn() (tf.cond). pred is a Python bool or a scalar
    tensor; the functions take no arguments and may return any structure."""
    for label, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        if fn is None:
            raise TypeError(f"cond(): '{label}' argument required")
        if not callable(fn):
            raise TypeError(f"cond(): '{label}' must be callable")
    return true_fn() if _truth(pred, "cond") else false_fn()


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, maximum_iterations=None, name=None):
    """Repeats `loop_vars = body(*loop_vars)` while `cond(*loop_vars)` is true, at most
    `maximum_iterations` times (tf.while_loop). loop_vars is a tuple or list (its leaves
    become tensors, as TensorFlow converts them); body returns the same structure."""
    if not isinstance(loop_vars, (tuple, list)) or not loop_vars:
        raise ValueError("while_loop: 'loop_vars' must be provided, as a non-empty tuple or "
                         "list")
    loop_vars = _as_tensors(loop_vars)
    structure = tree_flatten(loop_vars)[1]
    count = 0
    while (maximum_iterations is None or count < int(maximum_iterations)) and \
            _truth(cond(*loop_vars), "while_loop"):
        result = body(*loop_vars)
        if not isinstance(result, (tuple, list)) or tree_flatten(result)[1] != structure:
            raise ValueError("while_loop: body must return the structure of loop_vars "
                             f"({_kind(loop_vars)} of {len(loop_vars)}), got {_kind(result)}")
        loop_vars = _as_tensors(result)
        count += 1
    return loop_vars


def fori_loop(lower, upper, body_fun, init_val):
    """`val = body_fun(i, val)` for i in range(lower, upper), then val (jax.lax.fori_loop).
    The bounds are Python ints (or tensors known when tracing); i is a Python int, so it
    can index (`x[i]`)."""
    val = init_val
    for i in range(int(lower), int(upper)):
        val = body_fun(i, val)
    return val


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None):
    """The accumulators `a = fn(a, x)` for each x along elems' first axis, stacked
    (tf.scan). elems and the accumulator may be structures of tensors; without an
    initializer the first element starts the accumulator and is the first output."""
    leaves, elems_def = tree_flatten(elems)
    leaves = [convert_to_tensor(leaf) for leaf in leaves]
    length = leaves[0].shape[0]
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
    if not outputs:
        raise ValueError("scan: elems has no elements")
    if reverse:
        outputs.reverse()
    flat = [tree_flatten(out)[0] for out in outputs]
    acc_def = tree_flatten(outputs[0])[1]
    return tree_unflatten(acc_def, [stack([f[j] for f in flat]) for j in range(len(flat[0]))])


def _truth(pred, op):
    """A predicate's truth; a tensor of more than one element is ambiguous, as in TF."""
    if isinstance(pred, Value) and math.prod(pred.shape) != 1:
        raise ValueError(f"{op}: the predicate has shape {tuple(pred.shape)}; it must be a "
                         "scalar (use reduce_all or reduce_any)")
    return bool(pred)


def _as_tensors(values):
    leaves, treedef = tree_flatten(values)
    return tree_unflatten(treedef, [convert_to_tensor(leaf) for leaf in leaves])


def _kind(value):
    return type(value).__name__
