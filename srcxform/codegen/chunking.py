"""Parallel loops over chunks of their range, for loop bodies that test the outer index
against slice bounds (an adjoint of slicing reads `g[i0 - 1] if i0 >= 1 else 0`).

Inside a prange, Numba vectorizes a loop only when its indices count from 0 and its body
has no such tests. So lowering runs the interior of the range, where every test holds,
as a prange over chunks, each indexing views that start at the chunk, with the tests
dropped; the few indices outside it run serially with the original body. Interior is
the rewrite of the body, `emit` writes the two nests through the lowering (lower.py).
"""

import ast

import astor

from srcxform.codegen.exprs import copy_ast, name_ast

CHUNKS = 64  # a chunked prange's chunks: enough to balance the threads, few to set up


class Interior(ast.NodeTransformer):
    """A loop body on the range of the loop variable `var` where its bounds tests hold:
    `var - S >= s` (a slice's start) and `var - S < s` (its stop) dropped and collected as
    bounds on var (`lower`, `upper`); each array indexed at `var - S` indexed at `var` in a
    view starting at S (`views`: name → (array, axis, rank, S), named by `name_view`)."""

    def __init__(self, var, name_view):
        self.var, self.name_view = var, name_view
        self.lower, self.upper = [], []
        self.views, self._keys = {}, {}
        self.placed = set()  # ids of the var Names this made, as view indices
        self.failed = False

    def offsets(self, node):
        """S when node is `var - S[0] - S[1] …` (S free of var), else None."""
        if isinstance(node, ast.Name) and node.id == self.var:
            return []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and \
                not self.uses(node.right):
            inner = self.offsets(node.left)
            return None if inner is None else inner + [node.right]
        return None

    def uses(self, node):
        return any(isinstance(n, ast.Name) and n.id == self.var for n in ast.walk(node))

    def visit_IfExp(self, node):
        # Only lower.embedded's tests are a slice's bounds (it marks them): a concat's
        # choice of piece, or a `where` of the same form, is not.
        if not getattr(node, "slice_bounds", False):
            return self.generic_visit(node)
        tests = node.test.values if isinstance(node.test, ast.BoolOp) and \
            isinstance(node.test.op, ast.And) else [node.test]
        kept = [t for t in tests if not self.bound(t)]
        body, orelse = self.visit(node.body), self.visit(node.orelse)
        if not kept:
            return body
        test = kept[0] if len(kept) == 1 else ast.BoolOp(ast.And(), kept)
        return ast.IfExp(self.visit(test), body, orelse)

    def bound(self, test):
        """Whether test is a bounds test on var; collects its bound."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and
                isinstance(test.ops[0], (ast.GtE, ast.Lt))):
            return False
        offsets = self.offsets(test.left)
        if offsets is None or self.uses(test.comparators[0]):
            return False
        bound = test.comparators[0]
        for s in offsets:
            bound = _plus(bound, s)
        into = self.lower if isinstance(test.ops[0], ast.GtE) else self.upper
        if all(ast.dump(bound) != ast.dump(b) for b in into):
            into.append(bound)
        return True

    def visit_Subscript(self, node):
        if not (isinstance(node.value, ast.Name) and self.uses(node.slice)):
            return self.generic_visit(node)
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        at = [k for k, item in enumerate(items) if self.uses(item)]
        offsets = self.offsets(items[at[0]])
        if len(at) != 1 or offsets is None:
            self.failed = True
            return node
        key = (node.value.id, at[0], len(items), tuple(ast.dump(s) for s in offsets))
        if key not in self._keys:
            self._keys[key] = view = self.name_view(node.value.id)
            self.views[view] = (node.value.id, at[0], len(items), offsets)
        index = ast.Name(self.var, ast.Load())
        self.placed.add(id(index))
        items = items[:at[0]] + [index] + items[at[0] + 1:]
        target = ast.Tuple(items, ast.Load()) if len(items) > 1 else index
        return ast.Subscript(ast.Name(self._keys[key], ast.Load()), target, node.ctx)

    def complete(self, body):
        """Whether every use of var in the rewritten body is a view's index."""
        return not self.failed and all(
            id(n) in self.placed for _, node in body for n in ast.walk(node)
            if isinstance(n, ast.Name) and n.id == self.var)


def _plus(a, b):
    if isinstance(a, ast.Constant) and isinstance(b, ast.Constant):
        return ast.Constant(a.value + b.value)
    return ast.BinOp(a, ast.Add(), b)


def minus(a, offsets):
    for s in offsets:
        a = ast.BinOp(a, ast.Sub(), s)
    return a


def call(func, args):
    """func(*args), or the one arg."""
    return args[0] if len(args) == 1 else ast.Call(name_ast(func), list(args), [])


def emit(lowering, domain, index, body):
    """A parallel loop nest whose body tests its outer index against slice bounds (an
    adjoint of slicing reads `g[i0 - 1] if i0 >= 1 else 0`), as two: the range of the
    outer index where every such test holds, without the tests, in a prange over
    chunks; and the rest, with them, serially. Each chunk indexes views that start at
    the chunk, so that its indices count from 0: in a prange, Numba vectorizes a loop
    only then (see above). Returns whether it emitted the nest: not when the body
    uses the outer index other than in bounds tests and indices."""
    p = next(p for p, i in enumerate(index) if i)
    var = index[p]
    interior = Interior(var, lambda arr: lowering.namer.fresh(arr + "_c"))
    inner = [(e, interior.visit(copy_ast(node))) for e, node in body]
    if not interior.complete(inner) or not (interior.lower or interior.upper):
        return False
    lo, hi, chunks, c, start, stop, edge = (lowering.namer.fresh(n) for n in (
        "lo", "hi", "chunks", f"c{p}", "start", "stop", "edge"))
    n = lowering.sizes.ast(domain[p])
    lowering.line(1, f"# The last loop's bounds tests on {var} all hold for {lo} <= {var} < {hi}: "
                     "that range runs")
    lowering.line(1, "# without them, in chunks on views that start at the chunk (so Numba "
                     "vectorizes).")
    low = call("min", [call("max", interior.lower), n]) if interior.lower else \
        ast.Constant(0)
    lowering.stmt(1, ast.Assign([ast.Name(lo, ast.Store())], low))
    high = call("max", [call("min", interior.upper), name_ast(lo)]) if interior.upper \
        else n
    lowering.stmt(1, ast.Assign([ast.Name(hi, ast.Store())], high))
    lowering.line(1, f"{chunks} = min({hi} - {lo}, {CHUNKS})")
    lowering.line(1, f"for {c} in prange({chunks}):")
    lowering.used_prange = True
    lowering.line(2, f"{start} = {lo} + ({hi} - {lo}) * {c} // {chunks}")
    lowering.line(2, f"{stop} = {lo} + ({hi} - {lo}) * ({c} + 1) // {chunks}")
    for view, (arr, axis, rank, offsets) in interior.views.items():
        bounds = [ast.Slice()] * rank
        bounds[axis] = ast.Slice(minus(name_ast(start), offsets),
                                 minus(name_ast(stop), offsets))
        at = bounds[0] if rank == 1 else ast.Tuple(bounds, ast.Load())
        lowering.stmt(2, ast.Assign([ast.Name(view, ast.Store())],
                                    ast.Subscript(name_ast(arr), at, ast.Load())))
    lowering.line(2, f"for {var} in range({stop} - {start}):")
    lowering.last_origin = None  # each copy of the body is headed by its origins
    lowering._nest(domain, index, p, 3, inner)
    if interior.lower and interior.upper:
        lowering.line(1, f"for {edge} in (range({lo}), range({hi}, {_source(n)})):")
        lowering.line(2, f"for {var} in {edge}:")
        indent = 3
    else:
        edges = f"{lo}" if interior.lower else f"{hi}, {_source(n)}"
        lowering.line(1, f"for {var} in range({edges}):")
        indent = 2
    lowering.last_origin = None
    lowering._nest(domain, index, p, indent, body)
    return True


def _source(node):
    return astor.to_source(node).rstrip("\n")
