"""Lowering of structured control flow (structured.py) to Python's own statements: a
`while`, a `for` or an `if` whose body is the region's statements, lowered as a function
body is (its loop nests fused, its names from the enclosing function's Namer).

Loop-carried values are plain variables the body reassigns, so one kernel runs any trip
count. A loop a tape differentiates keeps, per carried value that its adjoint reads, a
stack of the value at the start of each iteration: preallocated for a fori_loop (its
trip count is known when it starts), a buffer that doubles when full for a while_loop.
The adjoint, a fori_loop running backwards, reads them back.
"""

import astor

from srcxform.codegen.exprs import dtype_ast
from srcxform.structured import COND, FORI, WHILE, results_of

_FIRST_ROWS = 16  # a while_loop's stacks start with this many rows, then double


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


def _names(low, eqn, indices, base):
    """A name for each result index: the IR's where the program reads the result, else a
    fresh one (a carried value nothing reads after the loop)."""
    results = results_of(low.program, eqn.out)
    return [low.namer(results[k]) if k in results else low.namer.fresh(base) for k in indices]


def region(low, program, args, indent):
    """Emits a region's statements at `indent`, its inputs bound to `args` (source text);
    returns its outputs as source text."""
    for var, arg in zip(program.ins, args):
        low.line(indent, f"{low.namer(var)} = {arg}")
    sub = type(low)(program, False, low.namer, low.sizes)
    sub.statements()
    low.modules |= sub.modules
    low.used_prange |= sub.used_prange
    for inner, text in sub.lines:
        low.line(indent + inner - 1, text)
    return [_src(sub.whole(a)) for a in program.outs]


def _assign(low, indent, names, values):
    if names:
        low.line(indent, f"{', '.join(names)} = {', '.join(values)}")


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
        low.line(1, f"{name} = arrays.empty(({', '.join(dims)},), "
                    f"{_src(dtype_ast(var.aval.dtype))})")
        low.modules.add("arrays")
        found.append((k, name))
    return found


def _while(low, eqn):
    n = eqn.kwargs["carries"]
    carry = _names(low, eqn, range(n), "carry")
    captures = [_atom(low, a) for a in eqn.ins[n:]]
    _assign(low, 1, carry, [_atom(low, a) for a in eqn.ins[:n]])
    stacks = [(k - n - 1, s) for k, s in
              _allocated(low, eqn, range(n + 1, 2 * n + 1), str(_FIRST_ROWS))]
    counted = stacks or n in results_of(low.program, eqn.out)
    trips = _names(low, eqn, [n], "trips")[0] if counted else None
    if counted:
        low.line(1, f"{trips} = 0")
    low.line(1, "while True:")
    (pred,) = region(low, eqn.kwargs["cond"], carry + captures, 2)
    low.line(2, f"if not {pred}:")
    low.line(3, "break")
    for k, stack in stacks:
        low.line(2, f"if {trips} == {stack}.shape[0]:")
        low.line(3, f"{stack} = arrays.grown({stack})")
        low.line(2, f"{stack}[{trips}] = {carry[k]}")
    _assign(low, 2, carry, region(low, eqn.kwargs["body"], carry + captures, 2))
    if counted:
        low.line(2, f"{trips} += 1")


def _fori(low, eqn):
    n, m, r = eqn.kwargs["carries"], eqn.kwargs["xs"], len(eqn.kwargs["y_avals"])
    lower, upper = (_atom(low, a) for a in eqn.ins[:2])
    carry = _names(low, eqn, range(n), "carry")
    xs = [_atom(low, a) for a in eqn.ins[2 + n:2 + n + m]]
    captures = [_atom(low, a) for a in eqn.ins[2 + n + m:]]
    _assign(low, 1, carry, [_atom(low, a) for a in eqn.ins[2:2 + n]])
    trips = _names(low, eqn, [n + r], "trips")[0]
    if r or eqn.kwargs["stacked"]:
        low.line(1, f"{trips} = max({upper} - {lower}, 0)")
    ys = _allocated(low, eqn, range(n, n + r), trips)
    stacks = [(k - n - r - 1, s) for k, s in
              _allocated(low, eqn, range(n + r + 1, 2 * n + r + 1), trips)]
    index = low.namer.fresh("it")
    from_zero = lower == "np.int64(0)"
    if eqn.kwargs["reverse"]:
        stop = "-1" if from_zero else f"{lower} - 1"
        low.line(1, f"for {index} in range({upper} - 1, {stop}, -1):")
    else:
        low.line(1, f"for {index} in range({lower}, {upper}):")
    row = index if from_zero else f"{index} - {lower}"
    for k, stack in stacks:
        low.line(2, f"{stack}[{row}] = {carry[k]}")
    outs = region(low, eqn.kwargs["body"],
                  [index] + carry + [f"{x}[{row}]" for x in xs] + captures, 2)
    _assign(low, 2, carry, outs[:n])
    for k, y in ys:
        low.line(2, f"{y}[{row}] = {outs[k]}")


def _cond(low, eqn):
    branches = eqn.kwargs["true"], eqn.kwargs["false"]
    names = _names(low, eqn, range(len(branches[0].outs)), "result")
    operands = [_atom(low, a) for a in eqn.ins[1:]]
    for head, branch in zip((f"if {_atom(low, eqn.ins[0])}:", "else:"), branches):
        low.line(1, head)
        before = len(low.lines)
        _assign(low, 2, names, region(low, branch, operands, 2))
        if len(low.lines) == before:
            low.line(2, "pass")
