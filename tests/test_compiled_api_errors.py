"""The compiled path's answers to inputs it cannot or need not refuse alike with eager:
gradients wrt non-float arguments, matmul of mixed dtypes, and shape errors' sizes."""

import re

import numpy as np
import pytest

import srcxform as tf


def _square_sum(x):
    return tf.reduce_sum(x * x)


def _scaled(params, x):
    return tf.reduce_sum(params["w"] * x) * tf.cast(params["n"], tf.float64)


# ----- wrt naming an argument with no gradient: a TypeError, as JAX's grad -----


@pytest.mark.parametrize("form", ["grad", "value_and_grad"])
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_wrt_an_integer_or_bool_array_raises(form, dtype):
    f = tf.differentiable(_square_sum)
    x = np.array([1, 2, 3]).astype(dtype)
    name = np.dtype(dtype).name
    with pytest.raises(TypeError, match=rf"_square_sum wrt argument 0 \(x\): grad requires "
                                        rf"real-valued \(float\) inputs.*got {name};"):
        getattr(f, form)(x)
    assert f.cache_info().kernels == 0  # refused before anything was compiled


def test_wrt_an_integer_numpy_scalar_raises():
    with pytest.raises(TypeError, match=r"argument 0 \(x\).*got int64"):
        tf.grad(_square_sum)(np.int64(3))


def test_wrt_an_integer_leaf_inside_a_structure_names_its_path():
    f = tf.differentiable(_scaled)
    params = {"w": np.array([1.0, 2.0]), "n": np.array(3)}
    with pytest.raises(TypeError, match=r"_scaled wrt argument 0 \(params\['n'\]\).*got int64"
                                        r"; cast it first \(np.asarray\(params\['n'\], "):
        f.grad(params, np.array([0.5, -1.0]))
    # The same structure with a float leaf there differentiates both leaves.
    grads = f.grad({"w": np.array([1.0, 2.0]), "n": np.array(3.0)}, np.array([0.5, -1.0]))
    np.testing.assert_array_equal(grads["w"], [1.5, -3.0])
    np.testing.assert_array_equal(grads["n"], -1.5)


@pytest.mark.parametrize("static, kind", [(3, "int"), (True, "bool")])
def test_wrt_a_static_python_int_or_bool_raises(static, kind):
    def f(x, n):
        return tf.reduce_sum(x) * float(n)

    with pytest.raises(TypeError, match=rf"wrt argument 1 \(n\).*got a Python {kind}, a "
                                        r"static argument \(part of the cache key\)"):
        tf.differentiable(f, wrt=(0, 1)).grad(np.ones(2), static)
    # Out of wrt, the static argument is folded in as before.
    np.testing.assert_array_equal(tf.differentiable(f).grad(np.ones(2), static),
                                  [float(static)] * 2)


def test_a_static_int_suggests_its_float():
    with pytest.raises(TypeError, match=r"pass a float \(3\.0\) to differentiate it"):
        tf.grad(_square_sum)(3)


def test_wrt_an_integer_raises_without_the_jit(monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    with pytest.raises(TypeError, match=r"argument 0 \(x\).*got int64"):
        tf.differentiable(_square_sum).value_and_grad(np.array([1, 2, 3]))


def test_wrt_an_integer_raises_under_a_tape_too():
    """Under a tape the compiled function runs inline; its grad form still refuses."""
    f = tf.differentiable(_square_sum)
    with tf.GradientTape(), pytest.raises(TypeError, match=r"argument 0 \(x\).*got int64"):
        f.grad(np.array([1, 2, 3]))


def test_the_eager_tape_still_gives_none_for_an_integer_source():
    x = tf.constant(np.array([1, 2, 3]))
    with tf.GradientTape() as tape:
        with pytest.warns(UserWarning, match="got int64; its gradient will be None"):
            tape.watch(x)
        y = _square_sum(x)
    assert tape.gradient(y, x) is None


def test_an_integer_argument_outside_wrt_is_fine():
    f = tf.differentiable(lambda w, k: tf.reduce_sum(w * tf.cast(k, tf.float64)))
    w, k = np.array([1.0, 2.0, 3.0]), np.array([4, 5, 6])
    value, grad = f.value_and_grad(w, k)
    assert value == 32.0
    np.testing.assert_array_equal(grad, [4.0, 5.0, 6.0])


# ----- matmul of mixed dtypes: promoted as eager (NumPy) promotes -----


def _weighted_product(a, b, w):
    return tf.reduce_sum((a @ b) * w)  # `@`: vectors too, as NumPy (tf.matmul: rank >= 2)


_rng = np.random.default_rng(11)


def _linear_gradient(linear, shape):
    """The gradient of a linear function of an array of `shape`."""
    grad = np.zeros(shape)
    for i in range(grad.size):
        unit = np.zeros(shape)
        unit.flat[i] = 1.0
        grad.flat[i] = linear(unit)
    return grad


def _operand(shape, dtype):
    if np.dtype(dtype).kind == "i":
        return _rng.integers(-3, 4, shape).astype(dtype)
    return _rng.standard_normal(shape).astype(dtype)


# (a's shape and dtype, b's shape and dtype): matrix products, matrix-vector both ways,
# a batched product, and an integer operand beside a float one.
MIXED = {
    "matmul f32 @ f64": ((2, 3), np.float32, (3, 4), np.float64),
    "matvec f64 @ f32": ((2, 3), np.float64, (3,), np.float32),
    "vecmat f32 @ f64": ((3,), np.float32, (3, 4), np.float64),
    "batched f32 @ f64": ((5, 2, 3), np.float32, (3, 4), np.float64),
    "matmul i64 @ f32": ((2, 3), np.int64, (3, 4), np.float32),
}


@pytest.mark.parametrize("name", sorted(MIXED))
def test_mixed_dtype_matmul_compiles_as_eager_promotes(name):
    shape_a, dtype_a, shape_b, dtype_b = MIXED[name]
    a, b = _operand(shape_a, dtype_a), _operand(shape_b, dtype_b)
    expected = np.matmul(a, b)  # NumPy's promotion is eager's
    w = _operand(expected.shape, np.float64)
    wrt = (0, 1) if a.dtype.kind == "f" else 1
    value, grads = tf.differentiable(_weighted_product, wrt=wrt).value_and_grad(a, b, w)
    grads = grads if wrt == (0, 1) else (None, grads)

    ta, tb = tf.constant(a), tf.constant(b)
    with tf.GradientTape() as tape:
        tape.watch([t for t in (ta, tb) if t.dtype.kind == "f"])
        product = ta @ tb  # `@`: vectors too (tf.matmul: rank >= 2)
        eager_value = tf.reduce_sum(product * w)
    eager_grads = tape.gradient(eager_value, [ta, tb])

    assert product.dtype == expected.dtype == np.float64
    np.testing.assert_allclose(product.numpy(), expected, rtol=1e-12)
    assert np.asarray(value).dtype == eager_value.dtype
    np.testing.assert_allclose(value, eager_value.numpy(), rtol=1e-12)
    # The loss is linear in each operand: its gradient's entries are its values at the
    # unit operands (in float64). Each gradient comes back in its source's dtype.
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact = [_linear_gradient(lambda e: np.sum(np.matmul(e, b64) * w), a.shape),
             _linear_gradient(lambda e: np.sum(np.matmul(a64, e) * w), b.shape)]
    for source, compiled, eager, true in zip((a, b), grads, eager_grads, exact):
        if source.dtype.kind != "f":
            assert compiled is None and eager is None
            continue
        assert compiled.dtype == eager.dtype == source.dtype
        rtol = 1e-6 if source.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(compiled, eager.numpy(), rtol=rtol)
        np.testing.assert_allclose(compiled, true.astype(source.dtype), rtol=rtol)


def test_integer_matmul_compiles_to_an_exact_integer_product():
    """BLAS has no integer product: it is a multiply and a sum, in the operands' dtype."""
    a, b = _operand((3, 4), np.int32), _operand((4, 2), np.int32)
    f = tf.differentiable(tf.matmul)
    out = f(a, b)
    assert out.dtype == tf.matmul(a, b).dtype == np.int32
    np.testing.assert_array_equal(out, np.matmul(a, b))


def test_mixed_dtype_matmul_without_the_jit(monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    a, b = _operand((2, 3), np.float32), _operand((3, 4), np.float64)
    ga, gb = tf.differentiable(lambda a, b: tf.reduce_sum(a @ b), wrt=(0, 1)).grad(a, b)
    assert (ga.dtype, gb.dtype) == (np.float32, np.float64)
    np.testing.assert_allclose(ga, np.ones((2, 4)) @ b.T, rtol=1e-6)
    np.testing.assert_allclose(gb, a.T.astype(np.float64) @ np.ones((2, 4)), rtol=1e-12)


def test_matmul_still_refuses_bool_operands():
    with pytest.raises(TypeError, match=r"matmul\(bool\[2,2\], f64\[2,2\]\): needs numeric"):
        tf.matmul(np.ones((2, 2), bool), np.ones((2, 2)))


# ----- shape errors show the call's sizes; the IR keeps the symbolic ones -----

SHAPE_ERRORS = {
    "add": (lambda x, y: tf.reduce_sum(x + y), (np.ones(3), np.ones(4)),
            "add(f64[3], f64[4]): dims 3 and 4 do not broadcast"),
    "matmul": (lambda x, y: tf.reduce_sum(tf.matmul(x, y)), (np.ones((3, 2)), np.ones((3, 2))),
               "matmul(f64[3,2], f64[3,2]): inner dimensions differ: 2 and 3"),
    "reshape": (lambda x, y: tf.reduce_sum(tf.reshape(x, (4,)) * y), (np.ones((3, 2)), 1.0),
                "reshape(f64[3,2]): cannot reshape 6 elements into shape (4,)"),
}


@pytest.mark.parametrize("path", ["compiled", "python", "eager"])
@pytest.mark.parametrize("op", sorted(SHAPE_ERRORS))
def test_shape_errors_show_the_calls_sizes(op, path, monkeypatch):
    fn, args, message = SHAPE_ERRORS[op]
    if path == "python":
        monkeypatch.setenv("SRCXFORM_JIT", "0")
    run = fn if path == "eager" else tf.differentiable(fn)
    call_args = [tf.constant(a) for a in args] if path == "eager" else args
    with pytest.raises(ValueError) as raised:
        run(*call_args)
    assert isinstance(raised.value, tf.ShapeError)
    assert str(raised.value).splitlines()[0] == message


def test_the_ir_keeps_symbolic_sizes():
    f = tf.differentiable(lambda x, y: tf.reduce_sum(x * y))
    ir = f.ir(np.ones(3), np.ones(3))
    assert re.search(r"\(x: f64\[n0\], y: f64\[n0\]\)", ir), ir
    assert "f64[3]" not in ir
