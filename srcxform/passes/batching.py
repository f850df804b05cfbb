"""A loop over rows whose trips share nothing, run on all rows at once: vector mode.

A Jacobian's loop pushes one basis vector a trip through the same linear program
(jacobians.py). Where every equation of that program has a batching rule, the program
runs once on the whole basis instead: each value that depends on the row gets a leading
axis of the rows, a matrix-vector product a trip becomes one matrix product, and what
does not depend on the row is computed once. Where an equation has no rule (a loop, a
LAPACK op, a cond whose predicate depends on the row, a product of both operands'
rows or of a short inner dimension), the rows run as the loop map_fn makes, traced once.

An equation's rule is derived from its primitive's kind (elementwise: the batched
operands' axes aligned behind the rows'; reduction: its axes moved past the rows') or
declared with the primitive (`batch`: a function of which operands are batched and the
params, giving a function of the operands, or None where it cannot batch them).
"""

import functools

from srcxform import ops
from srcxform.core.aval import Aval, is_one, size
from srcxform.core.primitive import IDENTITY_ROWS
from srcxform.core.tensor import as_value
from srcxform.passes import structured


def map_rows(fn, xs, identity=False):
    """fn(row) for each row of the traced value xs (fn gives a list of values), each
    result stacked along a new first axis: batched where every equation fn traces has a
    rule, else a fori_loop over the rows. `identity`: xs is the identity matrix, whose
    products need no arithmetic (IDENTITY_ROWS)."""
    row = Aval(tuple(xs.shape[1:]), xs.dtype)
    sub, outs = structured.trace_region(
        "body", lambda i, row: [as_value(v) for v in fn(row)], [structured.INDEX, row],
        ["i", "row0"])
    (region,), captures = structured.align([(sub, outs)])
    reads = region.ins[1:]
    room = [size(v.shape) for v in [row, *outs]]
    if not structured.reads_index(region) and \
            _out_flags(region.replace(ins=reads), [True] + [False] * len(captures), room):
        inputs = [(xs, IDENTITY_ROWS if identity else True)] + [(c, False) for c in captures]
        return _run(region.replace(ins=reads), inputs, xs.shape[0], [True] * len(outs))
    y_avals = [Aval((xs.shape[0],) + tuple(v.shape), v.dtype) for v in outs]
    return structured.map_loop(region, captures, [xs], y_avals)


def _out_flags(region, in_flags, room):
    """Which of region's outputs carry the rows' axis where the inputs flagged do, or None
    where an equation they reach has no rule, or a value they reach has more elements a
    row than each size in `room` (the seed's row's and each result's): batched, the rows
    of a value that a product or a gather reads are stored whole, and a row larger than
    those (an outer product's tangent, n x n a row of n rows) would take memory the loop
    does not (n^3 against n^2). The comparisons of traced sizes are guards: a kernel
    decided at one size is not reused where they come out otherwise (dims.py)."""
    batched = {var for var, flag in zip(region.ins, in_flags) if flag}
    results = {}  # a cond's token: which of its results carry the rows' axis
    for eqn in region.eqns:
        flags = [a in batched for a in eqn.ins]
        if eqn.prim is structured.OUTPUT:
            found = results.get(eqn.ins[0])
            if found and found[eqn.kwargs["index"]]:
                batched.add(eqn.out)
        elif any(flags):
            if eqn.prim is structured.COND and not flags[0]:
                results[eqn.out] = found = _cond_flags(eqn, flags[1:], room)
            else:
                found = not getattr(eqn.prim, "structured", False) and _rule(eqn, flags)
            if not found or not _fits(eqn.out.aval, room):
                return None
            batched.add(eqn.out)
    return [a in batched for a in region.outs]


def _cond_flags(eqn, flags, room):
    """Which of a cond's results carry the rows' axis (in either branch), for a predicate
    the same for every row; None where a branch cannot batch."""
    branches = [_out_flags(eqn.kwargs[k], flags, room) for k in ("true", "false")]
    if None in branches:
        return None
    return [a or b for a, b in zip(*branches)] or None


def _run(region, inputs, rows, out_flags):
    """region's outputs from its inputs ((value, whether it carries the rows' axis) pairs),
    binding each equation once: by its rule where an operand carries the rows, as it is
    where none does (the same for every row). The outputs flagged in out_flags carry the
    rows' axis, broadcast along it where they do not depend on the row."""
    env = dict(zip(region.ins, inputs))

    def read(atom):
        return env[atom] if atom in env else (structured.literal(atom), False)

    for eqn in region.eqns:
        values, flags = zip(*map(read, eqn.ins)) if eqn.ins else ((), ())
        if eqn.prim is structured.OUTPUT:
            outs, batched = env[eqn.ins[0]]
            env[eqn.out] = (outs[eqn.kwargs["index"]], batched[eqn.kwargs["index"]])
        elif eqn.prim is structured.COND and any(flags):
            env[eqn.out] = _batched_cond(eqn, values, flags, rows)
        elif getattr(eqn.prim, "structured", False):  # the same for every row
            outs = structured.rebind(eqn.prim, values, eqn.kwargs)
            env[eqn.out] = (outs, [False] * len(outs))
        else:
            out = (_rule(eqn, flags)(*values) if any(flags)
                   else eqn.prim.bind(*values, **eqn.kwargs))
            env[eqn.out] = (structured.at_origin(out, eqn.origin), _out_flag(eqn, flags))
    return [value if batched or not want else
            ops.broadcast_to(value, (rows,) + tuple(value.shape))
            for (value, batched), want in zip(map(read, region.outs), out_flags)]


def _batched_cond(eqn, values, flags, rows):
    """A cond whose predicate is the same for every row, each branch batched: its results,
    and which of them carry the rows' axis."""
    need = _cond_flags(eqn, flags[1:], None)  # the room was checked
    inputs = list(zip(values[1:], flags[1:]))
    branches = [functools.partial(_run, eqn.kwargs[k], inputs, rows, need)
                for k in ("true", "false")]
    return structured.cond(values[0], *branches), need


def _out_flag(eqn, flags):
    """Whether eqn's output carries rows: IDENTITY_ROWS where it only rearranges the
    identity's rows, every element kept, into rows of one dim not 1 ((n,) as (n, 1) or
    x[:, None]: still unit vectors)."""
    algebra, shape = eqn.prim.algebra, eqn.out.aval.shape
    if flags and flags[0] is IDENTITY_ROWS and algebra.rearranges and \
            sum(not is_one(d) for d in shape) <= 1 and \
            (not algebra.selects or size(shape) == size(eqn.ins[0].aval.shape)):
        return IDENTITY_ROWS
    return any(flags)


def _fits(aval, room):
    """Whether a row of aval is no larger than some size in room (None: any)."""
    elements = size(aval.shape)
    return room is None or any(elements <= bound for bound in room)


def _rule(eqn, flags):
    """A function of the operands (those flagged with the rows' leading axis) giving the
    equation's output for every row, or None."""
    prim, params = eqn.prim, eqn.kwargs
    if prim.algebra.is_broadcast:  # broadcast_to
        shape = tuple(params["shape"])
        return lambda x: prim.bind(_lift(x, len(shape)), shape=x.shape[:1] + shape)
    if prim.kind == "elementwise":
        return lambda *values: prim.bind(*_aligned(values, flags), **params)
    if prim.kind == "reduction":
        axis = tuple(a + 1 for a in params["axis"])
        return lambda x: prim.bind(x, axis=axis, keepdims=params["keepdims"])
    return prim.batch and prim.batch(flags, [a.aval for a in eqn.ins], **params) or None


def _aligned(values, flags):
    """Elementwise operands, the batched ones reshaped so that broadcasting aligns their
    own axes with the unbatched operands' (a row's scalar beside a vector is a column)."""
    rank = max(len(v.shape) - bool(b) for v, b in zip(values, flags))
    return [_lift(v, rank) if b else v for v, b in zip(values, flags)]


def _lift(value, rank):
    """A batched value with ones inserted after the rows' axis up to `rank` axes a row."""
    shape = tuple(value.shape)
    missing = rank - (len(shape) - 1)
    return ops.reshape(value, shape[:1] + (1,) * missing + shape[1:]) if missing else value
