"""NumPy dispatch (SPEC "NumPy dispatch"): NumPy functions applied to Tensors run
srcxform's ops, so NumPy-written code gives Tensors and is differentiable unchanged.

Each case is a function written with NumPy, its twin written with srcxform ops, and
inputs. Values are checked against NumPy on plain arrays; gradients against the twin
and against central finite differences of the NumPy function (float64).
"""

import itertools
import re

import numpy as np
import pytest
import scipy.linalg
import scipy.special

import srcxform as tf
from helpers import central_difference

DOMAINS = {"any": (-2.0, 2.0), "pos": (0.5, 2.0), "small": (-1.0, 1.0), "frac": (0.1, 0.9),
           "big": (1.5, 2.0)}

A = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])  # a constant NumPy operand
_I3 = 3.0 * np.eye(3)  # a dominant diagonal: far from singular
_SPREAD = np.diag([0.0, 5.0, 10.0])  # eigen- and singular values far apart


def case(np_fn, tf_fn, *shapes, domain="any", diff=True, id):
    """shapes: one per input; domain: one name, or one per input."""
    domains = (domain,) * len(shapes) if isinstance(domain, str) else domain
    return pytest.param(np_fn, tf_fn, shapes, domains, diff, id=id)


UFUNCS = [
    case(np.exp, tf.exp, (2, 3), id="exp"),
    case(np.log, tf.math.log, (2, 3), domain="pos", id="log"),
    case(np.log1p, tf.math.log1p, (2, 3), domain="pos", id="log1p"),
    case(np.expm1, tf.math.expm1, (2, 3), id="expm1"),
    case(np.sqrt, tf.sqrt, (2, 3), domain="pos", id="sqrt"),
    case(np.reciprocal, tf.math.reciprocal, (2, 3), domain="pos", id="reciprocal"),
    case(np.sin, tf.sin, (2, 3), id="sin"),
    case(np.cos, tf.cos, (2, 3), id="cos"),
    case(np.tan, tf.tan, (2, 3), domain="small", id="tan"),
    case(np.tanh, tf.tanh, (2, 3), id="tanh"),
    case(np.negative, tf.negative, (2, 3), id="negative"),
    case(np.positive, lambda x: x, (2, 3), id="positive"),
    case(np.absolute, tf.abs, (2, 3), id="absolute"),
    case(np.abs, tf.abs, (4,), id="abs"),
    case(np.square, tf.square, (2, 3), id="square"),
    case(np.add, tf.add, (2, 3), (3,), id="add-broadcast"),
    case(np.subtract, tf.subtract, (2, 1), (3,), id="subtract-broadcast"),
    case(np.multiply, tf.multiply, (2, 3), (2, 3), id="multiply"),
    case(np.divide, tf.divide, (2, 3), (3,), domain=("any", "pos"), id="divide"),
    case(np.true_divide, tf.divide, (3,), (), domain=("any", "pos"), id="true_divide"),
    case(np.power, tf.pow, (2, 3), (2, 3), domain=("pos", "any"), id="power"),
    case(np.maximum, tf.maximum, (2, 3), (2, 3), id="maximum"),
    case(np.minimum, tf.minimum, (2, 3), (3,), id="minimum-broadcast"),
    case(np.remainder, tf.math.floormod, (2, 3), (3,), domain=("frac", "big"), id="remainder"),
    case(np.mod, tf.math.mod, (3,), (3,), domain=("frac", "big"), id="mod"),
    case(lambda x: np.maximum(x, 0.0), tf.relu, (2, 3), id="maximum-scalar"),
    case(np.arctan, tf.math.atan, (2, 3), id="arctan"),
    case(np.arctan2, tf.math.atan2, (2, 3), (3,), domain=("any", "pos"), id="arctan2"),
    case(np.arcsin, tf.math.asin, (2, 3), domain="frac", id="arcsin"),
    case(np.arccos, tf.math.acos, (2, 3), domain="frac", id="arccos"),
    case(np.sinh, tf.math.sinh, (2, 3), id="sinh"),
    case(np.cosh, tf.math.cosh, (2, 3), id="cosh"),
    case(np.arcsinh, tf.math.asinh, (2, 3), id="arcsinh"),
    case(np.arccosh, tf.math.acosh, (2, 3), domain="big", id="arccosh"),
    case(np.arctanh, tf.math.atanh, (2, 3), domain="frac", id="arctanh"),
    case(np.log2, tf.math.log2, (2, 3), domain="pos", id="log2"),
    case(np.log10, tf.math.log10, (2, 3), domain="pos", id="log10"),
    case(np.exp2, tf.math.exp2, (2, 3), id="exp2"),
    # SciPy's special functions are ufuncs: they dispatch the same way.
    case(scipy.special.erf, tf.math.erf, (2, 3), id="scipy.erf"),
    case(scipy.special.erfc, tf.math.erfc, (2, 3), id="scipy.erfc"),
    case(scipy.special.xlogy, tf.math.xlogy, (2, 3), (3,), domain=("any", "pos"),
         id="scipy.xlogy"),
    case(scipy.special.gammaln, tf.math.lgamma, (2, 3), domain="pos", id="scipy.gammaln"),
    case(scipy.special.psi, tf.math.digamma, (2, 3), domain="pos", id="scipy.psi"),
    case(scipy.special.expit, tf.sigmoid, (2, 3), id="scipy.expit"),
    case(scipy.special.log_expit, tf.math.log_sigmoid, (2, 3), id="scipy.log_expit"),
    # Operators with a NumPy value on the left go through __array_ufunc__ too.
    case(lambda x: A + x, lambda x: tf.add(A, x), (2, 3), id="ndarray+tensor"),
    case(lambda x: A * x, lambda x: tf.multiply(A, x), (3,), id="ndarray*tensor"),
    case(lambda x: A.T @ x, lambda x: tf.matmul(A.T, x), (2, 4), id="ndarray@tensor"),
    case(lambda x: np.float64(2.5) ** x, lambda x: tf.pow(2.5, x), (3,), id="npscalar**tensor"),
    # sign's gradient is zero, as TensorFlow's (finite differences agree away from 0).
    case(np.sign, tf.sign, (2, 3), id="sign"),
    # No gradient: None from the tape, never a wrong one.
    case(np.floor, tf.floor, (2, 3), diff=False, id="floor"),
    case(np.rint, tf.round, (2, 3), diff=False, id="rint"),
    case(np.ceil, tf.math.ceil, (2, 3), diff=False, id="ceil"),
    case(np.floor_divide, tf.math.floordiv, (2, 3), (3,), domain=("any", "pos"), diff=False,
         id="floor_divide"),
]

FUNCTIONS = [
    # reductions
    case(np.sum, tf.reduce_sum, (2, 3), id="sum"),
    case(lambda x: np.sum(x, axis=0), lambda x: tf.reduce_sum(x, 0), (2, 3), id="sum-axis"),
    case(lambda x: np.sum(x, (0, 2), keepdims=True),
         lambda x: tf.reduce_sum(x, (0, 2), keepdims=True), (2, 3, 4), id="sum-tuple-keepdims"),
    case(np.mean, tf.reduce_mean, (2, 3), id="mean"),
    case(lambda x: np.mean(x, -1), lambda x: tf.reduce_mean(x, -1), (2, 3), id="mean-axis"),
    case(np.prod, tf.reduce_prod, (2, 3), id="prod"),
    case(lambda x: np.prod(x, axis=1, keepdims=True),
         lambda x: tf.reduce_prod(x, 1, keepdims=True), (2, 3), id="prod-axis"),
    case(np.max, tf.reduce_max, (2, 3), id="max"),
    case(lambda x: np.max(x, axis=1), lambda x: tf.reduce_max(x, 1), (2, 3), id="max-axis"),
    case(np.min, tf.reduce_min, (2, 3), id="min"),
    case(lambda x: np.min(x, 0, keepdims=True), lambda x: tf.reduce_min(x, 0, keepdims=True),
         (2, 3), id="min-axis"),
    case(lambda x: np.amax(x, 0), lambda x: tf.reduce_max(x, 0), (3, 2), id="amax"),
    case(lambda x: np.amin(x, 1), lambda x: tf.reduce_min(x, 1), (3, 2), id="amin"),
    case(np.cumsum, lambda x: tf.math.cumsum(tf.reshape(x, (-1,))), (2, 3), id="cumsum"),
    case(lambda x: np.cumsum(x, axis=1), lambda x: tf.math.cumsum(x, 1), (2, 3),
         id="cumsum-axis"),
    case(lambda x: np.cumprod(x, 0), lambda x: tf.math.cumprod(x, 0), (3, 2), id="cumprod"),
    case(np.var, tf.math.reduce_variance, (2, 3), id="var"),
    case(lambda x: np.var(x, axis=0, ddof=1, keepdims=True),
         lambda x: tf.math.reduce_variance(x, 0, keepdims=True) * 2.0, (2, 3), id="var-ddof"),
    case(lambda x: np.std(x, 1), lambda x: tf.math.reduce_std(x, 1), (2, 3), id="std"),
    case(lambda x: np.std(x, ddof=1), lambda x: tf.sqrt(tf.math.reduce_variance(x) * 1.2),
         (2, 3), id="std-ddof"),
    # linear algebra
    case(np.dot, lambda x, y: tf.reduce_sum(x * y), (4,), (4,), id="dot-vec-vec"),
    case(np.dot, lambda x, y: tf.matmul(x, y[:, None])[:, 0], (2, 4), (4,), id="dot-mat-vec"),
    case(np.dot, tf.matmul, (2, 4), (4, 3), id="dot-mat-mat"),
    case(np.dot, tf.multiply, (), (2, 3), id="dot-scalar"),
    case(np.matmul, tf.matmul, (2, 4), (4, 3), id="matmul"),
    case(np.matmul, tf.matmul, (2, 3, 4), (4, 5), id="matmul-batched"),
    case(np.matmul, lambda x, y: tf.matmul(x[None, :], y)[0], (4,), (4, 3), id="matmul-vec"),
    case(lambda x, y: x @ y, tf.matmul, (3, 2, 4), (3, 4, 2), id="matmul-operator"),
    case(np.outer, lambda x, y: x[:, None] * y[None, :], (3,), (4,), id="outer"),
    # shape
    case(np.transpose, tf.transpose, (2, 3), id="transpose"),
    case(lambda x: np.transpose(x, (1, 0, 2)), lambda x: tf.transpose(x, (1, 0, 2)),
         (2, 3, 4), id="transpose-axes"),
    case(lambda x: np.reshape(x, (3, 2)), lambda x: tf.reshape(x, (3, 2)), (2, 3),
         id="reshape"),
    case(lambda x: np.reshape(x, -1), lambda x: tf.reshape(x, (-1,)), (2, 3), id="reshape-flat"),
    case(lambda x, y: np.where(x > 0, x, y), lambda x, y: tf.where(x > 0, x, y), (2, 3),
         (3,), id="where"),
    case(lambda x: np.where(x > 0, x, 0.0), tf.relu, (2, 3), id="where-scalar"),
    case(lambda x: np.clip(x, -0.5, 0.5), lambda x: tf.clip_by_value(x, -0.5, 0.5), (2, 3),
         id="clip"),
    case(lambda x: np.clip(x, None, 0.5), lambda x: tf.minimum(x, 0.5), (2, 3),
         id="clip-max-only"),
    case(lambda x: np.clip(x, a_min=-0.5, a_max=0.5),
         lambda x: tf.clip_by_value(x, -0.5, 0.5), (2, 3), id="clip-keywords"),
    case(lambda x, y: np.concatenate([x, y]), lambda x, y: tf.concat([x, y], 0), (2, 3),
         (1, 3), id="concatenate"),
    case(lambda x, y: np.concatenate((x, y), axis=1), lambda x, y: tf.concat([x, y], 1),
         (2, 3), (2, 2), id="concatenate-axis"),
    case(lambda x, y: np.concatenate([x, y], axis=None),
         lambda x, y: tf.concat([tf.reshape(x, (-1,)), tf.reshape(y, (-1,))], 0),
         (2, 3), (4,), id="concatenate-flat"),
    case(lambda x, y: np.concatenate([A, x, y]), lambda x, y: tf.concat([A, x, y], 0),
         (1, 3), (2, 3), id="concatenate-ndarray"),
    case(lambda x, y: np.stack([x, y]), lambda x, y: tf.stack([x, y]), (2, 3), (2, 3),
         id="stack"),
    case(lambda x, y: np.stack([x, y], axis=-1), lambda x, y: tf.stack([x, y], -1), (3,),
         (3,), id="stack-axis"),
    case(lambda x: np.expand_dims(x, 1), lambda x: tf.expand_dims(x, 1), (2, 3),
         id="expand_dims"),
    case(lambda x: np.expand_dims(x, (0, -1)), lambda x: tf.reshape(x, (1, 2, 3, 1)), (2, 3),
         id="expand_dims-tuple"),
    case(np.squeeze, tf.squeeze, (1, 3, 1), id="squeeze"),
    case(lambda x: np.squeeze(x, axis=0), lambda x: tf.squeeze(x, 0), (1, 3, 1),
         id="squeeze-axis"),
    case(lambda x: np.broadcast_to(x, (2, 3)), lambda x: tf.broadcast_to(x, (2, 3)), (3,),
         id="broadcast_to"),
    case(lambda x: np.tile(x, 2), lambda x: tf.tile(x, (1, 2)), (2, 3), id="tile"),
    case(lambda x: np.take(x, [4, 0, 4]), lambda x: tf.gather(tf.reshape(x, (-1,)), [4, 0, 4]),
         (2, 3), id="take-flat"),
    case(lambda x: np.take(x, [2, 0], axis=1), lambda x: tf.gather(x, [2, 0], axis=1), (2, 3),
         id="take-axis"),
    case(np.ravel, lambda x: tf.reshape(x, (-1,)), (2, 3), id="ravel"),
    case(lambda x: np.flip(x, 1), lambda x: tf.reverse(x, [1]), (2, 3), id="flip"),
    case(lambda x: np.moveaxis(x, [0, 1], [-1, 0]), lambda x: tf.transpose(x, (1, 2, 0)),
         (2, 3, 4), id="moveaxis"),
    case(lambda x: np.swapaxes(x, 0, 2), lambda x: tf.transpose(x, (2, 1, 0)), (2, 3, 4),
         id="swapaxes"),
    case(lambda x, y: np.vstack([x, y]), lambda x, y: tf.concat([x, y[None]], 0), (2, 3),
         (3,), id="vstack"),
    case(lambda x, y: np.hstack((x, y)), lambda x, y: tf.concat([x, y], 1), (2, 3), (2, 1),
         id="hstack"),
    case(lambda x: np.any(x > 0.5, axis=1), lambda x: tf.reduce_any(x > 0.5, 1), (2, 3),
         diff=False, id="any"),
    case(lambda x: np.all(x, axis=0), lambda x: tf.reduce_all(x != 0, 0), (2, 3),
         diff=False, id="all"),
    case(lambda x: np.max(x > 0.5, axis=0), lambda x: tf.reduce_any(x > 0.5, 0), (2, 3),
         diff=False, id="max-bool"),
    case(np.round, tf.round, (2, 3), diff=False, id="round"),
    case(np.copy, tf.identity, (2, 3), id="copy"),
    # selection ("any": distinct values, almost surely, so sort is smooth there)
    case(lambda x: np.sort(x, axis=0), lambda x: tf.sort(x, axis=0), (3, 4), id="sort"),
    case(lambda x: np.sort(x, axis=None), lambda x: tf.sort(tf.reshape(x, (-1,))), (2, 3),
         id="sort-flat"),
    case(np.argmax, lambda x: tf.math.argmax(tf.reshape(x, (-1,))), (2, 3), diff=False,
         id="argmax"),
    case(lambda x: np.argmin(x, 1), lambda x: tf.math.argmin(x, 1), (2, 3), diff=False,
         id="argmin"),
    case(np.argsort, lambda x: tf.argsort(x), (2, 3), diff=False, id="argsort"),
    # linear algebra: einsum, tensordot, diagonals
    case(lambda x, y: np.einsum("ij,jk->ik", x, y), tf.matmul, (2, 3), (3, 4), id="einsum"),
    case(lambda x, y: np.einsum("bij,bkj->bik", x, y),
         lambda x, y: tf.matmul(x, y, transpose_b=True), (2, 3, 4), (2, 2, 4),
         id="einsum-batched"),
    case(lambda x: np.einsum("ii", x), tf.linalg.trace, (3, 3), id="einsum-trace"),
    case(lambda x, y: np.tensordot(x, y, axes=[[0], [1]]),
         lambda x, y: tf.tensordot(x, y, [[0], [1]]), (3, 2), (4, 3), id="tensordot"),
    case(np.tensordot, lambda x, y: tf.tensordot(x, y, 2), (2, 3, 4), (3, 4), id="tensordot-2"),
    case(np.trace, tf.linalg.trace, (3, 4), id="trace"),
    case(lambda x: np.trace(x, axis1=2, axis2=0),
         lambda x: tf.linalg.trace(tf.transpose(x, (1, 2, 0))), (4, 2, 3), id="trace-axes"),
    case(np.diagonal, tf.linalg.diag_part, (4, 3), id="diagonal"),
    case(lambda x: np.diagonal(x, axis1=0, axis2=2),
         lambda x: tf.linalg.diag_part(tf.transpose(x, (1, 0, 2))), (3, 2, 4),
         id="diagonal-axes"),
    case(np.diag, tf.linalg.diag, (3,), id="diag-vector"),
    case(np.diag, tf.linalg.diag_part, (3, 4), id="diag-matrix"),
    # np.linalg, on matrices made far from singular (and with spread eigen- and singular
    # values) inside the function; vectors squared, as their signs are a convention.
    case(lambda x: np.linalg.det(x + _I3), lambda x: tf.linalg.det(x + _I3), (2, 3, 3),
         domain="small", id="linalg.det"),
    case(lambda x: np.linalg.slogdet(-x - _I3).logabsdet,
         lambda x: tf.linalg.slogdet(-x - _I3)[1], (3, 3), domain="small",
         id="linalg.slogdet"),
    case(lambda x: np.linalg.inv(x + _I3), lambda x: tf.linalg.inv(x + _I3), (3, 3),
         domain="small", id="linalg.inv"),
    case(lambda x, y: np.linalg.solve(x + _I3, y), lambda x, y: tf.linalg.solve(x + _I3, y),
         (2, 3, 3), (2, 3, 2), domain="small", id="linalg.solve"),
    case(lambda x, y: np.linalg.solve(x + _I3, y),
         lambda x, y: tf.linalg.solve(x + _I3, y[:, None])[:, 0], (3, 3), (3,),
         domain="small", id="linalg.solve-vector"),
    case(lambda x: np.linalg.cholesky(x @ x.T + _I3),
         lambda x: tf.linalg.cholesky(x @ tf.transpose(x) + _I3), (3, 3), domain="small",
         id="linalg.cholesky"),
    case(lambda x: np.linalg.cholesky(x @ x.T + _I3, upper=True),
         lambda x: tf.transpose(tf.linalg.cholesky(x @ tf.transpose(x) + _I3)), (3, 3),
         domain="small", id="linalg.cholesky-upper"),
    case(lambda x: np.linalg.eigvalsh(x + _SPREAD), lambda x: tf.linalg.eigvalsh(x + _SPREAD),
         (3, 3), domain="small", id="linalg.eigvalsh"),
    case(lambda x: np.linalg.eigh(x + _SPREAD, UPLO="U").eigenvectors ** 2,
         lambda x: tf.linalg.eigh(tf.transpose(x + _SPREAD))[1] ** 2, (3, 3), domain="small",
         id="linalg.eigh-upper"),
    case(lambda x: np.linalg.svd(x + _SPREAD[:, :2], compute_uv=False),
         lambda x: tf.linalg.svd(x + _SPREAD[:, :2], compute_uv=False), (3, 2),
         domain="small", id="linalg.svd-values"),
    case(lambda x: np.linalg.svd(x + _SPREAD[:2], full_matrices=False).Vh ** 2,
         lambda x: tf.transpose(tf.linalg.svd(x + _SPREAD[:2])[2]) ** 2, (2, 3),
         domain="small", id="linalg.svd-vectors"),
    case(np.linalg.norm, lambda x: tf.norm(x), (2, 3), id="linalg.norm"),
    case(lambda x: np.linalg.norm(x + _SPREAD, 2), lambda x: tf.norm(x + _SPREAD, 2, (0, 1)),
         (3, 3), domain="small", id="linalg.norm-spectral"),
    case(lambda x: np.linalg.norm(x, 3, axis=0), lambda x: tf.norm(x, 3, axis=0), (2, 3),
         domain="pos", id="linalg.norm-p"),
]


def _inputs(shapes, domains, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(*DOMAINS[d], size=s).astype(dtype) for s, d in zip(shapes, domains)]


def _tape(f, arrays, weight):
    """f's output, and the gradient of sum(f * weight) wrt each input."""
    xs = [tf.constant(a) for a in arrays]
    with tf.GradientTape() as tape:
        tape.watch(xs)
        out = f(*xs)
    return out, tape.gradient(out, xs, output_gradients=weight)


def _numeric(f, arrays, weight, eps=1e-6):
    """Central differences of sum(f * weight), f run by NumPy on plain arrays."""
    grads = []
    for i, a in enumerate(arrays):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            shifted = []
            for step in (eps, -eps):
                args = [b.copy() for b in arrays]
                args[i][idx] += step
                shifted.append(np.sum(np.asarray(f(*args)) * weight))
            g[idx] = (shifted[0] - shifted[1]) / (2 * eps)
        grads.append(g)
    return grads


@pytest.mark.parametrize("np_fn, tf_fn, shapes, domains, diff", UFUNCS + FUNCTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_match_numpy(np_fn, tf_fn, shapes, domains, diff, dtype):
    arrays = _inputs(shapes, domains, dtype)
    expected = np.asarray(np_fn(*arrays))
    got = np_fn(*[tf.constant(a) for a in arrays])
    assert isinstance(got, tf.Tensor)
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got.numpy(), expected, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("np_fn, tf_fn, shapes, domains, diff", UFUNCS + FUNCTIONS)
def test_gradients(np_fn, tf_fn, shapes, domains, diff):
    arrays = _inputs(shapes, domains)
    weight = np.random.default_rng(1).normal(size=np.shape(np_fn(*arrays)))
    out, grads = _tape(np_fn, arrays, weight)
    twin_out, twin_grads = _tape(tf_fn, arrays, weight)
    np.testing.assert_allclose(out.numpy(), twin_out.numpy(), rtol=1e-12)
    if not diff:
        assert grads == [None] * len(arrays)
        return
    for g, twin, fd, a in zip(grads, twin_grads, _numeric(np_fn, arrays, weight), arrays):
        assert g.shape == a.shape and g.dtype == a.dtype
        np.testing.assert_allclose(g.numpy(), twin.numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g.numpy(), fd, rtol=1e-6, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("np_fn, tf_fn, shapes, domains, diff", UFUNCS + FUNCTIONS)
def test_traced_as_eager(np_fn, tf_fn, shapes, domains, diff, monkeypatch):
    """The NumPy-written function compiled: the generated code, run as Python
    (SRCXFORM_JIT=0, no Numba compile a case), gives the eager value and gradient."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    arrays = _inputs(shapes, domains)
    weight = np.random.default_rng(1).normal(size=np.shape(np_fn(*arrays)))
    out, grads = _tape(np_fn, arrays, weight)
    traced = np.asarray(tf.differentiable(np_fn)(*arrays))
    assert traced.dtype == out.dtype and traced.shape == out.shape
    np.testing.assert_allclose(traced, out.numpy(), rtol=1e-12, atol=1e-14)
    if diff:
        weighted = tf.differentiable(lambda *xs: tf.reduce_sum(np_fn(*xs) * weight))
        traced_grads = weighted.grad(*arrays)
        traced_grads = traced_grads if isinstance(traced_grads, tuple) else (traced_grads,)
        for got, want in zip(traced_grads, grads):
            np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-14)


def test_comparisons_and_logic_give_bool_tensors():
    x, y = tf.constant([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])
    for ufunc in (np.equal, np.not_equal, np.less, np.less_equal, np.greater,
                  np.greater_equal, np.logical_and, np.logical_or):
        got = ufunc(x, y)
        assert isinstance(got, tf.Tensor) and got.dtype == np.bool_
        np.testing.assert_array_equal(got.numpy(), ufunc(np.asarray(x), y))
    np.testing.assert_array_equal(np.logical_not(x > 1.5).numpy(), [True, False, False])
    np.testing.assert_array_equal(np.isfinite(tf.constant([1.0, np.inf, np.nan])).numpy(),
                                  [True, False, False])


def test_bitwise_ufuncs_are_bitwise_on_integers_and_logical_on_bools():
    i, j = np.array([5, -3, 12], np.int32), np.array([3, 6, -1], np.int64)
    p, q = np.array([True, True, False]), np.array([True, False, False])
    for ufunc in (np.bitwise_and, np.bitwise_or, np.bitwise_xor):
        for x, y in ((i, j), (p, q)):
            got, want = ufunc(tf.constant(x), y), ufunc(x, y)
            assert isinstance(got, tf.Tensor) and got.dtype == want.dtype
            np.testing.assert_array_equal(got.numpy(), want)
        got = ufunc(j, tf.constant(i))  # the NumPy array on the left
        np.testing.assert_array_equal(got.numpy(), ufunc(j, i))
    for x in (i, p):
        np.testing.assert_array_equal(np.invert(tf.constant(x)).numpy(), np.invert(x))
    with pytest.raises(TypeError, match="bitwise_and"):
        np.bitwise_and(tf.constant([1.0]), 1.0)


def test_variables_are_read_and_watched():
    w = tf.Variable([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        loss = np.sum(np.square(w)) + np.dot(w, np.ones(3, np.float32))
    assert isinstance(loss, tf.Tensor)
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), [3.0, 5.0, 7.0])


def test_higher_order_through_numpy():
    x = tf.Variable(0.5, dtype=tf.float64)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = np.tanh(x)
        dy = inner.gradient(y, x)
    d2y = outer.gradient(dy, x)
    t = np.tanh(0.5)
    np.testing.assert_allclose(dy.numpy(), 1 - t * t)
    np.testing.assert_allclose(d2y.numpy(), -2 * t * (1 - t * t))


def test_prod_gradient_with_a_zero():
    x = tf.constant([2.0, 0.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = np.prod(x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0.0, 6.0, 0.0])


def test_result_dtypes_follow_numpy():
    ints, flags = tf.constant([1, 2]), tf.constant([True, False, True])
    assert np.mean(ints).dtype == np.mean(np.array([1, 2], np.int32)).dtype == np.float64
    assert np.mean(ints).numpy() == 1.5
    assert np.sum(flags).numpy() == 2 and np.sum(flags).dtype == np.sum(np.asarray(flags)).dtype
    assert np.sum(ints).dtype == np.sum(np.array([1, 2], np.int32)).dtype
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        total = np.sum(x, dtype=np.float64)
    assert total.dtype == np.float64
    grad = tape.gradient(total, x)
    assert grad.dtype == np.float32  # a gradient has its source's dtype
    np.testing.assert_array_equal(grad.numpy(), [1.0, 1.0])


def test_shape_queries():
    x = tf.constant(np.zeros((2, 3)))
    assert np.shape(x) == (2, 3) and np.ndim(x) == 2 and np.size(x) == 6
    assert np.size(x, 1) == 3
    z, o = np.zeros_like(x), np.ones_like(x, dtype=np.float32)
    assert isinstance(z, tf.Tensor) and z.shape == (2, 3) and z.dtype == np.float64
    assert o.dtype == np.float32 and (o.numpy() == 1).all()


# ----- plain NumPy code, unchanged -----


def logistic_loss(w, b, X, y):
    """Logistic regression's mean negative log-likelihood, in plain NumPy."""
    z = np.dot(X, w) + b
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def _logistic_data(n=20, d=3):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    y = (X @ np.array([1.0, -2.0, 0.5]) + 0.3 * rng.normal(size=n) > 0).astype(np.float64)
    return X, y


def test_numpy_logistic_regression_is_differentiable():
    X, y = _logistic_data()
    w0, b0 = np.array([0.1, 0.2, -0.3]), np.float64(0.05)
    w, b = tf.Variable(w0), tf.Variable(b0)
    with tf.GradientTape() as tape:
        loss = logistic_loss(w, b, X, y)
    assert isinstance(loss, tf.Tensor) and loss.dtype == np.float64
    np.testing.assert_allclose(loss.numpy(), logistic_loss(w0, b0, X, y), rtol=1e-12)
    dw, db = tape.gradient(loss, [w, b])
    p = 1 / (1 + np.exp(-(X @ w0 + b0)))
    np.testing.assert_allclose(dw.numpy(), X.T @ (p - y) / len(y), rtol=1e-10)
    np.testing.assert_allclose(db.numpy(), np.mean(p - y), rtol=1e-10)


def test_numpy_logistic_regression_trains():
    X, y = _logistic_data()
    w, b = tf.Variable(np.zeros(3)), tf.Variable(0.0, dtype=tf.float64)
    losses = []
    for _ in range(50):
        with tf.GradientTape() as tape:
            loss = logistic_loss(w, b, X, y)
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(0.5 * dw)
        b.assign_sub(0.5 * db)
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0]
    assert all(later <= earlier for earlier, later in itertools.pairwise(losses))


def test_numpy_mlp_with_softmax_matches_finite_differences():
    rng = np.random.default_rng(2)
    X, labels = rng.normal(size=(5, 4)), np.eye(3)[[0, 2, 1, 1, 0]]

    def loss(W1, b1, W2):
        h = np.tanh(X @ W1 + b1)
        logits = np.dot(h, W2)
        e = np.exp(logits - np.max(logits, axis=1, keepdims=True))
        probs = e / np.sum(e, axis=1, keepdims=True)
        return -np.mean(np.sum(labels * np.log(probs), axis=1))

    params = [rng.normal(size=(4, 6)), rng.normal(size=6), rng.normal(size=(6, 3))]
    out, grads = _tape(loss, params, np.float64(1.0))
    np.testing.assert_allclose(out.numpy(), loss(*params), rtol=1e-12)
    for g, fd in zip(grads, _numeric(loss, params, 1.0)):
        np.testing.assert_allclose(g.numpy(), fd, rtol=1e-6, atol=1e-8)


# ----- what is not supported says so -----


@pytest.mark.parametrize("call, name", [
    (lambda x: np.cbrt(x), "numpy.cbrt"),
    (lambda x: scipy.special.ndtr(x), "the ufunc ndtr"),
    (lambda x: np.unique(x), "numpy.unique"),
    (lambda x: np.linalg.lstsq(x, x), "numpy.linalg.lstsq"),
    (lambda x: np.nancumsum(x), "numpy.nancumsum"),
    (lambda x: np.add.reduce(x), "numpy.add.reduce"),
    (lambda x: np.multiply.outer(x, x), "numpy.multiply.outer"),
])
def test_unsupported_function_raises_type_error_naming_it(call, name):
    x = tf.constant([[3.0, 1.0], [2.0, 4.0]])
    with pytest.raises(TypeError, match=re.escape(name) + " has no srcxform op"):
        call(x)


@pytest.mark.parametrize("call, argument", [
    (lambda x: np.exp(x, out=np.empty(3)), "out"),
    (lambda x: np.add(x, 1.0, where=np.array([True, False, True])), "where"),
    (lambda x: np.exp(x, dtype=np.float64), "dtype"),
    (lambda x: np.sum(x, out=np.empty(())), "out"),
    (lambda x: np.sum(x, where=np.array([True, False, True])), "where"),
    (lambda x: np.max(x, initial=10.0), "initial"),
    (lambda x: np.reshape(x, (3, 1), order="F"), "order"),
    (lambda x: np.round(x, 2), "decimals"),
    (lambda x: np.take(x, [5], mode="wrap"), "mode"),
    (lambda x: np.concatenate([x, x], dtype=np.float64), "dtype"),
    (lambda x: np.dot(x, x, out=np.empty((), np.float32)), "out"),
])
def test_unsupported_argument_raises_instead_of_being_ignored(call, argument):
    with pytest.raises(TypeError, match=f"does not support the argument\\(s\\) {argument}"):
        call(tf.constant([1.0, 2.0, 3.0]))


@pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) < "2.1.0",
                    reason="np.clip's min=/max= arrived in NumPy 2.1")
def test_clip_min_max_keywords():
    x = tf.constant([-2.0, 0.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = np.clip(x, min=-1.0, max=1.0)
    np.testing.assert_array_equal(y.numpy(), [-1.0, 0.0, 1.0])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0.0, 1.0, 0.0])


def test_where_needs_x_and_y():
    with pytest.raises(TypeError, match="needs both x and y"):
        np.where(tf.constant([1.0, -1.0]) > 0)


def test_where_accepts_a_numeric_condition_as_numpy_does():
    got = np.where(tf.constant([2, 0, -1]), tf.constant([1.0, 2.0, 3.0]), 0.0)
    np.testing.assert_array_equal(got.numpy(), [1.0, 0.0, 3.0])


def test_float_only_functions_take_integers_as_numpy_and_refuse_them_as_tensorflow():
    got = np.exp(tf.constant([1, 2]))  # NumPy's loop in float64 (helper 138)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, np.exp(np.array([1, 2])))
    with pytest.raises(TypeError, match="exp"):
        tf.exp(tf.constant([1, 2]))


def test_numpys_own_rules_where_srcxform_differed():
    # Helper 85: each was a silent difference from NumPy, eager and compiled alike.
    a, b = np.stack([2 * np.eye(3), 4 * np.eye(3)]), np.array([2.0, 4.0, 8.0])
    solve = tf.differentiable(lambda a, b: np.linalg.solve(a, b))
    np.testing.assert_array_equal(np.asarray(solve(a, b)), np.linalg.solve(a, b))  # (2, 3)
    empty_max = tf.differentiable(lambda x: np.max(x, axis=0))
    for run in (empty_max, lambda x: np.max(tf.constant(x), axis=0)):
        with pytest.raises(ValueError, match="zero-size array"):  # it gave -inf
            run(np.zeros((0, 3)))
    np.testing.assert_array_equal(np.asarray(empty_max(np.ones((2, 3)))), np.ones(3))
    with pytest.raises(TypeError, match="a bool index"):  # it was x[1]
        tf.constant(np.ones((2, 3)))[True]
    assert float(np.max(tf.constant(2.0), axis=0)) == 2.0  # a scalar's one axis, as NumPy


def test_a_scalar_has_no_axis_but_numpy_s_ufunc_reductions_take_axis_0():
    # TensorFlow's ops raise for any axis of a scalar (they raised NumPy's raw AxisError, or
    # an IndexError, or reversed nothing); NumPy's sum, prod, max, min, cumsum and cumprod
    # read a scalar's axis 0 as None, where its mean, var and std raise.
    s = tf.constant(2.0)
    for op in (lambda: tf.reduce_max(s, axis=0), lambda: tf.reduce_sum(s, axis=-1),
               lambda: tf.reduce_logsumexp(s, axis=0), lambda: tf.math.reduce_std(s, axis=0),
               lambda: tf.nn.moments(s, axes=[0]), lambda: tf.squeeze(s, 0),
               lambda: tf.split(s, 1), lambda: tf.reverse(s, [0]), lambda: tf.gather(s, [0]),
               lambda: np.mean(s, axis=0)):
        with pytest.raises(tf.ShapeError, match="out of range for a value of rank 0"):
            op()
    for func in (np.sum, np.prod, np.max, np.min, np.cumsum, np.cumprod):
        eager = func(s, axis=0)
        assert np.asarray(eager).shape == func(np.array(2.0), axis=0).shape
        np.testing.assert_array_equal(np.asarray(eager), func(np.float32(2.0), axis=0))
    compiled = tf.differentiable(lambda x: np.sum(x, axis=0) + np.cumsum(x, axis=-1)[0])
    assert float(compiled(np.float64(3.0))) == 6.0
    assert float(compiled.grad(np.float64(3.0))) == 2.0


@pytest.mark.parametrize("func, args", [
    (np.linalg.solve, ([[2, 1], [1, 3]], [1, 2])), (np.linalg.det, ([[2, 1], [1, 3]],)),
    (np.linalg.inv, ([[2, 1], [1, 3]],)), (np.linalg.eigvalsh, ([[2, 1], [1, 3]],)),
    (np.linalg.cholesky, ([[2, 1], [1, 3]],)), (np.linalg.norm, ([True, False, True],)),
])
def test_numpy_linalg_computes_integer_and_bool_arrays_in_float64(func, args):
    # srcxform's LAPACK ops take floats; NumPy's linalg takes these as float64 (helper 86:
    # np.linalg.solve of integer matrices raised)
    arrays = [np.array(a) for a in args]
    got = np.asarray(func(*(tf.constant(a) for a in arrays)))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, func(*arrays))


@pytest.mark.parametrize("func", [lambda x: np.squeeze(x, axis=0), lambda x: x.squeeze(0),
                                  lambda x: np.take(x, 0, axis=0),
                                  lambda x: np.argmax(x, axis=0), lambda x: np.argmin(x, axis=-1),
                                  np.argsort])
def test_numpy_s_functions_take_a_scalar_s_axis_0_as_numpy(func):
    # They raised ShapeError (helper 90), where NumPy reads a scalar's axis 0 as None.
    got, want = np.asarray(func(tf.constant(2.0))), func(np.array(2.0, np.float32))
    assert got.shape == np.shape(want)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("func", [lambda x: np.squeeze(x, axis=(0,)),
                                  lambda x: np.sum(x, axis=(0,)),
                                  lambda x: np.squeeze(x, axis=np.array([0, 0]))])
def test_only_an_int_axis_0_is_a_scalars_axis_as_in_numpy(func):
    # Helper 91: a tuple (0,) was read as None too, where NumPy raises; an array axis
    # raised a raw "truth value of an array" ValueError.
    with pytest.raises(tf.ShapeError, match="out of range for a value of rank 0"):
        func(tf.constant(2.5))


@pytest.mark.parametrize("axis", [np.array(0), tf.constant(0)])
def test_a_scalar_s_axis_may_be_a_0d_array_or_tensor_as_in_numpy(axis):
    for func in (np.sum, np.max, np.squeeze, np.argmax, np.argsort, np.cumsum):
        got, want = func(tf.constant(5.0), axis=axis), func(np.float32(5.0), axis=np.array(0))
        np.testing.assert_array_equal(np.asarray(got), want)


def test_trace_and_diagonal_of_one_axis_twice_and_norm_over_a_0d_array_axis():
    # Helper 94: the same axis twice raised a transpose message; a 0-d array axis raised
    # "axis must be None, an int or a pair" where NumPy takes it.
    t = tf.constant(np.arange(24.0).reshape(2, 3, 4))
    for func in (np.trace, np.diagonal):
        with pytest.raises(ValueError, match="axis1 and axis2 cannot be the same"):
            func(t, axis1=1, axis2=-2)
    np.testing.assert_allclose(np.asarray(np.linalg.norm(t, axis=np.array(1))),
                               np.linalg.norm(np.arange(24.0).reshape(2, 3, 4), axis=1))
    with pytest.raises(TypeError, match="top_k: k must be an int"):  # True was k = 1
        tf.math.top_k(t, k=True)


def test_numpy_rules_at_the_edges_of_var_mean_tile_and_dot():
    # Helpers 106 and 108: np.var with ddof past n was negative (-2.0; NumPy divides by
    # max(n - ddof, 0): inf), a float16 mean over 70,000 elements inf or NaN (NumPy and
    # TensorFlow sum float16 in float32), np.tile(t, 2.7) tiled twice (NumPy raises), and
    # np.dot's out by position raised a raw TypeError.
    t = tf.constant([0.0, 1.0, 2.0])
    with np.errstate(divide="ignore"):
        assert np.var(t, ddof=4).numpy() == np.var(t.numpy(), ddof=4) == np.inf
    assert np.var(t, ddof=1).numpy() == np.var(t.numpy(), ddof=1) == 1.0
    halves = np.full(70_000, 100, np.float16)
    for mean in (tf.reduce_mean(halves), np.mean(tf.constant(halves))):
        assert mean.dtype == np.float16 and mean.numpy() == np.mean(halves) == 100.0
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        np.tile(t, 2.7)
    with pytest.raises(TypeError, match="numpy.dot: srcxform does not support the argument"):
        np.dot(t, t.numpy(), np.empty(()))


def test_rounding_functions_keep_numpys_result_dtypes():
    # Helper 128: np.rint of int32 stayed int32 (NumPy: float64, eagerly and compiled);
    # np.ceil, np.trunc and np.fix of integers raised.
    rounded = tf.differentiable(lambda x: [f(x) for f in (np.rint, np.floor, np.ceil,
                                                         np.trunc, np.fix)], wrt=())
    for a in (np.array([1, 0, -3], np.int16), np.array([1, 0, -3], np.int32),
              np.array([-2.5, -0.5, 0.5, 1.5, np.nan, -0.0], np.float32)):
        want = [f(a) for f in (np.rint, np.floor, np.ceil, np.trunc, np.fix)]
        for got in ([f(tf.constant(a)) for f in (np.rint, np.floor, np.ceil, np.trunc,
                                                  np.fix)], rounded(a)):
            for g, w in zip(got, want):
                g = np.asarray(g)
                assert g.dtype == w.dtype
                np.testing.assert_array_equal(g, w)
                np.testing.assert_array_equal(np.signbit(g), np.signbit(w))



def test_svd_refuses_hermitian_which_it_would_ignore():
    # Helper 128: NumPy's eigh-based result differs for a matrix that is not symmetric.
    with pytest.raises(TypeError, match="linalg.svd: srcxform does not support.* hermitian"):
        np.linalg.svd(tf.constant([[1.0, 2.0], [0.0, 1.0]]), hermitian=True)


def test_a_numpy_functions_tuple_compiled_is_numpys_as_eagerly():
    # Helper 128: each value of a tuple a NumPy function returned (slogdet, split, eigh,
    # average's) came back a Tensor from the compiled plain call; run on NumPy arrays,
    # the function gives NumPy's values.
    def f(x):
        return np.linalg.slogdet(x)[1], np.split(x, 2)[0], np.average(x, returned=True)[0]

    x = np.array([[2.0, 1.0], [1.0, 3.0]])
    compiled = tf.differentiable(f, wrt=())
    assert [type(v) for v in compiled(x)] == [type(v) for v in f(x)] == \
        [np.float64, np.ndarray, np.float64]
    assert all(isinstance(v, tf.Tensor) for v in compiled(tf.constant(x)))


def _masked(x, n):
    positive = x > 0
    return (x * positive + (x < 1) * x ** 2, positive + (x > 1), positive * positive,
            np.maximum(positive, x < -0.5), positive // (x > -9), np.add(positive, 3),
            n / n, n // 2 + positive, np.less(positive, x > 1))


def test_numpy_operators_on_bools_and_small_ints_are_numpys():
    """On NumPy's values an operator is NumPy's (helper 135): `x * (x > 0)` raised, the
    primitives refusing bools as TensorFlow's ops do, and int8 / int8 was TensorFlow's
    float32 where NumPy gives float64."""
    x, n = np.linspace(-1.0, 2.0, 7), np.arange(1, 8, dtype=np.int8)
    compiled = tf.differentiable(_masked, wrt=0)
    for got, want in zip(compiled(x, n), _masked(x, n)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    grad = tf.differentiable(lambda x, n: np.sum(_masked(x, n)[0])).grad(x, n)
    np.testing.assert_array_equal(grad, np.where(x > 0, 1.0, 0.0) + np.where(x < 1, 2 * x, 0.0))
    with pytest.raises(TypeError, match="numpy.subtract: numpy boolean subtract"):
        tf.differentiable(lambda x: np.sum(x * ((x > 0) - (x > 1))))(x)


def _mixed(a, t, s, n):
    total = 0.0
    for row in a.reshape(2, 2):
        total = total + row * (row > 0)
    return a // t, (a > 0) * t, a + [0.1, 0.2, 0.3, 0.4], s * (a > 0), a // s, np.exp(n), total


def test_numpy_arrays_meet_tensors_lists_and_python_numbers_as_numpy_does():
    """Helper 138: an array on the left of a tensor computes NumPy's ufunc (a // t was
    TensorFlow's floor(a / t), silently), a list beside an array is a float64 array, an
    integer array's np.exp is float64, and a Python float or an array's rows meet masks
    as NumPy's do, the check's eager run (SRCXFORM_CHECK, the tests' default) included."""
    a, n = np.array([7.0, -7.0, 0.5, 2.0]), np.arange(1, 5)
    t = tf.constant([-1.4, 1.4, 0.1, 3.0], tf.float64)
    compiled = tf.differentiable(_mixed, wrt=())
    for got, want in zip(compiled(a, t, -1.4, n), _mixed(a, t, -1.4, n)):
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got, want, rtol=1e-15)


def _leapfrog(state):
    pos, vel = state[:, :2], state[:, 2:]
    vel -= 0.1 * pos
    pos += 0.1 * vel
    return np.sum(state ** 2)


def _doubled_rows(x):
    for row in x:
        row *= 2.0
    return np.sum(x)


def _tripled_column(x):
    column = x.T[0]
    column *= 3.0
    return np.sum(x)


def _carried_view(x):
    v = x[0]
    for _ in range(x.shape[0]):  # a view carried by a loop stays one
        v += 1.0
    return np.sum(x)


def _branch_view(x):
    if np.sum(x) > 0:  # a converted branch: either result is a view
        v = x[1:]
    else:
        v = x[:-1]
    v += 1.0
    return np.sum(x)


def _split_view(x):
    top, _ = np.split(np.flip(x), [1])
    top += 1.0
    return np.sum(x)


@pytest.mark.parametrize("fn, op", [(_leapfrog, "-="), (_doubled_rows, r"\*="),
                                    (_tripled_column, r"\*="), (_carried_view, r"\+="),
                                    (_branch_view, r"\+="), (_split_view, r"\+=")])
def test_an_in_place_operator_on_a_view_of_a_numpy_array_raises(fn, op):
    """Helper 137: NumPy writes `vel -= dt * pos` through into the array vel views; compiled
    it made a new vel and left state as it was, a different value with no error. An
    in-place operator on a view (basic indexing, a row, a reshape or transpose) raises."""
    x = np.arange(12.0).reshape(3, 4) / 10
    written = x.copy()
    fn(written)  # NumPy's own call writes into its argument
    assert not np.array_equal(written, x)
    with pytest.raises(tf.TracingError, match=rf"test_numpy_dispatch.py:\d+: .*\n  `{op}` on a "
                       "view of a NumPy array"):
        tf.differentiable(fn)(x)



def _view_read_after(x):
    h = x * 2.0
    s = h[:, 1:]
    h += 1.0
    return np.sum(h * s[0, 0])


def _alias_read_after(x):
    h = x * 2.0
    g = h
    h -= x
    return np.sum(h * g)


def _alias_read_in_loop(x):
    h = x * 2.0
    for _ in range(2):
        prev = h
        h *= 0.5
        h = h + prev
    return np.sum(h)


def _new_array_alias(x):
    acc = np.zeros(x.shape)
    seen = acc
    acc += x
    return np.sum(acc * seen + acc)


def _diagonal_read_after(x):
    k = x @ x.T
    d = np.diag(k)  # a view of k's diagonal (np.diag of a vector makes a new matrix)
    k += 1.0
    return np.sum(d) + np.sum(k)


def _params_updated(x):
    params = [x * 1.0, x[0] * 2.0]
    for p, g in zip(params, [x, x[1]]):
        p -= 0.1 * g  # NumPy updates the list's arrays (SGD over a list: helper 143)
    return np.sum(params[0]) + np.sum(params[1])


@pytest.mark.parametrize("fn, name", [(_view_read_after, "s"), (_alias_read_after, "g"),
                                      (_alias_read_in_loop, "prev"), (_new_array_alias, "seen"),
                                      (_diagonal_read_after, "d"), (_params_updated, "params")])
def test_an_in_place_operator_raises_where_another_name_reads_the_array_after(fn, name):
    """Helper 141: `s = h[:]; h += b` then reading s gave 5.59 for NumPy's 15.25, with no
    error: NumPy's in-place operator writes into the memory s (a view of h, or h itself
    under another name) shares. Where a local name other than the statement's reads such
    a value after it, the operator raises, naming it."""
    x = np.arange(12.0).reshape(3, 4) / 10
    with pytest.raises(tf.TracingError, match=rf"test_numpy_dispatch.py:\d+: .*\n  `.=` on a "
                       rf"NumPy array that `{name}` also holds"):
        tf.differentiable(fn)(x)


def _aliases_not_read_after(x):
    h = x * 2.0
    total = np.sum(h[:, 0])  # a view, read before and gone
    for row in h:  # `row`, a view of h, is not read after the loop
        total = total + np.sum(row)
    loss = 0.0
    for _ in range(2):
        prev = h  # read before the operator in each trip, bound anew before it
        loss = loss + np.sum(prev ** 2)
        h += 1.0
    s = h[:]
    h += 1.0
    s = h[1:]  # bound anew before it is read
    return np.sum(h * s[0]) + total + loss


def test_an_in_place_operator_runs_where_no_other_name_reads_the_array_after():
    x = np.arange(12.0).reshape(3, 4) / 10
    f = tf.differentiable(_aliases_not_read_after)
    np.testing.assert_allclose(f(x), _aliases_not_read_after(x), rtol=1e-14)
    np.testing.assert_allclose(f.grad(x), central_difference(_aliases_not_read_after, x),
                               rtol=1e-6)


def _item_added(x):
    table = np.zeros(3)
    table[1] += np.sum(x)
    return np.sum(table)


def _item_set(x):
    table = np.zeros(3)
    table[2] = np.sum(x * x)
    return np.sum(table)


@pytest.mark.parametrize("fn", [_item_added, _item_set])
def test_a_traced_value_stored_into_an_items_array_raises_naming_the_line(fn):
    """Helper 140: `A[1] += np.sum(x)` on a local NumPy array raised NumPy's bare ValueError
    ("setting an array element with a sequence"), naming no line of the user's."""
    with pytest.raises(tf.TracingError, match=r"test_numpy_dispatch.py:\d+: table\[.\] .*\n  "
                       r"NumPy: setting an array element with a sequence. An item"):
        tf.differentiable(fn)(np.ones(3))


def _already_2d(x, w):
    x = np.atleast_2d(x)  # x itself where it has two axes: no view of it
    h = x @ w
    h += 1.0
    x *= 2.0
    return np.sum(h) + np.sum(x)


class _Layer:
    def __init__(self):
        self.w = np.ones((4, 2))

    def step(self, x):
        self.w -= 0.1 * (x.T @ x)[:, :2]  # the object keeps w past the trace
        return np.sum(self.w)


def test_in_place_operators_on_the_array_itself_and_on_an_attribute():
    """Helper 143: np.atleast_2d of a matrix, the matrix itself, was marked a view of
    itself (the alias walk then never ended); `self.w -= ...` left a traced value on the
    object, as Python puts a SWAP between the operator and STORE_ATTR, which the check of
    the store did not look past."""
    x, w = np.arange(12.0).reshape(3, 4) / 10, np.ones((4, 2))
    np.testing.assert_allclose(tf.differentiable(_already_2d)(x, w), _already_2d(x.copy(), w))
    layer = _Layer()
    with pytest.raises(tf.TracingError, match=r"self.w -= .*\n  an in-place operator"):
        tf.differentiable(layer.step)(x)
    assert isinstance(layer.w, np.ndarray)

def _fresh_values(x):
    total = x[0] + 0.0
    total += x[1]  # x[1] is a view, total a new array
    picked = x[[0, 2]]  # a copy: advanced indexing
    picked *= 2.0
    scaled = x * 2.0
    scaled -= 1.0
    return np.sum(total) + np.sum(picked) + np.sum(scaled)


def _tensor_view(x):
    flat = tf.reshape(x, [-1])
    flat += 1.0  # a tensor: TensorFlow's operators rebind
    return tf.reduce_sum(flat) + tf.reduce_sum(x)


def test_in_place_operators_on_new_arrays_and_on_tensors_rebind():
    x = np.arange(12.0).reshape(3, 4) / 10
    for fn, arg in ((_fresh_values, x), (_tensor_view, tf.constant(x))):
        np.testing.assert_allclose(tf.differentiable(fn)(arg), fn(arg), rtol=1e-15)
    np.testing.assert_allclose(tf.differentiable(_fresh_values).grad(x),
                               np.full((3, 4), 2.0) + [[3.0] * 4, [1.0] * 4, [2.0] * 4])


@pytest.mark.parametrize("index", [[0, 2], [[0, 1], [2, 0]], (slice(None), [3, 0]), []])
def test_a_list_index_of_a_numpy_array_is_an_array_of_indices(index):
    """x[[0, 2]] on a NumPy array is its rows 0 and 2; compiled it was TensorFlow's
    x[0, 2], which reads a list as a tuple: another value, with no error. A tensor keeps
    TensorFlow's reading."""
    x = np.arange(12.0).reshape(3, 4) / 10
    np.testing.assert_array_equal(tf.differentiable(lambda x: x[index], wrt=())(x), x[index])
    t = tf.constant(x)
    assert float(tf.differentiable(lambda t: t[[0, 2]], wrt=())(t)) == float(t[[0, 2]]) == 0.2


def _accumulated(x):
    acc = np.zeros(4)
    acc += x[0]  # NumPy's in-place add of a traced value: out=acc
    acc *= 2.0
    single = np.ones(4, np.float32)
    single += x[1]  # float32, as NumPy keeps it
    return np.sum(acc) + np.sum(single) * 10, single


def test_an_in_place_operator_on_a_new_numpy_array_takes_a_traced_value():
    """`acc = np.zeros(4); acc += x` raised TypeError (the ufunc's out=); the statement now
    binds acc to the traced result in acc's dtype, NumPy's errors where it does not fit."""
    x = np.arange(12.0).reshape(3, 4) / 10
    value, single = tf.differentiable(_accumulated, wrt=())(x)
    want, want_single = _accumulated(x)
    assert single.dtype == np.float32 and value == want
    np.testing.assert_array_equal(single, want_single)
    grad = tf.differentiable(lambda x: _accumulated(x)[0]).grad(x)
    np.testing.assert_array_equal(grad, [[2.0] * 4, [10.0] * 4, [0.0] * 4])

    def explicit_out(x):
        a = np.zeros(4)
        np.add(a, x[0], out=a)  # writes into a: refused
        return np.sum(a)

    def integers(x):
        a = np.zeros(4, np.int64)
        a += x[0]
        return np.sum(a)

    with pytest.raises(TypeError, match="numpy.add: srcxform does not support the argument"):
        tf.differentiable(explicit_out)(x)
    with pytest.raises(TypeError, match=r"a \+= x\[0\]\n  numpy.add: Cannot cast ufunc output "
                       "from float64 to int64"):
        tf.differentiable(integers)(x)


def test_a_list_of_traced_integers_is_an_array_of_indices():
    """x[[np.argmax(x), 0]] raised (np.asarray of a traced value, helper 139)."""
    x = np.array([3.0, 1.0, 6.0, 2.0])
    picked = tf.differentiable(lambda x: np.sum(x[[np.argmax(x), 0]] ** 2))
    assert picked(x) == 45.0
    np.testing.assert_array_equal(picked.grad(x), [6.0, 0.0, 12.0, 0.0])


def _picked_squares(x):
    return (x[[0, 2]] ** 2).sum()


def test_the_transforms_meet_a_numpy_array_as_numpy_does():
    """Helper 139: hessian, jvp, jacfwd, vmap and check_grads ran a NumPy-written function
    on tensors, so x[[0, 2]] was TensorFlow's x[0, 2] there while grad took NumPy's rows:
    a Hessian with one nonzero entry, a jvp of 6 for 104. Each argument now keeps its
    eager kind (forward._as_input, the inline tape's sources, vmap's rows, check_grads')."""
    x = np.arange(1.0, 13.0).reshape(3, 4)
    rows = np.array([1.0, 0.0, 1.0])[:, None] * np.ones(4)
    np.testing.assert_array_equal(np.diag(np.asarray(tf.hessian(_picked_squares)(x)).reshape(
        12, 12)), 2 * rows.ravel())
    assert float(tf.jvp(_picked_squares, (x,), (np.ones_like(x),))[1]) == 104.0
    assert np.shape(tf.jacfwd(lambda x: x[[0, 2]] ** 2)(x)) == (2, 4, 3, 4)
    batch = np.stack([x, x + 1.0])
    np.testing.assert_array_equal(tf.vmap(tf.grad(_picked_squares))(batch)[1], 2 * rows * (x + 1))
    mapped = tf.differentiable(lambda b: tf.vmap(lambda x: x[[0, 2]])(b), wrt=())(batch)
    np.testing.assert_array_equal(mapped, batch[:, [0, 2]])
    tf.testing.check_grads(_picked_squares, (x,))
    # NumPy's bools in arithmetic: these transforms raised (TensorFlow's ops refuse them)
    relu_squares = lambda v: np.sum(v * (v > 0) * v)
    tf.testing.check_grads(relu_squares, (np.linspace(-1.0, 1.0, 6),), order=2)
    np.testing.assert_array_equal(np.diag(tf.hessian(relu_squares)(np.linspace(-1.0, 1.0, 6))),
                                  [0, 0, 0, 2, 2, 2])


@pytest.mark.parametrize("call, name", [
    (lambda x: scipy.special.logsumexp(x), "scipy.special.logsumexp"),
    (lambda x: scipy.linalg.solve_triangular(np.eye(3) * 2.0, x), "scipy.linalg.solve_triangular"),
])
def test_a_scipy_function_that_is_no_ufunc_is_refused_by_name_at_the_users_line(call, name):
    """Helper 137: SciPy's own Python failed on the traced value at SciPy's line, with
    advice about `for` loops."""
    with pytest.raises(tf.TracingError, match=rf"test_numpy_dispatch.py:\d+: .*\n  "
                       rf"{re.escape(name)} of a traced value: .* SciPy's own Python"):
        tf.differentiable(lambda x: np.sum(call(x)))(np.ones(3))


def _written_view(x):
    a = np.zeros((2, 3))
    row = a[0]
    row += x  # NumPy writes into a
    return np.sum(a)


_TOTAL = np.zeros(3)


def _written_global(x):
    global _TOTAL
    _TOTAL += x  # NumPy writes into the global's array
    return np.sum(_TOTAL)


def test_a_traced_value_added_into_memory_another_holds_raises():
    """Helper 140: `row += x` on a view of an untraced array, or `G += x` on a global's,
    rebound the name: a wrong sum, and a Tracer left in the global."""
    for fn in (_written_view, _written_global):
        with pytest.raises(tf.TracingError, match=r"\+= x.*\n  an in-place operator adding "
                           "a srcxform value into a NumPy array"):
            tf.differentiable(fn)(np.array([1.5, -2.0, 3.0]))
    assert type(_TOTAL) is np.ndarray and not _TOTAL.any()


def _int8_total(x):
    total = np.zeros(3, np.int8)
    for i in range(len(x)):  # a converted loop: the carry stays int8, as NumPy keeps it
        total += x[i]
    return total


def test_in_place_operators_keep_a_numpy_arrays_dtype_and_shape():
    """Helper 140: after its first trip a converted loop's `total += x[i]` promoted an int8
    total to int64 ([300] for NumPy's wrapped [44]); a traced int8 `m += np.int64(100)`
    too. NumPy keeps the array's dtype and refuses a result of another shape."""
    x = np.array([100, 100, 100])
    got = tf.differentiable(_int8_total, wrt=())(x)
    assert got.dtype == np.int8 and got.tolist() == _int8_total(x).tolist() == [44] * 3

    def shifted(m):
        m += np.int64(100)
        return m

    m = np.array([100, 101], np.int8)
    got = tf.differentiable(shifted, wrt=())(m)
    assert got.dtype == np.int8 and got.tolist() == shifted(m.copy()).tolist()

    def widened(v):
        v += np.ones((2, 3))
        return v

    with pytest.raises(ValueError, match="non-broadcastable output operand"):
        tf.differentiable(widened)(np.ones(3))


def test_bitwise_operators_and_an_index_keep_numpys_meaning():
    """Helper 140: `m ^ 1`, `3 | m`, `6 & m` and an array indexed by a traced tensor took
    TensorFlow's meaning for what followed (x[[0, 2]] as x[0, 2])."""
    m, x = np.arange(12).reshape(3, 4), np.arange(36.0).reshape(3, 3, 4)
    for fn in (lambda m: (m ^ 1)[[0, 2]], lambda m: (3 | m)[[0, 2]],
               lambda m: (6 & m)[[0, 2]]):
        np.testing.assert_array_equal(tf.differentiable(fn, wrt=())(m), fn(m))
    picked = tf.differentiable(lambda x: x[tf.argmax(tf.reduce_sum(x, (1, 2)))][[0, 2]],
                               wrt=())(x)
    np.testing.assert_array_equal(picked, x[2][[0, 2]])


def test_check_grads_passes_a_tensor_argument_as_a_tensor_and_a_branch_index_is_lazy():
    """Helper 140: check_grads' compiled column got a tensor argument as an array (NumPy's
    x[[0, 2]], its eager column TensorFlow's); an index out of range in a branch that does
    not run raised while tracing."""
    x = np.arange(12.0).reshape(3, 4) / 10
    tf.testing.check_grads(lambda t: tf.reduce_sum(t[[0, 2]] ** 3), (tf.constant(x),))

    def guarded(x, i):
        if i < x.shape[0]:
            y = tf.reduce_sum(x[i])
        else:
            y = 0.0 * tf.reduce_sum(x)
        return y

    f = tf.differentiable(guarded, wrt=0)
    assert float(f(x, np.array(5))) == 0.0 and float(f(x, np.array(1))) == 2.2


_W = np.full((2, 2), 0.3)


def _reshaped_total(x):
    total = np.zeros(6).reshape(3, 2)  # a view of a temporary no other name holds
    total += x[:3]
    return np.sum(total)


def _read_by_a_comprehension(x):
    total = np.zeros(2)
    total += x[0]
    return sum([total[i] ** 2 for i in range(2)])  # total is a closure's cell


def _recurrent(x):
    h = x[0]
    for t in range(1, x.shape[0]):  # each trip rebinds h: no view after the loop
        h = np.tanh(_W @ h + x[t])
    h /= np.sqrt(np.sum(h * h))
    return np.sum(h)


def _masks_as_integers(x):
    return np.sum((x > 0.3) & 1) + np.sum(1 | (x > 0.5))


def test_ordinary_in_place_numpy_code_runs_as_numpy_runs_it():
    """Helper 141's false positives: a view of a temporary, an accumulator a comprehension
    reads, a value a loop rebinds after starting as a row, and bitwise operators mixing
    bools and integers raised where NumPy runs them."""
    x = np.arange(12.0).reshape(6, 2) / 10
    for fn in (_reshaped_total, _read_by_a_comprehension, _recurrent, _masks_as_integers):
        np.testing.assert_allclose(np.asarray(tf.differentiable(fn, wrt=())(x)), fn(x.copy()),
                                   rtol=1e-14)
    np.testing.assert_allclose(tf.differentiable(_recurrent).grad(x),
                               central_difference(_recurrent, x), rtol=1e-6, atol=1e-9)
