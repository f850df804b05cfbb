"""tape.explain, debug_nans and the gradient-cut warnings (issue 33): each kind of cut named
with its line, NaN sources caught at the line that makes them, no false alarm."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import srcxform as tf
from srcxform.core.errors import GradientCutWarning


def _line(marker):
    """The line of this file that ends with the comment `# <marker>`."""
    with open(__file__) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# {marker}"):
                return n
    raise AssertionError(marker)


@pytest.fixture(autouse=True)
def _nan_checks_off():
    yield
    tf.debug_nans(False)


@pytest.fixture
def kernels_alone(monkeypatch):
    """Compiled calls run their kernel alone, not checked against the eager tape first
    (SRCXFORM_CHECK, which the suite sets): what raises is the kernel's own check."""
    monkeypatch.setenv("SRCXFORM_CHECK", "0")



# ----- explain: the kinds of cut -----


def test_the_issue_reproducer_names_the_integer_cast():
    x = tf.Variable([1.5, 2.5])
    with tf.GradientTape() as t:
        y = tf.reduce_sum(tf.cast(tf.cast(x, tf.int32), tf.float32) * x)  # repro
    why = t.explain(y, x)
    assert "cast" in str(why) and "int32" in str(why)
    assert why.kind == "connected"
    assert [(c.kind, c.step.op, c.step.line, c.detail, c.reaches_target) for c in why.cuts] \
        == [("integer dtype", "cast", _line("repro"), "cast to int32", True)]
    assert [[(s.op, s.file, s.line) for s in p] for p in why.paths] == \
        [[("multiply, reduce_sum", "test_explain.py", _line("repro"))]]


@pytest.mark.parametrize("make, kind, op", [
    (lambda x: tf.cast(tf.cast(x, tf.int32), tf.float32), "integer dtype", "cast"),
    (lambda x: tf.cast(tf.cast(x, tf.bool), tf.float32), "bool dtype", "cast"),
    (lambda x: tf.stop_gradient(x), "stop_gradient", "stop_gradient"),
    (lambda x: tf.round(x), "no gradient", "round"),
    (lambda x: tf.cast(tf.argmax(x), tf.float32), "no gradient", "argmax"),
    (lambda x: tf.where(x > 2.0, 1.0, 0.0), "no gradient", "greater"),
])
def test_a_cut_is_named_with_its_kind_op_and_line(make, kind, op):
    x = tf.Variable([1.5, 2.5])
    with tf.GradientTape() as t:
        y = tf.reduce_sum(make(x) * 2.0)
    why = t.explain(y, x)
    assert t.gradient(y, x) is None
    assert (why.kind, why.op, why.file) == (kind, op, "test_explain.py")
    assert why.line == make.__code__.co_firstlineno  # the op ran in the row's lambda
    assert f"None ({kind})" in str(why)


def test_the_cut_line_is_where_the_op_ran():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as t:
        t.watch(x)
        n = tf.cast(x, tf.int64)  # int cast
        y = tf.reduce_sum(tf.cast(n, tf.float32) * 3.0)
    why = t.explain(y, x)
    assert (why.kind, why.op, why.line, why.cut.detail) == \
        ("integer dtype", "cast", _line("int cast"), "cast to int64")


def test_a_numpy_conversion_is_named():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as t, warnings.catch_warnings():
        warnings.simplefilter("ignore", GradientCutWarning)
        t.watch(x)
        a = np.asarray(x * 2.0)  # to numpy
        y = tf.reduce_sum(tf.constant(a) * 3.0)
    why = t.explain(y, x)
    assert (why.kind, why.op, why.line) == ("numpy conversion", "NumPy array", _line("to numpy"))
    assert why.cut.reaches_target is None


def test_an_assign_is_named():
    a = tf.constant([1.0, 2.0])
    v = tf.Variable([0.0, 0.0], name="v")
    with tf.GradientTape() as t:
        t.watch(a)
        v.assign(a * 2.0)  # assign
        y = tf.reduce_sum(v * 3.0)
    why = t.explain(y, a)
    assert (why.kind, why.op, why.line, why.cut.detail) == \
        ("assign", "assign", _line("assign"), "assign to v:0")


def test_unwatched_sources():
    c = tf.constant([1.0, 2.0])
    frozen = tf.Variable([1.0, 2.0], trainable=False)
    with tf.GradientTape() as t:
        y = tf.reduce_sum(c * frozen)
    for source in (c, frozen):
        why = t.explain(y, source)
        assert (why.kind, why.line) == ("unwatched", None)
        assert "tape.watch()" in str(why)


def test_a_source_that_never_reaches_the_target():
    x, w = tf.Variable([1.0]), tf.Variable([2.0])
    with tf.GradientTape() as t:
        y = tf.reduce_sum(w * 2.0)
        _ = x * 3.0
    why = t.explain(y, x)
    assert (why.kind, why.cuts) == ("not connected", ())


def test_connected_paths_are_the_user_lines():
    x = tf.Variable(2.0)
    with tf.GradientTape() as t:
        a = x * x  # first
        b = tf.sin(x)  # second
        y = a + b  # sum
    why = t.explain(y, x)
    assert why.kind == "connected" and why.path_count == 3  # x*x uses x twice
    assert [[s.line for s in p] for p in why.paths] == [
        [_line("first"), _line("sum")], [_line("first"), _line("sum")],
        [_line("second"), _line("sum")]]
    assert str(why).splitlines()[0] == \
        "gradient of tensor f32[] wrt Variable 'Variable:0': connected, by 3 paths"


# ----- debug_nans: eager -----


def _raises_at(fn, marker, *words):
    with pytest.raises(FloatingPointError) as info:
        fn()
    message = str(info.value)
    assert f"test_explain.py:{_line(marker)}:" in message, message
    for word in words:
        assert word in message, message
    return message


def test_forward_nan_sources_are_caught_at_their_line():
    tf.debug_nans(True)
    zero = tf.constant([1.0, 0.0])
    big = tf.constant([1.0, 100.0])
    infs = tf.constant([np.inf, -np.inf])
    _raises_at(lambda: tf.math.log(zero), "log 0", "log made an inf")  # log 0
    _raises_at(lambda: zero / zero, "0/0", "made a NaN")  # 0/0
    _raises_at(lambda: tf.sqrt(zero - 1.0), "sqrt -1", "sqrt made a NaN")  # sqrt -1
    _raises_at(lambda: tf.exp(big), "exp overflow", "exp made an inf")  # exp overflow
    _raises_at(lambda: tf.reduce_sum(infs), "inf - inf", "reduce_sum made a NaN")  # inf - inf


def test_a_nan_in_the_adjoint_only_names_its_forward_line():
    tf.debug_nans(True)
    x = tf.constant([1.0, 0.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(tf.sqrt(x))  # sqrt forward
    words = "in the gradient of sqrt at"
    message = _raises_at(lambda: t.gradient(y, x), "sqrt forward", words)  # grad
    assert f"test_explain.py:{_line('grad')}:" in message


def test_the_where_trap_is_named_with_the_double_where_pattern():
    tf.debug_nans(True)
    x = tf.constant([4.0, 0.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(tf.where(x > 0.0, x ** 0.5, 0.0))  # where pow
    _raises_at(lambda: t.gradient(y, x), "where pow", "double-where")


def test_a_nan_an_input_holds_is_no_alarm():
    tf.debug_nans(True)
    x = tf.constant([np.nan, 1.0, np.inf])
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(x * 2.0 + 1.0)
    assert np.isnan(t.gradient(y, x).numpy()).sum() == 0
    assert np.isnan(y.numpy())


def test_debug_nans_as_a_context_manager_and_off():
    with tf.debug_nans(True), pytest.raises(FloatingPointError):
        tf.math.log(tf.constant(0.0))
    assert np.isinf(tf.math.log(tf.constant(0.0)).numpy())  # off again: IEEE, no raise


def test_the_environment_variable_turns_it_on():
    code = "import srcxform as tf\ntf.math.log(tf.constant(0.0))\n"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "SRCXFORM_DEBUG_NANS": "1"}, check=False)
    assert "FloatingPointError: log made an inf" in run.stderr


# ----- debug_nans: compiled -----


def _log_times_zero(x):
    y = tf.math.log(x)  # the NaN's line
    return tf.reduce_sum(y * 0.0)


def test_a_compiled_gradient_names_the_line(kernels_alone):
    tf.debug_nans(True)
    f = tf.differentiable(_log_times_zero, wait=True)
    with pytest.raises(FloatingPointError, match="the NaN's line") as info:
        f.grad(np.array([1.0, 0.0]))
    assert f"test_explain.py:{_line(chr(39).join(['the NaN', 's line']))}:" in str(info.value)


def _log_zero(x):
    return tf.reduce_sum(tf.math.log(x))  # c: log 0


def _zero_over_zero(x):
    return tf.reduce_sum((x - x) / (x - x))  # c: 0/0


def _sqrt_negative(x):
    return tf.reduce_sum(tf.sqrt(x - 5.0))  # c: sqrt -1


def _exp_overflow(x):
    return tf.reduce_sum(tf.exp(x * 1000.0))  # c: exp overflow


def _sum_of_infs(x):
    return tf.reduce_sum(x)  # c: inf - inf


def _sqrt_at_zero(x):
    return tf.reduce_sum(tf.sqrt(x - 1.0))  # c: adjoint only


def _where_pow(x):
    return tf.reduce_sum(tf.where(x > 1.0, (x - 1.0) ** 0.5, 0.0))  # c: under where


@pytest.mark.parametrize("fn, x, marker, form, words", [
    (_log_zero, [1.0, 0.0], "c: log 0", "value", "log made an inf at"),
    (_zero_over_zero, [1.0, 2.0], "c: 0/0", "value", "divide made a NaN at"),
    (_sqrt_negative, [1.0, 2.0], "c: sqrt -1", "value", "sqrt made a NaN at"),
    (_exp_overflow, [1.0, 2.0], "c: exp overflow", "value", "exp made an inf at"),
    (_sum_of_infs, [np.inf, -np.inf], "c: inf - inf", "value", "reduce_sum made a NaN at"),
    (_sqrt_at_zero, [1.0, 2.0], "c: adjoint only", "grad",
     "made an inf in the gradient of sqrt at"),
    (_where_pow, [1.0, 2.0], "c: under where", "grad", "double-where"),
])
def test_a_table_of_nan_sources_is_caught_compiled_at_its_line(fn, x, marker, form, words,
                                                                kernels_alone):
    f = tf.differentiable(fn, wait=True)
    call = f if form == "value" else f.grad
    with tf.debug_nans(True), pytest.raises(FloatingPointError) as info:
        call(np.array(x))
    assert f"test_explain.py:{_line(marker)}:" in str(info.value)
    assert words in str(info.value)
    assert os.path.basename(info.traceback[-1].path).startswith(fn.__name__.lstrip("_") + "__")


def test_the_checked_kernel_is_cached_apart(kernels_alone):
    f = tf.differentiable(_log_times_zero, wait=True)
    x = np.array([1.0, 2.0])
    f.grad(x)
    assert "FloatingPointError" not in f.source(x)
    with tf.debug_nans(True):
        f.grad(x)
        assert "raise FloatingPointError" in f.source(x)
    f.grad(x)
    with tf.debug_nans(True):
        f.grad(x)
    # plain: grad and value_and_grad (source); checked: value_and_grad, which a checked
    # f.grad runs (the gradient's own kernel would drop forward values and their checks)
    assert f.cache_info().kernels == 3


def test_compiled_checks_follow_the_flag_and_give_no_false_alarm(kernels_alone):
    f = tf.differentiable(_log_times_zero, wait=True)
    assert np.isnan(f.grad(np.array([1.0, 0.0]))[1])  # off: the warm entry, IEEE
    with tf.debug_nans(True):
        with pytest.raises(FloatingPointError):
            f.grad(np.array([1.0, 0.0]))
        with pytest.raises(FloatingPointError):
            f(np.array([1.0, 0.0]))
        # A NaN the argument holds only propagates.
        assert np.isnan(f.grad(np.array([np.nan, 2.0]))[0])
        np.testing.assert_allclose(f.grad(np.array([1.0, 2.0])), [0.0, 0.0])
    assert np.isnan(f.grad(np.array([1.0, 0.0]))[1])


# ----- warnings where a gradient is cut -----


def test_a_conversion_warns_once_per_line_and_can_be_an_error():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as t:
        t.watch(x)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")  # Python's own: once per place
            for _ in range(3):
                np.array(x * 2.0)  # converts
        assert [(w.category, w.lineno) for w in caught] == \
            [(GradientCutWarning, _line("converts"))]
        assert "became a NumPy array" in str(caught[0].message)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")  # a filter of the user's decides
            for _ in range(3):
                np.array(x * 3.0)  # converts again
        assert len(caught) == 3
        with warnings.catch_warnings():
            warnings.simplefilter("error", GradientCutWarning)
            with pytest.raises(GradientCutWarning, match="Python float"):
                float(tf.reduce_sum(x))
            np.asarray(tf.constant(1.0))  # not watched: no warning
    np.asarray(x)  # no tape: no warning


def test_a_list_of_tensors_given_to_numpy_warns_at_the_users_line():
    x = tf.Variable([1.0, 2.0])
    with tf.GradientTape(), pytest.warns(GradientCutWarning) as caught:
        np.sum([x * 1.0, x * 2.0])  # list to numpy
    assert {w.lineno for w in caught} == {_line("list to numpy")}


def test_none_gradients_in_an_optimizer_name_the_variable_and_the_reason():
    a, b = tf.Variable(np.ones(2)), tf.Variable(np.ones(2), name="b")
    opt = tf.optimizers.SGD(0.1)
    with pytest.warns(GradientCutWarning, match="Variable 'b:0'") as caught:
        opt.minimize(lambda: tf.reduce_sum(a * tf.round(b)), [a, b])  # minimize
    assert f"no gradient: round at test_explain.py:{_line('minimize')}" \
        in str(caught[0].message)
    with pytest.warns(GradientCutWarning, match="gradients do not exist"):
        opt.apply_gradients([(np.ones(2), a), (None, b)])


# ----- explain for a function -----


def _uses_round(w, x):
    return tf.reduce_sum(tf.round(w) * x)  # round in f


def test_explain_of_a_compiled_function_names_the_cut_its_zeros_come_from():
    f = tf.differentiable(_uses_round)
    w, x = np.array([1.5, 2.5]), np.array([2.0, 3.0])
    why = tf.explain(f, w, x, wrt=0)
    assert (why.kind, why.op, why.line) == ("no gradient", "round", _line("round in f"))
    assert [e.kind for e in tf.explain(f, w, x, wrt=(0, 1))] == ["no gradient", "connected"]


def _masked_log(x):
    return tf.reduce_sum(tf.where(x > 0.0, tf.math.log(x), 0.0))  # masked log


_STATE = tf.Variable([1.0, 1.0])


def _doubles_state(x):
    _STATE.assign(_STATE * 2.0)
    return tf.reduce_sum(x * _STATE)


def test_a_compiled_call_is_checked_where_a_where_masks_the_inf(kernels_alone):
    f = tf.differentiable(_masked_log, wait=True)
    assert f(np.array([1.0, 0.0])) == 0.0
    with tf.debug_nans(True), pytest.raises(FloatingPointError, match="log made an inf") as info:
        f(np.array([1.0, 0.0]))
    assert f"test_explain.py:{_line('masked log')}:" in str(info.value)


def test_a_checked_compiled_call_updates_variables_once(kernels_alone):
    f = tf.differentiable(_doubles_state, wait=True)
    with tf.debug_nans(True):
        np.testing.assert_allclose(f.grad(np.array([1.0, 1.0])), [2.0, 2.0])
    np.testing.assert_allclose(_STATE.numpy(), [2.0, 2.0])


def test_explain_names_the_where_trap():
    x = tf.constant([1.0, 0.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(tf.where(x > 0.0, tf.math.log(x), 0.0))  # where trap
    why = t.explain(y, x)
    assert [(s.op, s.line) for s in why.where_traps] == [("where", _line("where trap"))]
    assert "double-where pattern" in str(why)
    with tf.GradientTape() as t:
        t.watch(x)
        safe = tf.where(x > 0.0, x, 1.0)
        y = tf.reduce_sum(tf.where(x > 0.0, tf.math.log(safe), 0.0))
    assert t.explain(y, x).where_traps == ()


def test_a_condition_is_no_lost_part_of_a_connected_gradient():
    x = tf.constant([1.0, -1.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(tf.where(x > 0.0, x, 0.0))
    why = t.explain(y, x)
    assert why.kind == "connected"
    assert [(c.kind, c.step.op, c.reaches_target) for c in why.cuts] == \
        [("no gradient", "greater", False)]
    assert "cut on the way" not in str(why)


def test_a_checked_kernel_is_waited_for_under_tiered_compiles(kernels_alone, monkeypatch):
    monkeypatch.setenv("SRCXFORM_TIERED", "1")
    f = tf.differentiable(_exp_overflow)
    with tf.debug_nans(True), pytest.raises(FloatingPointError, match="exp made an inf"):
        f(np.array([1.0, 2.0]))


def _product(w, X):
    return tf.reduce_sum(X @ w)  # c: matmul overflow


def test_an_op_outside_loop_nests_is_checked_whole(kernels_alone):
    f = tf.differentiable(_product, wait=True)
    w, X = np.full((3, 2), 1e200), np.full((4, 3), 1e200)
    with tf.debug_nans(True):
        with pytest.raises(FloatingPointError, match="matmul made an inf") as info:
            f(w, X)
        assert f"test_explain.py:{_line('c: matmul overflow')}:" in str(info.value)
        X[0, 0] = np.nan  # held by an argument: it only propagates
        assert np.isnan(float(f(np.ones((3, 2)), X)))


@pytest.mark.parametrize("value, on", [("1", True), ("false", False), ("off", False),
                                       ("no", False), ("0", False)])
def test_the_environment_switch_follows_the_one_rule(value, on):
    code = ("import srcxform as tf\n"
            "try:\n    tf.math.log(tf.constant(0.0)); print('off')\n"
            "except FloatingPointError:\n    print('on')\n")
    env = dict(os.environ, SRCXFORM_DEBUG_NANS=value)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["on" if on else "off"]


def test_a_warning_filtered_away_once_still_obeys_a_later_filter():
    x = tf.constant([1.0, 2.0])

    def convert():
        np.array(x * 4.0)

    with tf.GradientTape() as t:
        t.watch(x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            convert()
        with warnings.catch_warnings():
            warnings.simplefilter("error", GradientCutWarning)
            with pytest.raises(GradientCutWarning):
                convert()


# ----- explain: the adversarial pass's cases -----


def _aux_output(w, x):
    return tf.reduce_sum(x * 2.0), tf.reduce_sum(w * x)  # aux uses w


def _string_aux(w):
    return tf.reduce_sum(w * 3.0), "a note"


def test_has_aux_explains_only_the_differentiated_output():
    w, x = np.ones(2), np.ones(2)
    f = tf.differentiable(_aux_output, has_aux=True)
    assert tf.explain(f, w, x, wrt=0).kind == "not connected"
    assert tf.explain(_aux_output, w, x, wrt=0, has_aux=True).kind == "not connected"
    assert tf.explain(tf.differentiable(_string_aux, has_aux=True), w).kind == "connected"
    with pytest.raises(TypeError, match="must return a pair"):
        tf.explain(lambda w: tf.reduce_sum(w), w, has_aux=True)
    with pytest.raises(TypeError, match="wrt=1, but the function got 1 positional"):
        tf.explain(lambda w: tf.reduce_sum(w), w, wrt=1)  # was a raw IndexError


def test_a_where_condition_before_the_real_cut_is_not_named():
    x = tf.Variable([1.0, -1.0])
    with tf.GradientTape() as t:
        y = tf.where(x > 0.0, x, 0.0)
        z = tf.reduce_sum(tf.round(y))  # the real cut
    why = t.explain(z, x)
    assert (why.kind, why.op, why.line) == ("no gradient", "round", _line("the real cut"))
    assert [(c.step.op, c.reaches_target, c.as_operand) for c in why.cuts] == \
        [("round", True, False), ("greater", False, True)]


def test_a_where_condition_alone_is_named_as_an_operand():
    x, w = tf.Variable([1.0, -1.0]), tf.Variable([2.0, 3.0])
    with tf.GradientTape() as t:
        y = tf.reduce_sum(tf.where(x > 0.0, w, 0.0))  # condition only
    why = t.explain(y, x)
    assert t.gradient(y, x) is None
    assert (why.kind, why.op, why.line, why.cut.as_operand) == \
        ("no gradient", "greater", _line("condition only"), True)
    assert "only as an operand" in str(why)


@pytest.mark.parametrize("update, op, detail", [
    (lambda v, a: v.assign_add(a * 2.0), "assign_add", "assign_add to v:0"),
    (lambda v, a: v.assign_sub(a * 2.0), "assign_sub", "assign_sub to v:0"),
    (lambda v, a: v[1:].assign(a[1:] * 2.0), "assign", "assign to v:0[...]"),
])
def test_updates_of_a_variable_are_assign_cuts(update, op, detail):
    a = tf.constant([1.0, 2.0])
    v = tf.Variable([0.0, 0.0], name="v")
    with tf.GradientTape(persistent=True) as t:
        t.watch(a)
        update(v, a)
        y = tf.reduce_sum(v * 3.0)
    assert t.gradient(y, a) is None  # as TensorFlow: an update is not differentiated
    why = t.explain(y, a)
    assert (why.kind, why.op, why.line, why.cut.detail) == \
        ("assign", op, update.__code__.co_firstlineno, detail)
    np.testing.assert_allclose(v.numpy(), [2.0, 4.0] if op == "assign_add" else
                               [-2.0, -4.0] if op == "assign_sub" else [0.0, 4.0])


def test_a_structure_of_sources_gets_a_structure_of_explanations():
    a, b, c = tf.Variable(1.0), tf.Variable(2.0), tf.Variable(3.0)
    with tf.GradientTape() as t:
        y = a * tf.round(b)
    why = t.explain(y, {"ab": [a, b], "c": (c,)})
    assert [e.kind for e in why["ab"]] == ["connected", "no gradient"]
    assert isinstance(why["c"], tuple) and why["c"][0].kind == "unwatched"


def test_a_chain_of_thousands_of_ops_is_explained_without_recursion():
    x = tf.Variable(1.0)
    with tf.GradientTape() as t:
        y = x
        for _ in range(3000):
            y = y * 1.0  # long chain
    why = t.explain(y, x)
    assert (why.kind, why.path_count) == ("connected", 1)
    assert [(s.op, s.line) for s in why.paths[0]] == [("multiply x3000", _line("long chain"))]


@tf.custom_gradient
def _second_gets_none(x, y):
    return x * y, lambda g: (g * y, None)


def test_a_custom_gradient_returning_none_is_a_cut_of_its_own():
    a, b = tf.Variable(1.0), tf.Variable(2.0)
    with tf.GradientTape(persistent=True) as t:
        z = _second_gets_none(a, b) * 3.0  # custom call
    assert t.gradient(z, a).numpy() == 6.0 and t.gradient(z, b) is None
    why = t.explain(z, b)
    assert (why.kind, why.op, why.line) == \
        ("custom_gradient returned None", "custom_gradient", _line("custom call"))
    assert "input 2" in why.cut.detail
    assert t.explain(z, a).kind == "connected"


@pytest.mark.parametrize("x, fn", [
    ([np.inf, 1.0], lambda a: tf.where(a < 10.0, 2.0 * a, 0.0)),  # finite derivative
    ([0.0, -1.0, 4.0], lambda x: tf.sqrt(tf.where(x > 0.0, x, 1.0))),  # the safe sqrt
    ([0.0, 1.0], lambda x: tf.where(x >= 0.0, tf.sqrt(x), 0.0)),  # inf where selected
])
def test_no_where_trap_where_the_gradient_has_no_nan_from_it(x, fn):
    x = tf.constant(x)
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(fn(x))
    assert t.explain(y, x).where_traps == ()


@pytest.mark.parametrize("fn", [
    lambda z: tf.reduce_sum(z) + 0.0 * tf.reduce_sum(  # the where's value cut on its way
        tf.stop_gradient(tf.where(z > 0.0, tf.math.log(z), 0.0))),
    lambda z: tf.reduce_sum(tf.where([True] * 3, tf.math.log(z[0]) + tf.zeros(3), 0.0)),
])
def test_no_where_trap_where_the_where_selects_all_or_its_value_is_cut(fn):
    """Found by helper 116: a trap was named for a where whose value never reached the
    target with its gradient, and for a where selecting every element, of a shape other
    than the source's (the infinite derivative is a real one)."""
    z = tf.constant([0.0, 1.0])
    with tf.GradientTape() as t:
        t.watch(z)
        y = fn(z)
    assert t.explain(y, z).where_traps == ()


def test_nones_of_an_ops_operand_a_range_a_variable_and_a_later_target_are_named():
    """Found by helper 116: each was "connected" (polygamma's order has no gradient) or
    "not connected" though the target depends on the source."""
    a = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as t:
        t.watch(a)
        y = tf.reduce_sum(tf.math.polygamma(a, 1.5))  # order
        r = tf.reduce_sum(tf.range(a[0], 4.0))  # range
        v = tf.reduce_sum(tf.Variable(a * 2.0))  # variable
    later = y * 2.0
    for target, kind, op, marker in ((y, "no gradient", "polygamma", "order"),
                                     (r, "no gradient", "range", "range"),
                                     (v, "assign", "Variable", "variable")):
        assert t.gradient(target, a) is None
        assert (t.explain(target, a).kind, t.explain(target, a).op,
                t.explain(target, a).line) == (kind, op, _line(marker))
    assert "input 1" in t.explain(y, a).cut.detail
    assert t.explain(later, a).kind == "not recorded"
    x, t = tf.constant(2.0), tf.GradientTape(persistent=True)
    with t:
        t.watch(x)
        y = x * x
    between = y * 2.0
    with t:  # a second block (helper 119: 'not recorded', its gradient 12)
        z = y * 3.0
    assert t.gradient(z, x) == 12.0 and t.explain(z, x).kind == "connected"
    assert t.explain(between, x).kind == "not recorded"


def test_a_where_trap_of_a_derivative_made_infinite_upstream():
    x = tf.constant([4.0, 0.0])
    with tf.GradientTape() as t:
        t.watch(x)
        r = tf.sqrt(x)
        y = tf.reduce_sum(tf.where(x > 0.0, 1.0 / r, 0.0))  # trap
    assert np.isnan(t.gradient(y, x).numpy()[1])
    assert [s.line for s in t.explain(y, x).where_traps] == [_line("trap")]


def test_a_list_given_to_numpy_is_cut_at_the_users_line():
    x = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as t, warnings.catch_warnings():
        warnings.simplefilter("ignore", GradientCutWarning)
        y = tf.constant(np.sum([x * 1.0, x * 2.0])) * 1.0  # numpy list
    why = t.explain(y, x)
    assert (why.kind, why.file, why.line) == \
        ("numpy conversion", "test_explain.py", _line("numpy list"))
    assert len(why.cuts) == 1  # two conversions of one line, said once


@pytest.mark.parametrize("convert, what", [
    (int, "Python int"), (float, "Python float"), (lambda t: t.item(), "Python scalar"),
    (lambda t: t.numpy(), "NumPy value"),
])
def test_conversions_to_python_values_are_named_and_warned_of_once(convert, what):
    x = tf.Variable(1.5)
    with tf.GradientTape() as t:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            for _ in range(3):
                c = convert(x * 2.0)  # converted
        y = tf.constant(float(c)) * 1.0
    # A method converts in the row's lambda, the user's line.
    site = _line("converted") if convert in (int, float) else convert.__code__.co_firstlineno
    if what == "NumPy value":  # t.numpy(): a deliberate read (logging), kept, not warned of
        assert caught == []
    else:
        assert [(w.category, w.lineno) for w in caught] == [(GradientCutWarning, site)]
        assert f"became a {what}" in str(caught[0].message)
    why = t.explain(y, x)
    assert (why.kind, why.op, why.line) == ("numpy conversion", what, site)


def test_numpy_of_a_variable_is_a_conversion_not_unwatched():
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as t, pytest.warns(GradientCutWarning):
        y = tf.reduce_sum(tf.constant(np.array(v)))  # array of v
    assert t.gradient(y, v) is None
    why = t.explain(y, v)
    assert (why.kind, why.op, why.line) == ("numpy conversion", "NumPy array",
                                            _line("array of v"))


def _python_branch(a, b):
    if tf.reduce_sum(a) > 0:  # python if
        return tf.reduce_sum(a * 2.0)
    return tf.reduce_sum(b * 3.0)


def test_a_branch_not_taken_is_named_at_its_condition():
    x, w = tf.Variable(1.0), tf.Variable(2.0)
    with tf.GradientTape() as t:
        y = tf.cond(x > 0.0, lambda: x * 2.0, lambda: w * 3.0)  # cond
    why = t.explain(y, w)
    assert (why.kind, why.op, why.line) == ("branch not taken", "cond", _line("cond"))
    assert "false_fn" in why.cut.detail
    why = tf.explain(_python_branch, np.ones(2), np.ones(2), wrt=(0, 1))
    assert [e.kind for e in why] == ["connected", "branch not taken"]
    assert (why[1].op, why[1].line) == ("if", _line("python if"))
    f = tf.function(_python_branch)
    with tf.GradientTape() as t:
        t.watch([x, w])
        y = f(x, w)
    assert t.explain(y, w).kind == "branch not taken"
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * 2.0 if tf.reduce_sum(x) < 0.0 else x * w  # both ways connected
    why = t.explain(y, x)
    assert why.kind == "connected" and "branch not taken" not in [c.kind for c in why.cuts]


@pytest.mark.parametrize("fn, x, op", [
    (tf.nn.relu, [-1.0, -2.0], "relu"),
    (lambda x: x * 0.0, [1.0, 2.0], "multiply"),
    (lambda x: tf.where(x > 5.0, x, 0.0), [1.0, 2.0], "where"),
    (lambda x: tf.maximum(x, 3.0), [1.0, 2.0], "maximum"),
    (lambda x: tf.minimum(x, -3.0), [1.0, 2.0], "minimum"),
    (lambda x: tf.sign(x) * x * 0.0 + tf.sign(x), [1.0, -2.0], "sign"),
    (lambda x: tf.clip_by_value(x, 5.0, 6.0), [1.0, 2.0], None),
])
def test_a_zero_gradient_names_the_ops_with_a_zero_derivative(fn, x, op):
    x = tf.Variable(x)
    with tf.GradientTape() as t:
        y = tf.reduce_sum(fn(x))  # zero
    np.testing.assert_array_equal(t.gradient(y, x).numpy(), 0.0)
    why = t.explain(y, x)
    assert (why.kind, why.line, why.file) == ("zero", _line("zero"), "test_explain.py") \
        or why.line == fn.__code__.co_firstlineno
    assert why.kind == "zero" and why.zeros
    if op is not None:
        assert op in [s.op for s in why.zeros]
    assert "zero (connected by" in str(why)


def test_a_partly_zero_gradient_is_connected():
    x = tf.Variable([-1.0, 2.0])
    with tf.GradientTape() as t:
        y = tf.reduce_sum(tf.nn.relu(x))
    why = t.explain(y, x)
    assert (why.kind, why.zeros, why.line) == ("connected", (), None)


def test_a_zero_from_elements_cut_by_two_ops():
    x = tf.Variable([-1.0, 2.0])
    with tf.GradientTape() as t:
        y = tf.reduce_sum(tf.where(x > 0.0, 0.0, tf.nn.relu(x)))  # two
    why = t.explain(y, x)
    assert why.kind == "zero"
    assert [s.op for s in why.zeros] == ["relu", "where"]


def test_explain_runs_quietly_under_debug_nans_and_inside_the_tape():
    tf.debug_nans(True)
    x = tf.constant([1.0, 0.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(tf.where(x > 0.0, tf.math.log(tf.maximum(x, 1.0)), 0.0))
        records = len(t._records)
        why = t.explain(y, x)
        assert len(t._records) == records  # explain's VJPs were not recorded
    assert why.kind == "connected"


def test_explains_quiet_nan_checks_come_back_as_they_were_when_nested():
    from srcxform.ad.explain import _quietly
    from srcxform.core.recording import CONTEXT

    with _quietly():
        with _quietly():  # a probe inside a probe (a custom gradient explained within)
            assert CONTEXT.nans_quiet
        assert CONTEXT.nans_quiet  # reset to False before: the outer probe's NaNs raised
    assert not CONTEXT.nans_quiet


@pytest.mark.parametrize("fn", [
    lambda x: tf.reduce_sum(tf.nn.softmax(x)),
    lambda x: tf.reduce_sum(x * 3.0) - tf.reduce_sum(x * 3.0),
    lambda x: tf.reduce_sum(x - tf.reduce_mean(x)),
])
def test_a_zero_gradient_of_paths_that_cancel_blames_no_op(fn):
    """Helper 97: these named reduce_sum, divide, multiply or subtract as ops of a zero
    derivative, which none of them has: the input's uses cancel. An op is named only
    where the cotangent it alone gives its input is 0."""
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = fn(x)
    np.testing.assert_allclose(t.gradient(y, x).numpy(), 0.0, atol=1e-6)
    why = t.explain(y, x)
    assert (why.kind, why.zeros, why.op, why.cut) == ("cancelled", (), None, None)
    assert "whose contributions cancel" in str(why) and "path 1" in str(why)


@pytest.mark.parametrize("fn", [
    lambda w: tf.reduce_sum(tf.where(w > 0, w, 2.0 * w)) - (w[0] + 2.0 * w[1]),
    lambda w: tf.reduce_sum(tf.maximum(w, w) - w),
    lambda w: tf.reduce_sum(w[0] * tf.constant([1.0, -1.0])),
])
def test_an_op_another_of_whose_inputs_carries_the_gradient_zeroes_nothing(fn):
    """Helper 98 on 92353ef: where(c, w, 2w) was named for the elements where it selects
    the other input, which carries them; x * [1, -1] for a scalar x for the sum to x's
    shape, which is where its gradient cancels."""
    w = tf.Variable([1.0, -2.0])
    with tf.GradientTape() as t:
        y = fn(w)
    np.testing.assert_array_equal(t.gradient(y, w).numpy(), 0.0)
    assert (t.explain(y, w).kind, t.explain(y, w).zeros) == ("cancelled", ())
