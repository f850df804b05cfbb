"""vmap and tf.vectorized_map: a function mapped over a batch axis, as a loop over lanes.

DESIGN.md's choice: vmap is a loop, not a batching rule. Each lane calls the function on
its own example, so every primitive batches, and each lane takes its own branch of a
`cond` and runs its own number of `while` iterations (JAX's vmap runs both branches and
loops until the slowest lane is done). The lanes' results are stacked along `out_axes`.

Three ways the loop runs:
- over a compiled function (a Differentiable, or its .grad): one kernel of its own, a
  compiled loop (map_fn) over the lanes whose body is the function traced once, the trip
  count the batch size (so a new batch size reuses it);
- inside a traced function: the same loop, in the enclosing kernel;
- eagerly otherwise: a Python loop, each lane's results stacked (recorded on tapes).
Still to do: a prange over the lanes with parallel=True (the loop is sequential).
"""

import functools
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from srcxform import autograph, ops
from srcxform.api import Differentiable, differentiable
from srcxform.control_flow import map_fn
from srcxform.core.errors import TracingError
from srcxform.passes.structured import AssignInRegion
from srcxform.core.tensor import Value
from srcxform.ad.trace import Tracer, eager_kind, of_kind
from srcxform.core.tree import tree_flatten, tree_unflatten

__all__ = ["Vmapped", "vectorized_map", "vmap"]


# An axis spec: one axis for every argument (or output), None for none, or one per each.
Axes = int | None | Sequence[int | None]


def vmap(fn: Callable, in_axes: Axes = 0, out_axes: Axes = 0) -> "Vmapped":
    """fn mapped over a batch axis of its arguments (JAX's vmap).

    in_axes: an int (every positional argument's axis), None (no positional argument is
    mapped), or a tuple with an int or None per positional argument (None: the argument
    is passed whole to every lane). Keyword arguments are always mapped over axis 0
    (JAX's rule): pass an unmapped value positionally with None in in_axes, or close over
    it. out_axes: where the lane axis goes in each output leaf: an int, or a tuple with
    one per element of a tuple output (None there: that output is the same for all
    lanes, and lane 0's is returned; eagerly, lanes that differ raise ValueError, as in
    JAX; compiled, that is not checked).

    The lanes are independent (JAX's rule): a compiled function that assigns a Variable
    cannot be mapped (TracingError); return the new value and assign after the map.
    The result pickles (by reference, or as vmap of its function and axes).

    Example:
        >>> per_example = srcxform.vmap(srcxform.grad(loss), in_axes=(None, 0))(w, X)
    """
    for name, axes in (("in_axes", in_axes), ("out_axes", out_axes)):
        entries = axes if isinstance(axes, (tuple, list)) else (axes,)
        if not all(ax is None or isinstance(ax, int) and not isinstance(ax, bool)
                   for ax in entries):
            raise TypeError(f"vmap: {name} must be an int, None, or a tuple of them, got "
                            f"{axes!r}")
    return Vmapped(fn, in_axes, out_axes)


class Vmapped:
    """A function mapped over a batch axis: what vmap returns. See `vmap`."""

    # Pickled and tokenized for Dask as a Differentiable is (api.py): by reference where
    # its module holds it by name, else as what makes it again, vmap of its function and
    # axes, never its kernels (a process that receives it compiles them once).
    __reduce__, __copy__ = Differentiable.__reduce__, Differentiable.__copy__
    __dask_tokenize__ = Differentiable.__dask_tokenize__

    def __init__(self, fn, in_axes, out_axes):
        for name in functools.WRAPPER_ASSIGNMENTS:  # JAX's vmap wraps fn so
            if hasattr(fn, name):
                setattr(self, name, getattr(fn, name))
        self.fn, self.in_axes, self.out_axes = fn, in_axes, out_axes
        self._kernels: dict = {}  # over a compiled fn: its loop kernel, per axes resolved

    def __repr__(self):
        return f"<srcxform.vmap of {self.fn!r}>"

    def _state(self):
        """What makes it again (api.py's pickling): no flags, as a Differentiable has."""
        return vmap, (self.fn, self.in_axes, self.out_axes), None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """fn on each lane of the arguments, the results stacked along out_axes."""
        axes = _argument_axes(self.in_axes, len(args))
        fn, out_axes = self.fn, self.out_axes
        if _traced((args, kwargs)):  # map_fn checks the lane counts, sizes kept symbolic
            return _looped(fn, args, kwargs, axes, out_axes)
        lanes = _lane_count(args, kwargs, axes)  # checks the mapped axes agree
        if _compiled(fn):
            if axes not in self._kernels:
                self._kernels[axes] = _loop_kernel(fn, axes, out_axes)
            return self._kernels[axes](*args, **kwargs)
        results = [fn(*[_lane(a, ax, i) for a, ax in zip(args, axes)],
                      **_lane(kwargs, 0, i)) for i in range(lanes)]
        return _stacked(results, out_axes)


def vectorized_map(fn: Callable, elems: Any, fallback_to_while_loop: bool = True,
                   warn: bool = True) -> Any:
    """fn applied to each element of `elems` along its first axis, stacked
    (tf.vectorized_map). elems may be a nested structure: fn gets that structure, each
    leaf one row. Runs as vmap's loop: fallback_to_while_loop and warn are accepted and
    have nothing to change."""
    return vmap(fn, in_axes=0, out_axes=0)(elems)


def _traced(args):
    return any(isinstance(leaf, Tracer) for leaf in tree_flatten(args)[0])


def _compiled(fn):
    """Whether fn is a Differentiable or one of its forms (f.grad)."""
    owner = fn.__self__ if isinstance(fn, types.MethodType) else fn
    return isinstance(owner, Differentiable)


def _loop_kernel(fn, axes, out_axes):
    """A Differentiable whose kernel is the loop over lanes, fn traced inside it once."""
    owner = fn.__self__ if isinstance(fn, types.MethodType) else fn

    def looped(*args, **kwargs):
        return _looped(fn, args, kwargs, axes, out_axes)

    looped.__name__ = f"vmap_of_{getattr(owner.fn, '__name__', 'f')}"
    kernel = differentiable(looped, parallel=owner.parallel, wait=owner.wait,
                            autograph=False, device="cpu")
    # A gradient form returns arrays (JAX's convention); the function, what it would.
    kernel._as_eager = owner._as_eager and fn is owner
    return kernel


def _looped(fn, args, kwargs, axes, out_axes):
    """fn over the lanes as map_fn: a compiled loop where the lanes are traced (its trip
    count the batch size), each lane's results stacked on axis 0, then moved to out_axes.
    The keyword arguments are mapped over axis 0."""
    fn = autograph.convert(fn)  # as the transforms convert theirs: its lanes are traced
    mapped = [k for k, ax in enumerate(axes) if ax is not None]
    elems = tuple(_axis_to_front(args[k], axes[k]) for k in mapped) + (kwargs,)
    # Each row is what its argument is in an eager run: a NumPy array's rows are NumPy's.
    kinds = [[eager_kind(leaf) for leaf in tree_flatten(args[k])[0]] for k in mapped]

    def lane(rows):
        full = list(args)
        for k, row, row_kinds in zip(mapped, rows, kinds):
            leaves, tree = tree_flatten(row)
            full[k] = tree_unflatten(tree, [of_kind(leaf, kind) if isinstance(leaf, Value)
                                            else leaf for leaf, kind in zip(leaves, row_kinds)])
        try:
            return fn(*full, **rows[-1])
        except AssignInRegion as error:
            if error.draw:
                raise TracingError(
                    f"{error.where}\n  vmap: {_name(fn)} draws random numbers (srcxform."
                    "random, nn.dropout) in each lane, which a compiled vmap cannot: draw a "
                    "batch of them before the vmap and map over it, or vmap the function "
                    "eagerly") from None
            raise TracingError(
                f"{error.where}\n  vmap: {_name(fn)} assigns Variable "
                f"{error.variable!r} in each lane; the lanes of a vmap are independent "
                "(JAX forbids side effects under vmap; tf.vectorized_map cannot vectorize "
                "an assign), so which lane's value it should keep has no answer: return "
                "the new value from the function (it comes back with a batch axis) and "
                "assign after the vmap, e.g. v.assign(reduce_mean(values, 0))") from None

    stacked = map_fn(lane, elems)
    leaves, treedef = tree_flatten(stacked)
    moved = _output_axes(out_axes, stacked, treedef, len(leaves))
    return tree_unflatten(treedef, [_front_to_axis(leaf, ax) for leaf, ax in zip(leaves, moved)])


def _name(fn):
    owner = fn.__self__ if isinstance(fn, types.MethodType) else fn
    return getattr(getattr(owner, "fn", owner), "__qualname__", "the function")


def _axis_to_front(arg, ax):
    leaves, treedef = tree_flatten(arg)
    moved = []
    for leaf in leaves:
        leaf = ops.convert_to_tensor(leaf)
        ax = ax % leaf.ndim
        perm = [ax] + [d for d in range(leaf.ndim) if d != ax]
        moved.append(leaf if ax == 0 else ops.transpose(leaf, perm))
    return tree_unflatten(treedef, moved)


def _front_to_axis(leaf, ax):
    if ax is None:
        if leaf.shape[0] == 0:
            raise ValueError("vmap: out_axes None gives lane 0's value, and the batch has "
                             "no lanes")
        return leaf[0]
    ax = _out_axis(ax, leaf.ndim)
    if ax == 0:
        return leaf
    perm = list(range(1, ax + 1)) + [0] + list(range(ax + 1, leaf.ndim))
    return ops.transpose(leaf, perm)


def _argument_axes(in_axes, count):
    if in_axes is None or isinstance(in_axes, int):
        return (in_axes,) * count
    axes = tuple(in_axes)
    if len(axes) != count:
        raise ValueError(f"vmap: in_axes has {len(axes)} entries for {count} arguments")
    for ax in axes:
        if ax is not None and not isinstance(ax, int):
            raise TypeError(f"vmap: each in_axes entry must be an int or None, got {ax!r}")
    return axes


def _lane_count(args, kwargs, axes):
    """The batch size all mapped leaves agree on (the keyword arguments' on axis 0)."""
    sizes = {}
    named = [(f"argument {k}", arg, ax) for k, (arg, ax) in enumerate(zip(args, axes))]
    named += [(f"keyword argument {key!r} (mapped over axis 0, JAX's rule for keywords)",
               kwarg, 0) for key, kwarg in kwargs.items()]
    for what, arg, ax in named:
        if ax is None:
            continue
        for leaf in tree_flatten(arg)[0]:
            shape = tuple(leaf.shape) if isinstance(leaf, Value) else np.shape(leaf)
            if not -len(shape) <= ax < len(shape):
                raise ValueError(f"vmap: in_axes {ax} for {what}, of shape {shape}")
            sizes[shape[ax]] = shape
    if not sizes:
        raise ValueError("vmap: no argument is mapped (every in_axes entry is None)")
    if len(sizes) > 1:
        raise ValueError(f"vmap: the mapped axes have different sizes: "
                         f"{sorted(sizes.values())}")
    return int(next(iter(sizes)))


def _lane(arg, ax, i):
    """Example i of an argument: each leaf indexed at `i` along `ax` (recorded on tapes
    where the leaf is a tensor)."""
    if ax is None:
        return arg
    leaves, treedef = tree_flatten(arg)
    return tree_unflatten(treedef, [_take(leaf, ax, i) for leaf in leaves])


def _take(leaf, ax, i):
    if isinstance(leaf, Value):  # of leaf's kind: a NumPy array's rows are NumPy's
        ax = ax % leaf.ndim
        return of_kind(ops.getitem(leaf, (slice(None),) * ax + (i,)), eager_kind(leaf))
    return np.take(np.asarray(leaf), i, axis=ax)


def _stacked(results, out_axes):
    """The lanes' results stacked, leaf by leaf, along out_axes."""
    if not results:
        raise ValueError("vmap: the batch has no examples, so the output's shape is unknown")
    first, treedef = tree_flatten(results[0])
    columns = [tree_flatten(r)[0] for r in results]
    if any(len(c) != len(first) for c in columns):
        raise ValueError("vmap: the lanes returned different structures")
    axes = _output_axes(out_axes, results[0], treedef, len(first))
    return tree_unflatten(treedef, [_stack([c[k] for c in columns], axes[k])
                                    for k in range(len(first))])


def _output_axes(out_axes, first, treedef, count):
    """One out axis per output leaf."""
    if out_axes is None or isinstance(out_axes, int):
        return [out_axes] * count
    if not isinstance(first, (tuple, list)) or len(first) != len(out_axes):
        raise ValueError("vmap: a tuple out_axes needs a tuple output of as many elements")
    return [ax for element, ax in zip(first, out_axes)
            for _ in tree_flatten(element)[0]]


def _out_axis(ax, ndim):
    """An out axis of a stacked result of ndim axes (the lane axis among them)."""
    if not -ndim <= ax < ndim:
        raise ValueError(f"vmap: out_axes {ax} for an output of rank {ndim - 1} (each "
                         f"lane's): it must be in [{-ndim}, {ndim - 1}]")
    return ax % ndim


def _stack(leaves, ax):
    if ax is None:
        values = [leaf._array if isinstance(leaf, Value) else np.asarray(leaf)
                  for leaf in leaves]  # not np.asarray(leaf): no numpy conversion on a tape
        if any(not np.array_equal(v, values[0], equal_nan=v.dtype.kind in "fc")
               for v in values):
            raise ValueError("vmap: out_axes None for an output that differs between "
                             "lanes: give it an axis")
        return leaves[0]
    ax = _out_axis(ax, np.ndim(leaves[0]) + 1)
    if all(isinstance(leaf, Value) for leaf in leaves):
        return ops.stack(leaves, axis=ax)
    return np.stack([np.asarray(leaf) for leaf in leaves], axis=ax)
