"""Common-subexpression elimination: equal equations (same primitive, inputs and params)
compute once. Preserves values; assumes SSA."""

import numpy as np

from srcxform.core.dims import expr_of
from srcxform.core.ir import Lit
from srcxform.passes.rewrite import substitute


def equality_key(value):
    """A hashable key that compares sizes by expression, not by this trace's value."""
    if isinstance(value, tuple):
        return tuple(equality_key(v) for v in value)
    if isinstance(value, int) and not isinstance(value, bool):
        return ("int", expr_of(value))
    if isinstance(value, (float, np.floating)):  # -0.0 == 0.0, but 1 / -0.0 is -inf
        return ("float", value, bool(np.signbit(value)))
    if hasattr(value, "to_slice"):  # a Slice's ends may be sizes
        return ("slice", equality_key((value.start, value.stop, value.step)))
    if isinstance(value, Lit):
        return ("lit", equality_key(value.value), value.aval.dtype, value.aval.weak)
    return value


def same_array(a, b):
    """Whether two constant arrays hold the same values, the sign of a zero included."""
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b) and \
        np.array_equal(np.signbit(a), np.signbit(b))


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
