"""Abstract values: a shape and a dtype, and the shape arithmetic every shape rule uses.

Shape rules go through the helpers here (broadcast, equal dims, slice lengths, sizes)
rather than doing arithmetic on dims themselves, so that a dim may be a plain int
(eager) or a symbolic size (tracing) without the rules knowing which.
"""

import operator
from dataclasses import dataclass

import numpy as np

from srcxform.core.dims import concrete, expr_of, local, symbol_text
from srcxform.core.errors import shape_error

_SHORT_DTYPE = {"float16": "f16", "float32": "f32", "float64": "f64", "int32": "i32",
                "int64": "i64", "bool": "bool", "int8": "i8", "int16": "i16", "uint8": "u8"}


@dataclass(frozen=True, slots=True)
class Aval:
    """What is known of a value before it exists: its shape, dtype and weakness.

    A weak value comes from a Python scalar and takes the dtype of the arrays it meets.
    """

    shape: tuple
    dtype: np.dtype
    weak: bool = False

    @property
    def ndim(self):
        return len(self.shape)

    def short(self, symbolic=False):
        """`f64[3,4]`: the dtype and the sizes of this call, as a message shows them; with
        `symbolic`, traced sizes as the expressions a kernel computes (`f64[n0,4]`), as the
        printed IR and a kernel's docstring show them (they hold for every call)."""
        dims = ",".join(symbol_text(d) if symbolic else str(concrete(d)) for d in self.shape)
        name = _SHORT_DTYPE.get(self.dtype.name, self.dtype.name)
        return f"{name}[{dims}]" + ("~" if self.weak else "")


def same_shape(a, b):
    """Whether two shapes are the same, comparing traced sizes by expression: a decision
    that holds for every size, so it records no guard."""
    return len(a) == len(b) and all(map(same_dim, a, b))


def same_dim(a, b):
    """Whether two dims are the same size for every call (traced sizes by expression)."""
    return expr_of(a) == expr_of(b)


def is_one(d):
    """Whether a dim is 1 in every call: a literal 1, not a traced size that is 1 now."""
    return d == 1 and not hasattr(d, "expr")


def dims_equal(a, b):
    """Whether two dims are the same size (symbolic dims compare by identity of their size)."""
    return a == b


def broadcast_shapes(*shapes):
    """NumPy's broadcasting of shapes; raises ValueError (no op name: the caller adds it)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(ndim):
        dim = 1
        for shape in shapes:
            d = shape[axis - ndim + len(shape)] if axis - ndim + len(shape) >= 0 else 1
            if d == 1:
                continue
            if dim == 1:
                dim = d
            elif not dims_equal(dim, d):
                raise ValueError(f"dims {dim!r} and {d!r} do not broadcast")
        out.append(dim)
    return tuple(out)


def normalize_slice(n, s):
    """(start, stop, step) of range(n)[s] as Python's slice.indices gives them, each an
    expression of n when n is a traced size (its comparisons become guards), and
    canonical: start and stop within the axis, the empty slice as (0, 0, 1), and stop
    None where a negative step runs past index 0 (stop -1 would mean the last element)."""
    step = 1 if s.step is None else s.step
    if step == 0:
        raise ValueError("slice step cannot be zero")
    lower, upper = (0, n) if step > 0 else (-1, n - 1)
    start = _slice_end(n, s.start, lower, upper, upper if step < 0 else lower)
    stop = _slice_end(n, s.stop, lower, upper, lower if step < 0 else upper)
    if not (stop > start if step > 0 else start > stop):
        return 0, 0, 1
    return start, (None if step < 0 and _is_constant(stop, -1) else stop), step


def _slice_end(n, end, lower, upper, default):
    """A slice's start or stop clipped to [lower, upper] as slice.indices does; a value at
    or below `lower` is the constant `lower` (never a size that happens to equal it)."""
    if end is None:
        return default
    end = end + n if end < 0 else end
    return lower if end <= lower else min(upper, end)


def _is_constant(d, k):
    return not hasattr(d, "expr") and d == k


def is_zero(d):
    """Whether a dim or index is 0 in every call: a literal 0."""
    return _is_constant(d, 0)


def slice_length(n, s):
    """The length of range(n)[s] for a slice s, an expression of n when n is traced."""
    start, stop, step = normalize_slice(n, s)
    if step > 0:
        return (stop - start + step - 1) // step
    stop = -1 if stop is None else stop
    return (start - stop - step - 1) // -step


def as_size(d, op):
    """A dim argument as an int, keeping a traced size symbolic (a Dim)."""
    d = local(d)
    if isinstance(d, int) and not isinstance(d, bool):
        return d
    if isinstance(d, np.integer):
        return int(d)
    raise TypeError(f"{op}: a dimension must be an integer, got {d!r}")


def size(shape):
    """The number of elements of a shape."""
    total = 1
    for d in shape:
        total = total * d
    return total


def spans(sizes):
    """(start, stop) of each of pieces of these sizes laid end to end (a concat's pieces
    along its axis); the sizes may be traced Dims."""
    found, start = [], 0
    for n in sizes:
        found.append((start, start + n))
        start = start + n
    return found


def axis_index(a, axis, op):
    """An entry `a` of an axis argument `axis` as an int: an int, or an integer scalar
    array or tensor; a float, bool or string raises, naming `op` (int() truncated 1.7)."""
    try:
        if isinstance(a, (bool, np.bool_)):
            raise TypeError
        return operator.index(a)
    except TypeError:
        raise TypeError(f"{op}: an axis must be an int, got {axis!r}") from None


def normalize_axis(axis, ndim, op):
    """One axis (an int, an integer scalar array or tensor, or a sequence of exactly one)
    as a non-negative int. A sequence of another length raises: the smallest of several
    was taken, and none raised a bare IndexError."""
    axes = normalize_axes(axis, ndim, op)
    if axis is None or np.ndim(axis) and len(axes) != 1:
        raise TypeError(f"{op}: axis must be one int, got {axis!r}")
    return axes[0]


def normalize_axes(axis, ndim, op):
    """An axis argument (None, int or sequence) as a sorted tuple of non-negative axes. A
    scalar has none (TensorFlow's rule; NumPy's functions take 0 and -1 as its axis, which
    ops/numpy_dispatch.py reads as None)."""
    if axis is None:
        return tuple(range(ndim))
    if not isinstance(axis, (int, np.integer, tuple, list)):  # a tensor's or array's values
        axis = np.asarray(axis).tolist()
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    out = []
    for a in axes:
        a = axis_index(a, axis, op)
        if not -ndim <= a < ndim:
            raise shape_error(f"{op}: axis {a} is out of range for a value of rank {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise shape_error(f"{op}: repeated axis in {axis}")
    return tuple(sorted(out))
