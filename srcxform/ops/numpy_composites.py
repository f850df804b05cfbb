"""NumPy's functions that are several srcxform ops (pad, split, repeat, diff, triu, kron,
average, isclose, ...) and two ufuncs (logaddexp, hypot): composites all, so each has a
gradient and compiles where its parts do. They keep NumPy's signatures, result dtypes
and errors; an option srcxform cannot honour raises TypeError naming it.

Importing this module adds its entries to numpy_dispatch's FUNCTIONS and UFUNCS (ops/
imports it after numpy_dispatch); it declares no primitive.
"""

import itertools
import math
import operator

import numpy as np

from srcxform.core.aval import normalize_axis
from srcxform.core.errors import shape_error
from srcxform.core.tensor import Tensor, Value, as_value
from srcxform.ops import elementwise as ew
from srcxform.ops import layout, linalg, numpy_dispatch, reduce
from srcxform.ops.creation import iota
from srcxform.ops.numpy_dispatch import einsum_ops, reject, shape_ops

_NO_VALUE = np._NoValue  # NumPy's "not given", which diff's prepend and append default to


def _along(x, axis, index):
    return shape_ops.getitem(x, (slice(None),) * axis + (index,))


# ----- shape: pad, split, repeat, atleast, column_stack -----


def _pad(array, pad_width, mode="constant", **kwargs):
    """np.pad's constant, edge, reflect, symmetric and wrap modes: constant as tf.pad's,
    reflect and symmetric too where tf.pad's limits allow; else a gather of the indices
    NumPy's own pad gives (so widths past the axis' size repeat as NumPy's)."""
    a = as_value(array, "pad")
    allowed = {"constant": ("constant_values",), "reflect": ("reflect_type",),
               "symmetric": ("reflect_type",)}
    if not isinstance(mode, str) or mode not in ("constant", "edge", "reflect", "symmetric",
                                                 "wrap"):
        raise TypeError(f"numpy.pad: srcxform does not support mode={mode!r}")
    unknown = [k for k in kwargs if k not in allowed.get(mode, ())]
    if unknown:
        raise ValueError(f"numpy.pad: unsupported keyword arguments for mode '{mode}': "
                         f"{set(unknown)}")
    if kwargs.get("reflect_type", "even") != "even":
        raise TypeError("numpy.pad: srcxform does not support reflect_type='odd'")
    widths = np.asarray(pad_width)
    if widths.dtype.kind not in "iu":
        raise TypeError("numpy.pad: `pad_width` must be of integral type.")
    widths = np.broadcast_to(widths, (a.ndim, 2)).tolist()  # NumPy's broadcast, or its error
    if any(w < 0 for pair in widths for w in pair):
        raise ValueError("numpy.pad: index can't contain negative values")
    if a.ndim == 0:  # no axis to pad: NumPy returns the value
        return shape_ops.unchanged(a)
    if mode == "constant":
        return _pad_constant(a, widths, kwargs.get("constant_values", 0))
    for axis, (before, after) in enumerate(widths):
        n = int(a.shape[axis])
        limit = n - 1 if mode == "reflect" else n
        if mode in ("reflect", "symmetric") and max(before, after) <= limit and n > 1:
            pads = [[0, 0]] * axis + [[before, after]] + [[0, 0]] * (a.ndim - axis - 1)
            a = layout.pad(a, pads, mode.upper())
        elif before or after:
            rows = np.pad(np.arange(n), (before, after), mode)  # NumPy's error for n == 0
            a = shape_ops.gather(a, rows, axis=axis)
    return a


def _pad_constant(a, widths, values):
    """tf.pad's CONSTANT mode; per-axis values pad axis by axis, later axes over the
    corners, as NumPy's. Values are cast to a's dtype, as NumPy casts them."""
    if isinstance(values, Value):
        return layout.pad(a, widths, constant_values=ew.cast(values, a.dtype))
    values = np.broadcast_to(np.asarray(values), (a.ndim, 2)).astype(a.dtype)
    if (values == values.flat[0]).all():
        return layout.pad(a, widths, constant_values=Tensor._new(values.flat[0]))
    for axis, (pair, fills) in enumerate(zip(widths, values)):
        for side, (width, fill) in enumerate(zip(pair, fills)):
            pads = [[0, 0] for _ in range(a.ndim)]
            pads[axis][side] = width
            a = layout.pad(a, pads, constant_values=Tensor._new(fill))
    return a


def _splitting(name, equal):
    """np.split (equal pieces, or at indices) and np.array_split (the first n % sections
    pieces one longer); a list of tensors."""
    def call(ary, indices_or_sections, axis=0):
        a = as_value(ary, name)
        axis = normalize_axis(axis, a.ndim, f"numpy.{name}")
        n = int(a.shape[axis])
        if np.ndim(indices_or_sections) == 0:
            sections = operator.index(indices_or_sections)
            if sections <= 0:
                raise ValueError(f"numpy.{name}: number sections must be larger than 0.")
            if equal and n % sections:
                raise ValueError(f"numpy.{name}: array split does not result in an equal "
                                 f"division (axis {axis} of size {n} into {sections})")
            each, extra = divmod(n, sections)
            bounds = list(itertools.accumulate([each + 1] * extra + [each] * (sections - extra),
                                               initial=0))
        else:
            bounds = [0, *(operator.index(i) for i in indices_or_sections), n]
        return [_along(a, axis, slice(lo, hi)) for lo, hi in itertools.pairwise(bounds)]

    return call


def _repeat(a, repeats, axis=None):
    return layout.repeated(a, repeats, axis, "numpy.repeat")


def _atleast(name, least):
    """np.atleast_1d/2d: a 0-d value as (1,) or (1, 1), a vector as (1, n); one tensor
    for one argument, a tuple of them for several."""
    def call(*arys):
        out = []
        for x in arys:
            x = as_value(x, name)
            out.append(x if x.ndim >= least else
                       shape_ops.reshape(x, (1,) * (least - x.ndim) + tuple(x.shape)))
        return out[0] if len(out) == 1 else tuple(out)

    return call


def _column_stack(tup):
    """Vectors (and scalars) as columns, matrices as they are, joined along axis 1."""
    arrays = [as_value(v, "column_stack") for v in tup]
    return shape_ops.concat([shape_ops.reshape(v, (-1, 1)) if v.ndim < 2 else v
                             for v in arrays], 1)


# ----- differences and triangles -----


def _diff(a, n=1, axis=-1, prepend=_NO_VALUE, append=_NO_VALUE):
    """The n-th differences along axis (of bools, whether neighbours differ), after
    joining prepend and append (a scalar spread over the axis) as NumPy's."""
    a = as_value(a, "diff")
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"numpy.diff: order must be non-negative but got {n}")
    if n == 0:
        return a
    if a.ndim == 0:
        raise ValueError("numpy.diff: diff requires input that is at least one dimensional")
    axis = normalize_axis(axis, a.ndim, "numpy.diff")
    parts = []
    for value in (prepend, a, append):
        if value is not _NO_VALUE:  # NumPy makes an array of a Python number: float64
            v = as_value(value if isinstance(value, Value) else np.asarray(value), "diff")
            parts.append(v if v.ndim else shape_ops.broadcast_to(
                v, a.shape[:axis] + (1,) + a.shape[axis + 1:]))
    a = shape_ops.concat(parts, axis) if len(parts) > 1 else a
    for _ in range(n):
        later, earlier = _along(a, axis, slice(1, None)), _along(a, axis, slice(None, -1))
        a = ew.not_equal(later, earlier) if a.dtype == np.bool_ else later - earlier
    return a


def _triangle(name, upper):
    """np.triu/tril: zeros below (above) the k-th diagonal of the last two axes; a vector
    is the rows of a square matrix, as NumPy's."""
    def call(m, k=0):
        m = as_value(m, name)
        if m.ndim == 0:
            raise ValueError(f"numpy.{name}: expects an array of at least one axis")
        rows, cols = m.shape[-2:] if m.ndim > 1 else (m.shape[0], m.shape[0])
        below = shape_ops.reshape(iota(rows, np.int64), (rows, 1)) - iota(cols, np.int64)
        keep = ew.less_equal(below, -k) if upper else ew.greater_equal(below, -k)
        return ew.where(keep, m, ew.cast(0, m.dtype))

    return call


# ----- products -----


def _inner(a, b):
    """The sums of products over both last axes (a scalar's: a product)."""
    a, b = as_value(a, "inner"), as_value(b, "inner")
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.shape[-1] != b.shape[-1]:
        raise shape_error(f"numpy.inner: shapes {tuple(a.shape)} and {tuple(b.shape)} not "
                          "aligned: their last axes differ")
    return einsum_ops.tensordot(a, b, [[a.ndim - 1], [b.ndim - 1]])


def _vdot(a, b):
    """The dot product of the flattened arrays (real ones: no conjugate to take)."""
    a, b = (shape_ops.reshape(as_value(x, "vdot"), (-1,)) for x in (a, b))
    if a.shape[0] != b.shape[0]:
        raise shape_error(f"numpy.vdot: the arrays have {a.shape[0]} and {b.shape[0]} "
                          "elements: they must have as many")
    return linalg.dot(a, b)


def _kron(a, b):
    """Each element of a times the whole of b, as blocks (ranks padded with leading
    ones): a's axes interleaved with b's, multiplied by broadcasting, merged pairwise."""
    a, b = as_value(a, "kron"), as_value(b, "kron")
    nd = max(a.ndim, b.ndim)
    if nd == 0:
        return a * b
    a, b = (shape_ops.reshape(x, (1,) * (nd - x.ndim) + tuple(x.shape)) for x in (a, b))
    spread = (shape_ops.reshape(a, tuple(d for n in a.shape for d in (n, 1))) *
              shape_ops.reshape(b, tuple(d for n in b.shape for d in (1, n))))
    return shape_ops.reshape(spread, tuple(m * n for m, n in zip(a.shape, b.shape)))


# ----- ufuncs: logaddexp, hypot -----


def _weak_sample(x):
    """A value of x's dtype for NumPy to find a ufunc's dtype with: a Python number for a
    weak one (NEP 50)."""
    if x.aval.weak:
        return {"b": True, "i": 1, "u": 1}.get(x.dtype.kind, 1.0)
    return np.ones(1, x.dtype)


def _in_numpy_dtype(ufunc, *xs):
    """xs as values in the dtype NumPy's ufunc computes them in (ints in floats)."""
    xs = [as_value(x, ufunc.__name__) for x in xs]
    want = np.asarray(ufunc(*(_weak_sample(x) for x in xs))).dtype
    return [x if x.dtype == want or x.aval.weak and x.dtype.kind == "f" else ew.cast(x, want)
            for x in xs]


def _logaddexp(x1, x2):
    """log(exp(a) + exp(b)) as max + log1p(exp(-|a - b|)), finite for large inputs; where
    a == b (both infinite too) it is a / 2 + b / 2 + log 2 (not (a + b) / 2: 1e308 + 1e308
    overflows), its gradient 1/2 each."""
    a, b = _in_numpy_dtype(np.logaddexp, x1, x2)
    same = ew.equal(a, b)
    gap = ew.where(same, 0, a - b)  # inf - inf is NaN: never computed into a gradient
    spread = ew.maximum(a, b) + ew.log1p(ew.exp(-ew.abs(gap)))
    return ew.where(same, a * 0.5 + b * 0.5 + math.log(2), spread)


def _hypot(x1, x2):
    """sqrt(a² + b²) scaled by max(|a|, |b|) (its gradient stopped: the scale cancels), so
    large inputs do not overflow; inf where either is infinite, NaN or not, as NumPy's.
    Its gradient is a / hypot, 0 at (0, 0) and where either is infinite."""
    a, b = _in_numpy_dtype(np.hypot, x1, x2)
    infinite = ew.logical_or(ew.is_inf(a), ew.is_inf(b))
    # zeros where the result is inf regardless: an inf met in the VJP would make NaNs
    a, b = ew.where(infinite, 0, a), ew.where(infinite, 0, b)
    scale = ew.stop_gradient(ew.maximum(ew.abs(a), ew.abs(b)))
    scale = ew.where(ew.equal(scale, 0), 1, scale)
    squares = ew.square(a / scale) + ew.square(b / scale)
    zero = ew.equal(squares, 0)
    out = scale * ew.where(zero, 0, ew.sqrt(ew.where(zero, 1, squares)))
    return ew.where(infinite, np.inf, out)


# ----- statistics and comparisons -----


def _average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """The mean, or the weighted mean sum(a * w) / sum(w) along axis; weights of a's shape,
    or a vector along an int axis. Eagerly, weights that sum to 0 raise ZeroDivisionError,
    as NumPy's."""
    a = as_value(a, "average")
    if weights is None:
        avg = numpy_dispatch.FUNCTIONS[np.mean](a, axis=axis, keepdims=keepdims)
        count = math.prod(a.shape) // max(math.prod(avg.shape), 1)
        scale = shape_ops.broadcast_to(ew.cast(count, avg.dtype), avg.shape)
        return (avg, scale) if returned else avg
    w = as_value(weights, "average")
    want = np.average(np.ones(1, a.dtype), weights=np.ones(1, w.dtype)).dtype
    a, w = (x if x.dtype == want else ew.cast(x, want) for x in (a, w))
    if tuple(w.shape) != tuple(a.shape):
        if axis is None:
            raise TypeError("numpy.average: Axis must be specified when shapes of a and "
                            "weights differ.")
        if w.ndim != 1 or np.ndim(axis):
            raise TypeError("numpy.average: 1D weights expected when shapes of a and "
                            "weights differ (along one int axis).")
        axis = normalize_axis(axis, a.ndim, "numpy.average")
        if w.shape[0] != a.shape[axis]:
            raise ValueError("numpy.average: Length of weights not compatible with "
                             "specified axis.")
        w = shape_ops.broadcast_to(shape_ops.reshape(
            w, tuple(-1 if i == axis else 1 for i in range(a.ndim))), a.shape)
    scale = reduce.reduce_sum(w, axis=axis, keepdims=keepdims)
    if scale._trace is None and np.any(scale._array == 0):
        raise ZeroDivisionError("numpy.average: Weights sum to zero, can't be normalized")
    avg = reduce.reduce_sum(a * w, axis=axis, keepdims=keepdims) / scale
    return (avg, shape_ops.broadcast_to(scale, avg.shape)) if returned else avg


def _ptp(a, axis=None, out=None, keepdims=False):
    """The range, max - min (NumPy's: an empty axis raises, bools are refused)."""
    reject("ptp", out=out)
    a = as_value(a, "ptp")
    if a.dtype == np.bool_:
        raise TypeError("numpy.ptp: the range of bools is a subtraction of bools, which "
                        "NumPy refuses too")
    high = numpy_dispatch.FUNCTIONS[np.max](a, axis=axis, keepdims=keepdims)
    return high - numpy_dispatch.FUNCTIONS[np.min](a, axis=axis, keepdims=keepdims)


def _isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """NumPy's rule: |a - b| <= atol + rtol * |b| where b is finite, or a == b (equal
    infinities); b taken as floats. Bools, no gradient."""
    y = float(b) if isinstance(b, int) and not isinstance(b, bool) else b
    x, y = as_value(a, "isclose"), as_value(y, "isclose")
    if y.dtype.kind in "biu":
        y = ew.cast(y, np.result_type(y.dtype, 1.0))
    near = ew.less_equal(ew.abs(x - y), atol + rtol * ew.abs(y))
    result = ew.logical_or(ew.logical_and(near, ew.is_finite(y)), ew.equal(x, y))
    if equal_nan and x.dtype.kind == "f":
        result = ew.logical_or(result, ew.logical_and(ew.is_nan(x), ew.is_nan(y)))
    return result


def _allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element is close (isclose): a Python bool eagerly, as NumPy's; a
    traced bool scalar while compiling, whose value comes at run time."""
    every = reduce.reduce_all(_isclose(a, b, rtol, atol, equal_nan))
    return every if every._trace is not None else bool(every._array)


def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **unsupported):
    """fill_value (cast to dtype, else a's, as NumPy casts it) spread over a's shape or
    `shape`; a gradient for a tensor fill_value, none for a."""
    reject("full_like", order=None if order == "K" else order, **unsupported)
    a = as_value(a, "full_like")
    dtype = np.dtype(dtype) if dtype is not None else a.dtype
    shape = tuple(a.shape) if shape is None else shape
    if isinstance(fill_value, Value):
        value = fill_value if fill_value.dtype == dtype else ew.cast(fill_value, dtype)
    else:
        value = Tensor._new(np.asarray(fill_value).astype(dtype))
    return shape_ops.broadcast_to(value, shape)


FUNCTIONS = {
    np.pad: _pad,
    np.split: _splitting("split", equal=True),
    np.array_split: _splitting("array_split", equal=False),
    np.repeat: _repeat,
    np.diff: _diff,
    np.triu: _triangle("triu", upper=True),
    np.tril: _triangle("tril", upper=False),
    np.atleast_1d: _atleast("atleast_1d", 1),
    np.atleast_2d: _atleast("atleast_2d", 2),
    np.full_like: _full_like,
    np.inner: _inner,
    np.vdot: _vdot,
    np.kron: _kron,
    np.column_stack: _column_stack,
    np.average: _average,
    np.ptp: _ptp,
    np.isclose: _isclose,
    np.allclose: _allclose,
    np.count_nonzero: lambda a, axis=None, *, keepdims=False: reduce.count_nonzero(
        a, axis, keepdims),
}
UFUNCS = {np.logaddexp: _logaddexp, np.hypot: _hypot}

numpy_dispatch.FUNCTIONS.update(FUNCTIONS)
numpy_dispatch.UFUNCS.update(UFUNCS)
