"""Dead loop carries: a fori_loop's carry that nothing reads after the loop (its result
and its stack both unread) and that no other carry or row the loop gives is computed
from is dropped, with what its body computed for it; so are its stacked outputs that
nothing reads, and the rows and captures the body then no longer reads. A loop's
adjoint carries the gradient of every float it captures, and a kernel for one
argument's gradient reads the others' none: `wrt=0` of `for i: total += f(x[i], w)` no
longer sums w's gradient a trip. A cond's results that nothing reads are dropped from
both branches alike.

A checkpointed loop (its adjoint recomputes it from every carry) and a while_loop (its
test reads the carries) keep theirs. Regions are pruned where they are optimized
(structured.align), before an enclosing loop is differentiated, which rebinds their
loops from the pruned equations.
"""

from dataclasses import replace

from srcxform.core.ir import Var
from srcxform.passes import dce
from srcxform.passes.dce import needed


def run(program):
    read = {a for e in program.eqns for a in e.ins if isinstance(a, Var)}
    read.update(a for a in program.outs if isinstance(a, Var))
    outputs = {}  # each loop's results: {token: {index: output equation}}
    for e in program.eqns:
        if e.prim.name == "output":
            outputs.setdefault(e.ins[0], {})[e.kwargs["index"]] = e
    made = {}
    for eqn in program.eqns:
        pruned = None
        if eqn.prim.name == "fori_loop" and eqn.kwargs["checkpoint"] is None \
                and eqn.kwargs.get("recompute") is None:
            pruned = _pruned(eqn, outputs.get(eqn.out, {}), read)
        elif eqn.prim.name == "cond":
            pruned = _pruned_cond(eqn, outputs.get(eqn.out, {}), read)
        made.update(pruned or {})
    if not made:
        return program, False
    eqns = [made.get(e, e) for e in program.eqns if made.get(e, e) is not None]
    return program.replace(eqns=eqns), True


def _pruned(loop, outputs, read):
    """{equation: its replacement (None: gone)} for `loop` and its `outputs` (the output
    equations of its results), where it has a dead carry, stacked output, row or
    capture; else None."""
    results = {k: e for k, e in outputs.items() if e.out in read}
    params = loop.kwargs
    body, n, m = params["body"], params["carries"], params["xs"]
    r = len(params["y_avals"])
    ys = [j for j in range(r) if n + j in results]
    kept = live_carries(body, 1, n, range(n), ys,
                        [k for k in range(n) if k in results or n + r + 1 + k in results])
    new_body = _optimized(body.replace(
        ins=[body.ins[0]] + [body.ins[1 + k] for k in kept] + body.ins[1 + n:],
        outs=[body.outs[k] for k in kept] + [body.outs[n + j] for j in ys]))
    reads = needed(new_body, new_body.outs)
    rest = [k for k in range(1 + n, len(body.ins)) if body.ins[k] in reads]
    if len(kept) == n and len(ys) == r and len(rest) == len(body.ins) - 1 - n:
        return None
    rows = [k - 1 - n for k in rest if k < 1 + n + m]
    captures = [k - 1 - n - m for k in rest if k >= 1 + n + m]
    new_body = new_body.replace(ins=new_body.ins[:1 + len(kept)] + [body.ins[k] for k in rest])
    inits, xs, outer = loop.ins[2:2 + n], loop.ins[2 + n:2 + n + m], loop.ins[2 + n + m:]
    ins = list(loop.ins[:2]) + [inits[k] for k in kept] + [xs[k] for k in rows] \
        + [outer[k] for k in captures]
    changed = dict(params, body=new_body, carries=len(kept), xs=len(rows),
                   y_avals=tuple(params["y_avals"][j] for j in ys))
    made = dict.fromkeys(e for e in outputs.values() if e.out not in read)
    made[loop] = replace(loop, ins=tuple(ins), params=tuple(sorted(changed.items())))
    # Each result read, renumbered: the carries kept, the rows given, the trips, the stacks.
    index = {k: j for j, k in enumerate(kept)}
    index.update({n + j: len(kept) + i for i, j in enumerate(ys)})
    index[n + r] = len(kept) + len(ys)
    index.update({n + r + 1 + k: len(kept) + len(ys) + 1 + j for j, k in enumerate(kept)})
    return _renumbered(made, results, index)


def _pruned_cond(cond, outputs, read):
    """_pruned of a cond: its results that nothing reads dropped from both branches, and
    the operands neither branch reads then."""
    results = {k: e for k, e in outputs.items() if e.out in read}
    kept = sorted(results)
    params = cond.kwargs
    sides = {side: _optimized(params[side].replace(outs=[params[side].outs[k] for k in kept]))
             for side in ("true", "false")}
    reads = [needed(b, b.outs) for b in sides.values()]
    operands = [k for k in range(len(cond.ins) - 1)
                if any(b.ins[k] in r for b, r in zip(sides.values(), reads))]
    if len(kept) == len(params["true"].outs) and len(operands) == len(cond.ins) - 1:
        return None
    sides = {side: b.replace(ins=[b.ins[k] for k in operands]) for side, b in sides.items()}
    made = dict.fromkeys(e for e in outputs.values() if e.out not in read)
    made[cond] = replace(cond, ins=(cond.ins[0],) + tuple(cond.ins[1 + k] for k in operands),
                         params=tuple(sorted(dict(params, **sides).items())))
    return _renumbered(made, results, {k: j for j, k in enumerate(kept)})


def live_carries(body, first, n, among, ys, seeded):
    """The carries of a loop (`among` them; the body's carries start at input `first`)
    that `seeded` ones and the stacked outputs `ys` need: those, and each carry whose value
    at a trip's start what they compute reads, to a fixed point over iterations."""
    live = set(seeded) & set(among)
    while True:
        reads = needed(body, [body.outs[k] for k in live] + [body.outs[n + j] for j in ys])
        grown = live | {k for k in among if body.ins[first + k] in reads}
        if grown == live:
            return sorted(live)
        live = grown


def _renumbered(made, results, index):
    """made, with each result read (`results`) taking its new position from `index`."""
    for k, result in results.items():
        made[result] = replace(result, params=tuple(sorted(dict(result.kwargs,
                                                                 index=index[k]).items())))
    return made


def _optimized(body):
    """The body with what nothing reads dropped, its own loops' dead carries too."""
    changed = True
    while changed:
        body, dropped = dce.run(body)
        body, pruned = run(body)
        changed = dropped or pruned
    return body
