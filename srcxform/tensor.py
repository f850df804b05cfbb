"""Tensor and Variable: NumPy-backed values with TensorFlow's surface.

`Value` holds the surface shared with the tracer (operators, indexing, NumPy dispatch);
every operator calls an op, so nothing here computes or differentiates by itself.
"""

import itertools

import numpy as np

from srcxform import ops as _ops
from srcxform import recording
from srcxform.aval import Aval
from srcxform.dims import Dim, value
from srcxform.dtypes import as_dtype, settled, weak_storage

_ids = itertools.count(1)


class Value:
    """The operator surface of Tensor, Variable and the tracer."""

    __slots__ = ()
    __array_priority__ = 100
    _trace = None

    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self):
        return len(self.aval.shape)

    @property
    def T(self):
        """The axes reversed, as NumPy's `.T` (TensorFlow has no `.T`; NumPy code does)."""
        return _ops.transpose(self)

    # ----- arithmetic -----
    def __add__(self, other):
        return _ops.add(self, other)

    def __radd__(self, other):
        return _ops.add(other, self)

    def __sub__(self, other):
        return _ops.subtract(self, other)

    def __rsub__(self, other):
        return _ops.subtract(other, self)

    def __mul__(self, other):
        return _ops.multiply(self, other)

    def __rmul__(self, other):
        return _ops.multiply(other, self)

    def __truediv__(self, other):
        return _ops.divide(self, other)

    def __rtruediv__(self, other):
        return _ops.divide(other, self)

    def __floordiv__(self, other):
        return _ops.floordiv(self, other)

    def __rfloordiv__(self, other):
        return _ops.floordiv(other, self)

    def __mod__(self, other):
        return _ops.mod(self, other)

    def __rmod__(self, other):
        return _ops.mod(other, self)

    def __pow__(self, other):
        return _ops.pow(self, other)

    def __rpow__(self, other):
        return _ops.pow(other, self)

    def __matmul__(self, other):
        return _ops.matmul(self, other)

    def __rmatmul__(self, other):
        return _ops.matmul(other, self)

    def __neg__(self):
        return _ops.negative(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _ops.abs(self)

    # ----- comparisons (elementwise, not differentiable) -----
    def __lt__(self, other):
        return _ops.less(self, other)

    def __le__(self, other):
        return _ops.less_equal(self, other)

    def __gt__(self, other):
        return _ops.greater(self, other)

    def __ge__(self, other):
        return _ops.greater_equal(self, other)

    def __eq__(self, other):
        return _ops.equal(self, other)

    def __ne__(self, other):
        return _ops.not_equal(self, other)

    def __and__(self, other):
        return _ops.logical_and(self, other)

    def __or__(self, other):
        return _ops.logical_or(self, other)

    def __invert__(self):
        return _ops.logical_not(self)

    __hash__ = None  # as TensorFlow: == is elementwise, so values are not hashable

    # ----- indexing and iteration -----
    def __getitem__(self, index):
        return _ops.getitem(self, index)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a scalar tensor")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # ----- NumPy dispatch -----
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _ops.numpy_dispatch.array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _ops.numpy_dispatch.array_function(func, args, kwargs)


class Tensor(Value):
    """An immutable NumPy-backed value (tf.Tensor)."""

    __slots__ = ("_value", "_weak", "_id")

    def __init__(self, value, dtype=None):
        self._value = _to_array(value, as_dtype(dtype))
        self._weak = False
        self._id = next(_ids)

    @classmethod
    def _new(cls, array, weak=False, id=None):
        """Wraps an ndarray as is (the op path: no conversion)."""
        t = object.__new__(cls)
        t._value = array
        t._weak = weak
        t._id = next(_ids) if id is None else id
        return t

    @property
    def aval(self):
        return Aval(self._value.shape, self._value.dtype, self._weak)

    @property
    def shape(self):
        return self._value.shape

    @property
    def dtype(self):
        # A value made of Python scalars alone is held exactly, but shows TensorFlow's
        # dtype for it (2.0 * 3.0 is float32).
        return settled(self._value.dtype) if self._weak else self._value.dtype

    @property
    def ndim(self):
        return self._value.ndim

    def numpy(self):
        """The value as a NumPy array (a NumPy scalar for a 0-d tensor, as TensorFlow)."""
        value = self._value.astype(self.dtype) if self._weak else self._value
        return value[()] if value.ndim == 0 else value

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.numpy(), dtype)

    def __float__(self):
        return float(self._one_element("float"))

    def __int__(self):
        return int(self._one_element("int"))

    def __index__(self):
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer tensors can be used as an index, not {self.dtype}")
        return int(self._one_element("index"))

    def __bool__(self):
        return bool(self._one_element("bool"))

    def _one_element(self, what):
        if self._value.size != 1:
            # NumPy's and TensorFlow's types: an ambiguous truth is a ValueError, a number
            # that cannot be had is a TypeError.
            kind = ValueError if what == "bool" else TypeError
            raise kind(f"{what}() of a tensor of shape {self.shape}: only one element "
                       "has a truth or number value; use reduce_any/reduce_all or index it")
        return self._value.reshape(()).item()

    def __repr__(self):
        return (f"<srcxform.Tensor: shape={self.shape}, dtype={self.dtype.name}, "
                f"numpy={_numpy_text(np.asarray(self.numpy()), repr)}>")

    def __str__(self):
        return (f"srcxform.Tensor({_numpy_text(np.asarray(self.numpy()), str)}, "
                f"shape={self.shape}, dtype={self.dtype.name})")

    def __format__(self, spec):
        if not spec:
            return str(self)
        value = np.asarray(self.numpy())
        return format(value.item() if value.ndim == 0 else value, spec)


class SizeConstant(Tensor):
    """A traced size used as a number (x.shape[0] in a mean): a weak int constant that
    keeps its Dim, so generated code computes it from the input sizes."""

    __slots__ = ("dim",)


class Variable(Value):
    """A mutable value whose reads are watched by tapes (tf.Variable)."""

    __slots__ = ("_value", "_id", "trainable", "name")

    def __init__(self, initial_value, trainable=True, name=None, dtype=None):
        if callable(initial_value):
            initial_value = initial_value()
        self._value = _to_array(initial_value, as_dtype(dtype)).copy()
        self._id = next(_ids)
        self.trainable = bool(trainable)
        self.name = name or "Variable:0"

    @property
    def aval(self):
        return Aval(self._value.shape, self._value.dtype)

    @property
    def shape(self):
        return self._value.shape

    @property
    def dtype(self):
        return self._value.dtype

    def _read(self):
        """A snapshot of the value that carries the Variable's identity, so that the tape
        sends each read's gradient to the Variable even after later assignments. While
        tracing, the trace supplies the value (an input, or the last traced assignment)."""
        recording.variable_read(self)
        traces = recording.CONTEXT.traces
        if traces:
            return traces[-1].read_variable(self)
        return Tensor._new(self._value, id=self._id)

    def read_value(self):
        return self._read()

    value = read_value

    def numpy(self):
        return self._value[()] if self._value.ndim == 0 else self._value.copy()

    def __array__(self, dtype=None, copy=None):
        return self._value if dtype is None else self._value.astype(dtype)

    def assign(self, value, read_value=True):
        """Replaces the value; the new value must have the Variable's shape."""
        traces = recording.CONTEXT.traces
        if traces:
            traces[-1].write_variable(self, as_value(value, "assign"))
            return self
        new = np.asarray(as_value(value, "assign")._value)
        if new.shape != self._value.shape:
            raise ValueError(f"assign: cannot assign a value of shape {new.shape} to "
                             f"{self.name} of shape {self._value.shape}")
        self._value = new.astype(self._value.dtype, copy=True)
        return self

    def assign_add(self, delta, read_value=True):
        """Adds delta to the value (not differentiated, as in TensorFlow)."""
        with recording.paused():
            return self.assign(_ops.add(self._read(), delta))

    def assign_sub(self, delta, read_value=True):
        """Subtracts delta from the value (not differentiated, as in TensorFlow)."""
        with recording.paused():
            return self.assign(_ops.subtract(self._read(), delta))

    def __float__(self):
        return float(self._read())

    def __int__(self):
        return int(self._read())

    def __bool__(self):
        return bool(self._read())

    def __repr__(self):
        return (f"<srcxform.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, "
                f"numpy={_numpy_text(self._value, repr)}>")

    def __str__(self):
        return repr(self)

    def __format__(self, spec):
        return format(self._read(), spec)


def _numpy_text(array, text):
    if array.ndim == 0:
        return str(array[()])
    body = text(array)
    return "\n" + body if "\n" in body else body  # TensorFlow breaks before multi-line values


def _to_array(value, dtype=None):
    """TensorFlow's conversion: Python floats become float32 and ints int32; NumPy
    values keep their dtype unless one is given."""
    if isinstance(value, Value):
        array = np.asarray(as_value(value)._value)
    elif isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
    else:
        array = np.asarray(value)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        elif array.dtype == np.int64:
            array = array.astype(np.int32)
    if array.dtype.kind not in "biuf":
        # Strings and objects have no ops, and complex values no real-valued gradients.
        raise TypeError(f"cannot convert a {type(value).__name__} of dtype {array.dtype} to a "
                        "tensor: srcxform supports bool, integer and float values")
    return array if dtype is None else array.astype(dtype)


def as_value(x, op=None):
    """Any operand as a Value: Variables are read, Python scalars become weak constants."""
    if isinstance(x, Value):
        return x._read() if isinstance(x, Variable) else x
    # np.float64 is also a Python float, but as a NumPy value it keeps its dtype.
    if isinstance(x, Dim):
        size = SizeConstant._new(np.asarray(value(x), dtype=np.int64), weak=True)
        size.dim = x
        return size
    if isinstance(x, (bool, int, float)) and not isinstance(x, np.generic):
        return Tensor._new(np.asarray(x, dtype=weak_storage(x)), weak=True)
    try:
        return Tensor._new(_to_array(x))
    except (TypeError, ValueError):
        where = f"{op}: " if op else ""
        what = type(x).__name__ + (f" of dtype {x.dtype}" if isinstance(x, np.ndarray) else "")
        raise TypeError(f"{where}cannot use a {what} as a tensor (srcxform supports bool, "
                        "integer and float values)") from None
