"""Dead-code elimination: drops equations whose outputs nothing uses.
Preserves outputs; assumes no equation has side effects (none does)."""

from srcxform.core.ir import Var


def run(program):
    used = needed(program, program.outs)
    kept = [eqn for eqn in program.eqns if eqn.out in used]
    if len(kept) == len(program.eqns):
        return program, False
    return program.replace(eqns=kept), True


def needed(program, outs):
    """The values of `program` that computing `outs` reads, its inputs among them."""
    used = {a for a in outs if isinstance(a, Var)}
    for eqn in reversed(program.eqns):
        if eqn.out in used:
            used.update(a for a in eqn.ins if isinstance(a, Var))
    return used
