"""TensorFlow's recursive conversion: a converted function's calls of the user's functions
defined elsewhere (a helper in the module, a method, a callable object, a function given
to cond, while_loop, fori_loop, map_fn or scan) convert those too, where they are called.
Before, their `if` on a traced value raised TracingError. The functions under test live
in this file: their source is read."""

import functools
import math
import os
import sys
import warnings

import numpy as np
import pytest

import srcxform as tf
from srcxform import autograph
from srcxform.autograph import rewrite

POINTS = (np.array([1.5, -0.5, 2.0]), np.array([-1.0, -2.0, 0.25]))


def clipped(x):
    if tf.reduce_sum(x) > 0:
        y = x * x
    else:
        y = -x
    return y


def two_levels(x):
    return clipped(x) + clipped(x * 0.5)


def powered(x, n):
    """A Python recursion on a static depth, each level branching on the traced value."""
    if n == 0:
        return x
    return clipped(powered(x, n - 1))


class Model:
    def __init__(self, scale):
        self.scale = scale

    def __call__(self, x):
        if tf.reduce_max(x) > 1.0:
            x = x * self.scale
        return self.step(x)

    def step(self, x):
        while tf.reduce_sum(x * x) > 4.0:
            x = x * 0.5
        return x


def calls_helpers(x):
    model = Model(3.0)
    scaled = functools.partial(clipped)
    return tf.reduce_sum(two_levels(x) + powered(x, 2) + model(x) + model.step(x) + scaled(x))


def calls_helpers_eagerly(x):
    """calls_helpers's value, in NumPy."""
    def clip(v):
        return v * v if v.sum() > 0 else -v

    def step(v):
        while (v * v).sum() > 4.0:
            v = v * 0.5
        return v

    modelled = step(x * 3.0 if x.max() > 1.0 else x)
    return np.sum(clip(x) + clip(x * 0.5) + clip(clip(x)) + modelled + step(x) + clip(x))


def test_helpers_defined_elsewhere_are_converted_where_they_are_called():
    compiled = tf.differentiable(calls_helpers)
    for x in POINTS:
        np.testing.assert_allclose(compiled(x), calls_helpers_eagerly(x), rtol=1e-12)
        step = 1e-6 * np.eye(3)
        numeric = [(calls_helpers_eagerly(x + e) - calls_helpers_eagerly(x - e)) / 2e-6
                   for e in step]
        np.testing.assert_allclose(compiled.grad(x), numeric, rtol=1e-5, atol=1e-7)
    with pytest.raises(tf.TracingError, match="bool"):  # autograph off: as written
        tf.differentiable(calls_helpers, autograph=False)(POINTS[0])


def halve_or_grow(i, x):
    x = x + 0.0 * tf.cast(i, tf.float64)
    if tf.reduce_max(x) > 1.0:
        x = x / 2.0
    if tf.reduce_min(x) <= 0.0:
        x = x + 1.0
    return x


def while_test(i, x):
    return i < 4


def while_body(i, x):
    return i + 1, halve_or_grow(i, x)


def row_sign(row):
    if tf.reduce_sum(row) > 0:
        row = row * 2.0
    return row


def running(total, row):
    if tf.reduce_sum(row) > 0:
        total = total + row
    return total


def given_to_control_flow(x):
    looped = tf.fori_loop(0, 4, halve_or_grow, x)
    _, whiled = tf.while_loop(while_test, while_body, (0, x))
    rows = tf.map_fn(row_sign, tf.reshape(x, (3, 1)))
    scanned = tf.scan(running, tf.reshape(x, (3, 1)), tf.zeros(1, tf.float64))
    branched = tf.cond(tf.reduce_sum(x) > 0, lambda: clipped(x), functools.partial(clipped, -x))
    return looped + whiled + tf.reshape(rows, (3,)) + tf.reshape(scanned[-1], ()) + branched


def given_to_control_flow_eagerly(x):
    def halve(v):
        for _ in range(4):
            v = v / 2.0 if v.max() > 1.0 else v
            v = v + 1.0 if v.min() <= 0.0 else v
        return v

    rows = np.where(x > 0, 2.0 * x, x)
    branch = x * x  # clipped(x) where x sums above 0, else clipped(-x), whose sum is
    return 2 * halve(x) + rows + np.sum(x[x > 0]) + branch


def summed_control_flow(x):
    return tf.reduce_sum(given_to_control_flow(x))


def test_functions_given_to_control_flow_are_converted():
    """TensorFlow's cond, while_loop, map_fn and scan convert the functions given them
    (autograph.tf_convert): a body defined elsewhere branching on a traced value."""
    compiled = tf.differentiable(summed_control_flow)
    for x in POINTS:
        np.testing.assert_allclose(tf.differentiable(given_to_control_flow)(x),
                                   given_to_control_flow_eagerly(x), rtol=1e-12)
        assert np.isfinite(compiled.grad(x)).all()


class Base:
    def shift(self, x):
        return x + 1.0


class Shifted(Base):
    def shift(self, x):
        return super().shift(x) * 2.0


def library_calls(x):
    names = locals()
    total = tf.reduce_sum(tf.sin(x)) + np.float64(math.sqrt(len(str(names["x"].shape))))
    return total + tf.reduce_sum(Shifted().shift(x)) + tf.reduce_sum(clipped(x))


def only_ops(x):
    return tf.reduce_sum(tf.sin(x) * np.float64(2.0))


def test_library_calls_stay_as_written_and_the_users_are_wrapped():
    text = autograph.source(library_calls)
    for kept in ("locals()", "tf.reduce_sum(tf.sin(x))", "np.float64(math.sqrt(ag__.len_(str("):
        assert kept in text
    assert "ag__calls.callee(Shifted().shift)(x)" in text  # a class kept; its method wrapped
    assert "ag__calls.callee(clipped)(x)" in text
    assert autograph.source(only_ops) is None  # nothing to convert: traced as written
    assert autograph.convert(only_ops) is only_ops
    x = POINTS[0]
    expected = np.sum(np.sin(x)) + 2.0 + np.sum((x + 1.0) * 2.0) + np.sum(x * x)
    np.testing.assert_allclose(tf.differentiable(library_calls)(x), expected, rtol=1e-12)


def scaler(k):
    def scaled(x):
        if tf.reduce_sum(x) > 0:
            x = x * k
        return x
    return scaled


SCALED = scaler(2.0), scaler(3.0)  # made as written: two functions of one code


def factory_calls(x):
    return tf.reduce_sum(SCALED[0](x) + SCALED[1](x))


def test_a_factorys_closures_are_converted_from_one_parse(monkeypatch):
    parsed = []
    parse = rewrite._parse
    monkeypatch.setattr(rewrite, "_parse", lambda fn, **kw: parsed.append(fn) or parse(fn, **kw))
    x = POINTS[0]
    assert tf.differentiable(factory_calls)(x) == pytest.approx(5.0 * np.sum(x))
    assert [fn.__name__ for fn in parsed].count("scaled") == 1


def test_a_helper_without_readable_source_is_called_as_written_quietly():
    """Only the function given to srcxform warns that its source cannot be read; a helper
    it calls with a static `if` ran quietly before, and so it does."""
    namespace = {"tf": tf}
    source = "def made(x):\n    if tf.reduce_sum(x) > 0:\n        return x\n    return -x\n"
    exec(source, namespace)  # noqa: S102

    def calls_made(x):
        return namespace["made"](x) * 2.0

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(tf.TracingError, match=r"<string>:2.*\n.*bool\(\) of a traced"):
            tf.differentiable(calls_made)(POINTS[0])


def test_a_lambda_calling_a_helper_is_converted_when_it_is_the_only_one_on_its_line():
    """TensorFlow converts a lambda given to tf.function, found in its file's source."""
    summed = tf.differentiable(lambda x, *, k=2.0: tf.reduce_sum(clipped(x) * k))
    for x in POINTS:
        np.testing.assert_allclose(summed(x), 2.0 * np.sum(x * x if x.sum() > 0 else -x))
        np.testing.assert_allclose(summed.grad(x), 2.0 * (2 * x if x.sum() > 0 else -1.0))
    assert "ag__calls.callee(clipped)(x)" in autograph.source(lambda x: clipped(x))
    pair = (lambda x: clipped(x), lambda x: clipped(-x))  # which is which: not told
    assert autograph.source(pair[0]) is None and autograph.convert(pair[1]) is pair[1]
    assert autograph.source(lambda x: tf.sin(x)) is None  # nothing to convert


# ----- found by helper 56 in the first form: each gave a wrong value or raised -----

gain = 2.0


class Pool:
    """Methods named like a global and like builtins: in their bodies, those names are
    the global and the builtins (the converted method held its own name in a cell)."""

    def gain(self, x):
        if x.shape[0] > 1:
            x = x + 0.0
        return x * gain

    def sum(self, xs):
        return sum(xs)

    @staticmethod
    def __call__(x):
        return clipped(x) * 2.0


class Tenfold(functools.partial):
    """Its own __call__ was dropped (made a plain partial of the converted function); its
    function is called by partial's, as written."""

    def __call__(self, *args, **kwargs):
        return 10.0 * super().__call__(*args, **kwargs)


def shifted(x):
    return x + 1.0


def down(x, n):
    if n == 0:
        return x
    return down(x + 1.0, n - 1)


def counted_names(x, n):
    if n > 1:
        n = n - 1
    return x * len(locals())


def methods_and_names(x):
    pool = Pool()
    return tf.reduce_sum(pool.gain(x) + pool.sum([x, x]) + pool(x) + Tenfold(shifted)(x)
                         + down(x, 2) + counted_names(x, 3))


def test_names_in_converted_helpers_mean_what_they_meant(monkeypatch):
    x = POINTS[0]

    def expected(scale, step):
        return np.sum(scale * x + 2 * x + 2 * x * x + 10 * (x + 1) + step * (x + 2) + 2 * x)

    np.testing.assert_allclose(tf.differentiable(methods_and_names)(x), expected(2.0, 1.0))
    monkeypatch.setattr(sys.modules[__name__], "gain", 3.0)
    plain = down
    monkeypatch.setattr(sys.modules[__name__], "down", lambda x, n: 2.0 * plain(x, n))
    # every level of the recursion now doubles: Python's value, seen by a new trace
    np.testing.assert_allclose(tf.differentiable(methods_and_names)(x), expected(3.0, 8.0))


def test_wrappers_of_helpers_call_them_quietly():
    """A function a converted one calls, wrapping another without holding it (as
    functools.singledispatch and a wraps used for its docs do), warned that it could not
    be converted, though the caller had no control flow to lose. The standard library's
    dispatch calls its function as written; the user's wrapper's calls are converted."""
    @functools.singledispatch
    def dispatched(x):
        return shifted(x)

    @functools.wraps(clipped)
    def documented(x):
        return clipped(x) + 1.0

    def calls_wrappers(x):
        return tf.reduce_sum(dispatched(x) + documented(x))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = tf.differentiable(calls_wrappers)(POINTS[0])
    np.testing.assert_allclose(value, np.sum(POINTS[0] ** 2 + POINTS[0] + 2.0))


# ----- found by helper 57 in the second form -----


class Private:
    """`self.__scale` is mangled to `_Private__scale` where the class compiles it."""

    def __init__(self):
        self.__scale = 3.0

    def scaled(self, x):
        return clipped(x) * self.__scale


def annotated(x, scale=2.0) -> float:
    return clipped(x) * scale


annotated.unit = "m"


def reads_metadata(fn, x):
    """A decorator's kind of reader: the function's attributes and annotations (no
    `assert`: pytest rewrites it, so this file's source would not be this code)."""
    if fn.unit != "m" or fn.__annotations__["return"] is not float:
        raise AssertionError(fn)
    return fn(x)


def shadowing_names(x):
    cond__3 = x * 2.0  # named like what the rewriting makes
    if x.shape[0] > 1:
        x = x + 0.0
    return x * len(locals()) + cond__3


def made_names(x):
    return tf.reduce_sum(Private().scaled(x) + reads_metadata(annotated, x)
                         + shadowing_names(x) + tf.map_fn(Model(1.0), x))


def test_a_converted_helper_keeps_its_names_attributes_and_defaults(monkeypatch):
    x = POINTS[0]
    squares = x * x  # clipped(x): the points' sum is above 0
    steps = x  # map_fn(Model(1.0)), a callable object converted: no element's square > 4
    expected = np.sum(3.0 * squares + 2.0 * squares + 2 * x + 2 * x + steps)
    np.testing.assert_allclose(tf.differentiable(made_names)(x), expected)
    monkeypatch.setattr(annotated, "__defaults__", (5.0,))  # seen by a new trace
    np.testing.assert_allclose(tf.differentiable(made_names)(x), expected + 3.0 * squares.sum())
    converted = autograph.convert(Private().scaled)
    assert converted.__func__.__qualname__ == "Private.scaled"


def test_a_helper_whose_file_changed_since_import_is_called_as_compiled(tmp_path, monkeypatch):
    """Converted from the file's new text it gave a value eager never gives."""
    path = tmp_path / "edited_helpers.py"
    path.write_text("def helper(x):\n    return abs(x) * 2.0\n")
    monkeypatch.syspath_prepend(tmp_path)
    import edited_helpers
    path.write_text("def helper(x):\n    return abs(x) * 3.0 + 100.0\n")
    os.utime(path, (os.stat(path).st_mtime + 5,) * 2)

    def calls_edited(x):
        return tf.reduce_sum(edited_helpers.helper(x))

    np.testing.assert_allclose(tf.differentiable(calls_edited)(POINTS[0]),
                               2.0 * np.abs(POINTS[0]).sum())


def test_a_decorated_function_whose_file_changed_since_import_is_not_converted(
        tmp_path, monkeypatch):
    """Found by helper 111: converted from the file's new text it gave 27.0 where the
    function Python runs gives 6.0. Its control flow cannot be converted now: a warning
    says why, and its traced `if` raises. (pytest rewrites this module's asserts, so its
    own functions do not compile to their text: they are converted as read.)"""
    monkeypatch.setenv("SRCXFORM_CHECK", "0")  # the compiled path alone
    path = tmp_path / "edited_decorated.py"
    text = "import srcxform as tf\n\ndef f(x):\n    if tf.reduce_sum(x) > 0:\n" \
           "        x = x * 2.0\n    return tf.reduce_sum(x)\n"
    path.write_text(text)
    monkeypatch.syspath_prepend(tmp_path)
    import edited_decorated
    path.write_text(text.replace("2.0", "9.0"))
    os.utime(path, (os.stat(path).st_mtime + 5,) * 2)
    with pytest.warns(tf.AutographWarning, match="edited_decorated.py changed since it was "
                      "imported"), pytest.raises(tf.TracingError, match="bool"):
        tf.differentiable(edited_decorated.f)(np.ones(3))
    path = tmp_path / "shifted_decorated.py"  # its def's line holds another line now
    path.write_text(text)
    import shifted_decorated
    path.write_text("# a line above it\n" + text)
    os.utime(path, (os.stat(path).st_mtime + 5,) * 2)
    with pytest.warns(tf.AutographWarning, match="changed since it was imported"), \
            pytest.raises(tf.TracingError, match="bool"):
        tf.differentiable(shifted_decorated.f)(np.ones(3))


class WithText:
    def measured(self, x):
        text = """a
        b"""  # dedented, its second line lost 4 spaces: 12 became 8 (helper 119)
        if tf.reduce_sum(x) > 0:
            x = x * len(text)
        return tf.reduce_sum(x)


def test_a_methods_multiline_string_is_as_written():
    np.testing.assert_allclose(tf.differentiable(WithText().measured)(np.ones(2)), 22.0)


# ----- found by helper 58's random programs -----


def rows_summed(x):
    return tf.reduce_sum(tf.stack([tf.sin(x[i]) for i in range(x.shape[0])]))


def test_a_comprehension_over_a_size_retraces_for_another_size():
    """range() takes a size (an int subclass) as its int, without asking: the loop
    unrolled for 3 rows and the kernel ran for 5, summing 3 (silently wrong)."""
    f = tf.differentiable(rows_summed)
    for n in (3, 5):
        x = np.linspace(0.1, 1.0, n)
        np.testing.assert_allclose(f(x), np.sin(x).sum(), rtol=1e-14)
        np.testing.assert_allclose(f.grad(x), np.cos(x), rtol=1e-14)
    assert f.cache_info().kernels == 4  # value and gradient, at each size


LONG_LOOP = """import srcxform as tf


def long_loop(v):
    n = 0
    while n < 1:
        if tf.reduce_sum(v) > 0.0:
""" + "            v = tf.sin(v) * 0.9\n" * 8 + """        n = n + 1
    return v
"""


def test_a_called_function_is_converted_whatever_its_jumps_length(tmp_path, monkeypatch):
    """Long enough that a jump in its loop needs an EXTENDED_ARG where tf.sin's load is
    the longer one (not an import there), and not in the module: the check that its
    file compiles to its code said no, so it ran as written and raised."""
    (tmp_path / "long_loops.py").write_text(LONG_LOOP)
    monkeypatch.syspath_prepend(tmp_path)
    import long_loops

    def calls_long_loop(x):
        return tf.reduce_sum(long_loops.long_loop(x))

    expected = np.ones(3)
    for _ in range(8):
        expected = np.sin(expected) * 0.9
    np.testing.assert_allclose(tf.differentiable(calls_long_loop)(np.ones(3)), expected.sum(),
                               rtol=1e-14)


def asserting(x):
    if tf.reduce_sum(x) > 0.0:
        x = x * 2.0
    assert x.shape[0] == 3  # pytest rewrites it: its code is not what its text compiles to
    return x


def calls_asserting(x):
    return tf.reduce_sum(asserting(x))


def test_a_function_whose_asserts_pytest_rewrote_is_converted_called_or_given():
    x = np.ones(3)
    np.testing.assert_allclose(tf.differentiable(calls_asserting)(x), 6.0)
    np.testing.assert_allclose(tf.function(asserting)(x), 2.0 * x)
