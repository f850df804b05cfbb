"""Forward mode: each op's JVP, derived from its VJP by transposition, and TensorFlow's
ForwardAccumulator.

Why derived: every VJP in srcxform (each primitive's, custom_gradient's, a compiled
loop's) is linear in its cotangent g and written in srcxform ops. For an op y = f(x) the
VJP is g -> J^T g, so h(g) = <J^T g, t> = <g, J t>, and the gradient of h with respect to
g is J t: the JVP along the tangent t. `jvp_of_record` computes it with a GradientTape
watching a placeholder g (ones: the VJP is linear, so the gradient does not depend on
g's value, except at 0 for one written through g's logarithm on each side of its sign, as
cumulative_logsumexp's, whose where() has no gradient there). This is the transposition
trick JAX's autodiff cookbook describes, run through the reverse walk that exists
already; it gives a JVP to every differentiable primitive with no second rule to keep
in step with the first (DESIGN.md's one declaration). The price is cost: a JVP runs the VJP and its transpose, about three times
the ops of a hand-written rule (eagerly; in a compiled function the simplifier removes
the placeholder and most of the scaffolding). A compiled loop has a JVP of its own
(structured.LoopRule: its tangents ride along its carries), which its record offers.

Since the JVP's operations are ordinary recorded ops, they compose: an outer tape
records them (reverse over forward), an outer accumulator propagates through an inner
one's (forward over forward), and an accumulator propagates through a tape's gradient
computation (forward over reverse: Hessian-vector products). Inside a traced function
the same ops emit IR, so forward mode compiles with no code of its own.
"""

from collections.abc import Callable
from typing import Any

from srcxform import ops
from srcxform.core import recording
from srcxform.ad.backprop import unbroadcast
from srcxform.core.primitive import ZERO
from srcxform.core.recording import Record
from srcxform.ad.tape import GradientTape, UnconnectedGradients, _unconnected_is_zero
from srcxform.ad.trace import eager_kind, of_kind
from srcxform.core.tensor import Value, Variable, as_value
from srcxform.core.tree import tree_flatten, tree_unflatten

__all__ = ["ForwardAccumulator", "jvp", "jvp_of_record", "linearized_tangents"]


def jvp_of_record(rec: Record, tangents: list) -> list:
    """The tangents of a recorded op's outputs given its inputs' (None: zero tangent).

    Returns one entry per output (rec.outs, or [rec.out]); None where the output has no
    tangent (not a float, or not reached by any input's tangent)."""
    if rec.vjp is None or all(t is None for t in tangents):
        return [None] * len(rec.outs or (rec.out,))
    with recording.replaying(rec.origin):  # its ops are the recorded op's line's
        return _jvp_of_record(rec, tangents)


def _jvp_of_record(rec, tangents):
    own = getattr(rec.vjp, "jvp", None)
    if own is not None:  # a compiled loop's (structured.LoopRule)
        return own(tangents, rec.outs, rec.inputs)
    outs = list(rec.outs or (rec.out,))
    placeholders = [_placeholder(out) if out.dtype.kind == "f" else None for out in outs]
    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch([g for g in placeholders if g is not None])
        g = placeholders if rec.outs is not None else placeholders[0]
        out = rec.outs if rec.outs is not None else rec.out
        cotangents = rec.vjp(g, out, *rec.inputs, **rec.params)
        pairing = _pairing(rec.inputs, cotangents, tangents)
    if pairing is None:
        return [None] * len(outs)
    return tape.gradient(pairing, placeholders)  # in each output's dtype, as its gradient


def _placeholder(out):
    """A cotangent shaped as `out` to transpose the VJP at: ones (any value but 0 would
    do, the VJP being linear in it: see the module's docstring)."""
    return ops.ones_like(out)


def _pairing(inputs, cotangents, tangents):
    """<cotangent, tangent> summed over the inputs that have both: the scalar whose
    gradient wrt the placeholder cotangent is the JVP. None where no input has both."""
    total = None
    for x, ct, t in zip(inputs, cotangents, tangents):
        if t is None or ct is None or ct is ZERO or x.dtype.kind != "f":
            continue
        if callable(ct) and not isinstance(ct, Value):  # made only where needed (Primitive)
            ct = ct()
        term = ops.reduce_sum(unbroadcast(ct, x) * ops.cast(t, x.aval.dtype))
        total = term if total is None else total + term
    return total


def linearized_tangents(records: list, tangents: dict) -> dict:
    """Pushes `tangents` ({id: tangent}) forward through recorded ops in order, without
    running them again (linearize's replay); returns the dict, extended."""
    for rec in records:
        ins = [tangents.get(v._id) for v in rec.inputs]
        for out, t in zip(rec.outs or (rec.out,), jvp_of_record(rec, ins)):
            if t is not None:
                tangents[out._id] = t
    return tangents


class ForwardAccumulator:
    """Computes Jacobian-vector products of everything computed inside its context from
    `primals` (tf.autodiff.ForwardAccumulator).

    primals: a tensor, Variable, or nested structure of them; tangents: the same
    structure, each tangent shaped like its primal (cast to its dtype).

    Example:
        >>> x = tf.Variable(3.0)
        >>> with tf.autodiff.ForwardAccumulator(x, tf.constant(1.0)) as acc:
        ...     y = x * x * x
        >>> acc.jvp(y)   # 27.0
    """

    def __init__(self, primals: Any, tangents: Any) -> None:
        primal_leaves, primal_def = tree_flatten(primals)
        tangent_leaves, tangent_def = tree_flatten(tangents)
        if primal_def != tangent_def:
            raise ValueError(f"ForwardAccumulator: primals and tangents must have the same "
                             f"structure, got {primal_def} and {tangent_def}")
        self._tangents: dict = {}
        self._recording = False
        for primal, tangent in zip(primal_leaves, tangent_leaves):
            self._watch(primal, tangent)

    def _watch(self, primal, tangent):
        if not isinstance(primal, Value):
            raise TypeError(f"ForwardAccumulator: primals must be tensors or Variables, got "
                            f"{type(primal).__name__}")
        tangent = as_value(tangent, "ForwardAccumulator")
        if primal._id in self._tangents:  # TensorFlow's rule
            raise ValueError("ForwardAccumulator: a tensor was given as a primal more than "
                             "once; if that was meant, sum its tangents")
        if tuple(tangent.shape) != tuple(primal.shape):
            raise ValueError(f"ForwardAccumulator: a tangent of shape {tuple(tangent.shape)} "
                             f"for a primal of shape {tuple(primal.shape)}")
        if primal.dtype.kind != "f":
            raise ValueError(f"ForwardAccumulator: primals must be floating, got "
                             f"{primal.dtype.name}")
        self._tangents[primal._id] = ops.cast(tangent, primal.dtype)

    def __enter__(self):
        self._recording = True
        recording.enter(recording.CONTEXT.accumulators, self)
        return self

    def __exit__(self, *exc):
        self._recording = False
        recording.leave(recording.CONTEXT.accumulators, self)
        return False

    def follows(self, values) -> bool:
        """Whether the accumulator is recording and holds a tangent of one of `values`."""
        return self._recording and any(v._id in self._tangents for v in values)

    def observe(self, rec: Record) -> None:
        """Called for every op recorded while the accumulator is open: computes its
        outputs' tangents where an input has one. Paused while it does, so that its own
        JVP ops are not differentiated again by itself (other accumulators and tapes see
        them: that is what nesting means)."""
        if not self.follows(rec.inputs):
            return
        tangents = [self._tangents.get(v._id) for v in rec.inputs]
        self._recording = False
        try:
            found = jvp_of_record(rec, tangents)
        finally:
            self._recording = True
        for out, t in zip(rec.outs or (rec.out,), found):
            if t is not None:
                self._tangents[out._id] = t

    def jvp(self, primals: Any,
            unconnected_gradients: UnconnectedGradients | str = UnconnectedGradients.NONE
            ) -> Any:
        """The tangents of `primals` (a tensor or a nested structure of them), computed
        inside this accumulator: None where none of the accumulator's primals reaches
        one (zeros with unconnected_gradients=ZERO)."""
        zero = _unconnected_is_zero(unconnected_gradients)
        leaves, treedef = tree_flatten(primals)
        return tree_unflatten(treedef, [self._jvp_leaf(leaf, zero) for leaf in leaves])

    def _jvp_leaf(self, primal, zero):
        if not isinstance(primal, Value):
            raise TypeError(f"ForwardAccumulator.jvp: expected tensors, got "
                            f"{type(primal).__name__}")
        tangent = self._tangents.get(primal._id)
        if tangent is None and zero:
            value = primal._read() if isinstance(primal, Variable) else primal
            return ops.zeros_like(value)
        return tangent


def jvp(fn: Callable, primals: tuple, tangents: tuple) -> tuple:
    """(fn(*primals), its JVP along `tangents`), run eagerly: JAX's jvp on the tape's
    machinery. primals and tangents are tuples of positional arguments (structures of
    arrays, tensors or Python floats)."""
    primals, tangents = argument_tuples(primals, tangents)
    inputs = as_inputs(primals, "jvp")
    with ForwardAccumulator(inputs, list(tangents)) as acc:
        out = fn(*inputs)
    out_leaves, out_def = tree_flatten(out)
    out_tangents = [acc.jvp(o, "zero") if isinstance(o, Value) and o.dtype.kind == "f"
                    else None for o in out_leaves]
    return out, tree_unflatten(out_def, out_tangents)


def argument_tuples(primals, tangents):
    """jvp's primals and tangents as tuples; TypeError for an array given as either (its
    rows would be taken for the arguments)."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples (or lists) of arguments, "
                        "as JAX's jvp takes them")
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    return tuple(primals), tuple(tangents)


def as_inputs(primals, op):
    """The primal arguments as the function meets them (_as_input); a Variable given twice
    raises (one source cannot take two tangents)."""
    inputs = [_as_input(p) for p in primals]
    ids = [leaf._id for leaf in tree_flatten(inputs)[0] if isinstance(leaf, Variable)]
    if len(set(ids)) < len(ids):
        raise ValueError(f"{op}: a Variable is given twice as a primal; give it once, with "
                         "the sum of its tangents")
    return inputs


def _as_input(primal):
    """A primal argument as the function meets it, so the accumulator can follow it: each
    leaf a tensor of its own (an identity: the same tensor used elsewhere, by a closure or
    passed twice, is not this source, as in JAX) of the leaf's eager kind (a NumPy array's
    operators and indexing stay NumPy's), Variables as they are."""
    leaves, treedef = tree_flatten(primal)
    return tree_unflatten(treedef, [leaf if isinstance(leaf, Variable) else
                                    of_kind(ops.identity(as_value(leaf)), eager_kind(leaf))
                                    for leaf in leaves])
