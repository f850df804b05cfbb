"""Gradient control: custom_gradient (stop_gradient is an elementwise primitive).

A custom gradient is a tape record whose VJP is the user's function, so it works
eagerly, under outer tapes, and while tracing, with no primitive of its own.
"""

import functools

from srcxform.core import recording
from srcxform.core.errors import TracingError, user_line
from srcxform.ops.elementwise import stop_gradient
from srcxform.core.tensor import as_value
from srcxform.core.tree import LEAF, tree_flatten, tree_unflatten
from srcxform.ops.creation import zeros_like


def custom_gradient(f):
    """Decorates `f(*xs) -> (y, grad_fn)`; the gradient of y is `grad_fn(upstream)`, which
    returns one gradient per input (tf.custom_gradient). Where y is a list, tuple or dict
    of outputs, grad_fn takes one upstream gradient per output, in flattened order (zeros
    for an output that has none), as TensorFlow's.

    Example:
        >>> @srcxform.custom_gradient
        ... def clip_grad(x):
        ...     return x, lambda g: srcxform.clip_by_value(g, -1.0, 1.0)
    """

    name = getattr(f, "__name__", type(f).__name__)  # a partial or callable has none

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        if recording.replayed():  # the adjoint would differentiate f's own operations
            raise TracingError(f"{user_line()}\n  custom_gradient inside a compiled loop body "
                               "or cond branch that a tape differentiates: its gradient "
                               "function would not be used; call it outside the loop or "
                               "branch")
        inputs = [as_value(a, name) for a in args]
        with recording.paused():
            y, grad_fn = f(*inputs, **kwargs)
        leaves, treedef = tree_flatten(y)
        several = treedef != LEAF
        outs = []
        for leaf in leaves:
            out = as_value(leaf, name)
            if any(out._id == x._id for x in inputs + outs):
                with recording.paused():  # no cut: the record below is the gradient
                    out = stop_gradient(out)  # the record needs outputs of its own
            outs.append(out)

        def vjp(g, out, *xs):
            upstream = [zeros_like(o) if u is None else u for u, o in zip(g, outs)] \
                if several else [g]
            grads = grad_fn(*upstream)
            # One per input, None where an input has none (flattening would drop it).
            grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
            if len(grads) != len(xs):
                raise ValueError(f"custom_gradient: {name}'s gradient function returned "
                                 f"{len(grads)} gradients for {len(xs)} inputs")
            return tuple(None if gr is None else as_value(gr) for gr in grads)

        if several:
            recording.record_outputs(vjp, inputs, outs, {}, "custom_gradient")
        else:
            recording.record(vjp, inputs, outs[0], {}, "custom_gradient")
        for out in outs:  # a traced output: reroll must not differentiate f's own ops
            if getattr(out, "_trace", None) is not None:
                out._trace.custom_gradients.add(out.ir_var)
        return tree_unflatten(treedef, outs)

    return wrapper
