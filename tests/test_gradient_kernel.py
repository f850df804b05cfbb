"""The gradient-only kernel: f.grad runs a kernel of its own form, which returns the
gradients alone, so what only the value needs is not computed. Its gradients are those of
f.value_and_grad exactly (the same arithmetic), compiled and run as Python; the forms'
kernels are keyed apart, in this process and in the on-disk index."""

import numpy as np
import pytest

import srcxform as tf
from srcxform.core.tree import tree_flatten, tree_unflatten


def rosenbrock(x):
    return tf.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def log_sum_exp(w, b, x):
    """Its gradient needs the sum the value is the log of: that sum stays."""
    return tf.math.log(tf.reduce_sum(tf.exp(x * w + b)))


def regression(params, x, y):
    """Nested parameters; the adjoint of a mean of squares needs no forward sum."""
    pred = tf.tanh(x * params["w"] + params["b"])
    return tf.reduce_mean((pred - y) ** 2)


RNG = np.random.default_rng(7)
X = RNG.standard_normal(1000)
CASES = {
    "rosenbrock": (rosenbrock, 0, (RNG.uniform(-1.0, 1.0, 1000),)),
    "log_sum_exp": (log_sum_exp, (0, 1), (RNG.standard_normal(1000), 0.3, X)),
    "regression": (regression, 0, ({"w": RNG.standard_normal(1000), "b": 0.1}, X,
                                   RNG.standard_normal(1000))),
}


@pytest.fixture(params=["numba", "python"])
def compile_mode(request, monkeypatch):
    """Numba-compiled kernels, or the same generated code run as Python."""
    monkeypatch.setenv("SRCXFORM_JIT", "1" if request.param == "numba" else "0")
    return request.param


def eager_grads(fn, wrt, args):
    """The eager tape's gradient of fn wrt each leaf of the wrt arguments, in order."""
    call_args, sources = list(args), []
    for p in (wrt,) if isinstance(wrt, int) else wrt:
        leaves, tree = tree_flatten(args[p])
        leaves = [tf.constant(np.asarray(leaf, np.float64)) for leaf in leaves]
        call_args[p] = tree_unflatten(tree, leaves)
        sources += leaves
    with tf.GradientTape() as tape:
        tape.watch(sources)
        y = fn(*call_args)
    return [np.asarray(g) for g in tape.gradient(y, sources)]


def kernels_by_form(f):
    return {key[0]: kernels for key, kernels in f._kernels.items()}


def kernel_text(kernel):
    """The kernel's function in its generated module (its call path and entries apart),
    less its comments, which quote the user's source."""
    start = kernel.source.index(f"def {kernel.spec.func_name}(")
    text = kernel.source[start:kernel.source.index("\n\n\ndef ", start)]
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def assert_trees_equal(got, want):
    got_leaves, got_tree = tree_flatten(got)
    want_leaves, want_tree = tree_flatten(want)
    assert got_tree == want_tree
    for a, b in zip(got_leaves, want_leaves):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("name", sorted(CASES))
def test_grad_is_value_and_grads_gradient_exactly(name, compile_mode):
    fn, wrt, args = CASES[name]
    f = tf.differentiable(fn, wrt=wrt)
    grads = f.grad(*args)
    value, same = f.value_and_grad(*args)
    assert_trees_equal(grads, same)
    got = tree_flatten(grads)[0]
    want = eager_grads(fn, wrt, args)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(value, np.asarray(fn(*args)), rtol=1e-12)
    forms = kernels_by_form(f)
    assert sorted(forms) == ["grad", "value_and_grad"]
    assert [k.conv.form for k in forms["grad"]] == ["grad"]
    assert_trees_equal(f.grad(*args), grads)  # the warm entry's call, as the first


def test_the_gradient_only_rosenbrock_kernel_has_no_reduction():
    """Rosenbrock's adjoint is a broadcast of the seed: without the value there is no sum
    left, and the gradient is one loop writing each element once."""
    x = CASES["rosenbrock"][2][0]
    f = tf.differentiable(rosenbrock)
    f.grad(x)
    f.value_and_grad(x)
    forms = kernels_by_form(f)
    (grad_only,), (both,) = forms["grad"], forms["value_and_grad"]
    assert "lane_sum" in kernel_text(both)
    kernel = kernel_text(grad_only)
    assert kernel.startswith("def rosenbrock__grad(x, bx):")
    assert "sum" not in kernel and "+=" not in kernel
    assert kernel.count("for ") == 1 and "bx[i0] = bx_i" in kernel
    # Its module has the grad form's call path and warm entry, which f.grad now is.
    assert "def rosenbrock_grad(x):" in grad_only.source
    assert "value_and_grad" not in grad_only.source
    assert f.grad.__code__.co_name == "rosenbrock_grad_entry"
    assert "def rosenbrock_grad_entry(this, a0=NO, /" in grad_only.source


def test_log_sum_exps_gradient_only_kernel_keeps_the_sum_its_gradient_needs():
    w, b, x = CASES["log_sum_exp"][2]
    f = tf.differentiable(log_sum_exp, wrt=(0, 1))
    f.grad(w, b, x)
    (grad_only,) = kernels_by_form(f)["grad"]
    kernel = kernel_text(grad_only)
    assert "lane_sum" in kernel and "exp(" in kernel
    assert "log(" not in kernel  # the value's own last step is gone


def test_the_three_forms_have_three_kernels_keyed_apart():
    """In this process each form finds its own kernel; a new Differentiable of the function
    (as a new process would have) loads each form's from the on-disk index, not another's."""
    x = CASES["rosenbrock"][2][0]
    f = tf.differentiable(rosenbrock)
    results = {"value": f(x), "grad": f.grad(x), "value_and_grad": f.value_and_grad(x)}
    assert f.cache_info()[:3] == (0, 3, 3)
    assert {form: [k.conv.form for k in ks] for form, ks in kernels_by_form(f).items()} == \
        {form: [form] for form in results}
    again = tf.differentiable(rosenbrock)
    for loaded, form in enumerate(("grad", "value_and_grad", "value"), 1):  # another order
        got = getattr(again, form)(x) if form != "value" else again(x)
        assert_trees_equal(got, results[form])
        assert again.cache_info().loaded == loaded
        assert [k.conv.form for k in kernels_by_form(again)[form]] == [form]


def _chain_of_ten_rows(x, w):
    s = x[0] * w[0]
    for i in range(1, 10):
        s = s + x[i] * w[i]
    return tf.reduce_sum(s ** 2)


def test_a_value_read_by_many_ops_is_not_copied_into_each(monkeypatch):
    """placement.py recomputes a value read by at most two ops up to 128 AST nodes (hvp's
    shifted reads), others up to 48: the chain's `2 * s` (about 60 nodes) read by 20
    products is not inlined 20 times (that kernel took Numba 60% longer to compile)."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    x, w = np.arange(40.0).reshape(10, 4) / 40, np.ones((10, 4))
    source = tf.differentiable(_chain_of_ten_rows, wrt=(0, 1)).source(x, w)
    assert source.count("t0[i1] * t1[i1]") <= 2, source
    value, (gx, gw) = tf.differentiable(_chain_of_ten_rows, wrt=(0, 1)).value_and_grad(x, w)
    s = (x * w).sum(axis=0)
    assert float(value) == pytest.approx(float(s @ s), rel=1e-12)
    np.testing.assert_allclose(gx, 2 * s * w, rtol=1e-12)
    np.testing.assert_allclose(gw, 2 * s * x, rtol=1e-12)
