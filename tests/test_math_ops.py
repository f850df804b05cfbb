"""Issue 16's math and activation ops where finite differences cannot judge them: values
and gradients at poles, kinks and domain edges, against TensorFlow 2.21's (the numbers
below were printed by it, float64), and the same special values compiled.

The op tables (tests/samples.py, corpus.py, test_numpy_dispatch.py) check these ops
at smooth points: eager, compiled, as Python, against finite differences and NumPy.
"""

import numpy as np
import pytest
from helpers import value_and_two_orders

import srcxform as tf

nan, inf = np.nan, np.inf


def _derivatives(f, points):
    """f(x), its first and its second derivative at each point (elementwise ops)."""
    orders = value_and_two_orders(f, np.asarray(points, np.float64))
    return tuple(t.numpy() for t in orders)


# (op, points, values, first derivatives, second derivatives), from TensorFlow.
TENSORFLOW = {
    "digamma": (tf.math.digamma, [-0.5, 0.0, -1.0, 1.5],
                [0.03648997397857645, nan, nan, 0.03648997397857645],
                [8.934802200544679, inf, inf, 0.9348022005446793],
                [-0.82879664423432, nan, nan, -0.8287966442343201]),
    "lgamma": (tf.math.lgamma, [-0.5, 0.0, -1.0, 1.5],
               [1.2655121234846454, inf, inf, -0.12078223763524522],
               [0.03648997397857645, nan, nan, 0.03648997397857645],
               [8.934802200544679, inf, inf, 0.9348022005446793]),
    "rsqrt": (tf.math.rsqrt, [0.0, 4.0], [inf, 0.5], [-inf, -0.0625], [inf, 0.0234375]),
    "acosh": (tf.math.acosh, [1.0, 0.5, 2.0], [0.0, nan, 1.3169578969248166],
              [inf, nan, 0.5773502691896258], [-inf, nan, -0.38490017945975064]),
    "asin": (tf.math.asin, [1.0, -1.0], [1.5707963267948966, -1.5707963267948966],
             [inf, inf], [inf, -inf]),
    "atanh": (tf.math.atanh, [1.0, -1.0], [inf, -inf], [inf, inf], [inf, -inf]),
    "erf": (tf.math.erf, [0.5, -3.0], [0.5204998778130466, -0.9999779095030015],
            [0.8787825789354448, 0.00013925305194674786],
            [-0.8787825789354448, 0.0008355183116804871]),
    # gelu's are 1e-8 from the exact function's: TensorFlow's 1/sqrt(2) is float32's.
    "gelu": (tf.nn.gelu, [-2.0, -0.5, 0.0, 1.0],
             [-0.04550026759242268, -0.1542687708693288, 0.0, 0.8413447419273903],
             [-0.08523180477426104, 0.1325048806160109, 0.5, 1.0833154664465336],
             [-0.10798193117834375, 0.6161143169419341, 0.7978845471476527,
              0.2419707328014484]),
    "gelu-approximate": (
        lambda x: tf.nn.gelu(x, approximate=True), [-2.0, -0.5, 0.0, 1.0],
        [-0.04540230678804602, -0.15428599020775666, 0.0, 0.8411919902786764],
        [-0.08609925692200973, 0.13263009670778766, 0.5, 1.082964082934438],
        [-0.10787507822738579, 0.6155068938969188, 0.7978845608028654, 0.24214819716704492]),
    # At 0 the gradients take the x >= 0 side, as TensorFlow's EluGrad and SeluGrad.
    "selu": (tf.nn.selu, [-2.0, -0.5, 0.0, 1.0],
             [-1.520166468595695, -0.6917581878028713, 0.0, 1.0507009873554805],
             [0.2379328722516818, 1.0663411530445055, 1.0507009873554805, 1.0507009873554805],
             [0.2379328722516818, 1.0663411530445055, 0.0, 0.0]),
    "elu": (tf.nn.elu, [-2.0, -0.5, 0.0, 1.0],
            [-0.8646647167633873, -0.3934693402873666, 0.0, 1.0],
            [0.1353352832366127, 0.6065306597126334, 1.0, 1.0],
            [0.1353352832366127, 0.6065306597126334, 0.0, 0.0]),
    "leaky_relu": (lambda x: tf.nn.leaky_relu(x, alpha=0.25), [-2.0, 0.0, 1.0],
                   [-0.5, 0.0, 1.0], [0.25, 0.25, 1.0], [0.0, 0.0, 0.0]),
    "silu": (tf.nn.silu, [-2.0, -0.5, 0.0, 1.0],
             [-0.2384058440442351, -0.18877033439907273, 0.0, 0.7310585786300049],
             [-0.09078424878489547, 0.26003881269734824, 0.5, 0.9276705118714869],
             [0.050062168694706914, 0.4412290269770286, 0.5, 0.3023661188100153]),
    "log_sigmoid": (tf.nn.log_sigmoid, [-2.0, -0.5, 0.0, 1.0],
                    [-2.1269280110429722, -0.9740769841801067, -0.6931471805599453,
                     -0.3132616875182228],
                    [0.8807970779778824, 0.6224593312018546, 0.5, 0.2689414213699951],
                    [-0.10499358540350653, -0.2350037122015945, -0.25,
                     -0.19661193324148185]),
}


@pytest.mark.parametrize("name", TENSORFLOW)
def test_values_and_derivatives_match_tensorflow(name):
    f, points, *expected = TENSORFLOW[name]
    for got, want, what in zip(_derivatives(f, points), expected,
                               ("value", "first derivative", "second derivative")):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15, err_msg=what)


def test_polygamma_at_the_poles_as_tensorflow():
    # NaN for an even order (the sign differs on each side), +inf for an odd one.
    x = np.array([0.0, -1.0, -0.5])
    np.testing.assert_allclose(tf.math.polygamma(2, x).numpy(), [nan, nan, -0.82879664423432],
                               rtol=1e-12)
    np.testing.assert_allclose(tf.math.polygamma(tf.constant(3.0), x).numpy(),
                               [inf, inf, 193.40909103400242], rtol=1e-12)


def test_polygamma_of_an_order_that_is_no_non_negative_integer_is_nan():
    # As TensorFlow's; orders are elementwise (tests/test_tf_op_rules.py).
    np.testing.assert_array_equal(tf.math.polygamma([1.5, -1.0], [1.0, 1.0]).numpy(),
                                  [nan, nan])


def _gradients(f, *values):
    xs = [tf.constant(np.asarray(v, np.float64)) for v in values]
    with tf.GradientTape() as tape:
        tape.watch(xs)
        y = f(*xs)
    return y.numpy(), [g.numpy() for g in tape.gradient(y, xs)]


def test_xlogy_is_zero_wherever_x_is_zero_gradients_too():
    """TensorFlow's convention: the x-gradient at x = 0 is 0, not log(y)."""
    value, (dx, dy) = _gradients(tf.math.xlogy, [0.0, 0.0, 1.0, 2.0, 0.0, -0.0],
                                 [0.0, nan, 0.0, -1.0, 2.0, 3.0])
    np.testing.assert_array_equal(value, [0.0, 0.0, -inf, nan, 0.0, 0.0])
    assert not np.signbit(value[5])  # +0 for x = -0, as TensorFlow's
    np.testing.assert_array_equal(dx, [0.0, 0.0, -inf, nan, 0.0, 0.0])
    np.testing.assert_array_equal(dy, [0.0, 0.0, inf, -2.0, 0.0, 0.0])


def test_rsqrt_jacobian_is_zero_off_the_diagonal_where_rsqrt_is_nan():
    """TensorFlow's RsqrtGrad is 0 wherever its incoming gradient is (found by
    tests/tf_differential.py: -0.5 * 0 * nan**3 would be NaN)."""
    x = tf.constant(np.array([1.5, -1.0]))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.math.rsqrt(x)
    jacobian = tape.jacobian(y, x).numpy()
    np.testing.assert_allclose(jacobian, [[-0.5 * 1.5 ** -1.5, 0.0], [0.0, nan]])


def test_atan2_takes_y_first_and_has_nan_gradients_at_the_origin():
    value, (dy, dx) = _gradients(tf.math.atan2, [0.0, 1.0, -1.0, 0.0], [0.0, 0.0, 0.0, -1.0])
    np.testing.assert_allclose(value, [0.0, np.pi / 2, -np.pi / 2, np.pi])
    np.testing.assert_array_equal(dy, [nan, 0.0, 0.0, -1.0])
    np.testing.assert_array_equal(dx, [nan, -1.0, 1.0, 0.0])


# A row with a zero: TensorFlow's cumprod gradient divides by x, so is 0 there.
_WITH_ZERO = [[1.0, 0.0, 2.0], [3.0, 4.0, 0.5]]


@pytest.mark.parametrize("options, value, grad", [
    ({}, [[1.0, 0.0, 0.0], [3.0, 12.0, 6.0]], [[1.0, 0.0, 0.0], [7.0, 4.5, 12.0]]),
    ({"exclusive": True}, [[1.0, 1.0, 0.0], [1.0, 3.0, 12.0]],
     [[1.0, 0.0, 0.0], [5.0, 3.0, 0.0]]),
    ({"reverse": True}, [[0.0, 0.0, 2.0], [6.0, 2.0, 0.5]], [[0.0, 0.0, 1.0], [2.0, 2.0, 17.0]]),
])
def test_cumprod_with_a_zero_as_tensorflow(options, value, grad):
    got, (g,) = _gradients(lambda x: tf.math.cumprod(x, axis=1, **options), _WITH_ZERO)
    np.testing.assert_array_equal(got, value)
    np.testing.assert_array_equal(g, grad)


def test_cumsum_exclusive_reverse_as_tensorflow():
    got, (g,) = _gradients(lambda x: tf.cumsum(x, axis=0, exclusive=True, reverse=True),
                           _WITH_ZERO)
    np.testing.assert_array_equal(got, [[3.0, 4.0, 0.5], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(g, [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])


def test_cumulative_integers_and_arguments():
    ints = tf.constant([[1, 2, 3], [4, 5, 6]])
    assert tf.cumsum(ints, axis=1).dtype == np.int32
    np.testing.assert_array_equal(tf.math.cumprod(ints, axis=-1, exclusive=True).numpy(),
                                  [[1, 1, 2], [1, 4, 20]])
    empty = tf.math.cumprod(tf.zeros((2, 0)), axis=1, exclusive=True, reverse=True)
    assert empty.shape == (2, 0)
    with pytest.raises(tf.ShapeError, match="at least one axis"):
        tf.cumsum(tf.constant(2.0))
    with pytest.raises(TypeError, match="bool"):
        tf.cumsum(tf.constant([True, False]))


def test_compiled_integer_running_totals_are_exact_and_wrap_as_eagerly():
    """Helper 135: the compiled running total was a float64 (the type of logsumexp's
    branch): int64 past 2**53 lost its low bits, and products saturated where they wrap."""
    def totals(x):
        return tf.cumsum(x), tf.math.cumprod(x), tf.cumsum(x, exclusive=True, reverse=True)

    compiled = tf.differentiable(totals, wrt=())
    for x in (np.array([21, 2**63 + 1], np.uint64), np.array([5, -2**63, 2**53 + 1], np.int64),
              np.array([-7, 7, 2**62, -2**63, 3], np.int64), np.array([100, 100], np.int8)):
        for got, want in zip(compiled(x), totals(tf.constant(x))):
            assert np.asarray(got).dtype == want.dtype
            np.testing.assert_array_equal(np.asarray(got), want.numpy())
    np.testing.assert_array_equal(np.asarray(compiled(np.array([21, 2**63 + 1], np.uint64))[0]),
                                  np.array([21, 2**63 + 22], np.uint64))


def test_tensorflows_count_nonzero_rint_and_bitwise_names():
    # Helper 135: missing under TensorFlow's names (NumPy's count_nonzero was there).
    x = tf.constant([[0.0, 1.5, -2.0], [0.0, 0.0, 3.0]])
    got = tf.math.count_nonzero(x, axis=1, keepdims=True, dtype=tf.int32)
    assert got.dtype == np.int32 and got.numpy().tolist() == [[2], [1]]
    assert tf.math.count_nonzero(x).dtype == np.int64 and int(tf.math.count_nonzero(x)) == 3
    assert int(np.count_nonzero(tf.constant([True, False, True]))) == 2
    assert tf.math.rint(tf.constant([0.5, 1.5, -2.5, 2.6])).numpy().tolist() == [0, 2, -2, 3]
    a, b = tf.constant([12, -7], tf.int8), tf.constant([10, 3], tf.int8)
    assert tf.bitwise.bitwise_and(a, b).numpy().tolist() == [8, 1]
    assert tf.bitwise.bitwise_or(a, b).numpy().tolist() == [14, -5]
    assert tf.bitwise.bitwise_xor(a, b).numpy().tolist() == [6, -6]
    assert tf.bitwise.invert(a).numpy().tolist() == [-13, 6]


def test_spread_gradients_are_nan_where_it_is_zero_as_tensorflow():
    _, (g,) = _gradients(tf.math.reduce_std, [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(g, [nan, nan, nan])
    _, (g,) = _gradients(lambda x: tf.math.reduce_euclidean_norm(x * 0.0), [1.0, 2.0])
    np.testing.assert_array_equal(g, [nan, nan])


def test_reductions_of_integers_as_tensorflow():
    assert tf.math.reduce_euclidean_norm(tf.constant([3, 4])).numpy() == 5
    with pytest.raises(TypeError, match="reduce_variance.*expects float inputs"):
        tf.math.reduce_variance(tf.constant([3, 4]))


def test_identity_is_a_tensor_the_tape_can_watch_apart():
    """TensorFlow: z = y * y + x with y = identity(x) has dz/dx = 2y + 1, dz/dy = 2y."""
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.identity(x)
        tape.watch(y)
        z = tf.reduce_sum(y * y + x)
    dx, dy = tape.gradient(z, [x, y])
    np.testing.assert_array_equal(dx.numpy(), [3.0, 5.0])
    np.testing.assert_array_equal(dy.numpy(), [2.0, 4.0])
    v = tf.Variable([1.0, 2.0])
    snapshot = tf.identity(v)
    v.assign([5.0, 6.0])
    np.testing.assert_array_equal(snapshot.numpy(), [1.0, 2.0])


def test_float32_constants_as_tensorflow():
    """TensorFlow rounds leaky_relu's alpha and gelu's 1/sqrt(2) to float32."""
    np.testing.assert_array_equal(tf.nn.leaky_relu(np.array([-2.0])).numpy(),
                                  [-0.4000000059604645])
    np.testing.assert_allclose(tf.nn.gelu(np.array([-0.4, 1.4])).numpy(),
                               [-0.13783130436429833, 1.2869406720502665], rtol=1e-14)


def test_leaky_relu_casts_integers_to_float32_and_takes_keras_name():
    assert tf.nn.leaky_relu(tf.constant([-2, 3])).dtype == np.float32
    np.testing.assert_array_equal(
        tf.nn.leaky_relu(np.array([-2.0, 3.0]), negative_slope=0.5).numpy(), [-1.0, 3.0])
    np.testing.assert_array_equal(tf.nn.elu(np.array([-1.0, 1.0]), alpha=2.0).numpy(),
                                  [2.0 * np.expm1(-1.0), 1.0])


def test_log10_is_log_over_log10_as_tensorflow_numpy():
    np.testing.assert_array_equal(tf.math.log10(np.array([1000.0])).numpy(),
                                  [np.log(1000.0) / np.log(10)])


# ----- the special values compiled: specfun's poles, C's erf and lgamma -----

EDGES = np.array([0.0, -1.0, -2.5, -0.5, 1e-300, 1.5, 25.0, inf, -inf, nan, 0.5, 3.0])


def _special(x):
    return tf.stack([tf.math.digamma(x), tf.math.polygamma(1, x), tf.math.polygamma(2, x),
                     tf.math.lgamma(x), tf.math.erf(x), tf.math.erfc(x), tf.math.rsqrt(x),
                     tf.math.acosh(x), tf.math.atanh(x), tf.math.asin(x)])


@pytest.mark.parametrize("jit", ["1", "0"])
def test_special_values_compiled_as_eager(jit, monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    with np.errstate(all="ignore"):  # as Python, NumPy warns of the NaNs and infs
        eager = _special(tf.constant(EDGES)).numpy()
        compiled = np.asarray(tf.differentiable(_special)(EDGES))
    np.testing.assert_allclose(compiled, eager, rtol=1e-13, atol=0)
    np.testing.assert_array_equal(np.isnan(compiled), np.isnan(eager))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["elu", "selu"])
def test_elu_and_selus_gradient_is_finite_where_exp_would_overflow(name, dtype):
    """x of 1e3 overflows exp on the branch where() does not select: its gradient must
    still be the selected side's (TensorFlow's), eager and compiled, not 0 * inf."""
    fn = getattr(tf.nn, name)
    x = np.array([1000.0, 100.0, 0.5, -2.0], dtype)
    scale = 1.0507009873554805 if name == "selu" else 1.0
    v = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(fn(v))
    eager = tape.gradient(y, v).numpy()
    compiled = tf.differentiable(lambda a: tf.reduce_sum(fn(a)), wait=True).grad(x)
    for got in (eager, compiled):
        np.testing.assert_allclose(got[:3], scale, rtol=1e-6)
        assert np.isfinite(got).all()


def _add_n_loss(a, b, c):
    return tf.reduce_sum(tf.add_n([a, b * b, c]) ** 2)


def test_add_n_sums_in_order_with_every_input_gradient_eagerly_and_compiled():
    a, b, c = (np.random.default_rng(k).normal(size=(2, 3)) for k in range(3))
    total = a + b * b + c
    assert np.array_equal(tf.math.add_n([tf.constant(a), b * b, c]).numpy(), total)
    want = (2 * total, 4 * total * b, 2 * total)
    with tf.GradientTape() as tape:
        inputs = [tf.constant(x) for x in (a, b, c)]
        tape.watch(inputs)
        loss = _add_n_loss(*inputs)
    for got in (tape.gradient(loss, inputs),
                tf.differentiable(_add_n_loss, wrt=(0, 1, 2)).grad(a, b, c)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-14)
    assert np.array_equal(tf.add_n([tf.constant(a)]).numpy(), a)  # one input: itself


def test_add_n_takes_no_empty_list_and_does_not_broadcast():
    with pytest.raises(ValueError, match="add_n: inputs must be a list of at least one"):
        tf.add_n([])
    with pytest.raises(ValueError, match=r"add_n: .*float64\[2, 3\], float64\[3\]"):
        tf.add_n([np.ones((2, 3)), np.ones(3)])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"float64\[3\], float32\[3\]"):
        tf.add_n([np.ones(3), tf.ones(3, tf.float32)])


def test_logical_xor_is_true_where_exactly_one_is():
    x, y = np.array([True, True, False, False]), np.array([True, False, True, False])
    want = [False, True, True, False]
    assert tf.math.logical_xor(x, y).numpy().tolist() == want
    compiled = tf.differentiable(lambda x, y: tf.cast(tf.math.logical_xor(x, y), tf.float64))
    assert np.asarray(compiled(x, y)).tolist() == [float(w) for w in want]


def test_add_n_takes_python_numbers_as_add_does_and_only_lists():
    assert tf.add_n([tf.constant(1.0), 2.0]).dtype == tf.float32  # 2.0 takes float32
    assert tf.add_n([tf.constant(1.0, tf.float64), 2]).numpy() == 3.0
    for bad in (None, tf.ones((2, 3))):  # a tensor's rows are not a list of tensors
        with pytest.raises(ValueError, match="add_n: inputs must be a list"):
            tf.add_n(bad)
    with pytest.raises(TypeError, match=r"logical_xor\(i64\[2\], i64\[2\]\): expects bool"):
        tf.math.logical_xor(np.array([1, 2]), np.array([1, 0]))


def test_lgamma_of_a_subnormal_is_minus_its_log_eagerly_as_compiled():
    """SciPy's gammaln is inf below float64's smallest normal; C's lgamma (compiled) and
    TensorFlow's give -log|x| there (helper 73)."""
    x = np.array([1e-310, -1e-310, 5e-324, 0.0, 2.5])
    eager = tf.math.lgamma(tf.constant(x)).numpy()
    compiled = np.asarray(tf.differentiable(lambda x: tf.math.lgamma(x), wrt=())(x))
    np.testing.assert_allclose(eager[:3], -np.log(np.abs(x[:3])), rtol=1e-15)
    np.testing.assert_allclose(compiled, eager, rtol=1e-15)
    assert eager[3] == np.inf
