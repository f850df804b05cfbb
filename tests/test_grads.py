"""Gradients of every primitive and composite op, first and second order, against central
finite differences (and, in the slow tier, the compiled kernel's), and each row's generated
code run as Python (SRCXFORM_JIT=0) against eager, driven by tests/samples.py."""

import functools

import numpy as np
import pytest
from samples import COLD_HELPERS, COMPOSITES, SAMPLES, function

import srcxform
from srcxform.core.primitive import REGISTRY
from srcxform.testing import check_grads
from srcxform.core.tree import tree_flatten

ROWS = [row for name in REGISTRY for row in SAMPLES.get(name, ())]
DIFF = [pytest.param(r, id=r.id) for r in ROWS if not REGISTRY[r.name].nondiff]
DIFF += [pytest.param(r, id=f"composite-{r.id}") for r in COMPOSITES]
NONDIFF = [pytest.param(r, id=r.id) for r in ROWS if REGISTRY[r.name].nondiff]


def _check(row, order, compiled):
    args = row.make(np.random.default_rng(0))
    check_grads(function(row), args, order=order, rtol=row.rtol, atol=row.atol, eps=row.eps,
                compiled=compiled)


# Compiled by Numba, a kernel a row: the slow tier (the quick one checks every row's
# generated code as Python: test_as_python_equals_eager).
@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["eager", "compiled"])
@pytest.mark.parametrize("row", DIFF)
def test_first_order(row, compiled):
    _check(row, 1, compiled)


@pytest.mark.parametrize("row", [p for p in DIFF if p.values[0].order >= 2])
def test_second_order(row):
    _check(row, 2, False)


# Rows calling Numba-compiled helpers (samples.COLD_HELPERS) in the slow tier: the quick
# one checks their gradients eagerly (test_first_order).
@pytest.mark.parametrize("row", [pytest.param(r, id=r.id, marks=pytest.mark.slow
                                              if r.name in COLD_HELPERS else ())
                                 for r in ROWS]
                         + [pytest.param(r, id=f"composite-{r.id}", marks=pytest.mark.slow
                                         if r.name in COLD_HELPERS else ())
                            for r in COMPOSITES])
def test_as_python_equals_eager(row, monkeypatch):
    """The generated code run as Python (SRCXFORM_JIT=0), a kernel per row without a Numba
    compile: its values equal the eager ones, and its gradients the eager tape's and
    finite differences (the Numba kernel's are checked by test_first_order)."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    args = row.make(np.random.default_rng(0))
    f = function(row)
    eager = tree_flatten(f(*[srcxform.constant(a) for a in args]))[0]
    with np.errstate(all="ignore"):  # as Python, NumPy warns where eager ops do not
        python = tree_flatten(srcxform.differentiable(f)(*args))[0]
    assert len(python) == len(eager)
    for got, want in zip(python, eager):
        got, want = np.asarray(got), want.numpy()
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    if row.name in REGISTRY and REGISTRY[row.name].nondiff:
        return
    with np.errstate(all="ignore"):
        check_grads(f, args, rtol=row.rtol, atol=row.atol, eps=row.eps, compiled=True)


@pytest.mark.parametrize("row", NONDIFF)
def test_nondiff_primitive_gives_no_gradient(row):
    inputs = [srcxform.constant(a) for a in row.make(np.random.default_rng(0))]
    with srcxform.GradientTape(persistent=True) as tape:
        tape.watch([x for x in inputs if x.dtype.kind == "f"])
        y = function(row)(*inputs)
    assert all(g is None for g in tape.gradient(y, inputs))
    if y.dtype.kind == "f":
        assert all(g is None for g in tape.gradient(y * 2.0 + 1.0, inputs))


@pytest.mark.parametrize("row", DIFF)
def test_gradient_has_the_source_dtype_float32(row):
    inputs = [srcxform.constant(a) for a in row.make(np.random.default_rng(0), np.float32)]
    sources = [x for x in inputs if x.dtype.kind == "f"]
    with srcxform.GradientTape() as tape:
        tape.watch(sources)
        y = function(row)(*inputs)
    for x, g in zip(sources, tape.gradient(y, sources)):
        assert g is not None and g.dtype == np.float32 and g.shape == x.shape


def test_integer_cast_gives_no_gradient():
    x = srcxform.constant(np.array([1.5, -2.5]))
    with srcxform.GradientTape() as tape:
        tape.watch(x)
        y = srcxform.cast(x, srcxform.int32)
    assert tape.gradient(y, x) is None


# ----- ties and kinks: the gradient conventions finite differences cannot check -----


def _grad(f, x):
    x = srcxform.constant(np.asarray(x, np.float64))
    with srcxform.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x).numpy()


def test_maximum_tie_sends_the_gradient_to_x():
    np.testing.assert_array_equal(_grad(lambda x: srcxform.maximum(x, 1.0), [1.0, 2.0]),
                                  [1.0, 1.0])
    np.testing.assert_array_equal(_grad(lambda x: srcxform.minimum(1.0, x), [1.0, 0.0]),
                                  [0.0, 1.0])


def test_reduce_max_ties_share_the_gradient():
    np.testing.assert_array_equal(_grad(srcxform.reduce_max, [3.0, 1.0, 3.0]), [0.5, 0, 0.5])


def test_relu_and_abs_at_zero():
    np.testing.assert_array_equal(_grad(srcxform.relu, [0.0, 1.0]), [0.0, 1.0])
    np.testing.assert_array_equal(_grad(srcxform.abs, [0.0, -1.0]), [0.0, -1.0])


# ----- the helpers themselves -----


def test_gradcheck_fixture(gradcheck):
    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    gradcheck(lambda x, w: srcxform.tanh(x) @ w, (x, np.ones((3, 2))), order=2)


def test_gradcheck_fixture_fails_the_test(gradcheck):
    with pytest.raises(pytest.fail.Exception, match="abs err"):
        gradcheck(_wrong_square, (np.array([1.0, 2.0]),), compiled=False)


@srcxform.custom_gradient
def _wrong_square(x):
    return x * x, lambda g: g * x  # deliberately wrong: d(x*x)/dx is 2x


def test_custom_gradient_takes_a_partial():
    """It read f.__name__, which a partial has not: AttributeError, eagerly too."""
    def scaled(x, k):
        return x * k, lambda g: g * 10.0

    clipped = srcxform.custom_gradient(functools.partial(scaled, k=2.0))
    x = srcxform.constant([1.0, 2.0])
    with srcxform.GradientTape() as tape:
        tape.watch(x)
        y = clipped(x)
    np.testing.assert_array_equal(y, [2.0, 4.0])
    np.testing.assert_array_equal(tape.gradient(y, x), [10.0, 10.0])


def _wrong_loss(x):
    return srcxform.reduce_sum(_wrong_square(x))


def test_check_grads_fails_with_a_table_on_a_wrong_gradient():
    with pytest.raises(AssertionError) as failure:
        check_grads(_wrong_loss, [np.array([1.0, -2.0, 3.0])], compiled=False)
    message = str(failure.value)
    assert "_wrong_loss: gradients disagree" in message
    lines = message.splitlines()
    assert lines[1].split() == ["arg", "index", "eager", "numeric", "abs", "err", "rel", "err"]
    # The worst element first: index 2, eager 3 against numeric 6.
    assert lines[2].split()[:4] == ["0", "2", "3", "6"]
    assert len(lines) == 5


def test_check_grads_passes_integer_args_through():
    seen = []

    def f(x, n):
        seen.append(n)
        return srcxform.reduce_sum(x * float(n))

    check_grads(f, [np.ones(3), 3], compiled=False)
    assert set(seen) == {3}


def test_check_grads_converts_floats_to_float64():
    check_grads(lambda x, y: x * y, [np.ones(3, np.float32), 2.0], order=2, compiled=False)


def _nested_loss(params, x, n):
    w, (b, scale) = params["w"], params["rest"]
    return srcxform.reduce_sum(srcxform.tanh(x * w + b) * scale) * float(n)


def test_check_grads_differentiates_the_float_leaves_of_structures():
    params = {"w": np.array([0.5, -1.0, 2.0]), "rest": [np.array([0.1, 0.2, -0.3]), 1.5]}
    # wrt=0: the dict's three leaves; x, a float array not in wrt, and n are passed through.
    check_grads(_nested_loss, [params, np.linspace(-1.0, 1.0, 3), 2], wrt=0, order=2)


def test_check_grads_names_a_structures_leaf_in_its_table():
    def f(pair):
        return srcxform.reduce_sum(pair[0] + _wrong_square(pair[1]))

    with pytest.raises(AssertionError) as failure:
        check_grads(f, [(np.array([1.0]), np.array([1.0, -2.0]))], compiled=False)
    # The second leaf of argument 0 is wrong (eager -2 against numeric -4); the first is not.
    assert str(failure.value).splitlines()[2].split()[:4] == ["0.1", "1", "-2", "-4"]
