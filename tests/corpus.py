"""The compiler's differential corpus: composite functions written as users write them.

Each Case is a plain Python function with explicit float64 inputs (NumPy arrays, some
Python floats, some nested dict/list/tuple parameters, some static ints) and the
positions to differentiate. tests/test_compiled.py runs every case three ways (the eager
GradientTape, the Numba-compiled kernel, the same kernel as plain Python) and against
central finite differences.

Data is drawn away from kinks, ties and poles (`_spread`, `_away`), so finite differences
are meaningful and max/min/where/relu/abs pick the same branch for every perturbation.
"""

from dataclasses import dataclass, field

import numpy as np

import srcxform as tf
from srcxform.core.tree import tree_flatten, tree_unflatten

# ----- data, and the Case record -----

_rng = np.random.default_rng(20240601)


def _normal(*shape, scale=1.0):
    return np.asarray(_rng.standard_normal(shape) * scale, dtype=np.float64)


def _uniform(lo, hi, *shape):
    return np.asarray(_rng.uniform(lo, hi, shape), dtype=np.float64)


def _away(*shape, points=(0.0,), gap=0.25, lo=-2.0, hi=2.0):
    """Uniform on [lo, hi) but at least `gap` from every point in `points` (kinks)."""
    x = _uniform(lo, hi, *shape)
    while True:
        bad = np.any([np.abs(x - p) < gap for p in points], axis=0)
        if not np.any(bad):
            return x
        x = np.where(bad, _rng.uniform(lo, hi, np.shape(x)), x)


def _spread(*shape, spacing=0.37, offset=0.0):
    """Distinct values (no ties for max/min), spaced `spacing` apart, shuffled."""
    n = int(np.prod(shape))
    steps = _rng.permutation(n) - n // 2
    return (steps * spacing + offset + _rng.uniform(0.0, spacing / 8, n)).reshape(shape)


def _probabilities(*shape):
    p = _uniform(0.1, 1.0, *shape)
    return p / p.sum(axis=-1, keepdims=True)


@dataclass
class Case:
    """One corpus function.

    fn: the function; args: its arguments; wrt: the positions differentiated (an int or a
    tuple, as `srcxform.differentiable` takes it).
    fd: whether central differences must match (False where the gradient is defined to
    differ from the derivative: stop_gradient, a custom gradient that clips).
    fd_rtol, fd_atol, eps: the finite-difference comparison (check_grads's).
    xfail: {test: reason} for known failures of this case, test one of "fd", "compiled",
    "interpreted" (tests/test_compiled.py); strict.
    """

    name: str
    fn: object
    args: tuple
    wrt: object = 0
    fd: bool = True
    fd_rtol: float = 1e-6
    fd_atol: float = 1e-7
    eps: float = 1e-6
    xfail: dict = field(default_factory=dict)


CASES = []


def case(*args, wrt=0, **options):
    """Registers the decorated function as a Case with these arguments."""

    def register(fn):
        CASES.append(Case(fn.__name__, fn, tuple(args), wrt, **options))
        return fn

    return register


# ----- the reference: the eager tape, on nested structures -----
# (Finite differences are srcxform.testing.check_grads's: tests/test_compiled.py.)

RTOL = 1e-10  # compiled against eager: float rounding only
ATOL = 1e-12


def wrt_positions(wrt):
    return (wrt,) if isinstance(wrt, int) else tuple(wrt)


def assert_trees_close(actual, expected, rtol=RTOL, atol=ATOL, what=""):
    """Same structure, same shapes, values equal to tolerance, leaf by leaf."""
    (actual, structure), (expected, expected_structure) = map(tree_flatten, (actual, expected))
    assert structure == expected_structure, f"{what}: structure {structure} != {expected_structure}"
    for k, (a, e) in enumerate(zip(actual, expected)):
        a, e = np.asarray(a, np.float64), np.asarray(e, np.float64)
        assert a.shape == e.shape, f"{what} leaf {k}: shape {a.shape} != {e.shape}"
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=f"{what} leaf {k}")


def eager_value_and_grad(fn, args, wrt):
    """The reference: GradientTape over float64 Tensors, unconnected gradients as zeros."""
    args = [_to_eager(a) for a in args]
    sources = [args[p] for p in wrt_positions(wrt)]
    with tf.GradientTape() as tape:
        tape.watch(sources)
        out = fn(*args)
    grads = tape.gradient(out, sources, unconnected_gradients="zero")
    grads = [_map(lambda g: np.asarray(g, np.float64), g) for g in grads]
    return np.asarray(out, np.float64), grads[0] if isinstance(wrt, int) else tuple(grads)


def _to_eager(tree):
    """Arrays and Python floats as float64 (or integer) Tensors; static leaves untouched."""
    def convert(leaf):
        if isinstance(leaf, (bool, int, str, type(None))):
            return leaf
        return tf.constant(np.float64(leaf) if isinstance(leaf, float) else np.asarray(leaf))
    return _map(convert, tree)


def _map(fn, tree):
    leaves, structure = tree_flatten(tree)
    return tree_unflatten(structure, [fn(leaf) for leaf in leaves])


# ----- classic objectives -----


@case(_uniform(-1.5, 1.5, 6))
def rosenbrock(x):
    return tf.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


@case(_uniform(-1.5, 1.5, 5))
def rosenbrock_numpy(x):
    return np.sum(100.0 * np.square(x[1:] - x[:-1] * x[:-1]) + np.square(1.0 - x[:-1]))


@case(_normal(3), 0.3, _normal(6, 3), (_rng.random(6) < 0.5).astype(np.float64), wrt=(0, 1))
def logistic_regression(w, b, X, y):
    """Python-float bias, sigmoid cross-entropy."""
    logits = tf.matmul(X, w[:, None])[:, 0] + b
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))


_MLP = {"W1": _normal(3, 4, scale=0.5), "b1": _normal(4, scale=0.1),
        "W2": _normal(4, 3, scale=0.5), "b2": _normal(3, scale=0.1)}


@case(_MLP, _normal(5, 3), _probabilities(5, 3))
def mlp_loss(params, X, Y):
    """A 2-layer MLP with a softmax cross-entropy; the parameters are a dict."""
    h = tf.tanh(X @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    return tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=Y, logits=logits))


@case([(_normal(3, 4, scale=0.5), _normal(4, scale=0.1)),
       (_normal(4, 1, scale=0.5), _normal(1, scale=0.1))],
      _normal(5, 3), _normal(5, 1))
def mlp_regression_list_of_tuples(layers, X, y):
    """Layers as a list of (W, b) tuples; softplus hidden layer; mean squared error."""
    h = X
    for k, (W, b) in enumerate(layers):
        h = h @ W + b
        if k < len(layers) - 1:
            h = tf.math.softplus(h)
    return tf.reduce_mean(tf.square(h - y))


@case(_normal(4, 2), _normal(3), 2.0, wrt=(0, 1, 2))
def gaussian_log_likelihood(x, mu, sigma):
    """Python-float sigma, (n,1) x (1,m) by expand_dims."""
    z = (tf.expand_dims(x, 1) - mu[None, :, None]) / sigma
    return -tf.reduce_sum(0.5 * z * z + tf.math.log(sigma)) - 0.5 * np.log(2 * np.pi)


@case(_spread(6, spacing=0.5), _spread(6, spacing=0.5, offset=0.25), 1.0)
def huber_loss(pred, target, delta):
    r = pred - target
    quad = 0.5 * r * r
    lin = delta * (tf.abs(r) - 0.5 * delta)
    return tf.reduce_sum(tf.where(tf.abs(r) <= delta, quad, lin))


# ----- static loops, closures, helpers -----


@case(_uniform(-1.0, 1.0, 4), 5)
def static_loop(x, n):
    """`for i in range(n)` with n a static int unrolls."""
    for i in range(n):
        x = 0.9 * tf.sin(x) + 0.1 * x * (i + 1)
    return tf.reduce_sum(x)


@case(_uniform(-1.0, 1.0, 4, 3), _normal(3, scale=0.3), 4, wrt=(0, 1))
def static_loop_indexing(xs, h0, steps):
    """An RNN-like unroll reading xs[i] for each static i, accumulating a loss."""
    h, total = h0, 0.0
    for i in range(steps):
        h = tf.tanh(xs[i] + 0.5 * h)
        total = total + tf.reduce_sum(h * h)
    return total


_W_RNN = _normal(3, 3, scale=0.4)


@case(_normal(3, 2, 3, scale=0.5), _normal(3, 3, scale=0.4), 3, wrt=(0, 1))
def rnn_unroll(xs, Wh, T):
    """Closure over a constant matrix (_W_RNN), batched state, static T."""
    h = tf.tanh(xs[0] @ _W_RNN)
    for t in range(1, T):
        h = tf.tanh(xs[t] @ _W_RNN + h @ Wh)
    return tf.reduce_sum(h)


_A = _normal(4, 3)
_B = _normal(3)


@case(_normal(3))
def closure_over_constants(x):
    return tf.reduce_sum(tf.tanh(_A @ x + 0.5) * _A[:, 0]) + tf.reduce_sum(_B * x * x)


def _make_helper(scale):
    def helper(v):
        return v * scale + tf.sin(v)

    def twice(v):
        return helper(helper(v))

    return twice


_twice = _make_helper(0.7)


@case(_uniform(-1.0, 1.0, 5))
def closure_over_helpers(x):
    """Closures over closures, all inlined by tracing."""
    return tf.reduce_sum(_twice(x) * _twice(x * 0.5))


def _dense(x, w, b):
    return tf.nn.sigmoid(tf.matmul(x, w) + b)


def _penalty(*ws):
    return sum(tf.reduce_sum(w * w) for w in ws)


@case(_normal(2, 3), _normal(3, 3, scale=0.5), _normal(3, scale=0.1), 0.01, wrt=(1, 2))
def helper_calls(x, w, b, lam):
    h = _dense(_dense(x, w, b), w, b)
    return tf.reduce_mean(h) + lam * _penalty(w, b)


@case([_normal(3), _normal(3), _normal(3)])
def list_argument_loop(xs):
    """A Python list argument iterated in Python; gradient is a list."""
    total = 0.0
    for k, v in enumerate(xs):
        total = total + (k + 1.0) * tf.reduce_sum(tf.sin(v) * xs[0])
    return total


@case(_uniform(-1.0, 1.0, 3), [0.5, -1.0, 0.25, 2.0], wrt=(0, 1))
def horner_python_float_list(x, coeffs):
    """Coefficients as a list of Python floats, differentiated too."""
    acc = coeffs[-1] * tf.ones_like(x)
    for c in reversed(coeffs[:-1]):
        acc = acc * x + c
    return tf.reduce_sum(acc)


@case((_normal(3), _normal(3)), {"scale": 1.5, "shift": _normal(3)})
def nested_tuple_and_dict(pair, config):
    """Nested structures on both sides; differentiate the tuple."""
    a, b = pair
    return tf.reduce_sum(tf.tanh(a * b * config["scale"] + config["shift"]))


@case({"layers": [_normal(3, 3, scale=0.5), _normal(3, 2, scale=0.5)], "scale": 2.0},
      _normal(4, 3))
def dict_with_list_and_float(params, x):
    """A dict holding a list of arrays and a Python float; gradient in the same structure."""
    for w in params["layers"]:
        x = tf.tanh(x @ w)
    return params["scale"] * tf.reduce_sum(x * x)


@case(_uniform(0.5, 3.0, 4), 6)
def newton_sqrt(a, iters):
    """Unrolled Newton iterations for sqrt(a): the gradient goes through every step."""
    x = a
    for _ in range(iters):
        x = 0.5 * (x + a / x)
    return tf.reduce_sum(x)


# ----- fan-out -----


@case(_uniform(-1.0, 1.0, 3, 2))
def fan_out(x):
    """One value used many times, with repeated subexpressions (CSE's test)."""
    y = tf.exp(0.3 * x)
    z = y * y + y * x + y / (1.0 + y * y) + tf.reduce_sum(y) * y
    again = tf.exp(0.3 * x)  # the same expression twice
    return tf.reduce_sum(z * again + tf.sin(y) * tf.cos(y) + y)


# ----- broadcasting -----


@case(_normal(3, 1), _normal(1, 4), wrt=(0, 1))
def broadcast_col_row(a, b):
    return tf.reduce_sum(tf.tanh(a * b + a - b) * (a / (2.0 + b * b)))


@case(np.float64(0.7) * np.ones(()), _normal(3, 4), wrt=(0, 1))
def broadcast_scalar_array(s, x):
    """A 0-d array against a matrix, both ways round."""
    return tf.reduce_sum(s * x + tf.exp(s) - x / (s + 2.0) + (x - s) ** 2)


@case(_normal(4), _normal(2, 3, 4), _normal(3, 1), wrt=(0, 1, 2))
def broadcast_rank(v, M, c):
    """(4,) with (2,3,4) with (3,1): rank broadcast and a kept-1 dim together."""
    return tf.reduce_sum(tf.sin(v + M) * v + M * c)


@case(_normal(3, 4), 0.5, wrt=(0, 1))
def broadcast_python_float(x, alpha):
    return tf.reduce_sum(alpha * x * x + alpha + tf.exp(alpha * x) / alpha)


@case(_normal(3, 1), wrt=0)
def broadcast_to_explicit(x):
    y = tf.broadcast_to(x, (2, 3, 4)) * np.arange(4.0)
    return tf.reduce_sum(tf.sin(y)) + np.sum(np.broadcast_to(x, (3, 5)) ** 2)


# ----- reductions -----


@case(_spread(2, 3, 4, spacing=0.11))
def reductions_axis_keepdims(x):
    centered = x - tf.reduce_mean(x, axis=1, keepdims=True)
    a = tf.reduce_sum(centered ** 2, axis=(0, 2))
    b = tf.reduce_max(x, axis=-1)
    c = tf.reduce_min(x, axis=(0, 2), keepdims=True)
    d = tf.reduce_prod(1.0 + 0.1 * x, axis=0)
    return tf.reduce_sum(a * tf.reshape(c, (-1,))) + tf.reduce_sum(b * b) + tf.reduce_sum(d)


@case(_normal(2, 3, 4))
def kept_axis_int_index(x):
    """An int index into a keepdims axis: c[0, :, 0] of a (1, 3, 1) reduction. (The fused
    adjoint once wrote the embedded gradient only where the broadcast loop index was 0.)"""
    c = tf.reduce_sum(x, axis=(0, 2), keepdims=True)
    return tf.reduce_sum(c[0, :, 0] ** 2)


@case(_normal(4, 5), _uniform(0.5, 1.5, 5), _normal(5), wrt=(0, 1, 2))
def layer_norm(x, gamma, beta):
    mu = tf.reduce_mean(x, axis=-1, keepdims=True)
    var = tf.reduce_mean(tf.square(x - mu), axis=-1, keepdims=True)
    y = (x - mu) / tf.sqrt(var + 1e-5) * gamma + beta
    return tf.reduce_sum(tf.sin(y))


@case(_spread(4, 6, spacing=0.21))
def max_pool_by_reshape(x):
    """2x2 max pooling: reshape to blocks, reduce_max over the block axes."""
    blocks = tf.reshape(x, (2, 2, 3, 2))
    pooled = tf.reduce_max(blocks, axis=(1, 3))
    return tf.reduce_sum(pooled * pooled) + tf.reduce_sum(tf.reduce_min(x, axis=0))


# ----- slicing and indexing -----


@case(_normal(5))
def slicing_vector(x):
    d = x[1:] - x[:-1]
    outer = x[:, None] * x[None, :]
    return tf.reduce_sum(d * d) + tf.reduce_sum(tf.tanh(outer)) + x[2] * x[-1] + \
        tf.reduce_sum(x[::2])


@case(_normal(3, 4, 2))
def slicing_tensor(x):
    a = x[..., 0] * x[..., 1]
    c = x[:, 1:] - x[1][1:]
    return tf.reduce_sum(a) + tf.reduce_sum(c * c)


@case(_normal(4, 3), 2)
def static_index_argument(x, i):
    """x[i] with i a static int argument."""
    return tf.reduce_sum(tf.exp(x[i]) * x[i - 1]) + tf.reduce_sum(x[:i] ** 2)


# ----- shape ops -----


@case(_normal(2, 3), _normal(1, 3), _normal(2, 2), wrt=(0, 1, 2))
def concat_and_stack(x, y, z):
    a = tf.concat([x, y, x * 2.0], axis=0)  # (5, 3)
    b = tf.concat([x, z], axis=-1)  # (2, 5)
    s = tf.stack([x, tf.sin(x)], axis=1)  # (2, 2, 3)
    return tf.reduce_sum(tf.tanh(a)) + tf.reduce_sum(b * b) + tf.reduce_sum(s * s[:, :1])


@case(_normal(2, 3))
def tile_transpose_reshape(x):
    t = tf.tile(x, (2, 3))  # (4, 9)
    tr = tf.transpose(x)  # (3, 2)
    e = tf.expand_dims(tf.reshape(x, (-1,)), 0)  # (1, 6)
    sq = tf.squeeze(tf.expand_dims(tr, -1), axis=-1)  # (3, 2)
    p = tf.transpose(tf.reshape(t, (2, 2, 9)), perm=(2, 0, 1))  # (9, 2, 2)
    return tf.reduce_sum(tf.sin(t) * t) + tf.reduce_sum(e * e * x[0, 0]) + \
        tf.reduce_sum(sq * tr) + tf.reduce_sum(p ** 3)


_IDX = np.array([2, 0, 2, 3, 1], np.int64)


@case(_normal(4, 3), np.array([3, 3, 0, 1], np.int64))
def gather_rows_and_columns(x, rows):
    """Gather with an int array argument (repeats) and with a closure constant on axis 1."""
    g = tf.gather(x, rows)  # (4, 3)
    h = tf.gather(x, _IDX[:3], axis=1)  # (4, 3)
    return tf.reduce_sum(g * h) + tf.reduce_sum(tf.tanh(tf.gather(x[0], _IDX[:2])))


# ----- linear algebra -----


@case(_normal(3, 4), _normal(4, 2), _normal(3, 5), wrt=(0, 1, 2))
def matmul_2d_chain(A, B, C):
    left = tf.matmul(A, B)  # (3, 2)
    right = tf.matmul(C, left, transpose_a=True)  # (5, 2)
    return tf.reduce_sum(tf.tanh(right)) + tf.reduce_sum(tf.matmul(B, B, transpose_a=True))


@case(_normal(2, 3, 4), _normal(2, 4, 5), _normal(4, 5), wrt=(0, 1, 2))
def matmul_batched(x, y, w):
    a = tf.matmul(x, y)  # (2, 3, 5)
    b = tf.matmul(x, w)  # (2, 3, 5) batch @ 2-D
    return tf.reduce_sum(tf.sin(a) * b)


@case(_normal(2, 3, 4, scale=0.5), _normal(2, 3, 4, scale=0.5), _normal(2, 3, 4), wrt=(0, 1, 2))
def attention(Q, K, V):
    scores = tf.matmul(Q, tf.transpose(K, perm=(0, 2, 1))) / np.sqrt(4.0)
    return tf.reduce_sum(tf.matmul(tf.nn.softmax(scores, axis=-1), V) ** 2)


@case(_normal(3), _normal(4), _normal(3, 4), wrt=(0, 1, 2))
def numpy_outer_dot(a, b, M):
    return np.dot(a, np.dot(M, b)) + np.sum(np.outer(a, b) * M) + np.sum(np.matmul(a, M) ** 2)


# ----- nn -----


@case(_normal(3, 4), _normal(3, 4), wrt=0)
def softmax_and_log_softmax(x, w):
    return (tf.reduce_sum(tf.nn.softmax(x) * w) + tf.reduce_sum(tf.nn.log_softmax(x, axis=0) * w)
            + tf.reduce_sum(tf.nn.softmax(x, axis=0) ** 2))


@case(_uniform(500.0, 502.0, 3, 4) * np.array([1.0, -1.0, 1.0, 1.0]), fd_rtol=1e-5)
def logsumexp_large(x):
    return tf.reduce_sum(tf.reduce_logsumexp(x, axis=1)) + \
        tf.reduce_logsumexp(x * 0.01, axis=(0, 1))


@case(_probabilities(4, 3), _normal(4, 3), _uniform(0.0, 1.0, 4, 3), wrt=1)
def cross_entropies(labels, logits, targets):
    ce = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    bce = tf.nn.sigmoid_cross_entropy_with_logits(labels=targets, logits=logits)
    return tf.reduce_sum(ce) + tf.reduce_mean(bce)


# ----- selection -----


@case(_spread(3, 4, spacing=0.29), _spread(3, 4, spacing=0.29, offset=0.13), wrt=(0, 1))
def where_maximum_minimum_clip(x, y):
    a = tf.where(x > y, x * y, x - y)
    b = tf.maximum(x, y) * tf.minimum(x, 0.4)
    c = tf.clip_by_value(x + y, -0.7, 0.9)
    return tf.reduce_sum(a) + tf.reduce_sum(b) + tf.reduce_sum(c * c)


@case(_away(3, 4), _away(3, 4, points=(0.0, 1.0)))
def numpy_where_maximum_clip(x, y):
    a = np.where(x > 0, np.sqrt(np.abs(x)), np.exp(x))
    b = np.maximum(y, 1.0) * np.minimum(x, 0.0)
    c = np.clip(x * 0.5, -0.5, 0.5)
    return np.sum(a) + np.sum(b) + np.sum(c ** 3)


@case(_away(4, 3, points=(0.0,)))
def relu_abs_sign(x):
    return tf.reduce_sum(tf.nn.relu(x) * x + tf.abs(x) * tf.sign(x) * tf.exp(x))


# ----- NumPy-written code -----


@case(_uniform(0.2, 2.0, 3, 4), _normal(4, 2, scale=0.5), wrt=(0, 1))
def numpy_elementwise_soup(x, w):
    y = np.log(x) + np.sqrt(x) + np.tanh(x) - np.exp(-x) + np.log1p(x) + np.expm1(-x)
    z = np.sin(y) * np.cos(x) + np.tan(0.3 * x) + x ** 1.5 + np.power(x, 0.5)
    return np.mean(np.dot(z, w) ** 2) + np.sum(np.abs(z))


@case(_normal(2, 3), _normal(2, 3), wrt=(0, 1))
def numpy_shape_functions(x, y):
    c = np.concatenate([x, y], axis=1)  # (2, 6)
    s = np.transpose(np.stack([x, y]), (2, 0, 1))  # (3, 2, 2)
    r = np.reshape(c, (3, 4))
    q = np.squeeze(np.expand_dims(x, 0), axis=0)
    return (np.sum(np.tanh(c) * np.max(r)) + np.sum(s * s) + np.mean(q * y)
            + np.prod(1.0 + 0.1 * x))


@case(_uniform(-1.0, 1.0, 4), wrt=0)
def elementwise_trig_soup(x):
    return tf.reduce_sum(tf.tan(0.5 * x) + tf.sigmoid(3.0 * x) * tf.math.softplus(x)
                         + tf.math.expm1(x) * tf.math.log1p(x * x) + tf.pow(1.5, x)
                         + tf.pow(x * x + 1.0, 0.3))


@case(_uniform(0.3, 2.0, 3, 4), _away(3, 4, points=(0.0,)), wrt=(0, 1))
def special_functions_soup(p, x):
    """tf.math's special and inverse functions, the gamma family at positive p."""
    s = 0.8 * tf.tanh(x)  # in (-1, 1)
    y = (tf.math.erf(x) * tf.math.erfc(0.5 * x) + tf.math.atan2(x, p) + tf.math.atan(x)
         + tf.math.asin(s) * tf.math.acos(s) + tf.math.atanh(s) + tf.math.sinh(0.5 * x)
         + tf.math.cosh(0.5 * x) + tf.math.asinh(x) + tf.math.acosh(1.0 + p)
         + tf.math.rsqrt(p) + tf.math.xlogy(x, p) + tf.math.lgamma(p) * tf.math.digamma(p + 1.0)
         + tf.math.log2(p) + tf.math.log10(p) + tf.math.exp2(0.5 * x))
    return tf.reduce_sum(y * tf.math.squared_difference(x, 0.5))


@case(_away(3, 4, points=(0.0,)), _uniform(0.5, 1.5, 3, 4), wrt=(0, 1))
def activations_and_running_totals(x, w):
    """tf.nn's activations, cumsum and cumprod (exclusive, reversed), and moments."""
    h = (tf.nn.gelu(x) + tf.nn.gelu(x, approximate=True) + tf.nn.elu(x) + tf.nn.selu(x)
         + tf.nn.leaky_relu(x) + tf.nn.silu(x) + tf.nn.log_sigmoid(x) + tf.nn.softsign(x))
    running = tf.math.cumsum(h * w, axis=1, exclusive=True) + tf.math.cumprod(w, reverse=True)
    return (tf.reduce_sum(running * tf.identity(h)) + tf.math.reduce_std(h, axis=0)[1]
            + tf.reduce_sum(tf.math.reduce_variance(w, axis=1))
            + tf.math.reduce_euclidean_norm(x))


# ----- gradient control -----


@tf.custom_gradient
def _stable_softplus(x):
    y = tf.math.log1p(tf.exp(x))

    def grad(g):
        return g * tf.sigmoid(x)

    return y, grad


@tf.custom_gradient
def _clip_gradient(x):
    return x * 1.0, lambda g: tf.clip_by_value(g, -0.5, 0.5)


@case(_normal(5))
def custom_gradient_exact(x):
    """A custom gradient that is the true derivative: finite differences agree."""
    return tf.reduce_sum(_stable_softplus(2.0 * x) * x)


@case(_normal(5), fd=False)
def custom_gradient_clipping(x):
    """A custom gradient that clips: compiled must equal eager, not the derivative."""
    return tf.reduce_sum(_clip_gradient(x * 3.0) ** 2)


@case(_normal(4), fd=False)
def stop_gradient_inside(x):
    y = tf.stop_gradient(x * x)
    return tf.reduce_sum(y * x + tf.sin(x) * tf.stop_gradient(tf.cos(x)))


@case(_normal(4), _normal(4), wrt=(0, 1), fd=False)
def stop_gradient_straight_through(x, y):
    """A straight-through estimator: the value is x's, the gradient y's."""
    return tf.reduce_sum(tf.sin(x) * (y + tf.stop_gradient(x - y)))


# ----- tape inside a compiled function -----


@case(_normal(4))
def inner_tape_gradient_norm(x):
    """A gradient penalty: the compiled gradient is a second-order adjoint."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.sin(x) * x)
    g = tape.gradient(y, x)
    return tf.reduce_sum(g * g)


@case(_normal(4))
def inner_tape_scalar_broadcast(x):
    """A gradient penalty where a reduced scalar multiplies x: the second-order adjoint
    needs the adjoint of the first-order sum-to-shape (wrong before b2074db, when that
    sum was a (1,) array indexed by [0])."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.reduce_sum(x) * tf.sin(x))
    g = tape.gradient(y, x)
    return tf.reduce_sum(g * g)


@case(_normal(3, 2), _normal(2))
def inner_tape_returns_gradient(x, w):
    """Returns the sum of tape.gradient itself (the gradient forms need a scalar)."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.tanh(x @ w[:, None]))
    return tf.reduce_sum(tape.gradient(y, x))


@case(_normal(3), _normal(3), wrt=(0, 1))
def inner_persistent_tape(x, y):
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        u = tf.reduce_sum(tf.exp(0.5 * x) * y)
        v = tf.reduce_sum(x * x * y)
    gx, gy = tape.gradient(u, [x, y])
    hx = tape.gradient(v, x)
    return tf.reduce_sum(gx * gy) + tf.reduce_sum(tf.sin(hx))
