"""Runs a traced program on NumPy: the results of tier 0 (tiered.py), computed from the
trace rather than by running the user's Python again, so that its side effects happen
once, when it is traced.

Each equation runs its primitive's eager rule (Primitive.eager: the impl, as the eager
tape runs it); structured control flow runs its regions as codegen/control.py's lowering
does: the same trips, stacks and rows, in the same order. Sizes are read from the call's
arguments, so a program runs at any sizes its guards admit, as its kernel does. It knows
no primitive by name and records on no tape.
"""

import dataclasses

import numpy as np

from srcxform.core.dims import evaluate
from srcxform.core.ir import Var
from srcxform.passes.structured import COND, FORI, OUTPUT, WHILE
from srcxform.core.tensor import Tensor


def run(program, args):
    """The program's outputs (NumPy arrays) for its inputs `args` (a kernel's arguments:
    the traced leaves, the Variables' values, the captured arrays)."""
    values = [np.asarray(a) for a in args]
    sizes = [np.shape(values[i])[axis] for i, axis in program.sizes]
    outs = _region(program, [_tensor(v, a.aval) for v, a in zip(values, program.ins)], sizes)
    copied = program.copied_outputs()  # as the kernel's
    return [t._array.copy() if p in copied else t._array for p, t in enumerate(outs)]


def _tensor(array, aval):
    return Tensor._new(np.asarray(array, aval.dtype), aval.weak)


def _region(program, args, sizes):
    """Runs a program (or a region of one) on Tensors; returns its outputs as Tensors."""
    env = {var: _tensor(array, var.aval) for var, array in program.consts}
    env.update(zip(program.ins, args))

    def read(atom):
        if isinstance(atom, Var):
            return env[atom]
        value = atom.value
        if hasattr(value, "expr"):  # a size, computed from this call's
            value = evaluate(value.expr, sizes)
        return _tensor(value, atom.aval)

    for eqn in program.eqns:
        ins = [read(a) for a in eqn.ins]
        if eqn.prim is OUTPUT:
            env[eqn.out] = ins[0][eqn.kwargs["index"]]
        elif eqn.prim in _STRUCTURED:
            env[eqn.out] = _STRUCTURED[eqn.prim](ins, eqn.kwargs, sizes)
        else:
            env[eqn.out] = eqn.prim.eager(ins, _sized(eqn.kwargs, sizes), eqn.out.aval)
    return [read(a) for a in program.outs]


def _sized(value, sizes):
    """A parameter (or aval) with each size the trace saw as a Dim computed for this
    call's sizes."""
    if hasattr(value, "expr"):
        return evaluate(value.expr, sizes)
    if isinstance(value, dict):
        return {k: _sized(v, sizes) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(_sized(v, sizes) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # a Slice, an Aval
        return dataclasses.replace(value, **{f.name: _sized(getattr(value, f.name), sizes)
                                             for f in dataclasses.fields(value) if f.init})
    return value


def _index(i):
    return Tensor._new(np.asarray(i, np.int64), False)


def _row(stack, i):
    return Tensor._new(stack._array[i], False)


def _stacked(rows, shape, dtype, count):
    """A stack (a loop's stored carries, or a stacked output) of `count` rows of `shape`:
    `rows` maps a row number to its value."""
    array = np.empty((count, *shape), dtype)
    for k, row in rows.items():
        array[k] = row._array
    return Tensor._new(array, False)


def _outputs(ys, y_avals, trips, sizes):
    """A loop's stacked outputs."""
    return [_stacked(y, tuple(_sized(d, sizes) for d in a.shape[1:]), a.dtype, trips)
            for y, a in zip(ys, y_avals)]


def _carry_stacks(stacks, carry, trips, k):
    """A loop's trip count and the stacks of its carries (of every k-th, with k)."""
    rows = (trips + k - 1) // k if k else trips
    return [_index(trips)] + [_stacked(s, c._array.shape, c._array.dtype, rows)
                              for s, c in zip(stacks, carry)]


def _while(ins, params, sizes):
    n, k = params["carries"], params["checkpoint"]
    carry, captures = list(ins[:n]), ins[n:]
    stacks, trips = [{} for _ in range(n)], 0
    while bool(_region(params["cond"], carry + captures, sizes)[0]._array):
        if params["stacked"] and (not k or trips % k == 0):
            for stack, value in zip(stacks, carry):
                stack[trips // k if k else trips] = value
        carry = _region(params["body"], carry + captures, sizes)
        trips += 1
    return carry + (_carry_stacks(stacks, carry, trips, k) if params["stacked"] else [])


def _fori(ins, params, sizes):
    if params.get("recompute") is not None:
        return _segmented(ins, params, sizes)
    n, m, k = params["carries"], params["xs"], params["checkpoint"]
    y_avals = params["y_avals"]
    lower, upper = int(ins[0]._array), int(ins[1]._array)
    carry, xs, captures = list(ins[2:2 + n]), ins[2 + n:2 + n + m], ins[2 + n + m:]
    trips = max(upper - lower, 0)
    stacks, ys = [{} for _ in range(n)], [{} for _ in y_avals]
    order = range(upper - 1, lower - 1, -1) if params["reverse"] else range(lower, upper)
    for i in order:
        row = i - lower
        if params["stacked"] and (not k or row % k == 0):
            for stack, value in zip(stacks, carry):
                stack[row // k if k else row] = value
        outs = _region(params["body"], [_index(i)] + carry + [_row(x, row) for x in xs] +
                       captures, sizes)
        for y, value in zip(ys, outs[n:]):
            y[row] = value
        carry = outs[:n]
    results = carry + _outputs(ys, y_avals, trips, sizes)
    return results + (_carry_stacks(stacks, carry, trips, k) if params["stacked"] else [])


def _segmented(ins, params, sizes):
    """A checkpointed loop's adjoint (codegen/control.py's _segmented): segments of k rows,
    last first, each recomputing its forward carries from its checkpoint, then running the
    adjoint body over them backwards."""
    n, m, y_avals = params["carries"], params["xs"], params["y_avals"]
    k, segment_rows = params["segment"]
    forward = params["recompute"]
    has_index, fc, fx, fcap = params["recompute_ins"]
    split = len(ins) - (has_index + fc + fx + fcap)
    trips = max(int(ins[1]._array), 0)
    carry, xs, captures = list(ins[2:2 + n]), ins[2 + n:2 + n + m], ins[2 + n + m:split]
    given = ins[split:]
    f_lower, given = given[:has_index], given[has_index:]
    checkpoints, f_xs, f_captures = given[:fc], given[fc:fc + fx], given[fc + fx:]
    ys = [{} for _ in y_avals]
    for segment in range((trips + k - 1) // k - 1, -1, -1):
        start, stop = segment * k, min(segment * k + k, trips)
        state, stored = [_row(c, segment) for c in checkpoints], []
        for i in range(start, stop):
            stored.append(state)
            first = [_index(int(f_lower[0]._array) + i)] if has_index else []
            state = _region(forward, first + state + [_row(x, i) for x in f_xs] +
                            f_captures, sizes)[:fc]
        for i in range(stop - 1, start - 1, -1):
            rows = [stored[i - start][c] for c in segment_rows]
            outs = _region(params["body"], [_index(i)] + carry + rows +
                           [_row(x, i) for x in xs] + captures, sizes)
            for y, value in zip(ys, outs[n:]):
                y[i] = value
            carry = outs[:n]
    return carry + _outputs(ys, y_avals, trips, sizes)


def _cond(ins, params, sizes):
    branch = params["true"] if bool(ins[0]._array) else params["false"]
    return _region(branch, list(ins[1:]), sizes)


_STRUCTURED = {WHILE: _while, FORI: _fori, COND: _cond}
