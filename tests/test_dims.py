"""Sizes while tracing: canonical expressions, the 0-or-1 rule, slices normalized as
Python normalizes them, and kernels reused only where the trace's decisions still hold."""

import contextlib
import copy
import itertools
import math
import pickle

import numpy as np
import pytest

import srcxform as tf
from srcxform.ad.trace import Tracer
from srcxform.core.aval import normalize_slice, slice_length
from srcxform.core.dims import Dim, Symbols, symbol_text
from srcxform.core.recording import CONTEXT


def _sizes(*values, guards=None):
    symbols = Symbols(guards)
    return [Dim(v, ("size", k), symbols) for k, v in enumerate(values)]


@contextlib.contextmanager
def _tracing(*values):
    """Sizes of a trace running in this thread, and the list of its guards."""
    guards = []
    sizes = _sizes(*values, guards=guards)
    saved, CONTEXT.guards = CONTEXT.guards, guards
    try:
        yield sizes, guards
    finally:
        CONTEXT.guards = saved


def test_linear_size_expressions_have_one_canonical_form():
    n0, n1 = _sizes(5, 7)
    assert n0 - (n0 - 1) == 1 and not isinstance(n0 - (n0 - 1), Dim)
    assert (n0 + 2 - 2).expr == n0.expr
    assert (n1 - n0 + n0).expr == n1.expr
    assert (1 + n0).expr == (n0 + 1).expr == ("+", ("size", 0), 1)
    assert (n0 - n1 + 3).expr == ("+", ("-", ("size", 0), ("size", 1)), 3)
    assert symbol_text(n0 - 1) == "n0 - 1" and symbol_text(2 * n0 - n1) == "(2 * n0) - n1"


def test_symbols_found_equal_simplify_again():
    with _tracing(4, 4) as ((n0, n1), guards):
        difference = n1 + 2 - n0
        assert n0 == n1  # unifies n1 with n0, under a guard
    assert difference.expr == 2 and guards == [(("size", 0), "==", ("size", 1), True)]


def test_a_derived_size_of_0_or_1_is_a_constant_under_a_guard():
    with _tracing(3) as ((n0,), guards):
        one, zero, two = n0 - 2, n0 - 3, n0 - 1
    assert type(one) is int and one == 1 and type(zero) is int and zero == 0
    assert isinstance(two, Dim)
    assert (("-", ("size", 0), 2), "==", 1, True) in guards
    assert (("-", ("size", 0), 3), "==", 0, True) in guards


ENDS = [None, -9, -4, -2, -1, 0, 1, 2, 4, 9]


@pytest.mark.parametrize("step", [None, 1, 2, 3, -1, -2, -3])
def test_normalized_slices_select_what_python_selects(step):
    for n in range(7):
        for start, stop in itertools.product(ENDS, ENDS):
            s = slice(start, stop, step)
            start_, stop_, step_ = normalize_slice(n, s)
            assert start_ >= 0 and (stop_ is None or stop_ >= 0), (n, s)
            assert list(range(n)[start_:stop_:step_]) == list(range(n)[s]), (n, s)
            assert slice_length(n, s) == len(range(n)[s]), (n, s)


def test_a_traced_slice_of_length_1_is_retraced_when_it_grows():
    f = tf.differentiable(lambda x, y: tf.reduce_sum(x[2:] * y))
    y = np.arange(1.0, 4.0)
    assert f(np.arange(3.0), y) == pytest.approx(2.0 * 6.0)  # x[2:] has length 1: broadcast
    assert f(np.arange(5.0), y) == pytest.approx(2.0 + 6.0 + 12.0)
    assert f.cache_info().kernels == 2


def test_a_kernel_is_reused_where_its_slices_stay_symbolic():
    f = tf.differentiable(lambda x: tf.reduce_sum(x[1:-1] * x[:-2]))
    for n in (5, 8, 13):
        x = np.arange(float(n))
        assert f(x) == pytest.approx(float(np.sum(x[1:-1] * x[:-2])))
    assert f.cache_info().kernels == 1


def test_a_guard_on_a_strided_length_keeps_its_strictness():
    """x[::-2][3] needs (n0 + 1) // 2 > 3: the guard of a comparison of a non-linear size
    keeps the shift that turns > into >= (at 5 elements the index is out of range)."""
    f = tf.differentiable(lambda x: tf.reduce_sum(x[::-2][3] ** 2))
    value, grad = f.value_and_grad(np.arange(7.0))
    assert value == 0.0 and grad[0] == 0.0  # x[::-2][3] is x[0]
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 of size 3"):
        f.value_and_grad(np.arange(5.0))


# Each use of a size as a plain number: (what it gives for a size of 4, the use). C code
# takes an int subclass's value without asking it, so a Dim is not one (found by helper
# 58 for range(); these were all silently wrong at a second size before).
_PLAIN_USES = {
    "range": (4, lambda n: len(range(n))),
    "list repeat": (4, lambda n: len([0] * n)),
    "str repeat": (4, lambda n: len("a" * n)),
    "float": (4.0, float),
    "int": (4, int),
    "true division": (2.0, lambda n: n / 2),
    "power": (16, lambda n: n ** 2),
    "power modulo": (2, lambda n: pow(n, 2, 7)),
    "times a float": (2.0, lambda n: n * 0.5),
    "math.sqrt": (2.0, math.sqrt),
    "abs": (4, abs),
    "f-string": ("4", lambda n: f"{n}"),
    "str": ("4", str),
    "repr": ("4", repr),
    "shift": (8, lambda n: n << 1),
    "and": (0, lambda n: n & 1),
    "invert": (-5, lambda n: ~n),
    "NumPy scalar": (4.0, np.float64),
    "NumPy array": (6, lambda n: int(np.arange(n).sum())),
    "hash": (hash(4), hash),
    "dict key": (None, lambda n: {3: 1.0, 5: 2.0}.get(n)),
    "equal to a float": (True, lambda n: n == 4.0),
    "pickled": (4, lambda n: pickle.loads(pickle.dumps(n))),
    "int's attribute": (4, lambda n: n.real),
    "int's method": (3, lambda n: n.bit_length()),
    "copied": (4, copy.deepcopy),
}


@pytest.mark.parametrize("use", _PLAIN_USES)
def test_each_use_of_a_size_as_a_plain_number_guards_the_kernel_to_it(use):
    expected, apply = _PLAIN_USES[use]
    with _tracing(4) as ((n,), guards):
        result = apply(n)
    assert result == expected and not isinstance(result, Dim)
    assert (("size", 0), "==", 4, True) in guards


def test_integer_arithmetic_keeps_a_size_symbolic():
    with _tracing(12) as ((n,), guards):
        results = [n + 1, 2 * n, n // 3 + 1, n % 5 + 1, divmod(n, 5)[0] + 1, -(n - 2 * n), +n,
                   math.trunc(n), math.floor(n), math.ceil(n), round(n), n * np.int64(2)]
        assert isinstance(n, int) and not isinstance(n, bool)  # as eagerly, where it is one
    assert [symbol_text(r) for r in results] == [
        "n0 + 1", "2 * n0", "(n0 // 3) + 1", "(n0 % 5) + 1", "(n0 // 5) + 1", "n0",
        "n0", "n0", "n0", "n0", "n0", "2 * n0"]
    assert guards == []


def test_a_loop_over_a_size_in_code_autograph_leaves_alone_retraces_at_another_size():
    def squares(x):
        total = 0.0
        for i in range(x.shape[0]):
            total = total + x[i] * x[i]
        return total

    f = tf.differentiable(squares, autograph=False)
    for n in (3, 5, 3):
        x = np.arange(float(n))
        assert f(x) == pytest.approx(float(x @ x))
    assert f.cache_info().kernels == 2


def test_a_size_returned_is_the_calls_own():
    f = tf.function(lambda x: (x.shape[0], x.shape[0] - 1))
    assert f(np.zeros(3)) == (3, 2) and f(np.zeros(5)) == (5, 4)
    assert type(f(np.zeros(4))[0]) is int


def test_a_size_divided_by_a_size_that_is_0_at_another_call_raises_as_python():
    f = tf.differentiable(lambda x: tf.reduce_sum(x * (12 // (x.shape[0] - 3))))
    assert float(f(np.ones(5))) == 30.0
    with pytest.raises(ZeroDivisionError):
        f(np.ones(3))


def test_ranges_and_jacobians_of_a_size_are_right_at_every_size():
    ranged = tf.differentiable(lambda x: tf.reduce_sum(x) + tf.cast(
        tf.reduce_sum(tf.range(x.shape[0])), tf.float64))  # the bound read as a tensor
    scaled = tf.function(tf.jacfwd(lambda x: x * x.shape[0]))  # a size as an operand
    for n in (3, 5, 4):
        assert float(ranged(np.ones(n))) == n + n * (n - 1) // 2
        np.testing.assert_array_equal(scaled(np.ones(n)), n * np.eye(n))
    assert scaled.cache_info().kernels == 1  # its literal was hashed by value, unguarded


def test_a_size_kept_from_another_trace_is_its_number_in_this_one():
    """A size one trace kept in Python state is, read in another function's trace, the
    number it was (as eagerly): a constant there, not that trace's size of its symbol."""
    kept = []

    @tf.function
    def keep(x):
        kept.append(x.shape[0])
        return tf.reduce_sum(x)

    def read(y):
        n = kept[0]
        flag = 1.0 if n > 2 else 0.0  # a comparison of a constant: no guard here
        return (tf.reduce_sum(y * n) + tf.reduce_sum(tf.fill([n], flag)),
                tf.reshape(y, [n, -1]), y[n] + tf.cast(tf.range(n)[-1], tf.float64), n + 1)

    keep(np.ones(3))
    compiled = tf.function(read)
    for size in (6, 12, 9):
        y = np.arange(float(size))
        got, expected = compiled(y), read(tf.constant(y))
        assert float(got[0]) == float(expected[0]) == 3 * y.sum() + 3
        np.testing.assert_array_equal(got[1], np.reshape(y, (3, -1)))
        assert float(got[2]) == float(expected[2]) == 3.0 + 2.0
        assert got[3] == expected[3] == 4
    assert compiled.cache_info().kernels == 1


@pytest.mark.parametrize("wait", [True, False], ids=["compiled", "tiered"])
def test_a_size_kept_at_an_earlier_call_of_its_own_is_that_calls_number(wait):
    """A function that reads back a size it kept at its first call gets that number at
    every call, as eagerly: the first kernel's first call at another size traces again,
    finds another program, and leaves that kernel to its own shapes."""
    kept = []

    def scaled_sum(x):
        if not kept:
            kept.append(x.shape[0])
        return tf.reduce_sum(x * kept[0])

    compiled = tf.differentiable(scaled_sum, wait=wait)
    for n in (5, 3, 7, 3, 5):
        value, grad = compiled.value_and_grad(np.arange(float(n)))
        assert float(value) == 5 * n * (n - 1) / 2
        np.testing.assert_array_equal(grad, np.full(n, 5.0))
    assert compiled.cache_info().kernels == 2  # 5's alone, then any size's


def _made_of_sizes(x):
    """Values made from x's size by each creation op that takes one (zeros, ones, fill,
    range with each bound a size, one_hot, eye, linspace, pad, split, slice, tile) and the
    masks of diag, band_part and einsum's diagonal."""
    n = x.shape[0]
    counts = tf.cast(tf.range(n) + tf.range(1, n + 1) + tf.range(n, 0, -1), x.dtype)
    made = (tf.zeros(x.shape, x.dtype) + tf.ones((n,), x.dtype) * tf.fill([n], 2.0)
            + counts + tf.one_hot(1, n, dtype=x.dtype) + tf.linspace(x[0], x[-1], n))
    squares = tf.linalg.matvec(tf.eye(n, dtype=x.dtype), x * made)
    padded = tf.pad(squares, [[2, 2]], "SYMMETRIC")
    first, last = tf.split(tf.concat([padded, padded], 0), 2)
    head, rest = tf.split(first, [3, -1])
    band = tf.linalg.band_part(tf.linalg.diag(x) + x[:, None] * x[None, :], 1, 0)
    return (tf.reduce_sum(first * last) + tf.reduce_sum(head) * tf.reduce_sum(rest[::2])
            + tf.reduce_sum(tf.slice(x, [1], [n - 2])) + tf.reduce_sum(band ** 2)
            + tf.reduce_sum(tf.tile(x, [n // 2]) ** 3) + tf.reduce_sum(tf.einsum("ii->i", band)))


def _made_of_tf_shape(x):
    """The same from tf.shape(x), a traced tensor of sizes, its elements and slices, and
    integers computed from them (TensorFlow's idiom in a tf.function, where x.shape may
    hold None)."""
    sizes = tf.shape(x)
    n = sizes[0]
    grid = tf.reshape(tf.concat([x, x], 0), tf.concat([[2], sizes[-1:] * 2 // 2], 0))
    made = (tf.ones(sizes, x.dtype) + tf.zeros(tf.shape(x)[:0] + n, x.dtype)
            + tf.broadcast_to(x[:1], sizes[:1]) + tf.range(n, dtype=x.dtype)
            + tf.linalg.matvec(tf.eye(n, dtype=x.dtype), x) + tf.linspace(x[0], x[1], n)
            + tf.one_hot(2, n, dtype=x.dtype) + tf.reshape(tf.pad(x, [[1, n - 1]]), [2, n])[0])
    batched = tf.eye(2, batch_shape=sizes, dtype=x.dtype)[..., 0, 0]
    return tf.reduce_sum(grid * tf.fill(tf.shape(grid), 0.5)) + tf.reduce_sum(made * batched) \
        * tf.cast(tf.reduce_prod(sizes), x.dtype)


@pytest.mark.parametrize("function", [_made_of_sizes, _made_of_tf_shape])
def test_values_made_from_a_size_are_made_at_each_call(function):
    """A creation op given x.shape or tf.shape(x) reuses the kernel at another size (each
    compiled anew before, or raised); the compiled values and gradients are checked
    against eager by SRCXFORM_CHECK, the tests' default, and here."""
    f = tf.differentiable(function)
    for n in (6, 4, 9, 5, 4):
        x = np.linspace(0.5, 2.0, n) ** 2
        value, grad = f.value_and_grad(x)
        assert float(value) == pytest.approx(float(function(tf.constant(x))), rel=1e-13)
        eager = tf.Variable(x)
        with tf.GradientTape() as tape:
            y = function(eager)
        np.testing.assert_allclose(grad, tape.gradient(y, eager), rtol=1e-13)
    assert f.cache_info().kernels == 1


@pytest.mark.parametrize("make", [
    lambda n: tf.zeros([n - 4, 2]), lambda n: tf.fill([n - 4], 2.0), lambda n: tf.eye(n - 4),
    lambda n: tf.one_hot([0, 1], n - 4), lambda n: tf.ones((3, n - 4)),
    lambda n: tf.reshape(tf.zeros((0, n)), (n - 4, 0))])
def test_a_size_made_negative_raises_as_eagerly(make):
    """A kernel traced where n - 4 is a length is not run where it is negative: it
    traces again, and raises as eager does (zeros returned nonsense, helper 67)."""
    f = tf.differentiable(lambda x: tf.reduce_sum(tf.cast(make(x.shape[0]), x.dtype)) * x[0])
    assert float(f(np.ones(8))) == float(tf.reduce_sum(tf.cast(make(8), tf.float64)))
    for n in (3, 2):
        with pytest.raises(ValueError):
            make(n)
        with pytest.raises(ValueError):
            f(np.ones(n))


def test_a_kernel_right_at_every_size_is_traced_again_once_and_compiled_once():
    """The first call at another size traces again and finds the same program; after it
    the warm entry takes every size (no trace, no compile)."""
    traces = []

    @tf.function
    def total(x):
        if isinstance(x, Tracer):  # not the eager runs of SRCXFORM_CHECK, tests' default
            traces.append(x.shape)
        return tf.reduce_sum(tf.sin(x))

    for n in (5, 3, 7, 3, 5, 9):
        assert float(total(np.ones(n))) == pytest.approx(n * math.sin(1.0), rel=1e-14)
    assert len(traces) == 2 and total.cache_info().kernels == 1
    assert total.cache_info().misses == 1


def test_a_kernel_is_right_where_a_derived_size_of_its_is_0_or_1():
    """At 2 elements x[-2] is x[0]: traced again there, its index is the constant 0 under a
    guard, another program in the symbols, the same as that call runs it. The kernel is
    kept for 2, and the next other size finds it right at every size."""
    compiled = tf.differentiable(lambda x: tf.reduce_sum(x[-2] * x), wait=True)
    for n in (6, 2, 2, 7, 2, 9):
        value, grad = compiled.value_and_grad(np.arange(float(n)))
        assert float(value) == (n - 2) * n * (n - 1) / 2
        assert grad[n - 2] == n - 2 + n * (n - 1) / 2
    assert compiled.cache_info().kernels == 1


def test_a_size_of_a_float_dtype_compares_as_the_float_it_is():
    """At 2 elements n - 1 is 1, which the retrace folds into the float constant 1.0; the
    kernel's size, of that dtype, is compared as 1.0 too: one kernel."""
    compiled = tf.differentiable(
        lambda x: tf.reduce_sum(x) * tf.cast(x.shape[0] - 1, tf.float64), wait=True)
    for n in (5, 2, 7):
        np.testing.assert_array_equal(compiled.grad(np.ones(n)), np.full(n, n - 1.0))
    assert compiled.cache_info().kernels == 1


def test_a_slices_step_of_a_size_is_compared_as_the_size_it_is():
    """A step is printed, and compared, as the size it is (helper 64): a step kept at the
    first call was taken for the step the kernel computes (silently wrong at 8, 9 and 10
    elements), and a step computed from the size made a kernel for each size."""
    kept = []

    def kept_step(x):
        if not kept:
            kept.append(x.shape[0] - 2)
        return tf.reduce_sum(x[::kept[0]] ** 2)

    halves = tf.differentiable(lambda x: tf.reduce_sum(x[:: x.shape[0] // 2] ** 2), wait=True)
    compiled = tf.differentiable(kept_step, wait=True)
    for n in (7, 8, 9, 10):
        x = np.arange(float(n))
        value, grad = compiled.value_and_grad(x)
        assert float(value) == 25.0 and list(np.nonzero(grad)[0]) == [5]
        assert float(halves(x)) == float(np.sum(x[:: n // 2] ** 2))
    assert halves.cache_info().kernels == 1
    assert "index=(::n0 // 2,)" in halves.ir(np.ones(8))


def _sliced_by_tf_shape(x):
    n = tf.shape(x)[0]
    return tf.reduce_sum(x[:n // 2]) + tf.reduce_sum(x[n - 2:] * 3) + \
        tf.reduce_sum(x[1:n:2] ** 2) + tf.reduce_sum(x[:tf.size(x) - 7])


def test_slice_ends_made_of_tf_shape_are_the_sizes_they_hold():
    """`x[:tf.shape(x)[0] // 2]` raised TracingError (helper 71): TensorFlow's idiom for
    the size as a slice end, which x.shape[0] // 2 compiled already."""
    f = tf.differentiable(_sliced_by_tf_shape, wait=True)
    for n in (9, 6, 2, 0):
        x = np.arange(float(n)) + 1
        value, grad = f.value_and_grad(x)
        with tf.GradientTape() as tape:
            xt = tf.constant(x)
            tape.watch(xt)
            eager = _sliced_by_tf_shape(xt)
        assert float(value) == float(eager)
        np.testing.assert_array_equal(grad, tape.gradient(eager, xt).numpy())
    assert "n0 // 2" in f.ir(np.ones(9))


def _rows_summed_by_tf_shape(x):
    acc = tf.zeros([tf.shape(x)[1]], x.dtype)
    for i in tf.range(tf.shape(x)[0]):
        row = tf.reshape(x[i], [tf.shape(x)[1]]) + tf.ones([tf.shape(x)[1]], x.dtype)
        acc = acc + row * tf.reshape(tf.slice(x, [i, 0], [1, tf.shape(x)[1]]), [-1])
    return tf.reduce_sum(acc * acc)


def test_tf_shape_inside_a_loop_holds_sizes_of_one():
    """tf.shape(x) inside a converted loop, where a dim of x is 1, raised TracingError
    (helper 133): the 1 is a constant, which the loop body reads from the function's
    trace, and a size read from an enclosing trace was not followed. Over no rows the
    body's tf.slice, never run, raised that its block reached outside (helper 136)."""
    f = tf.function(_rows_summed_by_tf_shape)
    for shape in ((3, 2), (3, 1), (1, 3), (1, 1), (0, 2)):
        x = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
        assert float(f(x)) == float(_rows_summed_by_tf_shape(tf.constant(x)))


def test_a_captured_zero_of_another_sign_is_another_program():
    """A captured array compares as the CSE's do, the sign of a zero included (helper 65):
    its -0.0 read as the kernel's +0.0 gave atan2's other side, silently."""
    state = {"z": np.zeros(1)}

    def flipping(x):
        z = state["z"]
        state["z"] = -z
        return tf.reduce_sum(tf.math.atan2(z, -1.0 - x * x) * x)

    compiled = tf.differentiable(flipping, wait=True)
    for n, sign in ((5, 1.0), (3, -1.0)):
        value, grad = compiled.value_and_grad(np.ones(n))
        assert float(value) == pytest.approx(sign * n * math.pi, rel=1e-14)
        np.testing.assert_allclose(grad, sign * math.pi, rtol=1e-14)


def test_a_retrace_holding_a_size_to_a_number_tells_nothing_of_other_sizes():
    """At 2 elements the reversed slice's length is a constant: another program, right at
    2 alone. The first kernel is not kept to its own size for it: 9 and 4 run it."""
    compiled = tf.differentiable(lambda x: tf.reduce_sum(x[::-1] * x), wait=True)
    for n in (6, 2, 9, 4):
        x = np.arange(1.0, n + 1)
        value, grad = compiled.value_and_grad(x)
        assert float(value) == float(np.sum(x[::-1] * x))
        np.testing.assert_array_equal(grad, 2 * x[::-1])
    assert compiled.cache_info().kernels == 2


@pytest.mark.parametrize("dtype, n, factor", [(tf.uint8, 300, 44), (tf.int8, 200, -56),
                                              (tf.bool, 6, 1), (tf.float32, 5, 5)])
def test_a_size_cast_to_a_narrower_dtype_is_cast(dtype, n, factor):
    """A size cast to a dtype that cannot hold it wraps as NumPy's cast does (helper 65:
    the cast was folded away, the size kept whole)."""
    compiled = tf.differentiable(
        lambda x: tf.reduce_sum(x) * tf.cast(tf.cast(x.shape[0], dtype), tf.float64))
    value, grad = compiled.value_and_grad(np.ones(n))
    assert (float(value), float(grad[0])) == (n * factor, factor)


def test_a_static_float_of_another_sign_of_zero_is_another_argument():
    """tf.function keys a Python float by its repr: -0.0 is not 0.0 (helper 65)."""
    f = tf.function(lambda x, c: tf.reduce_sum(tf.math.atan2(c, -1.0 - x * x)))
    for c in (0.0, -0.0, 0.0, -0.0):
        assert float(f(np.ones(4), c)) == pytest.approx(math.copysign(4 * math.pi, c))


def test_sizes_kept_from_finished_traces_are_their_numbers_outside_them():
    """Outside their trace, two traces' sizes compare as their numbers (both are n0), an
    equality of one trace's two sizes found after it ends does not make them one symbol
    there (no guard checks it), and a kept size is an int as an argument or a bound
    (helper 61)."""
    kept = []

    @tf.function
    def keep(x, y):
        kept.append((x.shape[0], y.shape[0]))
        return tf.reduce_sum(x) + 10 * tf.reduce_sum(y) + 100 * y.shape[0]

    keep(np.ones(3), np.ones(3))
    keep(np.ones((5, 2)), np.ones(4))  # another rank: a second trace, its own n0
    (a, a_other), (b, _) = [k for k in kept if isinstance(k[0], Dim)]  # not a check's
    assert (a == b, a < b, max(a, b), sorted([b, a]), a in [b]) == (False, True, 5, [3, 5],
                                                                      False)
    assert a == a_other  # after the first trace: n1 stays n1 in its kernel
    for m in (5, 7):
        assert float(keep(np.ones(3), np.ones(m))) == 3 + 10 * m + 100 * m
    scaled = tf.function(lambda y, k: y * k)
    np.testing.assert_array_equal(scaled(np.ones(2), a), [3.0, 3.0])
    np.testing.assert_array_equal(scaled(np.ones(2), b), [5.0, 5.0])
    assert float(tf.fori_loop(0, a, lambda i, s: s + 1.0, tf.constant(0.0))) == 3.0


def test_numpy_functions_of_a_size_keep_a_numpy_scalars_dtype_as_eagerly():
    """np.float32(0.5) * n is float32 eagerly (NEP 50: n is a Python int); the size's
    __array__ (an int64 array) made it float64 compiled, and everything it met (helper
    72). Each is computed from the size's value, guarded, as before."""
    def fn(z):
        n = z.shape[0]
        return (tf.constant(np.float32(0.5) * n), tf.constant(np.int8(1) + n),
                tf.constant(np.maximum(np.float32(1), n)), z * (np.float32(0.5) * n))

    z = np.linspace(0.0, 1.0, 4).astype(np.float32)
    for got, want in zip(tf.differentiable(fn, wrt=())(z), fn(tf.constant(z))):
        assert np.asarray(got).dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want.numpy())
