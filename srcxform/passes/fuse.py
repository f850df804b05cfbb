"""Fusion: groups elementwise equations that share a loop domain, and the reductions
that consume them, into loop groups; everything else stays one equation.

Returns a schedule (equations and LoopGroups in an order that respects every
dependency). A group may hold forward and adjoint work alike (the adjoint then reads the
forward's scalars instead of arrays), and no member reads a reduction of its own group
(the reduction is complete only after the loop).
"""

from dataclasses import dataclass, field

from srcxform.dims import expr_of
from srcxform.ir import Var


@dataclass(eq=False)
class LoopGroup:
    """Equations computed together in one loop nest over `domain`."""

    domain: tuple
    adjoint: bool
    eqns: list = field(default_factory=list)


def domain_of(eqn):
    """The loop domain of a fusible equation, or None for one that is not fusible."""
    if eqn.prim.kind == "elementwise":
        return eqn.out.aval.shape
    if eqn.prim.kind == "reduction":
        return eqn.ins[0].aval.shape
    return None


def schedule(program):
    """The program's equations as an ordered list of Eqns and LoopGroups."""
    items, open_groups, owner = [], {}, {}

    def close(group):
        key = next((k for k, g in open_groups.items() if g is group), None)
        if key is not None:
            del open_groups[key]
            items.append(group)

    # Equations that are not fused wait until something needs them, so that the loop
    # groups they read can go on absorbing work meanwhile.
    pending = []

    def flush(needed):
        last = max((i for i, p in enumerate(pending) if p.out in needed), default=-1)
        for p in pending[:last + 1]:
            for a in p.ins:
                if a in owner:
                    close(owner[a])
            items.append(p)
        del pending[:last + 1]

    for eqn in program.eqns:
        inputs = [a for a in eqn.ins if isinstance(a, Var)]
        flush(set(inputs))
        domain = domain_of(eqn)
        if domain is None:
            pending.append(eqn)
            continue
        key = tuple(expr_of(d) for d in domain)
        group = open_groups.get(key)
        if group is not None and any(owner.get(a) is group and _is_reduction(a, group)
                                     for a in inputs):
            close(group)
            group = None
        for a in inputs:
            if a in owner and owner[a] is not group:
                close(owner[a])
        if group is None:
            group = open_groups[key] = LoopGroup(domain, eqn.adjoint)
        group.eqns.append(eqn)
        owner[eqn.out] = group
    flush({p.out for p in pending})
    for group in list(open_groups.values()):
        close(group)
    return items


def _is_reduction(var, group):
    return any(e.out is var and e.prim.kind == "reduction" for e in group.eqns)
