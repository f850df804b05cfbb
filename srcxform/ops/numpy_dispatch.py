"""NumPy dispatch: NumPy callables applied to srcxform values run srcxform's ops.

`__array_ufunc__` and `__array_function__` on values land here. A NumPy callable with
no srcxform op raises TypeError (eager) or TracingError (traced), naming it.
"""

import numpy as np

from srcxform.errors import TracingError, where as user_line
from srcxform.ops import elementwise as ew
from srcxform.ops import linalg, reduce
from srcxform.ops import shape as shape_ops
from srcxform.ops.creation import ones_like, zeros_like
from srcxform.tree import tree_flatten

UFUNCS = {
    np.add: ew.add, np.subtract: ew.subtract, np.multiply: ew.multiply,
    np.true_divide: ew.divide, np.floor_divide: ew.floordiv, np.remainder: ew.mod,
    np.power: ew.pow, np.maximum: ew.maximum, np.minimum: ew.minimum,
    np.equal: ew.equal, np.not_equal: ew.not_equal, np.less: ew.less,
    np.less_equal: ew.less_equal, np.greater: ew.greater, np.greater_equal: ew.greater_equal,
    np.logical_and: ew.logical_and, np.logical_or: ew.logical_or,
    np.logical_not: ew.logical_not, np.isfinite: ew.is_finite,
    np.negative: ew.negative, np.exp: ew.exp, np.log: ew.log, np.log1p: ew.log1p,
    np.expm1: ew.expm1, np.sqrt: ew.sqrt, np.sin: ew.sin, np.cos: ew.cos, np.tan: ew.tan,
    np.tanh: ew.tanh, np.absolute: ew.abs, np.sign: ew.sign, np.floor: ew.floor,
    np.rint: ew.round, np.square: ew.square, np.matmul: linalg.matmul,
    np.positive: lambda x: x,
}


def _reduction(op):
    def call(a, axis=None, dtype=None, out=None, keepdims=False, **unsupported):
        _reject(op.__name__, out=out, **unsupported)
        result = op(a, axis=axis, keepdims=keepdims)
        return result if dtype is None else ew.cast(result, dtype)

    return call


def _reject(name, **options):
    given = [k for k, v in options.items() if v is not None and v is not np._NoValue]
    if given:
        raise TypeError(f"numpy.{name}: srcxform does not support the argument(s) "
                        f"{', '.join(given)}")


FUNCTIONS = {
    np.sum: _reduction(reduce.reduce_sum),
    np.mean: _reduction(reduce.reduce_mean),
    np.prod: _reduction(reduce.reduce_prod),
    np.max: _reduction(reduce.reduce_max),
    np.min: _reduction(reduce.reduce_min),
    np.amax: _reduction(reduce.reduce_max),
    np.amin: _reduction(reduce.reduce_min),
    np.dot: lambda a, b, out=None: linalg.dot(a, b),
    np.outer: lambda a, b, out=None: linalg.outer(a, b),
    np.transpose: lambda a, axes=None: shape_ops.transpose(a, axes),
    np.reshape: lambda a, *args, **kw: shape_ops.reshape(a, _shape_arg(args, kw, "newshape")),
    np.where: lambda condition, x=None, y=None: ew.where(condition, x, y),
    np.clip: lambda a, a_min=None, a_max=None, out=None, **kw: _clip(a, a_min, a_max),
    np.concatenate: lambda arrays, axis=0, out=None, **kw: shape_ops.concat(arrays, axis),
    np.stack: lambda arrays, axis=0, out=None, **kw: shape_ops.stack(arrays, axis),
    np.expand_dims: lambda a, axis: shape_ops.expand_dims(a, axis),
    np.squeeze: lambda a, axis=None: shape_ops.squeeze(a, axis),
    np.broadcast_to: lambda array, *args, **kw: shape_ops.broadcast_to(array,
                                                                        _shape_arg(args, kw)),
    np.tile: lambda A, reps: shape_ops.tile(A, reps if isinstance(reps, (tuple, list)) else (reps,)),
    np.take: lambda a, indices, axis=None, out=None, mode="raise": shape_ops.gather(a, indices, axis),
    np.zeros_like: lambda a, dtype=None, **kw: zeros_like(a, dtype),
    np.ones_like: lambda a, dtype=None, **kw: ones_like(a, dtype),
    np.shape: lambda a: a.shape,
    np.ndim: lambda a: a.ndim,
}


def _shape_arg(args, kwargs, old_name=None):
    """The shape argument of np.reshape/np.broadcast_to, given by position or keyword."""
    if args:
        return args[0]
    return kwargs["shape"] if "shape" in kwargs else kwargs[old_name]


def _clip(a, lo, hi):
    if lo is not None:
        a = ew.maximum(a, lo)
    return a if hi is None else ew.minimum(a, hi)


def array_ufunc(ufunc, method, inputs, kwargs):
    op = UFUNCS.get(ufunc)
    if method != "__call__" or op is None or kwargs.get("out") is not None:
        what = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
        raise _unsupported(what, inputs)
    return op(*inputs)


def array_function(func, args, kwargs):
    op = FUNCTIONS.get(func)
    if op is None:
        raise _unsupported(f"numpy.{func.__name__}", args)
    return op(*args, **kwargs)


def _unsupported(what, args):
    traced = any(getattr(leaf, "_trace", None) is not None for leaf in tree_flatten(list(args))[0])
    if traced:
        return TracingError(f"{user_line()}: {what} has no srcxform op, so it cannot be "
                            "traced; write it with srcxform ops or the NumPy functions "
                            "listed in the README")
    return TypeError(f"{what} has no srcxform op; convert with np.asarray(t) to compute it "
                     "in NumPy (without gradient), or write it with srcxform ops")
