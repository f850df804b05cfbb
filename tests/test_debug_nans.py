"""debug_nans's rule (ad/nan_checks.py), eager and compiled alike: an op makes a NaN or an
inf element by element (reductions by result element), and a NaN or inf that an input
held, even one lost on the way (compared, or turned finite), is never blamed on a later op,
forward or in the gradient."""

import numpy as np
import pytest

import srcxform as tf

NAN, INF = np.nan, np.inf


@pytest.fixture(autouse=True)
def _checks_off_after():
    yield
    tf.debug_nans(False)


@pytest.fixture(autouse=True)
def _kernels_alone(monkeypatch):
    """Compiled calls run their kernel alone, not checked against the eager tape first
    (SRCXFORM_CHECK, which the suite sets): what raises is the kernel's own check."""
    monkeypatch.setenv("SRCXFORM_CHECK", "0")


def _verdict(call):
    """'ok', or the first line's start of the FloatingPointError: '<op> made a NaN'."""
    try:
        call()
    except FloatingPointError as err:
        return str(err).split(" at ")[0].split(" in the gradient")[0]
    return "ok"


def _eager_verdict(fn, x):
    with tf.debug_nans(True):
        return _verdict(lambda: fn(tf.constant(np.asarray(x, np.float64))))


def _compiled_verdict(fn, x):
    f = tf.differentiable(fn, wait=True)
    with tf.debug_nans(True):
        return _verdict(lambda: f(np.asarray(x, np.float64)))


# ----- one rule, eager and compiled: element by element -----


def _log_of_exp(x):
    return tf.math.log(tf.exp(x))


def _masked(x):
    return tf.where(x > 0.0, x, 0.0) / tf.where(x > 0.0, x, 0.0)


def _row_sums(x):
    return tf.reduce_sum(x, axis=1)


def _broadcast_sum(x):
    return x + tf.transpose(x)


_TABLE = [
    # (function, input, verdict)
    (lambda x: x / x, [NAN, 0.0], "divide made a NaN"),  # 0/0 beside a NaN: per element
    (lambda x: x / x, [NAN, 1.0], "ok"),  # the NaN only propagates
    (lambda x: x - x, [INF, 1.0], "subtract made a NaN"),  # inf - inf
    (lambda x: x * 0.0, [INF, 1.0], "multiply made a NaN"),  # inf * 0
    (lambda x: x * 2.0, [INF, -INF], "ok"),  # an inf that propagates
    (lambda x: x * 1e300, [1e300, NAN], "multiply made an inf"),  # overflow beside a NaN
    (tf.math.log, [NAN, 0.0], "log made an inf"),
    (tf.math.log, [-INF, 1.0], "log made a NaN"),
    (tf.sqrt, [NAN, 4.0], "ok"),
    (_log_of_exp, [-INF, 1.0], "ok"),  # exp(-inf) = 0 loses the inf: log(0) is not blamed
    (lambda x: tf.maximum(x, 0.0), [NAN, -INF], "ok"),
    (_masked, [NAN, 1.0], "ok"),  # the NaN compared: the 0/0 may be the NaN's
    (_masked, [-1.0, 1.0], "divide made a NaN"),
    (_row_sums, [[NAN, 1.0], [1e308, 1e308]], "reduce_sum made an inf"),  # row 1 overflows
    (_row_sums, [[NAN, 1.0], [INF, 1.0]], "ok"),
    (_row_sums, [[INF, -INF], [1.0, 1.0]], "reduce_sum made a NaN"),
    (tf.reduce_max, [NAN, 1.0, INF], "ok"),
    (_broadcast_sum, [[INF, -INF]], "add made a NaN"),  # inf + -inf where they broadcast
]


@pytest.mark.parametrize("fn, x, verdict", _TABLE)
def test_eager_and_compiled_agree_element_by_element(fn, x, verdict):
    assert _eager_verdict(fn, x) == verdict
    assert _compiled_verdict(fn, x) == verdict


# ----- no false alarm in a gradient: a NaN the input held is not the adjoint's -----


def _norm(x):
    return tf.norm(x)


def _softmax_first(x):
    return tf.nn.softmax(x)[0]


def _sorted_first(x):
    return tf.sort(x)[0]


def _clipped(x):
    return tf.reduce_sum(tf.clip_by_value(x, -1.0, 1.0))


_GRADIENTS = [tf.reduce_max, tf.reduce_min, tf.reduce_logsumexp, _norm, _softmax_first,
              _sorted_first, _clipped,
              lambda x: tf.reduce_sum(tf.maximum(x, 0.5)),
              lambda x: tf.reduce_sum(tf.minimum(x, 0.5)),
              lambda x: tf.reduce_sum(tf.where(x > 0.0, x * x, 0.0))]


def _gradients(fn, x):
    """(eager verdict, compiled verdict, eager gradient, compiled gradient) at x."""
    found = {}

    def eager():
        xt = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            y = fn(xt)
        found["eager"] = tape.gradient(y, xt).numpy()

    def compiled():
        found["compiled"] = tf.differentiable(fn, wait=True).grad(x)

    with tf.debug_nans(True):
        verdicts = _verdict(eager), _verdict(compiled)
    return verdicts + (found.get("eager"), found.get("compiled"))


@pytest.mark.slow  # a compile each: up to 30 s (sort) on a cold cache
@pytest.mark.parametrize("fn", _GRADIENTS)
def test_a_gradient_at_an_input_holding_a_nan_raises_nothing(fn):
    eager_verdict, compiled_verdict, eager, compiled = _gradients(fn, np.array([NAN, 1.0, 2.0]))
    assert (eager_verdict, compiled_verdict) == ("ok", "ok")
    np.testing.assert_allclose(compiled, eager, equal_nan=True)


@pytest.mark.slow
@pytest.mark.parametrize("fn", _GRADIENTS)
@pytest.mark.parametrize("x", [[1.0, INF, 2.0], [-INF, 1.0, 2.0]])
def test_a_gradient_at_an_input_holding_an_inf_is_judged_alike(fn, x):
    """An inf may make a NaN (inf - inf in softmax, 0 * inf under a where): eager and
    compiled name the same op, or both let it pass."""
    eager_verdict, compiled_verdict, eager, compiled = _gradients(fn, np.array(x))
    assert eager_verdict == compiled_verdict
    if eager_verdict == "ok":
        np.testing.assert_allclose(compiled, eager, equal_nan=True)


def _sqrt_sum(x):
    return tf.reduce_sum(tf.sqrt(x))  # sqrt line


def test_a_new_inf_in_a_gradient_beside_an_input_nan_is_still_caught():
    x = np.array([NAN, 0.0])  # element 0 propagates; element 1's gradient is 0.5 / 0
    with tf.debug_nans(True):
        xt = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            y = _sqrt_sum(xt)
        with pytest.raises(FloatingPointError, match="in the gradient of sqrt at .*sqrt line"):
            tape.gradient(y, xt)
        with pytest.raises(FloatingPointError, match="in the gradient of sqrt at .*sqrt line"):
            tf.differentiable(_sqrt_sum, wait=True).grad(x)


def test_the_reduce_max_gradient_at_a_nan_is_nan_and_quiet():
    f = tf.differentiable(tf.reduce_max, wait=True)
    with tf.debug_nans(True):
        g = f.grad(np.array([NAN, 1.0, 2.0]))
    assert np.isnan(g).all()


def test_a_checked_kernel_probes_once_and_scans_only_where_it_must():
    """The hot loop of a checked kernel tests one value an element where the others'
    NaNs show in it (rosenbrock's whole forward: its sum alone)."""
    def rosen(x):
        return tf.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    f = tf.differentiable(rosen, wait=True)
    x = np.linspace(-1.0, 1.0, 7)
    with tf.debug_nans(True):
        source = f.source(x)
        np.testing.assert_allclose(f.grad(x), tf.differentiable(rosen, wait=True).grad(x))
    forward = source.split("# ---- adjoint ----")[0]
    assert "nonfinite" not in forward.split("if not np.isfinite")[0]
    assert source.count("np.isnan(bx_i - bx_i)") == 1


# ----- checked kernels with nothing to probe, or an op outside every loop nest -----

def _constant_gradient(x):
    return tf.reduce_sum(x * 2.0)


def _one_by_one_product(y, x):
    return tf.reduce_sum(tf.matmul(y, x))


def _unused_first_argument(x, y):
    return tf.reduce_sum(tf.abs(y))


@pytest.mark.parametrize("jit", ["0", "1"])
@pytest.mark.parametrize("fn, args, grads", [
    (_constant_gradient, (np.array([1.0, 2.0]),), [[2.0, 2.0]]),
    (_one_by_one_product, (np.ones((1, 2)), np.ones((2, 1))), [[[1.0, 1.0]], [[1.0], [1.0]]]),
    (_unused_first_argument, (np.ones(3), np.array([1.0, -2.0, 3.0])),
     [[0.0, 0.0, 0.0], [1.0, -1.0, 1.0]]),
], ids=["constant gradient", "1x1 product", "unused argument"])
def test_checked_kernels_compile_where_a_nest_has_nothing_to_probe(fn, args, grads, jit,
                                                                   monkeypatch):
    """A nest whose values cannot become NaN wrote `if :` (a SyntaxError); an op outside
    every nest used runtime/arrays.py without importing it (a CompileError)."""
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    f = tf.differentiable(fn, wrt=tuple(range(len(args))), wait=True)
    with tf.debug_nans(True):
        value, got = f.value_and_grad(*args)
        assert float(value) == float(f(*args)) == float(fn(*map(tf.constant, args)))
        for g, want in zip(got, grads):
            np.testing.assert_array_equal(g, want)
        for g, want in zip(f.grad(*args), grads):
            np.testing.assert_array_equal(g, want)
