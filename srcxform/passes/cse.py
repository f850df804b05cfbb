"""Common-subexpression elimination: equal equations (same primitive, inputs and params)
compute once. Preserves values; assumes SSA."""

from srcxform.core.dims import expr_of
from srcxform.core.ir import Lit
from srcxform.passes.rewrite import substitute


def equality_key(value):
    """A hashable key that compares sizes by expression, not by this trace's value."""
    if isinstance(value, tuple):
        return tuple(equality_key(v) for v in value)
    if isinstance(value, int) and not isinstance(value, bool):
        return ("int", expr_of(value))
    if isinstance(value, Lit):
        return ("lit", equality_key(value.value), value.aval.dtype, value.aval.weak)
    return value


def run(program):
    seen = {}

    def replace(eqn):
        key = (eqn.prim.name, tuple(a if not isinstance(a, Lit) else equality_key(a) for a in eqn.ins),
               equality_key(eqn.params))
        if key in seen:
            return seen[key]
        seen[key] = eqn.out
        return None

    return substitute(program, replace)
