"""What a primitive declares about itself beyond its four fields, checked against what it
computes: the NumPy ufuncs dispatch binds it for (`numpy`) compute the same, and its
vector form (`vector_emit`) computes what its libm form (`emit`) does."""

import numpy as np
import pytest

import srcxform as tf
from srcxform.primitive import REGISTRY

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


@pytest.mark.parametrize("prim", [p for p in REGISTRY.values() if p.vector_emit],
                         ids=lambda p: p.name)
def test_a_vector_form_computes_what_the_libm_form_does(prim):
    from srcxform.runtime import vecmath

    def form(emit, x):
        return eval(emit, {"np": np, "vecmath": vecmath, "x": x})

    for x in np.linspace(-30.0, 30.0, 61):
        np.testing.assert_allclose(form(prim.vector_emit, x), form(prim.emit, x), rtol=1e-14)
