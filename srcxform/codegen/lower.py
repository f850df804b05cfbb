"""Lowering: a Program and its fusion schedule → the text of one Python function.

Loop groups become explicit loop nests with scalar temporaries (`<name>_i`), arrays only
for values used outside the group, and accumulators for reductions; other equations
become one statement from their emit template. Every dtype is spelled out. Each run of
statements from one user line is headed by an origin comment, and a value an earlier loop
nest computed is marked `# recomputed` in each later one that computes it again.
"""

import ast
from typing import NamedTuple

import astor
import numpy as np

from srcxform import runtime
from srcxform.core.aval import is_one, spans
from srcxform.codegen import chunking, control, lanes, nancheck, verify
from srcxform.codegen.exprs import (
    Sizes,
    cast_to,
    dtype_ast,
    fill,
    literal,
    name_ast,
    param_ast,
    reduction_init,
    size_label,
)
from srcxform.codegen.placement import place
from srcxform.core.dtypes import promote
from srcxform.core.errors import cut, user_line
from srcxform.core.ir import Lit, Var
from srcxform.core.names import Namer
from srcxform.codegen.schedule import LoopGroup, schedule
from srcxform.core.version import __version__
from srcxform.core import syntax

# The columns an origin comment may fill, its indent included: the user's line is cut.
_WIDTH = 100
# The elements below which a parallel loop nest runs serially: a prange wakes Numba's
# thread pool, whose workers sleep when idle (srcxform/jit/openmp.py); W3's gradient ran
# faster in parallel only from about 6e4 elements on 2 cores (benchmarks/README.md).
PARALLEL_MIN = 65536
# A product one loop nest reads (placement.by_rows) is made in blocks of rows of about
# 8 MiB (at least 32 rows), each read by the nest while in cache, and no call maps fresh
# pages for a large product: GradBench kmeans at k = 1,000 (1,000 x 10,000, inner
# dimension 16) 10.8-11.7 ms a call against 24 whole (benchmarks/README.md). BLAS reads
# the second operand again for each block: a product of a longer inner dimension than
# half a block's rows is made whole (an MLP's 784 x 256 layer).
_BLOCK_BYTES, _BLOCK_ROWS = 1 << 23, 32


def _source(node):
    return astor.to_source(node).rstrip("\n")


class _Lowering:
    reserved = frozenset()  # names the target's own code binds (core/names.py's Namer)

    def __init__(self, program, parallel=False, namer=None, sizes=None, notes=None,
                 nan_checks=False):
        """namer, sizes and notes are the enclosing function's for a region (a loop body
        or branch, codegen/control.py), lowered into its statements. `nan_checks`: each
        value is checked as it is made (debug_nans; codegen/nancheck.py)."""
        self.program = program
        self.nested = namer is not None
        self.nan_checks = nan_checks
        self.taints = {}  # debug_nans: each value's taint, as source (nancheck.taint_of)
        self.nan_checked = set()  # debug_nans: the values a nest's scan checks
        self.nan_raises = []  # debug_nans: verdicts to raise, in program order (nancheck)
        # A prange drops an exception its body raises: checked code runs serially.
        self.parallel = parallel and not nan_checks
        self.used_prange = False
        self.modules = set()  # srcxform modules the body calls (blas, vecmath): imported
        self.recomputing = None  # the loop nest being emitted
        self.conditional = 0  # depth of conditional loads being built
        self.nest_raises = False  # whether the loop nest being built may raise (may_raise)
        self.namer = namer or Namer(program, self.reserved)
        self.sizes = sizes or Sizes(size_label(program))
        self.lines = []  # (indent, text)
        self.notes = set() if notes is None else notes  # the comments `note` wrote already
        self.last_origin = None
        self.computed = set()  # loop values some nest computed already: more are recomputed
        self.current_section = None  # the last section comment's label
        self.vectorized = False  # whether the loop being emitted is one LLVM vectorizes
        self.shift = 0  # levels every line is indented by besides its own: inside an `if`
        self.producers = {eqn.out: eqn for eqn in program.eqns}
        self.items = schedule(program)
        self.placement = place(program, self.items)
        self.virtual = self.placement.virtual
        # Products computed in blocks of rows inside their nest (placement.by_rows), where
        # it runs serially in one piece; each one's block's first row, named in its nest.
        self.in_blocks = {} if self.parallel or nan_checks else {
            v: g for v, g in self.placement.by_rows.items() if not self._sums_apart(self._live(g))}
        self.block_first = {}
        # Output arrays that loops fill are allocated by the caller and passed in: Numba
        # takes an array in for a fraction of what it costs to hand a new one out.
        first = {}
        for p, a in enumerate(program.outs):
            if isinstance(a, Var):
                first.setdefault(a, p)
        self.buffers = [] if self.nested else [
            p for a, p in first.items() if a in self.placement.arrays]
        self.buffer_vars = {program.outs[p] for p in self.buffers}

    # ----- output -----
    def line(self, indent, text):
        self.lines.append((indent + self.shift, text))

    def note(self, indent, text):
        """A comment explaining what follows, written once in a function."""
        if text not in self.notes:
            self.notes.add(text)
            self.line(indent, f"# {text}")

    def stmt(self, indent, node, comment=""):
        self.modules |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                         and n.id in runtime.MODULES}
        lines = _source(node).split("\n")
        lines[-1] += comment and "  # " + comment
        for text in lines:
            self.line(indent, text)

    def section(self, eqns):
        """A section comment where the code turns from the forward to the adjoint (or
        back), at the top level: a loop nest fusion gave both is labelled so, and its
        origin comments tell them apart."""
        if self.nested:  # a region's statements: its equation's section holds them
            return
        kinds = {e.adjoint for e in eqns}
        label = "forward and adjoint, fused" if len(kinds) == 2 else \
            "adjoint" if True in kinds else "forward"
        if label != self.current_section:
            self.line(1, f"# ---- {label} ----")
            self.current_section = label

    def header(self, eqn, indent):
        if indent == 1:  # a statement of its own
            self.section([eqn])
        if eqn.origin and (eqn.origin, eqn.adjoint) != self.last_origin:
            text = "# " + ("grad of " if eqn.adjoint else "") + user_line(eqn.origin)
            self.line(indent, cut(text, _WIDTH - 4 * (indent + self.shift)))
            self.last_origin = (eqn.origin, eqn.adjoint)

    # ----- atoms -----
    def lit(self, atom, dtype=None):
        dtype = dtype or atom.aval.dtype
        if hasattr(atom.value, "expr"):  # a size, computed at run time
            return cast_to(self.sizes.ast(atom.value), dtype)
        return literal(atom.value, dtype)

    def whole(self, atom):
        """An atom outside loops: a name or a literal."""
        return self.lit(atom) if isinstance(atom, Lit) else name_ast(self.namer(atom))

    # ----- equations that are not fused -----
    def template_names(self, eqn, ins):
        """What eqn's template names: its params, and its operands `ins` (those of a variadic
        primitive's last parameter as one tuple)."""
        names = {k: param_ast(v, self.sizes) for k, v in eqn.params}
        arg_names = eqn.prim.arg_names
        if eqn.prim.variadic:
            fixed = len(arg_names) - 1
            ins = ins[:fixed] + [ast.Tuple(ins[fixed:], ast.Load())]
        names.update(zip(arg_names, ins))
        return names

    def eqn(self, eqn, indent=1, first=None, rows=None):
        """eqn's statement at `indent`; with first and rows (names), a product in blocks
        (in_blocks): its rows first:first + rows."""
        if eqn.out in self.virtual or eqn.out in self.in_blocks and first is None:
            return
        prim = eqn.prim
        if getattr(prim, "structured", False):  # a loop or branch (codegen/control.py)
            if self.nan_checks:  # before its body can raise
                nancheck.raise_in_order(self)
            control.lower(self, eqn)
            return
        out = self.namer(eqn.out)
        ins = [self.whole(a) for a in eqn.ins]
        if first is not None:
            ins[0] = ast.Subscript(ins[0], ast.Slice(name_ast(first), ast.BinOp(
                name_ast(first), ast.Add(), name_ast(rows)), None), ast.Load())
        names = self.template_names(eqn, ins)
        self.header(eqn, indent)
        template = prim.template_for([a.aval for a in eqn.ins], eqn.out.aval, eqn.kwargs)
        if isinstance(template, list):
            names.update(out=ast.Name(out, ast.Store()),
                         out_shape=self.sizes.tuple(eqn.out.aval.shape),
                         out_dtype=dtype_ast(eqn.out.aval.dtype))
            # The template's own variables (a loop index), named apart from every value.
            own = {n.id for node in template for n in ast.walk(node)
                   if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} - names.keys()
            names.update({n: name_ast(self.namer.fresh(n)) for n in sorted(own)})
            for node in template:
                self.stmt(indent, fill(node, names))
        else:
            self.stmt(indent, ast.Assign([ast.Name(out, ast.Store())], fill(template, names)))
        if self.nan_checks:
            nancheck.whole(self, eqn, out, [(a, _source(self.whole(a))) for a in eqn.ins])

    # ----- loop groups -----
    def group(self, group):
        self.widened = []  # (the float64 sum of a parallel nest, the float32 value it makes)
        self._group(group)
        for wide, name in self.widened:
            self.line(1, f"{name} = np.float32({wide})")

    def _group(self, group):
        domain = group.domain
        index = [None if is_one(d) else f"i{p}" for p, d in enumerate(domain)]
        members = self._live(group)
        if not members:  # every value is recomputed where it is read
            return
        products = [self.producers[v] for v, g in self.in_blocks.items() if g is group]
        if products:
            first = self.namer.fresh(f"{index[0]}_first")
            self.block_first.update((e.out, first) for e in products)
        scalar_names = {}
        looped = any(index)
        before, body = [], []
        sums = []  # the reductions, when they run in a loop nest of their own
        # What each nest recomputes is named and computed in that nest alone: a
        # temporary of one loop nest is undefined (or stale) in another.
        body_again, sums_again = (_Recomputing(index), _Recomputing(index)) if looped else \
            (None, None)
        self.nest_raises = False
        scan = nancheck.Scan(self, domain, index) if self.nan_checks else None
        # Float sums along the innermost loop add chunks of stored terms (lanes.py), so
        # the loop that stores them has no sum: its primitives take their vector forms.
        position = lanes.innermost(index)
        in_lanes = {e for e in members if not self.parallel and position is not None
                    and lanes.summed_along(e, position)}
        reductions = [e for e in members if e.prim.kind == "reduction"]
        split = looped and not set(reductions) <= in_lanes and self._sums_apart(members)
        scalar_loop = not looped or any(e not in in_lanes for e in reductions)
        for e in members:
            # A loop LLVM vectorizes calls a primitive's vector form (vecmath's
            # polynomials), one with a sum its libm form (see _sums_apart).
            self.vectorized = not scalar_loop or split and e.prim.kind != "reduction"
            name = self.namer(e.out)
            nest, self.recomputing = (sums, sums_again) if split and e.prim.kind == "reduction" \
                else (body, body_again)
            if e.prim.kind == "reduction":
                before_stmts, body_stmt = self.reduction(e, name, index,
                                                         {} if split else scalar_names)
                before += before_stmts
                again = self._recomputed_here()
                nest += again
                nest.append((e, body_stmt))
                if scan:
                    scan.copy(again)
                    scan.reduction(e, name, _source(self.term), _source(self.acc))
                continue
            local = self.namer.in_loop(e.out) if domain else name
            value = self.elementwise(e, index, scalar_names)
            if scan:
                self.nan_scan(scan, e, local, _index_exprs(index), scalar_names)
            again = self._recomputed_here()
            assign = (e, ast.Assign([ast.Name(local, ast.Store())], value))
            body += again + [assign]
            if scan:
                scan.copy(again + [assign])
            scalar_names[e.out] = local
            self.computed.add(e.out)
            if domain and e.out in self.placement.arrays:
                if e.out not in self.buffer_vars:
                    before.append(self.allocate(name, domain, e.out.aval.dtype))
                body.append((None, ast.Assign([self._store(name, index)], name_ast(local))))
        if looped:
            self.section(members)
        if scan:
            body += scan.probe()
            before += [_statement(text) for text in scan.inits()]
        for node in before:
            self.stmt(1, node)
        if split:
            self._nest(domain, index, -1, 1, body)
            self.last_origin = None  # the sums' loop is headed by their origins again
            self._nest(domain, index, -1, 1, sums)
            if scan:
                scan.finish()
            return
        # Numba's prange drops an exception raised in its body (the loop would return
        # garbage), so a nest that checks its operands (integer division), its members'
        # or those of values it recomputes, runs serially.
        outer = self.parallel and not self.nest_raises and _independent_outer_loop(group, index)
        if products:
            self._in_blocks(domain, index, body, products)
            return
        if not outer:
            self._nest(domain, index, -1, 1, body)
            if scan:
                scan.finish()
            return
        # A prange wakes Numba's thread pool, which costs more than a small nest takes:
        # below PARALLEL_MIN elements the nest runs serially.
        elements = " * ".join(self.sizes.source(d) for d, i in zip(domain, index) if i)
        self.line(1, f"if {elements} >= {PARALLEL_MIN}:")
        self.shift = 1
        if not chunking.emit(self, domain, index, body):
            p = next(p for p, i in enumerate(index) if i)
            self.line(1, f"for {index[p]} in prange({self.sizes.source(domain[p])}):")
            self.used_prange = True
            self._nest(domain, index, p, 2, body)
        self.shift = 0
        self.line(1, "else:")
        self.last_origin = None  # the serial copy is headed by its origins again
        self.shift = 1
        self._nest(domain, index, -1, 1, body)
        self.shift = 0

    def _sums_apart(self, members):
        """Whether the group's reductions run in a loop of their own, after the rest: when
        the rest calls vecmath and each reduction is to a scalar of a value stored in an
        array anyway. A floating-point sum keeps LLVM from vectorizing its loop (its order
        is fixed), and vecmath's polynomials pay off only vectorized; reading the stored
        values back costs less than calling libm an element. (A reduction that keeps axes
        is left in place: for a softmax the extra loop nest costs more compile time than
        it saves.) Serial code only."""
        if self.parallel:
            return False
        produced = {e.out for e in members}
        reductions = [e for e in members if e.prim.kind == "reduction"]
        if not reductions or any(e.out.aval.shape or e.ins[0] in produced
                                 and e.ins[0] not in self.placement.arrays
                                 for e in reductions):
            return False
        return any(e.prim.kind != "reduction" and e.prim.vector_template is not None
                   for e in members)

    def _in_blocks(self, domain, index, body, products):
        """The nest with its outer loop in blocks of rows, the products (in_blocks) made a
        block at a time before it reads them: blocks of _BLOCK_BYTES or _BLOCK_ROWS rows,
        where the inner dimension is at most half the rows; else one block, the whole."""
        terms = lanes.buffers(self, body, lanes.sums(body, index), 1)
        first = self.block_first[products[0].out]
        rows = self.namer.fresh(f"{index[0]}_rows")
        rows_total, columns = (self.sizes.source(d) for d in domain[:2])
        widest = max(e.out.aval.dtype.itemsize for e in products)
        inner = " + ".join(sorted({self.sizes.source(e.ins[0].aval.shape[1]) for e in products}))
        self.note(1, "The products below are made a block of rows at a time, each read in "
                     "cache (placement.py).")
        self.line(1, f"{rows} = max({_BLOCK_ROWS}, {_BLOCK_BYTES // widest} // max({columns}, 1))")
        self.line(1, f"if 2 * ({inner}) > {rows}:")
        self.line(2, f"{rows} = max({rows_total}, 1)")
        self.line(1, f"for {first} in range(0, {rows_total}, {rows}):")
        for e in products:
            self.eqn(e, 2, first, rows)
        self.line(2, f"for {index[0]} in range({first}, min({first} + {rows}, {rows_total})):")
        self._nest(domain, index, 0, 3, body, terms)

    def _nest(self, domain, index, outer, indent, body, terms=None):
        """The loops inside the one at position `outer` of the domain (-1: all of them),
        then the body, from `indent`. In serial code, float sums along the innermost loop
        add chunks of stored terms (lanes.py; `terms`: their buffers, made already)."""
        loops = [q for q in range(outer + 1, len(domain)) if index[q]]
        if terms is None:
            terms = {} if self.parallel else lanes.buffers(self, body, lanes.sums(body, index),
                                                            indent)
        for q in loops[:-1] if terms else loops:
            self.line(indent, f"for {index[q]} in range({self.sizes.source(domain[q])}):")
            indent += 1
        if terms:
            lanes.emit(self, index[loops[-1]], domain[loops[-1]], indent, body, terms)
            return
        for e, node in body:
            self.body_statement(indent, e, node)

    def body_statement(self, indent, e, node):
        """One statement of a loop body, headed by its origin: `e` is its equation, an
        _Again (a value recomputed here, marked so) or None (a store)."""
        again = isinstance(e, _Again)
        if e is not None:
            self.header(e.eqn if again else e, indent)
        self.stmt(indent, node, "recomputed" if again else "")

    def allocate(self, name, shape, dtype):
        """`name = arrays.empty(shape, dtype)`: srcxform.runtime.arrays compiles the allocation
        once, where np.empty is compiled again in each kernel at each call site."""
        empty = ast.Call(ast.Attribute(name_ast("arrays"), "empty", ast.Load()),
                         [self.sizes.tuple(shape), dtype_ast(dtype)], [])
        return ast.Assign([ast.Name(name, ast.Store())], empty)

    # ----- what a loop or branch's code (codegen/control.py) is made of: a target's own -----
    in_place_carries = True  # whether a loop may update an array carry in its two buffers
    owned = frozenset()  # a loop body's carries it adds into (control.py's _body)

    def region_lowering(self, program):
        """The lowering of a region (a loop body or branch) into this function."""
        return type(self)(program, False, self.namer, self.sizes, self.notes, self.nan_checks)

    def on_host(self, value):  # a bound, test or predicate where the loop's code reads it
        return value

    def loop_index(self, index, body):  # the index as the region `body` takes it
        return index

    def stack(self, name, dims, dtype):  # the line allocating a loop's stack
        return self._arrays(f"{name} = arrays.empty(({', '.join(dims)},), {dtype})")

    def row(self, stack, row):
        return f"{stack}[{row}]"

    def put(self, stack, row, value, lane=False):  # `lane`: in a prange
        return self._arrays(f"arrays.{'put_lane' if lane else 'put'}({stack}, {row}, {value})")

    def grown(self, stack):
        return self._arrays(f"arrays.grown({stack})")

    def counted(self, indent, name):
        """A loop's trip count `name` once the loop ran, which the program reads on."""

    def _arrays(self, text):
        self.modules.add("arrays")
        return text

    def _live(self, group):
        """The group's equations that something needs: a reduction, a stored array, or a
        scalar that a live member reads (a value other loops recompute is not needed)."""
        live = set()
        for e in reversed(group.eqns):
            if (e.prim.kind == "reduction" or e.out in self.placement.arrays
                    or not group.domain or e.out in live):
                live.update(a for a in e.ins if isinstance(a, Var))
                live.add(e.out)
        return [e for e in group.eqns if e.out in live]

    def _store(self, name, index, ctx=ast.Store):
        idx = [ast.Constant(0) if i is None else name_ast(i) for i in index]
        target = ast.Tuple(idx, ast.Load()) if len(idx) > 1 else idx[0]
        return ast.Subscript(ast.Name(name, ast.Load()), target, ctx())

    def load(self, atom, index, scalar_names, dtype):
        """An input inside a loop nest over `index` (loop variable names, None for a dim
        of 1): a scalar temporary, a literal, or a load of the array at its own axes."""
        if isinstance(atom, Var) and atom in scalar_names:
            return name_ast(scalar_names[atom])
        shape = atom.aval.shape
        axes = index[len(index) - len(shape):]
        return self.load_at(atom, [ast.Constant(0) if i is None else name_ast(i) for i in axes],
                            dtype)

    def load_at(self, atom, exprs, dtype):
        """atom's element at the index expressions `exprs` (one per axis)."""
        if isinstance(atom, Lit):
            return self.lit(atom, dtype)
        # A dim of 1 meets a larger loop dim by broadcasting: it reads index 0.
        exprs = [ast.Constant(0) if is_one(d) else e for d, e in zip(atom.aval.shape, exprs)]
        if atom in self.virtual:
            producer = self.producers[atom]
            if producer.prim.algebra.joins:
                return self.joined(producer, exprs, dtype)
            return self.embedded(producer, exprs, dtype)
        if atom in self.placement.recomputed:
            return self.recompute(atom, exprs)
        if atom in self.block_first:  # a block of its rows (in_blocks)
            exprs = [ast.BinOp(exprs[0], ast.Sub(), name_ast(self.block_first[atom])), *exprs[1:]]
        if not atom.aval.shape:
            return name_ast(self.namer(atom))
        target = ast.Tuple(exprs, ast.Load()) if len(exprs) > 1 else exprs[0]
        return ast.Subscript(name_ast(self.namer(atom)), target, ast.Load())

    def embedded(self, eqn, exprs, dtype):
        """An element of zeros-with-g-at-index: g's element where the index covers it,
        else 0."""
        tests, inner, axis = [], [], 0
        for item in eqn.kwargs["index"]:
            if item is None:
                inner.append(ast.Constant(0))
                continue
            i = exprs[axis]
            axis += 1
            if isinstance(item, int):
                tests.append(ast.Compare(i, [ast.Eq()], [self.sizes.ast(item)]))
                continue
            start, stop = item.start, item.stop  # normalized: None is 0 and n
            if start is not None:
                tests.append(ast.Compare(i, [ast.GtE()], [self.sizes.ast(start)]))
                i = ast.BinOp(i, ast.Sub(), self.sizes.ast(start))
            if stop is not None:
                tests.append(ast.Compare(exprs[axis - 1], [ast.Lt()], [self.sizes.ast(stop)]))
            inner.append(i)
        inner += exprs[axis:]
        self.conditional += 1  # g is read only where the test holds: nothing is hoisted
        value = self.load_at(eqn.ins[0], inner, dtype)
        self.conditional -= 1
        if not tests:
            return value
        test = tests[0] if len(tests) == 1 else ast.BoolOp(ast.And(), tests)
        element = ast.IfExp(test, value, literal(0, eqn.out.aval.dtype))
        element.slice_bounds = True  # its tests are bounds a parallel loop may chunk by
        return element

    def joined(self, eqn, exprs, dtype):
        """An element of a concat: the piece that holds it, loaded at the index less the
        piece's start along the axis (`a[i] if i < na else b[i - na]`)."""
        axis = eqn.kwargs["axis"]
        i = exprs[axis]
        pieces = [(piece, *span) for piece, span in
                  zip(eqn.ins, spans(piece.aval.shape[axis] for piece in eqn.ins))]
        if isinstance(i, ast.Constant) and all(isinstance(e, int) for _, _, e in pieces):
            # a static index (a dim of 1): the one piece that holds it
            pieces = [next(piece for piece in pieces if i.value < piece[2])]
        self.conditional += 1  # each piece is read only where its test holds
        value = None
        for piece, begin, end in reversed(pieces):
            at = list(exprs)
            if not (isinstance(begin, int) and begin == 0):
                at[axis] = ast.BinOp(i, ast.Sub(), self.sizes.ast(begin))
            load = self.load_at(piece, at, dtype)
            value = load if value is None else ast.IfExp(
                ast.Compare(i, [ast.Lt()], [self.sizes.ast(end)]), load, value)
        self.conditional -= 1
        return value

    def recompute(self, atom, exprs):
        """A value another loop computed, recomputed here: as a named temporary when it is
        read at this loop's own index outside any condition, else inline."""
        r = self.recomputing
        at_loop_index = r is not None and not self.conditional and [
            ast.dump(e) for e in exprs] == r.axes(len(exprs))
        if at_loop_index and atom in r.names:
            return name_ast(r.names[atom])
        value = self.expression(self.producers[atom], exprs, {})
        if not at_loop_index:
            return value
        r.names[atom] = local = self.namer.in_loop(atom)
        producer = self.producers[atom]
        label = _Again(producer) if atom in self.computed else producer
        self.computed.add(atom)
        r.statements.append((label, ast.Assign([ast.Name(local, ast.Store())], value)))
        return name_ast(local)

    def _recomputed_here(self):
        """The temporaries recomputed for the statement about to be emitted."""
        if self.recomputing is None:
            return []
        statements, self.recomputing.statements = self.recomputing.statements, []
        return statements

    def elementwise(self, e, index, scalar_names):
        exprs = [ast.Constant(0) if i is None else name_ast(i) for i in index]
        return self.expression(e, exprs, scalar_names)

    def expression(self, e, exprs, scalar_names):
        """An elementwise equation's value at the index `exprs` of its output's axes: its
        template, each input loaded (or recomputed) at its own axes."""
        prim = e.prim
        operands = [a.aval for n, a in zip(prim.arg_names, e.ins) if n != "c"]
        compute = promote(operands)[0] if operands else e.out.aval.dtype
        names = {k: param_ast(v, self.sizes) for k, v in e.params}
        for n, a in zip(prim.arg_names, e.ins):
            dtype = compute if n != "c" else None
            if isinstance(a, Var) and a in scalar_names:
                names[n] = name_ast(scalar_names[a])
            else:
                names[n] = self.load_at(a, exprs[len(exprs) - len(a.aval.shape):], dtype)
            if dtype is not None and a.aval.dtype != dtype and (
                    isinstance(a, Var) and a.aval.weak or a.aval.dtype == np.uint64):
                # A weak value (a Python number traced: fori_loop's index, a float argument)
                # takes the other operand's dtype, as eagerly, and so does a uint64 (NumPy's
                # float64 beside a signed int): Numba would promote (the uint64 to int64).
                names[n] = cast_to(names[n], dtype)
        in_avals = [a.aval for a in e.ins]
        self.nest_raises |= prim.may_raise(in_avals, e.out.aval, e.kwargs)
        vector = self.vectorized and prim.vector_template is not None
        template = prim.vector_template if vector else \
            prim.template_for(in_avals, e.out.aval, e.kwargs)
        value = fill(template, names, literal_dtype=compute)
        out = e.out.aval.dtype
        if out.kind in "iu" and out.itemsize < 8 or vector and out.itemsize < 8:
            # Numba computes int32 + int32 in int64: wrapped back, the value keeps its dtype
            # (a reduce_max's step takes one dtype) and wraps around as TensorFlow's does.
            # vecmath computes in float64: rounded back, float32's exp(100) is inf, as eager.
            value = cast_to(value, out)
        return value

    def nan_scan(self, scan, e, local, exprs, scalar_names):
        """debug_nans: tells `scan` of the elementwise e, its element `local` at the index
        `exprs`, each input as (its arg name, its atom, the source of its element); first
        of each value recomputed inline for it that no nest checked."""
        ins = []
        for n, a in zip(e.prim.arg_names, e.ins):
            at = exprs[len(exprs) - len(a.aval.shape):]
            named = isinstance(a, Var) and a in scalar_names
            x = _source(name_ast(scalar_names[a]) if named else self.load_at(a, at, None))
            producer = self.producers.get(a)
            if not named and a in self.placement.recomputed and a not in self.nan_checked \
                    and producer.prim.kind == "elementwise":
                self.nan_checked.add(a)
                self.nan_scan(scan, producer, f"({x})", at, {})
            ins.append((n, a, x))
        self.nan_checked.add(e.out)
        scan.element(e, local, ins)

    def reduction(self, e, name, index, scalar_names):
        x = e.ins[0]
        dtype = e.out.aval.dtype
        axis, keepdims = e.kwargs["axis"], e.kwargs["keepdims"]
        init = reduction_init(e.prim.init, dtype)
        if not e.out.aval.shape:
            if self.parallel and dtype == np.float32 and e.prim.algebra.sums:
                # A prange adds each thread's share in one running float32 sum (1e-3 off
                # over 2e5 terms, where serial code adds chunks in lanes): float64's.
                self.widened.append((self.namer.fresh(f"{name}_wide"), name))
                name, init = self.widened[-1][0], reduction_init(e.prim.init, np.float64)
            acc = name_ast(name)
            before = [ast.Assign([ast.Name(name, ast.Store())], init)]
        else:
            kept = [None if a in axis else i for a, i in enumerate(index)]
            if not keepdims:
                kept = [i for a, i in enumerate(index) if a not in axis]
            acc = self._store(name, kept, ast.Load)
            # Allocated and filled, not np.full: Numba types np.full far more slowly.
            before = [] if e.out in self.buffer_vars else [
                self.allocate(name, e.out.aval.shape, dtype)]
            before.append(ast.Assign([ast.Subscript(name_ast(name), ast.Slice(), ast.Store())],
                                     init))
        self.term, self.acc = self.load(x, index, scalar_names, dtype), acc  # (nancheck)
        value = fill(e.prim.template, {"acc": acc, "x": self.term}, literal_dtype=dtype)
        target = ast.Name(name, ast.Store()) if not e.out.aval.shape else \
            ast.Subscript(acc.value, acc.slice, ast.Store())
        if not e.out.aval.shape and dtype.kind in "iu" and dtype.itemsize < 8:
            # Numba adds int8s as int64s: cast back, to wrap as NumPy's (an array's store does)
            return before, ast.Assign([target], ast.Call(
                ast.Attribute(name_ast("np"), dtype.name, ast.Load()), [value], []))
        if isinstance(value, ast.BinOp) and ast.dump(value.left) == ast.dump(acc):
            return before, ast.AugAssign(target, value.op, value.right)
        return before, ast.Assign([target], value)

    # ----- the function -----
    def statements(self):
        for item in self.items:
            if isinstance(item, LoopGroup):
                self.group(item)
            else:
                self.eqn(item)
        if self.nan_checks:
            nancheck.raise_in_order(self)

    def function(self, func_name, doc):
        self.statements()
        copied = self.program.copied_outputs(self.buffers)
        outs = [_copied(self.whole(a)) if p in copied else self.whole(a)
                for p, a in enumerate(self.program.outs) if p not in self.buffers]
        # One output is returned as itself: Numba boxes no tuple (callpath.returns_one).
        ret = outs[0] if len(outs) == 1 else ast.Tuple(outs, ast.Load())
        params = list(self.program.ins) + [self.program.outs[p] for p in self.buffers]
        args = ", ".join(self.namer(v) for v in params)
        if self.buffers:
            filled = ", ".join(self.namer(self.program.outs[p]) for p in self.buffers)
            doc += f"; fills {filled}"
        sizes = []
        for k in sorted(self.sizes.used):
            index, axis = self.program.sizes[k]
            array = self.namer(self.program.ins[index])
            sizes.append((1, f"{self.sizes.name(k)} = {array}.shape[{axis}]"))
        text = [f"def {func_name}({args}):", f'    """{doc}"""']
        if sizes:
            text += ["    " * i + t for i, t in sizes]
        text += ["    " * i + t for i, t in self.lines]
        text.append("    return " + _source(ret).strip())
        return "\n".join(text) + "\n"


class _Again(NamedTuple):
    """Heads the statement of a value an earlier loop nest computed too, which placement
    recomputes rather than stores: marked `# recomputed` where it appears again."""

    eqn: object


class _Recomputing:
    """The values recomputed in one loop nest, named once at the loop's own index."""

    def __init__(self, index):
        self.index = [ast.dump(ast.Constant(0) if i is None else name_ast(i)) for i in index]
        self.names, self.statements = {}, []

    def axes(self, rank):
        return self.index[len(self.index) - rank:] if rank else []


def _independent_outer_loop(group, index):
    """Whether the outermost loop's iterations are independent, so it may be a prange:
    every reduction either keeps that axis or sums into a scalar (a reduction Numba's
    prange understands)."""
    outer = next((p for p, i in enumerate(index) if i), None)
    if outer is None:
        return False
    for e in group.eqns:
        if e.prim.kind != "reduction":
            continue
        axis = e.kwargs["axis"]
        scalar_sum = not e.out.aval.shape and isinstance(e.prim.template, ast.BinOp)
        if outer in axis and not scalar_sum:
            return False
    return True


def _index_exprs(index):
    return [ast.Constant(0) if i is None else name_ast(i) for i in index]


def _statement(text):
    return syntax.parse(text).body[0]


def _copied(node):
    return ast.Call(ast.Attribute(node, "copy", ast.Load()), [], [])


def generate(program, func_name, doc, parallel=False, imports=(), nan_checks=False):
    """The source of `def func_name(...)` computing program (a module's text, with the
    import lines `imports` besides its own), the positions in program.outs of the
    outputs it fills rather than returns (arrays the caller passes after the inputs, in
    that order; the function returns the other outputs as a tuple), and whether it made
    a prange. With `parallel`, the outer loop of each independent loop nest is a prange
    (over chunks of it, where its body tests the outer index against slice bounds). With `nan_checks`, each float value
    is checked as it is made (debug_nans)."""
    lowering = _Lowering(program, parallel, nan_checks=nan_checks)
    body = lowering.function(func_name, doc)
    verify.check(body)
    imports = "import numpy as np\n" + "".join(f"{line}\n" for line in imports)
    if lowering.used_prange:
        imports += "from numba import prange\n"
    if lowering.modules:
        imports += "\n" + "".join(f"from srcxform.runtime import {m}\n" for m in sorted(lowering.modules))
    header = f'"""Generated by srcxform {__version__}; edits are overwritten."""\n\n'
    return f"{header}{imports}\n\n{body}", lowering.buffers, lowering.used_prange
