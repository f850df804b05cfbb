"""Plain Python if/while/for converted (srcxform/autograph): Python-valued conditions run as
written; traced ones run through cond/while_loop/fori_loop, whose results must be what the
Python statements compute.

Until compiled cond and loops exist, the traced forms are checked eagerly: the fixture
`every_tensor_traced` makes every tensor condition count as traced, so the converted
function runs cond/while_loop/fori_loop on concrete tensors (and the tape records them)
exactly as a compiled one traces them. TestCompiledDataDependent compiles them for real.
"""

import contextlib
import functools
import importlib.util
import inspect
import sys
import textwrap
import types
import warnings

import numpy as np
import pytest

import srcxform as tf
from srcxform import autograph
from srcxform.autograph import rewrite
from srcxform.autograph import runtime as autograph_runtime
from srcxform.core.tensor import Tensor
from srcxform.ad.trace import Tracer

SCALE = 2.0


def _line(fn, text):
    """The line number in this file of fn's first line that starts with text."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if line.strip().startswith(text))


@pytest.fixture
def every_tensor_traced(monkeypatch):
    monkeypatch.setattr(autograph_runtime, "traced_value",
                        lambda v: isinstance(v, (Tracer, Tensor)))


def _value_and_grad(fn, x, *rest):
    """fn(x, *rest) and d/dx of it, by the eager tape."""
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x, *rest)
    return y.numpy(), tape.gradient(y, x).numpy()


# ----- functions under test (their source is read, so they live in this file) -----


def branchy(x, n):
    total = 0.0
    for i in range(n):
        if i % 3 == 0:
            continue
        elif i > 7:
            break
        j = 0
        while j < i:
            j += 1
            if j == 4:
                return total * SCALE + x
            total += x * j
    else:
        total -= 1.0
    k = n
    while k > 0:
        k -= 2
    else:  # noqa: PLW0120 - the else clause is what this checks
        total += k
    return total * SCALE


def make_counter():
    calls, offset = 0, 1.0

    def counted(x, n):
        nonlocal calls
        calls += 1
        for i in range(n):
            if i % 2:
                x = x + offset
        return x

    def set_offset(value):
        nonlocal offset
        offset = value

    return counted, lambda: calls, set_offset


def piecewise(x):
    s = tf.reduce_sum(x)
    if s > 1.0:
        t = s * 2.0  # a temporary of one branch only: not the if's state
        y = x * t
    elif s > 0.0:
        y = tf.sin(x)
    else:
        y = -x * x
    return tf.reduce_sum(y)


def newton_sqrt(a):
    x = a
    step = 1.0  # a Python float: the loop starts in Python and goes on as a while_loop
    while abs(step) > 1e-12:
        step = (x * x - a) / (2.0 * x)
        x = x - step
    return x


def power_sum(x, n):
    acc = x * 0.0
    term = x / x
    for i in range(n):
        term = term * x
        if i % 2 == 1:
            acc = acc - term
        else:
            acc = acc + term
    return tf.reduce_sum(acc)


def strided(x, start, stop):
    acc = x * 0.0
    for i in range(start, stop, 3):
        acc = acc + x * tf.cast(i, x.dtype)
    return tf.reduce_sum(acc)


def nested(x):
    k = 0
    while tf.reduce_sum(x) < 20.0:
        if tf.reduce_max(x) > 3.0:
            x = x * 1.5 + 1.0
        else:
            x = x * 2.0
        k += 1
    return tf.reduce_sum(x) + tf.cast(k, tf.float64)


def bisect_cube_root(lo, hi, target):
    count = 0
    while hi - lo > 1e-9 and not count >= 200:
        mid = (lo + hi) / 2.0
        if mid ** 3 - target > 0:
            hi = mid
        else:
            lo = mid
        count += 1
    return (lo + hi) / 2.0


def flipping(x):
    b = x[0] > 0
    c = b
    i = 0
    while i < tf.reduce_sum(x):
        b = not b  # on a traced bool: logical_not, as TensorFlow's autograph makes it
        c = b and x[1] > 1 or x[2] < 0
        i += 1
    return tf.reduce_sum(tf.where(c, x, -x) * tf.cast(b, x.dtype) + x)


def python_logic(x):
    class Options:
        scale = 2.0
        doubled = scale and scale * 2  # a lambda here could not read `scale`

        def shown(self):
            return True and super().__repr__()  # a lambda's super() has no class

    n = 0 or (m := 3)  # a lambda would bind m in itself
    names = len(True and locals())  # a lambda's locals() are its own: none
    names += True and sys._getframe().f_locals.get("m", -1)  # and so is its frame

    def pair():
        got = True and (yield 1)  # a lambda's yield would make it a generator
        yield got

    if x[0] > 0:
        x = x * Options.doubled
    shown = Options().shown().startswith("<")
    return tf.reduce_sum(x * (m + n + names + len(list(pair())) + shown))


def one_sided(x):
    if tf.reduce_sum(x) > 0:
        z = x * 2.0
    return z * 1.0


def index_after(x, n):
    for i in range(n):
        x = x * 1.5
    return x + i


def first_assigned_inside(x):
    while tf.reduce_sum(x) < 10.0:
        x = x * 2.0
        last = x
    return last * 1.0


def breaks(x):
    while tf.reduce_sum(x) < 10.0:
        x = x * 2.0
        if tf.reduce_max(x) > 5.0:
            break
    return tf.reduce_sum(x)


def returns_early(x):
    if tf.reduce_sum(x) > 0:
        return tf.reduce_sum(x)
    return -tf.reduce_sum(x)


def continues(x, n):
    for i in range(n):
        if i == 0:
            continue
        x = x * 2.0
    return tf.reduce_sum(x)


def appends(x, n):
    out = []
    for i in range(n):
        out.append(x * float(i + 1))
    return tf.reduce_sum(tf.stack(out))


def counts_from_an_int(x, n):
    total = 0
    for i in range(n):
        total += tf.reduce_sum(x)
    return total


def counts_from_an_int_tensor(x, n):
    total = tf.zeros((), tf.int64)
    for i in range(n):
        total += tf.reduce_sum(x)
    return total


def carries_a_list(x):
    acc = []
    while tf.reduce_sum(x) < 10.0:
        x = x * 2.0
        acc = acc + [x]
    return x


def bad_branch(x):
    if tf.reduce_sum(x) > 0:
        y = tf.matmul(x, x)
    else:
        y = x
    return y


def seed_power(x, y):
    z = x
    for i in range(y):
        z = z * x
    return tf.reduce_sum(z)


def rows_squared(x):
    acc = x[0] * 0.0
    for i in range(x.shape[0]):
        acc = acc + x[i] * x[i]
    return tf.reduce_sum(acc)


def rows_appended(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i] * 2.0)
    return tf.reduce_sum(tf.stack(rows))


class Scaler:
    def __init__(self, k):
        self.k = k

    def apply(self, x, n):
        for i in range(n):
            x = x * self.k
        return x


# ----- Python-valued conditions: the statements run as written -----


def test_python_conditions_run_the_users_statements():
    converted = autograph.convert(branchy)
    assert converted is not branchy
    for n in range(12):
        assert converted(1.5, n) == branchy(1.5, n), n


def test_closures_and_globals_are_the_functions_own(monkeypatch):
    counted, calls, set_offset = make_counter()
    converted = autograph.convert(counted)
    assert converted(0.0, 4) == counted(0.0, 4) == 2.0
    assert calls() == 2  # nonlocal writes reach the closure's cell
    set_offset(10.0)
    assert converted(0.0, 4) == 20.0  # and rebinding it is seen
    assert autograph.convert(branchy)(1.5, 3) == 4.0 * SCALE
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 3.0)
    assert autograph.convert(branchy)(1.5, 3) == 4.0 * 3.0


def test_a_bound_method_is_converted_and_bound_again():
    scaler = Scaler(2.0)
    converted = autograph.convert(scaler.apply)
    assert converted.__self__ is scaler and converted.__func__ is not Scaler.apply
    assert converted(1.0, 3) == scaler.apply(1.0, 3) == 8.0


class Cubed:
    """A callable object whose __call__ branches on a traced value."""

    def __call__(self, x, scale=1.0):
        if tf.reduce_sum(x) > 0:
            y = tf.reduce_sum(x * x * x) * scale
        else:
            y = tf.reduce_sum(x)
        return y


def test_a_callable_object_and_a_partial_are_converted():
    """Their `if` raised TracingError at the line, with no AutographWarning: convert kept
    any callable that is not a function or a method as it was."""
    x = np.array([1.0, 2.0, 3.0])
    assert isinstance(autograph.convert(Cubed()), types.MethodType)
    for fn, scale in ((Cubed(), 1.0), (functools.partial(Cubed(), scale=2.0), 2.0)):
        np.testing.assert_allclose(tf.differentiable(fn).grad(x), 3 * scale * x**2)
        np.testing.assert_allclose(tf.differentiable(fn).grad(-x), np.ones(3))
        np.testing.assert_allclose(tf.hessian(fn)(x), np.diag(6 * scale * x))
    compiled = tf.differentiable(lambda x: tf.reduce_sum(x * x))
    assert autograph.convert(compiled) is compiled  # srcxform's own callables are kept
    compiled(x), compiled.grad(x)  # its warm entries: methods made at run time, no module
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # they were parsed: an AutographWarning
        assert autograph.convert(compiled) is compiled
        assert autograph.convert(compiled.grad) == compiled.grad


def test_vmap_and_check_grads_convert_the_function_they_are_given():
    """Traced inside a compiled caller, vmap's lanes ran fn as written, and check_grads'
    compiled gradient too: its `if` raised TracingError (helper 53). srcxform's own ops
    are not converted (not parsed)."""
    x, batch = np.array([1.0, 2.0, 0.5]), np.array([[1.0, 2.0, 0.5], [-1.0, -2.0, -0.5]])
    per_row = tf.differentiable(tf.vmap(functools.partial(Cubed(), scale=2.0)))(batch)
    np.testing.assert_allclose(per_row, [2 * np.sum(x**3), -np.sum(x)])
    np.testing.assert_allclose(tf.differentiable(lambda b: tf.reduce_sum(tf.vmap(Cubed())(b)))
                               .grad(batch), [3 * x**2, np.ones(3)])
    for point in (x, -x):
        tf.testing.check_grads(Cubed(), (point,))
    assert autograph.convert(tf.square) is tf.square


def halving_loop(x, n):
    """A loop whose body, defined here, branches on a traced value."""
    def body(i, x):
        if tf.reduce_sum(x) > 1.0:
            x = x * 0.5
        else:
            x = x + 1.0
        return x

    return tf.reduce_sum(tf.fori_loop(0, n, body, x))


def test_a_function_defined_in_the_converted_one_is_converted_with_it():
    """A while_loop's or fori_loop's body written inside the function: its `if` on a
    traced value raised TracingError ("bool() of a traced value"). TensorFlow's autograph
    converts such functions with the one it converts."""
    x, n = np.ones(3), np.int64(5)
    # the halvings and additions along the way: x 1 -> 0.5 -> 0.25 -> 1.25 -> 0.625 -> 0.3125
    compiled = tf.differentiable(halving_loop)
    assert compiled(x, n) == halving_loop(tf.constant(x), 5).numpy() == 3 * 0.3125
    np.testing.assert_array_equal(compiled.grad(x, n), np.full(3, 0.5 ** 4))


def test_a_defined_generator_is_kept_and_a_defined_functions_decorator_runs():
    made = []

    def recorded(fn):
        made.append(fn.__name__)
        return fn

    def outer(x, n):
        def evens():
            for k in range(n):
                if k % 2 == 0:
                    yield k

        @recorded
        def scaled(x):
            if tf.reduce_sum(x) > 0:
                x = x * float(sum(evens()))
            return x
        return tf.reduce_sum(scaled(x))

    f = tf.differentiable(outer)
    np.testing.assert_array_equal(f.grad(np.ones(2), 5), [6.0, 6.0])  # 0 + 2 + 4
    np.testing.assert_array_equal(f.grad(-np.ones(2), 5), [1.0, 1.0])
    assert made and set(made) == {"scaled"}  # its decorator ran at each definition


def with_a_class(x):
    class Base:
        def scale(self):
            return 2.0

    class Branching(Base):
        def apply(self, v):
            if tf.reduce_sum(v) > 0:
                v = v * super().scale()
            else:
                v = v * 3.0
            return v
    return tf.reduce_sum(Branching().apply(x))


class Halving(Scaler):
    def apply(self, x, n):
        if tf.reduce_sum(x) > 0:
            x = super().apply(x, n) * 0.5
        return x


def test_the_methods_of_a_class_defined_in_the_converted_function_are_converted():
    """And `super()` in a traced branch finds its `self` (the branch is a function of its
    own: it raised TypeError, a module's class's method too)."""
    f = tf.differentiable(with_a_class)
    np.testing.assert_array_equal(f.grad(np.ones(2)), [2.0, 2.0])
    np.testing.assert_array_equal(f.grad(-np.ones(2)), [3.0, 3.0])
    method = tf.differentiable(Halving(3.0).apply)
    np.testing.assert_array_equal(method(np.ones(2), 2), [4.5, 4.5])  # 1 * 3 * 3 / 2
    np.testing.assert_array_equal(method(-np.ones(2), 2), [-1.0, -1.0])


def appending(x):
    hits = []

    def g(v):
        if tf.reduce_sum(v) > 0:
            hits.append(1)
            v = v * 2.0
        return v
    return tf.reduce_sum(g(x)) * (len(hits) + 1.0)


def compiling_inside(x):
    def g(v):
        if tf.reduce_sum(v) > 0:
            v = v * 2.0
        return tf.reduce_sum(v), g.__qualname__
    return tf.differentiable(lambda v: g(v)[0])(x), g(x)[1]


def test_a_defined_function_keeps_the_rules_names_and_futures_of_the_converted_one(
        tmp_path):
    """Found by helper 55 in the first form of the conversion of defined functions: a
    list of the enclosing function changed in a traced branch gave a wrong value silently
    (both branches ran its append), and a defined function converted again (compiled
    inside) warned of a duplicate argument; its __qualname__ named autograph's factory,
    and `from __future__ import annotations` was lost (an annotation naming a class
    defined later raised NameError)."""
    with pytest.raises(tf.errors.TracingError, match=r"hits\.append\(1\)\n  an in-place change"):
        tf.differentiable(appending)(np.ones(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value, name = tf.differentiable(compiling_inside)(np.ones(2))
    assert value == 4.0 and name == "compiling_inside.<locals>.g"
    path = tmp_path / "future_annotations.py"
    path.write_text(textwrap.dedent("""\
        from __future__ import annotations
        import srcxform as tf

        def doubled(x):
            def g(v: Later) -> Later:
                for _ in range(2):
                    v = v * 2.0
                return v

            class Later:
                pass
            return tf.reduce_sum(g(x))
        """))
    spec = importlib.util.spec_from_file_location("future_annotations", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert tf.differentiable(module.doubled)(np.ones(2)) == 8.0


def test_functions_without_readable_source_or_control_flow_are_kept():
    def plain(x):
        return x * 2

    double = lambda x: x * 2
    namespace = {}
    exec("def made(x):\n    if x > 0:\n        return x\n    return -x\n", namespace)  # noqa: S102
    for fn in (plain, double, len, np.add):
        assert autograph.convert(fn) is fn
    with pytest.warns(tf.AutographWarning, match="made: its source cannot be read"):
        assert autograph.convert(namespace["made"]) is namespace["made"]
    # A lambda's traced condition fails as it did, at the user's line.
    f = tf.differentiable(lambda x: x if tf.reduce_sum(x) > 0 else -x)
    with pytest.raises(tf.TracingError, match=r"test_autograph.py:\d+.*\n.*bool\(\) of a traced"):
        f(np.ones(2))


def test_a_failing_rewrite_warns_and_traces_the_function_as_written(monkeypatch):
    def fail(self):
        raise NotImplementedError("a construct the rewriting does not know")

    def counted(x, n):
        for i in range(n):
            x = x * 2.0
        return x

    monkeypatch.setattr(rewrite._Converter, "function", fail)
    with pytest.warns(tf.AutographWarning, match="a construct the rewriting"):
        assert autograph.convert(counted) is counted


def test_the_rewritten_source_reads_as_the_users_with_both_forms():
    text = autograph.source(piecewise)
    line = _line(piecewise, "if s > 1.0")
    assert f"cond__{line} = s > 1.0" in text
    assert f"ag__.if_stmt(cond__{line}, if_true__{line}, if_false__{line}" in text
    assert f"elif cond__{line}:" in text and "y = tf.sin(x)" in text
    assert autograph.source(len) is None


def test_static_loops_still_unroll_into_the_same_kernel(monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    x = np.array([0.5, -1.5])
    on = tf.differentiable(seed_power)
    off = tf.differentiable(seed_power, autograph=False)
    assert on.source(x, 3) == off.source(x, 3)
    value, grad = on.value_and_grad(x, 3)
    np.testing.assert_allclose(value, np.sum(x ** 4))
    np.testing.assert_allclose(grad, 4 * x ** 3)


def test_a_loop_over_a_shape_with_an_in_place_change_unrolls_as_before(monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    x = np.arange(6.0).reshape(3, 2)
    value, grad = tf.differentiable(rows_appended).value_and_grad(x)
    np.testing.assert_allclose(value, 2 * x.sum())
    np.testing.assert_allclose(grad, np.full_like(x, 2.0))


def test_a_loop_over_a_shape_compiles_and_agrees_with_eager(monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    f = tf.differentiable(rows_squared)
    for x in (np.arange(6.0).reshape(3, 2), np.arange(10.0).reshape(5, 2) / 7):
        value, grad = f.value_and_grad(x)
        np.testing.assert_allclose(value, np.sum(x * x), rtol=1e-12)
        np.testing.assert_allclose(grad, 2 * x, rtol=1e-12)


# ----- traced conditions: cond / while_loop / fori_loop compute what Python does -----


@pytest.mark.usefixtures("every_tensor_traced")
class TestTracedForms:
    def test_if_elif_else_on_both_sides_of_each_branch_point(self):
        converted = autograph.convert(piecewise)
        for x in ([0.3, 0.9], [0.3, 0.1], [-0.3, 0.1], [-2.0, 0.5]):
            x = np.array(x)
            value, grad = _value_and_grad(converted, x)
            want_value, want_grad = _value_and_grad(piecewise, x)
            np.testing.assert_array_equal(value, want_value)
            np.testing.assert_array_equal(grad, want_grad)

    def test_newton_switches_from_python_to_while_loop_mid_loop(self):
        converted = autograph.convert(newton_sqrt)
        for a in (0.25, 2.0, 1e4):
            value, grad = _value_and_grad(converted, np.float64(a))
            assert (value, grad) == _value_and_grad(newton_sqrt, np.float64(a))
            np.testing.assert_allclose(value, np.sqrt(a), rtol=1e-14)
            np.testing.assert_allclose(grad, 0.5 / np.sqrt(a), rtol=1e-10)

    def test_for_over_a_traced_range_with_an_if_on_its_index(self):
        converted = autograph.convert(power_sum)
        x = np.array([0.5, -1.25])
        for n in range(5):
            value, grad = _value_and_grad(converted, x, tf.constant(n))
            want_value, want_grad = _value_and_grad(power_sum, x, n)
            np.testing.assert_allclose(value, want_value, rtol=1e-15)
            np.testing.assert_allclose(grad, want_grad, rtol=1e-15)

    @pytest.mark.parametrize("start, stop", [(1, 11), (1, 10), (2, 2), (5, 1)])
    def test_a_stepped_range_runs_as_many_steps(self, start, stop):
        x = np.array([1.0, 2.0])
        got = autograph.convert(strided)(tf.constant(x), tf.constant(start), tf.constant(stop))
        assert float(got) == float(strided(tf.constant(x), start, stop))

    def test_nested_branches_in_a_loop_carry_their_counter(self):
        x = np.array([0.5, 0.25])
        value, grad = _value_and_grad(autograph.convert(nested), x)
        want_value, want_grad = _value_and_grad(nested, x)
        np.testing.assert_array_equal(value, want_value)
        np.testing.assert_array_equal(grad, want_grad)

    def test_and_or_not_in_a_traced_test(self):
        converted = autograph.convert(bisect_cube_root)
        args = [tf.constant(np.float64(v)) for v in (0.0, 3.0, 2.0)]
        got, want = converted(*args), bisect_cube_root(*args)
        assert float(got) == float(want) and abs(float(got) - 2 ** (1 / 3)) < 1e-9
        assert autograph_runtime.or_(tf.constant(False), lambda: tf.constant(True)).numpy()
        assert autograph_runtime.or_(0, lambda: 0.0) == 0.0  # Python's own: the last value
        assert autograph_runtime.and_([], lambda: 1 / 0) == []  # and its short circuit

    def test_a_variable_assigned_in_one_branch_raises_where_it_is_used(self):
        with pytest.raises(tf.TracingError) as err:
            autograph.convert(one_sided)(tf.constant([1.0, 2.0]))
        message = str(err.value)
        assert f"test_autograph.py:{_line(one_sided, 'return z')}:" in message
        assert f"only in the true branch of the if at test_autograph.py:" \
               f"{_line(one_sided, 'if tf.')}" in message

    def test_a_loop_index_and_a_name_first_assigned_in_a_loop_have_no_value_after(self):
        with pytest.raises(tf.TracingError, match="index of the loop over a traced range"):
            autograph.convert(index_after)(tf.constant(1.0), tf.constant(3))
        with pytest.raises(tf.TracingError, match="'last' has no value here: it is first "
                                                  "assigned inside the while loop"):
            autograph.convert(first_assigned_inside)(tf.constant([1.0]))

    def test_state_that_is_not_a_tensor_is_refused_naming_it(self):
        with pytest.raises(tf.TracingError, match="'acc' is a list in the while loop"):
            autograph.convert(carries_a_list)(tf.constant([1.0]))

    def test_errors_inside_a_branch_name_the_users_line(self):
        with pytest.raises(tf.ShapeError) as err:
            autograph.convert(bad_branch)(tf.constant([1.0, 2.0]))
        assert f"test_autograph.py:{_line(bad_branch, 'y = tf.matmul')}: y = tf.matmul(x, x)" \
            in str(err.value)

    def test_in_place_changes_run_for_python_ranges_and_are_refused_for_traced_ones(self):
        assert float(autograph.convert(appends)(tf.constant(1.0), 3)) == 6.0
        with pytest.raises(tf.TracingError) as err:
            autograph.convert(appends)(tf.constant(1.0), tf.constant(3))
        assert f"test_autograph.py:{_line(appends, 'out.append')}: out.append" in str(err.value)
        assert "an in-place change inside a for loop" in str(err.value)


# ----- what cannot be converted raises at its line, compiled too -----


@pytest.mark.parametrize("fn, args, text, advice", [
    (breaks, (np.ones(2),), "break", "put the exit condition in the loop's test"),
    (returns_early, (np.ones(2),), "return tf.reduce_sum(x)", "return it after the if"),
    (continues, (np.ones(2), np.int64(3)), "continue", "under `if not ...:`"),
])
def test_break_continue_return_on_a_traced_condition_raise_at_their_line(fn, args, text,
                                                                         advice):
    with pytest.raises(tf.TracingError) as err:
        tf.differentiable(fn)(*args)
    message = str(err.value)
    assert f"test_autograph.py:{_line(fn, text)}: {text}" in message and advice in message


def test_a_loop_variable_changing_dtype_is_named_as_the_user_wrote_it():
    with pytest.raises(tf.TracingError) as err:
        tf.differentiable(counts_from_an_int_tensor)(np.ones(2), np.int64(3))
    message = str(err.value)
    assert "the body changes loop variable 'total' from i64[] to f64[]" in message
    line = _line(counts_from_an_int_tensor, "for i")
    assert f"at test_autograph.py:{line}: for i in range(n):" in message


def test_a_loop_variable_from_a_python_number_takes_the_dtype_the_body_gives():
    """As eagerly (total = 0, then a float64 added): the loop starts from 0.0."""
    compiled = tf.differentiable(counts_from_an_int)(np.ones(2), np.int64(3))
    eager = counts_from_an_int(tf.constant(np.ones(2)), 3)
    assert np.asarray(compiled).dtype == eager.dtype == np.float64
    assert float(compiled) == eager.numpy() == 6.0


def test_autograph_off_traces_the_function_as_written():
    with pytest.raises(tf.TracingError, match="bool\\(\\) of a traced value"):
        tf.differentiable(returns_early, autograph=False)(np.ones(2))


# ----- compiled: needs cond / while_loop / fori_loop that compile traced predicates -----


class TestCompiledDataDependent:
    """Data-dependent branches and loops compiled: one kernel for every branch taken,
    trip count and size, agreeing with the eager tape and with finite differences."""

    def test_piecewise_on_both_sides_one_kernel(self):
        f = tf.differentiable(piecewise)
        for x in ([0.3, 0.9], [0.3, 0.1], [-0.3, 0.1]):
            x = np.array(x)
            value, grad = f.value_and_grad(x)
            want_value, want_grad = _value_and_grad(piecewise, x)
            np.testing.assert_allclose(value, want_value, rtol=1e-12)
            np.testing.assert_allclose(grad, want_grad, rtol=1e-12)
            eps = 1e-6
            fd = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(2)]
            np.testing.assert_allclose(grad, fd, rtol=1e-6)
        assert f.cache_info().kernels == 2  # one a form (value, value_and_grad), both sides

    def test_a_closure_reads_the_variables_of_this_trip_or_branch(self):
        """Helper 105: a lambda or def made before a traced loop or if read the value its
        variable had before it (22.0 eagerly, 4.0 compiled; gradient [2, 2] for [8, 8]),
        and a while whose test called one never ended."""
        def loop(x, n):
            s = x
            doubled = lambda: s * 2.0
            for i in tf.range(n):
                s = doubled() + 1.0
            return tf.reduce_sum(s)

        def branch(x, n):
            s, r = x, x

            def step():
                return tf.sin(s) + x
            if tf.reduce_sum(x) > 0:
                s = s + 10.0
                r = step()
            return tf.reduce_sum(r)

        def test_calls(x, n):
            s = x
            small = lambda: tf.reduce_sum(s) < 5.0
            while small():
                s = s * 2.0
            return tf.reduce_sum(s)

        x, n = np.array([0.3, 0.7]), np.int32(3)
        for fn in (loop, branch, test_calls):
            value, grad = tf.differentiable(fn).value_and_grad(x, n)
            want_value, want_grad = _value_and_grad(lambda x, fn=fn: fn(x, n), x)
            np.testing.assert_allclose(value, want_value, rtol=1e-12)
            np.testing.assert_allclose(grad, want_grad, rtol=1e-12)
        assert value == 8.0 and grad.tolist() == [8.0, 8.0]

    def test_while_keeps_numpy_values_and_says_what_it_cannot_run(self):
        """Helper 105: a while on a traced test made NumPy carries Tensors (for and
        fori_loop kept them); a `:=` in its test raised a raw UnboundLocalError; a raise
        in a traced if's branch ran for a valid input, saying nothing of why."""
        def sines(x, n):
            i = 0
            while i < n:
                x, n, i = np.sin(x), n - 0, i + 1
            return x, n

        x = np.array([0.3, 0.7])
        got, want = tf.differentiable(sines, wrt=())(x, np.int32(3)), sines(x, np.int32(3))
        assert [type(g) for g in got] == [type(w) for w in want] == [np.ndarray, np.int32]
        np.testing.assert_array_equal(got[0], want[0])

        def walrus(x, n):
            k = 0
            while (k := k + 1) <= n:
                x = tf.sin(x)
            return tf.reduce_sum(x)

        with pytest.raises(tf.errors.TracingError, match="a `:=` in the test inside a while"):
            tf.differentiable(walrus)(x, np.int32(3))

        def checks(x):
            if tf.reduce_any(x < 0):
                raise ValueError("negative input")
            return tf.reduce_sum(x)

        with pytest.raises(ValueError, match="negative input") as raised:
            tf.differentiable(checks)(x)
        assert "a raise there runs for every input" in "".join(
            getattr(raised.value, "__notes__", ["a raise there runs for every input"]))

    def test_loop_indices_are_python_ints_and_tf_range_takes_its_bounds_dtype(self):
        """Helper 109, on this session's fixes: a float traced bound to range() truncated
        (eagerly a TypeError; tf.range(2.5) has 3 trips); tf.range's index was int32
        whatever its bounds' dtype; a Python-number carry meeting a loop's index, or
        promoted by a while's body, came back a float64 Tensor; a generator expression
        made before an if read the value before it; a := inside a lambda in a while's
        test was refused."""
        def summed(x, n):
            acc, total = 0.0, 0
            for i in range(len(x)):
                acc = acc + i
            for i in tf.range(n):
                total = total + i
            return acc * np.float32(2.0), total

        def promoted(x):
            s, acc = x[0], 0.0
            while s < 5.0:
                s, acc = s * 2.0, acc + s
            return acc

        def lazy(x):
            s = tf.reduce_sum(x)
            gen = (s * k for k in range(3))
            if s > 0:
                s = s * 2.0
                t = sum(gen)
            else:
                t = s
            return t

        def own_scope(x):
            s = tf.reduce_sum(x)
            while (lambda: (t := s * 2.0))() < 5.0:  # noqa: PLC3002 - the lambda's own t
                s = s + 1.0
            return s

        x = np.array([0.5, 1.5, -0.3])
        for args in ((x, np.int16(3)), (x, np.int8(127))):
            got, want = tf.differentiable(summed, wrt=())(*args), summed(*args)
            assert [(type(g), g.dtype) for g in got] == [(type(w), w.dtype) for w in want]
            assert [np.asarray(g).tolist() for g in got] == [np.asarray(w).tolist()
                                                             for w in want]
        got, want = tf.differentiable(promoted, wrt=())(x), promoted(x)
        assert type(got) is type(want) is np.float64 and got == want == 7.5
        for fn in (lazy, own_scope):
            value, grad = tf.differentiable(fn).value_and_grad(x)
            want_value, want_grad = _value_and_grad(fn, x)
            np.testing.assert_allclose(value, want_value, rtol=1e-12)
            np.testing.assert_allclose(grad, want_grad, rtol=1e-12)
        with pytest.raises(TypeError, match="a traced bound of dtype float64"):
            tf.differentiable(summed)(x, np.float64(2.5))

    def test_ranges_over_narrow_integer_bounds_count_their_trips_as_python(self):
        """Helper 105: range(0, n, 2) with n = np.int8(127) ran no trip compiled (the trip
        count wrapped in int8), and range(n, 0, -1) of a uint8 n raised."""
        def strided(x, n):
            s = tf.constant(0.0, tf.float64)
            for i in range(0, n, 2):
                s = s + 1.0
            for i in range(n, 0, -1):
                s = s + tf.cast(i, tf.float64)
            return s * x

        f, x = tf.differentiable(strided), np.array([0.5])
        for n in (np.int8(127), np.uint8(255), np.int16(300)):
            want = (len(range(0, int(n), 2)) + sum(range(int(n), 0, -1))) * 0.5
            assert f(x, n).numpy().tolist() == strided(tf.constant(x), n).numpy().tolist() \
                == [want]

    def test_newton_while_every_trip_count_one_kernel(self):
        f = tf.differentiable(newton_sqrt)
        for a in (1.0, 0.25, 2.0, 1e4, 1e-6):
            value, grad = f.value_and_grad(a)
            np.testing.assert_allclose(value, np.sqrt(a), rtol=1e-12)
            np.testing.assert_allclose(grad, 0.5 / np.sqrt(a), rtol=1e-8)
        assert f.cache_info().kernels == 1
        line = _line(newton_sqrt, "while abs(step)")
        assert f"test_autograph.py:{line}: while abs(step) > 1e-12:" in f.source(2.0)

    def test_and_or_not_anywhere_on_traced_values_are_logical_ops(self):
        f = tf.differentiable(flipping)
        for x in ([3.0, 2.0, 1.0], [1.0, 0.5, -0.5], [2.0, 0.5, -0.5], [-1.0, 3.0, 1.0]):
            x = np.array(x)
            value, grad = f.value_and_grad(x)
            want_value, want_grad = _value_and_grad(flipping, x)
            assert value == want_value and np.array_equal(grad, want_grad)
        g = tf.differentiable(python_logic)  # Python's own and, or where they must stay
        for x in ([1.0, 2.0], [-1.0, 2.0]):
            assert g(np.array(x)) == python_logic(tf.constant(x)).numpy()

    def test_bisection_with_a_data_dependent_while_one_kernel(self):
        f = tf.differentiable(bisect_cube_root, wrt=2)
        for target in (2.0, 5.0, 0.5):
            value, grad = f.value_and_grad(0.0, 3.0, target)
            np.testing.assert_allclose(value, target ** (1 / 3), rtol=1e-8)
            assert grad == 0.0  # built from the bounds alone, as the eager tape finds too
        assert f.cache_info().kernels == 1

    def test_a_while_whose_body_changes_nothing_runs_as_eagerly(self):
        """It carried no value, and while_loop's 'loop_vars must be provided' came out
        for a call the user never wrote (helper 74)."""
        def idle(x):
            while x > 1.0:
                pass
            return x * 2

        f = tf.differentiable(idle)
        assert f.value_and_grad(0.5) == (1.0, 2.0) == (float(idle(tf.constant(0.5))), 2.0)

    def test_python_number_carries_stay_python_numbers_as_eagerly(self):
        """A while's Python-number carries were float32 and int32 tensors compiled
        (16777216.0 + 1.0 three times stayed 16777216; an int wrapped past 2**31), where
        eagerly they are Python's; and any loop's Python-number result was a strong float64
        after it, so `t * x32` was float64 compiled, float32 eagerly (helper 72)."""
        def loops(x):
            s, n, left = 16777216.0, 2**31 - 2, x[0]
            while left > 0:
                s, n, left = s + 1.0, n + 1, left - 1.0
            t = 0.0
            for _ in tf.range(tf.shape(x)[0]):
                t = t + 0.1
            return s, n, t * x, t

        x = np.array([3.0, 1.0], np.float32)
        got, want = tf.differentiable(loops, wrt=())(x), loops(tf.constant(x))
        assert got[:2] == want[:2] == (16777219.0, 2**31 + 1) and type(got[1]) is int
        assert got[3] == want[3] == 0.1 + 0.1 and type(got[3]) is float
        np.testing.assert_array_equal(got[2], want[2].numpy())
        assert np.asarray(got[2]).dtype == want[2].dtype == np.float32

    def test_a_python_number_carry_given_a_tensor_is_a_tensor_as_eagerly(self):
        """`c = 0.0`, then `c = c + tf.reduce_sum(0.5)` in a loop: eagerly c is a (weak)
        Tensor after it, compiled it came back a Python float, as was any weak carry and
        any weak result of an if, such as tf.exp(s) of a Python float s (helper 92)."""
        def loops(x, s):
            c, d, e = 0.0, 0.0, 0.0
            for r in x:
                c = c + tf.reduce_sum(s * 5)
                d = d + 0.5
            while e < 1.0:
                e = e + tf.exp(s - 0.1)
            if x[0] > 0:
                y, z = tf.exp(s), 0.1
            else:
                y, z = 0.2, 0.2
            return c, d, e, y, z

        x = np.array([1.0, 2.0], np.float32)
        got, want = tf.differentiable(loops, wrt=())(x, 0.1), loops(tf.constant(x), 0.1)
        assert [type(g) for g in got] == [type(w) for w in want] == [tf.Tensor, float, tf.Tensor, tf.Tensor,
                                                                float]
        assert [float(g) for g in got] == [float(w) for w in want] == pytest.approx(
            [1.0, 1.0, 1.0, np.exp(0.1), 0.1])

    def test_numpy_values_and_weak_tensors_in_loops_and_ifs_are_what_they_are_eagerly(self):
        """Helper 98's leftovers: a carry or an if's result computed with NumPy on a NumPy
        argument came back a Tensor compiled (eagerly np.float32), and a weak op of Python
        numbers alone (tf.exp(0.1)) carried as a Python number: float64 compiled, float32
        eagerly. Autograph's own Python numbers are marked (PythonNumber) so a weak Tensor
        is told apart from them."""
        def numpy_loops(x):
            c, k, i = 0.0, tf.exp(0.1), 0
            for r in x:
                c = c + np.sum(r)
            while np.sum(x) > i:
                k, i = k * 2.0, i + 1
            if np.sum(x) > 0:
                y = np.float32(2.0)
            else:
                y = np.float32(3.0)
            return c, k, y

        f = tf.differentiable(numpy_loops, wrt=())
        for x in (np.ones((3, 2), np.float32), -np.ones((2, 2), np.float32)):
            got, want = f(x), numpy_loops(x)
            assert [type(g) for g in got] == [type(w) for w in want] == [
                np.float32, tf.Tensor, np.float32]
            assert [float(g) for g in got] == [float(w) for w in want]
            assert got[1].dtype == want[1].dtype == np.float32

    def test_an_if_giving_python_numbers_gives_a_python_number_as_eagerly(self):
        """Its result took the true branch's storage, float64, as a strong dtype: `y * x32`
        was float64 compiled and float32 eagerly, in both of these (found with helper 72's
        loop carries)."""
        def branches(x):
            if x[0] > 0:
                y, z = 0.1, 0.2
            else:
                y, z = 0.3, x[1]
            return y * x, z * x, y

        for x in (np.array([1.0, 4.0], np.float32), np.array([-1.0, 4.0], np.float32)):
            got, want = tf.differentiable(branches, wrt=())(x), branches(tf.constant(x))
            for g, w in zip(got[:2], want[:2]):
                np.testing.assert_array_equal(np.asarray(g), w.numpy())
                assert np.asarray(g).dtype == np.float32
            assert got[2] == want[2] and type(got[2]) is float

    def test_python_numbers_from_loops_meet_branches_as_eagerly(self):
        """A while's Python-number carry beside an if's literal, a loop inside an if, and an
        if inside a while giving a tensor or a Python number each raised TracingError
        once loop results stayed Python numbers (helper 76): the cond compared a traced
        Python number's storage with a literal's TensorFlow dtype."""
        def mixed(x):
            t, k = 0.0, 0
            while x[0] > t:
                t, k = t + 0.25, k + 1
            if x[1] > 1:
                s, n = t, k
            else:
                s, n = -0.5, 5
            if x[1] > 0:
                u = 0.0
                while x[0] > u:
                    u = u + 0.1
            else:
                u = 0.5
            v, i = 0.0, 0
            while x[0] > i:
                if x[1] > i:
                    v = v + x[1]
                else:
                    v = v + 0.1
                i = i + 1
            return s, n, u, v

        x = np.array([0.6, 2.0], np.float32)
        got, want = tf.differentiable(mixed, wrt=())(x), mixed(tf.constant(x))
        assert got[:3] == want[:3] and got[0] == 0.75 and type(got[1]) is int
        np.testing.assert_array_equal(np.asarray(got[3]), want[3].numpy())
        assert np.asarray(got[3]).dtype == np.float32

    def test_a_python_int_carry_the_body_makes_a_float_is_one_float(self):
        """`total = 0`, then `total = total + 0.5` in a while or a for over a traced range
        raised 'changes total from i64[]~ to f64[]~' (the while's since its carries stayed
        Python numbers; the for's before), and so did such a scan's accumulator."""
        def totals(x):
            total, i = 0, 0
            while i < x[0]:
                total, i = total + 0.5, i + 1
            other = 0
            for _ in tf.range(tf.shape(x)[0]):
                other = other + 0.25
            return total * x, other * x, tf.scan(lambda a, e: 2.5, x, initializer=1)

        x = np.array([3.0, 1.0], np.float32)
        got, want = tf.differentiable(totals, wrt=())(x), totals(tf.constant(x))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), w.numpy())
            assert np.asarray(g).dtype == w.dtype == np.float32

        def narrowed(x):  # int to bool is no widening: it raises (it recursed without end)
            b, i = 0, 0
            while i < x[0]:
                b, i = True, i + 1
            return x * b

        with pytest.raises(tf.TracingError, match="changes loop variable .b. from i64"):
            tf.differentiable(narrowed, wrt=())(x)

    def test_for_over_a_traced_bound_one_kernel(self):
        f = tf.differentiable(power_sum)
        x = np.array([0.5, -1.25])
        for n in range(5):
            value, grad = f.value_and_grad(x, np.int64(n))
            want_value, want_grad = _value_and_grad(power_sum, x, n)
            np.testing.assert_allclose(value, want_value, rtol=1e-12)
            np.testing.assert_allclose(grad, want_grad, rtol=1e-12)
        assert f.cache_info().kernels == 1

    def test_for_over_a_shape_one_kernel_for_every_size(self):
        f = tf.differentiable(rows_squared)
        for rows in (2, 3, 7):
            x = np.arange(2.0 * rows).reshape(rows, 2) / 5
            value, grad = f.value_and_grad(x)
            np.testing.assert_allclose(value, np.sum(x * x), rtol=1e-12)
            np.testing.assert_allclose(grad, 2 * x, rtol=1e-12)
        assert f.cache_info().kernels == 1


# ----- where the control flow cannot be converted: one AutographWarning saying why -----

_EXEC_SOURCE = """
def clipped(x):
    if tf.reduce_sum(x) > 0.0:
        y = x * 2.0
    else:
        y = -x
    return tf.reduce_sum(y)

def straight(x, scale=None):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * x)
    scale = scale is None or scale  # `and`/`or` are not statements
    return y * scale
"""


def _exec(source):
    namespace = {"tf": tf}
    exec(compile(source, "<string>", "exec"), namespace)  # noqa: S102 - no file to read it from
    return namespace


def test_unreadable_source_with_control_flow_warns_once_and_says_why():
    clipped = _exec(_EXEC_SOURCE)["clipped"]
    f = tf.differentiable(clipped)
    said = r"clipped: its source cannot be read .*'<string>'.*Define it in a file"
    with pytest.warns(tf.AutographWarning, match=said), pytest.raises(tf.TracingError):
        f(np.ones(2))
    with warnings_as_errors(), pytest.raises(tf.TracingError):  # converted once: said once
        f(np.ones(2))


def test_unreadable_source_without_control_flow_is_quiet():
    straight = _exec(_EXEC_SOURCE)["straight"]
    with warnings_as_errors():
        assert float(tf.differentiable(straight)(np.ones(2).copy())) == 2.0


@contextlib.contextmanager
def warnings_as_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _logged(fn):
    """A decorator of the user's: functools.wraps sets the wrapper's __wrapped__."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


@_logged
def logged_piecewise(x):
    if tf.reduce_sum(x) > 1.0:
        y = tf.sin(x)
    else:
        y = x * x
    return tf.reduce_sum(y)


def test_a_wrapped_function_is_converted_through_its_wrapper():
    f = tf.differentiable(logged_piecewise)
    for x in (np.array([0.1, 0.2]), np.array([1.0, 2.0])):  # both branches, one kernel
        value, grad = f.value_and_grad(x)
        want_value, want_grad = _value_and_grad(logged_piecewise, x)
        np.testing.assert_allclose(value, want_value, rtol=1e-12)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-12)
    assert f.cache_info().kernels == 1
    assert "ag__.if_stmt" in autograph.source(logged_piecewise)


_REGISTRY = {}


def _registered(fn):
    """A decorator whose wrapper finds the function by name, not in its closure."""
    _REGISTRY[fn.__name__] = fn

    @functools.wraps(fn)
    def wrapper(*args):
        return _REGISTRY[wrapper.__name__](*args)

    return wrapper


@_registered
def registered_piecewise(x):
    if tf.reduce_sum(x) > 1.0:
        y = tf.reduce_sum(tf.sin(x))
    else:
        y = tf.reduce_sum(x)
    return y


def test_a_wrapper_without_the_function_in_its_closure_converts_what_it_calls():
    """Its own code is converted, so the function it finds is converted where called (it
    warned and raised before); only a wrapper whose code cannot be read still warns."""
    for x in (np.ones(2), np.full(2, 0.25)):
        np.testing.assert_allclose(tf.differentiable(registered_piecewise)(x),
                                   _value_and_grad(registered_piecewise, x)[0])
    namespace = {"_REGISTRY": _REGISTRY}
    exec("def wrapper(*args):\n    return _REGISTRY['registered_piecewise'](*args)\n",  # noqa: S102
         namespace)
    unreadable = functools.wraps(_REGISTRY["registered_piecewise"])(namespace["wrapper"])
    said = r"registered_piecewise: it wraps .*closure"
    with pytest.warns(tf.AutographWarning, match=said), pytest.raises(tf.TracingError):
        tf.differentiable(unreadable)(np.ones(2))


def python_after_statements(n, flag):
    i = -1
    for i in range(n):  # the index after: its last value, or its value before
        pass
    for j in range(n):
        last = j
    k = 0
    while k < n:
        k = k + 1
    else:  # noqa: PLW0120 -- what the rewriting must keep
        k = -k
    if flag:
        chosen = "true"
    return i, k, last if n else "unbound", chosen if flag else "unbound"


@pytest.mark.parametrize("n, flag", [(0, False), (3, True), (1, False)])
def test_a_statement_on_python_values_leaves_what_python_leaves(n, flag):
    assert autograph.convert(python_after_statements)(n, flag) == \
        python_after_statements(n, flag)


def never_assigned(n, flag):
    for i in range(n):
        y = i
    if flag:
        z = 1
    return (y if n else z)  # neither bound where n is 0 and flag False


def test_a_variable_a_python_statement_did_not_assign_is_unbound_after_it():
    with pytest.raises(UnboundLocalError):
        autograph.convert(never_assigned)(0, False)
    assert autograph.convert(never_assigned)(0, True) == 1


def deleted_after_a_traced_if(x):
    if tf.reduce_sum(x) > 1.0:
        scratch = x * 2.0
    else:
        scratch = x
    total = tf.reduce_sum(x)
    del scratch  # reads scratch, which the if must leave bound
    return total


def test_a_del_after_a_traced_statement_reads_its_variable():
    assert float(tf.function(deleted_after_a_traced_if)(np.ones(3))) == 3.0


def state_kept_where_a_body_raises(items):
    count, y, k = 0, 0, 0
    try:
        for item in items:
            count = count + 1
            if item < 0:
                raise ValueError(item)
    except ValueError:
        pass
    try:
        if items:
            y = 1
            raise ValueError(y)
    except ValueError:
        pass
    try:
        while k < 5:
            k = k + 1
            if k == 2:
                raise ValueError(k)
    except ValueError:
        pass
    return count, y, k


def current_values_for_functions_defined_outside(n):
    seen = []

    def show():
        seen.append(step)

    for step in range(n):
        show()
    return seen


def walrus_in_a_test_and_an_index_reassigned(values):
    it, total = iter(values), 0
    while (n := next(it, 0)) > 0:
        total = total + n
    for i in range(len(values)):
        i = i * 10  # the index reassigned: Python returns the last one
    return total, n, i


def test_statements_on_python_values_run_as_pythons_own():
    """A statement whose condition or range is a Python value runs as the user's own code
    (helper 62 found each of these wrong where a body ran as a function of its state)."""
    for fn, args in ((state_kept_where_a_body_raises, ([1, -1, 2],)),
                     (current_values_for_functions_defined_outside, (3,)),
                     (walrus_in_a_test_and_an_index_reassigned, ([3, 4],))):
        assert autograph.convert(fn)(*args) == fn(*args), fn.__name__


def weighted_by_python_index(x):
    acc = x[0] * 0.0
    for i in range(x.shape[0]):
        acc = acc + x[i] * float(i)  # the index as a Python number
    return acc


def test_a_loop_over_a_size_whose_body_needs_a_python_index_unrolls_per_size():
    """The compiled loop's index is traced, so float(i) cannot run in it: the loop unrolls
    as TensorFlow's static shapes unroll it, a kernel per size (helper 63: it raised
    TracingError at every size but 1)."""
    f = tf.differentiable(weighted_by_python_index)
    for n in (3, 5):
        x = np.arange(1.0, n + 1.0)
        value, grad = f.value_and_grad(x)
        assert float(value) == float(np.arange(n) @ x)
        np.testing.assert_array_equal(grad, np.arange(float(n)))
    assert f.cache_info().kernels == 2


def bound_maybe_before_a_traced_if(x, a):
    with contextlib.suppress(ZeroDivisionError):
        y = 1 / 0  # never bound: the manager suppresses the error before it
    ok = a and (m := 7)  # m bound only where a is true
    if tf.reduce_sum(x) > 0:
        y, m = x * 2.0, x
    else:
        y, m = x, x * 3.0
    return y + m, ok


def test_a_traced_if_reads_what_may_be_unbound_before_it_as_such():
    value, ok = tf.function(bound_maybe_before_a_traced_if)(np.ones(2), False)
    np.testing.assert_array_equal(value, [3.0, 3.0])
    assert ok is False


def test_a_function_naming_the_runtime_is_traced_as_written_with_a_warning():
    """A parameter named ag__ would shadow the name converted code calls srcxform by (an
    AttributeError deep in the rewrite): the function is left unconverted, and says so."""

    def scaled(x, ag__=2.0):
        if ag__ > 1.0:  # a Python condition runs as Python
            return tf.reduce_sum(x * ag__)
        return tf.reduce_sum(x)

    with pytest.warns(tf.AutographWarning, match="ag__"):
        assert float(tf.function(scaled)(np.ones(3))) == 6.0

    def traced_if(x, ag__=2.0):
        if tf.reduce_sum(x) > 0:
            return x * ag__
        return -x

    with pytest.warns(tf.AutographWarning, match="ag__"), \
            pytest.raises(tf.TracingError, match="bool"):
        tf.function(traced_if)(np.ones(3))


def test_a_name_a_branchs_inner_loop_assigns_is_kept_where_the_loop_ran():
    # Helper 127: a name assigned in the true branch only by a loop over range(2) counted
    # as unassigned there ("only in the false branch"); tracing shows the loop ran.
    @tf.differentiable
    def g(x):
        if tf.reduce_sum(x) > 0:
            for i in range(2):
                y = x * float(i + 1)
        else:
            y = -x
        return tf.reduce_sum(y)

    assert float(g(np.ones(2))) == 4.0 and float(g(-np.ones(2))) == 2.0
    np.testing.assert_array_equal(g.grad(np.ones(2)), [2.0, 2.0])

    @tf.differentiable
    def h(x):
        if tf.reduce_sum(x) > 0:
            for _ in range(0):
                y = x
        else:
            y = -x
        return tf.reduce_sum(y)

    with pytest.raises(tf.TracingError, match="'y' has no value here: it is assigned only "
                                              "in the false branch"):
        h(np.ones(2))
