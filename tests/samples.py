"""The test tables: one or more rows per registered primitive, and rows for composite ops.

A row says how to build an op's inputs (shapes, a dtype, a domain where the op is
smooth), which params to pass, how to call it (its TensorFlow-named wrapper, else
`prim.bind`), and how closely its gradients must match finite differences. Adding a
primitive means adding a row here: tests/test_registry.py fails otherwise.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import srcxform as tf
from srcxform.ops.shape import FULL, Slice, embed, scatter_add
from srcxform.core.primitive import REGISTRY

# ----- domains: (rng, shape) -> array -----


def uniform(lo=-2.0, hi=2.0, avoid=(), gap=0.2):
    """Uniform on [lo, hi), redrawn within `gap` of the points in `avoid` (kinks, poles)."""

    def draw(rng, shape):
        x = np.asarray(rng.uniform(lo, hi, shape))
        while avoid:
            bad = np.any([np.abs(x - p) < gap for p in avoid], axis=0)
            if not np.any(bad):
                break
            x = np.where(bad, rng.uniform(lo, hi, shape), x)
        return x

    return draw


def grid(offset=0.0, spacing=0.3):
    """Distinct values on a jittered grid: no two within spacing/2 of each other, and none
    within spacing/3 of a grid drawn with an offset of spacing/2 (no ties, for max/min)."""

    def draw(rng, shape):
        n = int(np.prod(shape))
        steps = rng.permutation(n) - n // 2
        return (steps * spacing + offset + rng.uniform(0, spacing / 6, n)).reshape(shape)

    return draw


def boolean(rng, shape):
    return np.asarray(rng.random(shape) < 0.5)


def integers(rng, shape):
    return rng.integers(-8, 9, size=shape).astype(np.int32)


def constant(value):
    """A fixed input (integer indices, special values), whatever the rng and shape."""
    return lambda rng, shape: np.asarray(value)


def probabilities(rng, shape):
    """Rows that sum to 1 along the last axis (labels for a softmax cross-entropy)."""
    p = rng.uniform(0.1, 1.0, shape)
    return p / p.sum(axis=-1, keepdims=True)


ANY = uniform()
POSITIVE = uniform(0.5, 2.0)
NONZERO = uniform(avoid=(0.0,), gap=0.3)

# ----- rows -----


@dataclass(frozen=True)
class Row:
    """One sample of one op.

    name: the primitive (a REGISTRY key) or composite op tested.
    shapes: one shape per input; domains: one domain per input (default: ANY).
    op: the public wrapper, called as op(*inputs, **params); None calls prim.bind.
    order: the highest derivative order checked; rtol, atol, eps: for check_grads.
    """

    name: str
    shapes: tuple
    domains: tuple = ()
    params: dict = field(default_factory=dict)
    op: Callable | None = None
    label: str = ""
    rtol: float = 1e-6
    atol: float = 1e-8
    eps: float = 1e-6
    order: int = 2

    @property
    def id(self):
        return f"{self.name}-{self.label}" if self.label else self.name

    def make(self, rng, dtype=np.float64):
        """The inputs: float ones in `dtype`, integer and bool ones as their domain makes."""
        domains = self.domains or (ANY,) * len(self.shapes)
        arrays = [np.asarray(d(rng, tuple(s))) for s, d in zip(self.shapes, domains)]
        return tuple(a.astype(dtype) if a.dtype.kind == "f" else a for a in arrays)


def call(row, *args):
    """Applies the row's op to args: its wrapper, or the primitive's bind."""
    if row.op is None:
        return REGISTRY[row.name].bind(*args, **row.params)
    return row.op(*args, **row.params)


def function(row):
    """call(row, ...) as a named function of the inputs (a readable name in reports)."""

    def f(*args):
        return call(row, *args)

    f.__name__ = f.__qualname__ = row.id.replace("-", "_").replace(".", "_")
    return f


BROADCASTS = {
    "same": ((3, 4), (3, 4)),
    "col-row": ((3, 1), (1, 4)),
    "scalar-array": ((), (3, 4)),
    "array-scalar": ((3, 4), ()),
    "rank": ((4,), (2, 3, 4)),
}
UNARY_SHAPES = {"matrix": ((3, 4),), "scalar": ((),)}


def binary(name, op, domains=(ANY, ANY), **kw):
    """A row per broadcast pattern."""
    return [Row(name, shapes, domains, op=op, label=label, **kw)
            for label, shapes in BROADCASTS.items()]


def unary(name, op, domain=ANY, **kw):
    return [Row(name, shapes, (domain,), op=op, label=label, **kw)
            for label, shapes in UNARY_SHAPES.items()]


def reductions(name, op, domain=ANY, **kw):
    """Rows over all axes, one axis, and two axes kept."""
    axes = {"all": {"axis": None}, "axis1": {"axis": 1},
            "axes02-keepdims": {"axis": (0, 2), "keepdims": True}, "axis-neg1": {"axis": -1}}
    return [Row(name, ((2, 3, 4),), (domain,), params, op=op, label=label, **kw)
            for label, params in axes.items()]


def _mod_divisor():
    # Near 1, so x / y stays at least 0.15 from an integer for x drawn by _mod_dividend.
    return uniform(1.0, 1.1)


def _mod_dividend(rng, shape):
    return np.asarray(rng.integers(-2, 2, shape) + rng.uniform(0.35, 0.65, shape))


# Rows with no, one, two and three zeros: reduce_prod's cases.
_ONE_ZERO = np.array([[0.5, 0.0, 1.5, -2.0], [1.2, -0.7, 0.0, 0.9], [0.0, 1.1, 1.3, -0.4]])
_ZEROS = np.array([[0.5, 0.0, 0.0, -2.0], [1.2, -0.7, 1.6, 0.9], [0.0, 0.0, 1.3, 0.0]])
_INDICES = np.array([4, 0, 2, 2, 4], np.int64)  # repeats: gather's transpose must add them
_INDICES_ND = np.array([[2, 3], [0, 1], [2, 3], [1, 0], [0, 3]], np.int32)  # with a repeat
# patches' and fold's window: 5x4 images, (1, 1) and (0, 1) padding, strides 2 and 1.
_WINDOW = {"strides": (2, 1), "dilations": (1, 1), "pads": ((1, 1), (0, 1))}

SAMPLES = {
    # ----- binary arithmetic -----
    "add": binary("add", tf.add),
    "subtract": binary("subtract", tf.subtract),
    "multiply": binary("multiply", tf.multiply),
    "divide": binary("divide", tf.divide, (ANY, NONZERO)),
    "multiply_no_nan": binary("multiply_no_nan", tf.math.multiply_no_nan),
    # (tf.math.floordiv of floats is floor(x / y), a composite; the primitive is NumPy's.)
    "floordiv": binary("floordiv", None, (ANY, NONZERO)),
    "mod": binary("mod", tf.math.floormod, (_mod_dividend, _mod_divisor())),
    "pow": binary("pow", tf.pow, (POSITIVE, ANY)),
    "maximum": binary("maximum", tf.maximum, (grid(), grid(0.15))),
    "minimum": binary("minimum", tf.minimum, (grid(), grid(0.15))),
    # ----- comparisons and logic -----
    "equal": binary("equal", tf.equal, (grid(), grid())),
    "not_equal": binary("not_equal", tf.not_equal, (grid(), grid())),
    "less": binary("less", tf.less),
    "less_equal": binary("less_equal", tf.less_equal),
    "greater": binary("greater", tf.greater),
    "greater_equal": binary("greater_equal", tf.greater_equal),
    "logical_and": binary("logical_and", tf.logical_and, (boolean, boolean)),
    "logical_or": binary("logical_or", tf.logical_or, (boolean, boolean)),
    "logical_not": unary("logical_not", tf.logical_not, boolean),
    "bitwise_and": binary("bitwise_and", tf.bitwise_and, (integers, integers)),
    "bitwise_or": binary("bitwise_or", tf.bitwise_or, (integers, integers)),
    "bitwise_xor": binary("bitwise_xor", tf.bitwise_xor, (integers, integers)),
    "invert": unary("invert", tf.invert, integers),
    "is_finite": [Row("is_finite", ((5,),), (constant([1.0, np.inf, -np.inf, np.nan, -2.0]),),
                      op=tf.math.is_finite)],
    "is_nan": [Row("is_nan", ((5,),), (constant([1.0, np.inf, -np.inf, np.nan, -2.0]),),
                   op=tf.math.is_nan)],
    "is_inf": [Row("is_inf", ((5,),), (constant([1.0, np.inf, -np.inf, np.nan, -2.0]),),
                   op=tf.math.is_inf)],
    # ----- unary -----
    "negative": unary("negative", tf.negative),
    "exp": unary("exp", tf.exp),
    "log": unary("log", tf.math.log, POSITIVE),
    "log1p": unary("log1p", tf.math.log1p, uniform(-0.5, 2.0)),
    "expm1": unary("expm1", tf.math.expm1),
    "sqrt": unary("sqrt", tf.sqrt, POSITIVE),
    "sqrt_grad": binary("sqrt_grad", None, (POSITIVE, ANY)),
    "reciprocal": unary("reciprocal", tf.math.reciprocal, POSITIVE),
    "reciprocal_grad": binary("reciprocal_grad", None, (POSITIVE, ANY)),
    "sin": unary("sin", tf.sin),
    "cos": unary("cos", tf.cos),
    "tan": unary("tan", tf.tan, uniform(-1.2, 1.2)),
    "tanh": unary("tanh", tf.tanh),
    "sigmoid": unary("sigmoid", tf.sigmoid, uniform(-4.0, 4.0)),
    "softplus": unary("softplus", tf.math.softplus, uniform(-4.0, 4.0)),
    "softsign": unary("softsign", tf.nn.softsign, NONZERO),
    "relu": unary("relu", tf.nn.relu, NONZERO),
    "relu_grad": binary("relu_grad", None, (ANY, NONZERO)),
    "abs": unary("abs", tf.abs, NONZERO),
    "sign": unary("sign", tf.sign, NONZERO),
    "floor": unary("floor", tf.floor),
    "ceil": unary("ceil", tf.math.ceil),
    "round": unary("round", tf.round),
    "stop_gradient": unary("stop_gradient", tf.stop_gradient),
    "identity": [Row("identity", ((3, 4),), op=tf.identity)],
    # ----- tf.math's inverse trigonometric, hyperbolic and special functions -----
    "erf": [Row("erf", ((3, 4),), op=tf.math.erf)],
    "erfc": [Row("erfc", ((3, 4),), op=tf.math.erfc)],
    "atan": [Row("atan", ((3, 4),), op=tf.math.atan)],
    "atan2": [Row("atan2", shapes, (NONZERO, NONZERO), op=tf.math.atan2, label=label)
              for label, shapes in (("same", ((3, 4), (3, 4))), ("col-row", ((3, 1), (1, 4))))],
    "asin": [Row("asin", ((3, 4),), (uniform(-0.9, 0.9),), op=tf.math.asin)],
    "acos": [Row("acos", ((3, 4),), (uniform(-0.9, 0.9),), op=tf.math.acos)],
    "sinh": [Row("sinh", ((3, 4),), op=tf.math.sinh)],
    "cosh": [Row("cosh", ((3, 4),), op=tf.math.cosh)],
    "asinh": [Row("asinh", ((3, 4),), op=tf.math.asinh)],
    "acosh": [Row("acosh", ((3, 4),), (uniform(1.2, 3.0),), op=tf.math.acosh)],
    "atanh": [Row("atanh", ((3, 4),), (uniform(-0.9, 0.9),), op=tf.math.atanh)],
    "rsqrt": [Row("rsqrt", ((3, 4),), (POSITIVE,), op=tf.math.rsqrt)],
    "rsqrt_grad": [Row("rsqrt_grad", ((3, 4), (3, 4)), (POSITIVE, ANY))],
    # (At x = 0 its x-gradient is 0, TensorFlow's, not log(y): tests/test_math_ops.py.)
    "xlogy": [Row("xlogy", ((3, 4), (3, 4)), (ANY, POSITIVE), op=tf.math.xlogy)],
    "lgamma": [Row("lgamma", ((3, 4),), (uniform(0.2, 4.0),), op=tf.math.lgamma),
               Row("lgamma", ((3, 4),), (uniform(-2.9, -2.1),), op=tf.math.lgamma,
                   label="negative")],
    # digamma is polygamma of order 0; its gradient is order 1, and so on.
    "polygamma": [Row("polygamma", ((3, 4),), (uniform(0.2, 4.0),), op=tf.math.digamma,
                      label="digamma"),
                  Row("polygamma", ((3, 4),), (uniform(-1.9, -1.1),), op=tf.math.digamma,
                      label="digamma-negative"),
                  Row("polygamma", ((3, 4),), (uniform(0.5, 3.0),), params={"a": 1},
                      op=lambda x, a: tf.math.polygamma(a, x), label="trigamma")],
    "leaky_relu": [Row("leaky_relu", ((3, 4),), (NONZERO,), params={"alpha": 0.3},
                       op=tf.nn.leaky_relu)],
    "leaky_relu_grad": [Row("leaky_relu_grad", ((3, 4), (3, 4)), (ANY, NONZERO),
                            params={"alpha": 0.3})],
    # ----- running sums and products -----
    "cumsum": [Row("cumsum", ((3, 4),), params={"axis": 1}, op=tf.math.cumsum),
               Row("cumsum", ((2, 3, 4),), params={"axis": 1, "exclusive": True,
                                                   "reverse": True},
                   op=tf.math.cumsum, label="exclusive-reverse")],
    "cumulative_logsumexp": [
        Row("cumulative_logsumexp", ((3, 4),), params={"axis": 1},
            op=tf.math.cumulative_logsumexp),
        Row("cumulative_logsumexp", ((2, 3, 4),), params={"axis": 1, "reverse": True},
            op=tf.math.cumulative_logsumexp, label="reverse")],
    "cumprod": [Row("cumprod", ((3, 4),), (NONZERO,), params={"axis": -1}, op=tf.math.cumprod),
                Row("cumprod", ((3, 4),), (NONZERO,), params={"exclusive": True},
                    op=tf.math.cumprod, label="exclusive"),
                Row("cumprod", ((3, 4),), (NONZERO,), params={"axis": 1, "reverse": True},
                    op=tf.math.cumprod, label="reverse")],
    # ----- selection and casting -----
    "where": [Row("where", shapes, (boolean, ANY, ANY), op=tf.where, label=label)
              for label, shapes in {"same": ((3, 4),) * 3,
                                    "broadcast": ((3, 1), (1, 4), ()),
                                    "rank": ((4,), (2, 3, 4), (3, 1))}.items()],
    # float32 rounds: larger steps, looser tolerances.
    "cast": [Row("cast", ((3, 4),), params={"dtype": tf.float32}, op=tf.cast, label="f32",
                 rtol=1e-3, atol=1e-4, eps=1e-3),
             Row("cast", ((3, 4),), params={"dtype": tf.float64}, op=tf.cast, label="f64")],
    # A traced Python int checked where it meets a narrower integer dtype.
    "python_int_in": [Row("python_int_in", ((3, 4),), (integers,),
                          params={"dtype": np.dtype(np.int8), "before": "add(i64[]~, i8[3]): "
                                  "the Python int ", "after": " does not fit in int8"})],
    # ----- shape -----
    "reshape": [Row("reshape", ((3, 4),), params={"shape": (2, 6)}, op=tf.reshape),
                Row("reshape", ((2, 3, 4),), params={"shape": (-1, 4)}, op=tf.reshape,
                    label="minus1")],
    "transpose": [Row("transpose", ((2, 3, 4),), params={"perm": (2, 0, 1)}, op=tf.transpose),
                  Row("transpose", ((3, 4),), op=tf.transpose, label="default")],
    "broadcast_to": [Row("broadcast_to", ((3, 1),), params={"shape": (2, 3, 4)},
                         op=tf.broadcast_to),
                     Row("broadcast_to", ((),), params={"shape": (2, 3)}, op=tf.broadcast_to,
                         label="scalar")],
    "getitem": [Row("getitem", ((3, 4),), op=lambda x: x[1], label="int"),
                Row("getitem", ((3, 4, 2),), op=lambda x: x[1:, None, ::-2], label="slices"),
                Row("getitem", ((3, 4),), op=lambda x: x[..., -1], label="ellipsis")],
    "embed": [Row("embed", ((2,),), params={"shape": (3, 4), "index": (Slice(0, 2, None), 1)},
                  op=embed),
              Row("embed", ((3, 2),), params={"shape": (3, 4), "index": (FULL, Slice(1, 4, 2))},
                  op=embed, label="strided")],
    # One integer index (x[i] in a loop) reads, scatters and adds one row straight.
    "gather": [Row("gather", ((5, 3), (5,)), (ANY, constant(_INDICES)), op=tf.gather),
               Row("gather", ((5, 3), ()), (ANY, constant(np.int64(-2))), op=tf.gather,
                   label="one index"),
               Row("gather", ((5,), ()), (ANY, constant(np.int32(3))), op=tf.gather,
                   label="one element")],
    # A block at a begin known at run time (tf.slice's, a loop's x[i:i + 2]).
    "window": [Row("window", ((5, 3), ()), (ANY, constant(np.int64(2))),
                   params={"size": 3, "op": "slice"}),
               Row("window", ((4,), ()), (ANY, constant(np.int32(0))),
                   params={"size": 4, "op": "slice"}, label="whole")],
    "scatter_add": [Row("scatter_add", ((5, 3), (5,)), (ANY, constant(_INDICES)),
                        params={"size": 6}, op=scatter_add),
                    Row("scatter_add", ((3,), ()), (ANY, constant(np.int64(4))),
                        params={"size": 6}, op=scatter_add, label="one index")],
    "add_rows": [Row("add_rows", ((6, 3), (5,), (5, 3)), (ANY, constant(_INDICES), ANY),
                     params={"in_place": False}),
                 Row("add_rows", ((6,), (), ()), (ANY, constant(np.int64(-1)), ANY),
                     params={"in_place": False}, label="one index"),
                 Row("add_rows", ((4, 6, 3), (), (4, 3)), (ANY, constant(np.int64(2)), ANY),
                     params={"in_place": False, "axes": (1, 0, 2)}, label="one column"),
                 Row("add_rows", ((3, 2, 6), (5,), (5, 3, 2)), (ANY, constant(_INDICES), ANY),
                     params={"in_place": False, "axes": (2, 0, 1)}, label="last axis")],
    "add_at": [Row("add_at", ((4, 3), (), (), ()),
                   (ANY, ANY, constant(np.int64(2)), constant(np.int32(-1))),
                   params={"in_place": False}, label="element"),
               Row("add_at", ((4, 3, 2), (2,), (), ()),
                   (ANY, ANY, constant(np.int64(-4)), constant(np.int64(1))),
                   params={"in_place": False}, label="subarray")],
    "concat": [Row("concat", ((2, 3), (1, 3), (4, 3)), op=lambda *xs: tf.concat(xs, axis=0),
                   label="axis0"),
               Row("concat", ((2, 3), (2, 1)), op=lambda *xs: tf.concat(xs, axis=-1),
                   label="axis-neg1")],
    # ----- selection (ops/selection.py) -----
    "argmax": [Row("argmax", ((3, 4),), (grid(),), {"axis": 1}, op=tf.math.argmax),
               Row("argmax", ((5,),), (grid(),), op=tf.math.argmax, label="vector")],
    "argmin": [Row("argmin", ((3, 4),), (grid(),), {"output_type": tf.int32},
                   op=tf.math.argmin)],
    "argsort": [Row("argsort", ((3, 4),), (grid(),), {"direction": "DESCENDING"},
                    op=tf.argsort)],
    "check_range": [Row("check_range", ((5,),), (constant(_INDICES),),
                        {"size": 5, "op": "gather_nd", "negatives": "raise"})],
    # Distinct indices: an update that a repeat overwrites has a zero derivative, where
    # TensorFlow's gradient (and so srcxform's) gives it its slice of g.
    "scatter_set": [Row("scatter_set", ((5, 3), (3,), (3, 3)),
                        (ANY, constant(np.array([4, 0, 2])), ANY))],
    # ----- random (ops/random.py): a draw at (counter, key) -----
    "philox": [Row("philox", ((), ()), (constant(np.int64(3)), constant(np.int64(11))),
                   {"count": 6, "dist": "normal", "dtype": np.dtype(np.float32)})],
    # ----- creation (ops/creation.py): a count traced sizes give -----
    "iota": [Row("iota", (), (), {"count": 5, "dtype": np.dtype(np.int32)})],
    # ----- reductions -----
    "reduce_sum": reductions("reduce_sum", tf.reduce_sum),
    "reduce_prod": reductions("reduce_prod", tf.reduce_prod, NONZERO) + [
        Row("reduce_prod", ((3, 4),), (constant(_ONE_ZERO),), {"axis": 1},
            op=tf.reduce_prod, label="one-zero"),
        Row("reduce_prod", ((3, 4),), (constant(_ZEROS),), {"axis": 1},
            op=tf.reduce_prod, label="zeros"),
        Row("reduce_prod", ((3, 4),), (constant(_ZEROS),), op=tf.reduce_prod,
            label="zeros-all")],
    "reduce_max": reductions("reduce_max", tf.reduce_max, grid()),
    "reduce_min": reductions("reduce_min", tf.reduce_min, grid()),
    # ----- linear algebra -----
    "matmul": [Row("matmul", ((3, 4), (4, 2)), op=tf.matmul, label="2d")],
    "matvec": [Row("matvec", ((3, 4), (4,)), op=lambda a, b: a @ b)],
    # ----- convolution windows (ops/conv.py): stride 2 and 1, padding on both sides -----
    "patches": [Row("patches", ((2, 5, 4, 3),), params=_WINDOW | {"ksize": (3, 2), "fill": 0.0})],
    "fold": [Row("fold", ((2, 3, 4, 3, 2, 3),), params=_WINDOW | {"size": (5, 4)})],
}

COMPOSITES = [
    Row("reduce_mean", ((2, 3, 4),), params={"axis": (0, 2)}, op=tf.reduce_mean),
    Row("reduce_mean", ((3, 4),), op=tf.reduce_mean, label="all"),
    Row("reduce_logsumexp", ((3, 4),), params={"axis": 1}, op=tf.reduce_logsumexp),
    Row("reduce_logsumexp", ((3, 4),), (uniform(500.0, 502.0),), op=tf.reduce_logsumexp,
        label="large"),
    Row("softmax", ((3, 4),), op=tf.nn.softmax),
    Row("softmax", ((3, 4),), params={"axis": 0}, op=tf.nn.softmax, label="axis0"),
    Row("log_softmax", ((3, 4),), op=tf.nn.log_softmax),
    Row("softmax_cross_entropy_with_logits", ((3, 4), (3, 4)), (probabilities, ANY),
        op=lambda z, x: tf.nn.softmax_cross_entropy_with_logits(labels=z, logits=x)),
    Row("sigmoid_cross_entropy_with_logits", ((3, 4), (3, 4)), (uniform(0.0, 1.0), ANY),
        op=lambda z, x: tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x)),
    Row("clip_by_value", ((3, 4),), (uniform(avoid=(-1.0, 1.0)),),
        params={"clip_value_min": -1.0, "clip_value_max": 1.0}, op=tf.clip_by_value),
    Row("square", ((3, 4),), op=tf.square),
    Row("tile", ((2, 3),), params={"multiples": (2, 3)}, op=tf.tile),
    Row("stack", ((3, 4), (3, 4)), op=lambda *xs: tf.stack(xs, axis=1)),
    Row("expand_dims", ((3, 4),), params={"axis": -1}, op=tf.expand_dims),
    Row("squeeze", ((3, 1, 4, 1),), op=tf.squeeze),
    Row("squeeze", ((3, 1, 4, 1),), params={"axis": 1}, op=tf.squeeze, label="axis1"),
    Row("matmul", ((2, 3, 4), (2, 4, 5)), op=tf.matmul, label="batched"),
    Row("matmul", ((2, 3, 4), (4, 5)), op=tf.matmul, label="batch-2d"),
    # A batch dim of 1 broadcast: a product of broadcasts summed, not the matmul primitive.
    Row("matmul", ((2, 3, 4), (1, 4, 2)), op=tf.matmul, label="batch-broadcast"),
    Row("matmul", ((4,), (4, 3)), op=lambda a, b: a @ b, label="vector"),
    # Every transpose and adjoint flag, one kernel.
    Row("matmul", ((3, 4), (4, 3)), op=lambda a, b: [
        tf.matmul(a, a, transpose_a=True), tf.matmul(a, a, transpose_b=True),
        tf.matmul(a, b, transpose_a=True, transpose_b=True), tf.matmul(b, b, adjoint_a=True),
        tf.linalg.matmul(b, b, adjoint_b=True)], label="transposes"),
    Row("gather", ((3, 5), (4,)), (ANY, constant([4, 0, 4, 1])), params={"axis": 1},
        op=tf.gather, label="axis1"),
    Row("getitem", ((3, 5),), op=lambda x: x[:, np.array([4, 0, 4])], label="array-index"),
    Row("gather", ((2, 3, 4), (2, 5)), (ANY, constant([[3, 0, 3, -1, 2], [1, 1, 0, 2, 3]])),
        params={"axis": 2, "batch_dims": 1}, op=tf.gather, label="batch_dims"),
    # ----- selection (ops/selection.py); grid(): no ties, where sort is not smooth -----
    Row("sort", ((3, 4),), (grid(),), params={"axis": 0, "direction": "DESCENDING"},
        op=tf.sort),
    Row("top_k", ((3, 5),), (grid(),), params={"k": 3}, op=lambda x, k: tf.math.top_k(x, k)[0]),
    Row("gather_nd", ((3, 4, 2), (5, 2)), (ANY, constant(_INDICES_ND)), op=tf.gather_nd),
    Row("gather_nd", ((2, 3, 4), (2, 2, 1)), (ANY, constant([[[2], [0]], [[1], [1]]])),
        params={"batch_dims": 1}, op=tf.gather_nd, label="batch_dims"),
    Row("tensor_scatter_nd_add", ((3, 4, 2), (5, 2), (5, 2)), (ANY, constant(_INDICES_ND), ANY),
        op=tf.tensor_scatter_nd_add),
    Row("tensor_scatter_nd_update", ((3, 4), (3, 2), (3,)),
        (ANY, constant([[2, 3], [0, 0], [2, 1]]), ANY), op=tf.tensor_scatter_nd_update),
    Row("unsorted_segment_sum", ((4, 3),), params={"segment_ids": [2, -1, 0, 2],
                                                   "num_segments": 4},
        op=lambda x, segment_ids, num_segments: tf.math.unsorted_segment_sum(
            x, segment_ids, num_segments)),
    Row("segment_sum", ((4, 3),), params={"segment_ids": np.array([0, 0, 2, 3])},
        op=lambda x, segment_ids: tf.math.segment_sum(x, segment_ids)),
    Row("squared_difference", ((3, 1), (1, 4)), op=tf.math.squared_difference),
    Row("log2-log10-exp2", ((3, 4),), (POSITIVE,),
        op=lambda x: tf.stack([tf.math.log2(x), tf.math.log10(x), tf.math.exp2(x)])),
    Row("reduce_variance", ((2, 3, 4),), params={"axis": (0, 2)}, op=tf.math.reduce_variance),
    Row("reduce_std", ((3, 4),), params={"axis": -1, "keepdims": True},
        op=tf.math.reduce_std),
    Row("reduce_euclidean_norm", ((3, 4),), op=tf.math.reduce_euclidean_norm),
    # The activations, stacked: one kernel; the random output weight checks each apart.
    Row("activations", ((3, 4),), (NONZERO,), op=lambda x: tf.stack([
        tf.nn.gelu(x), tf.nn.gelu(x, approximate=True), tf.nn.elu(x), tf.nn.selu(x),
        tf.nn.leaky_relu(x, alpha=0.3), tf.nn.silu(x), tf.nn.swish(x, beta=1.5),
        tf.nn.log_sigmoid(x), tf.nn.softsign(x)])),
    # ----- convolution, pooling, normalization (ops/conv.py, ops/normalization.py) -----
    Row("conv2d", ((2, 5, 6, 3), (3, 2, 3, 2)), params={"strides": 2, "padding": "SAME"},
        op=tf.nn.conv2d, label="same-stride2"),
    Row("conv2d", ((1, 7, 6, 2), (2, 3, 2, 3)),
        params={"strides": 1, "padding": "VALID", "dilations": (2, 1)}, op=tf.nn.conv2d,
        label="valid-dilated"),
    Row("conv1d", ((2, 7, 2), (3, 2, 2)), params={"stride": 2, "padding": "SAME"},
        op=tf.nn.conv1d),
    # grid(): no ties in a window, where max is not smooth.
    Row("max_pool2d", ((2, 5, 5, 2),), (grid(),),
        params={"ksize": 3, "strides": 2, "padding": "SAME"}, op=tf.nn.max_pool2d),
    Row("avg_pool2d", ((2, 5, 4, 2),), params={"ksize": (2, 3), "strides": 2, "padding": "SAME"},
        op=tf.nn.avg_pool2d),
    Row("normalization", ((4, 3), (3,), (3,), (3,), (3,)), (ANY, ANY, POSITIVE, ANY, POSITIVE),
        op=lambda x, mean, variance, offset, scale: [
            tf.nn.l2_normalize(x, axis=1),
            tf.nn.batch_normalization(x, mean, variance, offset, scale, 1e-3)]),
    # First order only: TensorFlow's variance stops the mean's gradient, which changes the
    # second derivative (srcxform's is TensorFlow's: tests/test_conv_ops.py).
    Row("moments", ((4, 3),), op=lambda x: list(tf.nn.moments(x, axes=[0])), order=1),
]


# ----- linear algebra (ops/lapack.py, ops/einsum.py): domains where each op is smooth -----


def _eye_like(shape):
    return np.eye(shape[-2], shape[-1])


def well_conditioned(rng, shape):
    """Matrices far from singular, their triangles too (a dominant diagonal)."""
    return rng.uniform(-1.0, 1.0, shape) + 3.0 * _eye_like(shape)


def spread_spectrum(rng, shape):
    """Eigen- (and singular) values at least about 1 apart: their gradients divide by
    the gaps."""
    steps = np.arange(1, min(shape[-2:]) + 1) * 1.5
    return rng.uniform(-0.3, 0.3, shape) + _eye_like(shape) * np.pad(
        steps, (0, max(shape[-2:]) - len(steps)))[:shape[-1]]


def _symmetric(x):
    """x + xᵀ: cholesky and eigh read one triangle, so finite differences of a raw input
    would see half of the (symmetric) gradient."""
    return x + tf.linalg.matrix_transpose(x)


# Rows whose generated code calls Numba-compiled runtime helpers (LAPACK's, philox's
# rounds, argsort's), seconds each to compile on a cold cache even where the generated code
# runs as Python: tests that compile them a row at a time put these in the slow tier.
COLD_HELPERS = {"det", "slogdet", "inv", "solve", "triangular_solve", "cholesky", "eigh",
                "svd", "qr", "lstsq", "philox", "argsort"}

_LINALG = {
    "det": [Row("det", ((2, 3, 3),), (well_conditioned,), op=tf.linalg.det)],
    "slogdet": [Row("slogdet", ((3, 3),), (well_conditioned,),
                    op=lambda x: list(tf.linalg.slogdet(-x)))],
    "inv": [Row("inv", ((2, 3, 3),), (well_conditioned,), op=tf.linalg.inv)],
    "solve": [Row("solve", ((2, 3, 3), (2, 3, 2)), (well_conditioned, ANY),
                  op=tf.linalg.solve),
              Row("solve", ((3, 3), (2, 3, 1)), (well_conditioned, ANY),
                  params={"adjoint": True}, op=tf.linalg.solve, label="adjoint-broadcast")],
    "triangular_solve": [
        Row("triangular_solve", ((2, 3, 3), (2, 3, 2)), (well_conditioned, ANY),
            op=tf.linalg.triangular_solve),
        Row("triangular_solve", ((3, 3), (3, 2)), (well_conditioned, ANY),
            params={"lower": False, "adjoint": True}, op=tf.linalg.triangular_solve,
            label="upper-adjoint")],
    "cholesky": [Row("cholesky", ((2, 3, 3),), (well_conditioned,),
                     op=lambda x: tf.linalg.cholesky(_symmetric(x)))],
    # Functions of the vectors are sign-invariant here only through the sign convention,
    # which is locally constant: the random output weight checks vectors too.
    "eigh": [Row("eigh", ((2, 3, 3),), (spread_spectrum,),
                 op=lambda x: list(tf.linalg.eigh(_symmetric(x))), rtol=1e-5, atol=1e-7)],
    "svd": [Row("svd", ((3, 4),), (spread_spectrum,), op=lambda x: list(tf.linalg.svd(x)),
                label="wide", rtol=1e-5, atol=1e-7),
            Row("svd", ((2, 4, 3),), (spread_spectrum,), op=lambda x: list(tf.linalg.svd(x)),
                label="tall-batched", rtol=1e-5, atol=1e-7),
            Row("svd", ((3, 3),), (spread_spectrum,), op=lambda x: list(tf.linalg.svd(x)),
                label="square", rtol=1e-5, atol=1e-7)],
    # Tall (batched), wide (TensorFlow's partition of x and r) and full_matrices where it
    # has a gradient (m <= n); r's diagonal far from 0.
    "qr": [Row("qr", ((2, 4, 3),), (well_conditioned,), op=lambda x: list(tf.linalg.qr(x)),
               label="tall-batched"),
           Row("qr", ((3, 5),), (well_conditioned,), params={"full_matrices": True},
               op=lambda x, full_matrices: list(tf.linalg.qr(x, full_matrices)),
               label="wide-full")],
}
SAMPLES.update(_LINALG)

COMPOSITES += [
    # Deep, regularized and wide (TensorFlow's fast path: Cholesky of the normal equations).
    Row("lstsq", ((5, 3), (5, 2)), (well_conditioned, ANY), op=lambda a, b: [
        tf.linalg.lstsq(a, b), tf.linalg.lstsq(a, b, l2_regularizer=0.5),
        tf.linalg.lstsq(tf.transpose(a), b[:3]),
        tf.linalg.cholesky_solve(tf.linalg.cholesky(tf.matmul(a, a, transpose_a=True)),
                                 b[:3])]),
    # Several equations a row: one kernel each; the random output weights check each.
    Row("einsum", ((3, 4), (4, 2), (2, 3, 4)), op=lambda a, b, c: [
        tf.einsum("ij,jk->ik", a, b), tf.einsum("ij,jk->ki", a, b), tf.einsum("ij->j", a),
        tf.einsum("bij,jk->bik", c, b), tf.einsum("bij,ij->b", c, a),
        tf.einsum("bij,bkj->bik", c, c), tf.einsum("ij,kl->ijkl", a[:2, :2], b),
        tf.einsum("...j,j->...", c, a[0]), tf.einsum("ij,jk,ki->", a, b, c[0, :2, :3])]),
    Row("einsum", ((3, 3), (2, 3, 3)), op=lambda a, c: [
        tf.einsum("ii->i", a), tf.einsum("ii", a), tf.einsum("bii->b", c),
        tf.einsum("bij,bji->bi", c, c)], label="diagonals"),
    Row("tensordot", ((2, 3, 4), (4, 3, 2)), op=lambda a, b: [
        tf.tensordot(a, b, 1), tf.tensordot(a, b, [[1, 2], [1, 0]]), tf.tensordot(a, b, 0)]),
    Row("norm", ((3, 4),), (NONZERO,), op=lambda x: tf.stack([
        tf.norm(x), tf.norm(x, ord=1), tf.norm(x, ord=np.inf), tf.norm(x, ord=3),
        tf.norm(x, ord="fro", axis=(0, 1)), tf.norm(x, ord=1, axis=(0, 1)),
        tf.norm(x, ord=np.inf, axis=(1, 0)), tf.norm(x, ord=2, axis=(0, 1))])),
    Row("norm", ((2, 3, 4),), (NONZERO,), params={"ord": 1.5, "axis": 1, "keepdims": True},
        op=tf.norm, label="axis"),
    Row("diagonals", ((2, 3, 4), (2, 3)), op=lambda x, d: [
        tf.linalg.diag_part(x), tf.linalg.trace(x), tf.linalg.diag(d), tf.linalg.set_diag(x, d),
        tf.linalg.band_part(x, 1, 0), tf.linalg.matvec(x, x[:, 0, :]),
        tf.linalg.matmul(x, x, adjoint_b=True)]),
]
