"""Lowering of structured control flow (structured.py) to Python's own statements: a
`while`, a `for` or an `if` whose body is the region's statements, lowered as a function
body is (its loop nests fused, its names from the enclosing function's Namer).

Loop-carried values are plain variables the body reassigns, so one kernel runs any trip
count. An array carry that the body's loops compute afresh is updated in place instead:
two buffers allocated before the loop, the body filling one from the other and the two
swapping at its end, so an iteration allocates nothing (an adjoint loop's accumulated
gradient of a captured array is such a carry).

A loop a tape differentiates keeps, per carried value that its adjoint reads, a stack of
the value at the start of each iteration (with `checkpoint=k`, of every k-th, and then of
every carried value): preallocated for a fori_loop (its trip count is known when it
starts), a buffer that doubles when full for a while_loop. The adjoint, a fori_loop
running backwards, reads them back; a checkpointed loop's adjoint runs in segments, each
recomputing its carries from a checkpoint first (_segmented).
"""

from collections import Counter
from dataclasses import replace

import astor
import numpy as np

from srcxform.codegen.exprs import dtype_ast
from srcxform.codegen.schedule import LoopGroup
from srcxform.core.aval import Aval, same_shape
from srcxform.core.ir import Eqn, Lit, Var, may_raise
from srcxform.ops.elementwise import add_p
from srcxform.ops.shape import (add_at_p, add_rows_p, broadcast_to_p, embed_p, gather_p,
                                scatter_add_p, transpose_p)
from srcxform.passes.structured import COND, FORI, OUTPUT, WHILE, results_of

_FIRST_ROWS = 16  # a while_loop's stacks start with this many rows, then double
_INDEX = Aval((), np.dtype(np.int64))  # a fixed index's


def lower(low, eqn):
    """Emits a structured equation into `low` (a _Lowering); its results' names are those
    of its `output` equations, which emit nothing."""
    emit = {WHILE: _while, FORI: _fori, COND: _cond}.get(eqn.prim)
    if emit is not None:
        low.header(eqn, 1)
        emit(low, eqn)


def _src(node):
    return astor.to_source(node).strip()


def _atom(low, atom):
    return _src(low.whole(atom))


def _on_host(low, atom):
    """A loop's bound or a branch's predicate where the code running it reads it: read
    once, before the loop, where the target reads it back (a wait for the device)."""
    if isinstance(atom, Lit):
        return _src(low.lit(atom))
    value = _atom(low, atom)
    if low.on_host(value) == value:
        return value
    name = low.namer.fresh(f"{value}_on_host")
    low.line(1, f"{name} = {low.on_host(value)}")
    return name


def _names(low, eqn, indices, base):
    """A name for each result index: the IR's where the program reads the result, else a
    fresh one (a carried value nothing reads after the loop)."""
    results = results_of(low.program, eqn.out)
    return [low.namer(results[k]) if k in results else low.namer.fresh(base) for k in indices]


def _lowering(low, program):
    """The lowering of a region into `low`'s function."""
    return low.region_lowering(program)


def region(low, program, args, indent, sub=None):
    """Emits a region's statements at `indent`, its inputs bound to `args` (source text);
    returns its outputs as source text. `sub`: the region's lowering, where the caller
    made it (_in_place)."""
    for var, arg in zip(program.ins, args):
        low.line(indent, f"{low.namer(var)} = {arg}")
    sub = sub or _lowering(low, program)
    sub.statements()
    low.modules |= sub.modules
    low.used_prange |= sub.used_prange
    for inner, text in sub.lines:
        low.line(indent + inner - 1, text)
    return [_src(sub.whole(a)) for a in program.outs]


def _assign(low, indent, names, values):
    if names:
        low.line(indent, f"{', '.join(names)} = {', '.join(values)}")


def _body(low, eqn, first, carry, inits, lanes=False):
    """The lowering of a loop's body (its carries are its inputs from `first`, starting at
    the atoms `inits`) and the spare buffers of its in-place carries (_in_place), after
    the carries that add rows into their own buffer (_rows_added) have their initial
    values copied, once: not where an enclosing loop owns that buffer (`low.owned`),
    which then owns the loop's result too (the next inner loop adding into it)."""
    body = eqn.kwargs["body"]
    program, added = _rows_added(low, body, [(body.ins[first + k], k) for k in range(len(carry))])
    results = results_of(low.program, eqn.out)
    for k in added:
        if inits[k] not in low.owned:
            low.line(1, f"{carry[k]} = {carry[k]}.copy()")
        elif k in results:
            low.owned.add(results[k])
    body = _lowering(low, program)
    body.owned = {program.ins[first + k] for k in added}  # each read once, adding into it
    spares = _in_place(low, body, first, carry)
    if not lanes:
        _hoisted(low, body)
    return body, spares


def _rows_viewed(program):
    """`program` with each row of one index that only such gathers read (x[i, j]: x[i],
    then its element j) read in place, a view of x, not a copy: a trip then costs the
    element, not the row."""
    readers = _uses(program)[1]
    gathered = Counter(e.ins[0] for e in program.eqns if _one_index(e))
    viewed = {e for e in program.eqns if _one_index(e) and e.out.aval.shape
              and gathered[e.out] == readers[e.out]}
    if not viewed:
        return program
    return program.replace(eqns=[replace(e, params=(("view", True),)) if e in viewed else e
                                  for e in program.eqns])


def _one_index(eqn):
    return eqn.prim is gather_p and not eqn.ins[1].aval.shape


def _rows_added(low, program, carried):
    """`program` with each carry it updates (`carried`: (its old value, the index of its
    new one among the outputs)) as the old value plus scatter_adds and inner loops' and
    branches' sums (_summed), where nothing else reads the old value or those, adding into
    the carry's own buffer; and those carries' indices. A trip then costs the rows it
    adds, not the whole array: the adjoint of a loop reading x[i] carries x's gradient so,
    adding its rows in place (add_rows), and an inner loop adding into a carry from zeros
    starts from the outer carry instead (the adjoint of `for i: for j: ... x[i, j]`), as
    a branch adds into it (of `for i: if ...: x[i]`)."""
    if not low.in_place_carries:
        return program, []
    program = _rows_viewed(program)
    uses = _uses(program)
    gone, made, starts, added = set(), {}, {}, []
    for old, k in carried:
        found = _accumulated(program, old, program.outs[k], *uses)
        if found is not None:
            gone |= found[0]
            made.update(found[1])
            for op, (index, value) in found[2].items():  # one inner op, several carries
                starts.setdefault(op, []).append((index, value))
            added.append(k)
    if not added:
        return program, []
    made.update((op, [_started(low, op, pairs)]) for op, pairs in starts.items())
    for eqn in (e for rows in made.values() for e in rows):
        low.namer.add(eqn.out)  # an element's add made here
    eqns = [new for e in program.eqns if e not in gone for new in made.get(e, [e])]
    return program.replace(eqns=eqns), added


def _started(low, op, pairs):
    """An inner loop `op` with each (carry index, value) pair's carry starting at value; a
    cond taking each value as one operand more, into which its branches add their
    result at that index (_cond then adds in place)."""
    ins = list(op.ins)
    if op.prim is FORI:
        for j, value in pairs:
            ins[2 + j] = value
        return op.with_ins(ins)
    params = dict(op.params)
    for side in ("true", "false"):
        branch = params[side]
        accs = [Var(value.aval) for _, value in pairs]
        eqns, outs, producers = list(branch.eqns), list(branch.outs), _uses(branch)[0]
        for acc, (k, _) in zip(accs, pairs):
            low.namer.add(acc)
            if _is_zeros(producers.get(outs[k])):  # nothing added here: the operand passes
                outs[k] = acc
                continue
            total = Var(acc.aval)
            low.namer.add(total)
            eqns.append(Eqn(total, add_p, (acc, outs[k]), (), None, True))
            outs[k] = total
        params[side] = branch.replace(ins=list(branch.ins) + accs, eqns=eqns, outs=outs)
    return replace(op, ins=tuple(ins + [value for _, value in pairs]),
                   params=tuple(params.items()))


def _is_zeros(eqn):
    return eqn is not None and eqn.prim is broadcast_to_p and isinstance(eqn.ins[0], Lit) \
        and eqn.ins[0].value == 0


def _uses(program):
    """{value: the equation computing it}, and how many times each value is read."""
    readers = Counter(a for e in program.eqns for a in e.ins if isinstance(a, Var))
    readers.update(a for a in program.outs if isinstance(a, Var))
    return {e.out: e for e in program.eqns}, readers


def _accumulated(program, old, out, producers, readers):
    """How `program` adds into its carry k in place, as (equations gone, {equation: its
    replacements}, {inner loop: (the position of an initial value, its new atom)}), or
    None where its new value is anything but the old one (read nowhere else) plus
    scatter_adds and inner loops' sums. The loops add first, in program order, each
    starting from the last one's result; the scatters' rows then, where the sum was."""
    eqn = producers.get(out)
    if not (eqn is not None and eqn.prim is add_p and old in eqn.ins and readers[old] == 1
            and readers[out] == 1 and _same_aval(old, out)):
        return None
    summed = _summed(program, eqn.ins[eqn.ins[0] is old], producers, readers, out)
    if not summed:
        return None
    columns = {s: (("axes", tuple(map(int, np.argsort(t.kwargs["perm"])))),)
               for t in summed if t.prim is transpose_p
               for s in _transposed(program, t, producers, readers) if s.prim is scatter_add_p}
    scatters = [e for e in summed if _scattered(e)]
    loops = [e for e in program.eqns if e.prim is OUTPUT and e in summed]  # in order
    if len({r.ins[0] for r in loops}) < len(loops):  # two carries of one loop: one start
        return None
    # Zeros that something else reads too (one array of zeros for two loops, CSE's) stay.
    inits = Counter(producers[r.ins[0]].ins[2 + r.kwargs["index"]] for r in loops
                    if producers[r.ins[0]].prim is FORI)
    kept = {e for e in summed if e.prim is broadcast_to_p and readers[e.out] > inits[e.out]}
    gone, made, starts, value = set(summed) - set(loops) - kept | {eqn}, {}, {}, old
    for result in loops:
        into = out if result is loops[-1] and not scatters else result.out
        starts[producers[result.ins[0]]] = (result.kwargs["index"], value)
        made[result] = [replace(result, out=into)]
        value = into
    adds = []
    for s in scatters:
        parts, inner = ([_scattered(s)], set()) if s in columns else \
            _elements(program, s, producers, readers)
        gone |= inner
        adds += [(s, g, indices, columns.get(s, ())) for g, indices in parts]
    rows = []
    for at, (s, g, indices, axes) in enumerate(adds):
        into = out if at == len(adds) - 1 else Var(out.aval)
        rows.append(Eqn(into, *_added(value, g, indices), (("in_place", True),) + axes,
                        s.origin, s.adjoint, s.of))
        value = into
    if rows:
        made[eqn] = rows
        gone.discard(eqn)
    return gone, made, starts


def _elements(program, scatter, producers, readers):
    """([(rows, their indices)], equations gone) that `scatter` adds: its own rows at its
    indices, or, where its index is one integer and its rows are a sum of scatters of
    integer indices (a row of the gradient of x[i, j]), each of their elements (or
    subarrays) at both indices, those scatters and sums gone."""
    g, indices = _scattered(scatter)
    summed = None if indices[0].aval.shape else _summed(program, g, producers, readers, g)
    if not summed or any(e.prim is not add_p and not _at_integers(e) for e in summed):
        return [(g, indices)], set()
    parts, gone = [], set(summed)
    for inner in (e for e in summed if _scattered(e)):
        found, below = _elements(program, inner, producers, readers)
        parts += [(rows, indices + more) for rows, more in found]
        gone |= below
    return parts, gone


def _scattered(eqn):
    """(rows, (index,)) of a scatter_add, (element, its integer indices) of an embed of
    one (the gradient of w[0]); else None."""
    if eqn.prim is scatter_add_p:
        return eqn.ins[0], (eqn.ins[1],)
    index = eqn.kwargs.get("index", ()) if eqn.prim is embed_p else ()
    if index and all(isinstance(i, int) for i in index):
        return eqn.ins[0], tuple(Lit(np.int64(i), _INDEX) for i in index)
    return None


def _at_integers(eqn):
    found = _scattered(eqn)
    return found is not None and not any(i.aval.shape for i in found[1])


def _added(x, g, indices):
    """The primitive and operands that add g into x at indices: rows at one index (or a
    vector of them), an element or subarray at several."""
    if len(indices) == 1:
        return add_rows_p, (x, indices[0], g)
    return add_at_p, (x, g) + indices


def _same_aval(a, b):
    return same_shape(a.aval.shape, b.aval.shape) and a.aval.dtype == b.aval.dtype


def _summed(program, value, producers, readers, like):
    """The equations of the sum `value` is (scatter_adds, inner loops' sums (_into_loop)
    with the zeros they start from, and adds of such sums, each value read once and
    shaped as `like`), or None where it is anything else."""
    eqn = producers.get(value)
    if eqn is None or readers[value] != 1 or not _same_aval(value, like):
        return None
    if _scattered(eqn):
        return [eqn]
    if eqn.prim is transpose_p:
        return _transposed(program, eqn, producers, readers)
    if eqn.prim is OUTPUT:
        return _into_loop(program, eqn, producers) or _into_branches(eqn, producers)
    if eqn.prim is not add_p:
        return None
    parts = [_summed(program, a, producers, readers, like) for a in eqn.ins]
    return None if None in parts else parts[0] + parts[1] + [eqn]


def _transposed(program, eqn, producers, readers):
    """[the scatter_adds and adds, eqn] where `eqn` transposes a sum of scatter_adds of
    rows, read nowhere else (the gradient of x[:, j], a column: its rows are added into a
    view of the carry with its axes swapped, not into zeros transposed whole); else None."""
    summed = _summed(program, eqn.ins[0], producers, readers, eqn.ins[0])
    if not summed or any(e.prim not in (add_p, scatter_add_p) for e in summed):
        return None
    return summed + [eqn]


def _into_loop(program, result, producers):
    """[result, the zeros its loop starts it from] where `result` is an inner fori_loop's
    carry j, started at zeros, which that loop's body only adds into (_accumulated), so
    that it may start from the outer carry instead; else None."""
    loop = producers.get(result.ins[0])
    j = result.kwargs["index"]
    if loop is None or loop.prim is not FORI or j >= loop.kwargs["carries"]:
        return None
    stack = loop.kwargs["carries"] + len(loop.kwargs["y_avals"]) + 1 + j  # its trips' values
    zeros = producers.get(loop.ins[2 + j])
    body = loop.kwargs["body"]
    if not _is_zeros(zeros) or stack in results_of(program, loop.out) \
            or _accumulated(body, body.ins[1 + j], body.outs[j], *_uses(body)) is None:
        return None
    return [result, zeros]


def _into_branches(result, producers):
    """[result] where `result` is a cond's result that each branch computes as a sum
    (_summed) or as zeros, so that the branches may add into the outer carry instead;
    else None."""
    cond = producers.get(result.ins[0])
    if cond is None or cond.prim is not COND:
        return None
    for branch in (cond.kwargs["true"], cond.kwargs["false"]):
        out = branch.outs[result.kwargs["index"]]
        inner = _uses(branch)
        if not _is_zeros(inner[0].get(out)) and not _summed(branch, out, *inner, out):
            return None
    return [result]


def _in_place(low, body, first, carry):
    """Sets up the array carries that the loop updates in place, and returns them as
    [(index, name of the spare buffer)]; `body` is the body's lowering, `first` the
    position of its first carry among its inputs. A carry qualifies when the body's loop
    nests compute its new value (a fresh array: they fill the spare buffer instead) and
    no other carry may be a view of its old or new value (the buffers are reused, so
    such a view would change under it). The initial value is copied, once: the loop
    then owns both buffers."""
    if not low.in_place_carries:
        return []
    program = body.program
    outs = program.outs[:len(carry)]
    fresh = {e.out for item in body.items if isinstance(item, LoopGroup) for e in item.eqns}
    found = []
    for k, out in enumerate(outs):
        if not (isinstance(out, Var) and out.aval.shape and out in body.placement.arrays) \
                or sum(o is out for o in outs) > 1:
            continue
        shared = _views(program, fresh, {program.ins[first + k], out})
        if any(o in shared for j, o in enumerate(outs) if j != k):
            continue
        name = low.namer(out)
        body.buffer_vars.add(out)  # its loop nests fill the buffer allocated here
        low.stmt(1, low.allocate(name, out.aval.shape, out.aval.dtype))
        low.line(1, f"{carry[k]} = {carry[k]}.copy()")
        found.append((k, name))
    return found


def _hoisted(low, body):
    """Allocates before the loop each array that the body's loop nests fill and nothing
    holds past its trip (no carry, stacked row or result may share its memory), filled
    again at every trip: one allocation, not one a trip (a window's gradient made two
    small arrays a trip, most of its time). Not for lanes a prange runs at once."""
    if not low.in_place_carries:
        return
    program = body.program
    fresh = {e.out for item in body.items if isinstance(item, LoopGroup) for e in item.eqns}
    held = {a for a in program.outs if isinstance(a, Var)}
    for e in reversed(program.eqns):  # what each value held may share memory with
        if e.out in held and e.out not in fresh:
            aliases = e.prim.codegen.aliases
            held.update(a for j, a in enumerate(e.ins) if isinstance(a, Var)
                        and (aliases is None or j in aliases))
    for var in (e.out for e in program.eqns):
        if var in fresh and var not in held and var.aval.shape \
                and var in body.placement.arrays and var not in body.buffer_vars:
            low.stmt(1, low.allocate(low.namer(var), var.aval.shape, var.aval.dtype))
            body.buffer_vars.add(var)


def _views(program, fresh, values):
    """The arrays of `program` that may share memory with `values`: those computed from
    them by equations outside loop nests (a slice, a reshape, a nested loop's result),
    counted conservatively; a loop nest's results (`fresh`) are new arrays."""
    shared = set(values)
    for e in program.eqns:
        if e.out not in fresh and e.out.aval.shape and any(a in shared for a in e.ins):
            shared.add(e.out)
    return shared


def _swap(low, indent, carry, outs, spares):
    """The carries' new values assigned; each in-place carry's old buffer becomes its
    spare (one tuple assignment: the right side is read first)."""
    _assign(low, indent, carry + [name for _, name in spares],
            outs + [carry[k] for k, _ in spares])


def _allocated(low, eqn, indices, rows):
    """(index, name) for each result at `indices` that the program reads (a stack, or a
    stacked output), allocated with `rows` rows (source text)."""
    results = results_of(low.program, eqn.out)
    found = []
    for k in indices:
        var = results.get(k)
        if var is None:
            continue
        name = low.namer(var)
        dims = [rows] + [low.sizes.source(d) for d in var.aval.shape[1:]]
        low.line(1, low.stack(name, dims, _src(dtype_ast(var.aval.dtype))))
        found.append((k, name))
    return found


def _rows(trips, k):
    """The rows of a stack of every k-th carry of `trips` iterations (source text)."""
    return trips if not k else f"({trips} + {k - 1}) // {k}"


def _store(low, indent, stacks, count, k):
    """Where the carries at iteration `count` go on their stacks: (indent, row), under an
    `if` that keeps every k-th iteration's with a checkpoint."""
    if not stacks or not k:
        return indent, count
    low.line(indent, f"if {count} % {k} == 0:")
    return indent + 1, f"{count} // {k}"


def _while(low, eqn):
    n, k = eqn.kwargs["carries"], eqn.kwargs["checkpoint"]
    carry = _names(low, eqn, range(n), "carry")
    captures = [_atom(low, a) for a in eqn.ins[n:]]
    _assign(low, 1, carry, [_atom(low, a) for a in eqn.ins[:n]])
    stacks = [(k - n - 1, s) for k, s in
              _allocated(low, eqn, range(n + 1, 2 * n + 1), str(_FIRST_ROWS))]
    counted = stacks or n in results_of(low.program, eqn.out)
    trips = _names(low, eqn, [n], "trips")[0] if counted else None
    if counted:
        low.line(1, f"{trips} = 0")
    body, spares = _body(low, eqn, 0, carry, eqn.ins[:n])
    low.line(1, "while True:")
    (pred,) = region(low, eqn.kwargs["cond"], carry + captures, 2)
    low.line(2, f"if not {low.on_host(pred)}:")
    low.line(3, "break")
    indent, row = _store(low, 2, stacks, trips, k)
    for c, stack in stacks:
        low.line(indent, f"if {row} == {stack}.shape[0]:")
        low.line(indent + 1, f"{stack} = {low.grown(stack)}")
        low.line(indent, low.put(stack, row, carry[c]))
    _swap(low, 2, carry, region(low, body.program, carry + captures, 2, body), spares)
    if counted:
        low.line(2, f"{trips} += 1")
    if n in results_of(low.program, eqn.out):
        low.counted(1, trips)


def _fori(low, eqn):
    if eqn.kwargs.get("recompute") is not None:
        _segmented(low, eqn)
        return
    n, m, r = eqn.kwargs["carries"], eqn.kwargs["xs"], len(eqn.kwargs["y_avals"])
    k = eqn.kwargs["checkpoint"]
    lower, upper = (_on_host(low, a) for a in eqn.ins[:2])
    carry = _names(low, eqn, range(n), "carry")
    xs = [_atom(low, a) for a in eqn.ins[2 + n:2 + n + m]]
    captures = [_atom(low, a) for a in eqn.ins[2 + n + m:]]
    _assign(low, 1, carry, [_atom(low, a) for a in eqn.ins[2:2 + n]])
    trips = _names(low, eqn, [n + r], "trips")[0]
    results = results_of(low.program, eqn.out)
    if any(c in results for c in range(n, 2 * n + r + 1)):  # ys, the count or a stack read
        low.line(1, f"{trips} = max({upper} - {lower}, 0)")
    ys = _allocated(low, eqn, range(n, n + r), trips)
    stacks = [(c - n - r - 1, s) for c, s in
              _allocated(low, eqn, range(n + r + 1, 2 * n + r + 1), _rows(trips, k))]
    # Trips that share nothing (vmap's lanes: no carry, each writes its own rows) run
    # on Numba's threads; a prange drops an exception, so only a body that cannot raise,
    # whose rows are written by a put that cannot either (Numba runs a prange with a
    # raise in it serially).
    lane = not eqn.kwargs["reverse"] and low.parallel and not n \
        and not may_raise(eqn.kwargs["body"])
    body, spares = _body(low, eqn, 1, carry, eqn.ins[2:2 + n], lane)
    index = low.namer.fresh("it")
    from_zero = lower == "np.int64(0)"
    if eqn.kwargs["reverse"]:
        stop = "-1" if from_zero else f"{lower} - 1"
        low.line(1, f"for {index} in range({upper} - 1, {stop}, -1):")
    elif lane:
        low.line(1, f"for {index} in prange({lower}, {upper}):")
        low.used_prange = True
    else:
        low.line(1, f"for {index} in range({lower}, {upper}):")
    row = index if from_zero else f"({index} - {lower})"
    indent, at = _store(low, 2, stacks, row, k)
    for c, stack in stacks:
        low.line(indent, low.put(stack, at, carry[c]))
    first = low.loop_index(index, body.program)
    outs = region(low, body.program,
                  [first] + carry + [low.row(x, row) for x in xs] + captures, 2, body)
    for c, y in ys:  # before the swap, which rebinds the spare buffers' names
        low.line(2, low.put(y, row, outs[c], lane))
    _swap(low, 2, carry, outs[:n], spares)
    if n + r in results:
        low.counted(1, trips)


def _segmented(low, eqn):
    """The adjoint of a checkpointed loop (structured.py): its iterations, last first, in
    segments of k; each segment's forward carries recomputed from its checkpoint (the
    forward body, `recompute`) into segment stacks of k rows, which the adjoint body then
    reads backwards. Every other row (the forward xs, the outputs' cotangents) and the
    stacked outputs keep the loop's own row numbers."""
    n, m, r = eqn.kwargs["carries"], eqn.kwargs["xs"], len(eqn.kwargs["y_avals"])
    k, segment_rows = eqn.kwargs["segment"]
    forward = eqn.kwargs["recompute"]
    has_index, fc, fx, fcap = eqn.kwargs["recompute_ins"]
    split = len(eqn.ins) - (has_index + fc + fx + fcap)
    upper = _on_host(low, eqn.ins[1])  # the adjoint runs its rows from 0
    carry = _names(low, eqn, range(n), "carry")
    xs = [_atom(low, a) for a in eqn.ins[2 + n:2 + n + m]]
    captures = [_atom(low, a) for a in eqn.ins[2 + n + m:split]]
    f_lower = [_on_host(low, a) for a in eqn.ins[split:split + has_index]]
    given = [_atom(low, a) for a in eqn.ins[split + has_index:]]
    checkpoints, f_xs, f_captures = given[:fc], given[fc:fc + fx], given[fc + fx:]
    _assign(low, 1, carry, [_atom(low, a) for a in eqn.ins[2:2 + n]])
    trips = _names(low, eqn, [n + r], "trips")[0]
    low.line(1, f"{trips} = max({upper}, 0)")
    ys = _allocated(low, eqn, range(n, n + r), trips)
    rows = low.namer.fresh("segment_rows")
    low.line(1, f"{rows} = min({k}, {trips})")
    segments = []
    for var in forward.ins[has_index:has_index + fc]:
        name = low.namer.fresh("segment")
        dims = [rows] + [low.sizes.source(d) for d in var.aval.shape]
        low.line(1, low.stack(name, dims, _src(dtype_ast(var.aval.dtype))))
        segments.append(name)
    body, spares = _body(low, eqn, 1, carry, eqn.ins[2:2 + n])
    segment, start, stop = (low.namer.fresh(b) for b in ("segment_index", "start", "stop"))
    low.line(1, f"for {segment} in range({_rows(trips, k)} - 1, -1, -1):")
    low.line(2, f"{start} = {segment} * {k}")
    low.line(2, f"{stop} = min({start} + {k}, {trips})")
    state = [low.namer.fresh("state") for _ in range(fc)]
    _assign(low, 2, state, [low.row(c, segment) for c in checkpoints])
    index = low.namer.fresh("it")
    low.line(2, f"for {index} in range({start}, {stop}):")
    for name, value in zip(segments, state):
        low.line(3, low.put(name, f"{index} - {start}", value))
    first = [low.loop_index(f"{f_lower[0]} + {index}", forward)] if has_index else []
    outs = region(low, forward, first + state + [low.row(x, index) for x in f_xs] + f_captures,
                  3)
    _assign(low, 3, state, outs[:fc])
    index = low.namer.fresh("it")
    low.line(2, f"for {index} in range({stop} - 1, {start} - 1, -1):")
    stored = [low.row(segments[c], f"{index} - {start}") for c in segment_rows]
    outs = region(low, body.program,
                  [low.loop_index(index, body.program)] + carry + stored +
                  [low.row(x, index) for x in xs] + captures, 3, body)
    for c, y in ys:
        low.line(3, low.put(y, index, outs[c]))
    _swap(low, 3, carry, outs[:n], spares)
    if n + r in results_of(low.program, eqn.out):
        low.counted(1, trips)


def _cond(low, eqn):
    branches = eqn.kwargs["true"], eqn.kwargs["false"]
    names = _names(low, eqn, range(len(branches[0].outs)), "result")
    operands = [_atom(low, a) for a in eqn.ins[1:]]
    for head, branch in zip((f"if {_on_host(low, eqn.ins[0])}:", "else:"), branches):
        low.line(1, head)
        before = len(low.lines)
        sub = _branch(low, eqn, branch)
        _assign(low, 2, names, region(low, sub.program, operands, 2, sub))
        if len(low.lines) == before:
            low.line(2, "pass")


def _branch(low, eqn, branch):
    """The lowering of a branch. An operand that is an enclosing loop's carry buffer
    (`low.owned`: _started made the branch return it plus its own sum) is added into in
    place (_rows_added), and the cond's result there owns the buffer in turn."""
    producers = _uses(branch)[0]
    carried = [(var, k) for var, atom in zip(branch.ins, eqn.ins[1:]) if atom in low.owned
               for k, out in enumerate(branch.outs) if out is var or (
                   out in producers and producers[out].prim is add_p
                   and var in producers[out].ins)]
    program = _rows_added(low, branch, carried)[0]
    if carried:  # an owned operand: low.owned is a body's own set
        results = results_of(low.program, eqn.out)
        low.owned.update(results[k] for _, k in carried if k in results)
    sub = _lowering(low, program)
    sub.owned = {var for var, _ in carried}
    return sub
