"""Selection and indexing ops: one_hot, argmax/argmin, sort/argsort, top_k, gather_nd,
tensor_scatter_nd_add/update, segment_sum and unsorted_segment_sum.

Most are composites of gather and scatter_add (ops/shape.py), whose gradients they
inherit, their indices checked by shape.checked_indices. The primitives here are those
with no such form: the index-valued argmax, argmin and argsort (no gradient), and a
scatter that overwrites. Compiled code calls srcxform.runtime.arrays for each; every
index read or written there is checked at run time.
"""

import math
import operator
from collections import namedtuple

import numpy as np

from srcxform.core.aval import Aval, axis_index, normalize_axis, size
from srcxform.core.dims import as_index, negative
from srcxform.core.dtypes import as_dtype
from srcxform.core.errors import (IndexArgumentError, TracingError, ValueArgumentError,
                                   shape_error, user_line)
from srcxform.ops.elementwise import (add, cast, equal, less, maximum, minimum, stop_gradient,
                                      where)
from srcxform.ops.shape import (FULL, Slice, check_indices, broadcast_to, checked_indices,
                                concat, gather, gather_p, getitem_p, reshape, scatter_add,
                                shape_argument, transpose)
from srcxform.core.primitive import primitive
from srcxform.ops.creation import convert_to_tensor, fitted, iota
from srcxform.ops.held_sizes import size_argument
from srcxform.ops.reduce import reduce_any, reduce_max, reduce_min
from srcxform.core.tensor import Value, as_value, holds_strong

# ----- argmax, argmin -----


def _arg_extreme_shape(x, *, axis, output_type):
    if x.dtype.kind not in "fiub":
        raise TypeError(f"expects a numeric input, got {x.dtype.name}")
    return Aval(x.shape[:axis] + x.shape[axis + 1:], output_type)


def _arg_extreme_impl(largest):
    def impl(x, axis, output_type):
        # TensorFlow's rule, as arrays.arg_extreme's: the first extreme that is not NaN,
        # 0 where all are NaN; an empty axis raises where there is an index to give.
        rest = x.shape[:axis] + x.shape[axis + 1:]
        if x.shape[axis] == 0 and math.prod(rest):
            raise ValueArgumentError(f"{'argmax' if largest else 'argmin'}: the axis is empty")
        if x.size == 0:
            return np.zeros(rest, output_type)
        nan = np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)
        filled = np.where(nan, -np.inf if largest else np.inf, x) if nan.any() else x
        best = (np.max if largest else np.min)(filled, axis=axis, keepdims=True)
        hits = (filled == best) & ~nan
        return np.argmax(hits, axis=axis).astype(output_type)

    return impl


def _arg_extreme_emit(largest):
    """arrays.arg_extreme's flat result in the output's shape: its one element where the
    output is a scalar (generated code keeps rank 0 values as scalars)."""
    call = f"arrays.arg_extreme(x, axis, {largest}, output_type)"
    return call + "[0]", f"flat = {call}\nout = flat.reshape(out_shape)"


def _arg_extreme_primitive(name, largest):
    scalar, shaped = _arg_extreme_emit(largest)
    return primitive(name, "opaque", _arg_extreme_impl(largest), _arg_extreme_shape, shaped,
                     nondiff=True, emit_for=lambda x, out, **params: out.ndim == 0 and scalar,
                     raises=True)


argmax_p = _arg_extreme_primitive("argmax", True)
argmin_p = _arg_extreme_primitive("argmin", False)


def _arg_extreme(p, input, axis, output_type, op):
    x = as_value(input, op)
    if x.ndim == 0:
        raise shape_error(f"{op}: the input must have at least one axis, got a scalar")
    axis = normalize_axis(0 if axis is None else axis, x.ndim, op)
    output_type = as_dtype(output_type)
    if output_type not in (np.int32, np.int64):
        raise TypeError(f"{op}: output_type must be int32 or int64, got {output_type}")
    return p.bind(x, axis=axis, output_type=output_type)


def argmax(input, axis=None, output_type=np.int64, name=None):
    """The index of the largest value along `axis` (default 0), as tf.math.argmax: the
    first of ties, NaNs skipped (0 if all are NaN), int64 unless output_type says int32.
    An index has no gradient: the tape gives None."""
    return _arg_extreme(argmax_p, input, axis, output_type, "argmax")


def argmin(input, axis=None, output_type=np.int64, name=None):
    """The index of the smallest value along `axis`, as argmax. No gradient (None)."""
    return _arg_extreme(argmin_p, input, axis, output_type, "argmin")


# ----- sort, argsort, top_k -----


def _argsort_shape(x, *, descending):
    if x.dtype.kind not in "fiu" or x.ndim == 0:
        raise TypeError(f"expects a numeric input of rank 1 or more, got {x.short()}")
    return Aval(x.shape, np.dtype(np.int32))


def _argsort_impl(x, descending):
    if not descending:
        return np.argsort(x, axis=-1, kind="stable")
    # Descending and stable (ties keep their order): sort the reversed rows ascending.
    n = x.shape[-1]
    return n - 1 - np.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1]


# The permutation that sorts the last axis, ties in their order (TensorFlow's stable
# sort, which its unstable one also gives); NaNs last ascending, first descending.
argsort_p = primitive("argsort", "opaque", _argsort_impl, _argsort_shape,
                      "arrays.argsort(x, descending)", nondiff=True)


def _direction(direction, op):
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"{op}: direction must be 'ASCENDING' or 'DESCENDING', got "
                         f"{direction!r}")
    return direction == "DESCENDING"


def _last_axis_order(x, axis, descending, op):
    """x with `axis` moved last, the permutation sorting that axis, and the perm back."""
    axis = normalize_axis(axis, x.ndim, op)
    perm = tuple(i for i in range(x.ndim) if i != axis) + (axis,)
    moved = transpose(x, perm)
    return moved, argsort_p.bind(moved, descending=descending), tuple(np.argsort(perm))


def _take_last(x, order):
    """x's elements along its last axis in `order` (a gather per row: its gradient
    scatters back through the permutation)."""
    return gather(x, order, axis=-1, batch_dims=x.ndim - 1)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The int32 indices that sort `values` along `axis` (tf.argsort); ties keep their
    order whether or not `stable` is asked for. No gradient (None)."""
    x = as_value(values, "argsort")
    _, order, back = _last_axis_order(x, axis, _direction(direction, "argsort"), "argsort")
    return transpose(order, back)


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """`values` sorted along `axis` (tf.sort); its gradient goes back through the
    permutation to the element each output came from."""
    x = as_value(values, "sort")
    moved, order, back = _last_axis_order(x, axis, _direction(direction, "sort"), "sort")
    return transpose(_take_last(moved, order), back)


TopKV2 = namedtuple("TopKV2", ["values", "indices"])


def top_k(input, k=1, sorted=True, name=None):
    """The k largest values along the last axis and their int32 indices (tf.math.top_k),
    largest first, the lower index first among ties. Always sorted (TensorFlow leaves
    the order of sorted=False unspecified). The gradient flows through the values."""
    x = as_value(input, "top_k")
    if isinstance(k, (bool, np.bool_)):  # operator.index would take True as 1
        raise TypeError(f"top_k: k must be an int, got {k!r}")
    k = as_index(k)
    if x.ndim == 0 or not 0 <= k <= x.shape[-1]:
        raise shape_error(f"top_k: k={k} must be between 0 and the last axis' size, for "
                          f"{x.aval.short()}")
    order = argsort_p.bind(x, descending=True)
    order = getitem_p.bind(order, index=(FULL,) * (x.ndim - 1) + (Slice(None, k, None),))
    return TopKV2(_take_last(x, order), order)


# ----- one_hot -----


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """on_value where the new axis' position is the index, off_value elsewhere
    (tf.one_hot): a new axis of `depth` at `axis` (default last). An index outside
    [0, depth) gives a row of off_value. The dtype is `dtype`, else on_value's or
    off_value's, else float32. No gradient, for on_value and off_value too."""
    ids = as_value(indices, "one_hot")
    if ids.dtype.kind not in "iu":
        raise TypeError(f"one_hot: indices must be integers, got {ids.aval.short()}")
    depth = size_argument(depth)
    try:
        if isinstance(depth, (bool, np.bool_)):
            raise TypeError
        depth = as_index(depth)
    except TypeError:
        raise TypeError(f"one_hot: depth must be an int, got {depth!r}") from None
    if negative(depth):
        raise ValueError(f"one_hot: depth must be 0 or more, got {depth}")
    axis = -1 if axis is None else axis_index(axis, axis, "one_hot")
    axis = ids.ndim if axis == -1 else axis
    if not 0 <= axis <= ids.ndim:
        raise ValueError(f"one_hot: axis {axis} is out of range for indices of rank "
                         f"{ids.ndim}")
    given = [as_value(v, "one_hot") for v in (on_value, off_value) if v is not None]
    strong = [v.dtype for v in given if not v.aval.weak]
    if len(set(strong)) > 1:
        raise TypeError(f"one_hot: on_value ({strong[0].name}) and off_value "
                        f"({strong[1].name}) must have one dtype")
    # A Python number alone counts as TensorFlow converts it (int32, float32).
    weak = {"b": np.bool_, "i": np.int32, "f": np.float32}.get(given[0].dtype.kind) \
        if given else np.float32
    dtype = as_dtype(dtype) or (strong[0] if strong else np.dtype(weak))
    on = fitted(1 if on_value is None else on_value, dtype, "one_hot")
    off = fitted(0 if off_value is None else off_value, dtype, "one_hot")
    # Positions in int64: uint8's would wrap at 256 (a second 1 in the row).
    positions = reshape(iota(depth, np.int64), (depth,) + (1,) * (ids.ndim - axis))
    hits = equal(reshape(cast(ids, np.int64), ids.shape[:axis] + (1,) + ids.shape[axis:]),
                 positions)
    return where(hits, stop_gradient(on), stop_gradient(off))


# ----- index vectors -----


def _nd_rows(indices, shape, op):
    """The row numbers that index vectors (indices' last axis, of length K) name in a table
    of shape's first K axes flattened, each component checked against its axis; and K."""
    k = indices.shape[-1] if indices.ndim else None
    if indices.dtype.kind not in "iu" or k is None or not 1 <= k <= len(shape):
        raise shape_error(f"{op}: indices must be integers with a last axis of 1 to "
                          f"{len(shape)} (the rank of the indexed tensor), got "
                          f"{indices.aval.short()}")
    flat = reshape(indices, (-1, k))
    rows = None
    for i in range(k):
        column = checked_indices(getitem_p.bind(flat, index=(FULL, i)), shape[i], op, "raise")
        stride = size(shape[i + 1:k])
        term = column if stride == 1 else column * cast(stride, np.int64)
        rows = term if rows is None else add(rows, term)
    return rows, k


def _table(x, k):
    """x with its first k axes flattened into rows."""
    return reshape(x, (size(x.shape[:k]),) + tuple(x.shape[k:]))


# ----- gather_nd, tensor_scatter_nd_add / update -----


def gather_nd(params, indices, batch_dims=0, name=None):
    """The slices of params that index vectors name (tf.gather_nd): indices' last axis
    holds K indices into params' first K axes (after `batch_dims` batch axes, which
    params and indices share); each must be in range (no negative ones, as TensorFlow).
    The gradient adds back into the slices read."""
    x, ids = as_value(params, "gather_nd"), as_value(indices, "gather_nd")
    b = operator.index(batch_dims)
    batch = tuple(x.shape[:b])
    if b:
        x, ids = _unbatched(x, ids, b)
    rows, k = _nd_rows(ids, x.shape, "gather_nd")
    out = gather_p.bind(_table(x, k), rows)
    out = reshape(out, ids.shape[:-1] + tuple(x.shape[k:]))
    return out if not b else reshape(out, batch + out.shape[1:])


def _unbatched(x, ids, b):
    """gather_nd's batch axes folded into one index component: x with its b batch axes
    as one, and ids with each vector led by its batch element's number."""
    batch = tuple(x.shape[:b])
    if b < 0 or b >= min(x.ndim, ids.ndim) or tuple(ids.shape[:b]) != batch:
        raise shape_error(f"gather_nd: batch_dims={b} must be below both ranks, and params "
                          f"{x.aval.short()} and indices {ids.aval.short()} must share "
                          f"those axes")
    n = size(batch)
    ids = reshape(cast(ids, np.int64), (n,) + tuple(ids.shape[b:]))  # n past uint8's range
    numbers = reshape(iota(n, np.int64), (n,) + (1,) * (ids.ndim - 1))
    numbers = broadcast_to(numbers, tuple(ids.shape[:-1]) + (1,))
    return reshape(x, (n,) + tuple(x.shape[b:])), concat([numbers, ids], -1)


def tensor_scatter_nd_add(tensor, indices, updates, name=None):
    """tensor with `updates` added at the slices that index vectors name
    (tf.tensor_scatter_nd_add): repeated indices add up. Indices must be in range."""
    x, rows, k, upd = _scatter_nd_args(tensor, indices, updates, "tensor_scatter_nd_add")
    return x + reshape(scatter_add(upd, rows, size(x.shape[:k])), x.shape)


def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    """tensor with the slices that index vectors name replaced by `updates`
    (tf.tensor_scatter_nd_update): of repeated indices the last update stays, as on
    TensorFlow's CPU. The gradient is zero for the replaced slices of tensor, and for
    the updates each one's slice of it where it stayed, zero where a later one replaced
    it (JAX's; TensorFlow gives a replaced update its slice too)."""
    x, rows, k, upd = _scatter_nd_args(tensor, indices, updates, "tensor_scatter_nd_update")
    return reshape(scatter_set_p.bind(_table(x, k), rows, upd), x.shape)


def tensor_scatter_nd_sub(tensor, indices, updates, name=None):
    """tensor with `updates` subtracted at the slices that index vectors name
    (tf.tensor_scatter_nd_sub), as tensor_scatter_nd_add adds them."""
    x, rows, k, upd = _scatter_nd_args(tensor, indices, updates, "tensor_scatter_nd_sub")
    return x - reshape(scatter_add(upd, rows, size(x.shape[:k])), x.shape)


def tensor_scatter_nd_max(tensor, indices, updates, name=None):
    """tensor with each slice that index vectors name the elementwise maximum of itself and
    the updates given for it (tf.tensor_scatter_nd_max); repeated indices take the
    maximum of all. The gradient is shared equally among ties of the updates."""
    return _scatter_nd_extreme(tensor, indices, updates, True, "tensor_scatter_nd_max")


def tensor_scatter_nd_min(tensor, indices, updates, name=None):
    """As tensor_scatter_nd_max, with minima (tf.tensor_scatter_nd_min)."""
    return _scatter_nd_extreme(tensor, indices, updates, False, "tensor_scatter_nd_min")


def _scatter_nd_extreme(tensor, indices, updates, largest, op):
    x, rows, k, upd = _scatter_nd_args(tensor, indices, updates, op)
    if x.dtype.kind not in "fiu":
        raise TypeError(f"{op}: tensor must hold numbers, got {x.aval.short()}")
    table = _table(x, k)
    found, present = _extremes(upd, rows, table.shape[0], largest)
    return reshape(where(present, (maximum if largest else minimum)(table, found), table),
                   x.shape)


def scatter_nd(indices, updates, shape, name=None):
    """Zeros of `shape` (updates' dtype) with `updates` added at the slices that index
    vectors name (tf.scatter_nd): repeated indices add up, as TensorFlow's."""
    # Python numbers convert as TensorFlow's (float32, int32); arrays keep their dtype.
    upd = as_value(updates, "scatter_nd") if isinstance(updates, Value) else \
        convert_to_tensor(updates)
    dims = shape_argument(shape, "scatter_nd")
    zeros = broadcast_to(cast(0, upd.dtype), dims)
    return tensor_scatter_nd_add(zeros, indices, upd)


def _scatter_nd_args(tensor, indices, updates, op):
    x, ids = as_value(tensor, op), as_value(indices, op)
    # A list of Python numbers (traced ones too: a loop's int) converts in tensor's dtype,
    # as TensorFlow converts an op's inputs that share a type.
    upd = convert_to_tensor(updates, x.dtype) if isinstance(updates, list) \
        and not holds_strong(updates) else as_value(updates, op)
    if upd.dtype != x.dtype:
        if not upd.aval.weak:
            raise TypeError(f"{op}: updates {upd.aval.short()} must have the dtype of "
                            f"tensor {x.aval.short()}")
        upd = cast(upd, x.dtype)
    rows, k = _nd_rows(ids, x.shape, op)
    want = tuple(ids.shape[:-1]) + tuple(x.shape[k:])
    if tuple(upd.shape) != want:
        raise shape_error(f"{op}: updates {upd.aval.short()} must have the shape {want} "
                          f"(indices' leading axes, then tensor's after the {k} indexed)")
    return x, rows, k, reshape(upd, (size(ids.shape[:-1]),) + tuple(x.shape[k:]))


def _scatter_set_shape(x, indices, updates):
    if indices.dtype.kind not in "iu" or indices.ndim != 1:
        raise TypeError(f"indices must be a vector of integers, got {indices.short()}")
    if updates.shape != indices.shape + x.shape[1:] or updates.dtype != x.dtype:
        raise ValueError(f"updates {updates.short()} do not fit rows of {x.short()}")
    return Aval(x.shape, x.dtype)


def _scatter_set_impl(x, indices, updates):
    check_indices(indices, x.shape[0], "tensor_scatter_nd_update")
    out = x.copy()
    for k, i in enumerate(indices):  # in order: the last of repeated indices stays
        out[i] = updates[k]
    return out


def _scatter_set_vjp(g, out, x, indices, updates):
    # Which updates stayed: update k stayed where the scatter of the numbers k (int64: an
    # int8 index's dtype wraps past 127 updates) leaves k.
    k = iota(indices.shape[0], np.int64)
    last = scatter_set_p.bind(iota(x.shape[0], np.int64), indices, k)
    stayed = reshape(equal(gather_p.bind(last, indices), k), (-1,) + (1,) * (g.ndim - 1))
    zero = cast(0, g.dtype)
    return (scatter_set_p.bind(g, indices, broadcast_to(zero, updates.shape)), None,
            where(stayed, gather_p.bind(g, indices), zero))


# x with rows at indices replaced by those of updates, the last of repeats staying.
scatter_set_p = primitive("scatter_set", "opaque", _scatter_set_impl, _scatter_set_shape,
                          "arrays.scatter_set(x, indices, updates)", vjp=_scatter_set_vjp,
                          raises=True)


# ----- segment sums -----


def _segments(data, segment_ids, num_segments, op):
    """data as a table of rows, the vector of their segment ids (checked below
    num_segments at each call; a negative one passes, its row dropped), and the number."""
    x, ids = as_value(data, op), as_value(segment_ids, op)
    n = as_index(size_argument(num_segments))  # tf.shape(x)[0] // 2 too
    r = ids.ndim
    if ids.dtype.kind not in "iu" or tuple(x.shape[:r]) != tuple(ids.shape):
        raise shape_error(f"{op}: segment_ids {ids.aval.short()} must be integers whose "
                          f"shape begins data's, {x.aval.short()}")
    if x.dtype.kind not in "fiu":
        raise TypeError(f"{op}: data must be numbers, got {x.aval.short()}")
    return _table(x, r), checked_indices(reshape(ids, (-1,)), n, op, negatives="pass"), n


def _summed(table, ids, n):
    # Dropped slices go to an extra row past the segments, cut off at the end.
    rows = where(less(ids, 0), cast(n, ids.dtype), ids)
    return getitem_p.bind(scatter_add(table, rows, n + 1), index=(Slice(None, n, None),))


def _extremes(table, ids, n, largest):
    """Each of the n segments' largest (or smallest) row of table, and whether it has one.
    A reduction over an (n, rows, ...) mask of which row is in which segment, so the
    gradient is reduce_max's, shared equally among ties (as TensorFlow's segment ops)."""
    hits = equal(reshape(iota(n, np.int64), (n, 1)),  # ids checked: int64 as these
                 reshape(ids, (1, ids.shape[0])))
    hits = reshape(hits, tuple(hits.shape) + (1,) * (table.ndim - 1))
    # Outside its segment a row counts as -inf (inf) for floats, the extreme int for ints.
    bound = np.inf if table.dtype.kind == "f" else np.iinfo(table.dtype).max
    bound = -np.inf if largest and bound == np.inf else \
        np.iinfo(table.dtype).min if largest else bound
    spread = where(hits, reshape(table, (1,) + tuple(table.shape)), cast(bound, table.dtype))
    found = (reduce_max if largest else reduce_min)(spread, axis=1)
    return found, reduce_any(hits, axis=1)


def _empty(dtype, largest, lowest):
    """An empty segment's value: the dtype's lowest (largest) or highest, else 0."""
    if not lowest:
        return cast(0, dtype)
    info = np.finfo if dtype.kind == "f" else np.iinfo
    return cast(info(dtype).min if largest else info(dtype).max, dtype)


def _segment_reduce(kind, data, segment_ids, num_segments, op):
    """The segments' sums, means, maxima or minima (kind); an empty one is 0, or for an
    unsorted max (min) the dtype's lowest (highest) value, as TensorFlow's."""
    table, ids, n = _segments(data, segment_ids, num_segments, op)
    if kind == "sum":
        return _summed(table, ids, n)
    if kind == "mean":
        if table.dtype.kind != "f":
            raise TypeError(f"{op}: data must be floats, got {table.aval.short()}")
        counts = _summed(broadcast_to(cast(1, table.dtype), ids.shape), ids, n)
        counts = reshape(counts, tuple(counts.shape) + (1,) * (table.ndim - 1))
        one = cast(1, table.dtype)
        return _summed(table, ids, n) / where(equal(counts, 0), one, counts)
    found, present = _extremes(table, ids, n, kind == "max")
    return where(present, found, _empty(table.dtype, kind == "max", op.startswith("unsorted")))


def _sorted_count(segment_ids, op):
    """The number of segments sorted ids name, the last + 1. That number is the ids'
    values, so traced ids (whose values the trace does not know) raise TracingError."""
    ids = as_value(segment_ids, op)
    if ids._trace is not None:
        raise TracingError(f"{user_line()}\n  {op}: its number of segments is the traced "
                           "segment_ids' last value, known only at run time; use "
                           f"srcxform.math.unsorted_{op}(data, ids, num_segments)")
    values = ids._array
    if values.ndim != 1:
        raise shape_error(f"{op}: segment_ids must be a vector, got {ids.aval.short()}")
    if values.size and values[0] < 0:
        raise IndexArgumentError(f"{op}: segment id {values[0]} is negative")
    if np.any(np.diff(values) < 0):
        raise IndexArgumentError(f"{op}: segment ids are not increasing")
    return int(values[-1]) + 1 if values.size else 0


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """The sums of data's slices that share a segment id (tf.math.unsorted_segment_sum):
    segment_ids' shape is a prefix of data's; the result has num_segments rows. A
    negative id drops its slice; one at or past num_segments raises, as TensorFlow's
    CPU kernel does. The gradient gathers each slice's segment row."""
    return _segment_reduce("sum", data, segment_ids, num_segments, "unsorted_segment_sum")


def unsorted_segment_max(data, segment_ids, num_segments, name=None):
    """The largest of data's slices that share a segment id, elementwise
    (tf.math.unsorted_segment_max); an empty segment holds the dtype's lowest value
    (float32's -3.4e38, not -inf). Ids as unsorted_segment_sum's; the gradient is shared
    equally among ties, as TensorFlow's."""
    return _segment_reduce("max", data, segment_ids, num_segments, "unsorted_segment_max")


def unsorted_segment_min(data, segment_ids, num_segments, name=None):
    """The smallest of data's slices that share a segment id
    (tf.math.unsorted_segment_min); an empty segment holds the dtype's highest value."""
    return _segment_reduce("min", data, segment_ids, num_segments, "unsorted_segment_min")


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """The means of data's slices (floats) that share a segment id
    (tf.math.unsorted_segment_mean); an empty segment is 0."""
    return _segment_reduce("mean", data, segment_ids, num_segments, "unsorted_segment_mean")


def segment_sum(data, segment_ids, name=None):
    """unsorted_segment_sum for sorted ids (tf.math.segment_sum), the number of segments
    being the last id + 1. That number is the ids' values, so traced ids (whose values
    the trace does not know) raise TracingError: give them as a constant, or use
    unsorted_segment_sum with num_segments."""
    n = _sorted_count(segment_ids, "segment_sum")
    return _segment_reduce("sum", data, segment_ids, n, "segment_sum")


def segment_max(data, segment_ids, name=None):
    """unsorted_segment_max for sorted ids (tf.math.segment_max), their count as
    segment_sum's; an empty segment is 0, as TensorFlow's."""
    n = _sorted_count(segment_ids, "segment_max")
    return _segment_reduce("max", data, segment_ids, n, "segment_max")


def segment_min(data, segment_ids, name=None):
    """unsorted_segment_min for sorted ids (tf.math.segment_min), their count as
    segment_sum's; an empty segment is 0, as TensorFlow's."""
    n = _sorted_count(segment_ids, "segment_min")
    return _segment_reduce("min", data, segment_ids, n, "segment_min")


def segment_mean(data, segment_ids, name=None):
    """unsorted_segment_mean for sorted ids (tf.math.segment_mean), their count as
    segment_sum's; an empty segment is 0."""
    n = _sorted_count(segment_ids, "segment_mean")
    return _segment_reduce("mean", data, segment_ids, n, "segment_mean")
