"""debug_nans's rule (ad/nan_checks.py), eager and compiled alike: an op makes a NaN or an
inf element by element (reductions by result element), and a NaN or inf that an input
held, even one lost on the way (compared, or turned finite), is never blamed on a later op,
forward or in the gradient."""

import inspect

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
    # where() copies its literal 1 in place of the inf: it loses nothing, log(0) is blamed
    (lambda x: tf.math.log(tf.where(x > 0.0, 1, x) - 1.0), [INF, 2.0], "log made an inf"),
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


# ----- the op named: the first in program order, and only values that reach a result -----


@pytest.fixture
def _plain_python(monkeypatch):
    """Kernels as plain Python (SRCXFORM_JIT=0): the same generated checks, without
    Numba's compile of each form (minutes on two cores)."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")


def _named(call):
    """'ok', or the error's op, what it made, forward/adjoint and line, without the hint:
    '<op> made a NaN [in the gradient of <op>] at <file>:<line>: <source>'."""
    try:
        call()
    except FloatingPointError as err:
        return str(err).split("\n")[0].split(" (debug_nans")[0].rstrip()
    return "ok"


def _eager_named(fn, args):
    """(the forward's verdict, the tape's gradient's verdict), eagerly."""
    tensors = [tf.constant(a) for a in args]

    def gradient():
        with tf.GradientTape() as tape:
            tape.watch(tensors)
            y = fn(*tensors)
        tape.gradient(y, tensors)

    return _named(lambda: fn(*tensors)), _named(gradient)


def _compiled_named(fn, args):
    """(f's verdict, value_and_grad's verdict), compiled."""
    f = tf.differentiable(fn, wrt=tuple(range(len(args))), wait=True)
    return _named(lambda: f(*args)), _named(lambda: f.value_and_grad(*args))


def _sum_before_product(x, z):
    v0 = z + x
    v1 = v0 + v0  # overflows first
    v2 = v1 * tf.reduce_prod(v0, axis=0, keepdims=True)  # its nest is scheduled first
    return tf.reduce_sum(v2)


def _two_gradients(x, z):
    v0 = z * tf.reduce_prod(x, axis=0, keepdims=True)
    v1 = v0 * tf.reduce_prod(v0, axis=0, keepdims=True)  # second in the reverse sweep
    return tf.reduce_max(v1 * x)  # its gradient: 0 * inf, first in the reverse sweep


def _half(x):
    v = 0.5 * x  # d/d(0.5) = x * 1.9 overflows at x = 1e308; nobody asks for it
    return tf.reduce_sum(v * 1.9)


def _inf_products(a, b):
    return tf.reduce_sum(tf.matmul(a, b))  # inf * 1 + -inf * 1: BLAS may give -inf


def _over_zero(x):
    return tf.reduce_sum(x / 0.0)  # its gradient 1 / 0.0: a constant a kernel does not fold


@tf.custom_gradient
def _unit_scale(v):
    def grad(up):
        return up / v

    return v * 1.0, grad


def _custom_divided(x):
    return tf.reduce_sum(_unit_scale(x))  # its gradient divides by x: named at this line


def _at(fn, head, text):
    """The verdict `head` at fn's line holding `text`, as _named gives it."""
    lines, first = inspect.getsourcelines(fn)
    number = first + next(k for k, line in enumerate(lines) if text in line)
    return f"{head} at test_debug_nans.py:{number}: {lines[number - first].strip()}"


@pytest.mark.parametrize("fn, args, forward, gradient", [
    # A kernel runs the reduce_prod's nest before the add's: the add is named, as eagerly.
    (_sum_before_product, ([[1.0, -2.0], [1.0, 1.0]], [[1e308, 1.0], [1.0, 1.0]]),
     ("add made an inf", "v1 = v0 + v0"), None),
    # Two adjoint ops: the one the reverse sweep meets first (the later line's gradient).
    (_two_gradients, ([[2.0, 0.5], [-1.0, INF]], [[1.0, 2.0], [3.0, -1.0]]), "ok",
     ("multiply made a NaN in the gradient of multiply", "v1 * x")),
    # A VJP computes a literal operand's cotangent too: it is not judged.
    (_half, ([1e308],), "ok", "ok"),
    # A matmul of non-finite inputs is judged as a whole: not blamed (loop and BLAS differ).
    (_inf_products, ([[INF, -INF]], [[1.0], [1.0]]), "ok", "ok"),
    (_inf_products, ([[1e200, 1.0]], [[1e200], [1.0]]), ("matmul made an inf", "matmul"),
     None),
    (_over_zero, ([NAN, NAN],), "ok", ("divide made an inf in the gradient of divide", "/")),
    # A custom_gradient's gradient is named at the call, not at the line inside it.
    (_custom_divided, ([0.0, 2.0],), "ok",
     ("divide made an inf in the gradient of custom_gradient", "_unit_scale(x)")),
], ids=["forward order", "adjoint order", "literal's cotangent", "matmul of infs",
        "matmul overflow", "a constant inf", "custom_gradient"])
@pytest.mark.usefixtures("_plain_python")
def test_eager_and_compiled_name_the_same_op_and_line(fn, args, forward, gradient):
    """Forward before adjoint, each in program order (a kernel's schedule differs), and
    only values that reach a result: eagerly and compiled alike. None: as the forward."""
    want = tuple(v if v == "ok" else _at(fn, *v) for v in (forward, gradient or forward))
    args = [np.array(a, np.float64) for a in args]
    with tf.debug_nans(True):
        assert _eager_named(fn, args) == want
        assert _compiled_named(fn, args) == want


def _product(x):
    return tf.reduce_prod(x)


@pytest.mark.parametrize("x, want", [
    ([3.0, 1.0, INF], [INF, INF, 3.0]),  # 0 * inf in a branch where() does not take
    ([0.0, 2.0], [2.0, 0.0]),  # 0 * inf of a sign: in no branch taken either
    ([0.0, 0.0, 2.0], [0.0, 0.0, 0.0]),
    ([-INF, 2.0], [2.0, -INF]),
])
@pytest.mark.usefixtures("_plain_python")
def test_the_product_gradient_judges_only_the_branch_it_takes(x, want):
    """reduce_prod's VJP sets zeros and infs apart with where(): its branches not taken
    make no NaN for debug_nans to blame, eagerly or compiled."""
    x = np.array(x)
    with tf.debug_nans(True):
        eager, compiled = _gradients(_product, x)[2:]
    np.testing.assert_array_equal(eager, want)
    np.testing.assert_array_equal(compiled, want)


def _unused_log(x):
    tf.math.log(x - 5.0)  # computed eagerly; a kernel computes nothing nobody reads
    return tf.reduce_sum(x)


@pytest.mark.usefixtures("_plain_python")
def test_an_unused_value_is_checked_eagerly_only():
    """The README's rule: a kernel checks the values its results are computed from."""
    x = np.array([1.0, 2.0])
    with tf.debug_nans(True):
        assert _eager_named(_unused_log, [x]) == (_at(_unused_log, "log made a NaN", "math.log"),) * 2
        assert _compiled_named(_unused_log, [x]) == ("ok", "ok")


def _matmul_then_sum(x, b, w):  # the product overflows: 1e308 + 1e308
    h = x + b
    m = tf.matmul(h, w)
    return tf.reduce_sum(m)


def test_grad_names_a_forward_op_its_own_kernel_would_drop(_plain_python):
    # The gradient's kernel does not compute m (its gradient is w's rows), so it could
    # only name an op of the gradient; with the checks on, f.grad runs value_and_grad's.
    args = (np.ones((2, 3)), np.zeros(3), np.array([[1e308], [1e308], [-1e308]]))
    line = inspect.getsourcelines(_matmul_then_sum)[1] + 2
    want = f"matmul made an inf at test_debug_nans.py:{line}: m = tf.matmul(h, w)"
    f = tf.differentiable(_matmul_then_sum, wrt=(0, 1, 2), wait=True)
    with tf.debug_nans(True):
        assert _eager_named(_matmul_then_sum, args) == (want, want)
        assert _named(lambda: f.grad(*args)) == want
    np.testing.assert_array_equal(f.grad(*args)[0], np.tile(args[2].T, (2, 1)))  # ones @ w.T


def test_debug_nans_takes_a_bool_only():
    for wrong in ("yes", None, "false"):  # each was taken by its truth
        with pytest.raises(TypeError, match="enable must be True or False"):
            tf.debug_nans(wrong)
    with tf.debug_nans(np.bool_(True)), pytest.raises(FloatingPointError):
        tf.math.log(tf.constant([0.0, -1.0]))


def _power_sum(x):
    y = x + 0.0
    z = y ** 1.5  # its second derivative is inf at 0
    return tf.reduce_sum(z)


def test_a_hessian_names_the_line_of_the_op_not_the_call():
    # hessian (jacfwd of grad) named the line that called it (helper 84).
    line = _at(_power_sum, "pow made an inf", "y ** 1.5")
    with tf.debug_nans(True):
        for second_order in (tf.hessian(_power_sum), tf.jacfwd(tf.grad(_power_sum))):
            assert _named(lambda f=second_order: f(np.array([0.0, 1.0]))) == line
        # jacrev of the gradient named "an unknown line" (helper 86)
        reverse = _named(lambda: tf.jacrev(tf.grad(_power_sum))(np.array([0.0, 1.0])))
        assert reverse.endswith(line.split(" at ", 1)[1])
