"""Jacobians from recorded ops in one kernel: over the output's rows (a reverse walk each)
or over the input's columns (a forward push each), whichever side is smaller.

The walks run over an identity matrix computed from the value it spans (not a constant),
all rows at once where every op has a batching rule (passes/batching.py), else in a loop
whose trip count is that value's size: one kernel serves every size, and its code is one
reverse walk (or one forward push) whatever the size. transforms.py's jacfwd, jacrev
and hessian are these loops, and so are GradientTape.jacobian and batch_jacobian inside a
compiled function (through tape.LOOPED_JACOBIANS, which this module sets). `batch` is how
many leading axes the output and input share as a batch (batch_jacobian's 1): the basis
then spans the other axes, broadcast along the batch."""

from srcxform import ops
from srcxform.ad import forward, tape
from srcxform.ad.backprop import backprop
from srcxform.ad.trace import Tracer
from srcxform.control_flow import map_fn
from srcxform.core.aval import size
from srcxform.core.tensor import Value
from srcxform.passes.batching import map_rows


def smaller_side(records: list, target: Value, leaves: list, watched: list,
                 batch: int = 0) -> list:
    """Each leaf's Jacobian, None for a leaf not in `watched`: one loop over target's rows,
    or, where the watched sources have fewer elements, one over each one's columns (JAX's
    choice of jacfwd or jacrev). GradientTape's jacobians in a compiled function."""
    if not watched:
        return [None] * len(leaves)
    sizes = [size(s.shape[batch:]) for s in watched]
    if min(sizes) > 0 and sum(sizes) < size(target.shape[batch:]):
        found = [columns(records, s, [target], batch)[0] for s in watched]
    else:
        found = rows(records, target, watched, batch)
    by_source = {id(s): j for s, j in zip(watched, found)}
    return [by_source.get(id(s)) for s in leaves]


def rows(records: list, target: Value, sources: list, batch: int = 0) -> list:
    """d target / d source for each source by a loop of reverse walks, one per element of
    target (past its batch axes): each shaped target.shape + source.shape[batch:], None
    where target does not depend on that source."""
    stacked, connected = _loop(target, sources, batch, lambda seeds, ids: backprop(
        records, seeds, ids))  # each [m, *batch, *source]
    return [_jacobian(j, target, s, batch, first=True) if k in connected else None
            for k, (j, s) in enumerate(zip(stacked, sources))]


def columns(records: list, source: Value, targets: list, batch: int = 0) -> list:
    """d target / d source for each target by a loop of forward pushes, one per element of
    source (past its batch axes): each shaped target.shape + source.shape[batch:], None
    where that target does not depend on source."""
    stacked, connected = _loop(source, targets, batch, lambda seeds, ids: (
        forward.linearized_tangents(records, seeds)))  # each [k, *batch, *target]
    return [_jacobian(j, t, source, batch, first=False) if k in connected else None
            for k, (j, t) in enumerate(zip(stacked, targets))]


def _loop(seeded, reached, batch, walk):
    """The walks over `seeded`'s basis: each seeds it with one basis vector (broadcast
    along the batch) and walks (`walk(seeds, ids)`: {id: value}) to the values `reached`,
    zeros where a walk does not reach one. Returns their stacks and the positions of the
    values some walk reached (the others' Jacobians are None)."""
    connected = set()

    def trip(e):
        seed = ops.broadcast_to(ops.reshape(e, seeded.shape[batch:]), seeded.shape)
        found = walk({seeded._id: seed}, [v._id for v in reached])
        connected.update(k for k, v in enumerate(reached) if found.get(v._id) is not None)
        return [ops.zeros_like(v) if found.get(v._id) is None else found[v._id]
                for v in reached]

    rows = basis(seeded, batch)
    if isinstance(rows, Tracer):
        return map_rows(trip, rows, identity=not batch), connected
    return map_fn(trip, rows), connected


def _jacobian(stacked, target, source, batch, first):
    """The walks' stack as the Jacobian target.shape + source.shape[batch:]: their axis
    moved behind the batch axes (rows: it spans target) or to the end (columns: source),
    then split into the shape it spans (sizes given: an empty side has none to infer), in
    the source's dtype as a reverse walk's cotangents are (a float32 input of a float64
    output: the tape's, and jacrev's, Jacobian is float32; forward pushes give float64)."""
    if stacked.dtype != source.dtype:
        stacked = ops.cast(stacked, source.dtype)
    ndim = len(stacked.shape)
    axes = list(range(1, ndim))
    perm = axes[:batch] + [0] + axes[batch:] if first else axes + [0]
    if perm != list(range(ndim)):
        stacked = ops.transpose(stacked, perm)
    return ops.reshape(stacked, tuple(target.shape) + tuple(source.shape[batch:]))


def basis(value: Value, batch: int = 0):
    """The identity matrix of the size of value's axes past `batch`, in value's dtype: the
    walks push its rows, at once or a trip each. It is computed from value, never a
    constant, so the batch (or the loop's trip count) is value's size (one kernel for
    every size) and the kernel captures no array (the on-disk index keeps only kernels
    that capture none): its ones are `v == v or v != v`, true for NaN too, where ones_like
    of a static shape would fold to a constant and a loop would unroll."""
    spanned = ops.reshape(value[(0,) * batch] if batch else value, (-1,))
    ones = ops.logical_or(ops.equal(spanned, spanned), ops.not_equal(spanned, spanned))
    count = ops.cumsum(ops.cast(ones, "int64"))
    same = ops.equal(ops.expand_dims(count, 1), ops.expand_dims(count, 0))
    return ops.cast(same, value.dtype)


tape.LOOPED_JACOBIANS = smaller_side
