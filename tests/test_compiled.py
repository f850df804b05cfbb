"""The compiler against the eager tape, against finite differences, and against itself run
as plain Python, on every function of tests/corpus.py; then compiled-path behaviours:
higher order by composition, jacobian/hessian, the kernel cache, nested structures,
unconnected arguments and static arguments.

One compiled kernel per corpus case (value_and_grad), shared by the tests of that case.
"""

import functools

import numpy as np
import pytest
from corpus import CASES

import srcxform as tf

RTOL = 1e-10  # compiled against eager: float rounding only
ATOL = 1e-12

# ----- nested structures (the same rules as srcxform: dicts by sorted key) -----

_STATIC = (bool, int, str, type(None))


def _is_static(leaf):
    return isinstance(leaf, _STATIC) and not isinstance(leaf, np.generic)


def _map(fn, tree):
    if isinstance(tree, dict):
        return {k: _map(fn, tree[k]) for k in sorted(tree)}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_map(fn, t) for t in tree)
    return fn(tree)


def _leaves(tree):
    out = []
    _map(out.append, tree)
    return out


def _structure(tree):
    """The container skeleton: types and keys, leaves as '*'."""
    if isinstance(tree, dict):
        return ("dict", tuple((k, _structure(tree[k])) for k in sorted(tree)))
    if isinstance(tree, (list, tuple)):
        return (type(tree).__name__, tuple(_structure(t) for t in tree))
    return "*"


def _replace_leaf(tree, index, value):
    """`tree` with its index-th leaf replaced."""
    counter = iter(range(1 << 30))
    return _map(lambda leaf: value if next(counter) == index else leaf, tree)


def _to_eager(tree):
    """Arrays and Python floats as float64 (or integer) Tensors; static leaves untouched."""
    def convert(leaf):
        if _is_static(leaf):
            return leaf
        if isinstance(leaf, float):
            return tf.constant(np.float64(leaf))
        return tf.constant(np.asarray(leaf))
    return _map(convert, tree)


def _numpy(tree):
    return _map(lambda leaf: np.asarray(leaf, dtype=np.float64), tree)


def _positions(wrt):
    return (wrt,) if isinstance(wrt, int) else tuple(wrt)


def assert_trees_close(actual, expected, rtol=RTOL, atol=ATOL, what=""):
    """Same structure, same shapes, values equal to tolerance, leaf by leaf."""
    assert _structure(actual) == _structure(expected), \
        f"{what}: structure {_structure(actual)} != {_structure(expected)}"
    for k, (a, e) in enumerate(zip(_leaves(actual), _leaves(expected))):
        a, e = np.asarray(a, np.float64), np.asarray(e, np.float64)
        assert a.shape == e.shape, f"{what} leaf {k}: shape {a.shape} != {e.shape}"
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=f"{what} leaf {k}")


# ----- the three ways of differentiating a case -----


def eager_value_and_grad(fn, args, wrt):
    """The reference: GradientTape over float64 Tensors, unconnected gradients as zeros."""
    args = [_to_eager(a) for a in args]
    sources = [args[p] for p in _positions(wrt)]
    with tf.GradientTape() as tape:
        tape.watch(sources)
        out = fn(*args)
    grads = tape.gradient(out, sources, unconnected_gradients="zero")
    grads = grads[0] if isinstance(wrt, int) else tuple(grads)
    return np.asarray(out, np.float64), _numpy(grads)


def numeric_grad(fn, args, wrt, eps):
    """Central differences of sum(fn(*args)) wrt every leaf of the wrt arguments."""
    def value(call_args):
        out = fn(*[_to_eager(a) for a in call_args])
        return float(np.sum(np.asarray(out, np.float64)))

    grads = []
    for p in _positions(wrt):
        leaves = _leaves(args[p])
        found = []
        for j, leaf in enumerate(leaves):
            base = np.asarray(leaf, np.float64)
            grad = np.zeros(base.shape)
            for k in range(base.size):
                moved = []
                for sign in (1.0, -1.0):
                    x = base.copy()
                    x.flat[k] += sign * eps
                    new = float(x) if isinstance(leaf, float) else x
                    call_args = list(args)
                    call_args[p] = _replace_leaf(args[p], j, new)
                    moved.append(value(call_args))
                grad.flat[k] = (moved[0] - moved[1]) / (2 * eps)
            found.append(grad)
        grads.append(_replace_all(args[p], found))
    return grads[0] if isinstance(wrt, int) else tuple(grads)


def _replace_all(tree, leaves):
    it = iter(leaves)
    return _map(lambda _: next(it), tree)


@functools.lru_cache(maxsize=None)
def compiled(name):
    """The case's Differentiable, built once and shared by its tests."""
    case = _BY_NAME[name]
    return tf.differentiable(case.fn, wrt=case.wrt)


@functools.lru_cache(maxsize=None)
def compiled_result(name):
    case = _BY_NAME[name]
    value, grads = compiled(name).value_and_grad(*case.args)
    return np.asarray(value, np.float64), grads


@functools.lru_cache(maxsize=None)
def eager_result(name):
    case = _BY_NAME[name]
    return eager_value_and_grad(case.fn, case.args, case.wrt)


_BY_NAME = {case.name: case for case in CASES}
assert len(_BY_NAME) == len(CASES) >= 45


def _params(test, only=lambda case: True):
    params = []
    for case in CASES:
        if not only(case):
            continue
        marks = ()
        if test in case.xfail:
            marks = pytest.mark.xfail(strict=True, reason=case.xfail[test])
        params.append(pytest.param(case, id=case.name, marks=marks))
    return params


# ----- the corpus -----


@pytest.mark.parametrize("case", _params("eager_fd", lambda c: c.fd))
def test_eager_matches_finite_differences(case):
    """The reference itself (and the corpus's data) is sound."""
    value, grads = eager_result(case.name)
    numeric = numeric_grad(case.fn, case.args, case.wrt, case.eps)
    assert_trees_close(grads, numeric, case.fd_rtol, case.fd_atol, "eager vs numeric")


@pytest.mark.parametrize("case", _params("compiled"))
def test_compiled_matches_eager(case):
    value, grads = compiled_result(case.name)
    eager_value, eager_grads = eager_result(case.name)
    np.testing.assert_allclose(value, eager_value, rtol=RTOL, atol=ATOL, err_msg="value")
    assert np.shape(value) == np.shape(eager_value)
    # The gradient has the argument's structure and the eager tape's values.
    positions = _positions(case.wrt)
    expected_structure = [_structure(case.args[p]) for p in positions]
    actual = [grads] if isinstance(case.wrt, int) else list(grads)
    assert [_structure(g) for g in actual] == expected_structure
    for p, g in zip(positions, actual):
        for leaf, arg in zip(_leaves(g), _leaves(case.args[p])):
            assert np.shape(leaf) == np.shape(arg)
            assert np.asarray(leaf).dtype == np.float64
    assert_trees_close(grads, eager_grads, what="compiled vs eager")


@pytest.mark.parametrize("case", _params("compiled_fd", lambda c: c.fd))
def test_compiled_matches_finite_differences(case):
    _, grads = compiled_result(case.name)
    numeric = numeric_grad(case.fn, case.args, case.wrt, case.eps)
    assert_trees_close(grads, numeric, case.fd_rtol, case.fd_atol, "compiled vs numeric")


@pytest.mark.parametrize("case", _params("interpreted"))
def test_interpreted_matches_compiled(case, monkeypatch):
    """The same generated code run as Python (SRCXFORM_JIT=0) gives Numba's results."""
    value, grads = compiled_result(case.name)
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    python = tf.differentiable(case.fn, wrt=case.wrt)  # fresh: the env is read at compile
    py_value, py_grads = python.value_and_grad(*case.args)
    np.testing.assert_allclose(np.asarray(py_value, np.float64), value, rtol=1e-12, atol=1e-14)
    assert_trees_close(py_grads, grads, rtol=1e-12, atol=1e-14, what="python vs numba")
    # The value-only kernel (cheap as Python) agrees with the eager value too.
    eager_value, _ = eager_result(case.name)
    np.testing.assert_allclose(np.asarray(python(*case.args), np.float64), eager_value,
                               rtol=RTOL, atol=ATOL)


def test_the_compiled_run_is_numba():
    """Guards the comparison above: the shared kernels really are Numba-compiled."""
    from srcxform.backend import Compiled

    d = compiled(CASES[0].name)
    compiled_result(CASES[0].name)
    kernels = [k for ks in d._kernels.values() for k in ks]
    assert kernels and all(isinstance(k.fn, Compiled) for k in kernels)


# ----- compiled-path behaviours -----


def _cubic(x):
    return tf.reduce_sum(tf.sin(x) * x * x + tf.exp(0.3 * x))


_cubic_compiled = tf.differentiable(_cubic)
_X3 = np.array([0.3, -0.8, 1.1])


def _numeric_jacobian(f, x, eps=1e-6):
    cols = []
    for k in range(x.size):
        step = np.zeros_like(x)
        step.flat[k] = eps
        cols.append((np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * eps))
    return np.stack(cols, axis=-1).reshape(np.shape(f(x)) + x.shape)


def test_higher_order_by_composition():
    """differentiable(f.grad) compiles a second-order adjoint: its gradient is the Hessian
    summed over rows (grad of sum(grad f))."""
    second = tf.differentiable(_cubic_compiled.grad)
    value, hess_rowsum = second.value_and_grad(_X3)
    np.testing.assert_allclose(value, _cubic_compiled.grad(_X3), rtol=RTOL)
    numeric = _numeric_jacobian(_cubic_compiled.grad, _X3)
    np.testing.assert_allclose(hess_rowsum, numeric.sum(axis=0), rtol=1e-6, atol=1e-8)
    # Against the eager nested tapes too.
    x = tf.constant(_X3)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = _cubic(x)
        g = inner.gradient(y, x)
    np.testing.assert_allclose(hess_rowsum, outer.gradient(g, x).numpy(), rtol=RTOL)


def test_hessian_against_finite_differences_of_the_gradient():
    hess = tf.hessian(_cubic)(_X3)
    assert np.shape(hess) == (3, 3)
    numeric = _numeric_jacobian(_cubic_compiled.grad, _X3)
    np.testing.assert_allclose(hess, numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(hess, np.transpose(hess), rtol=1e-12, atol=1e-14)


def test_jacobian():
    W = np.arange(6.0).reshape(2, 3) / 5.0

    def f(x):
        return tf.tanh(W @ x) * x[:2]

    jac = tf.jacobian(f)(_X3)
    assert np.shape(jac) == (2, 3)
    eager = np.asarray(_numeric_jacobian(lambda v: np.asarray(f(tf.constant(v))), _X3))
    np.testing.assert_allclose(jac, eager, rtol=1e-6, atol=1e-8)
    x = tf.constant(_X3)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_allclose(jac, tape.jacobian(y, x).numpy(), rtol=RTOL, atol=ATOL)


def test_jacobian_wrt_a_tuple():
    def f(x, y):
        return tf.sin(x) * y[0] + x * x

    jx, jy = tf.jacobian(f, wrt=(0, 1))(_X3, np.array([0.5, 2.0]))
    assert np.shape(jx) == (3, 3) and np.shape(jy) == (3, 2)
    np.testing.assert_allclose(jx, np.diag(np.cos(_X3) * 0.5 + 2 * _X3), rtol=RTOL)
    np.testing.assert_allclose(jy, np.stack([np.sin(_X3), np.zeros(3)], axis=1), rtol=RTOL,
                               atol=ATOL)


def _batch_loss(w, X):
    return tf.reduce_mean(tf.square(tf.tanh(X @ w) - 0.5))


def test_a_new_batch_size_does_not_add_a_kernel():
    d = tf.differentiable(_batch_loss)
    w = np.array([0.1, -0.4, 0.3])
    rng = np.random.default_rng(1)
    d.value_and_grad(w, rng.standard_normal((4, 3)))
    info = d.cache_info()
    assert (info.misses, info.kernels) == (1, 1)
    for n in (7, 2, 33):
        X = rng.standard_normal((n, 3))
        value, grad = d.value_and_grad(w, X)
        eager_value, eager_grad = eager_value_and_grad(_batch_loss, (w, X), 0)
        np.testing.assert_allclose(value, eager_value, rtol=RTOL)
        np.testing.assert_allclose(grad, eager_grad, rtol=RTOL, atol=ATOL)
    after = d.cache_info()
    assert (after.misses, after.kernels) == (1, 1)
    assert after.hits == info.hits + 3


def test_nested_structure_arguments_give_gradients_in_the_same_structure():
    def f(params, scale):
        return scale * tf.reduce_sum(params["w"][0] * params["w"][1]) + params["b"][0] ** 2

    params = {"w": [np.array([1.0, 2.0]), np.array([3.0, -1.0])], "b": (0.5,)}
    grads = tf.differentiable(f, wrt=(0, 1)).grad(params, 2.0)
    assert isinstance(grads, tuple) and len(grads) == 2
    g, gs = grads
    assert isinstance(g, dict) and sorted(g) == ["b", "w"]
    assert isinstance(g["w"], list) and isinstance(g["b"], tuple)
    np.testing.assert_allclose(g["w"][0], [6.0, -2.0])
    np.testing.assert_allclose(g["w"][1], [2.0, 4.0])
    np.testing.assert_allclose(g["b"][0], 1.0)
    np.testing.assert_allclose(gs, 1.0 * 3.0 + 2.0 * -1.0)


def test_an_unconnected_wrt_argument_gives_zeros_of_its_shape():
    def f(x, unused, also_unused):
        return tf.reduce_sum(x * x)

    args = (np.array([1.0, 2.0]), np.ones((2, 3)), 4.0)
    gx, gu, ga = tf.differentiable(f, wrt=(0, 1, 2)).grad(*args)
    np.testing.assert_allclose(gx, [2.0, 4.0])
    assert np.shape(gu) == (2, 3) and np.all(np.asarray(gu) == 0.0)
    assert np.shape(ga) == () and float(ga) == 0.0


def _indexed(x, i):
    return tf.reduce_sum(tf.exp(x[i]) * x[0])


def test_static_arguments_key_the_cache():
    d = tf.differentiable(_indexed)
    x = np.arange(12.0).reshape(4, 3) / 10.0
    g1 = d.grad(x, 1)
    assert d.cache_info() == (0, 1, 1)
    g1_again = d.grad(x, 1)
    assert d.cache_info() == (1, 1, 1)
    g2 = d.grad(x, 2)
    assert d.cache_info() == (1, 2, 2)
    np.testing.assert_array_equal(g1, g1_again)
    for i, g in ((1, g1), (2, g2)):
        _, eager = eager_value_and_grad(_indexed, (x, i), 0)
        np.testing.assert_allclose(g, eager, rtol=RTOL, atol=ATOL)
    assert not np.allclose(g1, g2)


def test_compiled_call_equals_value_and_grad_value():
    value = _cubic_compiled(_X3)
    np.testing.assert_allclose(value, _cubic_compiled.value_and_grad(_X3)[0], rtol=RTOL)
    np.testing.assert_allclose(value, _cubic(tf.constant(_X3)).numpy(), rtol=RTOL)
