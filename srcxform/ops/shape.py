"""Shape primitives (reshape, transpose, broadcast_to, indexing, gather, concat) and the
composites built on them (expand_dims, squeeze, stack, tile).

Their emit templates are array expressions over the input and param names.
"""

import functools
from dataclasses import dataclass

import numpy as np

from srcxform.core.aval import (Aval, as_size, axis_index, broadcast_shapes, dims_equal, is_one,
                                is_zero, normalize_axes, normalize_axis, normalize_slice,
                                same_dim, same_shape, size, slice_length, spans)
from srcxform.core import recording
from srcxform.core.dims import Dim, as_index, concrete, negative, symbol_text
from srcxform.core.dtypes import promote, settled_of
from srcxform.core.primitive import checked_python_ints
from srcxform.core.errors import IndexArgumentError, TracingError, shape_error
from srcxform.core.errors import user_line
from srcxform.core.ir import Lit, Var
from srcxform.ops.elementwise import (add, add_p, cast, cast_p, less, multiply, multiply_p,
                                      negative_p, subtract_p, where)
from srcxform.ops.held_sizes import size_argument, sizes_held
from srcxform.core.primitive import primitive
from srcxform.core.tensor import Tensor, Value, as_value


@dataclass(frozen=True, slots=True)
class Slice:
    """A hashable slice (Python's is not hashable before 3.12), printed as `1:-1:2`."""

    start: int | None
    stop: int | None
    step: int | None

    def __str__(self):
        text = lambda v: "" if v is None else symbol_text(v)
        step = "" if self.step is None else f":{text(self.step)}"
        return f"{text(self.start)}:{text(self.stop)}{step}"

    def to_slice(self):
        return slice(self.start, self.stop, self.step)


FULL = Slice(None, None, None)


def _numpy_index(index):
    return tuple(i.to_slice() if isinstance(i, Slice) else i for i in index)


# ----- reshape, transpose, broadcast -----


def _reshape_shape(x, *, shape):
    if any(map(negative, shape)):  # (n - 3, 0) of 0 elements, at n = 0
        raise ValueError(f"negative dimension in shape {shape}")
    if size(shape) != size(x.shape):
        raise ValueError(f"cannot reshape {size(x.shape)!r} elements into shape {shape}")
    return Aval(shape, x.dtype, x.weak)


def _transpose_shape(x, *, perm):
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"perm {perm} is not a permutation of the {x.ndim} axes")
    return Aval(tuple(x.shape[p] for p in perm), x.dtype, x.weak)


def _broadcast_to_shape(x, *, shape):
    if any(map(negative, shape)):  # a size computed at run time (n - 4) too, guarded
        raise ValueError(f"negative dimension in shape {shape}")
    if len(shape) < x.ndim or broadcast_shapes(x.shape, shape) != tuple(shape):
        raise ValueError(f"cannot broadcast to shape {shape}")
    return Aval(tuple(shape), x.dtype, x.weak)


def _reshape_as_index(x, out, *, shape):
    """A reshape that only drops or inserts dims of 1 as an index of x (`t[0]`, `t[:, None]`):
    a view for any layout, where ascontiguousarray copies a strided x and compiles more
    slowly. None for any other reshape."""
    index, i, j = [], 0, 0
    while i < x.ndim or j < out.ndim:
        if i < x.ndim and j < out.ndim and same_dim(x.shape[i], out.shape[j]):
            index.append(":")
            i, j = i + 1, j + 1
        elif i < x.ndim and is_one(x.shape[i]):
            index.append("0")
            i += 1
        elif j < out.ndim and is_one(out.shape[j]):
            index.append("None")
            j += 1
        else:
            return None
    while index and index[-1] == ":":
        index.pop()
    return f"x[{', '.join(index)}]" if index and x.ndim and out.ndim else None


reshape_p = primitive("reshape", "structural", lambda x, shape: np.reshape(x, shape),
                      _reshape_shape, "np.ascontiguousarray(x).reshape(shape)",
                      vjp=lambda g, out, x, *, shape: (reshape(g, x.shape),),
                      same_aval_is_identity=True, rearranges=True,
                      emit_for=_reshape_as_index, batch=lambda flags, avals, *, shape: lambda x: (
                          reshape_p.bind(x, shape=x.shape[:1] + tuple(shape))))
transpose_p = primitive("transpose", "structural", lambda x, perm: np.transpose(x, perm),
                        _transpose_shape, "arrays.transpose(x, perm)",
                        vjp=lambda g, out, x, *, perm: (transpose(g, np.argsort(perm)),),
                        rearranges=True, batch=lambda flags, avals, *, perm: lambda x: (
                            transpose_p.bind(x, perm=(0,) + tuple(p + 1 for p in perm))))
# Broadcasting is elementwise work: in a loop nest it is a load with some indices fixed at
# 0. Its cotangent is summed back by backprop, which unbroadcasts everything.
broadcast_to_p = primitive("broadcast_to", "elementwise",
                           lambda x, shape: np.broadcast_to(x, shape), _broadcast_to_shape,
                           "x", vjp=lambda g, out, x, *, shape: (g,), same_aval_is_identity=True,
                           is_broadcast=True)

# ----- indexing -----


def _getitem_shape(x, *, index):
    out, axis = [], 0
    for item in index:
        if item is None:
            out.append(1)
            continue
        n = x.shape[axis]
        if isinstance(item, Slice):
            out.append(slice_length(n, item.to_slice()))
        elif not -n <= item < n:
            raise IndexError(f"index {item} is out of bounds for axis {axis} of size {n!r}")
        axis += 1
    return Aval(tuple(out) + tuple(x.shape[axis:]), x.dtype, x.weak)


def _embed_shape(g, *, shape, index):
    return Aval(tuple(shape), g.dtype)


def _embed_impl(g, shape, index):
    out = np.zeros(shape, g.dtype)
    out[_numpy_index(index)] = g
    return out


def _embed_form(g, out, **params):
    """A scalar g is stored; a scalar made of g (x[None]'s transpose: g of ones) is its
    element, generated code keeping rank 0 as scalars (Numba has no 0-d zeros to fill)."""
    if out.ndim == 0:
        return f"g[{', '.join(['0'] * g.ndim)}]" if g.ndim else "g"
    return g.ndim == 0 and "out = arrays.zeros(out_shape, out_dtype)\nout[index] = g"


# A scalar given axes (x[None]) is an array made: generated code keeps rank 0 as scalars.
getitem_p = primitive("getitem", "structural", lambda x, index: x[_numpy_index(index)],
                      _getitem_shape, "x[index]", emit_for=lambda x, out, **params: (
                          x.ndim == 0 and out.ndim > 0
                          and "out = arrays.empty(out_shape, out_dtype)\nout[...] = x"),
                      vjp=lambda g, out, x, *, index: (embed(g, x.shape, index),),
                      rearranges=True, selects=True, batch=lambda flags, avals, *, index: lambda x: (
                          getitem_p.bind(x, index=(FULL,) + tuple(index))))
# getitem's transpose: zeros of `shape` with g written at `index`.
# An array g is copied by a runtime helper (Numba's slice assignment compiles seconds of
# error formatting into the kernel); a scalar is stored.
embed_p = primitive("embed", "structural", _embed_impl, _embed_shape,
                    "out = arrays.zeros(out_shape, out_dtype)\narrays.copy_into(out[index], g)",
                    vjp=lambda g, out, x, *, shape, index: (getitem_p.bind(g, index=index),),
                    embeds=True, emit_for=_embed_form,
                    batch=lambda flags, avals, *, shape, index: lambda g: embed_p.bind(
                        g, shape=g.shape[:1] + tuple(shape), index=(FULL,) + tuple(index)))


def _gather_shape(x, indices, *, view=False):
    if indices.dtype.kind not in "iu" or indices.ndim > 1:
        raise TypeError(f"indices must be an integer or a vector of them, got "
                        f"{indices.short()}")
    return Aval(indices.shape + x.shape[1:], x.dtype, x.weak)


def _scatter_add_shape(g, indices, *, size):
    return Aval((size,) + g.shape[indices.ndim:], g.dtype)


def check_indices(indices, size, op):
    """IndexError for an index outside [-size, size), worded as arrays.check_indices
    words it in compiled code, naming the user's line (indices known when tracing are
    checked there: helper 130)."""
    bad = indices[(indices < -size) | (indices >= size)]
    if bad.size:
        raise IndexArgumentError(f"{op}: index {bad[0]} is out of bounds for a dimension of "
                                 f"size {size}\n  at {user_line()}")


def _gather_impl(x, indices, view=False):
    check_indices(indices, x.shape[0], "gather")
    return np.array(x[indices])  # a row of its own where the index is one integer


def _scatter_add_impl(g, indices, size):
    check_indices(indices, size, "scatter_add")
    out = np.zeros((size,) + g.shape[indices.ndim:], g.dtype)
    np.add.at(out, indices, g)
    return out


def _one_row(form):
    """emit_for of an op whose indices may be one integer (x[i] in a loop): `form` there,
    which reads or writes the row straight, with no vector of one index to allocate."""
    return lambda *avals, **params: form if not avals[1].shape else None


# x[i] of one integer i (a loop's read of a row): its bounds checked in the kernel's own
# code, as a call of a helper that may raise is not inlined (5 ns a loop trip more:
# benchmarks/README.md, "A loop's x[i] read in the kernel's own code").
def _in_bounds(op, index, axis=0):
    """A template's test of one integer index against x's axis, raising as NumPy would."""
    return (f"if not -x.shape[{axis}] <= {index} < x.shape[{axis}]:\n"
            f"    raise arrays.IndexOutOfBounds('{op}', {index}, x.shape[{axis}])")


_ONE_ROW = _in_bounds("gather", "indices") + "\nout = x[indices]{}"

# Rows of x along the first axis (one row where indices is an integer); gather() moves
# other axes there first. Indices are data: compiled code checks their bounds at each
# call (arrays.gather, _ONE_ROW). With `view`, which only code generation sets (a row that
# only gathers read, x[i, j]'s: codegen/control.py), one integer's row is x's own memory.
gather_p = primitive("gather", "opaque", _gather_impl, _gather_shape,
                     "arrays.gather(x, indices)", raises=True, aliases=(0,),
                     emit_for=lambda x, indices, out, *, view=False: None if indices.shape else
                     _ONE_ROW.format(".copy()" if out.shape and not view else ""),
                     vjp=lambda g, out, x, indices, *, view=False:
                     (scatter_add(g, indices, x.shape[0]), None),
                     batch=lambda flags, avals, *, view=False: not flags[1] and (
                         lambda x, indices: _rows_second(gather_p.bind(_rows_second(x), indices))
                         if indices.ndim else gather_p.bind(_rows_second(x), indices)))
# gather's transpose: rows of g added into zeros at `indices`.
scatter_add_p = primitive("scatter_add", "opaque", _scatter_add_impl, _scatter_add_shape,
                          "arrays.scatter_add(g, indices, size)", raises=True, sums=True,
                          aliases=(),
                          emit_for=_one_row("out = arrays.zeros(out_shape, out_dtype)\n"
                                            "arrays.add_row(out, indices, g, True)"),
                          vjp=lambda g, out, x, indices, *, size:
                          (gather_p.bind(g, indices), None),
                          batch=lambda flags, avals, *, size: not flags[1] and (
                              lambda g, indices: _rows_second(scatter_add_p.bind(
                                  _rows_second(g) if indices.ndim else g, indices, size=size))))


def _add_rows_shape(x, indices, g, *, in_place, axes=None):
    rows = x.shape if axes is None else tuple(x.shape[a] for a in axes)
    if g.shape != indices.shape + rows[1:] or g.dtype != x.dtype:
        raise ValueError(f"rows {g.short()} do not fit rows of {x.short()}")
    return Aval(x.shape, x.dtype)


def _add_rows_impl(x, indices, g, in_place, axes=None):
    check_indices(indices, x.shape[0 if axes is None else axes[0]], "scatter_add")
    out = x.copy()
    np.add.at(out if axes is None else np.transpose(out, axes), indices, g)
    return out


def _add_rows_form(x, indices, g, out, *, in_place, axes=None):
    """One row's add in place (add_row), or any rows' through a view of x with its axes
    in `axes`' order (x[:, j]'s gradient adds a column: the rows of x.T)."""
    if axes is None:
        return None if indices.shape else "arrays.add_row(x, indices, g, in_place)"
    rows = "add_rows" if indices.shape else "add_row"
    return (f"out = x{'' if in_place else '.copy()'}\n"
            f"arrays.{rows}(arrays.transpose(out, axes), indices, g, True)")


# x + scatter_add(g, indices, len(x)): x with g's rows added at indices; with `axes`,
# x + transpose(scatter_add(g, ...)), g's rows those of x's view transpose(x, axes). With
# in_place, compiled code adds them in x's own buffer: code generation sets it only where
# that is a loop's carry that nothing else reads (codegen/control.py), so that a trip
# costs g's rows, not all of x (an adjoint loop's gradient of an array the loop reads a
# row or a column at a time).
add_rows_p = primitive("add_rows", "opaque", _add_rows_impl, _add_rows_shape,
                       "arrays.add_rows(x, indices, g, in_place)", raises=True, aliases=(0,),
                       emit_for=_add_rows_form,
                       vjp=lambda gout, out, x, indices, g, *, in_place, axes=None: (
                           gout, None, gather_p.bind(
                               gout if axes is None else transpose(gout, axes), indices)))


def _add_at_shape(x, g, *indices, in_place):
    if not (1 < len(indices) <= len(x.shape)
            and all(not i.shape and i.dtype.kind in "iu" for i in indices)
            and g.shape == x.shape[len(indices):] and g.dtype == x.dtype):
        raise ValueError(f"{g.short()} does not fit {x.short()} at {len(indices)} indices")
    return Aval(x.shape, x.dtype)


def _add_at_impl(x, g, *indices, in_place):
    for axis, i in enumerate(indices):
        check_indices(np.asarray([i]), x.shape[axis], "scatter_add")
    out = x.copy()
    out[tuple(indices)] += g
    return out


def _add_at_form(x, g, *indices_and_out, in_place):
    """An element's add in the kernel's own code: each index's bounds test, then the add
    (a subarray's: arrays.add_at)."""
    if g.shape:
        return None
    axes = range(len(indices_and_out) - 1)
    return "\n".join(["out = x" + ("" if in_place else ".copy()")]
                     + [_in_bounds("scatter_add", f"indices[{a}]", a) for a in axes]
                     + [f"out[{', '.join(f'indices[{a}]' for a in axes)}] += g"])


# x with g added at x[i, j, ...] (two or more integer indices): add_rows' counterpart for
# an element, which code generation makes of a scatter of scatters into a loop carry it
# owns (codegen/control.py), so that the adjoint of `for i: for j: ... x[i, j]` costs an
# element a trip, not a row.
add_at_p = primitive("add_at", "opaque", _add_at_impl, _add_at_shape,
                     "arrays.add_at(x, indices, g, in_place)", raises=True, aliases=(0,),
                     emit_for=_add_at_form,
                     vjp=lambda gout, out, x, g, *indices, in_place: (  # gout's element
                         gout, functools.reduce(gather_p.bind, indices, gout))
                     + (None,) * len(indices))


def _rows_second(x):
    """x with its first two axes swapped: a batch's rows moved behind the axis that
    gather and scatter_add index, and back."""
    return transpose_p.bind(x, perm=(1, 0) + tuple(range(2, len(x.shape))))


def _window_shape(x, begin, *, size, op):
    if begin.shape or begin.dtype.kind not in "iu":
        raise TypeError(f"begin must be an integer scalar, got {begin.short()}")
    return Aval((size,) + x.shape[1:], x.dtype, x.weak)


def check_window(begin, size, n, op):
    """IndexArgumentError where begin, ..., begin + size - 1 leave an axis of n, naming the
    first index outside as check_range does (the CPU kernel's template, the CUDA host)."""
    if not 0 <= begin <= n - size:
        raise IndexArgumentError(f"{op}: index {begin if begin < 0 else max(begin, n)} is "
                                 f"out of bounds for a dimension of size {n}")


def _window_impl(x, begin, size, op):
    check_window(int(begin), size, x.shape[0], op)
    return x[int(begin):int(begin) + size]


# x[begin:begin + size] along the first axis, begin known at run time and checked there to
# keep the block inside (block(): tf.slice's traced begin, a loop's window x[i:i + 2]); a
# view, as a slice is (a gather of begin + iota copied it through a vector of indices).
window_p = primitive(
    "window", "structural", _window_impl, _window_shape,
    "if not 0 <= begin <= x.shape[0] - size:\n"
    "    raise arrays.IndexOutOfBounds(op, begin if begin < 0 else max(begin, x.shape[0]), "
    "x.shape[0])\nout = x[begin:begin + size]", raises=True,
    vjp=lambda g, out, x, begin, *, size, op: (scatter_add(
        g, add(reshape(begin, (1,)), iota(size, np.int64)), x.shape[0]), None),
    batch=lambda flags, avals, *, size, op: not flags[1] and (
        lambda x, begin: _rows_second(window_p.bind(_rows_second(x), begin, size=size, op=op))))


def _check_range_shape(indices, *, size, op, negatives):
    if indices.dtype.kind not in "iu" or indices.ndim != 1:
        raise TypeError(f"indices must be a vector of integers, got {indices.short()}")
    if negatives not in ("raise", "from_end", "pass"):
        raise ValueError(f"negatives must be 'raise', 'from_end' or 'pass', got {negatives!r}")
    return Aval(indices.shape, np.dtype(np.int64))


def _check_range_impl(indices, size, op, negatives):
    low = -size if negatives == "from_end" else 0
    bad = indices[(indices >= size) | ((indices < low) & (negatives != "pass"))]
    if bad.size:
        raise IndexArgumentError(f"{op}: index {bad[0]} is out of bounds for a dimension of "
                                 f"size {size}")
    return indices.astype(np.int64, copy=False)


# The indices themselves, as int64, once each is below size and, by `negatives`, not
# negative ("raise", TensorFlow's nd ops), at least -size ("from_end", gather's), or
# anything ("pass", segment ids, negative ones dropped); else IndexArgumentError naming
# `op` and the index: checked at each call, in compiled code too, where gather's own check
# would name a row number that the op computed from the index. int64 so that the row
# numbers computed from checked indices (times a stride, plus a batch offset) cannot wrap
# in the indices' own dtype (uint8's, int16's).
check_range_p = primitive("check_range", "opaque", _check_range_impl, _check_range_shape,
                          "arrays.check_range(indices, size, op, negatives)", nondiff=True,
                          raises=True)


# 0, 1, ..., count - 1: the one creation op traced, for a count that is a traced size
# (here, not in creation.py, for gather's batch offsets).
iota_p = primitive("iota", "opaque", lambda count, dtype: np.arange(count, dtype=dtype),
                   lambda *, count, dtype: _iota_shape(count, dtype),
                   "arrays.iota(np.int64(count), dtype)", nondiff=True)


def _iota_shape(count, dtype):
    if negative(count):  # a count computed at run time (n - 4) too, guarded
        raise ValueError(f"a negative count, {count}")
    return Aval((count,), dtype)


def iota(count, dtype):
    """0, 1, ..., count - 1 in dtype: a constant, or traced where count is a traced size."""
    if isinstance(count, Dim):
        return iota_p.bind(count=count, dtype=np.dtype(dtype))
    return Tensor._new(np.arange(_iota_shape(count, dtype).shape[0], dtype=dtype))


def block(x, axis, begin, size, op="slice"):
    """x's `size` elements along axis from `begin`, an integer scalar known at run time
    (tf.slice's traced begin, a loop's window x[i:i + 2]): a window, checked there to lie
    inside the axis."""
    b = cast(begin, np.int64)  # not b's dtype: uint8's 250 + 9 would wrap
    if size == 0:  # begin may be the axis' end
        rows = add(checked_indices(reshape(b, (1,)), x.shape[axis] + 1, op, "raise"),
                   iota(size, np.int64))
        return gather(x, rows, axis=axis)
    to_front = (axis,) + tuple(a for a in range(x.ndim) if a != axis)
    out = window_p.bind(transpose(x, to_front), b, size=size, op=op)
    return transpose(out, tuple(np.argsort(to_front)))


def checked_indices(indices, size, op, negatives):
    """A vector of indices as int64, checked at each call (check_range)."""
    return check_range_p.bind(indices, size=size, op=op, negatives=negatives)


# ----- joining -----


def _concat_shape(*xs, axis):
    first = xs[0]
    for x in xs[1:]:
        if x.ndim != first.ndim or any(a != b for i, (a, b) in
                                       enumerate(zip(x.shape, first.shape)) if i != axis):
            raise ValueError(f"shapes differ outside axis {axis}")
    # A Python scalar takes the tensors' dtype (stack([x32, 2.0]) is float32), as in add.
    dtype, weak = promote(xs)
    total = sum(x.shape[axis] for x in xs)
    return Aval(first.shape[:axis] + (total,) + first.shape[axis + 1:], dtype, weak)


def _concat_vjp(g, out, *xs, axis):
    return tuple(getitem_p.bind(g, index=(FULL,) * axis + (Slice(start, stop, None),))
                 for start, stop in spans(x.shape[axis] for x in xs))


concat_p = primitive("concat", "structural", lambda *xs, axis: np.concatenate(xs, axis),
                     _concat_shape, "arrays.concatenate(xs, axis)", vjp=_concat_vjp,
                     joins=True,
                     batch=lambda flags, avals, *, axis: lambda *xs: concat_p.bind(
                         *_rows_everywhere(xs, flags), axis=axis + 1))


def _rows_everywhere(xs, flags):
    """xs, each unflagged one broadcast along the flagged ones' leading axis of rows."""
    rows = next(x for x, b in zip(xs, flags) if b).shape[0]
    return [x if b else broadcast_to(x, (rows,) + tuple(x.shape)) for x, b in zip(xs, flags)]


# ----- wrappers (TensorFlow names) -----


def shape_argument(shape, op):
    """A shape argument as a tuple of sizes: a sequence of ints (a traced size stays
    symbolic), or an integer tensor or array of them, as tf.shape(x) gives (traced, the
    sizes it holds stay symbolic too: held_sizes.py). Another traced tensor has its values
    only at run time, where the trace needs them now."""
    if isinstance(shape, Value):
        shape = _sizes_of(shape, op)
    items = shape if isinstance(shape, (tuple, list)) else np.atleast_1d(shape)
    return tuple(as_size(_size_of(d, op) if isinstance(d, Value) else d, op) for d in items)


def _size_of(value, op):
    """A scalar tensor's value as a size."""
    if value.ndim:
        raise TypeError(f"{op}: a dimension must be an integer, got {value.aval.short()}")
    sizes = _sizes_of(value, op)
    return sizes[0] if isinstance(sizes, tuple) else sizes[()]


def _sizes_of(value, op):
    """A tensor's values as a shape: its array, or the tuple of sizes a traced one holds."""
    if value._trace is None:
        return value.numpy()
    held = sizes_held(value)
    if held is None:
        raise TracingError(f"{user_line()}\n  {op}: the shape is a traced tensor, whose "
                           "values are known only at run time; give the sizes as ints "
                           "(x.shape), or compute it from tf.shape(x) and integers alone")
    return held


def reshape(tensor, shape, name=None):
    """The same elements in a new shape; one dim may be -1 (tf.reshape)."""
    x = as_value(tensor, "reshape")
    shape = shape_argument(shape, "reshape")
    if sum(1 for d in shape if d == -1) > 1:
        raise shape_error(f"reshape: only one dimension may be -1, got {shape}")
    if -1 in shape:
        known = size(tuple(d for d in shape if d != -1))
        if known == 0 or size(x.shape) % known:
            raise shape_error(f"reshape: cannot reshape {x.aval.short()} into {shape}")
        shape = tuple(size(x.shape) // known if d == -1 else d for d in shape)
    if same_shape(shape, x.shape):
        return unchanged(x)
    # A single element moving in or out of rank 0 is a broadcast or an index: generated
    # code keeps rank-0 values as scalars, which have no reshape.
    if x.ndim == 0 and size(shape) == 1:
        return broadcast_to(x, shape)
    if not shape and size(x.shape) == 1:
        return getitem_p.bind(x, index=(0,) * x.ndim)
    return reshape_p.bind(x, shape=shape)


def unchanged(x):
    """The result of an op that changes nothing (a reshape to x's shape, x[...]): a new
    value, recorded as a reshape, as TensorFlow's result is a new tensor. An alias of x
    would be x to a tape: a gradient with respect to it would be x's whole gradient, and
    a target that is x's alias would be x as a source too, connected to itself where
    TensorFlow's is not (eagerly and compiled alike; passes/simplify.py drops the reshape
    from a kernel)."""
    return reshape_p.bind(x, shape=tuple(x.shape))


def transpose(a, perm=None, conjugate=False, name=None):
    """Permutes the axes; reverses them when perm is None (tf.transpose)."""
    x = as_value(a, "transpose")
    if perm is None:
        perm = tuple(reversed(range(x.ndim)))
    else:  # negative axes count from the end, as NumPy's; others out of range raise
        if np.ndim(perm) != 1:
            raise TypeError(f"transpose: perm must be a list of ints, got {perm!r}")
        perm = tuple(axis_index(p, list(perm), "transpose") for p in perm)
        if any(not -x.ndim <= p < x.ndim for p in perm):
            raise shape_error(f"transpose: perm {perm} names an axis out of range for "
                              f"{x.aval.short()}")
        perm = tuple(p % x.ndim for p in perm)
    return unchanged(x) if perm == tuple(range(x.ndim)) else transpose_p.bind(x, perm=perm)


def broadcast_to(input, shape, name=None):
    """input broadcast to `shape` by NumPy's rules (tf.broadcast_to)."""
    x = as_value(input, "broadcast_to")
    shape = shape_argument(shape, "broadcast_to")
    return unchanged(x) if same_shape(shape, x.shape) else broadcast_to_p.bind(x, shape=shape)


def expand_dims(input, axis, name=None):
    """input with a new axis of size 1 at `axis` (tf.expand_dims)."""
    x = as_value(input, "expand_dims")
    axis = normalize_axis(axis, x.ndim + 1, "expand_dims")
    return reshape(x, x.shape[:axis] + (1,) + x.shape[axis:])


def squeeze(input, axis=None, name=None):
    """input without its size-1 axes (all of them, or those in `axis`) (tf.squeeze)."""
    x = as_value(input, "squeeze")
    axes = (tuple(i for i, d in enumerate(x.shape) if d == 1) if axis is None
            else normalize_axes(axis, x.ndim, "squeeze"))
    for i in axes:
        if x.shape[i] != 1:
            raise shape_error(f"squeeze: axis {i} of {x.aval.short()} has size {x.shape[i]!r}, "
                              "not 1")
    return reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def concat(values, axis, name=None):
    """Joins tensors along an existing axis (tf.concat)."""
    xs = [as_value(v, "concat") for v in values]
    if not xs:
        raise ValueError("concat: needs at least one tensor")
    if any(x.ndim == 0 for x in xs):
        raise shape_error("concat: cannot join scalars, which have no axis; use stack")
    axis = normalize_axis(axis, xs[0].ndim, "concat")
    if len(xs) == 1:
        return unchanged(xs[0])
    dtype, weak = promote([x.aval for x in xs])
    if not weak:  # a Python scalar takes the tensors' dtype first, as in add: NumPy's and
        # Numba's concatenate took a uint64 beside a Python int through float64 (2**63 + 1);
        # one that does not fit raises first (helper 132: the cast wrapped it)
        xs = checked_python_ints(concat_p, xs)
        xs = [x if x.aval.dtype == dtype else cast(x, dtype) for x in xs]
    trace = xs[0]._trace
    joined = trace and trace.join(xs, axis)
    return concat_p.bind(*xs, axis=axis) if joined is None else joined


def stack(values, axis=0, name=None):
    """Joins tensors of one shape along a new axis (tf.stack)."""
    xs = [as_value(v, "stack") for v in values]
    if not xs:
        raise ValueError("stack: needs at least one tensor")
    out = concat([expand_dims(x, axis) for x in xs], axis)
    if out.aval.weak:  # Python numbers alone: a tensor of TensorFlow's dtype for them
        out = cast(out, settled_of(out))
    return out


def tile(input, multiples, name=None):
    """input repeated `multiples[i]` times along axis i (tf.tile)."""
    x = as_value(input, "tile")
    multiples = shape_argument(multiples, "tile")  # a traced size stays symbolic
    if len(multiples) != x.ndim or any(m < 0 for m in multiples):
        raise shape_error(f"tile: needs a multiple ≥ 0 for each axis of {x.aval.short()}, "
                          f"got {multiples}")
    spread = reshape(x, tuple(d for dim in x.shape for d in (1, dim)))
    grown = broadcast_to(spread, tuple(d for m, dim in zip(multiples, x.shape) for d in (m, dim)))
    return reshape(grown, tuple(m * dim for m, dim in zip(multiples, x.shape)))


def gather(params, indices, axis=None, batch_dims=0, name=None):
    """Slices of params at integer `indices` along `axis` (tf.gather). With batch_dims=b
    the first b axes of params and indices are batch axes: each batch element gathers
    from its own slice of params."""
    x, indices = as_value(params, "gather"), as_value(indices, "gather")
    b = batch_dims + indices.ndim if batch_dims < 0 else batch_dims
    axis = normalize_axis(b if axis is None else axis, x.ndim, "gather")
    if not 0 <= b <= min(axis, indices.ndim):
        raise ValueError(f"gather: batch_dims={batch_dims} must be at most axis={axis} and "
                         f"the rank of indices ({indices.ndim})")
    # Compared as sizes (dims_equal): traced params and indices have sizes of their own,
    # equal at this call, which the kernel must then require of every call.
    if not all(map(dims_equal, x.shape[:b], indices.shape[:b])):
        raise shape_error(f"gather: batch_dims={b}, but params {x.aval.short()} and indices "
                          f"{indices.aval.short()} differ in their first {b} axes")
    known = _known_indices(indices)
    if b == 0 and known is not None and getattr(x, "_trace", None) and \
            not hasattr(recording.CONTEXT.traces[-1], "parent"):
        # Indices known while tracing (a constant, or this call's integer argument) are
        # checked at this call's size there, where eager checks them (before a later op's
        # shape error); the kernel checks them again at each call. Not in a loop's body or
        # a branch (a region, whose trace has a parent), which may not run.
        check_indices(known, concrete(x.shape[axis]), "gather")
    # Batch axes, then the gathered axis, then the rest; with batch axes, each element's
    # indices are moved to its own rows of the batch-and-axis rows (_batch_rows).
    to_front = tuple(range(b)) + (axis,) + tuple(i for i in range(b, x.ndim) if i != axis)
    moved = transpose(x, to_front)
    table = reshape(moved, (size(moved.shape[:b + 1]),) + moved.shape[b + 1:])
    if not indices.ndim:  # x[i]: the row itself, no vector of one index
        return gather_p.bind(moved, indices)
    rows = indices if b == 0 else _batch_rows(indices, b, x.shape[axis])
    rows = gather_p.bind(table, reshape(rows, (-1,)))
    rows = reshape(rows, indices.shape + rows.shape[1:])
    # rows: batch, indices' own axes (k of them), params' axes before `axis`, the rest.
    k, before = indices.ndim - b, axis - b
    back = (tuple(range(b)) + tuple(range(b + k, b + k + before)) + tuple(range(b, b + k))
            + tuple(range(b + k + before, rows.ndim)))
    return transpose(rows, back)


def _known_indices(indices):
    """The values of gather indices known while tracing: a constant's, or those of an
    integer argument in the call being traced; else None."""
    trace = getattr(indices, "_trace", None)
    return indices._array if trace is None else trace.integer_inputs.get(indices.ir_var)


def _batch_rows(indices, b, n):
    """Row numbers in a table of batch-element-major rows of n each: index i of batch
    element e is row e * n + i. Each index is checked against its own element's n rows
    first (at run time too), as a row of another element would pass gather's check."""
    indices = reshape(checked_indices(reshape(indices, (-1,)), n, "gather", "from_end"),
                      indices.shape)  # int64: e * n past int16's range would wrap
    batch = indices.shape[:b]
    starts = reshape(iota(size(batch), np.int64), batch + (1,) * (indices.ndim - b))
    return add(where(less(indices, 0), add(indices, n), indices), multiply(starts, n))


def embed(g, shape, index):
    """Zeros of `shape` with g written at `index` (the transpose of indexing)."""
    return embed_p.bind(g, shape=tuple(shape), index=index)


def scatter_add(g, indices, size):
    """Zeros of `size` rows with rows of g added at `indices` (the transpose of gather)."""
    return scatter_add_p.bind(g, indices, size=size)


def getitem(x, index):
    """x[index] for ints, slices, None, Ellipsis, and one integer array (a gather). A list
    is a tuple of indices, as in TensorFlow: x[[0, 1]] is x[0, 1]."""
    x = as_value(x, "getitem")
    items = tuple(index) if isinstance(index, (tuple, list)) else (index,)
    if any(isinstance(item, (bool, np.bool_)) for item in items):  # an int to Python
        raise TypeError(f"{user_line()}\n  getitem: a bool index (NumPy adds an axis of 1 "
                        "or 0 elements; TensorFlow refuses it): index with an int, or "
                        "None for a new axis")
    if (used := _indexed(items)) > x.ndim:  # before a traced index takes its axis
        raise IndexError(f"{user_line()}\n  getitem: too many indices ({used}) for a value "
                         f"of rank {x.ndim}")
    arrays = [i for i, item in enumerate(items) if _is_array_index(item)]
    if arrays:
        return _advanced_getitem(x, items, arrays)
    normalized, windows = _normalize_index(items, x.shape)
    if all(isinstance(i, Slice) and i == FULL for i in normalized):
        x = unchanged(x)
    else:
        x = getitem_p.bind(x, index=normalized)
    for axis, begin, width in windows:
        x = block(x, axis, begin, width)
    return x


def _is_array_index(item):
    return isinstance(item, (list, np.ndarray, Value)) and not (
        isinstance(item, (np.ndarray, Value)) and item.ndim == 0 and item.dtype.kind in "iu"
        and getattr(item, "_trace", None) is None)


def _advanced_getitem(x, items, arrays):
    indices = [as_value(items[k], "getitem") for k in arrays]
    first = indices[0]
    # Traced integer scalars alone (beside an array index, NumPy's axis order differs):
    if all(i.ndim == 0 and i.dtype.kind in "iu" for i in indices):
        if all(k in arrays or isinstance(item, (int, np.integer))
               for k, item in enumerate(items)):
            # x[i, j], x[0, j], x[i, 0]: a row at a time, a fixed index too, so that a
            # loop reads a view of the row and adds the element's gradient at [i, j]
            # (codegen/control.py), where a column read copied and added all of x a trip
            for item in items:
                x = gather(x, item)
            return x
        # x[..., i], x[i, :] with i traced (a loop's index): i's axis taken first
        # (the axes before it that an item indexes), then the rest
        k = arrays[0]
        axis = sum(x.ndim - _indexed(items) if item is Ellipsis else item is not None
                   for item in items[:k])
        return getitem(gather(x, first, axis=axis), items[:k] + items[k + 1:])
    rest = [i for i, item in enumerate(items) if i not in arrays and item != slice(None)]
    if len(arrays) != 1 or rest:
        raise TypeError(f"{user_line()}\n  getitem: srcxform supports one integer-array "
                        "index among full slices (x[idx], x[:, idx]), or traced integer "
                        "scalars among any other indices (x[i, j], x[..., i]); use "
                        "srcxform.gather or srcxform.where")
    if first.dtype.kind == "b":
        return boolean_mask(x, first, axis=arrays[0])
    return gather(x, first, axis=arrays[0])


def boolean_mask(tensor, mask, axis=None, name=None):
    """The elements (or slices) of tensor where the bool mask is true, the mask covering
    the axes from `axis` on (tf.boolean_mask; x[mask] is this). Its shape depends on the
    mask's values, so it runs eagerly only; a gather of the true positions, so it has a
    gradient."""
    x, m = as_value(tensor, "boolean_mask"), as_value(mask, "boolean_mask")
    if x._trace is not None or m._trace is not None:
        raise TracingError(f"{user_line()}\n  boolean_mask (x[mask]): its shape depends on the "
                           "mask's values, so it cannot be compiled; use "
                           "srcxform.where(mask, x, 0)")
    if m.dtype.kind != "b" or m.ndim == 0:
        raise TypeError(f"boolean_mask: the mask must be a bool tensor of rank 1 or more, "
                        f"got {m.aval.short()}")
    axis = 0 if axis is None else normalize_axis(axis, x.ndim, "boolean_mask")
    if tuple(x.shape[axis:axis + m.ndim]) != tuple(m.shape):
        raise shape_error(f"boolean_mask: mask {m.aval.short()} does not match the axes "
                          f"from {axis} on of {x.aval.short()}")
    rows = reshape(x, x.shape[:axis] + (-1,) + x.shape[axis + m.ndim:])
    return gather(rows, np.flatnonzero(m._array), axis=axis)


def _indexed(items):
    """How many axes an index's items take (all but None and Ellipsis)."""
    return sum(item is not None and item is not Ellipsis for item in items)


def _normalize_index(items, shape):
    """Expands Ellipsis and turns ints and slices into hashable, checked items; and the
    windows a loop's index slides (_window), each a full slice there, as (the result's
    axis, traced begin, size) to take after."""
    used = _indexed(items)
    out, axis, windows = [], 0, []
    for item in items:
        if item is Ellipsis:
            fill = len(shape) - used
            out.extend([FULL] * fill)
            axis += fill
            used = len(shape)  # a second Ellipsis adds nothing
        elif item is None:
            out.append(None)
        elif isinstance(item, slice):
            # An end made of sizes (x[:tf.shape(x)[0] // 2]) is the size it holds.
            ends = [None if v is None else size_argument(v)
                    for v in (item.start, item.stop, item.step)]
            if any(isinstance(v, Value) and v._trace is not None for v in ends):
                window = _window(*ends, shape[axis])
                if isinstance(window, str):
                    raise TracingError(f"{user_line()}\n  {window}")
                windows.append((sum(not isinstance(i, int) for i in out), *window))
                out.append(FULL)
                axis += 1
                continue
            ends = (None if v is None else as_index(v) for v in ends)
            try:
                out.append(_canonical_slice(shape[axis], slice(*ends)))
            except ValueError as err:
                raise ValueError(f"getitem: {err}") from None
            axis += 1
        else:
            i, n = as_index(item), shape[axis]
            if not -n <= i < n:
                raise IndexArgumentError(f"getitem: index {concrete(i)} is out of bounds for "
                                         f"axis {axis} of size {concrete(n)}\n  at {user_line()}")
            out.append(i + n if i < 0 else i)  # x[-1] is x[n0 - 1] at every size
            axis += 1
    return tuple(out), windows


def _window(start, stop, step, n):
    """(begin, size) of x[start:stop] along an axis of n, where start and stop are a * i + b
    and a * i + c for i the index of a fori loop being traced (_affine): c - b elements from
    start, where the loop's bounds show that no trip's slice is clipped (start never
    negative, stop never past n; compared as sizes, so the kernel is guarded to sizes where
    that holds). Else a TracingError's message: a length known only at run time, or Python's
    slice clipped at some trip (a converted loop then unrolls)."""
    ends = [_affine(v) for v in (start, stop)]
    unit = step is None or isinstance(step, int) and type(step) is not Dim and step == 1
    if not unit or None in ends or ends[0][:2] != ends[1][:2]:
        return ("getitem: a slice with a traced bound (x[i:i + 2] with i an argument) has a "
                "length known only at run time; for a block of a length known now write "
                "tf.slice(x, [i], [2])")
    (_, scale, first, bounds), last = ends[0], ends[1][2]
    size = last - first
    if type(size) is not Dim and size >= 0:
        low, high = _span(bounds, scale, first)
        if low >= 0 and high + size <= n:
            return start, size
    return ("getitem: a slice of a loop's index clipped at some trip of the loop (past the "
            "axis, or from before it), where Python's slice is shorter, has no one length: "
            "keep the loop's range to the trips where the slice lies inside the axis")


# The integer ops a loop index may go through to a slice's bound: i * 2 + 1, n - 1 - i.
_AFFINE = {add_p, subtract_p, multiply_p, negative_p, cast_p}


def _affine(value):
    """(the index's Var, a, b, the loop's bounds) where value is a * i + b for i the index of
    a fori loop being traced (Trace.loop_index; an enclosing loop's through a region's
    captures), a an int and b an int or a size: each step adds, subtracts or multiplies a
    literal, negates, or casts, and every value the loop gives fits each step's dtype
    (compared as sizes: guarded); else None."""
    chain, trace, var = [], getattr(value, "_trace", None), getattr(value, "ir_var", None)
    while trace is not None and var is not None:
        index = trace.loop_index
        if index is not None and var is index[0]:
            break
        eqn = trace.producers.get(var)
        if eqn is None:  # a region's input: the enclosing trace's value it captured
            outer = trace.captured_from.get(var)
            trace, var = getattr(outer, "_trace", None), getattr(outer, "ir_var", None)
            continue
        operands = [a for a in eqn.ins if isinstance(a, Var)]
        if eqn.prim not in _AFFINE or len(operands) != 1 \
                or eqn.out.aval.dtype.kind not in "iu" or operands[0].aval.dtype.kind not in "iu":
            return None
        chain.append(eqn)
        var = operands[0]
    else:
        return None
    bounds, scale, offset = index[1:], 1, 0
    for eqn in reversed(chain):
        literal = next((_int_literal(a) for a in eqn.ins if not isinstance(a, Var)), None)
        if eqn.prim is negative_p:
            scale, offset = -scale, -offset
        elif eqn.prim is cast_p:
            pass
        elif literal is None:
            return None
        elif eqn.prim is add_p:
            offset += literal
        elif eqn.prim is subtract_p and isinstance(eqn.ins[0], Var):
            offset -= literal
        elif eqn.prim is subtract_p:  # literal - i
            scale, offset = -scale, literal - offset
        elif type(literal) is Dim:  # a multiple of a size: its sign unknown
            return None
        else:
            scale, offset = scale * literal, offset * literal
        dtype = eqn.out.aval.dtype
        if dtype != np.int64:  # a narrower or unsigned dtype must hold every value
            low, high = _span(bounds, scale, offset)
            if low < np.iinfo(dtype).min or high > np.iinfo(dtype).max:
                return None
    return index[0], scale, offset, bounds


def _span(bounds, scale, offset):
    """The least and the greatest of scale * i + offset over the loop's trips."""
    lower, upper = bounds
    ends = (scale * lower + offset, scale * (upper - 1) + offset)
    return ends if scale >= 0 else ends[::-1]


def _int_literal(atom):
    """The int or size an IR atom holds where it is an integer literal, else None."""
    value = atom.value if isinstance(atom, Lit) else None
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return value if type(value) is Dim else int(value)
    return None


def _canonical_slice(n, s):
    """s normalized (aval.normalize_slice), its defaults left out as a reader writes them
    (`x[1:]`, not `x[1:n0:1]`)."""
    start, stop, step = normalize_slice(n, s)
    if step > 0:
        start = None if is_zero(start) else start
        stop = None if same_dim(stop, n) else stop
    return Slice(start, stop, None if step == 1 else step)


