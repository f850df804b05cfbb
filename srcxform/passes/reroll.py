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

A chain of adds of terms computed alike (`s = s + x[i] * w[i]` in a loop, or `sum()` of
rows) becomes a loop the same way, its carry the sum (Folder): when a chain reaches
MIN_TERMS such terms, their sum is a loop from the value before them; each later term that
is the next copy makes the loop one row longer, a new loop equation of the same size. The
loop adds the terms in the chain's order, so the sum is bit for bit the chain's. Each
loop's sum is also computed as an add to the chain's adds: an equation reading a sum of
a loop that is not the chain's latest (a list of partial sums, stacked after the chain)
reads that add instead (`Folder.reading`), so the passes drop every loop but the latest.
A chain whose latest sum is read before its next add (`v = v + a[i]; x = x + v`) goes on
as adds from there.

Every link of a chain is one op, the sum so far on one side: `s + t`, `t + s`, `s - t` or
`t - s` (bound alike by the loop's body: the rounding is the unrolled one's); a term may
broadcast where the link keeps the sum's aval (the loop's carry). Links mixing + and -
are no chain: one op's body cannot alternate them, and reassociating changes rounding.
"""

import dataclasses
from dataclasses import dataclass

from srcxform.core import recording
from srcxform.core.aval import Aval, same_shape
from srcxform.core.ir import Lit, Var
import numpy as np

from srcxform.ops import getitem, reshape, transpose
from srcxform.ops.elementwise import add_p, subtract_p
from srcxform.ops.shape import getitem_p
from srcxform.passes import cse
from srcxform.passes.structured import (
    INDEX,
    FORI,
    at_origin,
    _bind_loop,
    align,
    fori_loop,
    trace_region,
)
from srcxform.core.tensor import Tensor, as_value

# Fewer copies than this are joined as they are: their code is small, and a loop's
# setup would cost more than it saves.
MIN_ROWS = 4
# Shorter chains of adds stay adds: measured on `s = s + x[i] * w[i]`, the kernel with a
# loop takes longer to compile (Numba) than the unrolled chain's below about 30 terms
# (4.4 s against 1.4 s at 10 terms, 3.9 s against 4.1 s at 30, 4.0 s against 30 s at 100).
MIN_TERMS = 32
# The most nodes an add's term is matched through (its equations and the values they
# read): a term that reads a long history (a recurrence) is given up on at once, so
# every add of a long chain costs the same, and the match's recursion stays shallow.
MAX_TERM_NODES = 96


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
            or any(v._trace is not trace or not _same_aval(v.aval, values[0].aval) for v in values):
        return None
    plan = _Plan(trace, len(values))
    root = plan.node(tuple(v.ir_var for v in values))
    if root is None or not plan.sources:
        return None
    one = values[0].aval

    def body(i, carries, rows_now):
        return [], [plan.replay(root, rows_now)]

    ys, = fori_loop(0, plan.k, body, [], [], _rows(trace, plan.sources, plan.k),
                    [Aval((plan.k,) + tuple(one.shape), one.dtype, one.weak)])
    # ys holds the copies along a new first axis: move it to `axis` and merge.
    perm = tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, len(one.shape) + 1))
    shape = tuple(d * plan.k if a == axis else d for a, d in enumerate(one.shape))
    trace.rerolled = True
    return reshape(transpose(ys, perm) if axis else ys, shape)


def _rows(trace, sources, k):
    """Each source's k rows the copies read, as the loop's rows (x[start::step][:k])."""
    return [getitem(trace.tracers[x], (slice(start, start + step * (k - 1) + 1, step),))
            for x, start, step in sources]


class _Body:
    """A chain's loop body, traced once: each longer loop binds it again; and the sum of
    the chain's latest loop."""

    region = captures = latest = None


@dataclass(frozen=True)
class _Fold:
    """A loop that sums a chain's terms: base + term(0) + ... + term(k - 1)."""

    base: object  # the chain's value before its first rerolled term (a Tracer)
    plan: object  # the _Plan that matched its last term (with the first ones, or the one before)
    root: object  # the plan's node of a term
    sources: tuple  # (source Var, start, step) of the terms' rows, copy 0 at start
    k: int
    last: Var  # the last term's Var
    body: _Body  # shared by the chain's folds
    link: tuple  # (op, side): each link is op(running, term) (side 0) or op(term, running)
    plain: object = None  # the same sum as an add to the chain's, a Tracer

    def bind(self, running, term):
        """One link of the chain, its operands in the chain's order."""
        op, side = self.link
        return op.bind(running, term) if side == 0 else op.bind(term, running)


def _same_aval(a, b):
    """Whether two values have one aval at every size: traced sizes are compared by
    expression, so a decision to fold (an optimization) records no guard on the sizes."""
    return a.dtype == b.dtype and a.weak == b.weak and same_shape(a.shape, b.shape)


class Folder:
    """A trace's chains of adds of terms computed alike, summed by loops (see the
    module's docstring); called for every `x + y` and `x - y` of the trace's own values."""

    def __init__(self):
        self.folds = {}  # the Var of a loop's sum -> its _Fold
        self.read = set()  # sums of chains read as they grew: they go on as adds

    def __call__(self, trace, x, y, op=add_p):
        """op(x, y) as a loop over the chain's terms before, or None (then an equation)."""
        context = recording.CONTEXT
        if context.adjoint or not context.traces or context.traces[-1] is not trace \
                or not all(getattr(v, "_trace", None) is trace for v in (x, y)):
            return None
        fold = self._fold(trace, x, y, op)
        if fold is None:
            return None
        running, term = (x, y) if fold.link[1] == 0 else (y, x)
        plain = self.folds[running.ir_var].plain if running.ir_var in self.folds else running
        out = _sum_loop(trace, fold)
        self.folds[out.ir_var] = dataclasses.replace(fold, plain=fold.bind(plain, term))
        fold.body.latest = out.ir_var
        trace.rerolled = True
        return out

    def _fold(self, trace, x, y, op):
        """The fold of op(x, y), the sum so far either side: one made longer, or a new one."""
        sides = [(side, r, t) for side, r, t in ((0, x, y), (1, y, x))
                 if _keeps_aval(op, r, t) and not self._was_read(trace, r.ir_var)]
        for side, running, term in sides:
            fold = self.folds.get(running.ir_var)
            if fold is not None and fold.link == (op, side):
                return self._longer(trace, fold, term)
        firsts = (self._first(trace, running, term, (op, side)) for side, running, term in sides)
        return next(filter(None, firsts), None)

    def reading(self, values):
        """The values an equation reads, each sum of a chain's loop but its latest as an
        add to the chain's adds: the passes drop every loop nothing reads (a list of the
        partial sums, stacked after the chain, would keep n loops of up to n rows). The
        latest loop, once read, is the chain's last: it goes on as adds."""
        if not self.folds:
            return values
        read = list(values)
        for j, value in enumerate(values):
            fold = self.folds.get(getattr(value, "ir_var", None))
            if fold is None:
                continue
            if fold.body.latest is value.ir_var:
                self.read.add(value.ir_var)
            else:
                read[j] = fold.plain
        return read

    @staticmethod
    def _first(trace, running, term, link):
        """The fold of link (op, side) of running, which ends a chain of MIN_TERMS - 1 such
        links of terms computed alike, and term: the terms' rows are their copy number's."""
        op, side = link
        terms, atom = [term.ir_var], running.ir_var
        while len(terms) < MIN_TERMS:
            eqn = trace.producers.get(atom)
            ins = eqn.ins if eqn is not None and eqn.prim is op else (None, None)
            before, next_term = ins[side], ins[1 - side]
            if not (isinstance(before, Var) and _same_aval(before.aval, running.aval)
                    and isinstance(next_term, Var) and _same_aval(next_term.aval, term.aval)):
                return None
            atom = before
            terms.append(next_term)
        terms.reverse()
        plan = _Plan(trace, len(terms), MAX_TERM_NODES)
        root = plan.node(tuple(terms))
        if root is None or not plan.sources or atom not in trace.tracers:
            return None
        return _Fold(trace.tracers[atom], plan, root, tuple(plan.sources), len(terms),
                     terms[-1], _Body(), link)

    def _was_read(self, trace, var):
        """Whether var is the sum of a chain read as it grew (`v = v + a[i]; x = x + v`):
        a loop's sum read before the next add (`reading`), or an add to such a sum."""
        eqn = trace.producers.get(var)
        if var in self.read or eqn is not None and eqn.prim in (add_p, subtract_p) \
                and any(isinstance(a, Var) and a in self.read for a in eqn.ins):
            self.read.add(var)
            return True
        return False

    @staticmethod
    def _longer(trace, fold, term):
        """fold one term longer where term is its next copy: the plan of (its last term,
        term) is the fold's, and reads each source one row on."""
        plan = _Plan(trace, 2, MAX_TERM_NODES)
        root = plan.node((fold.last, term.ir_var))
        k = fold.k
        if root is None or len(plan.sources) != len(fold.sources) or any(
                (source, start, step) != (first, start0 + step0 * (k - 1), step0)
                for (source, start, step), (first, start0, step0)
                in zip(plan.sources, fold.sources)) \
                or not _alike(plan.shape(root), fold.plan.shape(fold.root),
                              trace.const_arrays):
            return None
        return dataclasses.replace(fold, k=k + 1, last=term.ir_var)


def _keeps_aval(op, running, term):
    """Whether op(running, term) keeps running's aval (a term may broadcast): the carry's."""
    try:
        out = op.shape(running.aval, term.aval)
    except (TypeError, ValueError):
        return False
    return _same_aval(out, running.aval)


def _sum_loop(trace, fold):
    """fori_loop(0, k) adding the term of each iteration's rows to the sum so far, from
    fold.base; its body traced at the chain's first fold only (tracing it again at every
    add would be most of the chain's tracing time)."""
    rows = _rows(trace, fold.sources, fold.k)
    body = fold.body
    if body.region is None:
        def term(i, total, *rows_now):
            return [fold.bind(total, fold.plan.replay(fold.root, rows_now))]

        avals = [INDEX, fold.base.aval] + [Aval(tuple(r.shape[1:]), r.dtype) for r in rows]
        hints = ["i", "partial"] + [f"row{j}" for j in range(len(rows))]
        (body.region,), body.captures = align([trace_region("body", term, avals, hints)])
    bounds = [np.int64(0), np.int64(fold.k)]
    out, = _bind_loop(FORI, bounds, [fold.base], body.captures, {"body": body.region}, rows)
    return out


def _alike(shape_a, shape_b, consts):
    """Whether two plans' shapes (_Plan.shape) are the same equations on the same
    values: outside values the same Var, equal literals or equal constants."""
    return len(shape_a) == len(shape_b) and all(
        _same_outside(a[1], b[1], consts) if a[0] == b[0] == "outside" else _same(a, b)
        for a, b in zip(shape_a, shape_b))


def _same_outside(a, b, consts):
    if a is b or isinstance(a, Lit) and isinstance(b, Lit) and _same(a, b):
        return True
    if not (isinstance(a, Var) and isinstance(b, Var)):
        return False
    c, d = consts.get(a), consts.get(b)
    return c is not None and d is not None and cse.same_array(c, d)


class _Plan:
    """The copies' common equations, found from their results back to their rows;
    through at most `budget` nodes (None: no limit)."""

    def __init__(self, trace, k, budget=None):
        self.trace, self.k, self.budget = trace, k, budget
        self.producers = trace.producers
        self.sources = []  # (source Var, start, step)
        self.nodes = {}

    def node(self, atoms):
        """The plan for one value of every copy (atoms: its k atoms), or None."""
        key = tuple(map(id, atoms))
        if key not in self.nodes:
            if self.budget is not None:
                self.budget -= 1
                if self.budget < 0:
                    return None
            self.nodes[key] = self._match(atoms)
        return self.nodes[key]

    def shape(self, root):
        """The plan from root as a list, each node once, in the order a walk from root
        meets them: ("outside", its atom), ("row", the source's position, the rest of
        the index), or ("apply", primitive, parameters, the positions of its inputs)."""
        order, shape = {}, []

        def visit(node):
            if id(node) not in order:
                if isinstance(node, _Apply):
                    ins = tuple(visit(n) for n in node.ins)
                    shape.append(("apply", node.eqn.prim.name, node.eqn.params, ins))
                elif isinstance(node, _Row):
                    shape.append(("row", node.source, node.rest))
                else:
                    shape.append(("outside", node.atom))
                order[id(node)] = len(shape) - 1
            return order[id(node)]

        visit(root)
        return shape

    def _match(self, atoms):
        first = atoms[0]
        if all(a is first for a in atoms) or all(
                isinstance(a, Lit) and _same_aval(a.aval, first.aval)
                and _same(a.value, first.value) for a in atoms):
            return _Outside(first) if isinstance(first, Lit) or first in self.trace.tracers \
                or self._const(first) is not None else None
        arrays = [self._const(a) if isinstance(a, Var) else None for a in atoms]
        if arrays[0] is not None and all(  # a constant each copy made anew, alike
                b is not None and cse.same_array(b, arrays[0])
                for b in arrays):
            return _Outside(first)
        eqns = [self.producers.get(a) if isinstance(a, Var) else None for a in atoms]
        if any(e is None for e in eqns) or any(a in self.trace.custom_gradients for a in atoms):
            return None  # (a custom_gradient's gradient is not its equations')
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
        if not head.prim.algebra.selects or any(e.ins[0] is not source for e in eqns) \
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
                result = at_origin(out, eqn.origin)
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
