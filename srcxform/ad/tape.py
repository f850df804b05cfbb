"""GradientTape: watching, recording, and TensorFlow's rules around `gradient`.

The reverse walk itself is backprop.py's; this module decides what is watched, what a
call may ask for, and what shape the answer has.
"""

import contextlib
import enum
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from srcxform import ops
from srcxform.core import recording
from srcxform.core.aval import size
from srcxform.ad.backprop import backprop
from srcxform.ad.explain import explain_tape
from srcxform.ad.trace import Rerolled, Tracer
from srcxform.core.tensor import Value, Variable, as_value, next_id
from srcxform.core.errors import user_line
from srcxform.core.tree import dict_type, tree_flatten, tree_unflatten


# Inside a compiled function, jacobian and batch_jacobian are one loop in the kernel, over
# the target's rows or the sources' columns: LOOPED_JACOBIANS(records, target, leaves,
# watched, batch) gives each leaf's Jacobian. srcxform/jacobians.py's: the loop is control
# flow's, a layer above this one.
LOOPED_JACOBIANS: Callable | None = None


class UnconnectedGradients(enum.Enum):
    """What `gradient` gives for a source the target does not depend on."""

    NONE = "none"
    ZERO = "zero"


class GradientTape:
    """Records operations on watched values to differentiate them (tf.GradientTape).

    Example:
        >>> x = srcxform.constant(3.0)
        >>> with srcxform.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x * x
        >>> tape.gradient(y, x)   # 6.0
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = persistent
        self._watch_accessed = watch_accessed_variables
        self._records = []
        self._watched = set()
        self._cuts = []  # ops that took a watched value and carry no gradient (explain)
        self._cut_ids = set()  # the values made from a cut
        self._variables = []
        self._recording = False
        self._entered = False
        self._used = False
        self._blocks = []  # [next_id() at its `with` block's start, at its end (or None)]

    def __enter__(self):
        self._blocks.append([next_id(), None])
        self._recording = True
        self._entered = True
        recording.enter(recording.CONTEXT.tapes, self)
        return self

    def __exit__(self, *exc):
        self._recording = False
        self._blocks[-1][1] = next_id()
        recording.leave(recording.CONTEXT.tapes, self)
        return False

    # ----- watching -----
    def watch(self, tensor: Any) -> None:
        """Watches a value, or every value in a nested list/tuple/dict of them."""
        for leaf in tree_flatten(tensor)[0]:
            if not isinstance(leaf, Value):
                raise TypeError(f"watch: expected a tensor or Variable, got {type(leaf).__name__}")
            if leaf.dtype.kind != "f":
                warnings.warn(f"The dtype of the watched tensor must be floating (e.g. "
                              f"float32), got {leaf.dtype.name}; its gradient will be None",
                              stacklevel=2)
                continue
            if isinstance(leaf, Variable):
                self._watch_variable(leaf)
            else:
                self._watched.add(leaf._id)

    def _watch_variable(self, variable):
        if variable._id not in self._watched:
            self._watched.add(variable._id)
            self._variables.append(variable)

    def watched_variables(self) -> tuple:
        """The Variables this tape watches, in the order they were first watched."""
        return tuple(self._variables)

    @contextlib.contextmanager
    def stop_recording(self) -> Iterator[None]:
        """Ops run inside this block are not recorded by this tape."""
        if not self._recording:
            raise ValueError("stop_recording: the tape is not recording")
        self._recording = False
        try:
            yield
        finally:
            self._recording = True

    def reset(self) -> None:
        """Forgets everything recorded and watched so far."""
        self._records.clear()
        self._watched.clear()
        self._cuts.clear()
        self._cut_ids.clear()
        self._variables.clear()

    # ----- differentiating -----
    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 unconnected_gradients: UnconnectedGradients | str = UnconnectedGradients.NONE
                 ) -> Any:
        """The gradient of target (summed, or weighted by output_gradients) wrt sources.

        `sources` may be nested; the result has the same structure.
        """
        self._check_usable("gradient")
        zero = _unconnected_is_zero(unconnected_gradients)
        if _holds_none(target):  # a structure's None is no leaf: no gradient, quietly
            raise TypeError(f"gradient: the target must be tensors or Variables (or a "
                            f"structure of them), got None in {target!r}")
        for t in tree_flatten(target)[0]:
            if not isinstance(t, Value):  # a number is no function of the sources
                raise TypeError(f"gradient: the target must be tensors (or a structure of "
                                f"them), got a {type(t).__name__}, which no source reaches")
        leaves, treedef = tree_flatten(sources)
        grads = self._gradient_leaves(target, leaves, output_gradients, targets_count=True)
        return tree_unflatten(treedef, [_gradient_for(s, g, zero) for s, g in zip(leaves, grads)])

    def _gradient_leaves(self, target, leaves, output_gradients, targets_count=False):
        """Each leaf's gradient, None where the target does not depend on it.

        targets_count: a source that is also a target has a gradient (its weight, plus
        what flows back from the other targets) even where it is not watched, as in
        TensorFlow's `gradient`. Its `jacobian` slices the target first, so there an
        unwatched target is unconnected even to itself."""
        targets = tree_flatten(target)[0]
        weights = (_weights(output_gradients) if output_gradients is not None
                   else [None] * len(targets))
        if len(weights) != len(targets):  # zip would drop the last targets' weights
            raise ValueError(f"gradient: output_gradients has {len(weights)} entries for "
                             f"{len(targets)} targets\n  at {user_line()}")
        _check_not_rerolled(leaves)
        ids = [_source_id(s) for s in leaves]
        seeds = {}
        with recording.adjoint():
            for t, w in zip(targets, weights):
                t = as_value(t, "gradient")
                g = ops.ones_like(t) if w is None else _seed(w, t)
                seeds[t._id] = seeds[t._id] + g if t._id in seeds else g
            # Only watched values have gradients (TensorFlow's rule): a source that took
            # part in the target unwatched still gets None.
            found = backprop(list(self._records), seeds,
                             [i for i in ids if i in self._watched
                              or targets_count and i in seeds])
        return [found.get(i) if s.dtype.kind == "f" else None for s, i in zip(leaves, ids)]

    def explain(self, target: Any, source: Any) -> Any:
        """Why d target / d source is what it is, naming the user's lines: the path(s)
        from source to target (and where the gradient is 0, the ops with a zero
        derivative there), or the cut that makes the gradient None (an unwatched source,
        an integer cast, stop_gradient, a NumPy conversion, an op with no gradient, a
        custom_gradient that returns None, an assign, a branch not taken; or no
        connection). `source` may be nested, as in `gradient`: the result is an
        Explanation per leaf, in its structure. Reads the tape (and runs its recorded
        gradients, quietly): it may be called before or after `gradient`, on any tape.

        Example:
            >>> print(tape.explain(loss, w))   # str() is the report; fields for tests
        """
        return explain_tape(self, target, source)

    def jacobian(self, target: Any, sources: Any,
                 unconnected_gradients: UnconnectedGradients | str = UnconnectedGradients.NONE,
                 parallel_iterations: int | None = None, experimental_use_pfor: bool = True
                 ) -> Any:
        """d target / d source, shaped target.shape + source.shape, for each source."""
        if not isinstance(target, Value):
            # as_value would make a list of tensors a new constant, unconnected: None.
            raise TypeError(f"jacobian: the target must be one tensor, got "
                            f"{type(target).__name__}; call jacobian once per target")
        self._check_usable("jacobian")
        zero = _unconnected_is_zero(unconnected_gradients)
        target = self._read_target(target, "jacobian")
        leaves, treedef = tree_flatten(sources)
        if _traced_rows(target):
            found = self._looped_jacobian(target, leaves, 0)
            return tree_unflatten(treedef, [
                ops.zeros(tuple(target.shape) + tuple(s.shape), s.dtype) if j is None and zero
                else j for s, j in zip(leaves, found)])
        rows = [self._gradient_leaves(target, leaves, weight)
                for weight in _one_hots(target.shape, target.shape, target.dtype)]
        # A target with no elements has no rows: a gradient of it (weighted by nothing)
        # tells which sources it is connected to, as TensorFlow's jacobian tells.
        empty = None if rows else self._gradient_leaves(
            target, leaves, ops.zeros(target.shape, target.dtype))
        result: list = []
        for j, source in enumerate(leaves):
            shape = tuple(target.shape) + tuple(source.shape)
            if empty is not None and empty[j] is None and not zero:
                result.append(None)
            else:
                result.append(_stacked([r[j] for r in rows], shape, source, zero))
        return tree_unflatten(treedef, result)

    def batch_jacobian(self, target: Any, source: Any,
                       unconnected_gradients: UnconnectedGradients | str = UnconnectedGradients.NONE,
                       parallel_iterations: int | None = None,
                       experimental_use_pfor: bool = True) -> Any:
        """Per-example jacobian, shaped [b, *target.shape[1:], *source.shape[1:]]; row i of
        target must depend only on row i of source. Where target does not depend on
        source it is zeros of target's dtype, whatever unconnected_gradients says, as
        TensorFlow's."""
        self._check_usable("batch_jacobian")
        _unconnected_is_zero(unconnected_gradients)  # checks the option only
        target = self._read_target(target, "batch_jacobian")
        if target.ndim < 2 or source.ndim < 2:
            raise ValueError(f"batch_jacobian: target and source must have rank 2 or more "
                             f"(a batch axis and an example's axes), got shapes "
                             f"{target.shape} and {source.shape}")
        if target.shape[:1] != source.shape[:1]:
            raise ValueError(f"batch_jacobian: target of shape {target.shape} and source of "
                             f"shape {source.shape} differ in their first (batch) dimension")
        inner = tuple(target.shape[1:])
        if _traced_rows(target):
            found = self._looped_jacobian(target, [source], 1)[0]
            shape = tuple(target.shape) + tuple(source.shape[1:])
            return ops.zeros(shape, target.dtype) if found is None else found
        rows = [self._gradient_leaves(target, [source], weight)[0]
                for weight in _one_hots(inner, target.shape, target.dtype)]
        shape = target.shape[:1] + inner + tuple(source.shape[1:])
        if rows and rows[0] is None:
            return ops.zeros(shape, target.dtype)
        return _stacked(rows, shape, source, False, axis=1)

    def _looped_jacobian(self, target, leaves, batch):
        """Inside a compiled function, each leaf's Jacobian as one loop in the kernel
        (LOOPED_JACOBIANS), None where unconnected or unwatched."""
        _check_not_rerolled(leaves)
        watched = [s for s in leaves if _source_id(s) in self._watched and s.dtype.kind == "f"]
        return LOOPED_JACOBIANS(list(self._records), target, leaves, watched, batch)

    def _read_target(self, target, what):
        """A jacobian's target as a value. TensorFlow reads it with the tape recording, so
        a trainable Variable target is watched then (where the tape watches the variables
        it accesses), and connected to itself even if the tape never used it."""
        if isinstance(target, Variable) and self._watch_accessed and target.trainable:
            self._watch_variable(target)
        return as_value(target, what)

    def _check_usable(self, what):
        if not self._entered:
            raise RuntimeError(f"{what}: the GradientTape was never entered, so it recorded "
                               "nothing; use it as `with GradientTape() as tape:`")
        if self._used and not self._persistent:
            raise RuntimeError(f"{what}: a non-persistent GradientTape can only be used to "
                               "compute one set of gradients (or jacobians); create it with "
                               "persistent=True to call it again")
        self._used = True


def _check_not_rerolled(leaves):
    for s in leaves:  # an intermediate a reroll went around: no path leads to it
        trace = getattr(s, "_trace", None)  # (a gradient the compiler takes never is)
        if trace is not None and trace.rerolled and s.ir_var not in trace.ins \
                and not recording.CONTEXT.adjoint:
            raise Rerolled


def _traced_rows(target):
    """Whether a jacobian of target is taken inside a compiled function (then one loop in
    the kernel rather than a reverse walk unrolled per row) and has rows to loop over."""
    return isinstance(target, Tracer) and size(target.shape) > 0


def _source_id(source):
    if not isinstance(source, Value):
        raise TypeError(f"gradient: sources must be tensors or Variables, got "
                        f"{type(source).__name__}")
    return source._id


_ONES = object()  # an output gradient given as None: the target's ones


def _weights(output_gradients):
    """output_gradients as one entry per target, None where an entry is None (that
    target's ones, as TensorFlow's tape makes them): flattening alone drops a None, and
    the next target's weight would weigh this one."""
    return [None if w is _ONES else w
            for w in tree_flatten(_nones_as_leaves(output_gradients))[0]]


def _nones_as_leaves(tree):
    if tree is None:
        return _ONES
    if isinstance(tree, (list, tuple)):
        return [_nones_as_leaves(t) for t in tree]
    if isinstance(tree, dict):
        return dict_type(type(tree))({k: _nones_as_leaves(v) for k, v in tree.items()})
    return tree


def _seed(weight, target):
    """An output gradient as the target's seed: in its dtype and shape, reshaped where it
    has as many elements (TensorFlow's gradients reshape it: [2.] weighs a scalar), else
    broadcast (each op's gradient takes a cotangent of its output's shape)."""
    w = ops.cast(as_value(weight), target.dtype)
    if w.shape == target.shape:
        return w
    if size(w.shape) == size(target.shape):
        return ops.reshape(w, target.shape)
    try:
        return ops.broadcast_to(w, target.shape)
    except ValueError:
        raise ValueError(f"gradient: output_gradients of shape {tuple(w.shape)} neither has "
                         f"the target's shape {tuple(target.shape)} nor broadcasts to it"
                         ) from None


def _gradient_for(source, grad, zero):
    # TensorFlow's zeros for an unconnected source have its dtype, an integer one included.
    return ops.zeros_like(source) if grad is None and zero else grad


def _one_hots(shape, broadcast_shape, dtype):
    """One weight per element of `shape`: 1 there, 0 elsewhere, broadcast to broadcast_shape."""
    n = size(shape)
    eye = np.eye(n, dtype=dtype)
    return [ops.broadcast_to(ops.constant(eye[k].reshape(shape)), broadcast_shape)
            for k in range(n)]


def _stacked(rows, shape, source, zero, axis=0):
    """Rows of gradients stacked into a jacobian of `shape` (None where unconnected)."""
    if not rows:
        return ops.zeros(shape, source.dtype)
    if rows[0] is None:
        return ops.zeros(shape, source.dtype) if zero else None
    return ops.reshape(ops.stack(rows, axis=axis), shape)


def _holds_none(structure):
    """Whether a target is or holds None, which TensorFlow refuses (tree_flatten takes it
    for an empty structure: a gradient of None was None, helper 125). A None among the
    sources stays a pytree's empty node, its gradient None in its place (JAX's rule)."""
    if isinstance(structure, dict):
        return any(_holds_none(v) for v in structure.values())
    if isinstance(structure, (list, tuple)):
        return any(_holds_none(v) for v in structure)
    return structure is None


def _unconnected_is_zero(option):
    return UnconnectedGradients(getattr(option, "value", option)) is UnconnectedGradients.ZERO

