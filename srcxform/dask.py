"""Data-parallel gradients over Dask arrays: `value_and_grad(f, reduce="mean")`.

A loss that is a sum or a mean over rows splits into the same loss on each block of rows:
one task per block runs f's compiled kernel, and a tree of tasks adds the blocks' parts up
(weighted by rows for a mean). Only the blocks travel as Dask chunks; the other arguments
(the parameters) are put into the graph once per call, not once per block, or, when large
and a distributed Client runs the graph, scattered to every worker once per call.
`train_step` adds one optimizer update of Variables on the client: a data-parallel
training loop. Dask is imported here only: `pip install srcxform[dask]`.
"""

import math
from collections.abc import Callable
from typing import Any

import dask
import dask.array as da
import numpy as np
from dask.base import get_scheduler

from srcxform.api import Differentiable, differentiable
from srcxform.core.tensor import Variable
from srcxform.core.tree import tree_flatten, tree_unflatten

REDUCTIONS = ("sum", "mean")
SPLIT_EVERY = 8  # parts added per task of the tree reduction (dask.array's default)
SCATTER_BYTES = 2**20  # shared arguments larger than this are scattered, not in the graph


def value_and_grad(fn: Callable, reduce: str = "mean", wrt: int | tuple = 0,
                   scheduler: Any = None, scatter_bytes: int = SCATTER_BYTES) -> Callable:
    """The data-parallel (value, gradient) function of a loss over rows.

    `fn(*args)` is the loss of the rows it is given: their sum (`reduce="sum"`) or their
    mean (`reduce="mean"`); a Python function, or a `srcxform.differentiable` (whose own
    `wrt` then applies). Arguments that are Dask arrays are data, split into blocks of
    rows (chunked along axis 0 only; their other axes are made one chunk); every other
    argument is the same for all blocks. The result is the loss of all the rows and its
    gradient wrt `wrt`, as NumPy values, equal to `srcxform.value_and_grad(fn)` on the
    whole arrays (to float rounding). `scheduler` is passed to `dask.compute` (the
    default: Dask's current one: threads, processes, or a distributed Client). When that
    is a distributed Client and the other arguments take more than `scatter_bytes`, they
    are sent to every worker once per call (`client.scatter(..., broadcast=True)`) and
    the graph holds their future instead of them.

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
    return DataParallel(fn, reduce, wrt, scheduler, scatter_bytes)


def grad(fn: Callable, reduce: str = "mean", wrt: int | tuple = 0, scheduler: Any = None,
         scatter_bytes: int = SCATTER_BYTES) -> Callable:
    """The data-parallel gradient function of a loss over rows (see value_and_grad)."""
    both = value_and_grad(fn, reduce, wrt, scheduler, scatter_bytes)
    return lambda *args: both(*args)[1]


def train_step(loss_fn: Callable, optimizer: Any, variables: Any, reduce: str = "mean",
               scheduler: Any = None, scatter_bytes: int = SCATTER_BYTES) -> Callable:
    """A data-parallel training step: `step(*data)` updates `variables` once and returns
    the loss of all the rows before the update.

    `loss_fn(params, *data)` is the loss of the rows it is given (their `reduce`, as in
    value_and_grad), `params` having the structure of `variables` (a Variable, or a list,
    tuple or dict of them, nested) with their current values as NumPy arrays. Each step
    computes the gradient wrt `params` block by block on the workers, adds the blocks'
    gradients up in a tree (weighted by rows for a mean), and applies ONE update here with
    `optimizer` (a `srcxform.optimizers` or `srcxform.keras.optimizers` optimizer, whose
    state stays in this process). The Variables end as the single-process loop leaves
    them, to float rounding::

        with tf.GradientTape() as tape:
            loss = loss_fn(variables, X, y)
        optimizer.apply(tape.gradient(loss, variables), variables)

    Example:
        >>> params = {"w": tf.Variable(np.zeros(20)), "b": tf.Variable(0.0)}
        >>> step = srcxform.dask.train_step(loss, tf.optimizers.Adam(0.01), params)
        >>> for epoch in range(10):
        ...     loss_value = step(X, y)            # X, y: dask arrays chunked by rows
    """
    leaves, treedef = tree_flatten(variables)
    if not leaves or not all(isinstance(v, Variable) for v in leaves):
        raise TypeError(f"srcxform.dask.train_step: `variables` must be a Variable or a "
                        f"structure of Variables (updated in place each step), got "
                        f"{sorted({type(v).__name__ for v in leaves})}")
    if not callable(getattr(optimizer, "apply", None)):
        raise TypeError(f"srcxform.dask.train_step: `optimizer` must be a "
                        f"srcxform.optimizers optimizer, got a {type(optimizer).__name__}")
    if isinstance(loss_fn, Differentiable) and loss_fn.wrt not in (0, (0,)):
        raise TypeError(f"srcxform.dask.train_step: the loss is differentiated wrt "
                        f"{loss_fn.wrt!r}; a training step needs wrt=0, its parameters")
    gradient = value_and_grad(loss_fn, reduce, 0, scheduler, scatter_bytes)

    def step(*data):
        """The loss of all the rows of data; the Variables take one optimizer step."""
        params = tree_unflatten(treedef, [v.numpy() for v in leaves])
        value, grads = gradient(params, *data)
        optimizer.apply(grads, variables)
        return value

    return step


class DataParallel:
    """A loss over rows, its value and gradient computed block by block (value_and_grad)."""

    def __init__(self, fn, reduce, wrt, scheduler, scatter_bytes=SCATTER_BYTES):
        self.fn = fn if isinstance(fn, Differentiable) else differentiable(fn, wrt=wrt, device="cpu")
        if self.fn.has_aux:
            raise TypeError("srcxform.dask.value_and_grad: has_aux is not supported: an "
                            "aux value of each block has no sum over blocks to return")
        self.reduce = reduce
        self.scheduler = scheduler
        self.scatter_bytes = scatter_bytes
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
        shared = _shared_node(_split(args, data)[0], self.scheduler, self.scatter_bytes)
        parts = [dask.delayed(_block_part)(self.fn, self.reduce, data, shared, block)
                 for block in zip(*blocks)]
        return dask.delayed(_finished)(_tree_sum(parts), self.reduce)


def _shared_node(shared, scheduler, scatter_bytes):
    """The non-data arguments as one node, which each block task reads: in the graph, or,
    when larger than scatter_bytes and a distributed Client runs it, a future of them
    already on every worker (sent once, directly, rather than through the scheduler)."""
    client = _distributed_client(scheduler)
    size = sum(np.asarray(leaf).nbytes for leaf in tree_flatten(shared)[0])
    if client is not None and size > scatter_bytes:
        return client.scatter([shared], broadcast=True)[0]  # the list as one object
    return dask.delayed(shared, pure=True)


def _distributed_client(scheduler):
    """The distributed Client that dask.compute(scheduler=scheduler) runs on, or None."""
    try:
        from distributed import Client
    except ImportError:
        return None
    found = getattr(get_scheduler(scheduler=scheduler), "__self__", None)  # a Client's get
    return found if isinstance(found, Client) else None


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
    for a in arrays:
        if a.ndim and any(math.isnan(n) for n in a.chunks[0]):
            raise ValueError(f"srcxform.dask.value_and_grad: a data array of shape {a.shape} "
                             "has blocks of unknown sizes (a boolean mask makes them): call "
                             "its compute_chunk_sizes() first")
    rows = arrays[0].shape[0]
    for a in arrays:
        if a.ndim == 0 or a.shape[0] != rows or rows == 0:
            raise ValueError(f"srcxform.dask.value_and_grad: the data arrays need rows, "
                             f"the same number, got shapes {[x.shape for x in arrays]}")
    chunks = arrays[0].chunks[0]
    # A block of no rows is left out: its mean would be NaN, weighted by 0 rows.
    kept = [i for i, n in enumerate(chunks) if n]
    return [a.rechunk((chunks,) + tuple(-1 for _ in a.shape[1:])).to_delayed().ravel()[kept]
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
