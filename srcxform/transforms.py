"""JAX's forward-mode forms: jvp, linearize, jacfwd, jacrev and hvp.

All rest on forward.py's JVPs (each op's, derived from its VJP) and on backprop.py's
reverse walk. `jvp`, `jacfwd`, `jacrev` and `hvp` compile, as srcxform.grad does: the
forward pass and its tangents are traced into one kernel per signature (`differentiable`).
`linearize` runs eagerly: it records the primal pass once on a tape and pushes each
tangent it is given through the records, never running the primal again.

jacfwd and jacrev record the primal once, then loop over an identity matrix computed from
the argument (or output), pushing one basis vector a trip through the records: a compiled
loop whose trip count is the size, so one small kernel serves every size (srcxform.jacobian
and tape.jacobian unroll one reverse walk per row, and compile once per size).

Where JAX differs: jacfwd's basis vectors go through a loop, one at a time (JAX pushes
them all at once, as a batch axis); `hvp` is forward over reverse, and takes the point
and the vector as two arguments, as JAX's autodiff cookbook writes it.
"""

import weakref
from collections.abc import Callable
from typing import Any

from srcxform import ops
from srcxform.ad import forward
from srcxform.api import Differentiable, differentiable
from srcxform.core.aval import size
from srcxform.ad.backprop import backprop
from srcxform.control_flow import map_fn
from srcxform.ad.tape import GradientTape
from srcxform.core.tensor import Value, as_value
from srcxform.core.tree import tree_flatten, tree_unflatten

__all__ = ["hvp", "jacfwd", "jacrev", "jvp", "linearize"]

# Each plain function's compiled jvp form, made once, as srcxform.grad(f) would be kept.
_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def jvp(fn: Callable, primals: tuple, tangents: tuple) -> tuple:
    """(fn(*primals), its Jacobian-vector product along `tangents`), compiled (JAX's jvp).

    primals and tangents are tuples of fn's positional arguments, each tangent shaped
    like its primal. A Differentiable's jvp is its own (f.jvp)."""
    if not isinstance(fn, Differentiable):
        try:
            compiled = _COMPILED.get(fn)
            if compiled is None:
                compiled = _COMPILED[fn] = differentiable(fn)
        except TypeError:  # an unhashable callable (a dataclass instance): kept by no one
            compiled = differentiable(fn)
        return compiled.jvp(primals, tangents)
    return fn.jvp(primals, tangents)


def linearize(fn: Callable, *primals: Any) -> tuple:
    """(fn(*primals), f_jvp) where f_jvp(*tangents) is the JVP at primals (JAX's
    linearize). Eager: the primal pass runs once, recorded; each f_jvp call pushes its
    tangents through the records only."""
    inputs = [forward._as_input(p) for p in primals]
    leaves = tree_flatten(inputs)[0]
    with GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(leaves)
        out = fn(*inputs)
    records = list(tape._records)
    out_leaves, out_def = tree_flatten(out)

    def f_jvp(*tangents):
        """The JVP of fn at the linearization point along `tangents`."""
        tangent_leaves = tree_flatten(list(tangents))[0]
        if len(tangent_leaves) != len(leaves):
            raise ValueError(f"linearize: {len(tangent_leaves)} tangent leaves for "
                             f"{len(leaves)} primal leaves")
        seeds = {x._id: ops.cast(as_value(t), x.dtype) for x, t in zip(leaves, tangent_leaves)}
        found = forward.linearized_tangents(records, seeds)
        return tree_unflatten(out_def, [_tangent_or_zeros(found, o) for o in out_leaves])

    return out, f_jvp


def _tangent_or_zeros(found, out):
    if not isinstance(out, Value) or out.dtype.kind != "f":
        return None
    tangent = found.get(out._id)
    return ops.zeros_like(out) if tangent is None else tangent


def jacfwd(fn: Callable, wrt: int = 0) -> Callable:
    """The compiled Jacobian of fn wrt argument `wrt` by forward mode (JAX's jacfwd):
    shape out.shape + arg.shape for each output leaf, in the output's structure (a tuple
    of Jacobians for a tuple output). The primal runs once, recorded; a loop over the
    input's elements pushes one basis tangent at a time through the records (one kernel,
    whose loop runs for every input size). Float inputs and outputs only (TypeError)."""

    def jac(*args):
        x, outs, out_def, records = _recorded(fn, args, wrt, "jacfwd")

        def column(e):
            found = forward.linearized_tangents(records, {x._id: ops.reshape(e, x.shape)})
            return [_tangent_or_zeros(found, out) for out in outs]

        if size(x.shape) == 0:  # no basis vector to push (a guard where sizes are traced)
            return tree_unflatten(out_def, [ops.zeros(tuple(out.shape) + tuple(x.shape),
                                                      out.dtype) for out in outs])
        columns = map_fn(column, _identity_like(x))  # per output: [x.size, *out.shape]
        return tree_unflatten(out_def, [_transposed(c, out, x) for c, out in zip(columns, outs)])

    jac.__name__ = f"jacfwd_of_{getattr(fn, '__name__', 'f')}"
    return _compiled_jacobian(jac, (jacfwd, (fn, wrt)))


def _transposed(columns, out, x):
    """jacfwd's columns [x.size, *out.shape] as the Jacobian out.shape + x.shape (sizes
    given, not -1: an empty input has no size to infer the other from)."""
    flat = ops.transpose(ops.reshape(columns, (size(x.shape), size(out.shape))))
    return ops.reshape(flat, tuple(out.shape) + tuple(x.shape))


def jacrev(fn: Callable, wrt: int = 0) -> Callable:
    """The compiled Jacobian of fn wrt argument `wrt` by reverse mode (JAX's jacrev):
    shape out.shape + arg.shape for each output leaf, in the output's structure. The
    primal runs once, recorded; a loop over each output's elements runs the reverse walk
    once for each (one kernel for every output size). Float inputs and outputs only."""

    def jac(*args):
        x, outs, out_def, records = _recorded(fn, args, wrt, "jacrev")
        return tree_unflatten(out_def, [_rows(out, x, records) for out in outs])

    jac.__name__ = f"jacrev_of_{getattr(fn, '__name__', 'f')}"
    return _compiled_jacobian(jac, (jacrev, (fn, wrt)))


def _rows(out, x, records):
    """The Jacobian of one output wrt x by a loop of reverse walks, one per element."""

    def row(e):
        seeds = {out._id: ops.reshape(e, out.shape)}
        found = backprop(records, seeds, [x._id]).get(x._id)
        return ops.zeros_like(x) if found is None else found

    rows = map_fn(row, _identity_like(out))  # [out.size, *x.shape]
    return ops.reshape(rows, tuple(out.shape) + tuple(x.shape))


def _recorded(fn, args, wrt, form):
    """fn(*args) recorded on a tape watching argument `wrt`: (that argument, the output's
    leaves, its structure, the records). Both must be floats, as JAX's jacobians need."""
    x = forward._as_input(args[wrt])
    if not isinstance(x, Value) or x.dtype.kind != "f":
        got = x.dtype.name if isinstance(x, Value) else type(args[wrt]).__name__
        raise TypeError(f"{form}: argument {wrt} must be one float array (a Jacobian is "
                        f"with respect to real values, as JAX's {form} requires), got {got}")
    with GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(x)
        out = fn(*args[:wrt], x, *args[wrt + 1:])
    leaves, out_def = tree_flatten(out)
    outs = [as_value(leaf, form) for leaf in leaves]
    for k, leaf in enumerate(outs):
        if leaf.dtype.kind != "f":
            where = f"output {k}" if len(outs) > 1 else "its output"
            raise TypeError(
                f"{form}: {getattr(fn, '__qualname__', 'the function')} gives {where} of "
                f"dtype {leaf.dtype.name} (shape {tuple(leaf.shape)}); a Jacobian needs "
                f"float outputs, as JAX's {form} does: cast it (tf.cast(y, tf.float64)) "
                "or return it from a function you do not differentiate")
    return x, outs, out_def, list(tape._records)


def _identity_like(value):
    """The identity matrix of value's size, in its dtype, computed from value rather than
    made a constant: a compiled loop over its rows then keeps the size symbolic, so one
    kernel serves every size (a constant would unroll the loop into the code)."""
    count = ops.cumsum(ops.ones_like(ops.reshape(value, (-1,)), dtype="int64"))
    same = ops.equal(ops.expand_dims(count, 1), ops.expand_dims(count, 0))
    return ops.cast(same, value.dtype)


def _compiled_jacobian(jac, recipe):
    """jac compiled, returning arrays (JAX's jacobians are, as srcxform.jacobian's);
    pickled as `recipe` makes it, (maker, arguments): jac pickles only by value."""
    compiled = differentiable(jac, autograph=False)
    compiled._as_eager = False
    compiled._recipe = recipe
    return compiled


def hvp(fn: Callable) -> Callable:
    """hvp(fn)(x, v, *args): the Hessian of fn (a scalar function of x) at x times v,
    compiled, by forward over reverse: a ForwardAccumulator along v around the gradient
    tape. Costs about two gradients, not n as the Hessian does."""

    def hessian_vector_product(x, v, *args):
        x = forward._as_input(x)
        with forward.ForwardAccumulator(x, v) as acc:
            with GradientTape(watch_accessed_variables=False) as tape:
                tape.watch(x)
                y = fn(x, *args)
            if not isinstance(y, Value) or y.shape != ():
                raise TypeError(f"hvp: {hessian_vector_product.__name__[7:]} must return a "
                                f"scalar (the Hessian of a scalar function), got "
                                f"{getattr(y, 'shape', type(y).__name__)}")
            g = tape.gradient(y, x, unconnected_gradients="zero")
        return acc.jvp(g, unconnected_gradients="zero")

    hessian_vector_product.__name__ = f"hvp_of_{getattr(fn, '__name__', 'f')}"
    return _compiled_jacobian(hessian_vector_product, (hvp, (fn,)))
