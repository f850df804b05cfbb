"""One rule for a compiled function's arguments (core/signature.py): the slow path's cache
key, the warm entry's tests (text, run here as Python) and the trace's guards all come
from it and agree; and Convention.result_leaves, the one reader of `returns`, makes the
same results as generated code (callpath.py) and at tier 0 (tiered.py)."""

import ast
import collections
import dataclasses
import itertools

import numpy as np
import pytest

import srcxform as tf
from srcxform.codegen.callconv import Convention
from srcxform.codegen.callpath import ResultExprs, results_ast
from srcxform.core import signature
from srcxform.core.tensor import Tensor, Variable
from srcxform.core.tree import register_pytree_node, tree_flatten
from srcxform.jit import tiered

Pair = collections.namedtuple("Pair", "a b")


@dataclasses.dataclass
class Box:
    x: object


class Node:
    def __init__(self, x, tag):
        self.x, self.tag = x, tag


register_pytree_node(Node, lambda n: ((n.x,), n.tag), lambda tag, xs: Node(xs[0], tag))


class SubArray(np.ndarray):
    pass


def _big_endian(array):
    return array.astype(array.dtype.newbyteorder(">"))


# Argument values of every kind a kernel takes, with near misses of each.
ARGUMENTS = [
    np.ones(3), np.ones(4), np.ones((1, 3)), np.ones((2, 3)), np.ones((3, 1)),
    np.ones(3, np.float32), np.ones(3, np.int64), np.ones(3, bool), np.ones((2, 3))[:, ::2],
    np.ones((3, 2), order="F"), np.array(2.0), np.array(2.0, np.float32), np.array(7),
    _big_endian(np.ones(3)), _big_endian(np.array(2.0)), np.ones(3).view(SubArray),
    np.float64(1.5), np.float32(1.5), np.int32(2), np.bool_(True), 1.5, 2.5,
    1, 2, True, False, "a", "b",
    Tensor(np.ones(3)), Tensor(np.ones(5)), Tensor(np.ones(3, np.float32)), Tensor(2.0),
    Tensor._new(np.ones(3), weak=True), Variable(np.ones(3)), Variable(np.ones(4)),
    Variable(2.0),
    (np.ones(3), 1), [np.ones(3), 1], (np.ones(3), 1, 2), {"a": 1.0, "b": np.ones(2)},
    {"a": 1.0, "c": np.ones(2)}, {"b": np.ones(2), "a": 1.0}, Pair(np.ones(2), 2),
    Box(np.ones(2)), Node(np.ones(2), "t"), Node(np.ones(2), "u"), Node(np.ones(2), 1),
    Node(np.ones(2), True), Node(np.ones(2), 1.0), Node(np.ones(2), (0.0, 1)),
    Node(np.ones(2), (-0.0, 1)), None, (None,),
]


def _key(arg, tf_rules):
    leaves, tree = tree_flatten(arg)
    return tree, signature.key(leaves, tf_rules)


def _entry_tests(first, tf_rules):
    """The warm entry's tests of an argument like `first`, as a function of a later one:
    "fallback" (the call goes on to the slow path), "checked" (it runs through Numba's
    dispatcher: a layout the compiled code was not typed for) or "direct"."""
    tests = signature.ArgumentTests((first,), tf_rules)
    body = [f"global {', '.join(tests.last_shapes)}"] if tests.last_shapes else []
    body += ["run = 'direct'", "try:", "    pass", *(f"    {line}" for line in tests.unpack),
             "except (KeyError, IndexError, TypeError):", "    return 'fallback'",
             *tests.checks, "return run"]
    namespace = dict(tests.constants, **tests.last_shapes, fallback=lambda *a: "fallback",
                     checked="checked")
    exec("def entry(a0):\n" + "".join(f"    {line}\n" for line in body), namespace)  # noqa: S102
    return namespace["entry"]


def _deferred(first, later):
    """Whether the entry sends `later` to the slow path, although its key is `first`'s,
    by design: the slow path converts a byte order Numba cannot type, and a subclass of
    ndarray is rare: a test of the exact type costs less than its support."""
    pairs = zip(tree_flatten(first)[0], tree_flatten(later)[0])
    return any(type(f) is not type(x) or
               np.ndim(x) and not getattr(x, "_array", x).dtype.isnative for f, x in pairs)


@pytest.mark.parametrize("tf_rules", [False, True], ids=["differentiable", "tf.function"])
def test_the_entry_lets_a_call_through_exactly_where_the_slow_path_finds_the_same_key(
        tf_rules):
    let_through = 0
    for first, later in itertools.product(ARGUMENTS, repeat=2):
        outcome = _entry_tests(first, tf_rules)(later)
        same = _key(first, tf_rules) == _key(later, tf_rules)
        if outcome != "fallback":
            let_through += first is not later
            assert same, (first, later, outcome)
        elif same:
            assert _deferred(first, later), (first, later)
    # Not vacuous: every argument but one (big-endian) passes its own tests, and others of
    # its key.
    refused = [a for a in ARGUMENTS if _entry_tests(a, tf_rules)(a) == "fallback"]
    assert len(refused) == 1 and all(_deferred(a, a) for a in refused)
    assert let_through >= 15


def test_a_layout_numba_was_not_typed_for_runs_through_the_dispatcher():
    entry = _entry_tests(np.ones((2, 3)), False)
    assert entry(np.ones((4, 5))) == "direct"
    assert entry(np.ones((4, 5), order="F")) == "checked"
    assert entry(np.ones((4, 6))[:, ::2]) == "checked"
    assert entry(np.ones((1, 5))) == "fallback"  # a dim of 1 is in the key


def test_tf_functions_rules_make_a_python_float_static_and_an_array_a_tensor():
    assert signature.key([1.5, 2.5]) == ("float", "float")
    assert signature.key([1.5], tf_rules=True) == (("static", float, ("1.5", (1.0,))),)
    plain = [signature.rule_of(x) for x in (1.5, np.ones(2), np.float32(1), 3)]
    tf_like = [signature.rule_of(x, True) for x in (1.5, np.ones(2), np.float32(1), 3)]
    assert [r.traced for r in plain] == [True, True, True, False]
    assert [r.eager for r in plain[:3]] == ["python", "numpy", "numpy"]
    assert [r.traced for r in tf_like] == [False, True, True, False]
    assert [r.eager for r in tf_like[1:3]] == ["tensor", "tensor"]


@pytest.mark.parametrize("leaf, message", [
    (np.ones(2, np.float16), "not float16"), (np.complex128(1j), "not complex128"),
    (Tensor(np.ones(2, np.float16)), "not float16"), (1j, "cannot pass a complex"),
    (object(), "cannot pass a object")])
def test_a_leaf_no_kernel_takes_is_refused_by_name(leaf, message):
    with pytest.raises(TypeError, match=message):
        signature.key([leaf])


def _half_inside(x):
    return tf.reduce_sum(tf.cast(tf.cast(x, tf.float16) * 2, tf.float32))


def _half_in_a_loop(x):
    return tf.reduce_sum(tf.fori_loop(
        0, 2, lambda i, c: c + tf.cast(tf.cast(x, tf.float16), tf.float32), tf.zeros_like(x)))


@pytest.mark.parametrize("fn", [_half_inside, _half_in_a_loop])
def test_a_value_no_kernel_computes_in_made_inside_is_refused_naming_op_and_line(fn):
    # A float16 made by the function (not passed to it) was Numba's CompileError naming
    # no op or line; the trace refuses it before any code is generated. (`f.grad` alone
    # computes nothing in float16 here: the passes leave the gradient, 2, and no cast.)
    f = tf.differentiable(fn)
    for call in (f, f.value_and_grad):
        with pytest.raises(TypeError, match=r"cast\(f32\[3\]\) -> f16\[3\]: .* not float16"
                                            r"(.|\n)*at test_signature.py:\d+: .*tf.float16"):
            call(np.ones(3, np.float32))


def test_a_captured_big_endian_array_is_refused_naming_op_and_line():
    # An argument is converted to native order at each call; a captured array is passed
    # as it is, which Numba could not compile (a CompileError naming no op or line).
    table = np.arange(1.0, 4.0).astype(">f8")
    f = tf.differentiable(lambda x: tf.reduce_sum(x * table))
    with pytest.raises(TypeError, match=r"multiply\(f64\[3\], f64\[3\]\) -> f64\[3\]: a "
                                        r"captured big-endian array(.|\n)*at test_signature.py"):
        f(np.ones(3))
    native = np.arange(1.0, 4.0)
    g = tf.differentiable(lambda x: tf.reduce_sum(x * native))
    assert g(np.ones(3).astype(">f8")) == 6.0


def test_the_kernel_receives_what_the_entrys_text_passes_it():
    for value in (np.ones(3), np.array(2.5), Tensor(np.ones(2)), Tensor(3.0), Variable(2.0),
                  1.5, np.float32(2.0)):
        expected = signature.kernel_value(value)
        got = eval(signature.kernel_expr("v", value), {"v": value})
        assert type(got) is type(expected) and np.array_equal(got, expected)
    swapped = signature.kernel_value(_big_endian(np.arange(3.0)))
    assert swapped.dtype.isnative and list(swapped) == [0.0, 1.0, 2.0]


# Guards (expr, op), meaning `expr op 0`, over size symbols 0 and 1.
GUARDS = [(("-", ("size", 0), 3), ">="), (("%", ("size", 1), 2), "=="),
          (("-", ("size", 0), ("size", 1)), "!=")]


def test_the_entrys_guard_tests_fail_exactly_where_the_kernel_does_not_admit_the_sizes():
    admitted = 0
    for sizes in itertools.product(range(6), repeat=2):
        tests = signature.failing(GUARDS, lambda k: f"n{k}")
        fails = any(eval(t, {"n0": sizes[0], "n1": sizes[1]}) for t in tests)
        assert fails is not signature.admits(GUARDS, list(sizes)), sizes
        admitted += not fails
    assert 0 < admitted < 36


def test_a_kernel_admits_the_sizes_its_trace_relied_on():
    f = tf.differentiable(lambda x: tf.reduce_sum(x[2:] * 2.0), wait=True)
    kernel = f._kernel("value", (np.ones(4),), {})[0]
    assert kernel.guards and kernel.admits(kernel.arguments([np.ones(7)]))
    assert not kernel.admits(kernel.arguments([np.ones(2)]))


# ----- Convention.returns, read by one interpreter -----

# Result leaves: (eager kind, weak, shape, dtype) of each output, then an argument leaf and a
# fixed value.
OUTPUTS = [("tensor", True, (), np.float64), ("tensor", False, (2,), np.float32),
           ("numpy", False, (), np.float32), ("numpy", False, (), np.float64),
           ("python", False, (), np.float64), ("numpy", False, (2,), np.int64),
           ("python", False, (), np.int64)]


def _convention(form, eager_value=True):
    returns = tuple(("out", j, eager, weak) for j, (eager, weak, _, _) in enumerate(OUTPUTS))
    returns += (("arg", 0), ("const", "fixed"))
    trees = (tree_flatten(tuple(range(len(returns))))[1],)
    if form != "value":  # and a gradient of no leaves
        trees += (tree_flatten(((),))[1],)
    outs = tuple((shape, np.dtype(dtype)) for _, _, shape, dtype in OUTPUTS)
    return Convention(form, (0,), (), (), 0, (), outs, (), trees, returns, (), True,
                      eager_value, ("x",), ("x",), tuple(f"o{j}" for j in range(len(outs))))


def _generated(conv, arg, outputs):
    """The results as the generated call path builds them, from what Numba returns."""
    names = [f"o{j}" for j in range(len(outputs))]
    expr = results_ast(conv, conv.result_leaves(ResultExprs(["x"], names)), None)
    returned = {f"o{j}": o if o.ndim else o.item() for j, o in enumerate(outputs)}
    code = compile(ast.Expression(ast.fix_missing_locations(expr)), "<results>", "eval")
    return eval(code, {"np": np, "tensor": Tensor._new, "x": arg, **returned})


@pytest.mark.parametrize("form, eager_value", [("value", True), ("value", False),
                                               ("value_and_grad", True)])
def test_generated_code_and_tier_0_return_the_same_results(form, eager_value):
    conv = _convention(form, eager_value)
    outputs = [np.asarray(np.full(shape, 3), dtype) for _, _, shape, dtype in OUTPUTS]
    arg = np.ones(2)
    tier0 = conv.results(conv.result_leaves(tiered._Values(conv, [arg], outputs)))
    generated = _generated(conv, arg, outputs)
    if form != "value":
        tier0, generated = tier0[0], generated[0]
    kinds = [(type(r), getattr(r, "_weak", None), np.asarray(getattr(r, "_array", r)).dtype)
             for r in tier0]
    assert kinds == [(type(r), getattr(r, "_weak", None),
                      np.asarray(getattr(r, "_array", r)).dtype) for r in generated]
    assert tier0[-2] is arg and generated[-2] is arg and tier0[-1] == generated[-1] == "fixed"
    plain = form == "value" and eager_value
    expected = [Tensor, Tensor, np.float32, np.float64, float, np.ndarray, int] if plain \
        else [float, np.ndarray, np.float32, float, float, np.ndarray, np.int64]
    assert [k[0] for k in kinds[:len(OUTPUTS)]] == expected


def test_a_dict_argument_in_another_order_gets_its_gradient_in_its_own_order():
    f = tf.differentiable(lambda p: tf.reduce_sum(p["a"] * p["b"] ** 2), wait=True)
    a, b = np.ones(2), np.arange(1.0, 3.0)
    for params in ({"a": a, "b": b}, {"b": b, "a": a}, {"b": b, "a": a}, {"a": a, "b": b}):
        grads = f.grad(params)
        assert list(grads) == list(params)  # as tape.gradient and TF's nest return it
        np.testing.assert_array_equal(grads["a"], b ** 2)
        np.testing.assert_array_equal(grads["b"], 2 * a * b)


@pytest.mark.parametrize("other", [np.float32(2.0), np.ones(3, np.float32), np.ones(3)],
                         ids=["f32 scalar", "f32 array", "f64 array"])
def test_a_weak_tensor_argument_takes_the_other_operands_dtype_as_eagerly(other):
    weak = tf.add(1.5, 2.0)  # a Python float's tensor: weak
    assert weak._weak
    f = tf.differentiable(lambda x, y: x * y + x, wait=True)
    want = weak * tf.constant(other) + weak
    for _ in range(2):  # the slow path, then the warm entry
        got = f(weak, other)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-6)
    strong = tf.constant(3.5)
    assert f(strong, other).dtype == (strong * tf.constant(other) + strong).dtype


def test_a_registered_types_aux_data_keys_kernels_by_type_and_spelling():
    """Aux data 1, True and 1.0 compare equal, so they shared a kernel: a function
    reading `p.tag is True` got the first call's answer (0.6 for 6.0; helper 100). They
    are compared as a dict's keys are now, by the cache and by the warm entry."""
    def scaled(p):
        return tf.reduce_sum(p.x) * (10.0 if p.tag is True else 1.0)

    f, x = tf.differentiable(scaled), np.array([0.3, -0.5, 0.8])
    for tag in (1, True, 1, True, 1.0, (1, 2), (True, 2), 0.0, -0.0):
        for _ in range(2):  # the slow path, then the warm entry
            assert float(f(Node(x, tag))) == float(scaled(Node(tf.constant(x), tag)))
            assert repr(f.grad(Node(x, tag)).tag) == repr(tag)


def test_aux_sets_of_floats_spelled_apart_key_apart():
    # Helper 101: frozenset({0.0}) and frozenset({-0.0}) are equal sets.
    f = tf.differentiable(lambda p: tf.reduce_sum(p.x) / next(iter(p.tag)))
    x = np.array([1.0, 2.0])
    assert [float(f(Node(x, frozenset({s})))) for s in (0.0, -0.0)] == [np.inf, -np.inf]


@pytest.mark.parametrize("tag", [float("nan"), (1, float("nan")), frozenset({float("nan")})])
def test_aux_data_not_equal_to_itself_is_refused(tag):
    # Helper 101: a NaN made by the flatten function missed the cache at every call, a
    # kernel each time; a NaN dict key raised already.
    f = tf.differentiable(lambda p: tf.reduce_sum(p.x))
    with pytest.raises(TypeError, match="aux data not equal to itself"):
        f(Node(np.ones(2), tag))
