"""Creating values: constant, zeros, ones, fill, range, linspace, eye (no gradient).

`ones_like`/`zeros_like`/`fill` of a traced value broadcast a scalar, so they stay
traced; everything else makes a Tensor directly.
"""

import numpy as np

from srcxform.dtypes import as_dtype, float32, promote, settled
from srcxform.ops.elementwise import cast
from srcxform.ops.shape import broadcast_to
from srcxform.tensor import Tensor, Value, as_value


def constant(value, dtype=None, shape=None, name=None):
    """A Tensor from a Python value or array; Python floats become float32 (tf.constant)."""
    t = Tensor(value, dtype)
    if shape is not None:
        t = Tensor._new(np.broadcast_to(t._array, tuple(shape)).copy())
    return t


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    """value as a Tensor, unchanged if it is one already (tf.convert_to_tensor). A tensor
    of another dtype than `dtype` raises ValueError, as in TensorFlow: use cast."""
    dtype = as_dtype(dtype)
    if isinstance(value, Value):
        if dtype is None or value.dtype == dtype:
            return as_value(value)
        if not value.aval.weak:  # a weak value converts as the Python scalars it is made of
            raise ValueError(f"convert_to_tensor: dtype {dtype.name} requested for a tensor "
                             f"of dtype {value.dtype.name}; cast it (srcxform.cast)")
    return Tensor(value, dtype)


def zeros(shape, dtype=float32, name=None):
    return Tensor._new(np.zeros(_shape(shape, "zeros"), as_dtype(dtype)))


def ones(shape, dtype=float32, name=None):
    return Tensor._new(np.ones(_shape(shape, "ones"), as_dtype(dtype)))


def fill(dims, value, name=None):
    """A tensor of shape `dims` filled with value (tf.fill); a Python scalar fills a
    float32 or int32 tensor, as in TensorFlow."""
    value = as_value(value, "fill")
    if value.aval.weak:
        # A weak scalar is held as float64/int64; the filled tensor is a strong value of
        # the dtype it reports, not a weak float64 array that a Variable would copy.
        value = cast(value, settled(value.aval.dtype, value._array))
    return broadcast_to(value, _shape(dims, "fill"))


def _like(input, value, dtype):
    x = as_value(input, "ones_like")
    dtype = as_dtype(dtype) or x.dtype
    return broadcast_to(Tensor._new(np.asarray(value, dtype)), x.shape)


def zeros_like(input, dtype=None, name=None):
    return _like(input, 0, dtype)


def ones_like(input, dtype=None, name=None):
    return _like(input, 1, dtype)


def range(start, limit=None, delta=1, dtype=None, name=None):
    """start, start + delta, … up to limit (tf.range); int32 for ints, float32 for floats."""
    if limit is None:
        start, limit = 0, start
    values = [as_value(v, "range") for v in (start, limit, delta)]
    dtype = as_dtype(dtype) or _result_dtype(values)
    return Tensor._new(np.arange(*[v._array for v in values], dtype=dtype))


def linspace(start, stop, num, name=None, axis=0):
    """num evenly spaced values from start to stop inclusive (tf.linspace); integer ends
    give float64, as TensorFlow's (which divides them with truediv)."""
    lo, hi = as_value(start, "linspace"), as_value(stop, "linspace")
    dtype = _result_dtype([lo, hi])
    dtype = dtype if dtype.kind == "f" else np.dtype(np.float64)
    return Tensor._new(np.linspace(lo._array, hi._array, int(num), dtype=dtype, axis=axis))


def eye(num_rows, num_columns=None, batch_shape=None, dtype=float32, name=None):
    """The identity matrix (tf.eye)."""
    matrix = np.eye(num_rows, num_columns, dtype=as_dtype(dtype))
    if batch_shape is not None:
        matrix = np.broadcast_to(matrix, tuple(batch_shape) + matrix.shape).copy()
    return Tensor._new(matrix)


def _result_dtype(values):
    """The dtype values meet in; Python scalars alone settle to float32 or int32 (int64
    where int32 cannot hold one)."""
    dtype, weak = promote([v.aval for v in values])
    return settled(dtype, np.concatenate([np.ravel(v._array) for v in values])) if weak \
        else dtype


def _shape(shape, op):
    """A shape argument (int, sequence or tensor of ints) as a tuple of ints."""
    if isinstance(shape, Value):
        shape = shape.numpy()
    dims = np.reshape(np.asarray(shape), -1)
    # int() would truncate 2.5 silently; TensorFlow rejects a non-integer shape.
    if dims.size and dims.dtype.kind not in "iu":
        raise TypeError(f"{op}: the shape must be integers, got {shape!r}")
    return tuple(int(d) for d in dims)
