"""Algebraic simplification, from what each primitive declares: a literal unit leaves the
other operand unchanged (x*1, x+0; `units`), an output with its input's aval is that
input (a cast to the same dtype; `same_aval_is_identity`), an elementwise op reads a
broadcast's input directly when it broadcasts anyway (`is_broadcast`), an elementwise op
of scalars only is computed once and broadcast, one of literals only is folded, and
rearranging a broadcast scalar (`rearranges`) is broadcasting it to the new shape.

Preserves every output's value bit for bit and each replaced value's aval; assumes the
program is in SSA form.
"""

import numpy as np

from srcxform.core.aval import Aval, broadcast_shapes, same_shape
from srcxform.core.dims import Dim
from srcxform.core.dtypes import promote
from srcxform.core.ir import Eqn, Lit, Var
from srcxform.passes.rewrite import substitute


def _same(a, b):
    # A weak value cannot stand for a strong one (a Python float argument cast to float64).
    return same_shape(a.shape, b.shape) and a.dtype == b.dtype and a.weak == b.weak


# The dtypes a size cast to is itself in (float64's 53 bits hold any size of an array).
_HOLD_SIZES = {np.dtype(np.int64), np.dtype(np.uint64), np.dtype(np.float64)}


def _replacement(eqn, producers, keep_gradient_stops):
    out = eqn.out.aval
    identity = eqn.prim.algebra.same_aval_is_identity and not (keep_gradient_stops
                                                       and eqn.prim.unrecorded)
    if identity and _same(eqn.ins[0].aval, out):
        return eqn.ins[0]
    if eqn.prim.algebra.same_aval_is_identity and isinstance(eqn.ins[0], Lit) and not out.shape:
        value = eqn.ins[0].value  # a cast of a literal (a size too: n0 as float64)
        if isinstance(value, Dim):  # a dtype that holds no size exactly casts at run time
            return Lit(value, out) if out.dtype in _HOLD_SIZES else None
        return Lit(np.asarray(value, out.dtype).item(), out)
    for literal, pos in eqn.prim.algebra.units:
        atom, other = eqn.ins[pos], eqn.ins[1 - pos]
        if isinstance(atom, Lit) and atom.value == literal and _same(other.aval, out) and \
                _keeps_minus_zero(eqn, pos, atom.value):
            return other
    if eqn.prim.algebra.rearranges:
        scalar = _unbroadcast(eqn.ins[0], producers)
        return _broadcast(eqn, scalar, producers) \
            if scalar is not eqn.ins[0] and not scalar.aval.shape else None
    if eqn.prim.kind != "elementwise" or eqn.prim.algebra.is_broadcast:
        return None
    ins = [_unbroadcast(a, producers) for a in eqn.ins]
    if all(isinstance(a, Lit) and not isinstance(a.value, Dim) for a in ins) and not out.shape:
        return _folded(eqn, ins)
    if ins == list(eqn.ins):
        return None
    if same_shape(broadcast_shapes(*[a.aval.shape for a in ins]), out.shape):
        return eqn.with_ins(ins)
    if all(not a.aval.shape for a in ins):
        return _hoisted(eqn, ins, producers)
    return None


def _keeps_minus_zero(eqn, pos, unit):
    """Whether `unit` at position pos leaves a float -0.0 as it is: x + 0.0 is +0.0 there,
    x - 0.0 and x + -0.0 are x."""
    if eqn.out.aval.dtype.kind != "f":
        return True
    operands = [np.float64(-0.0)] * 2
    operands[pos] = np.float64(unit)
    return bool(np.signbit(eqn.prim.impl(*operands, **eqn.kwargs)))


def _folded(eqn, ins):
    """A literal for an elementwise op of literals, computed by its impl."""
    operands = [a.aval for n, a in zip(eqn.prim.arg_names, ins) if n != "c"]
    common = promote(operands)[0] if operands else eqn.out.aval.dtype
    values = [np.asarray(a.value, a.aval.dtype if n == "c" else common)
              for n, a in zip(eqn.prim.arg_names, ins)]
    with np.errstate(all="ignore"):
        result = np.asarray(eqn.prim.impl(*values, **eqn.kwargs), eqn.out.aval.dtype)
    finite = all(np.isfinite(v) for v in values if v.dtype.kind == "f")
    if finite and result.dtype.kind == "f" and not np.isfinite(result):
        return None  # a NaN or inf of finite literals (1 / 0.0) stays: debug_nans names it
    return Lit(result.item(), eqn.out.aval)


def _hoisted(eqn, ins, producers):
    """An op of scalars that are broadcast: the op once on the scalars, then broadcast."""
    scalar = Var(Aval((), eqn.out.aval.dtype, eqn.out.aval.weak))
    return [Eqn(scalar, eqn.prim, tuple(ins), eqn.params, eqn.origin, eqn.adjoint, eqn.of),
            _broadcast(eqn, scalar, producers)]


def _broadcast(eqn, scalar, producers):
    """eqn's output as a broadcast of a scalar atom, by the primitive of the broadcast
    that one of eqn's inputs was (is_broadcast), which the replacement goes around."""
    broadcast = next(producers[a].prim for a in eqn.ins
                     if isinstance(a, Var) and _unbroadcast(a, producers) is not a)
    return Eqn(eqn.out, broadcast, (scalar,), (("shape", eqn.out.aval.shape),), eqn.origin,
               eqn.adjoint, eqn.of)


def _unbroadcast(atom, producers):
    eqn = producers.get(atom) if isinstance(atom, Var) else None
    return eqn.ins[0] if eqn is not None and eqn.prim.algebra.is_broadcast else atom



def run(program, keep_gradient_stops=False):
    """With keep_gradient_stops, stop_gradient (an `unrecorded` op) stays: the program is
    a region that a loop's or cond's adjoint evaluates again under a tape."""
    producers = {}

    def replace(eqn):
        result = _replacement(eqn, producers, keep_gradient_stops)
        producers[eqn.out] = eqn
        return result

    return substitute(program, replace)
