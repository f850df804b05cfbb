"""The call path generated into each kernel's module from its calling convention: the
general path and f.kernel() (codegen/callpath.py), and the warm entries (codegen/entry.py)."""

import collections
import copy
import dis
import functools
import pickle
import re

import numpy as np
import pytest

import srcxform as tf
from srcxform.api import Differentiable


def loss(w, x):
    return tf.reduce_sum(tf.tanh(x * w))


LOSS = tf.differentiable(loss)
W, X = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, -0.5])


def _numeric_grad(f, w, eps=1e-6):
    grad = np.zeros_like(w)
    for k in range(w.size):
        step = np.zeros_like(w)
        step[k] = eps
        grad[k] = (f(w + step) - f(w - step)) / (2 * eps)
    return grad


def test_the_source_shows_the_kernel_and_the_plain_value_and_gradient_function():
    source = LOSS.source(W, X)
    assert "def loss__value_and_grad(w, x, bw):" in source
    both = source[source.index("def loss_value_and_grad(w, x):"):].split("\n\n\n")[0]
    # It allocates the gradient, calls the kernel and returns the value and the gradient.
    assert "grad_w = np.empty((n0,))" in both
    # The kernel returns its one output (the value) bare, not in a tuple.
    assert "value = loss__value_and_grad(w, x, grad_w)" in both
    kernel = source[:source.index("def loss_value_and_grad(w, x):")]
    assert re.search(r"\n    return \w+\n", kernel) and "return (" not in kernel
    assert both.rstrip().endswith("return value, grad_w")
    assert "def loss_grad(" not in source  # f.grad runs a kernel of its own


def test_the_general_path_runs_the_generated_functions():
    """Keyword arguments never reach a warm entry: these calls run the call path's
    generated functions, and agree with the warm path and with finite differences."""
    expected = _numeric_grad(lambda w: np.sum(np.tanh(X * w)), W)
    by_keyword = LOSS.grad(W, x=X)
    np.testing.assert_allclose(by_keyword, expected, rtol=1e-6)
    np.testing.assert_array_equal(LOSS.grad(W, X), by_keyword)
    value, grad = LOSS.value_and_grad(W, x=X)
    np.testing.assert_allclose(value, np.sum(np.tanh(X * W)), rtol=1e-12)
    np.testing.assert_array_equal(grad, by_keyword)
    plain = LOSS(W, x=X)
    assert isinstance(plain, tf.Tensor) and plain.numpy() == value  # as eager: a Tensor


def test_the_kernel_wrapper_is_the_generated_one():
    kernel = LOSS.kernel(W, X)
    value, grad = kernel(W, X)
    np.testing.assert_array_equal(grad, LOSS.grad(W, X))
    assert value == LOSS.value_and_grad(W, X)[0]
    assert getattr(kernel, "py_func", kernel).__code__.co_name == "loss_kernel"


def test_the_warm_entry_is_the_one_in_the_source(monkeypatch):
    # Checked (SRCXFORM_CHECK), an entry also tests the shapes checked: another text.
    monkeypatch.setenv("SRCXFORM_CHECK", "0")
    f = tf.differentiable(loss)
    f.value_and_grad(W, X)  # the first positional call makes the entry
    entry = f.value_and_grad
    assert entry.__code__.co_name == "loss_value_and_grad_entry"
    # The generated module's copy, not one compiled apart.
    assert entry.__code__.co_filename.endswith(".py")
    assert "def loss_value_and_grad_entry(this, a0=NO, a1=NO, /, *more, **kwargs):" in \
        f.source(W, X)
    for got, want in zip(entry(W, X), f.value_and_grad(W, x=X)):
        np.testing.assert_array_equal(got, want)


def test_the_entries_are_methods_of_a_class_of_the_functions_own():
    """f.grad is the newest entry as a method of f's own class (CPython finds it there
    quickly); a reference taken before the first call forwards to the newest entry."""
    def cube(x):
        return x * x * x

    f = tf.differentiable(cube, wait=True)
    early = f.grad
    other = tf.differentiable(cube, wait=True)
    assert type(f) is not type(other) and isinstance(f, Differentiable)
    assert early(2.0) == 12.0  # the slow path: it makes the entry
    assert "grad" in vars(type(f)) and "grad" not in vars(f) and "grad" not in vars(type(other))
    assert f.grad.__func__ is vars(type(f))["grad"] and f.grad.__self__ is f
    hits = f.cache_info().hits
    assert early(3.0) == 27.0 and f.grad(1.5) == 6.75
    assert f.cache_info().hits == hits + 2  # both ran the entry
    assert other.grad(2.0) == 12.0  # f's entry is f's alone


SCALE = 2.0


def _scale_by_global(x):
    return SCALE * x * x


def test_a_call_of_f_runs_the_value_entry_as_its_class_call(monkeypatch):
    """f(...) is the newest value entry as f's class's __call__, with no forwarder before
    it; when what the trace captured changes, the entries are dropped and __call__ is
    Differentiable's forwarder again until a call makes the next entry."""
    f = tf.differentiable(_scale_by_global, wait=True)
    assert f(3.0) == 18.0 and f.grad(3.0) == 12.0  # the slow path: they make the entries
    own = vars(type(f))
    assert own["__call__"].__code__.co_name == "scale_by_global_value_entry"
    assert own["grad"].__code__.co_name == "scale_by_global_grad_entry"
    hits = f.cache_info().hits
    assert f(2.0) == 8.0 and f(1.0) == 2.0 and f.cache_info().hits == hits + 2
    monkeypatch.setattr(__import__(__name__), "SCALE", 3.0)
    assert f(2.0) == 12.0  # the entry's probe fails: the slow path retraces
    assert own["__call__"].__code__.co_name == "scale_by_global_value_entry"
    assert "grad" not in own and f.grad(2.0) == 12.0  # dropped, then made anew
    f._unchain()
    assert "__call__" not in own and "grad" not in own and f(1.0) == 3.0


def _scaled(x, k=2.0):
    return k * x * x


@pytest.mark.parametrize("x, kind", [(2.0, float), (np.float64(2.0), float),
                                     (np.float32(2.0), np.float32)])
def test_a_kernel_of_one_output_returns_it_bare_and_the_forms_agree_on_its_type(x, kind):
    """A kernel whose one output it does not fill returns it bare, not in a 1-tuple (Numba
    boxes no tuple): the warm entry returns what the general path (a keyword call)
    returns, with its type, and the gradient is exact."""
    f = tf.differentiable(_scaled, wait=True)
    f.grad(x, 3.0)  # the slow path: it makes the entry
    warm, general = f.grad(x, 3.0), f.grad(x, k=3.0)
    assert warm == general == 12.0 and type(warm) is type(general)
    assert type(warm) is kind  # as before the kernel returned it bare
    assert f.grad.__code__.co_name == "scaled_grad_entry"
    ops = list(dis.get_instructions(f.grad))
    after_r = [[op.opname for op in ops[k + 1:k + 3]] for k, op in enumerate(ops)
               if op.opname == "LOAD_FAST" and op.argval == "r"]
    assert after_r and all("BINARY_SUBSCR" not in after for after in after_r)  # no r[0]
    value, eager = f(x, 3.0), f(x, k=3.0)
    assert type(value) is type(eager) and np.asarray(value) == np.asarray(eager) == 12.0
    kernel = f.kernel(x, 3.0)  # one output each for value and gradient: a tuple
    assert kernel(x, 3.0) == (12.0, 12.0)


def test_a_call_with_fewer_arguments_reaches_the_entry_made_for_it(monkeypatch):
    """An entry's parameters default to NO, which fails the type test of a missing one: the
    call goes on to the entry made for fewer arguments, which takes it."""
    def scaled(x, k=2.0):
        return k * x * x

    f = tf.differentiable(scaled, wait=True)
    assert f.grad(3.0) == 12.0 and f.grad(3.0, 1.0) == 6.0  # the second entry is the head
    slow = []
    monkeypatch.setattr(type(f), "_kernel", lambda *args, **kw: slow.append(args) or
                        Differentiable._kernel(*args, **kw))
    hits = f.cache_info().hits
    assert f.grad(3.0) == 12.0 and f.grad(3.0, 1.0) == 6.0
    assert f.cache_info().hits == hits + 2 and not slow  # both ran an entry
    assert f.grad(3.0, k=1.0) == 6.0 and len(slow) == 1  # keywords: the slow path
    with pytest.raises(TypeError, match="wrt=0, but the function got 0 positional"):
        f.grad()


def test_an_entry_takes_keywords_only_where_a_call_passing_one_can_succeed():
    """The gradient of a function of one differentiated argument cannot be called with a
    keyword (the general path raises): its entries have no **kwargs, which CPython makes a
    dict for at every call. Its value can be, and a function with a parameter after the
    differentiated ones keeps them (LOSS above)."""
    def square(x):
        return x * x

    f = tf.differentiable(square, wait=True)
    with pytest.raises(TypeError, match="wrt=0, but the function got 0 positional"):
        f.grad(x=2.0)  # the slow path's error
    assert f.grad(2.0) == 4.0 and f.value_and_grad(3.0) == (9.0, 6.0)
    assert "kwargs" not in f.grad.__code__.co_varnames
    with pytest.raises(TypeError, match=r"square\.grad\(\) got an unexpected keyword"):
        f.grad(x=2.0)  # CPython's, naming the function
    assert f(3.0) == 9.0 and f(x=3.0) == 9.0
    assert "kwargs" in tf.differentiable(square).grad.__code__.co_varnames  # a forwarder
    LOSS.grad(W, X)
    assert "kwargs" in LOSS.grad.__code__.co_varnames  # x can be passed by keyword


def test_a_tensor_where_a_variable_was_traced_is_not_assigned():
    @tf.differentiable
    def scale(v, x):
        v.assign(v * x)
        return tf.reduce_sum(v)

    v, t, x = tf.Variable(np.ones(3)), tf.constant(np.ones(3)), np.full(3, 2.0)
    assert scale(v, x).numpy() == 6.0 and v.numpy().tolist() == [2.0] * 3
    with pytest.raises(AttributeError, match="assign"):  # as eagerly: a Tensor has none
        scale(t, x)
    assert t.numpy().tolist() == [1.0] * 3


def test_a_trainable_variable_and_a_frozen_one_each_get_their_kernel():
    # Helper 107: a kernel traced on a trainable Variable argument ran for a frozen one
    # (the tape watched and trained it), and the other way round; and setting trainable
    # after the trace trained a frozen captured Variable. TensorFlow's trainable is fixed.
    def step(w, x):
        with tf.GradientTape() as t:
            loss = tf.reduce_sum(w * w * x)
        g = t.gradient(loss, w)
        if g is not None:
            w.assign_sub(0.1 * g)
        return loss

    x = np.array([1.0, 2.0])
    for order in ((True, False, True), (False, True, False)):
        compiled = tf.differentiable(step)
        for trainable in order:
            v = tf.Variable(np.ones(2), trainable=trainable)
            compiled(v, x)
            want = [0.8, 0.6] if trainable else [1.0, 1.0]
            np.testing.assert_allclose(v.numpy(), want, rtol=1e-15)
    with pytest.raises(AttributeError, match="fixed when the Variable is made"):
        v.trainable = True
    frozen = pickle.loads(pickle.dumps(tf.Variable(1.0, trainable=False)))
    assert not frozen.trainable and copy.deepcopy(v).trainable is v.trainable


def test_a_shallow_copy_of_a_compiled_function_is_itself():
    # Helper 110: copy.copy(step) went through pickling, so it trained Variables of its
    # own; a function's copy is itself. A deep copy has its own, as pickle.loads makes.
    w = tf.Variable(np.zeros(2))
    step = tf.differentiable(lambda x: tf.reduce_sum(w.assign_add(x)))
    assert copy.copy(step) is step
    copy.copy(step)(np.ones(2))
    copy.deepcopy(step)(np.ones(2))
    assert w.numpy().tolist() == [1.0, 1.0]


def test_a_result_that_may_be_a_view_of_an_argument_or_variable_is_a_copy():
    # Helper 110: a gradient that is a transpose of an argument (w.T * X: X's gradient is
    # w.T) and an aux that is a reshape of a Variable or argument were views of them, so
    # writing into the result wrote into the argument or the Variable.
    v = tf.Variable(np.arange(4.0))
    grads = tf.differentiable(lambda w, X: tf.reduce_sum(tf.transpose(w) * X), wrt=(0, 1))
    aux = tf.differentiable(lambda x: (tf.reduce_sum(x * v), (tf.reshape(v, (2, 2)),
                                                              tf.reshape(x, (2, 2))[0])),
                            has_aux=True)
    X, w, x = np.arange(6.0).reshape(2, 3), np.zeros((3, 2)), np.ones(4)
    for _ in range(2):  # the general path, then the warm entry
        for result in (*grads.grad(w, X), *aux.value_and_grad(x)[0][1]):
            result[0] = 77.0
        assert X[0, 0] == w[0, 0] == v.numpy()[0] == 0.0 and x[0] == 1.0


def test_what_a_cond_a_loop_or_a_broadcast_gives_back_is_a_copy():
    # Helper 111: an aux or gradient a cond or loop gave back as it was given (a Variable's
    # value, an argument, z[::-1] twice) was that array; tier 0's broadcast_to a view.
    v, w = tf.Variable(np.ones(3)), np.ones(3)
    picks = tf.value_and_grad(lambda x: (tf.reduce_sum(x * v), tf.cond(
        tf.reduce_sum(x) > 0, lambda: v.read_value(), lambda: v * 2.0)), has_aux=True)
    weights = tf.differentiable(lambda x, w: tf.reduce_sum(x * tf.cond(
        tf.reduce_sum(x) > 0, lambda: w, lambda: 2.0 * w)))
    spread = tf.value_and_grad(lambda x: (tf.reduce_sum(x), tf.broadcast_to(x, (2, 3))),
                               has_aux=True)
    for _ in range(2):  # the general path (tier 0 where it is on), then the warm entry
        for result in (picks(np.ones(3))[0][1], weights.grad(np.ones(3), w),
                       spread(w)[0][1]):
            result[0] = 77.0
        assert v.numpy()[0] == w[0] == 1.0


_ASSIGNED = tf.Variable(np.zeros(3))


@tf.differentiable
def _assigns_its_argument(x):
    _ASSIGNED.assign(x[...])
    return tf.reduce_sum(x)


def test_a_variable_assigned_an_argument_owns_a_copy_at_every_call():
    # Helper 90: the general path and the warm entry gave the Variable the caller's array
    # (x[...] is x in a kernel), so changing the array after the call changed the Variable;
    # an eager assign copies.
    for k in range(3):  # the general path, then the warm entry
        x = np.full(3, float(k))
        _assigns_its_argument(x)
        x[0] = 100.0
        np.testing.assert_array_equal(_ASSIGNED.numpy(), np.full(3, float(k)))


_COUNTER = tf.Variable(1.0)
_PARAMS = [tf.Variable(2.0), tf.Variable(3.0)]


def test_a_kernel_is_used_only_for_variables_alike_to_its_traces():
    """A kernel read and wrote each Variable object its trace saw once: traced on
    alias(a, a), alias(b, c) incremented c (and returned 6.0); traced on count(_COUNTER),
    count(other) incremented other, not _COUNTER; traced on count(other) first,
    count(_COUNTER) returned the value from before the increment (helper 97). Each order,
    each form, through the slow path and then the warm entry, and new Variables each
    call (one kernel serves them all)."""
    def alias(p, q):
        p.assign_add(1.0)
        return q * 1.0

    def count(v):
        _COUNTER.assign_add(1.0)
        return v * 1.0

    def listed(w, x):
        _PARAMS[0].assign(_PARAMS[0] * 2.0)
        return w * x * _PARAMS[1]

    for compiled in (tf.function, tf.differentiable):
        for first_aliased in (True, False):
            f = compiled(alias)
            for k in range(6):
                if (k % 2 == 0) == first_aliased:
                    a = tf.Variable(0.0)
                    assert float(f(a, a)) == 1.0 == float(a.numpy())
                else:
                    b, c = tf.Variable(0.0), tf.Variable(5.0)
                    assert float(f(b, c)) == 5.0 and (b.numpy(), c.numpy()) == (1.0, 5.0)
            g = compiled(count)
            for k in range(6):
                before = float(_COUNTER.numpy())
                if (k % 2 == 0) == first_aliased:
                    assert float(g(_COUNTER)) == before + 1
                else:
                    other = tf.Variable(10.0)
                    assert float(g(other)) == 10.0 == float(other.numpy())
                assert float(_COUNTER.numpy()) == before + 1
    h = tf.differentiable(listed)
    for k in range(4):
        _PARAMS[0].assign(2.0)
        w = _PARAMS[0] if k % 2 == 0 else tf.Variable(2.0)
        assert h.value_and_grad(w, 1.5) == ((18.0 if k % 2 == 0 else 9.0), 4.5)


_W = np.ones(3)


def _with_constants(x):
    return x * 2.0, np.zeros(3), _W * 2.0


def test_a_captured_array_returned_is_a_new_array_at_every_call():
    """np.zeros(3) and _W * 2.0 (folded at the trace) came back as the same array at every
    call, so a caller's change to one result changed the next call's (helper 100); the
    gradient of reduce_sum(x) * 3 for an x of shape (1,) was one read-only array. The
    kernel (and tier 0, running the program on NumPy) copies such an output."""
    from srcxform.jit import tiered

    f, x = tf.differentiable(_with_constants), np.array([1.0, 2.0, 3.0])
    kernel, leaves = f._kernel("value", (x,), {})
    for call in (lambda: f(x), lambda: tiered.results(kernel, leaves)) * 2:
        first, second = call(), call()
        first[1][0], first[2][0] = 99.0, 77.0
        np.testing.assert_array_equal(second[1], np.zeros(3))
        np.testing.assert_array_equal(second[2], np.full(3, 2.0))
    g = tf.differentiable(lambda v: tf.reduce_sum(v) * 3.0).grad
    first, second = g(np.array([2.0])), g(np.array([5.0]))
    first *= 0.5  # writable, and not the next call's
    assert second.tolist() == [3.0]


_W0 = tf.Variable(2.0)
_NESTED = {"dense": {"w": _W0}}


class _Layer:
    def __init__(self, w):
        self.w = w


_LAYERS = [_Layer(_W0)]


def _by_default(x, w=_W0):
    return x * 10.0 + w


def test_a_variable_argument_the_function_reaches_anyhow_is_that_object():
    """Helper 98 on f1923cc: only globals, closures, named attributes and one level of
    items were searched, so a Variable reached as a default, in a nested dict, as
    layers[0].w or through a partial was read by argument position: traced on f(_W0),
    f(w1) gave 55 for 52. A Variable the function only returns came back as the argument;
    and an optimizer's slots, found by their Variable, were the first call's for the next
    Variable passed (its own never made)."""
    partial = functools.partial(lambda x, w: x * 10.0 + w, w=_W0)
    functions = [_by_default, lambda x: x * 10.0 + _NESTED["dense"]["w"],
                 lambda x: x * 10.0 + _LAYERS[0].w, lambda x: partial(x)]
    w1 = tf.Variable(5.0)
    for fn in functions:
        f = tf.differentiable(fn)
        assert [float(f(_W0)), float(f(w1)), float(f(_W0))] == [22.0, 52.0, 22.0]
    returned = tf.differentiable(lambda v, x: (x * 2.0, _W0))
    assert returned(_W0, 1.0)[1] is _W0 and returned(w1, 1.0)[1] is _W0
    optimizer = tf.optimizers.Adam(0.1)

    def step(w):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * w)
        optimizer.apply_gradients([(tape.gradient(loss, w), w)])
        return loss

    compiled, a, b = tf.differentiable(step), tf.Variable([1.0, 2.0]), tf.Variable([3.0, -1.0])
    compiled(a), compiled(b)
    np.testing.assert_allclose(b.numpy(), [2.9, -0.9], atol=0.03)
    np.testing.assert_allclose(optimizer.get_slot(b, "m").numpy(), [0.6, -0.2], rtol=1e-5)
    np.testing.assert_allclose(optimizer.get_slot(a, "m").numpy(), [0.2, 0.4], rtol=1e-5)


class _Held:
    w = _W0


class _Slotted:
    __slots__ = ("w",)


class _MoreSlotted(_Slotted):
    __slots__ = ("z",)


_SLOTTED = _MoreSlotted()
_SLOTTED.w = _W0
_QUEUE = collections.deque([_W0])


def test_variables_reached_through_classes_slots_deques_or_by_identity_alone():
    """Helper 101 on 5bc151e: a class attribute, a base class's slot and a deque's item
    were not searched (traced on f(_W0), f(w1) gave w1's sum twice); and a function
    deciding a branch by `a is b`, reading neither, kept the first call's branch."""
    w1 = tf.Variable(5.0)
    for fn in (lambda x: x * 10.0 + _Held.w, lambda x: x * 10.0 + _SLOTTED.w,
               lambda x: x * 10.0 + _QUEUE[0]):
        f = tf.differentiable(fn)
        assert [float(f(_W0)), float(f(w1)), float(f(_W0))] == [22.0, 52.0, 22.0]
    same = tf.differentiable(lambda a, b, x: x * 2.0 if a is b else x * 3.0)
    assert [float(same(_W0, w1, 1.0)), float(same(_W0, _W0, 1.0))] == [3.0, 2.0]


def test_a_result_that_is_an_input_is_a_copy():
    """Helper 101: the gradient of reduce_sum(x * y) with respect to x was y itself, and
    an aux of v.read_value() was v's own array: changing the result changed y, or v."""
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    gx, _ = tf.differentiable(lambda a, b: tf.reduce_sum(a * b), wrt=(0, 1)).grad(x, y)
    gx *= 0.0
    assert y.tolist() == [3.0, 4.0]
    v = tf.Variable([5.0, 8.0])
    h = tf.differentiable(lambda a: (tf.reduce_sum(a * a), v.read_value()), has_aux=True)
    for _ in range(2):
        h.grad(x)[1][0] = -1.0
    assert v.numpy().tolist() == [5.0, 8.0]


def test_a_value_returned_twice_is_two_arrays():
    # Helper 103: y and y * 1.0 (simplified to y) came back as one array, compiled and at
    # tier 0; changing one changed the other, where eagerly they are two.
    from srcxform.jit import tiered

    f, x = tf.differentiable(lambda v: (v * 2.0, v * 2.0 * 1.0)), np.array([1.0, 2.0])
    kernel, leaves = f._kernel("value", (x,), {})
    for a, b in (f(x), tiered.results(kernel, leaves)):
        a[0] = 99.0
        assert b.tolist() == [2.0, 4.0]
