"""The operators, indexing and NumPy methods of Value (Tensor, Variable and the tracer),
installed onto it from here, as autograd installs its box's operators: each calls an op,
so tensor.py, below the ops, imports none.
"""

import numpy as np

from srcxform.core.aval import broadcast_shapes
from srcxform.core.dtypes import promote
from srcxform.ops import elementwise as ew
from srcxform.ops import creation, linalg, numpy_dispatch
from srcxform.ops.shape import getitem, transpose
from srcxform.core.tensor import SAME_AS_FUNCTION, Tensor, Value, as_value


class _Operators:
    """What install() copies onto Value."""

    __slots__ = ()

    @property
    def T(self):
        """The axes reversed, as NumPy's `.T` (TensorFlow has no `.T`; NumPy code does)."""
        return transpose(self)

    # ----- arithmetic -----
    def __add__(self, other):
        return ew.add(self, other)

    def __radd__(self, other):
        return ew.add(other, self)

    def __sub__(self, other):
        return ew.subtract(self, other)

    def __rsub__(self, other):
        return ew.subtract(other, self)

    def __mul__(self, other):
        return ew.multiply(self, other)

    def __rmul__(self, other):
        return ew.multiply(other, self)

    def __truediv__(self, other):
        return ew.divide(self, other)

    def __rtruediv__(self, other):
        return ew.divide(other, self)

    def __floordiv__(self, other):
        return ew.floordiv(self, other)

    def __rfloordiv__(self, other):
        return ew.floordiv(other, self)

    def __mod__(self, other):
        return ew.mod(self, other)

    def __rmod__(self, other):
        return ew.mod(other, self)

    def __pow__(self, other):
        return ew.pow(self, other)

    def __rpow__(self, other):
        return ew.pow(other, self)

    # `@` takes vectors as NumPy's does (tf.matmul does not), so NumPy code runs unchanged.
    def __matmul__(self, other):
        return linalg.numpy_matmul(self, other)

    def __rmatmul__(self, other):
        return linalg.numpy_matmul(other, self)

    def __neg__(self):
        return ew.negative(self)

    def __abs__(self):
        return ew.abs(self)

    # ----- comparisons (elementwise, not differentiable) -----
    def __lt__(self, other):
        return ew.less(self, other)

    def __le__(self, other):
        return ew.less_equal(self, other)

    def __gt__(self, other):
        return ew.greater(self, other)

    def __ge__(self, other):
        return ew.greater_equal(self, other)

    def __eq__(self, other):
        return _equality(ew.equal, self, other, unequal=False)

    def __ne__(self, other):
        return _equality(ew.not_equal, self, other, unequal=True)

    # Logical on bools, bitwise on integers, as TensorFlow's.
    def __and__(self, other):
        return _logical_or_bitwise(ew.logical_and, ew.bitwise_and, self, other)

    def __rand__(self, other):
        return _logical_or_bitwise(ew.logical_and, ew.bitwise_and, other, self)

    def __or__(self, other):
        return _logical_or_bitwise(ew.logical_or, ew.bitwise_or, self, other)

    def __ror__(self, other):
        return _logical_or_bitwise(ew.logical_or, ew.bitwise_or, other, self)

    def __xor__(self, other):
        return _logical_or_bitwise(ew.not_equal, ew.bitwise_xor, self, other)

    def __rxor__(self, other):
        return _logical_or_bitwise(ew.not_equal, ew.bitwise_xor, other, self)

    def __invert__(self):
        return _logical_or_bitwise(ew.logical_not, ew.invert, self)


    # ----- indexing -----
    def __getitem__(self, index):
        return getitem(self, index)

    # ----- NumPy's array methods -----
    # Each runs the entry that NumPy dispatch gives the NumPy function of that name, so
    # t.sum(axis) is np.sum(t, axis): NumPy's arguments and result dtypes, srcxform's ops,
    # differentiable on a tape and in a compiled function alike.
    def sum(self, axis=None, dtype=None, out=None, keepdims=False, **unsupported):
        return _numpy(np.sum)(self, axis, dtype, out, keepdims, **unsupported)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, **unsupported):
        return _numpy(np.mean)(self, axis, dtype, out, keepdims, **unsupported)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, **unsupported):
        return _numpy(np.prod)(self, axis, dtype, out, keepdims, **unsupported)

    def max(self, axis=None, out=None, keepdims=False, **unsupported):
        return _numpy(np.max)(self, axis, out, keepdims, **unsupported)

    def min(self, axis=None, out=None, keepdims=False, **unsupported):
        return _numpy(np.min)(self, axis, out, keepdims, **unsupported)

    def reshape(self, *shape, order="C"):
        """t.reshape(2, 3) or t.reshape((2, 3)), as NumPy's."""
        return _numpy(np.reshape)(self, _one_or_many(shape), order)

    def transpose(self, *axes):
        """t.transpose() reverses the axes; t.transpose(1, 0) or t.transpose((1, 0))
        permutes them, as NumPy's."""
        return _numpy(np.transpose)(self, _one_or_many(axes) if axes else None)

    def flatten(self, order="C"):
        return _numpy(np.reshape)(self, (-1,), order)

    ravel = flatten  # a Tensor is immutable: a copy and a view cannot be told apart

    def squeeze(self, axis=None):
        return _numpy(np.squeeze)(self, axis)

    def astype(self, dtype, copy=True):
        """self cast to dtype (srcxform.cast); `copy` has no effect on an immutable value."""
        return ew.cast(self, dtype)

    def dot(self, b, out=None):
        return _numpy(np.dot)(self, b, out=out)

    def clip(self, min=None, max=None, out=None, **kwargs):
        return _numpy(np.clip)(self, min, max, out, **kwargs)

    @property
    def size(self):
        """The number of elements, as NumPy's `.size` (a traced one stays symbolic)."""
        return _numpy(np.size)(self)

    # ----- conversion -----
    # A nested list holding tensors as one tensor, as TensorFlow packs it: what tensor.py's
    # conversions call (as_value, constant), below the ops that stack it.
    _pack = staticmethod(creation.pack)

    # ----- NumPy dispatch -----
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return numpy_dispatch.array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return numpy_dispatch.array_function(func, args, kwargs)

def _equality(op, x, other, unequal):
    """TensorFlow's == and !=: elementwise, except that None, or a value whose shape does
    not broadcast against x's, compares unequal as a whole (== is False) instead of
    raising (the elementwise ops equal/not_equal raise for those). A value that is no
    tensor at all is left to compare itself (pytest.approx does), else unequal."""
    if other is None:
        return unequal
    try:
        other = as_value(other, op.__name__)
    except TypeError:
        return NotImplemented
    try:
        broadcast_shapes(x.shape, other.shape)
    except ValueError:
        return Tensor._new(np.asarray(unequal))
    return op(x, other)


def _logical_or_bitwise(logical, bitwise, *operands):
    """The operators &, |, ^ and ~ as TensorFlow's tensors have them: logical on bools,
    bitwise on integers, a TypeError on floats."""
    values = [as_value(v, bitwise.__name__) for v in operands]
    kind = promote([v.aval for v in values])[0].kind
    if kind == "b":
        return logical(*values)
    if kind in "iu":
        return bitwise(*values)
    raise TypeError(f"{bitwise.__name__}: the operators &, |, ^ and ~ take bool or integer "
                    f"tensors, got {', '.join(v.aval.short() for v in values)}")


def _numpy(func):
    """The srcxform implementation NumPy dispatch runs for the NumPy function func."""
    return numpy_dispatch.FUNCTIONS[func]


def _one_or_many(args):
    """NumPy's `*shape` and `*axes`: one tuple or list (or None) stands for all of them."""
    if len(args) == 1 and (args[0] is None or isinstance(args[0], (tuple, list))):
        return args[0]
    return args


def _method(func):
    def method(self, *args, **kwargs):
        return _numpy(func)(self, *args, **kwargs)

    method.__name__, method.__doc__ = func.__name__, f"np.{func.__name__}(self, ...)"
    return method


def install():
    """Gives Value (and so Tensor, Variable and the tracer) the operators above."""
    for name, member in vars(_Operators).items():
        if name not in ("__module__", "__qualname__", "__doc__", "__slots__"):
            setattr(Value, name, member)
    for name in SAME_AS_FUNCTION:
        setattr(Value, name, _method(getattr(np, name)))
