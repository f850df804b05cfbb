"""Jacobians in one kernel (srcxform/jacobians.py): srcxform.jacobian, hessian, and
GradientTape.jacobian and batch_jacobian inside a compiled function push the output's rows
or the input's columns, whichever side is smaller, all at once where every op has a
batching rule (tests/test_batching.py has the rules), else in a loop; tuple `wrt` gives a
tuple per argument, as JAX's argnums. Values against the eager tape's per-row Jacobian and
central differences. Kernels run as Python (SRCXFORM_JIT=0) except where marked."""

import pickle

import numpy as np
import pytest
from objectives import rosen, rosen_hessian

import srcxform as tf
from srcxform import jacobians


@pytest.fixture(autouse=True)
def python_kernels(monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")


def central_jacobian(fn, x, eps=1e-6):
    """d fn / d x by central differences: shape fn(x).shape + x.shape."""
    columns = []
    for k in range(x.size):
        step = np.zeros(x.size)
        step[k] = eps
        step = step.reshape(x.shape)
        columns.append((np.asarray(fn(x + step)) - np.asarray(fn(x - step))) / (2 * eps))
    out = np.stack(columns, axis=-1)
    return out.reshape(out.shape[:-1] + x.shape)


def eager_jacobian(fn, *args):
    """The eager tape's Jacobian of fn wrt each argument (one reverse walk per row)."""
    xs = [tf.constant(a) for a in args]
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(xs)
        out = fn(*xs)
    return [j.numpy() for j in tape.jacobian(out, xs, unconnected_gradients="zero")]


def widening(x):  # n -> n * n: fewer inputs than outputs, so columns (forward)
    return tf.reshape(tf.sin(x)[:, None] * x[None, :], (-1,))


def narrowing(x):  # n -> 2: fewer outputs, so rows (reverse)
    return tf.stack([tf.reduce_sum(tf.tanh(x) * x[::-1]), tf.reduce_prod(x)])


def loops_taken(monkeypatch):
    """The jacobians.py loops taken, by name, each time a Jacobian is traced (or run
    eagerly: a first call is checked against the eager function)."""
    taken = []

    def counted(name):
        loop = getattr(jacobians, name)

        def counting(*args, **kwargs):
            taken.append(name)
            return loop(*args, **kwargs)
        return counting

    for name in ("rows", "columns"):
        monkeypatch.setattr(jacobians, name, counted(name))
    return taken


@pytest.mark.parametrize("fn, side", [(widening, "columns"), (narrowing, "rows")])
def test_jacobian_pushes_the_smaller_side_at_once_in_one_kernel(fn, side, monkeypatch):
    """One kernel for sizes 3 and 4 pushing every basis vector at once (no loop over them),
    equal to the eager tape and to central differences."""
    taken = loops_taken(monkeypatch)
    compiled = tf.jacobian(fn)
    for n in (3, 4):
        x = np.linspace(-0.9, 1.1, n)
        got = compiled(x)
        np.testing.assert_allclose(got, eager_jacobian(fn, x)[0], rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(got, central_jacobian(fn, x), rtol=1e-7, atol=1e-9)
    assert set(taken) == {side} and compiled.cache_info().kernels == 1
    source = compiled._kernel("value", (x,), {})[0].source
    kernel = source.split("def jacobian_of_")[1].split("\ndef ")[0]
    assert kernel.count("for it in range(") == 0, kernel


def test_the_kernel_is_one_call_per_jacobian(monkeypatch):
    """srcxform.jacobian of a 16 -> 16 map: one kernel call a Jacobian, not one a row, and
    the rows' reverse walks as one (two matmuls: the forward one and the rows' one),
    neither a loop over rows nor sixteen walks unrolled."""
    w = np.random.default_rng(0).standard_normal((16, 16))

    def mapped(x):
        return tf.tanh(tf.linalg.matvec(w, x))

    compiled, x = tf.jacobian(mapped), np.linspace(-1, 1, 16)
    compiled(x)
    before = compiled.cache_info().hits
    np.testing.assert_allclose(compiled(x), (1 - np.tanh(w @ x) ** 2)[:, None] * w, rtol=1e-13,
                               atol=1e-14)
    assert compiled.cache_info().hits - before == 1
    source = compiled._kernel("value", (x,), {})[0].source
    kernel = source.split("def jacobian_of_mapped__value")[1].split("\ndef ")[0]
    assert kernel.count("for it in range(") == 0 and kernel.count("matmul(") == 2, kernel


def test_a_jacobian_whose_products_are_small_keeps_the_loop():
    """A 3 x 3 product's rows gain nothing from one GEMM (ops/linalg.py _gemm_pays): the
    pushes stay one loop, whose body is one push, with the same values."""
    a = np.random.default_rng(5).standard_normal((3, 3))

    def small(x):
        return tf.reshape(tf.matmul(a, tf.reshape(tf.sin(x), (3, 3))), (-1,))

    compiled, x = tf.jacfwd(small), np.linspace(-1, 1, 9)
    np.testing.assert_allclose(compiled(x), eager_jacobian(small, x)[0], rtol=1e-13)
    source = compiled._kernel("value", (x,), {})[0].source
    assert source.count("for it in range(") == 1, source


def pair_map(x, y):
    return tf.concat([tf.sin(x) * y[0], x * tf.reduce_sum(y * y)], axis=0)


@pytest.mark.parametrize("form", [tf.jacfwd, tf.jacrev, tf.jacobian])
def test_tuple_wrt_gives_a_jacobian_per_argument(form):
    x, y = np.array([0.3, -0.7]), np.array([1.5, 0.5, -2.0])
    jx, jy = form(pair_map, wrt=(0, 1))(x, y)
    want_x, want_y = eager_jacobian(pair_map, x, y)
    assert jx.shape == (4, 2) and jy.shape == (4, 3)
    np.testing.assert_allclose(jx, want_x, rtol=1e-13)
    np.testing.assert_allclose(jy, want_y, rtol=1e-13)
    (only_y,) = form(pair_map, wrt=(1,))(x, y)
    np.testing.assert_allclose(only_y, want_y, rtol=1e-13)


@pytest.mark.parametrize("form", [tf.jacfwd, tf.jacrev])
def test_tuple_wrt_of_a_tuple_output_nests_arguments_inside_outputs(form):
    """JAX's layout: the output's structure outside, a tuple over the arguments inside."""
    def two(x, y):
        return x * y, tf.reduce_sum(x)

    x, y = np.array([1., 2.]), np.array([3., 4.])
    (a_x, a_y), (b_x, b_y) = form(two, wrt=(0, 1))(x, y)
    np.testing.assert_allclose(a_x, np.diag(y))
    np.testing.assert_allclose(a_y, np.diag(x))
    np.testing.assert_allclose(b_x, [1., 1.])
    np.testing.assert_allclose(b_y, [0., 0.])


def test_hessian_is_forward_over_reverse_and_equals_rosenbrocks(monkeypatch):
    """A loop of forward pushes (columns) through the gradient's records, one kernel for
    two sizes, equal to the analytic Hessian."""
    taken = loops_taken(monkeypatch)
    hessian = tf.hessian(rosen)
    rng = np.random.default_rng(2)
    for n in (4, 6):
        x = rng.standard_normal(n)
        np.testing.assert_allclose(hessian(x), rosen_hessian(x), rtol=1e-12, atol=1e-12)
    assert set(taken) == {"columns"} and hessian.cache_info().kernels == 1


def test_hessian_of_a_tuple_wrt_is_a_tuple_of_tuples():
    def f(x, y):
        return tf.reduce_sum(tf.sin(x) * y[0] ** 2) + tf.reduce_sum(y ** 3)

    x, y = np.array([0.2, -0.4, 1.0]), np.array([1.5, -0.5])
    (hxx, hxy), (hyx, hyy) = tf.hessian(f, wrt=(0, 1))(x, y)
    assert [h.shape for h in (hxx, hxy, hyx, hyy)] == [(3, 3), (3, 2), (2, 3), (2, 2)]
    np.testing.assert_allclose(hxx, np.diag(-np.sin(x) * y[0] ** 2), rtol=1e-13)
    np.testing.assert_allclose(hxy, np.stack([2 * y[0] * np.cos(x), 0 * x], 1), rtol=1e-13)
    np.testing.assert_allclose(hyx, hxy.T, rtol=1e-13)
    np.testing.assert_allclose(hyy, np.diag(6 * y) + [[2 * np.sin(x).sum(), 0], [0, 0]],
                               rtol=1e-13)
    with pytest.raises(TypeError, match=r"hessian: .*widening must return a scalar .*"
                                        r"got \(9,\)"):
        tf.hessian(widening)(x)


@pytest.mark.parametrize("fn, side", [(widening, "columns"), (narrowing, "rows")])
def test_tape_jacobian_in_a_compiled_function_is_one_push(fn, side, monkeypatch):
    """tape.jacobian inside a compiled function: one push of every row (not a walk each),
    a source the target does not reach is zeros (unconnected_gradients="zero") or None."""
    taken, unconnected = loops_taken(monkeypatch), []

    @tf.differentiable
    def jacobian_of(x, z):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch([x, z])
            y = fn(x)
        unconnected.append(tape.jacobian(y, [x, z])[1])
        return tape.jacobian(y, [x, z], unconnected_gradients="zero")

    x = np.linspace(-0.9, 1.1, 3)
    jx, jz = map(np.asarray, jacobian_of(x, np.ones(2)))
    np.testing.assert_allclose(jx, eager_jacobian(fn, x)[0], rtol=1e-13, atol=1e-15)
    assert jz.shape == jx.shape[:1] + (2,) and not jz.any()
    assert set(unconnected) == {None} and set(taken) == {side}


def per_example(x):  # row i of the output from row i of x only
    return tf.concat([tf.sin(x) * x[:, ::-1], tf.reduce_sum(x * x, axis=1, keepdims=True)], 1)


def per_example_narrow(x):
    return tf.reduce_sum(tf.tanh(x), axis=1, keepdims=True) * x[:, :1]


@pytest.mark.parametrize("fn, side", [(per_example, "columns"),
                                      (per_example_narrow, "rows")])
def test_batch_jacobian_in_a_compiled_function_is_one_push(fn, side, monkeypatch):
    """An example's rows or columns pushed at once, for all examples at once; equal to the
    eager batch_jacobian."""
    taken = loops_taken(monkeypatch)

    @tf.differentiable
    def batch_jacobian_of(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        return tape.batch_jacobian(y, x)

    x = np.random.default_rng(3).standard_normal((4, 3))
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = fn(xt)
    want = tape.batch_jacobian(y, xt).numpy()
    got = np.asarray(batch_jacobian_of(x))
    assert got.shape == want.shape == (4, y.shape[1], 3)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    assert set(taken) == {side}


@pytest.mark.slow  # two Numba compiles
def test_jacobian_of_a_100_map_compiles_natively(monkeypatch):
    """Numba: the 100 -> 100 map of benchmarks/forward.py, equal to the analytic
    Jacobian."""
    monkeypatch.setenv("SRCXFORM_JIT", "1")
    monkeypatch.setenv("SRCXFORM_TIERED", "0")
    w = np.random.default_rng(4).standard_normal((100, 100)) / 10

    def mapped(x):
        return tf.tanh(tf.linalg.matvec(w, x))

    x = np.linspace(-1, 1, 100)
    want = (1 - np.tanh(w @ x) ** 2)[:, None] * w
    for form in (tf.jacobian, tf.jacfwd):
        np.testing.assert_allclose(form(mapped)(x), want, rtol=1e-12, atol=1e-14)


def _scaled_sine(x, scale=1.0):
    return tf.sin(x) * scale


def test_jacobian_takes_any_output_structure_and_keywords_as_jacrev_does():
    x = np.array([0.5, 1.0])
    doubled, sine = tf.jacobian(lambda v: (v * 2.0, tf.sin(v)))(x)
    np.testing.assert_array_equal(doubled, 2 * np.eye(2))
    np.testing.assert_array_equal(sine, np.diag(np.cos(x)))
    for form in (tf.jacobian, tf.jacfwd, tf.jacrev):
        np.testing.assert_allclose(form(_scaled_sine)(x, scale=3.0), np.diag(3 * np.cos(x)),
                                   rtol=1e-15)


@pytest.mark.parametrize("form", [tf.jacobian, tf.jacfwd, tf.jacrev, tf.hessian])
def test_jacobian_forms_refuse_integers_and_missing_arguments_naming_them(form):
    name = form.__name__  # hessian's error named jacfwd, which it runs (helper 129)
    with pytest.raises(TypeError, match=f"{name}: argument 0 must be a float array or a structure.*int64"):
        form(lambda v: tf.reduce_sum(v * 2))(np.arange(3))
    if form is tf.hessian:
        return
    with pytest.raises(TypeError, match=f"{name}: .*gives its output of dtype int64"):
        form(lambda v: tf.cast(v, "int64"))(np.arange(3.0))
    with pytest.raises(TypeError, match=f"{name}: .* wrt argument 2 .* passed 2 positional"):
        form(lambda v, w: v * w, wrt=2)(np.ones(2), np.ones(2))


def test_a_float32_input_of_a_float64_output_gives_a_float32_jacobian_every_way():
    """The tape's rule (a gradient has its source's dtype), for forward pushes too: jacfwd
    gave float64 where jacrev and the tape gave float32 (found by an adversarial run)."""
    w = np.random.default_rng(6).standard_normal((16, 4))  # float64: the output is too

    def mixed(x):
        return tf.tanh(tf.linalg.matvec(tf.transpose(w), x))

    x = np.linspace(-1, 1, 16).astype(np.float32)
    want = eager_jacobian(mixed, x)[0]
    assert want.dtype == np.float32
    for form in (tf.jacfwd, tf.jacrev, tf.jacobian):
        got = form(mixed)(x)
        assert got.dtype == np.float32, form
        np.testing.assert_allclose(got, want, rtol=1e-6)
        empty = form(lambda v: mixed(v)[:0])(x)  # no row to walk: zeros, made apart
        assert empty.shape == (0, 16) and empty.dtype == np.float32, form


def _with_aux(x, y):
    out = tf.sin(x) * y
    return out, {"norm": tf.reduce_sum(out ** 2), "count": 3}


@pytest.mark.parametrize("form", [tf.jacfwd, tf.jacrev, tf.jacobian])
def test_has_aux_gives_the_jacobian_and_the_aux_as_jax(form):
    x, y = np.array([0.1, 0.2, 0.3]), np.array([1.0, 2.0, 3.0])
    jac, aux = form(_with_aux, has_aux=True)(x, y)
    np.testing.assert_allclose(jac, np.diag(np.cos(x) * y))
    np.testing.assert_allclose(float(aux["norm"]), np.sum((np.sin(x) * y) ** 2))
    assert aux["count"] == 3
    (_, jac_y), _ = form(_with_aux, wrt=(0, 1), has_aux=True)(x, y)
    np.testing.assert_allclose(jac_y, np.diag(np.sin(x)))
    again = pickle.loads(pickle.dumps(form(_with_aux, has_aux=True)))
    np.testing.assert_allclose(again(x, y)[0], jac)
    with pytest.raises(TypeError, match="must return a pair \\(output, aux\\)"):
        form(np.sin, has_aux=True)(x)


def test_hessian_has_aux():
    x = np.array([0.5, -1.0])
    hess, aux = tf.hessian(lambda x: (tf.reduce_sum(x ** 3), x * 2.0), has_aux=True)(x)
    np.testing.assert_allclose(hess, np.diag(6 * x))
    np.testing.assert_allclose(aux, 2 * x)


def test_jacobians_and_hessian_of_a_structure_are_in_its_structure():
    # Helper 129: jacfwd, jacrev and hessian refused a dict argument, which grad, hvp and
    # jvp take; JAX's give the Jacobian of each leaf in the argument's structure.
    d = {"w": np.array([1.0, 2.0, 3.0]), "b": np.array(0.5)}

    def f(d):
        return d["w"] ** 2 * d["b"]

    for form in (tf.jacfwd, tf.jacrev):
        got = form(f)(d)
        np.testing.assert_allclose(got["w"], np.diag(2 * d["w"] * d["b"]))
        np.testing.assert_allclose(got["b"], d["w"] ** 2)
    h = tf.hessian(lambda d: tf.reduce_sum(d["w"] ** 3) * d["b"])(d)
    np.testing.assert_allclose(h["w"]["w"], np.diag(6 * d["w"] * d["b"]))
    np.testing.assert_allclose(h["w"]["b"], 3 * d["w"] ** 2)
    np.testing.assert_allclose(h["b"]["w"], 3 * d["w"] ** 2)
    assert h["b"]["b"] == 0.0
