"""Algebraic simplification, from what each primitive declares: a literal unit leaves the
other operand unchanged (x*1, x+0; `units`), an output with its input's aval is that
input (a cast to the same dtype; `same_aval_is_identity`), and an elementwise op reads a
broadcast's input directly when it broadcasts anyway (`is_broadcast`).

Preserves every output's value bit for bit and each replaced value's aval; assumes the
program is in SSA form.
"""

from srcxform.aval import broadcast_shapes
from srcxform.ir import Lit, Var
from srcxform.passes.rewrite import substitute


def _same(a, b):
    return (tuple(map(str, a.shape)), a.dtype) == (tuple(map(str, b.shape)), b.dtype)


def _replacement(eqn, producers):
    out = eqn.out.aval
    if eqn.prim.same_aval_is_identity and _same(eqn.ins[0].aval, out):
        return eqn.ins[0]
    for literal, pos in eqn.prim.units:
        atom, other = eqn.ins[pos], eqn.ins[1 - pos]
        if isinstance(atom, Lit) and atom.value == literal and _same(other.aval, out):
            return other
    if eqn.prim.kind == "elementwise" and not eqn.prim.is_broadcast:
        ins = [_unbroadcast(a, producers) for a in eqn.ins]
        if ins != list(eqn.ins) and _same_shape(broadcast_shapes(*[a.aval.shape for a in ins]),
                                                out.shape):
            return eqn.with_ins(ins)
    return None


def _unbroadcast(atom, producers):
    eqn = producers.get(atom) if isinstance(atom, Var) else None
    return eqn.ins[0] if eqn is not None and eqn.prim.is_broadcast else atom


def _same_shape(a, b):
    return tuple(map(str, a)) == tuple(map(str, b))


def run(program):
    producers = {}

    def replace(eqn):
        result = _replacement(eqn, producers)
        producers[eqn.out] = eqn
        return result

    return substitute(program, replace)
