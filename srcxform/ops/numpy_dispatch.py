"""NumPy dispatch: NumPy callables (and SciPy's special functions, ufuncs too) applied
to srcxform values run srcxform's ops.

`__array_ufunc__` and `__array_function__` on values land here. Each entry keeps NumPy's
signature and result dtype; an argument srcxform cannot honour (out=, where=, order='F')
raises TypeError rather than being ignored. A NumPy callable with no srcxform op raises
TypeError (eager) or TracingError (traced), naming it.
"""

import dis
import functools
import importlib
import operator
import sys
from collections import namedtuple

import numpy as np

from srcxform.core.aval import axis_index, normalize_axes, normalize_axis, size
from srcxform.core.errors import TracingError
from srcxform.core.errors import user_frame_object, user_line
from srcxform.ops import elementwise as ew
from srcxform.ops import cumulative, lapack, layout, linalg, nn, reduce, selection
from srcxform.ops import mathfuncs as mf
from srcxform.ops.creation import ones_like, zeros_like
from srcxform.core.primitive import REGISTRY
from srcxform.core.tensor import Value, as_value
from srcxform.core.tree import tree_flatten

# The module: srcxform.ops.shape as an attribute is tf.shape, the function.
shape_ops = importlib.import_module("srcxform.ops.shape")
einsum_ops = importlib.import_module("srcxform.ops.einsum")  # srcxform.ops.einsum is einsum


def _operator(op, name):
    """A ufunc computed as the Python operator `op` on its first operand made a Tensor."""
    return lambda x, *rest: op(as_value(x, name), *rest)


# The ufuncs a primitive computes as they are (its `numpy`), and those that take more.
UFUNCS = {ufunc: prim.bind for prim in REGISTRY.values() for ufunc in prim.numpy}
_PRIMITIVE_UFUNCS = frozenset(UFUNCS)  # whose primitives' kinds are TensorFlow's (_numpy_loop)
# What NumPy's loops compute on bools alone, where the primitives refuse them.
_ON_BOOLS = {np.add: ew.logical_or, np.multiply: ew.logical_and, np.maximum: ew.logical_or,
             np.minimum: ew.logical_and}
UFUNCS.update({
    np.logical_and: lambda x, y: ew.logical_and(_truth(x), _truth(y)),
    np.logical_or: lambda x, y: ew.logical_or(_truth(x), _truth(y)),
    np.logical_not: lambda x: ew.logical_not(_truth(x)),
    np.add: ew.add, np.subtract: ew.subtract,  # their primitives', chains folded (reroll.py)
    np.square: ew.square, np.matmul: linalg.numpy_matmul, np.positive: lambda x: x,
    np.log2: mf.log2, np.log10: mf.log10, np.exp2: mf.exp2,  # composites
})
# SciPy's special functions are ufuncs too: they dispatch alike, by name in scipy.special,
# which srcxform does not import (its import is slow); `ufuncs()` adds them once the program has.
SCIPY_SPECIAL = {"erf": mf.erf, "erfc": mf.erfc, "xlogy": mf.xlogy, "gammaln": mf.lgamma,
                 "psi": mf.digamma, "expit": ew.sigmoid, "log_expit": nn.log_sigmoid}
# Computed as the operators: logical on bools, bitwise on integers (np.bitwise_not is
# np.invert).
UFUNCS.update({np.bitwise_and: _operator(operator.and_, "bitwise_and"),
               np.bitwise_or: _operator(operator.or_, "bitwise_or"),
               np.bitwise_xor: _operator(operator.xor, "bitwise_xor"),
               np.invert: _operator(operator.invert, "invert")})
# Those a bool beside an integer reaches as NumPy's loop takes it ((x > 0) & 1 is int64).
_NUMPY_LOOPS = _PRIMITIVE_UFUNCS | {np.bitwise_and, np.bitwise_or, np.bitwise_xor}


def _rounding(name, op):
    """np.rint, floor, ceil, trunc (and fix) in NumPy's result dtype: an integer has nothing
    to round and keeps its dtype, except in rint, which gives a float (helper 128: rint of
    int32 stayed int32; ceil and trunc of one raised)."""
    def call(x):
        x = as_value(x, name)
        want = getattr(np, name)(np.ones(1, x.aval.dtype)).dtype
        if want.kind != "f":
            return x
        return op(x if x.aval.dtype == want else ew.cast(x, want))

    return call


def _trunc(x):
    return ew.where(ew.less(x, 0), ew.ceil(x), ew.floor(x))


UFUNCS.update({np.rint: _rounding("rint", ew.round), np.floor: _rounding("floor", ew.floor),
               np.ceil: _rounding("ceil", ew.ceil), np.trunc: _rounding("trunc", _trunc)})


def _truth(x):
    """x as bools, its elements' truth (NumPy's logical functions take any dtype, where
    TensorFlow's take bools only)."""
    x = as_value(x, "logical")
    return x if x.dtype == np.bool_ else ew.cast(x, np.bool_)


def reject(name, **options):
    """Raises TypeError naming the options that were given (not None)."""
    given = [k for k, v in options.items() if v is not None]
    if given:
        raise TypeError(f"{user_line()}\n  numpy.{name}: srcxform does not support the "
                        f"argument(s) {', '.join(given)}")


# ----- reductions -----


def _scalar_axis(a, axis):
    """The axis NumPy's reductions and accumulations as ufuncs (sum, prod, max, min, cumsum,
    cumprod), argmax, argmin, argsort, take and squeeze mean: a scalar's axis 0 (or -1)
    is None. (np.mean, var, std and sort raise there.)"""
    if a.ndim or np.ndim(axis) or axis is None or isinstance(axis, (bool, np.bool_)):
        return axis  # (a tuple (0,) of a scalar's axis is an error in NumPy)
    try:
        return None if operator.index(axis) in (0, -1) else axis  # an int, or a 0-d one
    except TypeError:
        return axis


def _accumulating(func, op):
    """np.sum/prod/mean: NumPy's result dtype (int32 sums to int64, int means to float64)."""
    def call(a, axis=None, dtype=None, out=None, keepdims=False, **unsupported):
        reject(func.__name__, out=out, **unsupported)
        a = as_value(a, func.__name__)
        axis = axis if func is np.mean else _scalar_axis(a, axis)
        want = func(np.ones(1, a.dtype), dtype=dtype).dtype
        return op(a if a.dtype == want else ew.cast(a, want), axis=axis, keepdims=keepdims)

    return call


def _cumulative(func, op):
    """np.cumsum/cumprod: over the flattened array without an axis; NumPy's dtype."""
    def call(a, axis=None, dtype=None, out=None):
        reject(func.__name__, out=out)
        a = as_value(a, func.__name__)
        axis = _scalar_axis(a, axis)
        want = func(np.ones(1, a.dtype), dtype=dtype).dtype
        a = a if a.dtype == want else ew.cast(a, want)
        return op(shape_ops.reshape(a, (-1,)), 0) if axis is None else op(a, axis)

    return call


def _spread(func, op):
    """np.var/std, with ddof: the mean square deviation times n / (n - ddof)."""
    def call(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **unsupported):
        reject(func.__name__, out=out, **unsupported)
        a = as_value(a, func.__name__)
        want = func(np.ones(2, a.dtype), dtype=dtype).dtype
        a = a if a.dtype == want else ew.cast(a, want)
        if not ddof:
            return op(a, axis=axis, keepdims=keepdims)
        count = size([a.shape[i] for i in normalize_axes(axis, a.ndim, func.__name__)])
        variance = reduce.reduce_variance(a, axis=axis, keepdims=keepdims)
        # NumPy's divisor, max(n - ddof, 0): a ddof past n gives inf, not a negative value
        divisor = ew.maximum(ew.cast(count - ddof, want), ew.cast(0, want))
        variance = variance * ew.cast(count, want) / divisor
        return variance if func is np.var else ew.sqrt(variance)

    return call


def _extremum(func, op):
    """np.max/min/amax/amin."""
    def call(a, axis=None, out=None, keepdims=False, **unsupported):
        reject(func.__name__, out=out, **unsupported)
        a = as_value(a, func.__name__)
        axis = _scalar_axis(a, axis)
        # NumPy raises where an axis reduced has no element (TensorFlow gives -inf or inf).
        if any(a.shape[i] == 0 for i in normalize_axes(axis, a.ndim, func.__name__)):
            raise ValueError(f"{func.__name__}: a zero-size array has no maximum or minimum "
                             f"(shape {tuple(a.shape)}, axis {axis}), as in NumPy\n  at "
                             f"{user_line()}")
        if a.dtype == np.bool_:  # NumPy's max of bools is any, its min all
            on_bools = reduce.reduce_any if op is reduce.reduce_max else reduce.reduce_all
            return on_bools(a, axis=axis, keepdims=keepdims)
        return op(a, axis=axis, keepdims=keepdims)

    return call


def _any_all(func, op):
    """np.any/all: of any dtype, each element's truth (x != 0), as NumPy's."""
    def call(a, axis=None, out=None, keepdims=False, **unsupported):
        reject(func.__name__, out=out, **unsupported)
        a = as_value(a, func.__name__)
        truth = a if a.dtype == np.bool_ else ew.not_equal(a, ew.cast(0, a.dtype))
        return op(truth, axis=_scalar_axis(a, axis), keepdims=keepdims)

    return call


# ----- shape -----


def _ravel(a, order="C"):
    reject("ravel", order=None if order == "C" else order)
    return shape_ops.reshape(a, (-1,))


def _flip(m, axis=None):
    m = as_value(m, "flip")
    return layout.reverse(m, list(range(m.ndim)) if axis is None else
                          normalize_axes(axis, m.ndim, "numpy.flip"))


def _moveaxis(a, source, destination):
    """The axes `source` moved to `destination`, the others in their order (NumPy's)."""
    a = as_value(a, "moveaxis")
    source, destination = ([normalize_axis(i, a.ndim, "numpy.moveaxis")
                            for i in np.atleast_1d(axes)] for axes in (source, destination))
    if len(source) != len(destination):
        raise ValueError("numpy.moveaxis: `source` and `destination` arguments must have the "
                         "same number of elements")
    order = [i for i in range(a.ndim) if i not in source]
    for to, axis in sorted(zip(destination, source)):
        order.insert(to, axis)
    return shape_ops.transpose(a, order)


def _swapaxes(a, axis1, axis2):
    a = as_value(a, "swapaxes")
    order = list(range(a.ndim))
    i, j = (normalize_axis(k, a.ndim, "numpy.swapaxes") for k in (axis1, axis2))
    order[i], order[j] = j, i
    return shape_ops.transpose(a, order)


def _stacked_along(name, axis_of, least):
    """np.vstack/hstack: the arrays of rank `least` at least, joined along axis_of(rank)."""
    def call(tup, *, dtype=None, casting="same_kind"):
        reject(name, dtype=dtype)
        arrays = [as_value(a, name) for a in tup]
        arrays = [shape_ops.reshape(a, (1,) * (least - a.ndim) + tuple(a.shape))
                  if a.ndim < least else a for a in arrays]
        return shape_ops.concat(arrays, axis_of(arrays[0].ndim))

    return call


def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    reject("reshape", order=None if order == "C" else order)
    return shape_ops.reshape(a, newshape if shape is None else shape)


def _expand_dims(a, axis):
    """One or several new axes, numbered in the result (NumPy's rule)."""
    a = as_value(a, "expand_dims")
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    ndim = a.ndim + len(axes)
    axes = normalize_axes(axes, ndim, "numpy.expand_dims")
    dims = iter(a.shape)
    return shape_ops.reshape(a, tuple(1 if i in axes else next(dims) for i in range(ndim)))


def _concatenate(arrays, axis=0, out=None, **unsupported):
    reject("concatenate", out=out, **unsupported)
    if axis is None:  # NumPy flattens the arrays first
        return shape_ops.concat([shape_ops.reshape(a, (-1,)) for a in arrays], 0)
    return shape_ops.concat(arrays, axis)


def _stack(arrays, axis=0, out=None, **unsupported):
    reject("stack", out=out, **unsupported)
    return shape_ops.stack(arrays, axis)


def _tile(A, reps):
    """NumPy pads the shorter of A's shape and reps with leading ones."""
    a = as_value(A, "tile")
    reps = tuple(operator.index(r) for r in np.atleast_1d(reps))  # 2.7 raises, as NumPy
    n = max(a.ndim, len(reps))
    a = shape_ops.reshape(a, (1,) * (n - a.ndim) + a.shape)
    return shape_ops.tile(a, (1,) * (n - len(reps)) + reps)


def _squeeze(a, axis=None):
    a = as_value(a, "squeeze")
    return shape_ops.squeeze(a, _scalar_axis(a, axis))


def _take(a, indices, axis=None, out=None, mode="raise"):
    reject("take", out=out, mode=None if mode == "raise" else mode)
    a = as_value(a, "take")
    if _scalar_axis(a, axis) is None:  # NumPy indexes the flattened array
        return shape_ops.gather(shape_ops.reshape(a, (-1,)), indices)
    return shape_ops.gather(a, indices, axis)


# ----- selection -----


def _flat_or(a, axis, op):
    """a and the axis NumPy means: the flattened array for axis=None."""
    a = as_value(a, op)
    return (shape_ops.reshape(a, (-1,)), 0) if axis is None else (a, axis)


def _arg_extreme(func, op):
    """np.argmax/argmin: NumPy's int64 (intp); NaNs skipped, as TensorFlow's (NumPy
    returns the first NaN's index)."""
    def call(a, axis=None, out=None, *, keepdims=False):
        reject(func.__name__, out=out, keepdims=keepdims or None)
        a = as_value(a, func.__name__)
        a, axis = _flat_or(a, _scalar_axis(a, axis), func.__name__)
        return op(a, axis=axis, output_type=np.int64)

    return call


def _sorting(func, op):
    """np.sort/argsort: any kind sorts stably (NumPy's 'stable'); argsort gives int64."""
    def call(a, axis=-1, kind=None, order=None, *, stable=None):
        reject(func.__name__, order=order)
        a = as_value(a, func.__name__)  # a scalar's argsort is [0]; its sort raises
        a, axis = _flat_or(a, _scalar_axis(a, axis) if func is np.argsort else axis,
                           func.__name__)
        out = op(a, axis=axis)
        return ew.cast(out, np.int64) if func is np.argsort else out

    return call


# ----- elementwise and linear algebra -----


def _where(condition, x=None, y=None):
    c = as_value(condition, "where")
    return ew.where(c if c.dtype == np.bool_ else ew.not_equal(c, 0), x, y)


def _clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **unsupported):
    reject("clip", out=out, **unsupported)
    lo, hi = (min if a_min is None else a_min), (max if a_max is None else a_max)
    if lo is not None:
        a = ew.maximum(a, lo)
    return a if hi is None else ew.minimum(a, hi)


def _round(a, decimals=0, out=None):
    reject("round", out=out, decimals=decimals or None)
    return ew.round(a)


def _no_out(name, op):
    """A NumPy function of two arrays whose only option is out= (given by position too)."""
    def call(a, b, out=None):
        reject(name, out=out)
        return op(a, b)

    return call


def _like(make, name):
    def call(a, dtype=None, **unsupported):
        reject(name, **unsupported)
        return make(a, dtype)

    return call


# ----- np.linalg, einsum, tensordot, trace -----


SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
QRResult = namedtuple("QRResult", ["Q", "R"])


def _in_floats(func):
    """A numpy.linalg function on integer and bool arrays as NumPy computes it: in float64
    (srcxform's LAPACK ops take floats only)."""
    def call(*args, **kwargs):
        return func(*(ew.cast(a, np.float64) if isinstance(a, (Value, np.ndarray)) and
                      a.dtype.kind in "biu" else a for a in args), **kwargs)

    return call


def _slogdet(a):
    return SlogdetResult(*lapack.slogdet(a))


def _solve(a, b):
    """NumPy 2's rule: b is one vector when it has rank 1, else (..., n, k). Mixed float
    dtypes promote, as in NumPy (tf.linalg.solve takes one dtype, as TensorFlow's)."""
    a, b = as_value(a, "solve"), as_value(b, "solve")
    dtype = np.result_type(a.dtype, b.dtype)
    a, b = (x if x.dtype == dtype else ew.cast(x, dtype) for x in (a, b))
    if b.ndim != 1:
        return lapack.solve(a, b)
    # one vector for every matrix of a stack: (..., n), not the stack's solutions flattened
    return shape_ops.squeeze(lapack.solve(a, shape_ops.expand_dims(b, -1)), -1)


def _cholesky(a, /, *, upper=False):
    lower = lapack.cholesky(a)
    return linalg.matrix_transpose(lower) if upper else lower


def _lower_of(a, UPLO):
    """a with the triangle UPLO names in its lower one (eigh reads the lower)."""
    if UPLO not in ("L", "U"):
        raise ValueError(f"numpy.linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    return linalg.matrix_transpose(a) if UPLO == "U" else a


def _eigh(a, UPLO="L"):
    return EighResult(*lapack.eigh(_lower_of(a, UPLO)))


def _svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    reject("linalg.svd", hermitian=hermitian or None)  # it was ignored (helper 128)
    if not compute_uv:
        return lapack.svd(a, compute_uv=False)
    s, u, v = lapack.svd(a, full_matrices=full_matrices)
    return SVDResult(u, s, linalg.matrix_transpose(v))


def _qr(a, mode="reduced"):
    """NumPy's modes but 'raw' (LAPACK's Householder form); 'r' alone is r."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"numpy.linalg.qr: mode must be 'reduced', 'complete' or 'r' "
                         f"('raw' is not supported), got {mode!r}")
    q, r = lapack.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def _norm(x, ord=None, axis=None, keepdims=False):
    """NumPy's defaults: the 2-norm of vectors, Frobenius's of matrices, of the flattened
    array when neither ord nor axis is given."""
    x = as_value(x, "norm")
    if np.ndim(axis) == 0 and axis is not None:  # an int, or a 0-d array or tensor's
        axis = axis_index(axis, axis, "numpy.linalg.norm")
    if axis is None and ord is not None:
        if x.ndim not in (1, 2):
            raise ValueError("numpy.linalg.norm: ord needs a vector or a matrix, or an axis")
        axis = 0 if x.ndim == 1 else (0, 1)
    matrix = isinstance(axis, (tuple, list)) and len(axis) == 2
    if isinstance(axis, (tuple, list)) and len(axis) == 1:
        axis = axis[0]
    if ord is None:
        ord = "fro" if matrix else "euclidean"
    if matrix and ord not in ("fro", 1, 2, np.inf) or not matrix and ord == "fro":
        raise TypeError(f"numpy.linalg.norm: srcxform does not support ord={ord!r} here")
    if (isinstance(ord, str) or ord > 0) and \
            any(x.shape[i] == 0 for i in normalize_axes(axis, x.ndim, "numpy.linalg.norm")):
        ord = "euclidean"  # NumPy's norm of nothing is 0 by every positive ord (tf.norm's
        # largest ones -inf, as TensorFlow's: helper 124); the others raise as they do
        # where there is something (helper 126)
    return lapack.norm(x, ord=ord, axis=axis, keepdims=keepdims)


def _einsum(subscripts, *operands, out=None, dtype=None, order="K", casting="safe",
            optimize=False):
    reject("einsum", out=out, dtype=dtype)
    return einsum_ops.einsum(subscripts, *operands)


def _last_two(a, axis1, axis2, name):
    """a with axes axis1 and axis2 moved last (the matrices tf.linalg's ops take)."""
    a = as_value(a, name)
    first, second = (normalize_axis(k, a.ndim, f"numpy.{name}") for k in (axis1, axis2))
    if first == second:
        raise ValueError(f"numpy.{name}: axis1 and axis2 cannot be the same, as in NumPy")
    rest = tuple(k for k in range(a.ndim) if k not in (first, second))
    return shape_ops.transpose(a, rest + (first, second))


def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """The sum of the diagonal of axes axis1 and axis2 (NumPy's default: the first two), in
    NumPy's dtype (np.sum's: small ints sum to int64)."""
    reject("trace", out=out, offset=offset or None,
            dtype=dtype if np.dtype(dtype or np.int64) == np.bool_ else None)
    a = _last_two(a, axis1, axis2, "trace")
    want = np.trace(np.ones((1, 1), a.dtype), dtype=dtype).dtype
    return linalg.trace(a if a.dtype == want else ew.cast(a, want))


def _diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal of axes axis1 and axis2, as the last axis (NumPy's rule)."""
    reject("diagonal", offset=offset or None)
    return linalg.diag_part(_last_two(a, axis1, axis2, "diagonal"))


def _diag(v, k=0):
    """NumPy's diag: a vector's square matrix, or a matrix's diagonal."""
    reject("diag", k=k or None)
    v = as_value(v, "diag")
    if v.ndim not in (1, 2):
        raise ValueError(f"numpy.diag: expects a vector or a matrix, got {v.aval.short()}")
    return linalg.diag(v) if v.ndim == 1 else linalg.diag_part(v)


def _roll(a, shift, axis=None):
    """np.roll: over the flattened array without an axis; shift and axis broadcast
    against each other, as NumPy's."""
    a = as_value(a, "roll")
    shift, axis = (v.numpy() if isinstance(v, Value) and v._trace is None else v
                   for v in (shift, axis))  # an eager tensor's values, as NumPy takes them
    flat = axis is None
    axis = 0 if flat else axis
    if np.ndim(shift) > 1 or np.ndim(axis) > 1:
        raise TypeError("numpy.roll: 'shift' and 'axis' should be scalars or 1D sequences")
    if not isinstance(shift, Value) and np.shape(shift) != np.shape(axis):
        shift, axis = (v.ravel().tolist() for v in np.broadcast_arrays(shift, axis))
    if not flat:
        return layout.roll(a, shift, axis)
    return shape_ops.reshape(layout.roll(shape_ops.reshape(a, (-1,)), shift, axis), a.shape)


def _copy(a, order="K", subok=False):
    reject("copy", order=None if order == "K" else order, subok=subok or None)
    return ew.identity(a)


# numpy_composites.py adds NumPy's functions that are several ops (pad, split, kron, ...).
FUNCTIONS = {
    np.sum: _accumulating(np.sum, reduce.reduce_sum),
    np.prod: _accumulating(np.prod, reduce.reduce_prod),
    np.mean: _accumulating(np.mean, reduce.reduce_mean),
    np.fix: _rounding("trunc", _trunc),
    np.max: _extremum(np.max, reduce.reduce_max),
    np.min: _extremum(np.min, reduce.reduce_min),
    np.amax: _extremum(np.amax, reduce.reduce_max),
    np.amin: _extremum(np.amin, reduce.reduce_min),
    np.any: _any_all(np.any, reduce.reduce_any),
    np.all: _any_all(np.all, reduce.reduce_all),
    np.cumsum: _cumulative(np.cumsum, cumulative.cumsum),
    np.cumprod: _cumulative(np.cumprod, cumulative.cumprod),
    np.var: _spread(np.var, reduce.reduce_variance),
    np.std: _spread(np.std, reduce.reduce_std),
    np.dot: _no_out("dot", linalg.dot),
    np.einsum: _einsum,
    np.tensordot: lambda a, b, axes=2: einsum_ops.tensordot(a, b, axes),
    np.trace: _trace,
    np.diagonal: _diagonal,
    np.diag: _diag,
    np.linalg.det: _in_floats(lapack.det),
    np.linalg.slogdet: _in_floats(_slogdet),
    np.linalg.inv: _in_floats(lapack.inv),
    np.linalg.solve: _in_floats(_solve),
    np.linalg.cholesky: _in_floats(_cholesky),
    np.linalg.eigh: _in_floats(_eigh),
    np.linalg.eigvalsh: _in_floats(lambda a, UPLO="L": lapack.eigvalsh(_lower_of(a, UPLO))),
    np.linalg.svd: _in_floats(_svd),
    np.linalg.qr: _in_floats(_qr),
    np.linalg.norm: _in_floats(_norm),
    np.outer: _no_out("outer", linalg.outer),
    np.transpose: lambda a, axes=None: shape_ops.transpose(a, axes),
    np.reshape: _reshape,
    np.expand_dims: _expand_dims,
    np.squeeze: _squeeze,
    np.broadcast_to: lambda array, shape, subok=False: shape_ops.broadcast_to(array, shape),
    np.concatenate: _concatenate,
    np.ravel: _ravel,
    np.flip: _flip,
    np.moveaxis: _moveaxis,
    np.swapaxes: _swapaxes,
    np.vstack: _stacked_along("vstack", lambda ndim: 0, 2),
    np.hstack: _stacked_along("hstack", lambda ndim: 1 if ndim > 1 else 0, 1),
    np.stack: _stack,
    np.tile: _tile,
    np.take: _take,
    np.roll: _roll,
    np.copy: _copy,
    np.argmax: _arg_extreme(np.argmax, selection.argmax),
    np.argmin: _arg_extreme(np.argmin, selection.argmin),
    np.sort: _sorting(np.sort, selection.sort),
    np.argsort: _sorting(np.argsort, selection.argsort),
    np.where: _where,
    np.clip: _clip,
    np.round: _round,
    np.around: _round,
    np.zeros_like: _like(zeros_like, "zeros_like"),
    np.ones_like: _like(ones_like, "ones_like"),
    np.shape: lambda a: a.shape,
    np.ndim: lambda a: a.ndim,
    np.size: lambda a, axis=None: size(a.shape) if axis is None else a.shape[axis],
}


def ufuncs():
    """The ufuncs that dispatch, with their ops: UFUNCS, and SciPy's special functions
    (SCIPY_SPECIAL) once the program has imported scipy.special."""
    special = sys.modules.get("scipy.special")
    if special is not None and special.erf not in UFUNCS:
        UFUNCS.update({getattr(special, name): fn for name, fn in SCIPY_SPECIAL.items()})
    return UFUNCS


def array_ufunc(ufunc, method, inputs, kwargs):
    op = UFUNCS.get(ufunc) or ufuncs().get(ufunc)
    if method != "__call__" or op is None:
        name = ufunc.__name__  # NumPy's by their NumPy name; another library's (SciPy's)
        what = f"numpy.{name}" if getattr(np, name, None) is ufunc else f"the ufunc {name}"
        what += "" if method == "__call__" else f".{method}"
        raise _unsupported(what, inputs)
    if kwargs.get("where") is True:
        kwargs = {k: v for k, v in kwargs.items() if k != "where"}
    into = _rebound(kwargs.get("out"), inputs)
    if into is not None:
        kwargs = {k: v for k, v in kwargs.items() if k != "out"}
    reject(ufunc.__name__, **kwargs)
    if ufunc in _NUMPY_LOOPS and ufunc.nout == 1:
        out = _numpy_loop(ufunc, op, [np.asarray(v) if isinstance(v, (list, tuple)) and
                                      _numbers(v) else v for v in inputs])
    else:
        out = op(*inputs)
    return out if into is None else as_into(out, into, f"numpy.{ufunc.__name__}")


def _rebound(out, inputs):
    """The array of `acc += x` (acc a NumPy array of its own in a local variable, x
    traced): NumPy's in-place operator calls the ufunc with out=acc, whose result the
    statement then binds to acc, as an in-place operator on a traced value rebinds. None
    for any other out= (np.add(a, x, out=a) writes into a, which a traced value cannot);
    TracingError where NumPy would write into an array another holds (a view's, one a
    global, an attribute or an item holds, or one another local name reads later)."""
    if not (isinstance(out, tuple) and len(out) == 1 and isinstance(out[0], np.ndarray)
            and any(out[0] is v for v in inputs)):
        return None
    statement = in_place_statement()
    if statement is None:
        return None
    _, code, at = statement
    # A view of an array another name holds (its base has more references than a base
    # only its view holds: _ALONE), or a store into a global, an attribute or an item.
    base = out[0].base
    if base is not None and sys.getrefcount(base) > _ALONE or _store(code, at).opname in (
            "STORE_GLOBAL", "STORE_ATTR", "STORE_SUBSCR"):
        raise TracingError(
            f"{user_line()}\n  an in-place operator adding a srcxform value into a NumPy "
            "array that is a view of another, or that a global, an attribute or an item "
            "holds: NumPy writes into that memory, which a srcxform value cannot. Return "
            "the new value and update the array outside, or start from a new local array "
            "(acc = np.zeros(...); acc += x)")
    refuse_shared(statement, lambda v: isinstance(v, np.ndarray) and
                  np.may_share_memory(v, out[0]))
    return out[0]


def in_place_statement():
    """(the user's frame, its instructions, the position of the one it runs) where that
    is an in-place operator (`a += x`), else None (operator.iadd(a, x), np.add(out=))."""
    frame = user_frame_object()
    code = _instructions(frame.f_code) if frame else []
    at = next((k for k, i in enumerate(code) if i.offset == frame.f_lasti), None)
    if at is None or not (code[at].opname.startswith("INPLACE_") or
                          code[at].opname == "BINARY_OP" and code[at].argrepr.endswith("=")):
        return None
    return frame, code, at


@functools.lru_cache(maxsize=64)
def _instructions(code):
    return list(dis.get_instructions(code))


def refuse_shared(statement, shares):
    """TracingError where a local name other than the one the in-place statement binds
    holds a value that `shares` memory with its array and is read after the statement
    (or in a loop around it): NumPy would change what that name reads (`s = h[:]; h +=
    b`, `g = h; h += b`), where srcxform's values are immutable."""
    frame, code, at = statement
    target = _store(code, at).argval
    here, symbol = code[at].offset, code[at].argrepr or "an in-place operator"
    # What runs next, in the code's order: the rest, then from a loop's start (where a
    # jump after this statement goes back before it) to the statement.
    again = min([i.argval for i in code[at + 1:] if i.opcode in _JUMPS
                 and isinstance(i.argval, int) and i.argval <= here], default=here)
    after = code[at + 1:] + [i for i in code[:at] if i.offset >= again]
    for name, value in frame.f_locals.items():
        items = value.values() if isinstance(value, dict) else \
            value if isinstance(value, (list, tuple)) else ()
        if name != target and (shares(value) or any(map(shares, items))) and \
                _read_first(after, name):
            raise TracingError(
                f"{user_line()}\n  `{symbol}` on a NumPy array that `{name}` also holds (a "
                f"view of it, another name for it, or an item of it: `for p in params: p "
                f"-= ...`) and reads after this line: NumPy "
                f"writes into their shared memory, so `{name}` would change too, where "
                f"srcxform's values are immutable. Write `x = x {symbol[:-1]} ...` and take "
                f"`{name}` from the new value, or copy it first (`{name} = ....copy()`)")


def _store(code, at):
    """The instruction that binds the in-place operator's result at `at` (past the stack
    shuffles Python puts before an attribute's or an item's store: SWAP, ROT_TWO)."""
    return next((i for i in code[at + 1:] if not i.opname.startswith(("SWAP", "ROT_", "COPY"))),
                code[at])


def _read_first(instructions, name):
    """Whether the first of `instructions` to read or bind `name` reads it (a branch
    taken or not is not told apart)."""
    for i in instructions:
        names = i.argval if isinstance(i.argval, tuple) else (i.argval,)
        if name in names and i.opname in _READS:
            return True
        if name in names and i.opname.startswith(("STORE_FAST", "STORE_DEREF", "STORE_NAME",
                                                  "DELETE_")):
            return False
    return False


_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)
# The instructions that read a local name (its value, or its cell for a closure).
_READS = {name for name in dis.opname if name.startswith(("LOAD_FAST", "LOAD_DEREF"))} | {
    "LOAD_CLOSURE", "LOAD_NAME"}


def _alone():
    """sys.getrefcount of a view's base that only the view and a local name hold (its
    value varies with Python's version: 3.14 counts borrowed references apart)."""
    view = np.empty(1)[:]
    base = view.base
    return sys.getrefcount(base)


_ALONE = _alone()


def as_into(value, into, op):
    """value as NumPy's in-place operator `op` leaves it in the array `into`: its shape,
    its dtype (an int8 array stays int8, a float32 one float32), NumPy's errors where the
    result does not fit."""
    if not isinstance(value, Value):
        return value
    if tuple(value.shape) != tuple(into.shape):
        raise ValueError(f"{user_line()}\n  {op}: non-broadcastable output operand with shape "
                         f"{tuple(into.shape)} doesn't match the broadcast shape "
                         f"{tuple(value.shape)}")
    if not np.can_cast(value.dtype, into.dtype, "same_kind"):
        raise TypeError(f"{user_line()}\n  {op}: Cannot cast ufunc output from {value.dtype} "
                        f"to {into.dtype} with casting rule 'same_kind'")
    return value if value.dtype == into.dtype else ew.cast(value, into.dtype)


def _numbers(values):
    """Whether a list holds Python or NumPy numbers alone (no tensor, no traced size),
    which NumPy makes an array of (float64 or int64, not weak)."""
    return all(_numbers(v) if isinstance(v, (list, tuple)) else
               type(v) in (bool, int, float) or isinstance(v, np.generic) for v in values)


def _numpy_loop(ufunc, op, inputs):
    """A ufunc on bools or integers as NumPy computes it, where the primitives (as
    TensorFlow's ops) refuse them: each cast to the type NumPy's loop takes (`x * (x > 0)`
    multiplies by 0.0 or 1.0, `m // m` is int8, np.exp of int64 is float64), the logical op
    where the loop is on bools alone (`m + m` is `m | m`), a comparison's bools as 0 and 1,
    and NumPy's TypeError where it has no loop (`m - m`)."""
    dtypes = [_loop_type(v) for v in inputs]
    if not any(isinstance(d, np.dtype) and d.kind in "biu" for d in dtypes):
        return op(*inputs)
    try:
        resolved = ufunc.resolve_dtypes((*dtypes,) + (None,) * ufunc.nout)
    except TypeError as err:
        raise TypeError(f"{user_line()}\n  numpy.{ufunc.__name__}: {err}") from None
    if ufunc in _ON_BOOLS and resolved[0] == np.bool_:
        return _ON_BOOLS[ufunc](*inputs)
    cast = [isinstance(d, np.dtype) and (d.kind == "b" or d != want and want.kind == "f")
            for d, want in zip(dtypes, resolved)]
    if not any(cast):
        return op(*inputs)
    out = op(*(ew.cast(v, np.int8 if want == np.bool_ else want) if c else v
               for v, want, c in zip(inputs, resolved, cast)))
    return out if out.dtype == resolved[-1] else ew.cast(out, resolved[-1])  # abs(m): bool


def _loop_type(value):
    """What NumPy's loop resolution takes for an operand: a dtype, or Python's int or
    float for a weak number (a Python number, a traced size, a value made of them)."""
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(bool)
    if isinstance(value, Value) and value.aval.weak and value.aval.dtype.kind in "iuf":
        return float if value.aval.dtype.kind == "f" else int
    if isinstance(value, (Value, np.generic)):
        return np.dtype(value.dtype)
    if isinstance(value, (int, float)):
        return float if isinstance(value, float) else int
    return np.asarray(value).dtype


def array_function(func, args, kwargs):
    op = FUNCTIONS.get(func)
    if op is None:
        raise _unsupported(f"{func.__module__}.{func.__name__}", args)
    return op(*args, **kwargs)


def _unsupported(what, args):
    traced = any(getattr(leaf, "_trace", None) is not None for leaf in tree_flatten(list(args))[0])
    if traced:
        return TracingError(f"{user_line()}: {what} has no srcxform op, so it cannot be "
                            "traced; write it with srcxform ops or the NumPy functions "
                            "listed in the README")
    return TypeError(f"{what} has no srcxform op; convert with np.asarray(t) to compute it "
                     "in NumPy (without gradient), or write it with srcxform ops")
