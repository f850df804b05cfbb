"""The substitution walk that simplify and CSE share: rename inputs as earlier
equations were replaced, and let the pass replace, rewrite or keep each equation."""

from srcxform.core.ir import Eqn, Var


def substitute(program, replace):
    """Walks the equations in order. `replace(eqn)` returns an atom to use instead of the
    equation's output, a rewritten Eqn (or a list of Eqns, the last defining the same
    output) to keep instead, or None to keep it as it is. Returns (program, changed)."""
    mapping = {}
    eqns = []
    changed = False
    for eqn in program.eqns:
        if mapping:
            ins = tuple(mapping.get(a, a) if isinstance(a, Var) else a for a in eqn.ins)
            if ins != eqn.ins:
                eqn = eqn.with_ins(ins)
        result = replace(eqn)
        if result is None:
            eqns.append(eqn)
        elif isinstance(result, (Eqn, list)):
            eqns.extend(result if isinstance(result, list) else [result])
            changed = True
        else:
            mapping[eqn.out] = result
    if not mapping:
        return (program.replace(eqns=eqns), True) if changed else (program, False)
    outs = [mapping.get(a, a) if isinstance(a, Var) else a for a in program.outs]
    # A replacement takes over the names of what it replaces, where it has none.
    hints, adjoint_of = dict(program.hints), dict(program.adjoint_of)
    for old, new in mapping.items():
        if isinstance(new, Var) and new not in hints and new not in program.ins:
            if old in hints:
                hints[new] = hints[old]
            elif old in adjoint_of:
                adjoint_of.setdefault(new, adjoint_of[old])
    return program.replace(eqns=eqns, outs=outs, hints=hints, adjoint_of=adjoint_of), True
