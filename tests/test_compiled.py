"""The compiler against the eager tape, against finite differences, and against itself run
as plain Python, on every function of tests/corpus.py; then compiled-path behaviours:
higher order by composition, jacobian/hessian, the kernel cache, nested structures,
unconnected arguments and static arguments.

One compiled kernel per corpus case (value_and_grad), shared by the tests of that case.
"""

import functools
import os

import numpy as np
import pytest
from corpus import ATOL, CASES, RTOL, assert_trees_close, eager_value_and_grad, wrt_positions

import srcxform as tf
from srcxform.testing import check_grads
from srcxform.core.tree import tree_flatten


@functools.cache
def compiled(name):
    """The case's Differentiable, built once and shared by its tests."""
    case = _BY_NAME[name]
    return tf.differentiable(case.fn, wrt=case.wrt)


@functools.cache
def compiled_result(name):
    case = _BY_NAME[name]
    value, grads = compiled(name).value_and_grad(*case.args)
    return np.asarray(value, np.float64), grads


@functools.cache
def eager_result(name):
    case = _BY_NAME[name]
    return eager_value_and_grad(case.fn, case.args, case.wrt)


_BY_NAME = {case.name: case for case in CASES}
assert len(_BY_NAME) == len(CASES) >= 45


# Compiled in the slow tier only: seconds of Numba each on a cold cache, and each construct
# they use is compiled by a lighter case or test in the quick tier too.
_SLOW = {"tile_transpose_reshape", "activations_and_running_totals", "concat_and_stack",
         "numpy_shape_functions"}


def _params(test, only=lambda case: True):
    params = []
    for case in CASES:
        if not only(case):
            continue
        marks = []
        if test in case.xfail:
            marks.append(pytest.mark.xfail(strict=True, reason=case.xfail[test]))
        if test in ("compiled", "interpreted") and case.name in _SLOW:
            marks.append(pytest.mark.slow)
        params.append(pytest.param(case, id=case.name, marks=marks))
    return params


# ----- the corpus -----


@pytest.mark.parametrize("case", _params("fd", lambda c: c.fd))
def test_eager_matches_finite_differences(case):
    """The reference itself (and the corpus's data) is sound. The compiled gradient, which
    must match it to rounding (below), then matches finite differences too."""
    check_grads(case.fn, case.args, wrt=case.wrt, rtol=case.fd_rtol, atol=case.fd_atol,
                eps=case.eps, compiled=False)


@pytest.mark.parametrize("case", _params("compiled"))
def test_compiled_matches_eager(case):
    value, grads = compiled_result(case.name)
    eager_value, eager_grads = eager_result(case.name)
    np.testing.assert_allclose(value, eager_value, rtol=RTOL, atol=ATOL, err_msg="value")
    assert np.shape(value) == np.shape(eager_value)
    # The gradient has the argument's structure and the eager tape's values.
    positions = wrt_positions(case.wrt)
    expected_structure = [tree_flatten(case.args[p])[1] for p in positions]
    actual = [grads] if isinstance(case.wrt, int) else list(grads)
    assert [tree_flatten(g)[1] for g in actual] == expected_structure
    for p, g in zip(positions, actual):
        for leaf, arg in zip(tree_flatten(g)[0], tree_flatten(case.args[p])[0]):
            assert np.shape(leaf) == np.shape(arg)
            assert np.asarray(leaf).dtype == np.float64
    assert_trees_close(grads, eager_grads, what="compiled vs eager")


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


def test_every_compile_verifies_its_ir(monkeypatch):
    """tests/conftest.py sets SRCXFORM_CHECK, under which a new kernel's IR is verified
    after tracing and after each pass: the switch must reach Program.check."""
    from srcxform.core.ir import Program

    checked = []
    verify = Program.check
    monkeypatch.setattr(Program, "check", lambda self: (checked.append(self), verify(self)))
    monkeypatch.setenv("SRCXFORM_JIT", "0")  # verifying needs no Numba compile
    w = np.arange(3.0)  # a captured array: traced in every process, never found in the index
    tf.differentiable(lambda x: tf.reduce_sum(tf.sin(x) * w)).grad(np.ones(3))
    assert os.environ.get("SRCXFORM_CHECK") and len(checked) >= 2


def _kernel_functions(d):
    """The generated functions behind a Differentiable's kernels (internal layout)."""
    functions = [k.fn for ks in d._kernels.values() for k in ks]
    return [getattr(f, "dispatcher", f) for f in functions]


def test_the_two_runs_really_differ(monkeypatch):
    """Guards the comparison above: the shared kernels are Numba dispatchers, and with
    SRCXFORM_JIT=0 a fresh Differentiable's kernel is a plain Python function."""
    from numba.core.dispatcher import Dispatcher

    case = CASES[0]
    compiled_result(case.name)
    jitted = _kernel_functions(compiled(case.name))
    assert jitted and all(isinstance(f, Dispatcher) for f in jitted), jitted
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    python = tf.differentiable(case.fn, wrt=case.wrt)
    python.value_and_grad(*case.args)
    plain = _kernel_functions(python)
    assert plain and not any(isinstance(f, Dispatcher) for f in plain), plain


# ----- compiled-path behaviours -----


def _numeric_jacobian(f, x, eps=1e-6):
    """d f(x) / dx by central differences: shape f(x).shape + x.shape."""
    cols = []
    for k in range(x.size):
        step = np.zeros_like(x)
        step.flat[k] = eps
        cols.append((np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * eps))
    return np.stack(cols, axis=-1).reshape(np.shape(f(x)) + x.shape)


def _eager_hessian_rowsum(fn, args):
    """grad of sum(grad fn) wrt args[0], by nested eager tapes."""
    x = tf.constant(args[0])
    rest = [tf.constant(a) if isinstance(a, np.ndarray) else a for a in args[1:]]
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = fn(x, *rest)
        g = inner.gradient(y, x)
    return outer.gradient(g, x).numpy()


# fan_out: reduce_sum(y) * y, whose second order needs the adjoint of a sum-to-shape.
_SECOND_ORDER = ["rosenbrock", "closure_over_helpers", "fan_out"]


@pytest.mark.parametrize("name", _SECOND_ORDER)
def test_higher_order_by_composition(name):
    """A function of f.grad compiles a second-order adjoint: the gradient of sum(grad f)
    is the Hessian summed over rows (f.grad, a vector, is returned as the aux)."""
    case = _BY_NAME[name]
    assert case.wrt == 0
    first = compiled(name)
    x, rest = case.args[0], case.args[1:]

    def summed_gradient(*args):
        g = first.grad(*args)
        return tf.reduce_sum(g), g

    second = tf.differentiable(summed_gradient, has_aux=True)
    (_, value), hess_rowsum = second.value_and_grad(*case.args)
    np.testing.assert_allclose(value, first.grad(*case.args), rtol=RTOL, atol=ATOL)
    numeric = _numeric_jacobian(lambda v: first.grad(v, *rest), x)
    rowsum = numeric.sum(axis=tuple(range(x.ndim)))
    np.testing.assert_allclose(hess_rowsum, rowsum, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(hess_rowsum, _eager_hessian_rowsum(case.fn, case.args),
                               rtol=RTOL, atol=ATOL)


def test_hessian_against_finite_differences_of_the_gradient():
    case = _BY_NAME["rosenbrock"]
    (x,) = case.args
    hess = tf.hessian(case.fn)(x)
    assert np.shape(hess) == (x.size, x.size)
    numeric = _numeric_jacobian(compiled(case.name).grad, x)
    np.testing.assert_allclose(hess, numeric, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(hess, np.transpose(hess), rtol=1e-12, atol=1e-12)
    # Rosenbrock's Hessian is tridiagonal.
    assert np.all(np.triu(hess, 2) == 0.0) and np.all(np.tril(hess, -2) == 0.0)


_X3 = np.array([0.3, -0.8, 1.1])


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


def test_a_new_batch_size_does_not_add_a_kernel():
    """Reuses the corpus's logistic regression kernel: other batch sizes hit it."""
    case = _BY_NAME["logistic_regression"]
    d = compiled(case.name)
    compiled_result(case.name)
    before = d.cache_info()
    assert before.kernels == 1
    w, b = case.args[0], case.args[1]
    rng = np.random.default_rng(1)
    for n in (7, 2, 33):
        X = rng.standard_normal((n, 3))
        y = (rng.random(n) < 0.5).astype(np.float64)
        value, grads = d.value_and_grad(w, b, X, y)
        eager_value, eager_grads = eager_value_and_grad(case.fn, (w, b, X, y), case.wrt)
        np.testing.assert_allclose(value, eager_value, rtol=RTOL)
        assert_trees_close(grads, eager_grads, what=f"batch {n}")
    after = d.cache_info()
    assert (after.misses, after.kernels) == (before.misses, before.kernels)
    assert after.hits == before.hits + 3


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


def test_static_arguments_key_the_cache():
    """Reuses the corpus's static_index_argument kernel (i=2): i=1 adds one, then hits."""
    case = _BY_NAME["static_index_argument"]
    d = compiled(case.name)
    compiled_result(case.name)
    x, i = case.args
    assert i == 2
    hits, misses, kernels = d.cache_info()[:3]
    g2 = d.value_and_grad(x, 2)[1]  # compiled_result's form: its kernel
    assert d.cache_info()[:3] == (hits + 1, misses, kernels)
    g1 = d.value_and_grad(x, 1)[1]
    assert d.cache_info()[:3] == (hits + 1, misses + 1, kernels + 1)
    g1_again = d.value_and_grad(x, 1)[1]
    assert d.cache_info()[:3] == (hits + 2, misses + 1, kernels + 1)
    np.testing.assert_array_equal(g1, g1_again)
    for i, g in ((1, g1), (2, g2)):
        _, eager = eager_value_and_grad(case.fn, (x, i), 0)
        np.testing.assert_allclose(g, eager, rtol=RTOL, atol=ATOL)
    assert not np.allclose(g1, g2)


def test_compiled_call_equals_the_eager_value():
    """__call__ compiles a value-only kernel; it agrees with value_and_grad and eager."""
    case = _BY_NAME["rosenbrock"]
    value = compiled(case.name)(*case.args)
    np.testing.assert_allclose(value, compiled_result(case.name)[0], rtol=RTOL)
    np.testing.assert_allclose(value, eager_result(case.name)[0], rtol=RTOL)
