"""srcxform.runtime.vecmath: the vectorizable exp and tanh agree with NumPy's to a few units in
the last place, over the whole float64 range and at the special values; and generated code
uses them only in loops LLVM can vectorize."""

import platform
import re

import llvmlite.binding as ll
import numba
import numpy as np
import pytest

import srcxform as tf
from srcxform.runtime import vecmath


@numba.njit(error_model="numpy")
def _apply(x, exp_out, tanh_out):
    for i in range(x.shape[0]):
        exp_out[i] = vecmath.exp(x[i])
        tanh_out[i] = vecmath.tanh(x[i])


def _run(x):
    e, t = np.empty_like(x), np.empty_like(x)
    _apply(x, e, t)
    return e, t


def test_exp_and_tanh_agree_with_numpy_to_a_few_ulps():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-740, 705, 20000), rng.normal(scale=3, size=20000),
                        rng.normal(scale=1e-8, size=1000)])
    e, t = _run(x)
    # Counted in units in the last place: a relative tolerance fails on subnormal results,
    # where one unit is a large fraction of the value.
    np.testing.assert_array_max_ulp(e, np.exp(x), maxulp=4)
    np.testing.assert_array_max_ulp(t, np.tanh(x), maxulp=4)


@pytest.mark.parametrize("x, exp, tanh", [
    (0.0, 1.0, 0.0), (-0.0, 1.0, -0.0), (np.inf, np.inf, 1.0), (-np.inf, 0.0, -1.0),
    (710.0, np.inf, 1.0), (-746.0, 0.0, -1.0), (-744.0, np.exp(-744.0), -1.0),
    (25.0, np.exp(25.0), 1.0), (1e-300, 1.0, 1e-300),
])
def test_special_values(x, exp, tanh):
    """Exact at zeros, infinities, overflow, underflow to subnormals and 0, and saturation."""
    e, t = _run(np.array([x]))
    assert e[0] == pytest.approx(exp, rel=5e-16) and t[0] == tanh
    assert np.signbit(t[0]) == np.signbit(tanh)


def test_nan_gives_nan():
    e, t = _run(np.array([np.nan]))
    assert np.isnan(e[0]) and np.isnan(t[0])


def test_generated_loops_use_them_only_where_llvm_can_vectorize():
    f = tf.differentiable(lambda x: tf.reduce_sum(tf.reduce_max(tf.tanh(x), axis=1)))  # a max
    # A loop without one: a sum's terms are stored and added in lanes after the loop
    # (codegen/lanes.py), so the loop computing them has no reduction in it.
    h = tf.differentiable(lambda x: tf.reduce_sum(tf.tanh(x) * 2.0))
    x = np.linspace(-2.0, 2.0, 5)
    forward = f.source(x.reshape(1, 5)).split("# ---- forward ----")[1].split("# ---- adjoint")[0]
    assert "np.tanh(" in forward and "vecmath.tanh(" not in forward
    assert "vecmath.tanh(" in h.source(x) and "arrays.lane_sum(" in h.source(x)
    np.testing.assert_allclose(h(x), np.sum(np.tanh(x) * 2.0), rtol=1e-15)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the assembly checked is x86-64's")
def test_a_loop_of_them_compiles_to_packed_instructions():
    """Vectorized (a packed division), with no float64 converted to int64 one at a time
    (x86 converts several at once only with AVX-512), and with FMAs wherever the machine
    has them (vecmath's contract=True)."""
    _run(np.zeros(1))
    asm = _apply.inspect_asm(_apply.signatures[0])
    assert re.search(r"\bv?divpd\b", asm) and "cvttsd2si" not in asm
    if ll.get_host_cpu_features().get("fma") and not numba.config.CPU_NAME:
        assert "vfmadd" in asm


def test_float32_values_stay_float32_between_ops(monkeypatch):
    """Found by helper 116: vecmath computes in float64, and its value went on unrounded
    to the next op, so float32's exp(100) did not overflow compiled (log(exp(100)) gave
    100 where eager gives inf, and a NaN gradient was lost)."""
    monkeypatch.setenv("SRCXFORM_CHECK", "0")  # the compiled path alone
    f = tf.differentiable(lambda x: tf.reduce_sum(tf.math.log(tf.exp(x)) + tf.sigmoid(x)))
    x = np.array([100.0, 1.0, -100.0], np.float32)
    assert np.isinf(f(x)) and f(x).dtype == tf.float32
    np.testing.assert_array_equal(np.isnan(f.grad(x)), [True, False, False])
