"""srcxform.function (tf.function): a compiled function called with TensorFlow's rules:
results as the eager function returns them, Python values (floats too) as constants that
trace again when they change, a training step with a tape and an optimizer inside, the
decorator with and without arguments, input_signature, methods. One kernel serves every
array size (the documented difference)."""

import functools
import math

import numpy as np
import pytest

import srcxform as tf
from srcxform.tf_function import Function


def test_the_issues_reproducer_a_training_step():
    w = tf.Variable(np.ones(3))
    opt = tf.optimizers.SGD(0.1)

    @tf.function
    def step(x):
        with tf.GradientTape() as t:
            loss = tf.reduce_sum(w * x) ** 2
        opt.apply_gradients([(t.gradient(loss, w), w)])
        return loss

    x = np.array([1.0, 2.0, 3.0])
    want, losses = np.ones(3), []
    for _ in range(3):
        losses.append(step(x))
        want_loss = float(want @ x) ** 2
        want = want - 0.1 * 2 * float(want @ x) * x
        np.testing.assert_allclose(float(losses[-1]), want_loss, rtol=1e-12)
    np.testing.assert_allclose(w.numpy(), want, rtol=1e-12)
    assert isinstance(losses[0], tf.Tensor) and step.experimental_get_tracing_count() == 1
    assert opt.iterations.numpy() == 3


def scaled_log(x, gamma):
    return tf.reduce_sum(x) * math.log(gamma)


@pytest.mark.parametrize("decorate", [
    tf.function, tf.function(), tf.function(jit_compile=True),
    tf.function(reduce_retracing=True, experimental_relax_shapes=True),
])
def test_the_decorator_with_and_without_arguments(decorate):
    f = decorate(scaled_log)
    assert isinstance(f, Function) and f.python_function is scaled_log
    got = f(tf.constant([1.0, 2.0]), 2.0)
    want = scaled_log(tf.constant([1.0, 2.0]), 2.0)
    assert isinstance(got, tf.Tensor) and got.dtype == want.dtype == tf.float32
    np.testing.assert_allclose(got.numpy(), want.numpy())


def test_python_floats_are_constants_that_trace_again():
    f = tf.function(scaled_log)
    x = np.array([1.0, 2.0])
    for gamma in (2.0, 2.0, 3.0, 2.0):  # math.log of a traced float would raise
        np.testing.assert_allclose(float(f(x, gamma)), 3 * math.log(gamma))
    assert f.experimental_get_tracing_count() == 2
    for n in (3, 5, 9):  # another size: the same kernel (TensorFlow would trace again),
        f(np.ones(n), 2.0)  # whose first call there traces once more, to compare
    assert f.experimental_get_tracing_count() == 3
    g = tf.function(lambda x, gamma: tf.reduce_sum(x) * gamma)
    for gamma in (2.0, 5.0):  # a NumPy scalar is a traced value, as in TensorFlow
        assert float(g(np.ones(3), np.float64(gamma))) == 3 * gamma
    assert g.experimental_get_tracing_count() == 1

    signed = tf.function(lambda x, s: x * math.copysign(1.0, s))
    for s, want in ((math.nan, 1.0), (-math.nan, -1.0), (0.0, 1.0), (-0.0, -1.0)):
        assert float(signed(1.0, s)) == want  # helper 113: -NaN took NaN's trace (1.0)
    global SIGN  # captured, as attributes are: helper 119
    captured = tf.function(lambda x: x * math.copysign(1.0, SIGN))
    for SIGN, want in ((math.nan, 1.0), (-math.nan, -1.0), (-math.nan, -1.0), (0.0, 1.0)):
        assert float(captured(1.0)) == want


SIGN = 1.0


class Scaled:
    FACTOR = 2.0

    def __init__(self):
        self.scale = 2.0

    @property
    def by_property(self):
        return self.scale

    def by_method(self):
        return self.scale

    @tf.function
    def through_property(self, x):
        return x * self.by_property

    @tf.function
    def through_method(self, x):
        return x * self.by_method()

    def _times(self, x, k):
        return x * k

    times_two = functools.partialmethod(_times, k=2.0)

    def through_partial(self, x):
        return self.times_two(x)


def test_what_a_methods_properties_and_methods_read_is_checked():
    """Found by helper 113: the kernel kept the attribute's value of its trace (2.0)."""
    scaled = Scaled()
    x = tf.constant(1.0)
    assert float(scaled.through_property(x)) == float(scaled.through_method(x)) == 2.0
    scaled.scale = 5.0
    assert float(scaled.through_property(x)) == float(scaled.through_method(x)) == 5.0
    # Helper 119: a class's value read through self, a slot, and what a captured
    # callable object's __call__ reads kept their values of the trace too.
    slotted, called = Slotted(), Called()
    forms = [tf.function(lambda x: x * scaled.FACTOR), tf.function(lambda x: slotted(x)),
             tf.function(lambda x: called(x))]
    assert [float(f(x)) for f in forms] == [2.0, 2.0, 2.0]
    Scaled.FACTOR, slotted.s, called.s = 5.0, 5.0, 5.0
    try:
        assert [float(f(x)) for f in forms] == [5.0, 5.0, 5.0]
    finally:
        Scaled.FACTOR = 2.0
    # A descriptor of the class makes a new object at each read: not a value to probe
    # (helper 121: a partialmethod retraced at every call).
    doubled = tf.function(Scaled().through_partial)
    for _ in range(3):
        assert float(doubled(x)) == 2.0
    assert doubled.experimental_get_tracing_count() == 1


class Slotted:
    __slots__ = ("s",)

    def __init__(self):
        self.s = 2.0

    def __call__(self, x):
        return x * self.s


class Called:
    def __init__(self):
        self.s = 2.0

    def __call__(self, x):
        return x * self.s


def test_the_tracing_count_counts_every_run_of_the_python(monkeypatch):
    """It counted kernels: 2 where the Python had run 3 times (helper 97)."""
    monkeypatch.delenv("SRCXFORM_CHECK", raising=False)  # no eager run to compare
    calls = []
    h = tf.function(lambda x: (calls.append(x.shape), x * 2.0)[1])
    for shape in ((3,), (5,), (7,), (2, 2)):
        h(np.ones(shape))
    assert h.experimental_get_tracing_count() == len(calls) == 3


def test_side_effects_run_when_traced(monkeypatch):
    monkeypatch.delenv("SRCXFORM_CHECK", raising=False)
    traced = []

    @tf.function
    def f(x, n):
        traced.append(n)
        return tf.reduce_sum(x) * n

    for n in (1, 1, 2, 2, 1):
        f(np.ones(2), n)
    assert traced == [1, 2]


def test_input_signature_converts_and_refuses():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def double(x):
        return x * 2.0

    assert repr(double.input_signature[0]) == \
        "TensorSpec(shape=(None,), dtype=tf.float32, name=None)"
    got = double([1.0, 2.0, 3.0])  # a Python list becomes a float32 tensor
    assert isinstance(got, tf.Tensor) and got.dtype == tf.float32
    np.testing.assert_array_equal(got.numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(double(x=np.ones(5, np.float32)).numpy(), np.full(5, 2.0))
    with pytest.raises(TypeError, match=r"float64 and shape \(2,\).*TensorSpec"):
        double(tf.ones(2, tf.float64))  # a tensor of another dtype (an array converts)
    with pytest.raises(TypeError, match=r"shape \(2, 2\) does not match"):
        double(np.ones((2, 2), np.float32))


def test_a_method_and_a_gradient_through_it():
    class Model:
        def __init__(self, scale):
            self.w = tf.Variable([scale, 1.0])

        @tf.function
        def __call__(self, x):
            return tf.reduce_sum(self.w * x)

    a, b = Model(2.0), Model(3.0)
    x = tf.constant([1.0, 1.0])
    assert float(a(x)) == 3.0 and float(b(x)) == 4.0
    with tf.GradientTape() as tape:  # under a tape the function runs on it, as in TF
        y = a(x)
    np.testing.assert_array_equal(tape.gradient(y, a.w).numpy(), [1.0, 1.0])


def test_unknown_options_are_refused():
    with pytest.raises(TypeError, match="jit_compiel"):
        tf.function(scaled_log, jit_compiel=True)


def test_an_array_argument_is_a_tensor_inside_as_in_tensorflow():
    f = tf.function(lambda x, scale: x * scale)
    got = f(np.ones(2), 3.0)
    assert isinstance(got, tf.Tensor) and got.dtype == tf.float64  # eager NumPy: an array
    np.testing.assert_array_equal(got.numpy(), [3.0, 3.0])
    # ... and one it returns as it is comes back a Tensor too (it was the array itself).
    same = tf.function(lambda x, y: (x, y, x * 2.0))
    for _ in range(2):  # the general path, then the warm entry
        x, y, _ = same(np.ones(2), np.float32(2.0))
        assert isinstance(x, tf.Tensor) and isinstance(y, tf.Tensor) and y.dtype == tf.float32
        assert x.numpy().tolist() == [1.0, 1.0] and float(y) == 2.0
    t = tf.ones(2)
    assert tf.function(lambda x: x)(t) is t


class _Scaled:
    def __init__(self):
        self.w = tf.Variable(2.0)

    @tf.function
    def times(self, a):
        return a * self.w

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def thrice(self, a):
        return a * 3.0


def test_a_method_called_through_its_class_runs_as_bound():
    # Helper 97: M.f(m, x) raised "cannot pass a _Scaled" (TensorFlow runs it).
    m, x = _Scaled(), np.ones(2, np.float32)
    for _ in range(2):  # the slow path, then the warm entries passing it on
        assert _Scaled.times(m, x).numpy().tolist() == m.times(x).numpy().tolist() == [2, 2]
        assert _Scaled.thrice(m, x).numpy().tolist() == [3, 3]


def test_a_traced_value_kept_past_its_trace_raises_at_its_next_use():
    # Helper 97: saved[0] + 1.0 and reduce_sum(saved[0]) returned Tracers, quietly, until
    # a float() said "unknown while compiling".
    saved = []

    @tf.function
    def keeps(x):
        saved.append(x * 2.0)
        return x + 1.0

    keeps(np.ones(2))
    for use in (lambda: saved[0] + 1.0, lambda: tf.reduce_sum(saved[0])):
        with pytest.raises(tf.TracingError, match="used after its trace ended"):
            use()


def test_input_signature_covers_star_args_and_defaults():
    # Helper 97 (and helper 85 before): both raised "takes 2 arguments by its
    # input_signature, got 1"; TensorFlow conforms *args's elements and fills defaults.
    spec = tf.TensorSpec([None], tf.float32)

    @tf.function(input_signature=[spec, spec])
    def added(*xs):
        return xs[0] + xs[1]

    @tf.function(input_signature=[spec, tf.TensorSpec([], tf.float32)])
    def scaled(a, b=2.0):
        return a * b

    x = np.ones(2, np.float32)
    assert added(x, x).numpy().tolist() == [2.0, 2.0]
    assert [scaled(x).numpy().tolist(), scaled(x, 3.0).numpy().tolist(),
            scaled(x, b=4.0).numpy().tolist()] == [[2.0, 2.0], [3.0, 3.0], [4.0, 4.0]]
    assert scaled(x).dtype == tf.float32  # the default conformed to its spec
    with pytest.raises(TypeError, match=r"argument 'xs\[1\]' of dtype float64"):
        added(x, tf.ones(2, tf.float64))


def test_a_base_method_called_from_an_override_and_extra_positional_arguments():
    """Helper 102: A.f(self, x) inside B's override of f raised "cannot pass a B"; a
    positional argument past the input_signature went through unchecked (TensorFlow
    raises)."""
    class A:
        @tf.function
        def f(self, x):
            return x * 2.0

    class B(A):
        def f(self, x):
            return A.f(self, x) + 1.0

    assert B().f(np.array([1.0])).numpy().tolist() == [3.0]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def h(x, y=None):
        return x if y is None else x + y

    assert h([1.0]).numpy().tolist() == [1.0]
    with pytest.raises(TypeError, match="takes 1 positional arguments by its input_signature"):
        h([1.0], [5.0])


def test_a_traced_value_kept_past_its_trace_is_refused_wherever_it_goes():
    # Helper 102: v.assign(leak) and f(leak) raised raw AttributeErrors, tf.constant(leak)
    # and tf.convert_to_tensor(leak) returned the stale tracer.
    stash = []

    @tf.differentiable
    def keeps(x):
        stash.append(tf.sin(x))
        return tf.reduce_sum(x)

    keeps(np.ones(2))
    v = tf.Variable(np.zeros(2))
    for use in (lambda: v.assign(stash[0]), lambda: keeps(stash[0]),
                lambda: tf.constant(stash[0]), lambda: tf.convert_to_tensor(stash[0]),
                lambda: tf.convert_to_tensor(stash[0], tf.float64)):
        with pytest.raises(tf.TracingError, match="used after its trace ended"):
            use()


def test_a_function_set_on_a_class_under_another_name_is_a_method():
    # Helper 103: D.g = tf.function(impl); D.g(d, x) raised "cannot pass a D".
    class D:
        k = 2.0

    def impl(self, x):
        return tf.reduce_sum(x * self.k)

    D.g = tf.function(impl)
    d, x = D(), np.array([1.0, 2.0, 3.0])
    assert float(D.g(d, x)) == float(d.g(x)) == 12.0


def test_an_argument_by_keyword_or_by_position_is_one_trace():
    # Helper 113: h(x, 2), h(x, n=2) and h(n=2, x=x) traced three times (TensorFlow binds
    # them to one signature); a gradient wrt an argument given by keyword still raises.
    @tf.function
    def h(x, n, scale=1.0):
        return tf.reduce_sum(x) * n * scale

    x = np.ones(3)
    assert [float(h(x, 2)), float(h(x, n=2)), float(h(n=2, x=x))] == [6.0, 6.0, 6.0]
    assert h.experimental_get_tracing_count() == 1
    assert float(h(x, n=2, scale=3.0)) == float(h(x, 2, 3.0)) == 18.0
    assert h.experimental_get_tracing_count() == 2
    f = tf.differentiable(lambda w, b: tf.reduce_sum(w * b), wrt=0)
    np.testing.assert_array_equal(f.grad(x, b=2.0), f.grad(x, 2.0))
    assert f.cache_info().kernels == 1
    with pytest.raises(TypeError, match="wrt=0, but the function got 0 positional"):
        f.grad(w=x, b=2.0)


def test_an_input_signature_converts_numpy_values_as_tensorflow():
    # Helper 131: a float64 array or NumPy scalar for a float32 spec raised; TensorFlow
    # 2.21 converts it (a tensor of another dtype still raises, as there).
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def g(x):
        return x * 2

    for value in (np.array([1.0, 2.0]), np.array([1, 2], np.int64)):
        got = g(value)
        assert got.dtype == tf.float32 and got.numpy().tolist() == [2.0, 4.0]
    with pytest.raises(TypeError, match="does not match its input_signature"):
        g(tf.constant([1.0, 2.0], tf.float64))
