"""srcxform behaves as TensorFlow 2.x (issue 18, the rest): reciprocal and the gradients
that use it, integer division by zero in compiled code, Python ints out of a dtype's range.

Each expected value, dtype and exception kind is TensorFlow's (2.21, NumPy 2), or, where the
README documents a difference, srcxform's documented behaviour, named so.
"""

import numpy as np
import pytest
from helpers import assert_tensor_equal as _eq
from helpers import value_and_two_orders

import srcxform as tf
from srcxform.testing import check_grads

# ----- reciprocal, and log's and log1p's gradients through it -----

EDGES = np.float32([0.0, 1.0, -1.0, 2.0, np.inf, np.nan])


def test_reciprocal_and_its_derivatives_at_the_edges():
    y, g, gg = value_and_two_orders(tf.math.reciprocal, EDGES)
    _eq(y, np.float32([np.inf, 1.0, -1.0, 0.5, 0.0, np.nan]), tf.float32)
    _eq(g, np.float32([-np.inf, -1.0, -1.0, -0.25, -0.0, np.nan]))
    _eq(gg, np.float32([np.inf, 2.0, -2.0, 0.25, 0.0, np.nan]))
    _eq(tf.math.reciprocal(2.0), 0.5, tf.float32)
    _eq(tf.math.reciprocal(tf.constant([4.0], tf.float64)), [0.25], tf.float64)


def test_reciprocal_gradient_is_zero_where_the_upstream_gradient_is():
    # TensorFlow's ReciprocalGrad kernel returns 0 for a zero upstream gradient, even where
    # 1/x is inf or NaN; the gradient of that gradient has no such rule.
    _, g, gg = value_and_two_orders(tf.math.reciprocal, EDGES, tf.zeros([6]))
    _eq(g, np.zeros(6, np.float32))
    _eq(gg, np.float32([np.nan, 0.0, 0.0, 0.0, 0.0, np.nan]))
    _, g, _ = value_and_two_orders(lambda x: tf.where(x > 0, tf.math.reciprocal(x), 0.0), [0.0, 1.0, -1.0])
    _eq(g, [0.0, -1.0, 0.0])


def test_reciprocal_of_integers_raises():
    # TensorFlow has no integer kernel (NotFoundError); srcxform raises TypeError, as for
    # the other float functions.
    with pytest.raises(TypeError, match="float"):
        tf.math.reciprocal(tf.constant([1, 2]))


def test_log_second_derivative_is_zero_where_a_where_masks_it():
    # TensorFlow's log gradient is grad * reciprocal(x): its own gradient at x = 0, masked
    # out by the where, is 0, not NaN (g / x would give NaN).
    _, g, gg = value_and_two_orders(lambda x: tf.where(x > 0, tf.math.log(x), 0.0), [0.0, 1.0, -1.0, 2.0])
    _eq(g, [np.nan, 1.0, 0.0, 0.5])
    _eq(gg, [0.0, -1.0, 0.0, -0.25])
    _, g, gg = value_and_two_orders(tf.math.log, [0.0, 1.0, -1.0, 2.0])
    _eq(g, [np.inf, 1.0, -1.0, 0.5])
    _eq(gg, [-np.inf, -1.0, -1.0, -0.25])


def test_log1p_second_derivative_is_zero_where_a_where_masks_it():
    f = lambda x: tf.where(x > -1, tf.math.log1p(x), 0.0)
    _, g, gg = value_and_two_orders(f, [0.0, 1.0, -1.0, 2.0])
    _eq(g, np.float32([1.0, 0.5, np.nan, 1 / 3]))
    np.testing.assert_allclose(gg.numpy(), [-1.0, -0.25, 0.0, -1 / 9], rtol=1e-6)


def test_reciprocal_and_log_second_order_compiled_match_eager():
    def f(x, w):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum((tf.math.reciprocal(x) + tf.math.log(x) + tf.math.log1p(x)) * w)
        return tf.reduce_sum(tape.gradient(y, x) * x)

    check_grads(f, [np.array([1.5, 0.4, 2.0]), np.array([0.0, 1.5, -2.0])], order=1)


# ----- integer division by zero, compiled -----


def _divisions(a, b):
    return a % b, a // b, (a[0] // b[1]) % b[2]


@pytest.mark.parametrize("parallel", [False, True])
def test_compiled_integer_division_by_zero_raises_as_eager(parallel):
    # TensorFlow raises InvalidArgumentError ("Integer division by zero"); so does eager
    # srcxform, and compiled code, where Numba's error_model="numpy" would give 0 (and
    # where a prange would drop the exception).
    f = tf.differentiable(_divisions, wrt=(), parallel=parallel)
    a = np.array([7, -7, 5, 9], np.int32)
    got = f(a, np.array([2, 3, -4, 1], np.int32))
    for q, want in zip(got, ([1, 2, -3, 0], [3, -3, -2, 9], -2)):
        np.testing.assert_array_equal(np.asarray(q), want)
    for divisor, which in (([2, 3, 4, 0], "mod"), ([2, 0, 4, 1], ""), ([0, 3, 4, 1], ""),
                           ([2, 3, 0, 1], "")):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=f"{which}: integer division by zero"):
            f(a, np.array(divisor, np.int32))
        with pytest.raises(ZeroDivisionError, match=f"{which}: integer division by zero"):
            _divisions(tf.constant(a), tf.constant(divisor, tf.int32))


@pytest.mark.parametrize("parallel", [False, True])
def test_an_integer_to_a_negative_power_raises_compiled_as_eagerly(parallel):
    """NumPy and TensorFlow raise; Numba's integer x ** y gave 0 (helper 70)."""
    f = tf.differentiable(lambda a, b: (a ** b, a ** -1 if b.shape[0] > 3 else a), wrt=(),
                          parallel=parallel)
    a = np.array([7, -2, 5], np.int64)
    np.testing.assert_array_equal(np.asarray(f(a, np.array([2, 3, 0]))[0]), [49, -8, 1])
    big = np.array([65537, 10**9 + 7, 64])  # past 65536 Numba's ** went through floats
    np.testing.assert_array_equal(np.asarray(f(a, big)[0]), a ** big)  # wrapped, as NumPy
    for exponent in ([2, -1, 0], [-3, 1, 1]):
        with pytest.raises(ValueError, match="pow: integers to negative integer powers"):
            f(a, np.array(exponent))
        with pytest.raises(tf.errors.InvalidArgumentError, match="negative integer powers"):
            tf.constant(a) ** tf.constant(exponent, tf.int64)
    with pytest.raises(ValueError, match="negative integer powers"):
        f(np.arange(4), np.arange(4))
    np.testing.assert_array_equal(np.asarray(f(a.astype(float), np.array([-1.0] * 3))[0]),
                                  1 / a)


def test_compiled_float_division_is_not_checked():
    f = tf.differentiable(lambda a, b: (np.floor_divide(a, b), a % b), wrt=())
    x = np.array([1.0, -1.0, 2.0])
    code = [line for line in f.source(x, x).splitlines() if not line.strip().startswith("#")]
    assert not any("arrays.floordiv" in line or "arrays.mod" in line for line in code)
    assert any("] // " in line for line in code) and any("np.fmod(" in line for line in code)
    floor, mod = f(x, np.array([0.0, 0.0, 4.0]))
    np.testing.assert_array_equal(np.asarray(floor), [np.inf, -np.inf, 0.0])
    np.testing.assert_array_equal(np.asarray(mod), [np.nan, np.nan, 2.0])


# ----- Python ints out of an int32's range -----


def test_python_ints_alone_become_int64_where_int32_cannot_hold_them():
    _eq(tf.fill([2], 2**40), [2**40, 2**40], tf.int64)
    _eq(tf.fill([2], 2**31), [2**31, 2**31], tf.int64)
    _eq(tf.fill([2], -2**31), [-2**31, -2**31], tf.int32)
    _eq(tf.range(2**31 - 1, 2**31 + 1), [2**31 - 1, 2**31], tf.int64)
    _eq(tf.add(2**31, 0), 2**31, tf.int64)
    _eq(tf.add(2**31 - 1, 0), 2**31 - 1, tf.int32)
    _eq(tf.constant(2**40) + 1, 2**40 + 1, tf.int64)


def test_python_int_beyond_int64_raises_value_error():
    for make in (lambda: tf.constant(2**63), lambda: tf.constant([1], tf.int64) + 2**63,
                 lambda: tf.constant([1], tf.int32) - (-2**63 - 1),
                 lambda: tf.constant(2**70), lambda: tf.constant([1, -2**80], tf.int64)):
        with pytest.raises(ValueError, match="does not fit in int64"):
            make()
    # A float dtype takes them, as TensorFlow's (a TypeError of dtype object before).
    _eq(tf.constant([1, 2**70], tf.float64), [1.0, 2.0**70], tf.float64)
    _eq(tf.constant([2**70, 1.5]), [2.0**70, 1.5], tf.float32)  # a float among them
    _eq(tf.constant([1, 2**63], tf.uint64), [1, 2**63], tf.uint64)  # uint64 holds them
    for misfit, message in ((lambda: tf.constant([-1, 2**63], tf.uint64), "-1 does not fit"),
                            (lambda: tf.constant([1.0, 2**1100]), "does not fit in float64")):
        with pytest.raises(ValueError, match=message):  # an OverflowError before
            misfit()
    # In a list NumPy made them floats: [1, 2**63] was a float32 tensor (helper 80).
    for make in (lambda: tf.constant([1, 2**63]), lambda: tf.Variable([-1, 2**64 - 1]),
                 lambda: tf.constant([1, 1], tf.int64) + [1, 2**63],
                 lambda: tf.constant([1, 2**63], tf.int64)):
        with pytest.raises(ValueError, match="does not fit in int64"):
            make()


def test_documented_python_int_out_of_an_int_tensors_range_raises():
    # README "Differences": TensorFlow wraps such an int silently (int32 [1] + 2**40 is
    # [1], a + 2**31 is [-2147483647], tf.stack([a[0], 2**40]) is [1, 0]); srcxform raises.
    a = tf.constant([1], tf.int32)
    for op in (lambda: a + 2**40, lambda: 2**31 * a, lambda: a == 2**32,
               lambda: tf.maximum(a, -2**31 - 1), lambda: tf.where(a > 0, a, 2**40),
               lambda: tf.stack([a[0], 2**40]), lambda: a // 2**40):
        with pytest.raises(TypeError, match=r"the Python int -?\d+ does not fit in int32"):
            op()
    for convert in (lambda: tf.constant(2**31, tf.int32), lambda: tf.Variable(1).assign(2**31)):
        with pytest.raises(TypeError, match="2147483648 does not fit in int32"):
            convert()
    _eq(tf.multiply(2**20, 2**20), 2**40, tf.int64)  # computed exactly (TensorFlow: int32 0)
    _eq(a + (2**31 - 1), [-2**31], tf.int32)  # fits: int32 arithmetic wraps, as in both
    _eq(tf.constant([1], tf.int64) + 2**40, [2**40 + 1], tf.int64)
    _eq(tf.constant([1.0]) + 2**40, [2.0**40], tf.float32)
    f = tf.differentiable(lambda x: tf.reduce_sum(tf.cast(tf.cast(x, tf.int32) + 2**40, x.dtype)))
    with pytest.raises(TypeError, match="does not fit in int32"):
        f(np.array([1.0]))


def test_a_python_int_computed_at_run_time_is_checked_where_it_meets_an_int_tensor():
    # A loop's Python int carry is known only when the kernel runs: where it meets a
    # narrower integer tensor, compiled code checks it as eager does, not wrapping it.
    def f(x, m, u):
        k = 1
        while x > 0:
            k, x = k * 4, x - 1
        return k + m, k > m, (k - 5) * u

    g = tf.differentiable(f, wrt=())
    m, u = np.array([1, -2], np.int32), np.array([3], np.uint8)
    for n in (2.0, 3.0):
        args = (np.float64(n), m, u)
        for got, want in zip(g(*args), f(*map(tf.constant, args))):
            assert got.dtype == want.dtype and np.array_equal(got, want.numpy())
    for n, misfit in ((16.0, "4294967296 does not fit in int32"),  # 4**16 + m
                      (1.0, "-1 does not fit in uint8")):          # (4**1 - 5) * u
        for run in (g, lambda *a: f(*map(tf.constant, a))):
            with pytest.raises(TypeError, match=f"the Python int {misfit}, the dtype it "):
                run(np.float64(n), m, u)


def _doubled(n, k=1):
    while n > 0:
        k, n = k * 2, n - 1
    return k


@pytest.mark.parametrize("parallel", [False, True])
def test_a_run_time_python_int_is_checked_in_every_op_that_meets_it(parallel):
    # stack, concat and where (before: only elementwise operands, in codegen), and in a
    # loop over lanes: under parallel=True the check must keep the loop serial (helper 80).
    ops = [lambda n, m: tf.stack([m[0], _doubled(n)]),
           lambda n, m: tf.concat([m, tf.reshape(_doubled(n), [1])], 0),
           lambda n, m: tf.where(m > 0, m, _doubled(n)),
           lambda n, m: tf.vmap(lambda r: tf.fori_loop(0, 2, lambda i, a: a + _doubled(n),
                                                       r))(tf.stack([m, m]))]
    m = np.array([1, 2], np.int8)
    for op in ops:
        f = tf.differentiable(op, wrt=(), parallel=parallel)
        np.testing.assert_array_equal(np.asarray(f(np.float64(5.0), m)),
                                      np.asarray(op(tf.constant(5.0), tf.constant(m))))
        for run in (f, lambda n, m, op=op: op(tf.constant(n), tf.constant(m))):
            with pytest.raises(TypeError, match="the Python int 128 does not fit in int8"):
                run(np.float64(7.0), m)
    # An index is not an operand the int meets: gather's row 200 of an int16 table.
    assert int(tf.gather(tf.constant(np.arange(300, dtype=np.int16)), 200)) == 200


def test_a_run_time_python_int_converted_to_a_narrow_dtype_is_checked():
    # tf.constant(k, tf.int8) and the like cast a loop's Python int: 128 became -128
    # compiled where eager raises (helper 83); one_hot, pad and range wrapped eagerly too.
    v, w = tf.Variable(np.int8(0)), tf.Variable(np.zeros(1, np.int8))
    converts = [lambda n: tf.constant(_doubled(n), tf.int8),
                lambda n: tf.convert_to_tensor(_doubled(n), dtype=tf.int8),
                lambda n: tf.constant([_doubled(n), 1], dtype=tf.int8),
                lambda n: v.assign(_doubled(n)).read_value() * 1,
                lambda n: tf.one_hot([0], 2, on_value=_doubled(n), dtype=tf.int8),
                lambda n: tf.pad(tf.constant([1], tf.int8), [[1, 0]],
                                 constant_values=_doubled(n)),
                lambda n: tf.tensor_scatter_nd_update(tf.constant([1, 2], tf.int8), [[0]],
                                                      [_doubled(n)]),
                lambda n: w.assign([_doubled(n)]).read_value() * 1]  # a list too
    for convert in converts:
        f = tf.differentiable(convert, wrt=())
        np.testing.assert_array_equal(np.asarray(f(np.float64(6.0))),
                                      np.asarray(convert(tf.constant(6.0))))
        for run in (f, lambda n, convert=convert: convert(tf.constant(n))):
            with pytest.raises(TypeError, match="128 does not fit in int8"):
                run(np.float64(7.0))
    for wraps in (lambda: tf.one_hot([0], 2, off_value=-1, dtype=tf.uint8),
                  lambda: tf.range(0, 300, 100, dtype=tf.int8)):
        with pytest.raises(TypeError, match="does not fit in u?int8"):
            wraps()


def test_a_run_time_python_int_on_its_own_is_int64_not_wrapped_int32():
    # fill, stack and a list of a loop's Python int settled to int32 and wrapped 2**31
    # compiled (helper 84); eagerly its number picks int32 or int64. A float beside it
    # makes the list float32, as eagerly (it was int32 [8, 1]).
    ops = [lambda n: tf.fill([2], _doubled(n)),  # a lambda a line: autograph converts it
           lambda n: tf.stack([_doubled(n), 1]),
           lambda n: tf.constant([_doubled(n), 1]),
           lambda n: tf.constant([_doubled(n), np.float32(1.5)]),
           lambda n: tf.constant([[0.5], [_doubled(n)]])]
    for op in ops:
        got = tf.differentiable(op, wrt=())(np.float64(31.0))
        want = op(tf.constant(31.0))
        np.testing.assert_array_equal(np.asarray(got), want.numpy())
        assert got.dtype == want.dtype or (got.dtype, want.dtype) == (tf.int64, tf.int32)


def test_floats_and_ints_into_other_dtypes_as_tensorflow_converts_them():
    # A float into an int dtype raises, as tf.constant(1.5, tf.int8) does (range, one_hot
    # and pad truncated it); uint64 takes no float beside an int past int64 (helper 84).
    for convert in (lambda: tf.range(0, 3, 0.5, dtype=tf.int32),
                    lambda: tf.one_hot([0], 2, on_value=1.5, dtype=tf.int8),
                    lambda: tf.pad(tf.constant([1], tf.int8), [[1, 0]], constant_values=1.5),
                    lambda: tf.constant([2**63, 0.5], tf.uint64),
                    lambda: tf.constant([2**63, float("nan")], tf.uint64)):
        with pytest.raises(TypeError, match="cannot convert a float value"):
            convert()
    _eq(tf.constant([2**63, np.float32(1.5)]), [2.0**63, 1.5], tf.float32)
    # A bool tensor pads with False by default, and in REFLECT mode (both raised, helper 86).
    _eq(tf.pad(tf.constant([True]), [[1, 0]]), [False, True], tf.bool)
    _eq(tf.pad(tf.constant([True, False]), [[1, 0]], mode="REFLECT"), [False, True, False],
        tf.bool)


# ----- a Python bool beside a numeric tensor -----


def test_python_bool_beside_a_numeric_tensor_is_a_number():
    a, x = tf.constant([1, 2]), tf.constant([1.0, 2.0])
    _eq(a + True, [2, 3], tf.int32)
    _eq(True + a, [2, 3], tf.int32)
    _eq(x * False, [0.0, 0.0], tf.float32)
    _eq(a & True, [1, 0], tf.int32)
    _eq(tf.maximum(a, True), [1, 2], tf.int32)
    _eq(tf.where(tf.constant([True, False]), x, True), [1.0, 1.0], tf.float32)
    # Bools alone, or a bool tensor, keep their kind: TensorFlow raises for each.
    for op in (lambda: tf.constant([True]) + True, lambda: tf.add(True, 1),
               lambda: tf.constant([True]) & 1, lambda: tf.sqrt(2)):
        with pytest.raises(TypeError):
            op()
    f = tf.differentiable(lambda x, i: tf.reduce_sum(x * tf.cast(i + True, x.dtype)))
    value, grad = f.value_and_grad(np.array([1.0, 2.0]), np.array([1, 2], np.int32))
    assert float(value) == 8.0
    np.testing.assert_array_equal(np.asarray(grad), [2.0, 3.0])


# ----- reduce_prod's gradient at infinities and NaNs -----


PROD_CASES = {  # TensorFlow's gradient (the product of the other elements) for each
    (np.inf, 2.0, 3.0): [6.0, np.inf, np.inf],
    (-np.inf, 2.0, 0.0): [0.0, np.nan, -np.inf],
    (np.inf, -np.inf, 2.0): [-np.inf, np.inf, -np.inf],
    (np.inf, 0.0, 0.0): [0.0, np.nan, np.nan],
    (np.nan, 2.0, 3.0): [6.0, np.nan, np.nan],
    (np.nan, np.inf, 1.0): [np.inf, np.nan, np.nan],
    (0.0, np.inf, np.inf): [np.inf, np.nan, np.nan],
    (-np.inf, -np.inf, -np.inf): [np.inf, np.inf, np.inf],
    (0.0, 0.0, 3.0): [0.0, 0.0, 0.0],
}


def test_reduce_prod_gradient_is_the_product_of_the_others_at_inf_and_nan():
    for x, want in PROD_CASES.items():
        _eq(value_and_two_orders(tf.reduce_prod, np.float32(x))[1], np.float32(want))
    # A reduction over one element (or none) passes the gradient on: 1 / inf is not 0/0.
    _eq(value_and_two_orders(tf.reduce_prod, np.float32([np.inf]))[1], [1.0])
    _eq(value_and_two_orders(lambda x: tf.reduce_prod(x, axis=0), np.float32([[np.inf, 2.0]]))[1],
        [[1.0, 1.0]])
    grad = tf.differentiable(tf.reduce_prod).grad
    for x, want in PROD_CASES.items():
        np.testing.assert_array_equal(np.asarray(grad(np.array(x))), want)


# ----- signed zeros, as TensorFlow's kernels give them -----


def _signs(t):
    return np.signbit(np.asarray(t)).tolist()


def test_signed_zeros_of_maximum_minimum_relu_and_mod_are_tensorflows():
    # NumPy differs in each: np.maximum(-0., 0.) is 0., np.mod(-0., 3.) is 0.; the sign
    # shows in 1 / x (the differential test found it so).
    z, o = tf.constant([-0.0, 0.0, np.nan, 1.0]), tf.constant([0.0, -0.0, 1.0, np.nan])
    for got in (tf.maximum(z, o), tf.minimum(z, o)):
        _eq(got, np.float32([0.0, 0.0, np.nan, np.nan]))
        assert _signs(got)[:2] == [True, False]
    assert _signs(tf.nn.relu(z))[:2] == [True, False]
    _eq(tf.nn.relu(z), np.float32([0.0, 0.0, np.nan, 1.0]))
    assert _signs(tf.clip_by_value(tf.constant([-0.0]), 0.0, 1.0)) == [True]
    # C's pow(-0., 0.5) is 0. (NumPy takes ** 0.5 as sqrt, which keeps -0.).
    _eq(tf.constant([-0.0, -np.inf, 4.0]) ** 0.5, [0.0, np.inf, 2.0])
    assert _signs(tf.constant([-0.0]) ** 0.5) == [False]
    x = tf.constant([-0.0, -3.0, 3.0, 0.0, -1.0, 5.5, 7.0, -7.0])
    y = tf.constant([3.0, 3.0, -3.0, -3.0, np.inf, -np.inf, 0.0, 2.5])
    got = x % y
    _eq(got, np.float32([0.0, 0.0, 0.0, 0.0, np.inf, -np.inf, np.nan, 0.5]))
    assert _signs(got)[:4] == [True, True, False, False]
    f = tf.differentiable(lambda a, b: (tf.maximum(a, b), tf.nn.relu(a), a % b), wrt=())
    for compiled, eager in zip(f(x.numpy(), y.numpy()),
                               (tf.maximum(x, y), tf.nn.relu(x), x % y)):
        np.testing.assert_array_equal(np.asarray(compiled), eager.numpy())
        assert _signs(compiled) == _signs(eager)


def _summed_rows(x):
    s = tf.zeros_like(x[0])
    for i in tf.range(tf.shape(x)[0]):  # a traced bound: one loop for every size
        s = s + x[i] * tf.cast(i + 1, x.dtype)
    return tf.reduce_sum(s * s)


def _summed_static(x):
    s = tf.zeros_like(x[0])
    for i in tf.range(1, 3):  # Python ints: its steps are scalar int32 tensors, as in TF
        assert isinstance(i, tf.Tensor) and i.dtype == tf.int32
        s = s + x[i]
    return tf.reduce_sum(s)


@pytest.mark.parametrize("jit", ["0", pytest.param("1", marks=pytest.mark.slow)])
def test_a_for_over_tf_range_of_a_traced_bound_compiles_to_one_loop(jit, monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", jit)  # "0": the generated code run as Python
    f = tf.differentiable(_summed_rows, wait=True)
    for rows in (3, 5):
        x = np.arange(2.0 * rows).reshape(rows, 2)
        weights = np.arange(1.0, rows + 1)[:, None]
        s = (x * weights).sum(axis=0)
        value, grad = f.value_and_grad(x)
        assert float(value) == float(_summed_rows(tf.constant(x))) == (s * s).sum()
        np.testing.assert_array_equal(grad, 2 * s * weights)
    assert "for " in f.source(x)  # a loop in the kernel, not rows unrolled
    g = tf.differentiable(_summed_static, wait=True)
    x = np.arange(6.0).reshape(3, 2)
    assert float(g(x)) == float(_summed_static(tf.constant(x))) == 2 + 3 + 4 + 5


def _indexed_by_a_traced_row(x):
    k = tf.constant(0)  # int32: tf.range's index is int32, compiled as eagerly
    s = tf.zeros((), x.dtype)
    for i in tf.range(tf.shape(x)[0]):
        k = k + i
        s = s + x[i, 1] * tf.cast(i, x.dtype)  # a traced index beside an int
    return s * tf.cast(k, x.dtype)


def test_a_tf_range_index_is_int32_and_indexes_beside_ints(monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")  # the generated code as Python: no compile
    x = np.arange(8.0).reshape(4, 2)
    rows = np.arange(4.0)
    want = (x[:, 1] * rows).sum() * rows.sum()
    assert float(_indexed_by_a_traced_row(tf.constant(x))) == want
    value, grad = tf.differentiable(_indexed_by_a_traced_row, wait=True).value_and_grad(x)
    assert float(value) == want
    np.testing.assert_array_equal(grad, np.stack([0 * rows, rows * rows.sum()], axis=1))


@pytest.mark.parametrize("num", [0, 1, 2, 3, 7])
def test_linspace_values_are_numpys_in_float64_with_float32_arithmetic_in_float32(num):
    got = tf.linspace(tf.constant([0.1, 1.0], tf.float64), [1.0, 5.0], num, axis=-1)
    want = np.linspace([0.1, 1.0], [1.0, 5.0], num, axis=-1)
    assert got.dtype == tf.float64 and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)
    single = tf.linspace(0.3, 2.9, num)  # float32, computed in float32 as TensorFlow does
    assert single.dtype == tf.float32
    np.testing.assert_allclose(single.numpy(), np.linspace(0.3, 2.9, num), rtol=2e-7)
    assert tf.linspace(1, 4, num).dtype == tf.float64  # integer ends: TensorFlow's truediv


def _weighted_linspace(start, stop):
    return tf.reduce_sum(tf.linspace(start, stop, 5) * np.arange(5.0))


def test_linspace_gradients_reach_both_ends_eagerly_and_compiled():
    """As TensorFlow's (a composite of ops): d/dstart sum(w_i (start + i/4 (stop -
    start))) = sum(w_i (1 - i/4)), d/dstop = sum(w_i i/4); compiled with traced ends (a
    raw AttributeError before)."""
    want = (np.sum(np.arange(5.0) * (1 - np.arange(5) / 4)), np.sum(np.arange(5.0) ** 2 / 4))
    start, stop = tf.Variable(0.5, dtype=tf.float64), tf.Variable(2.0, dtype=tf.float64)
    with tf.GradientTape() as tape:
        value = _weighted_linspace(start, stop)
    np.testing.assert_allclose([g.numpy() for g in tape.gradient(value, [start, stop])], want)
    compiled = tf.differentiable(_weighted_linspace, wrt=(0, 1))
    got_value, got = compiled.value_and_grad(0.5, 2.0)
    np.testing.assert_allclose(got_value, value.numpy(), rtol=1e-15)
    np.testing.assert_allclose(got, want, rtol=1e-15)
    with pytest.raises(ValueError, match="linspace: num must be 0 or more"):
        tf.linspace(0.0, 1.0, -1)
