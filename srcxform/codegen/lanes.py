"""Floating-point sums along the innermost loop, in chunks and lanes.

A loop that adds into one float accumulator is a chain of dependent additions, and LLVM
may not reorder it without fastmath: the loop neither vectorizes nor overlaps its adds.
So a serial loop nest whose float sums run along its innermost loop runs that loop in
chunks of CHUNK: the loop stores each sum's terms in a small buffer (a loop with no sum,
which LLVM vectorizes), then `arrays.lane_sum` adds the chunk's terms in eight independent
accumulators (8 chains the processor overlaps; Numba runs no SLP vectorizer, so they stay
scalar adds) and the chunk's total into the sum. The order is fixed, so a result is the
same at every call:

    chunk by chunk from the loop's start, accumulator += that chunk's lane_sum, where
    lane_sum adds element j of the chunk to lane j % 8 (the last k % 8 of a chunk of k
    to lane 0), then the lanes pairwise: ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + ...).

Each lane adds at most CHUNK / 8 terms and the chunks' totals are added one by one,
so the error bound is (n / CHUNK + CHUNK / 8 + 3) rounding errors against one
accumulator's n (NumPy's pairwise sum orders its terms otherwise, as accurately).
"""

import ast

from srcxform.runtime import CHUNK
from srcxform.codegen.exprs import copy_ast, dtype_ast, name_ast
from srcxform.core.ir import Eqn



# Fewer terms than lanes, a count the trace fixed, go to lane 0 alone: the chunk buys
# nothing, so each term is added in place (GradBench ht's 4-term sums: 22% of its time).
_LANES = 8


def summed_along(e, position):
    """Whether `e` is a float sum along loop position `position` (one of its axes) of
    more terms, or of a count unknown while tracing, than the lanes."""
    template = e.prim.template
    return (e.prim.kind == "reduction" and isinstance(template, ast.BinOp)
            and isinstance(template.op, ast.Add) and e.out.aval.dtype.kind == "f"
            and position in e.kwargs["axis"]
            and not (type(terms := e.ins[0].aval.shape[position]) is int and terms < _LANES))


def innermost(index):
    """The position of the innermost loop of a nest (None for a dim of 1), or None."""
    return max((p for p, i in enumerate(index) if i), default=None)


def sums(body, index):
    """The indices in `body` ((eqn, statement) pairs) of the sums along the innermost
    loop of `index` that the lowering wrote as `acc += term`."""
    position = innermost(index)
    return [k for k, (e, node) in enumerate(body)
            if isinstance(e, Eqn) and position is not None and summed_along(e, position)
            and isinstance(node, ast.AugAssign)]


def buffers(low, body, summed, indent):
    """Each sum's chunk of terms, on the kernel's stack (before the nest's loops): their
    names, by index in body."""
    names = {}
    if summed:
        low.note(indent, "The sums below add a chunk of terms at a time, in lanes "
                 "(codegen/lanes.py).")
    for k in summed:
        target = body[k][1].target
        base = target.id if isinstance(target, ast.Name) else target.value.id
        names[k] = low.namer.fresh(f"{base}_terms")
        empty = ast.Call(ast.Attribute(name_ast("arrays"), "chunk_terms", ast.Load()),
                         [dtype_ast(body[k][0].out.aval.dtype)], [])
        low.stmt(indent, ast.Assign([ast.Name(names[k], ast.Store())], empty))
    return names


def emit(low, var, extent, indent, body, terms):
    """Emits, through the lowering `low`, the loop `for var in range(extent): body` in
    chunks, each sum's terms stored in its buffer (`terms`, from buffers) and added after
    the chunk."""
    chunk, start, count, offset = (low.namer.fresh(f"{var}_{part}")
                                   for part in ("chunk", "start", "count", "offset"))
    n = low.sizes.source(extent)
    # Counting chunks from 0 (not `range(0, n, CHUNK)`) and offsets within one lets LLVM
    # prove the index non-negative: Numba's wraparound of a negative index then folds
    # away and the loop vectorizes with plain loads and stores, not gathers (4x faster).
    low.line(indent, f"for {chunk} in range(({n} + {CHUNK - 1}) // {CHUNK}):")
    low.line(indent + 1, f"{start} = {chunk} * {CHUNK}")
    low.line(indent + 1, f"{count} = min({n} - {start}, {CHUNK})")
    low.line(indent + 1, f"for {offset} in range({count}):")
    low.line(indent + 2, f"{var} = {start} + {offset}")
    for k, (e, node) in enumerate(body):
        if k in terms:
            node = ast.Assign([ast.Subscript(name_ast(terms[k]), name_ast(offset), ast.Store())],
                              node.value)
        low.body_statement(indent + 2, e, node)
    for k, name in terms.items():
        total = ast.Call(ast.Attribute(name_ast("arrays"), "lane_sum", ast.Load()),
                         [name_ast(name), name_ast(count)], [])
        low.stmt(indent + 1, ast.AugAssign(copy_ast(body[k][1].target), ast.Add(), total))
