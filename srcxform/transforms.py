"""JAX's forward-mode forms: jvp, linearize, jacfwd, jacrev, hessian and hvp.

All rest on forward.py's JVPs (each op's, derived from its VJP) and on backprop.py's
reverse walk. `jvp`, `jacfwd`, `jacrev`, `hessian` and `hvp` compile, as srcxform.grad
does: the forward pass and its tangents are traced into one kernel per signature
(`differentiable`).
`linearize` runs eagerly: it records the primal pass once on a tape and pushes each
tangent it is given through the records, never running the primal again.

jacfwd and jacrev record the primal once, then loop over an identity matrix computed from
the argument (or output), pushing one basis vector a trip through the records: a compiled
loop whose trip count is the size, so one small kernel serves every size (jacobians.py;
srcxform.jacobian and tape.jacobian in a compiled function are the same loops, over the
smaller side). `hessian` is jacfwd of the gradient (forward over reverse, as JAX's).

Where JAX differs: the basis vectors go through a loop, one at a time (JAX pushes them
all at once, as a batch axis, so a matrix-vector product a trip is one matrix product
there); `hvp` is forward over reverse, and takes the point
and the vector as two arguments, as JAX's autodiff cookbook writes it.
"""

import weakref
from collections.abc import Callable
from typing import Any

from srcxform import autograph, jacobians, ops
from srcxform.ad import forward
from srcxform.api import Differentiable, differentiable
from srcxform.core.aval import size
from srcxform.ad.tape import GradientTape
from srcxform.core.tensor import Value, as_value
from srcxform.core.tree import tree_flatten, tree_unflatten
from srcxform.jit import compiler

__all__ = ["hessian", "hvp", "jacfwd", "jacrev", "jvp", "linearize"]

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
                compiled = _COMPILED[fn] = differentiable(fn, device="cpu")
        except TypeError:  # an unhashable callable (a dataclass instance): kept by no one
            compiled = differentiable(fn, device="cpu")
        return compiled.jvp(primals, tangents)
    return fn.jvp(primals, tangents)


def linearize(fn: Callable, *primals: Any) -> tuple:
    """(fn(*primals), f_jvp) where f_jvp(*tangents) is the JVP at primals (JAX's
    linearize). Eager: the primal pass runs once, recorded; each f_jvp call pushes its
    tangents through the records only."""
    inputs = forward.as_inputs(primals, "linearize")
    leaves = tree_flatten(inputs)[0]
    with GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(leaves)
        out = fn(*inputs)
    records = list(tape._records)
    out_leaves, out_def = tree_flatten(out)

    def f_jvp(*tangents):
        """The JVP of fn at the linearization point along `tangents`."""
        tangent_leaves = [as_value(t) for t in tree_flatten(list(tangents))[0]]
        if len(tangent_leaves) != len(leaves):
            raise ValueError(f"linearize: {len(tangent_leaves)} tangent leaves for "
                             f"{len(leaves)} primal leaves")
        for x, t in zip(leaves, tangent_leaves):
            if tuple(t.shape) != tuple(x.shape):  # as jvp's: never broadcast
                raise ValueError(f"linearize: a tangent of shape {tuple(t.shape)} for a "
                                 f"primal of shape {tuple(x.shape)}")
        seeds = {x._id: ops.cast(t, x.dtype) for x, t in zip(leaves, tangent_leaves)}
        found = forward.linearized_tangents(records, seeds)
        return tree_unflatten(out_def, [_tangent_or_zeros(found, o) for o in out_leaves])

    return out, f_jvp


def _tangent_or_zeros(found, out):
    if not isinstance(out, Value) or out.dtype.kind != "f":
        return None
    tangent = found.get(out._id)
    return ops.zeros_like(out) if tangent is None else tangent


def jacfwd(fn: Callable, wrt: int | tuple = 0, has_aux: bool = False) -> Differentiable:
    """The compiled Jacobian of fn wrt argument `wrt` by forward mode (JAX's jacfwd):
    shape out.shape + arg.shape for each output leaf, in the output's structure (a tuple
    of Jacobians for a tuple output). A tuple wrt gives, in place of each output leaf's
    Jacobian, a tuple of them, one per argument (JAX's argnums tuple). The primal runs
    once, recorded; a loop over each argument's elements pushes one basis tangent a trip
    through the records (jacobians.columns: one kernel, whose loop runs for every input
    size). Float inputs and outputs only (TypeError). With `has_aux` fn returns (output,
    aux) and the result is (Jacobian, aux), as JAX's; so for jacrev, jacobian and hessian."""
    return _compiled_jacobian(_forward(fn, wrt, has_aux, "jacfwd"), (jacfwd, (fn, wrt, has_aux)))


def _forward(fn, wrt, has_aux, form):
    """jacfwd's function before compiling; `form` names it in errors (hessian's too)."""

    def jac(*args, **kwargs):
        xs, trees, outs, out_def, records, aux = _recorded(fn, args, kwargs, wrt, form,
                                                           has_aux)
        per_arg = [_columns(records, x, outs) for x in xs]
        return _with_aux(_assembled(wrt, trees, out_def, [list(js) for js in zip(*per_arg)],
                                    xs, outs), aux, has_aux)

    jac.__name__ = f"jacfwd_of_{getattr(fn, '__name__', 'f')}"
    return jac


def jacrev(fn: Callable, wrt: int | tuple = 0, has_aux: bool = False) -> Differentiable:
    """The compiled Jacobian of fn wrt argument `wrt` by reverse mode (JAX's jacrev):
    shape out.shape + arg.shape for each output leaf, in the output's structure; a tuple
    wrt gives a tuple per output leaf, as jacfwd's. The primal runs once, recorded; a loop
    over each output's elements runs the reverse walk once a trip, to every argument at
    once (jacobians.rows: one kernel for every output size). Float inputs and outputs
    only."""

    def jac(*args, **kwargs):
        xs, trees, outs, out_def, records, aux = _recorded(fn, args, kwargs, wrt, "jacrev",
                                                           has_aux)
        per_out = [_rows(records, out, xs) for out in outs]
        return _with_aux(_assembled(wrt, trees, out_def, per_out, xs, outs), aux, has_aux)

    jac.__name__ = f"jacrev_of_{getattr(fn, '__name__', 'f')}"
    return _compiled_jacobian(jac, (jacrev, (fn, wrt, has_aux)))


def jacobian(fn: Callable, wrt: int | tuple = 0, has_aux: bool = False) -> Differentiable:
    """The compiled Jacobian of fn: jacfwd's or jacrev's, whichever loops over the smaller
    side (the arguments' elements or the outputs'), as JAX's jacobians choose; in the
    output's structure, a tuple per argument for a tuple wrt. Float inputs and outputs
    only (TypeError)."""

    def jac(*args, **kwargs):
        xs, trees, outs, out_def, records, aux = _recorded(fn, args, kwargs, wrt, "jacobian",
                                                           has_aux)
        if sum(size(x.shape) for x in xs) < sum(size(out.shape) for out in outs):
            per_arg = [_columns(records, x, outs) for x in xs]
            per_out = [list(js) for js in zip(*per_arg)]
        else:
            per_out = [_rows(records, out, xs) for out in outs]
        return _with_aux(_assembled(wrt, trees, out_def, per_out, xs, outs), aux, has_aux)

    jac.__name__ = f"jacobian_of_{getattr(fn, '__name__', 'f')}"
    return _compiled_jacobian(jac, (jacobian, (fn, wrt, has_aux)))


def hessian(fn: Callable, wrt: int | tuple = 0, has_aux: bool = False) -> Differentiable:
    """The compiled Hessian of fn (a scalar function) wrt argument `wrt`, forward over
    reverse as JAX's hessian is: jacfwd of the gradient, so its loop pushes one basis
    tangent a trip through the gradient's records (about two gradients a column). Shape
    arg.shape + arg.shape; a tuple wrt gives a tuple of tuples, H[i][j] the second
    derivative wrt arguments wrt[i] and wrt[j] (JAX's argnums tuple)."""
    positions = (wrt,) if isinstance(wrt, int) else tuple(wrt)

    def gradient(*args):  # jacfwd passes the arguments `wrt` as tensors
        sources = [args[p] for p in positions]
        with GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(sources)
            y, aux = _split(autograph.convert(fn)(*args), fn, "hessian", has_aux)
        if not isinstance(y, Value) or y.shape != ():
            raise TypeError(f"hessian: {getattr(fn, '__qualname__', 'the function')} must "
                            f"return a scalar (the Hessian of a scalar function, as JAX's "
                            f"hessian needs), got {getattr(y, 'shape', type(y).__name__)}")
        grads = tape.gradient(y, sources, unconnected_gradients="zero")
        return _with_aux(grads[0] if isinstance(wrt, int) else tuple(grads), aux, has_aux)

    gradient.__name__ = f"gradient_of_{getattr(fn, '__name__', 'f')}"
    return _compiled_jacobian(_forward(gradient, wrt, has_aux, "hessian"),
                              (hessian, (fn, wrt, has_aux)))


def _columns(records, x, outs):
    """jacobians.columns, or None (zeros) for each output where x has no elements: no
    basis vector to push (a guard where sizes are traced)."""
    return jacobians.columns(records, x, outs) if size(x.shape) else [None] * len(outs)


def _rows(records, out, xs):
    """jacobians.rows, or None (zeros) for each argument where out has no elements."""
    return jacobians.rows(records, out, xs) if size(out.shape) else [None] * len(xs)


def _assembled(wrt, trees, out_def, per_out, xs, outs):
    """Per output leaf, its Jacobians per argument leaf (None: zeros, in the argument's
    dtype as every Jacobian is) in each argument's structure (`trees`: its treedef and
    leaf count), in the output's structure: one per output leaf for an int wrt, a tuple
    of them for a tuple wrt (JAX's pytrees of Jacobians)."""
    leaves = []
    for out, js in zip(outs, per_out):
        js = [ops.zeros(tuple(out.shape) + tuple(x.shape), x.dtype) if j is None else j
              for j, x in zip(js, xs)]
        per_arg, start = [], 0
        for treedef, count in trees:
            per_arg.append(tree_unflatten(treedef, js[start:start + count]))
            start += count
        leaves.append(per_arg[0] if isinstance(wrt, int) else tuple(per_arg))
    return tree_unflatten(out_def, leaves)


def _split(out, fn, form, has_aux):
    """(output, aux) of what fn returned: the pair's, with has_aux; else (out, None)."""
    if not has_aux:
        return out, None
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(f"{form}: {getattr(fn, '__qualname__', 'the function')} has has_aux="
                        f"True, so it must return a pair (output, aux), but it returned "
                        f"{compiler.described(out)}")
    return out[0], out[1]


def _with_aux(result, aux, has_aux):
    return (result, aux) if has_aux else result


def _recorded(fn, args, kwargs, wrt, form, has_aux=False):
    """fn(*args, **kwargs) recorded on a tape watching the arguments `wrt` (an int or a
    tuple): (those arguments, the output's leaves, its structure, the records, the aux
    where has_aux). Both must be floats, as JAX's jacobians need."""
    positions = (wrt,) if isinstance(wrt, int) else tuple(wrt)
    if max(positions, default=-1) >= len(args):
        raise TypeError(f"{form}: {getattr(fn, '__qualname__', 'the function')} is "
                        f"differentiated wrt argument {max(positions)} (wrt={wrt!r}), but "
                        f"the call passed {len(args)} positional argument(s)")
    full, xs, trees = list(args), [], []
    for p in positions:
        full[p] = forward._as_input(args[p])  # each leaf a source of its own
        leaves, treedef = tree_flatten(full[p])
        bad = [leaf for leaf in leaves if not isinstance(leaf, Value) or leaf.dtype.kind != "f"]
        if bad or not leaves:
            got = (bad[0].dtype.name if isinstance(bad[0], Value) else
                   type(bad[0]).__name__) if bad else "nothing"
            raise TypeError(f"{form}: argument {p} must be a float array or a structure of "
                            f"them (a Jacobian is with respect to real values, as JAX's "
                            f"{form} requires), got {got}")
        xs += leaves
        trees.append((treedef, len(leaves)))
    with GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(xs)
        out, aux = _split(autograph.convert(fn)(*full, **kwargs), fn, form, has_aux)
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
    return xs, trees, outs, out_def, list(tape._records), aux


def _compiled_jacobian(jac, recipe) -> Differentiable:
    """jac compiled, returning arrays (JAX's jacobians are, as srcxform.jacobian's);
    pickled as `recipe` makes it, (maker, arguments): jac pickles only by value."""
    compiled = differentiable(jac, autograph=False, device="cpu")
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
                y = autograph.convert(fn)(x, *args)
            if not isinstance(y, Value) or y.shape != ():
                raise TypeError(f"hvp: {hessian_vector_product.__name__[7:]} must return a "
                                f"scalar (the Hessian of a scalar function), got "
                                f"{getattr(y, 'shape', type(y).__name__)}")
            g = tape.gradient(y, x, unconnected_gradients="zero")
        return acc.jvp(g, unconnected_gradients="zero")

    hessian_vector_product.__name__ = f"hvp_of_{getattr(fn, '__name__', 'f')}"
    return _compiled_jacobian(hessian_vector_product, (hvp, (fn,)))
