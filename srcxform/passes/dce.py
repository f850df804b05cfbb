"""Dead-code elimination: drops equations whose outputs nothing uses.
Preserves outputs; assumes no equation has side effects (none does)."""

from srcxform.core.ir import Var


def run(program):
    used = {a for a in program.outs if isinstance(a, Var)}
    kept = []
    for eqn in reversed(program.eqns):
        if eqn.out in used:
            kept.append(eqn)
            used.update(a for a in eqn.ins if isinstance(a, Var))
    if len(kept) == len(program.eqns):
        return program, False
    return program.replace(eqns=kept[::-1]), True
