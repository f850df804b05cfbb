"""What a primitive declares about itself beyond its four fields, checked against what it
computes: the NumPy ufuncs dispatch binds it for (`numpy`) compute the same, its
vector form (`vector_emit`) computes what its libm form (`emit`) does, and it `raises`
exactly where its emitted code calls a runtime check."""

import ast
import importlib
import inspect

import numpy as np
import pytest
from samples import COMPOSITES, SAMPLES, call

import srcxform as tf
from srcxform import runtime
from srcxform.core.errors import InvalidArgumentError
from srcxform.core.primitive import REGISTRY, Primitive

_X, _Y = np.array([0.25, 1.5, -2.0, 3.0]), np.array([1.0, -0.5, 2.0, 4.0])
_DECLARED = [(prim, ufunc) for prim in REGISTRY.values() for ufunc in prim.numpy]


def test_ufuncs_are_declared_by_their_primitives_once():
    ufuncs = [ufunc for _, ufunc in _DECLARED]
    assert len(ufuncs) == len(set(ufuncs)) and len(ufuncs) >= 30


@pytest.mark.parametrize("prim, ufunc", _DECLARED, ids=lambda v: getattr(v, "__name__", ""))
def test_a_declared_ufunc_on_tensors_computes_what_numpy_does(prim, ufunc):
    arrays = [_X, _Y][:ufunc.nin]
    with np.errstate(invalid="ignore"):  # log of a negative number: NaN, as eager's
        got, want = ufunc(*map(tf.constant, arrays)), ufunc(*arrays)
    assert isinstance(got, tf.Tensor) and got.dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("prim", [p for p in REGISTRY.values() if p.codegen.vector_emit],
                         ids=lambda p: p.name)
def test_a_vector_form_computes_what_the_libm_form_does(prim):
    from srcxform.runtime import vecmath

    def form(emit, x):
        return eval(emit, {"np": np, "vecmath": vecmath, "x": x})

    for x in np.linspace(-30.0, 30.0, 61):
        np.testing.assert_allclose(form(prim.codegen.vector_emit, x), form(prim.emit, x), rtol=1e-14)


# ----- raises -----


def _raising_helpers():
    """The runtime helpers, as (module, name), that raise an InvalidArgumentError, read
    from their source: a `raise` of one, or a call of a helper of the module that does."""
    raising, calls = set(), {}
    for name in runtime.MODULES:
        module = importlib.import_module(f"srcxform.runtime.{name}")
        for fn in ast.parse(inspect.getsource(module)).body:
            if not isinstance(fn, ast.FunctionDef):
                continue
            nodes = list(ast.walk(fn))
            calls[name, fn.name] = {(name, n.func.id) for n in nodes
                                    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
            errors = [getattr(module, n.exc.func.id, None) for n in nodes
                      if isinstance(n, ast.Raise) and isinstance(n.exc, ast.Call)
                      and isinstance(n.exc.func, ast.Name)]
            if any(isinstance(e, type) and issubclass(e, InvalidArgumentError) for e in errors):
                raising.add((name, fn.name))
    while True:
        more = {f for f, called in calls.items() if called & raising} - raising
        if not more:
            return raising
        raising |= more


def _calls(template, helpers):
    """Whether a template (an expression, or a list of statements) calls one of helpers,
    or raises itself (a one-index gather's check, written in the kernel)."""
    nodes = [n for root in (template if isinstance(template, list) else [template])
             for n in ast.walk(root)]
    return any(isinstance(n, ast.Raise) for n in nodes) or any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and isinstance(n.func.value, ast.Name) and (n.func.value.id, n.func.attr) in helpers
               for n in nodes)


def test_a_primitive_raises_exactly_where_its_emitted_code_calls_a_check(monkeypatch):
    """Binds every sample row, in float64 and with integer inputs, and compares each
    equation's `may_raise` with whether its template (in that equation's form) calls a
    runtime helper that raises."""
    helpers = _raising_helpers()
    assert {("arrays", "gather"), ("arrays", "check_range"), ("arrays", "floordiv")} <= helpers
    seen, wrong, raising = set(), [], set()
    eager = Primitive.eager

    def checked(self, values, params, out_aval):
        in_avals = [v.aval for v in values]
        template = self.template_for(in_avals, out_aval, params)
        declared = self.may_raise(in_avals, out_aval, params)
        if declared != _calls(template, helpers):
            wrong.append(f"{self.name}({', '.join(a.short() for a in in_avals)}): "
                         f"may_raise is {declared}")
        seen.add(self.name)
        raising.update([(self.name, out_aval.dtype.kind)] if declared else [])
        return eager(self, values, params, out_aval)

    monkeypatch.setattr(Primitive, "eager", checked)
    rng = np.random.default_rng(0)
    for row in [row for rows in SAMPLES.values() for row in rows] + COMPOSITES:
        for dtype in (np.float64, np.int32):
            with np.errstate(invalid="ignore"):  # NaN made an integer
                inputs = row.make(rng, dtype)
            try:
                call(row, *map(tf.constant, inputs))
            except (TypeError, ValueError, ArithmeticError):  # an op of floats, a divisor 0
                pass
    assert wrong == []
    assert seen == set(REGISTRY)
    assert {("floordiv", "i"), ("mod", "i"), ("gather", "f"), ("check_range", "i")} <= raising
    assert not {("floordiv", "f"), ("mod", "f")} & raising


def _divide_by_rows(a, b, m):
    return a // b + m  # a // b is recomputed in m's loop nest, not stored


def test_a_nest_recomputing_a_check_is_not_a_prange():
    # Numba's prange drops the exception: the call would fail in Numba, not as eager.
    f = tf.differentiable(_divide_by_rows, wrt=(), parallel=True)
    ints, floats = np.array([7, -8, 9]), np.array([7.0, -8.0, 9.0])
    int_source = f.source(ints, ints, np.ones((4, 3), np.int64))
    assert "arrays.floordiv(" in int_source and "prange" not in int_source
    assert "prange(n1)" in f.source(floats, floats, np.ones((4, 3)))
    with pytest.raises(ZeroDivisionError, match="floordiv: integer division by zero"):
        f(ints, np.array([1, 0, 2]), np.ones((4, 3), np.int64))
    np.testing.assert_array_equal(f(ints, np.array([2, 3, -2]), np.ones((4, 3), np.int64)),
                                  np.tile([4, -2, -4], (4, 1)))
