"""Where the values of loop groups live: a scalar inside their loop, an array, or
recomputed where another loop reads them; and which embeds and concats are never built.

Recomputing cheap arithmetic where it is read (gather form) saves writing and reading
back an array, which costs more than the arithmetic for large arrays. Transcendental
functions (a primitive's `expensive`) are never recomputed: their cost is the reason to
store them.
"""

import ast
import functools
from dataclasses import dataclass

from srcxform.core.aval import is_one
from srcxform.core.ir import Var
from srcxform.codegen.schedule import LoopGroup

# The size of an expression worth recomputing rather than storing, in AST nodes of its
# inline form. A stored value costs a fresh array each call, written and read back: for
# hvp on Rosenbrock (n = 1e6) two such arrays made it 16 ms against 0.9 ms recomputed
# (48 stored them), so a value read by at most two ops is recomputed up to 128 nodes. A
# value read by more is inlined into each: at 128 an unrolled chain's shared 2 * s was
# copied into 20 reads, and its kernel took Numba 60% longer to compile.
_MAX_NODES, _MAX_NODES_FEW_READS = 48, 128


# A concat of at most this many pieces that only loops read is read in place: each read
# tests which piece holds the element (more pieces, a longer chain of tests at every read).
_MAX_PIECES = 4


@dataclass
class Placement:
    # embeds and concats read only by loops, never built: their readers load g where it
    # lies (else 0), or the piece that holds the element
    virtual: set
    recomputed: set  # values other loops recompute from their inputs where they read them
    arrays: set  # loop values stored in arrays, for readers that cannot recompute them
    # products (Codegen.by_rows) the one loop nest reading them computes a block of rows
    # at a time, inside its outer loop: product -> that nest's LoopGroup
    by_rows: dict


def place(program, items):
    groups = [item for item in items if isinstance(item, LoopGroup)]
    group_of = {e.out: g for g in groups for e in g.eqns}
    outputs = {a for a in program.outs if isinstance(a, Var)}
    consumers = {}
    for eqn in program.eqns:
        for a in eqn.ins:
            if isinstance(a, Var):
                consumers.setdefault(a, []).append(eqn)
    virtual = {eqn.out for eqn in program.eqns if _readable_in_place(eqn) and eqn.out not in outputs
               and all(c.out in group_of for c in consumers.get(eqn.out, ()))}
    # A reduction's result read by another loop is always stored, so a value computed
    # from it can be recomputed there too; so can one computed from a loop value that
    # another loop reads (stored for that reader anyway: lse's exp(x - top) / sum).
    reduced = {eqn.out for eqn in program.eqns if eqn.prim.kind == "reduction"}
    recomputed, size = set(), {}

    def reads(v):  # the ops that read v, through the virtual values that hold it
        return sum(len(consumers.get(c.out, ())) if c.out in virtual else 1
                   for c in consumers.get(v, ()))

    def stored_anyway(a):
        return a not in recomputed and (a in outputs or any(
            group_of.get(c.out) is not group_of[a] for c in consumers[a]))

    for eqn in program.eqns:
        v = eqn.out
        inputs = [a for a in eqn.ins if isinstance(a, Var)]
        if (v in group_of and eqn.prim.kind == "elementwise" and v.aval.shape
                and v not in outputs and not eqn.prim.codegen.expensive
                and all(a not in group_of or a in recomputed or a in reduced
                        or not a.aval.shape or stored_anyway(a) for a in inputs)):
            size[v] = _nodes(eqn.prim.template) + sum(size.get(a, 0) for a in inputs)
            limit = _MAX_NODES_FEW_READS if reads(v) <= 2 else _MAX_NODES
            if size[v] <= limit:
                recomputed.add(v)
    arrays = set()
    for v, group in group_of.items():
        if not v.aval.shape or v in arrays:
            continue
        readers = [c for c in consumers.get(v, ()) if group_of.get(c.out) is not group]
        if v in outputs or any(not (c.out in group_of or c.out in virtual) for c in readers) \
                or readers and v not in recomputed:
            arrays.add(v)
    return Placement(virtual, recomputed, arrays, _by_rows(program, group_of, consumers, recomputed, outputs))


def _by_rows(program, group_of, consumers, recomputed, outputs):
    """The by_rows products that one loop nest alone reads, at their own index (its domain
    is their shape, no dim of 1), and whose nest leaves nothing computed from them for
    another to recompute (which would read the product outside its block): GradBench
    kmeans' 80 MB k x n distances, 24 ms a call built whole, 11 ms a block of rows at a
    time (the block in cache when the nest reads it, no fresh pages)."""
    found = {}
    for eqn in program.eqns:
        v, readers = eqn.out, consumers.get(eqn.out, ())
        group = readers and group_of.get(readers[0].out)
        if not (eqn.prim.codegen.by_rows and group and v not in outputs
                and all(group_of.get(c.out) is group for c in readers)
                and tuple(group.domain) == tuple(v.aval.shape)
                and not any(map(is_one, group.domain))):
            continue
        reached = {v}  # what a recomputation elsewhere computes from it (stored: read)
        for e in group.eqns:
            if e.out in recomputed and any(a in reached for a in e.ins):
                reached.add(e.out)
        if all(group_of.get(c.out) is group for e in group.eqns if e.out in reached - {v}
               for c in consumers.get(e.out, ())):
            found[v] = group
    return found


def _readable_in_place(eqn):
    """An embed with unit steps, or a concat of a few arrays of its own dtype: ops whose
    element at an index is an input's element (or 0) that a reader can load itself."""
    algebra = eqn.prim.algebra
    if algebra.embeds:
        return all(getattr(i, "step", None) in (None, 1) for i in eqn.kwargs["index"])
    return algebra.joins and len(eqn.ins) <= _MAX_PIECES and all(
        isinstance(a, Var) and a.aval.dtype == eqn.out.aval.dtype for a in eqn.ins)


# A primitive's template never changes: each is measured once.
@functools.cache
def _nodes(template):
    return sum(1 for _ in ast.walk(template))
