"""THE reverse walk, shared by the eager tape and the compiler.

Walks records backwards, calls each record's VJP (written in srcxform ops, so it runs on
Tensors, on Tracers, and under outer tapes alike), sums cotangents back to each input's
shape and dtype, and accumulates them with `+`. Knows no primitive by name.
"""

from srcxform import ops
from srcxform.ad.nan_checks import Holding
from srcxform.core import recording
from srcxform.core.aval import same_shape
from srcxform.core.primitive import ZERO


def backprop(records, seeds, sources):
    """Cotangents of `sources` (ids) given `seeds` ({id: cotangent} of the targets).

    Returns {id: cotangent} for the sources that the targets depend on.
    """
    # Forward: which recorded values depend on a source; only those need a cotangent.
    live = set(sources)
    for rec in records:
        if any(v._id in live for v in rec.inputs):
            live.update(out._id for out in rec.outs or (rec.out,))
    grads = {k: g for k, g in seeds.items() if k in live}
    for rec in reversed(records):
        if rec.vjp is None:  # a nondiff op: its inputs get nothing
            continue
        if rec.outs is None:
            g, out = grads.get(rec.out._id), rec.out
        else:  # an op of several outputs: a list of cotangents, None where one has none
            g, out = [grads.get(o._id) for o in rec.outs], rec.outs
            g = None if all(x is None for x in g) else g
        if g is None:
            continue
        with recording.adjoint(rec, g if rec.outs is None else None):
            # debug_nans judges only the cotangents used, as a compiled kernel computes only
            # those: not a literal operand's, which a VJP computes too.
            with Holding() as holding:
                cotangents = rec.vjp(g, out, *rec.inputs, **rec.params)
                used = [(x, cotangent_value(ct, x)) for x, ct in zip(rec.inputs, cotangents)
                        if ct is not None and x._id in live and x.dtype.kind == "f"]
                holding.judge([ct for _, ct in used])
            for x, ct in used:
                ct = unbroadcast(ct, x)
                prev = grads.get(x._id)
                grads[x._id] = ct if prev is None else prev + ct
    return {k: grads[k] for k in sources if k in grads}


def cotangent_value(ct, x):
    """The cotangent `ct` of x as a value."""
    if ct is ZERO:
        return ops.zeros_like(x)
    return ct() if callable(ct) else ct  # a function: made only where it is needed


def unbroadcast(ct, x):
    """Sums a cotangent back to the shape of the input it belongs to, in its dtype."""
    if not same_shape(ct.shape, x.shape):
        lead = ct.ndim - x.ndim
        axes = tuple(range(lead)) + tuple(
            lead + i for i, d in enumerate(x.shape) if d == 1 and ct.shape[lead + i] != 1)
        if axes:
            # Summing every axis is a scalar (a loop accumulator), not a 1x1 array.
            every = len(axes) == ct.ndim
            ct = ops.reduce_sum(ct, axis=axes, keepdims=not every)
        if not same_shape(ct.shape, x.shape):
            ct = ops.reshape(ct, x.shape)
    # The dtype x is held in: a weak value made of Python scalars shows float32 eagerly but
    # holds float64, as a trace's does, so that eager and compiled gradients agree.
    if ct.dtype != x.aval.dtype:
        ct = ops.cast(ct, x.aval.dtype)
    return ct
