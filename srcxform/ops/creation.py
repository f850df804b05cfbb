"""Creating values: constant, zeros, ones, fill, range, eye (no gradient), linspace (with
gradients to its ends, as TensorFlow's), and packing nested lists that hold tensors
(which keeps their gradients).

`ones_like`/`zeros_like`/`fill` of a traced value broadcast a scalar, and a packed list
of traced values is their stack, so those stay traced; so do zeros, ones, fill, range, eye
and linspace whose sizes are traced (x.shape[0]), computed at run time from the inputs'
sizes (`iota` counts), so that a new batch size reuses the kernel. Everything else makes
a Tensor directly.
"""

import builtins

import numpy as np

from srcxform.core import recording
from srcxform.core.aval import size
from srcxform.core.dims import Dim
from srcxform.core.dtypes import (as_dtype, check_convertible, float32, promote, settled,
                                  settled_of)
from srcxform.core.errors import TracingError, user_line
from srcxform.ops.elementwise import cast, equal
from srcxform.ops.held_sizes import size_argument, sizes_held
from srcxform.ops.shape import broadcast_to, iota, reshape, shape_argument, stack
from srcxform.core.tensor import (Tensor, Value, as_value, check_fits,
                                  converted_python_int, eager_tensor, holds_value, live)



def constant(value, dtype=None, shape=None, name=None):
    """A Tensor from a Python value or array; Python floats become float32 (tf.constant).
    A tensor is passed on (with its gradient, as TensorFlow's eager constant does) and a
    nested list holding tensors is packed (see pack). With `shape`, TensorFlow's rule: a
    value of as many elements is reshaped, one of one element fills it."""
    if (converted := _traced_conversion(value, dtype, "constant")) is not None:
        t = converted
    elif holds_value(value) and not isinstance(value, Value):
        t = pack(value, dtype)
    elif isinstance(value, Value) and value._trace is not None and (
            dtype is None or as_dtype(dtype) == value.dtype):  # passed on, as eagerly
        t = live(value, "constant")  # (not one kept past its trace)
    elif eager_tensor(value) and not value._weak and (
            dtype is None or as_dtype(dtype) == value.dtype):
        t = Tensor._new(value._array, id=value._id)  # the same value to the tape
    else:
        t = Tensor(value, dtype)
    return t if shape is None else _shaped(t, tuple(shape))


def _shaped(t, shape):
    """t in `shape` as tf.constant gives it one; TypeError for another number of
    elements (TensorFlow's)."""
    count, wanted = size(t.shape), size(shape)
    if count == wanted:
        return reshape(t, shape)
    if count == 1:
        return broadcast_to(reshape(t, ()), shape)
    raise TypeError(f"constant: a value of {count} elements cannot take the shape {shape} "
                    f"of {wanted} elements (it is reshaped to as many, or filled from one)")


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    """value as a Tensor, unchanged if it is one already (tf.convert_to_tensor). A tensor
    of another dtype than `dtype` raises ValueError, as in TensorFlow: use cast. A nested
    list holding tensors is packed (see pack)."""
    dtype = as_dtype(dtype)
    if (converted := _traced_conversion(value, dtype, "convert_to_tensor")) is not None:
        return converted
    if holds_value(value) and not isinstance(value, Value):
        return pack(value, dtype)
    if isinstance(value, Value):
        if dtype is None or value.dtype == dtype:
            return as_value(value)
        if not value.aval.weak:  # a weak value converts as the Python scalars it is made of
            raise ValueError(f"convert_to_tensor: dtype {dtype.name} requested for a tensor "
                             f"of dtype {value.dtype.name}; cast it (srcxform.cast)")
    return Tensor(value, dtype)


def _traced_conversion(value, dtype, what):
    """A traced value that is no tensor eagerly, converted as it would be there: a Python
    number (a float argument, fori_loop's index) to dtype, else to TensorFlow's dtype for
    it; a NumPy value (an array argument) as astype does. None for any other value."""
    if not (isinstance(value, Value) and live(value, what)._trace is not None):
        return None
    dtype = as_dtype(dtype)
    if value.aval.weak:  # an int as int64: eagerly its number picks int32 or int64,
        dtype = dtype or (settled(value.aval.dtype) if value.aval.dtype.kind != "i"
                          else np.dtype(np.int64))  # and int32 could wrap it here
        check_convertible(value.aval.dtype, dtype, what)
    elif value.eager_kind == "tensor":
        return None
    return cast(converted_python_int(value, dtype or value.dtype, what), dtype or value.dtype)


def fitted(value, dtype, what):
    """An op's scalar argument (one_hot's on_value, pad's constant_values) in `dtype`, as
    TensorFlow converts it: a Python int that does not fit raises TypeError (a traced one
    when the kernel runs), where a cast would wrap it; anything else is cast."""
    value, dtype = as_value(value, what), np.dtype(dtype)
    if value.aval.weak:  # a Python number: 1.5 never becomes an int
        check_convertible(value.aval.dtype, dtype, what)
    if value._trace is None and value.aval.weak and value.dtype.kind == "i":
        check_fits(value._array, dtype, what)
    return cast(converted_python_int(value, dtype, what), dtype)


def pack(value, dtype=None):
    """A nested list or tuple holding tensors as one tensor, as TensorFlow packs it: each
    level is the stack of its rows, so gradients flow to the tensors in it. Its dtype is
    `dtype`, to which the tensors in it are cast, else the first tensor's (others of
    another dtype promote, as in stack); Python numbers, arrays and lists without a
    tensor in it become constants of that dtype (tf.constant(row, dtype), so a Python
    float among int32 tensors raises TypeError)."""
    dtype = as_dtype(dtype)
    return _pack(value, dtype or _first_dtype(value), cast_tensors=dtype is not None)


def _pack(value, dtype, cast_tensors):
    rows = []
    for row in value:
        if isinstance(row, Value):
            row = as_value(row)
            # A weak value (made of Python scalars) takes the dtype as they would.
            if row.aval.weak or cast_tensors and row.dtype != dtype:
                row = cast(converted_python_int(row, dtype, "constant"), dtype)
        elif holds_value(row):
            row = _pack(row, dtype, cast_tensors)
        else:
            row = constant(row, dtype)
        rows.append(row)
    return stack(rows)


def _first_dtype(value):
    """The dtype of a nested list's first tensor that is no Python number, depth first;
    where its tensors are all Python numbers (traced ones: a loop's int, a float
    argument), the dtype TensorFlow gives its numbers: float32 if a float is among them,
    else int64 (a traced int's value is known only when the kernel runs: int32 could
    wrap it); None where it holds no tensor."""
    found, todo = [], [value]
    while todo:
        item = todo.pop(0)
        if isinstance(item, (list, tuple)):
            todo[:0] = item
        elif isinstance(item, Value):
            item = as_value(item)
            if not item.aval.weak:
                return item.dtype
            found.append(item.aval.dtype.kind)
        elif isinstance(item, (float, np.floating)):
            found.append("f")
    return None if not found else float32 if "f" in found else np.dtype(np.int64)


def zeros(shape, dtype=float32, name=None):
    """A tensor of `shape` filled with zeros of `dtype` (tf.zeros; float32 unless given)."""
    return _filled(shape, 0, dtype, "zeros")


def ones(shape, dtype=float32, name=None):
    """A tensor of `shape` filled with ones of `dtype` (tf.ones; float32 unless given)."""
    return _filled(shape, 1, dtype, "ones")


def _filled(shape, value, dtype, op):
    dims, dtype = shape_argument(shape, op), as_dtype(dtype)  # a traced size symbolic
    if any(isinstance(d, Dim) for d in dims):
        return broadcast_to(Tensor._new(np.asarray(value, dtype)), dims)
    return Tensor._new(np.full(dims, value, dtype))


def fill(dims, value, name=None):
    """A tensor of shape `dims` filled with value (tf.fill); a Python scalar fills a
    float32 or int32 tensor, as in TensorFlow."""
    value = as_value(value, "fill")
    if value.aval.weak:
        # A weak scalar is held as float64/int64; the filled tensor is a strong value of
        # the dtype it reports, not a weak float64 array that a Variable would copy.
        value = cast(value, settled_of(value))
    return broadcast_to(value, shape_argument(dims, "fill"))


def _like(input, value, dtype):
    x = as_value(input, "ones_like" if value else "zeros_like")
    dtype = as_dtype(dtype) or x.dtype
    return broadcast_to(Tensor._new(np.asarray(value, dtype)), x.shape)


def zeros_like(input, dtype=None, name=None):
    """Zeros of `input`'s shape and dtype, or of `dtype` (tf.zeros_like)."""
    return _like(input, 0, dtype)


def ones_like(input, dtype=None, name=None):
    """Ones of `input`'s shape and dtype, or of `dtype` (tf.ones_like)."""
    return _like(input, 1, dtype)


def range(start, limit=None, delta=1, dtype=None, name=None):
    """start, start + delta, … up to limit (tf.range); int32 for ints, float32 for floats."""
    if limit is None:
        start, limit = 0, start
    values = [as_value(v, "range") for v in (start, limit, delta)]
    if any(v.ndim for v in values):
        raise TypeError(f"range: the bounds must be scalars, got "
                        f"{', '.join(v.aval.short() for v in values)}")
    if any(v._trace is not None and sizes_held(v) is None for v in values):
        raise TracingError(f"{user_line()}\n  range: a bound is a traced tensor, so the "
                           "length would be known only at run time; use Python's range "
                           "with sizes as ints (range(x.shape[0])), or srcxform.fori_loop")
    dtype = as_dtype(dtype) or _result_dtype(values)
    bounds = [_bound(v) for v in values]
    for bound in bounds:  # as TensorFlow converts each to dtype: range(0, 300, int8) raises
        if not isinstance(bound, Dim) and dtype.kind in "iu":
            check_convertible(bound.dtype, dtype, "range")
            check_fits(bound, dtype, "range")
    if any(isinstance(b, Dim) for b in bounds):
        if dtype.kind in "iuf" and all(isinstance(b, Dim) or b.dtype.kind in "iu" and not b.ndim
                                      for b in bounds):
            return _traced_range(*[b if isinstance(b, Dim) else int(b) for b in bounds], dtype)
        bounds = [int(b) if isinstance(b, Dim) else b for b in bounds]  # guarded to its value
    out = Tensor._new(np.arange(*bounds, dtype=dtype))
    recording.cut_by("no gradient", "range", values, out)  # for explain: bounds a tape watched
    return out


def _bound(value):
    """A range bound: a traced size (x.shape[0], tf.shape(x)[0]) as its Dim, else an array."""
    size = size_argument(value)
    if size is value:
        return value._array
    return size if isinstance(size, Dim) else np.asarray(size, value.dtype)


def _traced_range(start, limit, delta, dtype):
    """range of integer bounds, one or more a traced size: start + delta * iota, in dtype."""
    if delta == 0:
        raise ValueError("range: delta must not be 0")
    length = 0 - (start - limit) // delta  # ceil((limit - start) / delta)
    steps = iota(max(0, length), dtype)
    steps = steps if delta == 1 else steps * cast(delta, dtype)
    return steps if start == 0 else steps + cast(start, dtype)


def linspace(start, stop, num, name=None, axis=0):
    """num evenly spaced values from start to stop inclusive, along a new `axis` where the
    ends are arrays (tf.linspace): start + i * (stop - start) / (num - 1) in the ends'
    dtype, as TensorFlow computes it (NumPy's float32 linspace computes in float64), the
    ends exactly start and stop; composed of ops, so gradients reach both ends as
    TensorFlow's do. Integer ends give float64, as TensorFlow's (which divides them with
    truediv); num must be known when tracing."""
    from srcxform.ops.shape import concat, expand_dims

    lo, hi = as_value(start, "linspace"), as_value(stop, "linspace")
    traced = lo._trace is not None or hi._trace is not None
    dtype = np.dtype(promote([lo.aval, hi.aval])[0] if traced else _result_dtype([lo, hi]))
    dtype = dtype if dtype.kind == "f" else np.dtype(np.float64)
    num = size_argument(num)
    num = num if isinstance(num, Dim) else int(num)
    if num < 0:
        raise ValueError(f"linspace: num must be 0 or more; got {num}")
    shape = np.broadcast_shapes(lo.aval.shape, hi.aval.shape)
    axis = axis + len(shape) + 1 if axis < 0 else axis
    lo, hi = (expand_dims(broadcast_to(cast(v, dtype), shape), axis) for v in (lo, hi))
    if num < 2:
        return lo if num == 1 else zeros(shape[:axis] + (0,) + shape[axis:], dtype)
    steps = reshape(iota(num - 2, dtype) + cast(1, dtype),
                    [num - 2 if d == axis else 1 for d in builtins.range(len(shape) + 1)])
    inner = lo + (hi - lo) / cast(num - 1, dtype) * steps
    return concat([lo, inner, hi], axis)


def eye(num_rows, num_columns=None, batch_shape=None, dtype=float32, name=None):
    """The identity matrix (tf.eye)."""
    num_rows, num_columns = size_argument(num_rows), size_argument(num_columns)
    columns = num_rows if num_columns is None else num_columns
    rows = reshape(iota(num_rows, np.int64), (num_rows, 1))  # constants where sizes are ints
    matrix = cast(equal(rows, iota(columns, np.int64)), as_dtype(dtype))
    if batch_shape is not None:
        matrix = broadcast_to(matrix, shape_argument(batch_shape, "eye") + (num_rows, columns))
    return matrix


def _result_dtype(values):
    """The dtype values meet in; Python scalars alone settle to float32 or int32 (int64
    where int32 cannot hold one)."""
    dtype, weak = promote([v.aval for v in values])
    return settled(dtype, np.concatenate([np.ravel(v._array) for v in values])) if weak \
        else dtype
