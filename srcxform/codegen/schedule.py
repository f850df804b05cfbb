"""Scheduling: groups elementwise equations that share a loop domain, and the reductions
that consume them, into loop groups; everything else stays one equation.

Returns a schedule (equations and LoopGroups in an order that respects every
dependency). A group may hold forward and adjoint work alike (the adjoint then reads the
forward's scalars instead of arrays), and no member reads a reduction of its own group
(the reduction is complete only after the loop).
"""

from dataclasses import dataclass, field

from srcxform.core.dims import expr_of
from srcxform.core.ir import Var


@dataclass(eq=False)
class LoopGroup:
    """Equations computed together in one loop nest over `domain`."""

    domain: tuple
    eqns: list = field(default_factory=list)


def domain_of(eqn):
    """The loop domain of a fusible equation, or None for one that is not fusible."""
    if eqn.prim.kind == "elementwise":
        return eqn.out.aval.shape
    if eqn.prim.kind == "reduction":
        return eqn.ins[0].aval.shape
    return None


def schedule(program):
    """The program's equations as an ordered list of Eqns and LoopGroups.

    Each fusible equation joins the latest group of its domain that it can: one that
    nothing it reads depends on (through work outside the group, or through the group's
    own reductions, which are complete only after the loop). `needs` is the graph of what
    each schedule item must follow.
    """
    groups_by_domain, made_by, reductions = {}, {}, set()
    nodes, needs = [], {}  # schedule items in creation order, and what each must follow

    def sources(eqn, group=None):
        """The items whose results eqn reads, if eqn sits in `group`."""
        found = set()
        for a in eqn.ins:
            node = made_by.get(a) if isinstance(a, Var) else None
            if node is not None and (node is not group or a in reductions):
                found.add(node)
        return found

    def reaches(start, target):
        seen, stack = set(), list(start)
        while stack:
            node = stack.pop()
            if node is target:
                return True
            if node not in seen:
                seen.add(node)
                stack.extend(needs[node])
        return False

    for eqn in program.eqns:
        domain = domain_of(eqn)
        if domain is None:
            nodes.append(eqn)
            needs[eqn] = sources(eqn)
            made_by[eqn.out] = eqn
            continue
        key = tuple(expr_of(d) for d in domain)
        group = next((g for g in reversed(groups_by_domain.get(key, []))
                      if not reaches(sources(eqn, g), g)), None)
        if group is None:
            group = LoopGroup(domain)
            groups_by_domain.setdefault(key, []).append(group)
            nodes.append(group)
            needs[group] = set()
        needs[group] |= sources(eqn, group)
        group.eqns.append(eqn)
        made_by[eqn.out] = group
        if eqn.prim.kind == "reduction":
            reductions.add(eqn.out)
    return _topological(nodes, needs)


def _topological(nodes, needs):
    """The nodes in an order where each follows what it needs, else in creation order."""
    order, done = [], set()
    remaining = list(nodes)
    while remaining:
        i = next(i for i, node in enumerate(remaining) if needs[node] <= done)
        done.add(remaining[i])
        order.append(remaining.pop(i))
    return order
