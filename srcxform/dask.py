"""Data-parallel gradients over Dask arrays: `value_and_grad(f, reduce="mean")`.

A loss that is a sum or a mean over rows splits into the same loss on each block of rows:
one task per block runs f's compiled kernel, and a tree of tasks adds the blocks' parts up
(weighted by rows for a mean). Only the blocks travel as Dask chunks; the other arguments
(the parameters) are put into the graph once per call, not once per block. Dask is
imported here only: `pip install srcxform[dask]`.
"""

from collections.abc import Callable

import dask
import dask.array as da
import numpy as np

from srcxform.api import Differentiable, differentiable
from srcxform.core.tree import tree_flatten, tree_unflatten

REDUCTIONS = ("sum", "mean")
SPLIT_EVERY = 8  # parts added per task of the tree reduction (dask.array's default)


def value_and_grad(fn: Callable, reduce: str = "mean", wrt: int | tuple = 0,
                   scheduler: str | None = None) -> Callable:
    """The data-parallel (value, gradient) function of a loss over rows.

    `fn(*args)` is the loss of the rows it is given: their sum (`reduce="sum"`) or their
    mean (`reduce="mean"`); a Python function, or a `srcxform.differentiable` (whose own
    `wrt` then applies). Arguments that are Dask arrays are data, split into blocks of
    rows (chunked along axis 0 only; their other axes are made one chunk); every other
    argument is the same for all blocks. The result is the loss of all the rows and its
    gradient wrt `wrt`, as NumPy values, equal to `srcxform.value_and_grad(fn)` on the
    whole arrays (to float rounding). `scheduler` is passed to `dask.compute` (the
    default: Dask's current one: threads, processes, or a distributed Client).

    Example:
        >>> step = srcxform.dask.value_and_grad(loss, reduce="mean")
        >>> value, grad = step(w, X, y)       # X, y: dask arrays chunked by rows
    """
    if reduce not in REDUCTIONS:
        raise ValueError(
            f"srcxform.dask.value_and_grad: reduce={reduce!r} is not supported: only a sum "
            "or a mean over rows splits into the blocks' own losses added up; a loss that "
            "needs all rows at once (a max, a median, a normalization over the batch) "
            "does not, and has no data-parallel gradient here")
    return DataParallel(fn, reduce, wrt, scheduler)


def grad(fn: Callable, reduce: str = "mean", wrt: int | tuple = 0,
         scheduler: str | None = None) -> Callable:
    """The data-parallel gradient function of a loss over rows (see value_and_grad)."""
    both = value_and_grad(fn, reduce, wrt, scheduler)
    return lambda *args: both(*args)[1]


class DataParallel:
    """A loss over rows, its value and gradient computed block by block (value_and_grad)."""

    def __init__(self, fn, reduce, wrt, scheduler):
        self.fn = fn if isinstance(fn, Differentiable) else differentiable(fn, wrt=wrt)
        if self.fn.has_aux:
            raise TypeError("srcxform.dask.value_and_grad: has_aux is not supported: an "
                            "aux value of each block has no sum over blocks to return")
        self.reduce = reduce
        self.scheduler = scheduler
        self._checked = False  # whether the loss was seen to add up over rows

    def __call__(self, *args):
        """(value, gradient) of the loss over all rows of the Dask arrays in args."""
        return dask.compute(self.delayed(*args), scheduler=self.scheduler)[0]

    def delayed(self, *args):
        """The same (value, gradient), as a Dask Delayed: to compute with other work, or
        to persist."""
        data = _data_positions(args, self.fn.wrt)
        blocks = _row_blocks([args[i] for i in data])
        if not self._checked:
            _check_adds_up(self.fn, args, data, self.reduce, self.scheduler)
            self._checked = True
        # The non-data arguments are one node of the graph, which each block task reads.
        shared = dask.delayed(_split(args, data)[0], pure=True)
        parts = [dask.delayed(_block_part)(self.fn, self.reduce, data, shared, block)
                 for block in zip(*blocks)]
        return dask.delayed(_finished)(_tree_sum(parts), self.reduce)


def _finished(total, reduce):
    """The loss and its gradient from the blocks' parts added up: a mean's divided by the
    rows (its parts were weighted by theirs)."""
    rows, value, gradient = total
    if reduce == "mean":
        return value / rows, _scaled(gradient, 1.0 / rows)
    return value, gradient


def _data_positions(args, wrt):
    """The positions of the Dask arrays in args: the rows. The gradient is not taken wrt
    any of them (a gradient wrt data is one per row, nothing to add up)."""
    data = [i for i, a in enumerate(args) if isinstance(a, da.Array)]
    if not data:
        raise TypeError("srcxform.dask.value_and_grad: no argument is a Dask array: "
                        "pass the data as dask arrays chunked by rows")
    for i in (wrt,) if isinstance(wrt, int) else wrt:
        if i in data:
            raise TypeError(f"srcxform.dask.value_and_grad: argument {i} is wrt and a Dask "
                            "array: the gradient wrt data rows is one per row, not a sum "
                            "over blocks; differentiate wrt parameters (NumPy arrays)")
    return data


def _row_blocks(arrays):
    """Each array's blocks of rows, as delayed values: the first array's row chunks for
    all of them, and one chunk across their other axes."""
    rows = arrays[0].shape[0]
    for a in arrays:
        if a.ndim == 0 or a.shape[0] != rows or rows == 0:
            raise ValueError(f"srcxform.dask.value_and_grad: the data arrays need rows, "
                             f"the same number, got shapes {[x.shape for x in arrays]}")
    chunks = arrays[0].chunks[0]
    return [a.rechunk((chunks,) + tuple(-1 for _ in a.shape[1:])).to_delayed().ravel()
            for a in arrays]


def _split(args, data):
    """args as (the shared arguments, the data arguments), each in order."""
    return [a for i, a in enumerate(args) if i not in data], [args[i] for i in data]


def _block_part(fn, reduce, data, shared, block):
    """One block's (rows, value, gradient): for a mean, weighted by its rows, so that the
    parts add up to rows times the mean."""
    value, gradient = fn.value_and_grad(*_merged(shared, data, block))
    rows = len(block[0])
    weight = rows if reduce == "mean" else 1
    return rows, weight * np.asarray(value), _scaled(gradient, weight)


def _merged(shared, data, block):
    """The arguments of one call: the block's arrays at the data positions, the shared
    arguments, in order, at the others."""
    count = len(shared) + len(block)
    shared, block = iter(shared), iter(block)
    return [next(block) if i in data else next(shared) for i in range(count)]


def _scaled(tree, factor):
    """A gradient's structure with each leaf times factor, as NumPy values."""
    leaves, treedef = tree_flatten(tree)
    return tree_unflatten(treedef, [np.asarray(leaf) * factor for leaf in leaves])


def _added(*parts):
    """The sum of blocks' (rows, value, gradient) parts."""
    grads = [tree_flatten(gradient) for _, _, gradient in parts]
    leaves = [sum(column) for column in zip(*(g[0] for g in grads))]
    return (sum(rows for rows, _, _ in parts), sum(value for _, value, _ in parts),
            tree_unflatten(grads[0][1], leaves))


def _tree_sum(parts):
    """The parts added up by a tree of tasks, SPLIT_EVERY at a time: a depth of
    log(blocks) rather than one task receiving every block's gradient."""
    while len(parts) > 1:
        parts = [dask.delayed(_added)(*parts[i:i + SPLIT_EVERY])
                 for i in range(0, len(parts), SPLIT_EVERY)]
    return parts[0]


def _check_adds_up(fn, args, data, reduce, scheduler, rows=4):
    """Refuses a loss that is not the `reduce` of its rows: f on the first rows must equal
    f on two halves of them, added up (a mean: weighted). Cheap: it computes a few rows."""
    head = [a[:rows].compute(scheduler=scheduler) if i in data else a
            for i, a in enumerate(args)]
    n = len(head[data[0]])
    if n < 2:
        return  # one row: nothing to split
    halves = [[a[s] if i in data else a for i, a in enumerate(head)]
              for s in (slice(0, n // 2), slice(n // 2, n))]
    whole = _block_part(fn, reduce, data, *_split(head, data))
    added = _added(*(_block_part(fn, reduce, data, *_split(h, data)) for h in halves))
    scale = n if reduce == "mean" else 1  # a mean's parts are weighted by their rows
    tolerance = 1e-9 if np.result_type(whole[1]) == np.float64 else 1e-4
    for got, want in zip(tree_flatten((added[1], added[2]))[0],
                         tree_flatten((whole[1], whole[2]))[0]):
        if not np.allclose(got, want, rtol=tolerance, atol=tolerance * (1 + np.abs(want).max())):
            raise ValueError(
                f"srcxform.dask.value_and_grad: the loss is not a {reduce} over rows: on "
                f"the first {n} rows it is {whole[1] / scale!r}, but the {reduce} of its "
                f"values on their two halves is {added[1] / scale!r}. "
                "Only a sum or a mean over rows splits into blocks; compute a loss that "
                f"needs all rows at once (a max, a normalization over the batch) on the "
                "whole data instead")
