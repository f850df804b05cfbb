"""Rows computed alike, joined, become one loop: `tf.stack([x[i] - mu for i in range(n)])`.

A Python loop over rows unrolls while tracing into n copies of the same equations, each
reading its own row x[i], and a stack (concat) joins them. Code generation would make n
copies of every loop nest, whose size (and Numba's compile time, superlinear in it) grows
with n. Where concat's operands are such copies, the trace computes the join instead as a
fori_loop over the rows (structured.py), its body the equations of one copy: a kernel
whose size does not depend on n, and whose adjoint is the loop's.

The copies must match equation for equation: the same primitive and parameters, the same
values read from outside the copies, and in each copy's place of a row read, x[i] of the
same x at i = start + step * copy. The loop computes every element with the same
operations as the copies, so the join's value is bit for bit the same. The copies stay in
the program, where the passes drop them unless something else reads them.
"""

from dataclasses import dataclass

from srcxform.core import recording
from srcxform.core.aval import Aval
from srcxform.core.ir import Lit, Var
import numpy as np

from srcxform.ops import getitem, reshape, transpose
from srcxform.ops.shape import getitem_p
from srcxform.passes import cse
from srcxform.passes.structured import _at_origin, fori_loop
from srcxform.core.tensor import Tensor, as_value

# Fewer copies than this are joined as they are: their code is small, and a loop's
# setup would cost more than it saves.
MIN_ROWS = 4


@dataclass(frozen=True)
class _Outside:
    """A value every copy reads, computed outside them (or a literal)."""

    atom: object


@dataclass(frozen=True)
class _Row:
    """Each copy's row of a source: source[start + step * copy][rest]."""

    source: int  # position in the plan's sources
    rest: tuple  # the rest of the index, applied to the row


@dataclass(frozen=True)
class _Apply:
    """Each copy's equation: the first copy's, to be bound on the loop's values."""

    eqn: object
    ins: tuple


def joined(trace, values, axis):
    """concat(values, axis) as a loop over rows computed alike, or None where values are
    not such copies (see the module's docstring)."""
    context = recording.CONTEXT
    if len(values) < MIN_ROWS or context.adjoint or context.traces[-1] is not trace \
            or any(v._trace is not trace or v.aval != values[0].aval for v in values):
        return None
    plan = _Plan(trace, len(values))
    root = plan.node(tuple(v.var for v in values))
    if root is None or not plan.sources:
        return None
    rows = [getitem(trace.tracers[x], (slice(start, start + step * (plan.k - 1) + 1, step),))
            for x, start, step in plan.sources]
    one = values[0].aval

    def body(i, carries, rows_now):
        return [], [plan.replay(root, rows_now)]

    ys, = fori_loop(0, plan.k, body, [], [], rows,
                    [Aval((plan.k,) + tuple(one.shape), one.dtype, one.weak)])
    # ys holds the copies along a new first axis: move it to `axis` and merge.
    perm = tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, len(one.shape) + 1))
    shape = tuple(d * plan.k if a == axis else d for a, d in enumerate(one.shape))
    return reshape(transpose(ys, perm) if axis else ys, shape)


class _Plan:
    """The copies' common equations, found from their results back to their rows."""

    def __init__(self, trace, k):
        self.trace, self.k = trace, k
        self.producers = trace.producers
        self.sources = []  # (source Var, start, step)
        self.nodes = {}

    def node(self, atoms):
        """The plan for one value of every copy (atoms: its k atoms), or None."""
        key = tuple(map(id, atoms))
        if key not in self.nodes:
            self.nodes[key] = self._match(atoms)
        return self.nodes[key]

    def _match(self, atoms):
        first = atoms[0]
        if all(a is first for a in atoms) or all(
                isinstance(a, Lit) and a.aval == first.aval and _same(a.value, first.value)
                for a in atoms):
            return _Outside(first) if isinstance(first, Lit) or first in self.trace.tracers \
                or self._const(first) is not None else None
        arrays = [self._const(a) if isinstance(a, Var) else None for a in atoms]
        if arrays[0] is not None and all(  # a constant each copy made anew, alike
                b is not None and b.dtype == arrays[0].dtype and np.array_equal(b, arrays[0])
                for b in arrays):
            return _Outside(first)
        eqns = [self.producers.get(a) if isinstance(a, Var) else None for a in atoms]
        if any(e is None for e in eqns):
            return None
        head = eqns[0]
        if getattr(head.prim, "structured", False) or any(
                e.prim is not head.prim or len(e.ins) != len(head.ins) for e in eqns):
            return None
        if all(_same(e.params, head.params) for e in eqns):
            ins = tuple(self.node(tuple(e.ins[j] for e in eqns)) for j in range(len(head.ins)))
            return None if None in ins else _Apply(head, ins)
        return self._row(eqns)

    def _row(self, eqns):
        """A row read: the same source at indices start + step * copy on its first axis."""
        head = eqns[0]
        source = head.ins[0]
        if not head.prim.selects or any(e.ins[0] is not source for e in eqns) \
                or source not in self.trace.tracers:
            return None
        firsts = [e.kwargs["index"][0] for e in eqns]
        rests = [e.kwargs["index"][1:] for e in eqns]
        if any(type(i) is not int or i < 0 for i in firsts) \
                or any(not _same(r, rests[0]) for r in rests):
            return None
        start, step = firsts[0], firsts[1] - firsts[0]
        if step < 1 or any(i != start + step * c for c, i in enumerate(firsts)):
            return None
        found = (source, start, step)
        if found not in self.sources:
            self.sources.append(found)
        return _Row(self.sources.index(found), rests[0])

    def _const(self, var):
        return self.trace.const_arrays.get(var)

    def _outside(self, atom):
        """The value of an atom the copies read from outside them."""
        if isinstance(atom, Var):
            tracer = self.trace.tracers.get(atom)
            return tracer if tracer is not None else Tensor._new(self._const(atom))
        if hasattr(atom.value, "expr"):  # a size
            return as_value(atom.value)
        return Tensor._new(np.asarray(atom.value, atom.aval.dtype), atom.aval.weak)

    def replay(self, root, rows):
        """root's value for one copy, binding its equations on the loop's rows."""
        done = {}  # id(node) -> its value

        def value(node):
            if id(node) in done:
                return done[id(node)]
            if isinstance(node, _Outside):
                result = self._outside(node.atom)
            elif isinstance(node, _Row):
                row = rows[node.source]
                result = getitem_p.bind(row, index=node.rest) if node.rest else row
            else:
                eqn = node.eqn
                out = eqn.prim.bind(*[value(n) for n in node.ins], **eqn.kwargs)
                result = _at_origin(out, eqn.origin)
            done[id(node)] = result
            return result

        return value(root)


def _same(a, b):
    """Whether two parameters (or literals) are equal as CSE finds equations equal: sizes by
    their expression, not by this trace's value (comparing values would guard that two
    sizes stay equal); False where == cannot say (arrays)."""
    try:
        return bool(cse.equality_key(a) == cse.equality_key(b))
    except (TypeError, ValueError):
        return False
