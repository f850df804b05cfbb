"""Forward mode (srcxform/ad/forward.py, transforms.py): every differentiable primitive's JVP
against central finite differences and against J @ v from the reverse-mode Jacobian,
table-driven by tests/samples.py; ForwardAccumulator on TensorFlow's guide cases; JAX's
forms (jvp, linearize, jacfwd, jacrev, hvp) eager and compiled."""

import re

import numpy as np
import pytest
from samples import COLD_HELPERS, COMPOSITES, SAMPLES, function
from objectives import rosen, rosen_hessian

import srcxform as tf
from srcxform.ad.forward import ForwardAccumulator, jvp
from srcxform.core.primitive import REGISTRY
from srcxform.core.tree import tree_flatten

ROWS = [row for name in REGISTRY for row in SAMPLES.get(name, ())]
DIFF = [pytest.param(r, id=r.id) for r in ROWS if not REGISTRY[r.name].nondiff]
DIFF += [pytest.param(r, id=f"composite-{r.id}") for r in COMPOSITES]
NONDIFF = [pytest.param(r, id=r.id) for r in ROWS if REGISTRY[r.name].nondiff]
# Rows calling Numba-compiled helpers (samples.COLD_HELPERS): their generated JVPs in
# the slow tier.
GENERATED = [pytest.param(*p.values, id=p.id,
                          marks=pytest.mark.slow if p.values[0].name in COLD_HELPERS else ())
             for p in DIFF]


def _inputs_and_tangents(row):
    rng = np.random.default_rng(0)
    args = row.make(rng)
    tangents = [rng.standard_normal(np.shape(a)) if a.dtype.kind == "f" else None
                for a in args]
    return args, tangents


def _float_leaves(out):
    return [leaf for leaf in tree_flatten(out)[0] if leaf.dtype.kind == "f"]


def _eager_jvp(f, args, tangents):
    """The output's float leaves and their tangents, by a ForwardAccumulator."""
    inputs = [tf.constant(a) for a in args]
    pairs = [(x, t) for x, t in zip(inputs, tangents) if t is not None]
    with ForwardAccumulator([x for x, _ in pairs], [t for _, t in pairs]) as acc:
        out = f(*inputs)
    leaves = _float_leaves(out)
    return leaves, [acc.jvp(y, unconnected_gradients="zero") for y in leaves]


def _finite_difference(f, args, tangents, eps):
    """Central difference of each float output leaf along the tangents."""
    def shifted(sign):
        moved = [a if t is None else a + sign * eps * t for a, t in zip(args, tangents)]
        return [y.numpy() for y in _float_leaves(f(*[tf.constant(a) for a in moved]))]

    return [(p - m) / (2 * eps) for p, m in zip(shifted(1), shifted(-1))]


def _jacobian_times_tangents(f, args, tangents):
    """J @ v from the reverse-mode Jacobian of each float output leaf."""
    inputs = [tf.constant(a) for a in args]
    sources = [x for x, t in zip(inputs, tangents) if t is not None]
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(sources)
        out = f(*inputs)
    products = []
    for y in _float_leaves(out):
        total = np.zeros(y.shape)
        for jac, t in zip(tape.jacobian(y, sources, unconnected_gradients="zero"),
                          [t for t in tangents if t is not None]):
            total += np.tensordot(jac.numpy(), t, axes=t.ndim)
        products.append(total)
    return products


def test_every_differentiable_primitive_has_a_jvp_row():
    """Each differentiable primitive's JVP is derived from its VJP (forward.py), and the
    table below checks it: every one has a sample row here."""
    checked = {p.values[0].name for p in DIFF}
    assert [name for name, p in REGISTRY.items() if not p.nondiff and name not in checked] == []


@pytest.mark.parametrize("row", DIFF)
def test_jvp_matches_finite_differences_and_reverse_mode(row):
    args, tangents = _inputs_and_tangents(row)
    f = function(row)
    _, got = _eager_jvp(f, args, tangents)
    got = [t.numpy() for t in got]
    for g, want in zip(got, _jacobian_times_tangents(f, args, tangents)):
        single = g.dtype == np.float32  # an op whose output is float32 (cast)
        np.testing.assert_allclose(g, want, rtol=1e-6 if single else 1e-9, atol=1e-10)
    scale = max(1.0, *(np.abs(g).max(initial=0.0) for g in got))
    for g, want in zip(got, _finite_difference(f, args, tangents, row.eps)):
        single = g.dtype == np.float32
        np.testing.assert_allclose(g, want, rtol=1e-2 if single else max(row.rtol, 1e-6),
                                   atol=(1e-2 if single else max(row.atol, 1e-7)) * scale)


@pytest.mark.parametrize("row", NONDIFF)
def test_nondiff_primitive_has_no_tangent(row):
    args, tangents = _inputs_and_tangents(row)
    if all(t is None for t in tangents):
        pytest.skip("no float input to carry a tangent")
    inputs = [tf.constant(a) for a in args]
    pairs = [(x, t) for x, t in zip(inputs, tangents) if t is not None]
    with ForwardAccumulator([x for x, _ in pairs], [t for _, t in pairs]) as acc:
        out = function(row)(*inputs)
    assert all(acc.jvp(y) is None for y in tree_flatten(out)[0])


@pytest.mark.parametrize("row", GENERATED)
def test_generated_jvp_equals_eager(row, monkeypatch):
    """Every row's traced JVP, its generated code run as Python (SRCXFORM_JIT=0: no Numba
    compile), equals the eager JVP; Numba kernels are checked on the forms below."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    args, tangents = _inputs_and_tangents(row)
    f = function(row)
    floats = [k for k, t in enumerate(tangents) if t is not None]

    def f_jvp(primals, dirs):
        def partial(*xs):
            full = list(args)
            for k, x in zip(floats, xs):
                full[k] = x
            return f(*full)

        return jvp(partial, primals, dirs)

    compiled = tf.differentiable(f_jvp, autograph=False, wait=True)
    with np.errstate(all="ignore"):
        _, got = compiled(tuple(args[k] for k in floats), tuple(tangents[k] for k in floats))
    _, want = _eager_jvp(f, args, tangents)
    for g, w in zip(_float_leaves(got), want):
        np.testing.assert_allclose(np.asarray(g), w.numpy(), rtol=1e-12, atol=1e-13)


# ----- ForwardAccumulator: TensorFlow's advanced-autodiff guide -----


def test_accumulator_of_a_variable():
    x = tf.Variable(3.0)
    with tf.autodiff.ForwardAccumulator(x, tf.constant(1.0)) as acc:
        y = x * x * x
    assert float(acc.jvp(y)) == 27.0
    assert acc.jvp(y).dtype == np.float32


def test_accumulator_tracks_variables_in_a_layer_like_function():
    w = tf.Variable([[1.0, 2.0], [3.0, 4.0]], dtype=tf.float64)
    x = tf.constant([[0.5, -1.0]], tf.float64)
    tangent = tf.constant([[1.0, 0.0], [0.0, 1.0]], tf.float64)
    with tf.autodiff.ForwardAccumulator(w, tangent) as acc:
        y = tf.reduce_sum(tf.tanh(x @ w))
    pre = x.numpy() @ w.numpy()
    want = np.sum((1 - np.tanh(pre) ** 2) * (x.numpy() @ tangent.numpy()))
    assert float(acc.jvp(y)) == pytest.approx(want, rel=1e-12)


def test_unconnected_gradients():
    x, z = tf.constant(2.0), tf.constant(5.0)
    with tf.autodiff.ForwardAccumulator(x, tf.constant(1.0)) as acc:
        y = z * 3.0
    assert acc.jvp(y) is None
    assert float(acc.jvp(y, unconnected_gradients=tf.UnconnectedGradients.ZERO)) == 0.0
    assert float(acc.jvp(x)) == 1.0  # a primal's tangent is its own


def test_nested_structures_and_errors():
    a, b = tf.constant([1.0, 2.0]), tf.constant(3.0)
    with tf.autodiff.ForwardAccumulator({"a": a, "b": b},
                                        {"a": tf.constant([1.0, 1.0]), "b": 2.0}) as acc:
        y = tf.reduce_sum(a) * b
    assert float(acc.jvp(y)) == pytest.approx(2.0 * 3.0 + 3.0 * 2.0)
    assert acc.jvp({"y": y, "a": a})["a"].numpy().tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="tangent of shape"):
        tf.autodiff.ForwardAccumulator(a, tf.constant(1.0))
    with pytest.raises(ValueError, match="same structure"):
        tf.autodiff.ForwardAccumulator([a, b], [1.0])
    with pytest.raises(ValueError, match="primal more than once"):  # it kept the last
        tf.autodiff.ForwardAccumulator([a, a], [a, a])  # tangent (helper 114); TF raises


def test_forward_over_reverse_is_a_hessian_vector_product():
    """The guide's case: a tape inside the accumulator; the accumulator follows the
    tape's gradient computation."""
    x = tf.constant([1.0, 2.0, 3.0], tf.float64)
    v = tf.constant([0.5, -1.0, 2.0], tf.float64)
    with tf.autodiff.ForwardAccumulator(x, v) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(x ** 3) + x[0] * x[1]
        g = tape.gradient(y, x)
    hessian = np.diag(6 * x.numpy()) + np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]])
    np.testing.assert_allclose(acc.jvp(g).numpy(), hessian @ v.numpy(), rtol=1e-14)


def test_guide_forward_over_backward_of_a_power():
    primal, tangent = tf.constant(1.1), tf.constant(1.)
    with tf.autodiff.ForwardAccumulator(primal, tangent) as acc:
        with tf.GradientTape() as tape:
            tape.watch(primal)
            primal_out = primal ** tf.constant(3.5)
        backward = tape.gradient(primal_out, primal)
    assert float(acc.jvp(backward)) == pytest.approx(3.5 * 2.5 * 1.1 ** 1.5, rel=1e-6)


def test_reverse_over_forward():
    x = tf.constant([1.0, 2.0], tf.float64)
    v = tf.constant([1.0, 3.0], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        with tf.autodiff.ForwardAccumulator(x, v) as acc:
            y = tf.reduce_sum(tf.sin(x) * x[0])
        directional = acc.jvp(y)
    got = tape.gradient(directional, x).numpy()
    # d/dx of v . grad(y), y = x0 * (sin x0 + sin x1)
    x0, x1 = x.numpy()
    hessian = np.array([[2 * np.cos(x0) - x0 * np.sin(x0), np.cos(x1)],
                        [np.cos(x1), -x0 * np.sin(x1)]])
    np.testing.assert_allclose(got, hessian @ v.numpy(), rtol=1e-13)


def test_forward_over_forward():
    x = tf.constant(0.7, tf.float64)
    with tf.autodiff.ForwardAccumulator(x, tf.constant(1.0, tf.float64)) as outer:
        with tf.autodiff.ForwardAccumulator(x, tf.constant(1.0, tf.float64)) as inner:
            y = tf.sin(x) * x
        first = inner.jvp(y)
    second = outer.jvp(first)
    assert float(first) == pytest.approx(np.cos(0.7) * 0.7 + np.sin(0.7), rel=1e-14)
    assert float(second) == pytest.approx(2 * np.cos(0.7) - 0.7 * np.sin(0.7), rel=1e-14)


def test_custom_gradient_defines_the_jvp():
    @tf.custom_gradient
    def doubled_grad(x):
        return x * 1.0, lambda g: 2.0 * g

    x = tf.constant(1.5)
    with tf.autodiff.ForwardAccumulator(x, tf.constant(1.0)) as acc:
        y = doubled_grad(x)
    assert float(acc.jvp(y)) == 2.0  # TensorFlow's accumulator transposes the gradient too


def test_eager_control_flow():
    x = tf.constant(1.2, tf.float64)
    with tf.autodiff.ForwardAccumulator(x, tf.constant(1.0, tf.float64)) as acc:
        y = tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * x), (0, x))[1]
        z = tf.cond(x > 1.0, lambda: tf.exp(x), lambda: x)
    assert float(acc.jvp(y)) == pytest.approx(4 * 1.2 ** 3, rel=1e-14)
    assert float(acc.jvp(z)) == pytest.approx(np.exp(1.2), rel=1e-14)


# ----- JAX's forms -----


@pytest.fixture
def native(monkeypatch):
    """First calls wait for the Numba kernel instead of running eagerly meanwhile."""
    monkeypatch.setenv("SRCXFORM_TIERED", "0")


ROSEN_HVP = tf.hvp(rosen)


def test_hvp_on_rosenbrock_equals_the_hessian_times_v(native):
    x, v = np.array([1., 2., 3.]), np.array([1., 0., 0.])
    np.testing.assert_allclose(ROSEN_HVP(x, v), tf.hessian(rosen)(x) @ v, rtol=1e-10)
    rng = np.random.default_rng(1)
    x, v = rng.standard_normal(7), rng.standard_normal(7)
    np.testing.assert_allclose(ROSEN_HVP(x, v), rosen_hessian(x) @ v, rtol=1e-10)
    assert ROSEN_HVP.cache_info().kernels == 1  # one kernel for both sizes


def test_the_hvp_kernel_recomputes_rather_than_stores(monkeypatch):
    """hvp costs about a gradient: one loop, no temporary array between loops (two stored
    arrays of n - 1 made it 20 times a gradient call at n = 1e6)."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    x, v = np.linspace(-1, 1, 5), np.ones(5)
    source = tf.hvp(rosen)._kernel("value", (x, v), {})[0].source
    kernel = source.split("def hvp_of_rosen__value")[1].split("\ndef ")[0]
    assert kernel.count("for i0 in") == 1 and "empty(" not in kernel


def test_jvp_and_differentiable_jvp(native):
    x, v = np.array([1., 2., 3.]), np.array([0.5, -1., 2.])
    value, tangent = tf.jvp(rosen, (x,), (v,))
    assert float(value) == pytest.approx(float(rosen(tf.constant(x))), rel=1e-14)
    gradient = tf.grad(rosen)(x)
    assert float(tangent) == pytest.approx(gradient @ v, rel=1e-12)
    compiled = tf.differentiable(rosen)
    value2, tangent2 = compiled.jvp((x,), (v,))
    assert float(tangent2) == pytest.approx(gradient @ v, rel=1e-12)
    assert float(value2) == pytest.approx(float(value), rel=1e-14)


def test_linearize_replays_without_the_primal():
    calls = []

    def f(x):
        calls.append(1)
        return tf.sin(x) * x

    x = np.array([0.3, 1.1])
    out, f_jvp = tf.linearize(f, x)
    for v in (np.array([1.0, 0.0]), np.array([0.5, 2.0])):
        want = (np.cos(x) * x + np.sin(x)) * v
        np.testing.assert_allclose(f_jvp(v).numpy(), want, rtol=1e-14)
    assert len(calls) == 1
    np.testing.assert_allclose(out.numpy(), np.sin(x) * x)


def test_each_primal_is_a_source_of_its_own():
    """Found by helper 114: linearize took a primal's other uses (a closure's, the same
    tensor passed twice) for the primal: a * x along t gave 2 x t."""
    x, t = tf.constant([1.0, 2.0]), tf.constant([1.0, 1.0])
    for jvp_of in (lambda f, *p: tf.linearize(f, *p)[1],
                   lambda f, *p: lambda *ts: jvp(f, p, ts)[1]):
        np.testing.assert_array_equal(jvp_of(lambda a: a * x, x)(t), [1.0, 2.0])
        np.testing.assert_array_equal(jvp_of(lambda a, b: a * b, x, x)(t, 10 * t), [11, 22])
    v = tf.Variable([1.0, 2.0])  # one source: it cannot take two tangents (helper 119)
    for name, given_twice in (("linearize", lambda: tf.linearize(lambda a, b: a + b, v, v)),
                              ("jvp", lambda: jvp(lambda a, b: a + b, (v, v), (t, t)))):
        with pytest.raises(ValueError, match=f"{name}: a Variable is given twice"):
            given_twice()


def test_linearize_and_jvp_refuse_tangents_and_primals_that_would_broadcast_or_unpack():
    _, f_jvp = tf.linearize(lambda x: tf.reduce_sum(tf.sin(x)), np.array([1.0, 2.0, 3.0]))
    for tangent in (np.ones((2, 3)), np.ones(1), np.array(1.0)):  # each broadcast before
        with pytest.raises(ValueError, match=re.escape(f"tangent of shape {tangent.shape} for")):
            f_jvp(tangent)
    three = tf.differentiable(lambda a, b, c: a * b + c)
    for jvp_of in (three.jvp, lambda p, t: tf.jvp(three.fn, p, t)):  # ran three(1., 2., 3.)
        with pytest.raises(TypeError, match="must be tuples"):
            jvp_of(np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 0.0]))


def map3(x):
    return tf.stack([x[0] * x[1], tf.sin(x[2]), tf.reduce_sum(x ** 2)])


JACFWD_MAP3, JACREV_MAP3 = tf.jacfwd(map3), tf.jacrev(map3)


def test_jacfwd_equals_jacrev(native):
    x = np.array([0.5, -1.5, 2.0])
    want = np.array([[x[1], x[0], 0], [0, 0, np.cos(x[2])], 2 * x])
    np.testing.assert_allclose(JACFWD_MAP3(x), want, rtol=1e-14)
    np.testing.assert_allclose(JACREV_MAP3(x), want, rtol=1e-14)


def mixing(x):
    return tf.tanh(x * x[::-1]) @ x + tf.reduce_sum(x, axis=0)


@pytest.mark.parametrize("jacobian", [tf.jacfwd, tf.jacrev])
def test_jacobians_are_one_kernel_for_every_size(jacobian, monkeypatch):
    """The basis vectors pushed at once, their count the size: one kernel for 3x3 and
    4x4 inputs, both equal to the tape's jacobian (run as Python, JIT=0)."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    compiled = jacobian(mixing)
    for n in (3, 4):
        x = np.linspace(-1, 1, n * n).reshape(n, n)
        xt = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            out = mixing(xt)
        np.testing.assert_allclose(compiled(x), tape.jacobian(out, xt).numpy(), rtol=1e-13)
    assert compiled.cache_info().kernels == 1


# ----- compiled control flow: tangents through the structured loops and branches -----


def while_product(x):
    return tf.while_loop(lambda i, s: tf.reduce_sum(s) < 10.0, lambda i, s: (i + 1, s * x),
                         (0, x))[1]


def fori_sines(x):
    trips = tf.cast(x[0] * 0 + 3, tf.int32)  # a traced bound: a real loop, not unrolled
    return tf.fori_loop(0, trips, lambda i, s: tf.sin(s) * x, x)


def scan_recurrence(x):
    return tf.scan(lambda a, e: a * e + tf.sin(a), x, initializer=x[0])


def cond_branches(x):
    return tf.cond(tf.reduce_sum(x) > 0.0, lambda: tf.exp(x) * x, lambda: x ** 3)


@pytest.mark.parametrize("fn, x", [(while_product, [1.5, 1.2]), (fori_sines, [1.5, 1.2]),
                                   (scan_recurrence, [0.5, 1.2, -0.3]),
                                   (cond_branches, [1.5, 1.2]), (cond_branches, [-1.5, 1.2])])
def test_compiled_control_flow_jvp(fn, x, monkeypatch):
    """The loop or branch is one structured IR operation (its bound or predicate is
    traced); its JVP is derived from its VJP, as every op's. Run as Python (JIT=0)."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    x = np.array(x)
    v = np.linspace(0.3, -1.0, len(x))
    compiled = tf.differentiable(fn, wait=True)
    got = np.asarray(compiled.jvp((x,), (v,))[1])
    eps = 1e-6
    numeric = (np.asarray(compiled(x + eps * v)) - np.asarray(compiled(x - eps * v))) / (2 * eps)
    np.testing.assert_allclose(got, numeric, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(got, jvp(fn, (x,), (v,))[1].numpy(), rtol=1e-13)


def rosen_thrice(x):
    """Rosenbrock summed by a while loop whose trip count the trace cannot know."""
    def body(c, s):
        return c + 1.0, s + rosen(x)

    return tf.while_loop(lambda c, s: c < 3.0, body, (x[0] * 0.0, x[0] * 0.0))[1]


def test_hvp_through_a_compiled_while_loop(native):
    """Second order through a loop: the accumulator follows the tape's reverse loop,
    which reads the forward loop's stacks, and so their tangents too. Numba-compiled."""
    x, v = np.array([1., 2., 3.]), np.array([1., 0.5, 0.])
    np.testing.assert_allclose(tf.hvp(rosen_thrice)(x, v), 3 * rosen_hessian(x) @ v,
                               rtol=1e-12)


def branchy(x):
    """An `if` on a traced value: autograph makes it a cond."""
    if tf.reduce_sum(x) > 0.0:
        y = x * x
    else:
        y = tf.sin(x)
    return tf.reduce_sum(y)


def test_every_transform_converts_the_functions_control_flow(monkeypatch):
    """hessian, hvp and the jacobians trace fn as srcxform.grad does: its `if` converted
    (they traced it as written, raising TracingError at the `if`)."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    for x in (np.array([0.5, 0.7]), np.array([-0.5, -0.7])):
        second = np.diag(np.full(2, 2.0) if x.sum() > 0 else -np.sin(x))
        first = 2 * x if x.sum() > 0 else np.cos(x)
        np.testing.assert_allclose(tf.hessian(branchy)(x), second, rtol=1e-12)
        np.testing.assert_allclose(tf.hvp(branchy)(x, np.ones(2)), second @ np.ones(2),
                                   rtol=1e-12)
        for jacobian in (tf.jacfwd, tf.jacrev, tf.jacobian):
            np.testing.assert_allclose(jacobian(branchy)(x), first, rtol=1e-12)


def directional_derivative(x, v):
    with tf.autodiff.ForwardAccumulator(x, v) as acc:
        y = tf.reduce_sum(tf.tanh(x) * x)
    return acc.jvp(y)


def test_accumulator_inside_a_compiled_function_and_its_gradient(monkeypatch):
    """Traced like a tape: the JVP's ops land in the kernel, and .grad differentiates
    them (reverse over forward). Run as Python (JIT=0)."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    compiled = tf.differentiable(directional_derivative, wait=True)
    x, v = np.array([0.3, -1.2]), np.array([1.0, 2.0])
    sech2 = 1 - np.tanh(x) ** 2
    np.testing.assert_allclose(float(compiled(x, v)), np.sum((sech2 * x + np.tanh(x)) * v),
                               rtol=1e-14)
    hessian_diagonal = 2 * sech2 - 2 * x * np.tanh(x) * sech2
    np.testing.assert_allclose(compiled.grad(x, v), hessian_diagonal * v, rtol=1e-13)


def test_a_compiled_function_called_under_an_accumulator_is_followed():
    compiled = tf.differentiable(lambda x: tf.reduce_sum(tf.sin(x)), wait=True)
    x = np.array([0.5, 1.0])
    compiled(x)  # a warm entry exists: a call under an accumulator must still be seen
    xt = tf.constant(x)
    with tf.autodiff.ForwardAccumulator(xt, tf.constant([1.0, 1.0], tf.float64)) as acc:
        y = compiled(xt)
    assert float(acc.jvp(y)) == pytest.approx(np.cos(x).sum(), rel=1e-14)


def _scan_loss(x):
    rows = tf.scan(lambda a, e: a * e, x, initializer=tf.constant(0.5, tf.float64))
    return tf.reduce_sum(rows ** 2)


def scan_sines(x):
    rows = tf.scan(lambda a, e: a * e + tf.sin(a), x, initializer=tf.constant(0.5, tf.float64))
    return tf.reduce_sum(rows ** 2)


def grows_until(x):
    """A data-dependent while: its trip count depends on x; its stacks are read."""
    def body(i, s):
        return i + 1.0, s * 1.5 + tf.sin(s) * x

    _, s = tf.while_loop(lambda i, s: tf.reduce_sum(s) < 5.0, body, (x[0] * 0.0, x))
    return tf.reduce_sum(s ** 3)


def fori_sines_loss(x):
    return tf.reduce_sum(fori_sines(x) ** 2)


def while_in_scan(x):
    """A while_loop in a scan's body: tangents of stacks inside a loop's body."""
    def outer(a, e):
        def inner(c, s):
            return c + 1.0, tf.sin(s) * e + s

        return tf.while_loop(lambda c, s: c < 2.0, inner, (e * 0.0, a))[1] * e

    return tf.reduce_sum(tf.scan(outer, x, initializer=x[1]) ** 2)


def summed_sines(x):
    """A carry that starts with no tangent (a constant) and gets one from x."""
    trips = tf.cast(x[0] * 0 + 3, tf.int32)
    total = tf.fori_loop(0, trips, lambda i, t: t + tf.sin(x[i] * t + x[i]),
                         tf.constant(0.0, tf.float64))
    return total ** 2


LOOP_LOSSES = [_scan_loss, scan_sines, grows_until, fori_sines_loss, while_in_scan,
               summed_sines]


def _eager_hvp(f, x, v):
    """Forward over reverse on the eager tape: a ForwardAccumulator around a tape."""
    primal = tf.constant(x)
    with tf.autodiff.ForwardAccumulator(primal, tf.constant(v)) as acc:
        with tf.GradientTape() as tape:
            tape.watch(primal)
            y = f(primal)
        g = tape.gradient(y, primal)
    return acc.jvp(g).numpy()


def _check_second_order_through_loops(f, x, v):
    """hvp, jvp of grad and jacfwd of grad (each compiled) against the eager accumulator
    and central differences of the compiled gradient."""
    want = _eager_hvp(f, x, v)
    gradient, eps = tf.grad(f), 1e-6
    numeric = (np.asarray(gradient(x + eps * v)) - np.asarray(gradient(x - eps * v))) / (2 * eps)
    np.testing.assert_allclose(want, numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tf.hvp(f)(x, v), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(tf.jvp(gradient, (x,), (v,))[1]), want, rtol=1e-12,
                               atol=1e-14)
    np.testing.assert_allclose(tf.jacfwd(gradient)(x) @ v, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("f", LOOP_LOSSES)
def test_forward_over_reverse_through_a_compiled_loops_stacks(f, monkeypatch):
    """The reverse loop reads the forward loop's stacks; forward mode through it reads
    their tangents, stacked by the forward loop's JVP (a loop whose carries carry the
    tangents). It raised TracingError before (it had given a wrong hvp before that).
    Run as Python (JIT=0); Numba under bounds checks below."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    _check_second_order_through_loops(f, np.array([0.3, 0.2, 0.4]), np.array([1., -0.5, 0.25]))


@pytest.mark.slow
def test_forward_over_reverse_through_loops_compiled_with_bounds_checks(monkeypatch):
    """Numba kernels compiled with bounds checks: a tangent stack sized wrong would read
    past its end and raise IndexError."""
    import numba

    monkeypatch.setattr(numba.config, "BOUNDSCHECK", 1)
    monkeypatch.setenv("SRCXFORM_TIERED", "0")
    for f in (scan_sines, grows_until):
        _check_second_order_through_loops(f, np.array([0.3, 0.2, 0.4]),
                                          np.array([1., -0.5, 0.25]))


def _directional(x):
    """The derivative of grows_until along a fixed direction, by the eager jvp (traced
    inside a compiled function, it is a loop carrying tangents)."""
    return jvp(grows_until, (x,), (np.array([1., -0.5, 0.25]),))[1]


def test_reverse_over_forward_and_forward_over_forward_through_a_loop(monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    x, v = np.array([0.3, 0.2, 0.4]), np.array([1., -0.5, 0.25])
    want = _eager_hvp(grows_until, x, v)
    np.testing.assert_allclose(tf.grad(_directional)(x), want, rtol=1e-12)
    second = tf.jvp(_directional, (x,), (v,))[1]
    np.testing.assert_allclose(float(second), want @ v, rtol=1e-12)


def test_hvp_of_a_non_scalar_function_raises():
    with pytest.raises(TypeError, match="must return a scalar"):
        tf.hvp(lambda a: a ** 3)(np.array([0.5, 1.5]), np.ones(2))


def test_jvp_takes_an_unhashable_callable():
    from dataclasses import dataclass

    @dataclass
    class Model:  # a dataclass with eq defines no hash
        k: float

        def __call__(self, x):
            return tf.reduce_sum(x * x * self.k)

    value, tangent = tf.jvp(Model(2.0), (np.ones(2),), (np.ones(2),))
    assert (float(value), float(tangent)) == (4.0, 8.0)


# ----- jacobians: empty inputs, integer outputs, structured outputs, pickling -----


def moments(x):
    return tf.stack([tf.reduce_sum(x), tf.reduce_sum(x * x)])


@pytest.mark.parametrize("jacobian", [tf.jacfwd, tf.jacrev])
def test_the_jacobian_of_an_empty_input_is_empty(jacobian, monkeypatch):
    """JAX's result: shape out.shape + (0,), zeros; the kernel for non-empty inputs is
    still right after it."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    compiled = jacobian(moments)
    empty = compiled(np.zeros(0))
    assert empty.shape == (2, 0) and empty.dtype == np.float64
    x = np.array([1., 2., 3.])
    np.testing.assert_allclose(compiled(x), [np.ones(3), 2 * x])


def as_integers(x):
    return x, tf.cast(x * 10.0, tf.int32)


@pytest.mark.parametrize("jacobian", [tf.jacfwd, tf.jacrev])
def test_the_jacobian_of_an_integer_output_raises_naming_its_dtype(jacobian, monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    name = jacobian.__name__
    with pytest.raises(TypeError, match=rf"{name}: as_integers gives output 1 of dtype int32 "
                                        r"\(shape \(2,\)\); a Jacobian needs float outputs"):
        jacobian(as_integers)(np.ones(2))
    with pytest.raises(TypeError, match=rf"{name}: argument 0 must be a float array or a structure.*int64"):
        jacobian(moments)(np.ones(2, np.int64))


def pair(x):
    return {"scaled": x * x[::-1], "total": tf.reduce_sum(tf.sin(x))}, tf.exp(x[0])


@pytest.mark.parametrize("jacobian", [tf.jacfwd, tf.jacrev])
def test_the_jacobian_of_a_structured_output_has_its_structure(jacobian, monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    x = np.array([0.5, -1.0, 2.0])
    got = jacobian(pair)(x)
    assert isinstance(got, tuple) and set(got[0]) == {"scaled", "total"}
    flipped = np.eye(3)[::-1]
    np.testing.assert_allclose(got[0]["scaled"], np.diag(x[::-1]) + x[:, None] * flipped)
    np.testing.assert_allclose(got[0]["total"], np.cos(x))
    np.testing.assert_allclose(got[1], [np.exp(x[0]), 0., 0.])


@pytest.mark.parametrize("form", [tf.jacfwd, tf.jacrev, tf.hvp])
def test_jacobian_forms_pickle_with_plain_pickle(form, monkeypatch):
    """Pickled as what makes them again (the form and the importable function), never
    through cloudpickle."""
    import pickle

    monkeypatch.setenv("SRCXFORM_JIT", "0")
    compiled = form(rosen)
    payload = pickle.dumps(compiled)
    assert b"cloudpickle" not in payload
    again = pickle.loads(payload)
    x = np.array([1., 2., 3.])
    args = (x, np.ones(3)) if form is tf.hvp else (x,)
    np.testing.assert_allclose(again(*args), compiled(*args), rtol=1e-15)
