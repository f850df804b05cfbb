"""The sizes a traced integer value holds, where its trace computes it from sizes and
integer constants alone: tf.shape(x), an element or slice of it, their sums, products and
quotients, stacked or concatenated with constants (TensorFlow's idiom for a shape in a
tf.function: `tf.reshape(x, tf.concat([tf.shape(x)[:-1], [2, -1]], 0))`). A shape argument
reads them as sizes, which stay symbolic, where the tensor itself is known only at run
time. The program is read back from the trace's own record of each value's equation
(`Trace.producers`); nothing is noted while tracing.

Sizes are Python objects here (ints and Dims), never a NumPy array of them: NumPy asks each
element for its number, which would guard the kernel to this call's sizes.
"""

import math
import operator

import numpy as np

from srcxform.core.ir import Lit
from srcxform.core.tensor import SizeConstant, Value

# Integer ops on sizes, elementwise with a scalar broadcast.
_ARITHMETIC = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
               "floordiv": operator.floordiv, "mod": operator.mod, "maximum": max,
               "minimum": min}


def sizes_held(value):
    """The sizes a traced integer scalar or vector holds, flat (a tuple; one for a
    scalar), or None where it is not computed from sizes and constants alone."""
    if value._trace is None or value.ndim > 1 or value.dtype.kind not in "iu":
        return None
    found = _held(value._trace, value.ir_var)
    return None if found is None else tuple(found)


def size_argument(value):
    """A count or length as a size where it is one made a tensor (x.shape[0] as an operand)
    or a traced scalar holding one (tf.shape(x)[0]); anything else as it is."""
    if isinstance(value, SizeConstant):
        return value.dim
    if isinstance(value, Value) and value._trace is not None and not value.ndim:
        held = sizes_held(value)
        return value if held is None else held[0]
    return value


def _held(trace, atom):
    """The flat list of sizes `atom` holds, or None. Only integers of 32 bits or more are
    followed: a size cast to int8 may wrap, which the size itself would not."""
    dtype = atom.aval.dtype
    if dtype.kind not in "iu" or dtype.itemsize < 4 or len(atom.aval.shape) > 1:
        return None
    if isinstance(atom, Lit):
        return [atom.value]
    array = trace.const_arrays.get(atom)
    if array is not None:
        return [int(v) for v in array.ravel()]
    eqn = trace.producers.get(atom)
    if eqn is None:  # an input, or a value a region reads from an enclosing trace
        outer = trace.captured_from.get(atom)
        return None if outer is None else _held(outer._trace, outer.ir_var)
    ins = [_held(trace, a) for a in eqn.ins]
    if any(found is None for found in ins):
        return None
    found = _apply(eqn.prim.name, ins, eqn.kwargs, eqn.out.aval.shape)
    bounds = np.iinfo(dtype)  # eagerly a result past them wraps; guarded for sizes
    if found is None or any(d < bounds.min or d > bounds.max for d in found):
        return None
    return found


def _apply(name, ins, params, shape):
    """The op `name` applied to sizes, or None for an op this does not follow."""
    if name in ("cast", "reshape"):  # integer to integer: the same numbers
        return ins[0]
    if name == "negative":
        return [0 - d for d in ins[0]]
    if name in _ARITHMETIC:
        a, b = ins
        if name in ("floordiv", "mod") and any(d == 0 for d in b):
            return None  # eager raises, naming the op
        n = max(len(a), len(b)) if a and b else 0
        return [_ARITHMETIC[name](a[i % len(a)], b[i % len(b)]) for i in range(n)]
    if name == "concat":
        return [d for found in ins for d in found]
    if name == "broadcast_to" and len(ins[0]) == 1:
        return ins[0] * math.prod(shape)
    if name == "getitem" and len(params["index"]) == 1:
        item = params["index"][0]  # a Slice, an int, or None (a new axis)
        if hasattr(item, "to_slice"):
            return ins[0][item.to_slice()]
        return [ins[0][item]] if isinstance(item, int) else None
    if name in ("reduce_sum", "reduce_prod"):
        return [sum(ins[0]) if name == "reduce_sum" else math.prod(ins[0])]
    return None
