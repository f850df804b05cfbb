"""cond, while_loop, fori_loop and scan: TensorFlow's eager results (written in), their
gradients through the tape, and compiled functions whose trip counts are known when
tracing (the loops unroll). Data-dependent ones compile: test_control_flow_compiled.py."""

import numpy as np
import pytest

import srcxform as tf
from srcxform.testing import check_grads


def test_while_loop_returns_the_structure_of_loop_vars_as_tensors():
    (i,) = tf.while_loop(lambda i: i < 3, lambda i: (i + 1,), (0,))
    assert isinstance(i, tf.Tensor) and i.dtype == tf.int32 and int(i) == 3  # TF: int32 3
    out = tf.while_loop(lambda i: i < 3, lambda i: [i + 1], [0])
    assert isinstance(out, list) and int(out[0]) == 3
    i, s = tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * 2.0),
                         (0, tf.constant(1.0)))
    assert (int(i), float(s), s.dtype) == (3, 8.0, tf.float32)  # TF: 3, 8.0 float32


def test_while_loop_stops_at_maximum_iterations():
    (i,) = tf.while_loop(lambda i: i < 10, lambda i: (i + 1,), (0,), maximum_iterations=4)
    assert int(i) == 4  # TF: 4


def _doubled_until(x, most):
    return tf.while_loop(lambda k, y: k < 100, lambda k, y: (k + 1, y * 2.0), (0, x),
                         maximum_iterations=most)[1]


def test_a_float_maximum_iterations_is_refused_eagerly_and_compiled():
    # Eagerly int() truncated 2.5 to 2 trips; compiled the counter was compared with 2.5:
    # 3 trips, a value and gradient twice eager's (helper 87).
    x = np.array([1.0])
    compiled = tf.differentiable(_doubled_until)
    for most in (2.5, np.float64(2.5)):
        for run in (compiled, lambda x, m: _doubled_until(tf.constant(x), m)):
            with pytest.raises(TypeError, match="maximum_iterations must be an integer"):
                run(x, most)
    assert np.asarray(compiled(x, np.int32(2))).tolist() == [4.0]


@pytest.mark.parametrize("loop_vars", [0, tf.constant(0), ()])
def test_while_loop_needs_a_tuple_or_list(loop_vars):
    with pytest.raises(ValueError, match="'loop_vars' must be provided"):
        tf.while_loop(lambda i: i < 3, lambda i: i + 1, loop_vars)


def test_while_loop_body_must_keep_the_structure():
    with pytest.raises(ValueError, match="body must return the structure of loop_vars"):
        tf.while_loop(lambda i: i < 3, lambda i: (i + 1, 2), [0])


def test_cond_runs_the_branch_taken():
    assert float(tf.cond(tf.constant(True), lambda: 1.0, lambda: 2.0)) == 1.0
    assert tf.cond(False, lambda: (1, 2), lambda: (3, 4)) == (3, 4)
    assert tf.cond(tf.constant(1.0), lambda: "a", lambda: "b") == "a"  # TF: truthy


def test_cond_refuses_what_tensorflow_refuses():
    with pytest.raises(ValueError, match="must be a scalar"):
        tf.cond(tf.constant([True, False]), lambda: 1.0, lambda: 2.0)
    with pytest.raises(TypeError, match="'true_fn' must be callable"):
        tf.cond(True, 1, lambda: 2)
    with pytest.raises(TypeError, match="'false_fn' argument required"):
        tf.cond(True, lambda: 1)


def test_scan_matches_tensorflow():
    x = tf.constant([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(tf.scan(lambda a, v: a + v, x), [1, 3, 6])
    np.testing.assert_array_equal(tf.scan(lambda a, v: a + v, x, initializer=tf.constant(10.0)),
                                  [11, 13, 16])
    np.testing.assert_array_equal(tf.scan(lambda a, v: a + v, x, reverse=True), [6, 5, 3])
    total, product = tf.scan(lambda a, v: (a[0] + v, a[1] * v), x,
                             initializer=(tf.constant(0.0), tf.constant(1.0)))
    np.testing.assert_array_equal(total, [1, 3, 6])
    np.testing.assert_array_equal(product, [1, 2, 6])
    pairs = (tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0]))
    np.testing.assert_array_equal(
        tf.scan(lambda a, v: a + v[0] * v[1], pairs, initializer=tf.constant(0.0)), [3, 11])
    rows = tf.scan(lambda a, v: a + v, tf.constant([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(rows, [[1, 2], [4, 6]])


def test_gradients_flow_through_the_iterations_and_the_branch_taken():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        _, y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x),
                             (0, tf.constant(1.0)))
    assert (float(y), float(tape.gradient(y, x))) == (8.0, 12.0)  # TF: 8.0, 12.0
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.cond(x > 1, lambda: x * x, lambda: x)
    assert float(tape.gradient(y, x)) == 4.0  # TF: 4.0


def power_series(x):
    """sum of x**k / k! for k < 6, by fori_loop; then a scan's running products."""
    def term(k, acc):
        total, power, factorial = acc
        return total + power / factorial, power * x, factorial * (k + 1)

    total, _, _ = tf.fori_loop(0, 6, term, (tf.zeros_like(x), tf.ones_like(x), 1.0))
    running = tf.scan(lambda a, v: a * v, x)
    return tf.reduce_sum(total) + tf.reduce_sum(running)


def test_loops_with_known_trip_counts_compile_and_agree_with_eager():
    x = np.array([0.3, -0.7, 1.1])
    f = tf.differentiable(power_series)
    value, grad = f.value_and_grad(x)
    with tf.GradientTape() as tape:
        xt = tf.constant(x)
        tape.watch(xt)
        y = power_series(xt)
    np.testing.assert_allclose(value, float(y), rtol=1e-12)
    np.testing.assert_allclose(grad, tape.gradient(y, xt), rtol=1e-12)
    check_grads(power_series, (x,), order=2)


def test_a_traced_predicate_compiles_one_kernel_for_both_branches():
    # (It raised TracingError before compiled control flow: test_control_flow_compiled.py.)
    f = tf.differentiable(lambda x: tf.reduce_sum(
        tf.cond(tf.reduce_sum(x) > 0, lambda: x * x, lambda: x)))
    np.testing.assert_allclose(f.value_and_grad(np.ones(3))[1], 2 * np.ones(3))
    np.testing.assert_allclose(f.value_and_grad(-np.ones(3))[1], np.ones(3))
    assert f.cache_info().kernels == 1


def test_scan_over_no_elements_is_empty_eagerly_as_compiled():
    """tf.scan with an initializer over zero elements: the accumulator stacked zero times
    (TensorFlow's result), eagerly as compiled; without an initializer, an IndexError
    naming scan, not a bare one from a list."""
    def scans(x, init):
        return tf.scan(lambda a, e: (a[0] + e, a[1] + 1), x,
                       initializer=(init, tf.cast(init, tf.int32)))

    x, init = np.zeros((0, 3)), np.ones(3)
    eager = scans(tf.constant(x), tf.constant(init))
    compiled = tf.differentiable(scans)(x, init)
    for e, c, dtype in zip(eager, compiled, (np.float64, np.int32)):
        assert e.shape == np.shape(c) == (0, 3) and e.dtype == np.asarray(c).dtype == dtype
    with pytest.raises(IndexError, match="scan: elems has no elements"):
        tf.scan(lambda a, e: a + e, tf.constant(x))


def test_a_python_float_accumulator_is_exact_and_stacks_as_float32_as_eagerly(monkeypatch):
    """The body keeps the accumulator a Python number: compiled, its rows were float64
    (16777219 where eager's stack of Python floats gives float32's 16777220, helper 72);
    a Python int accumulator stacks as int64 compiled, so that none wraps (README: the
    one dtype the suite's check may not compare here)."""
    def floats(x):
        return tf.scan(lambda a, e: a + 1.0, x, initializer=16777216.0)

    x = np.ones(3)
    compiled = tf.differentiable(floats, wrt=())(x)
    np.testing.assert_array_equal(compiled, floats(tf.constant(x)).numpy())
    assert compiled.dtype == np.float32 and compiled[-1] == 16777220.0
    monkeypatch.setenv("SRCXFORM_CHECK_DTYPES", "0")
    ints = tf.differentiable(lambda x: tf.scan(lambda a, e: a * 2, x, initializer=3), wrt=())
    np.testing.assert_array_equal(ints(x), [6, 12, 24])
    assert ints(x).dtype == np.int64


def _python_float_rows(x):
    return (tf.reduce_sum(tf.scan(lambda a, e: a + 0.5, x, initializer=0.0)),
            tf.scan(lambda a, e: 1.0, x, initializer=0.0),
            tf.map_fn(lambda e: 0.5, x, fn_output_signature=tf.float32))


def test_rows_of_python_floats_stack_as_float32_tensors_eagerly_and_compiled():
    """Eagerly a stack of Python floats was a weak float32, so its sum was float64 (TF:
    float32); compiled, a scan whose body gives a Python number raised ('changes acc from
    f64[]~ to f64[]~') and map_fn's float32 signature refused its float64 rows (helper
    75)."""
    assert tf.reduce_sum(tf.stack([0.5, 1.0])).dtype == tf.float32
    x = np.ones(3, np.float32)
    eager = _python_float_rows(tf.constant(x))
    for got, want in zip(tf.differentiable(_python_float_rows, wrt=())(x), eager):
        np.testing.assert_array_equal(np.asarray(got), want.numpy())
        assert np.asarray(got).dtype == want.dtype == np.float32


@pytest.mark.parametrize("lower, upper", [(0.0, 3), (0, 2.5), (0, np.float32(3)),
                                          (tf.constant(0.0), 3), (0, np.arange(3)),
                                          (True, 3)])
def test_fori_loop_bounds_that_are_not_integer_scalars_raise(lower, upper):
    """As in JAX: int() would have run 2.5 as 2 silently."""
    with pytest.raises(TypeError, match="fori_loop: the (lower|upper) bound must be an "
                                        "integer scalar"):
        tf.fori_loop(lower, upper, lambda i, v: v + 1, 0)
    with pytest.raises(TypeError, match="fori_loop"):
        tf.differentiable(lambda v: tf.fori_loop(lower, upper, lambda i, v: v + 1.0, v))(1.0)


def test_fori_loop_takes_integer_scalars_of_any_kind():
    for bound in (3, np.int32(3), np.uint8(3), tf.constant(3), np.array(3)):
        assert tf.fori_loop(0, bound, lambda i, v: v + i, 0) == 3
    assert tf.fori_loop(10**30, 10**30 + 2, lambda i, v: v + 1, 0) == 2  # Python's ints
    with pytest.raises(TypeError, match=r"fori_loop: a bound must be an integer scalar, got "
                                        r"i64\[1\]"):  # a traced bound of rank 1
        tf.differentiable(lambda x, n: tf.fori_loop(0, n, lambda i, c: c * x, x))(
            np.ones(2), np.array([3]))


def _dot_scan(x, y):
    return tf.scan(lambda a, e: a + e[0] * e[1], (x, y), initializer=tf.constant(0.0, tf.float64))


def test_scan_of_elems_of_different_lengths_raises_eagerly_and_compiled():
    """Compiled, the loop read past the shorter elems (garbage, silently) before."""
    compiled = tf.differentiable(_dot_scan)
    np.testing.assert_array_equal(compiled(np.array([1.0, 2, 3]), np.array([1.0, 2, 4])),
                                  [1.0, 5.0, 17.0])
    for x, y in [(np.array([1.0, 2, 3]), np.array([1.0, 2])), (np.ones(5), np.ones(1))]:
        for call in (compiled, lambda x, y: _dot_scan(tf.constant(x), tf.constant(y))):
            with pytest.raises(ValueError, match="scan: the elems have different numbers "
                                                 "of rows"):
                call(x, y)
    with pytest.raises(IndexError, match="scan: elems has no elements"):
        tf.differentiable(lambda x: tf.scan(lambda a, e: a + e, x))(np.zeros((0, 2)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_python_number_carry_takes_the_dtype_the_body_gives_compiled_as_eagerly(dtype):
    """scan, fori_loop and while_loop from a Python float over float32 or float64 values:
    eagerly the accumulator takes their dtype; compiled it came out float32 for float64
    values, or the trace raised for float32 ones (while_loop's for float64)."""
    x = np.array([0.1, 0.2, 0.3], dtype)

    def running(x):
        scanned = tf.scan(lambda a, e: a + e, x, initializer=1.0)
        looped = tf.fori_loop(0, tf.shape(x)[0], lambda i, c: c + x[i], 0.0)
        # while_loop makes 0.0 a float32 tensor first (TensorFlow's rule): float64 values
        # promote it eagerly, and the compiled loop raised TracingError
        summed = tf.while_loop(lambda i, c: i < tf.shape(x)[0], lambda i, c: (i + 1, c + x[i]),
                               (0, 0.0))[1]
        bounded = tf.while_loop(lambda i, c: c < 0.25, lambda i, c: (i + 1, c + x[i]),
                                (0, 0.0), maximum_iterations=tf.shape(x)[0])[1]
        return scanned, looped, summed, bounded

    eager = running(tf.constant(x))
    compiled = tf.differentiable(running)(x)
    for e, c in zip(eager, compiled):
        assert e.dtype == dtype and np.asarray(c).dtype == dtype
        np.testing.assert_array_equal(np.asarray(c), e.numpy())
