"""Structures beyond tuples, lists and dicts: NamedTuples, dataclasses, None (a container
of no leaves, as in JAX) and types registered with srcxform.register_pytree_node, as
arguments and results of compiled functions (the warm entry included), as the tape's
sources, and through an optimizer; gradients come back in the same types."""

import collections
import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

import srcxform as tf
from srcxform.core.tree import tree_flatten, tree_unflatten


class Params(NamedTuple):
    w: np.ndarray
    b: float


class Other(NamedTuple):  # the same fields as Params, another type
    w: np.ndarray
    b: float


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: np.ndarray
    activation: str = "tanh"


@dataclasses.dataclass(frozen=True)
class Frozen:
    scale: float


@dataclasses.dataclass
class Pair:
    x: object
    y: object


class Point:
    """A type of the user's own, registered below."""

    def __init__(self, x, y, label):
        self.x, self.y, self.label = x, y, label


tf.register_pytree_node(Point, lambda p: ((p.x, p.y), p.label),
                        lambda label, xy: Point(*xy, label))


def affine(p, x):
    return tf.reduce_sum(p.w * x) + p.b


def test_the_issues_reproducer():
    f = tf.differentiable(lambda p, x: tf.reduce_sum(p.w * x) + p.b)
    g = f.grad(Params(np.ones(2), 1.0), np.array([2.0, 3.0]))
    assert isinstance(g, Params)
    np.testing.assert_array_equal(g.w, [2.0, 3.0])
    assert g.b == 1.0


def test_a_namedtuple_argument_on_the_warm_path():
    f = tf.differentiable(affine)
    x = np.array([2.0, 3.0])
    for k in range(3):  # the second and third calls take the warm entry
        g = f.grad(Params(np.full(2, float(k)), 1.0), x)
        assert type(g) is Params
        np.testing.assert_array_equal(g.w, x)
    assert f.cache_info().hits == 2
    g = f.grad(Other(np.ones(2), 1.0), x)  # another type: another kernel, its own type back
    assert type(g) is Other and f.cache_info().kernels == 2
    value, g = f.value_and_grad(Params(np.ones(2), 0.5), x)
    assert value == 5.5 and type(g) is Params


def test_a_namedtuple_by_keyword_takes_the_general_path():
    f = tf.differentiable(affine)
    for _ in range(2):
        g = f.grad(Params(np.ones(2), 1.0), x=np.array([2.0, 3.0]))
        assert type(g) is Params
        np.testing.assert_array_equal(g.w, [2.0, 3.0])


def test_dataclasses_as_arguments_and_results():
    def forward(layer, scale, x):
        y = tf.tanh(x @ layer.w + layer.b) * scale.scale
        return Layer(y, tf.reduce_sum(y), layer.activation)

    def loss(layer, scale, x):
        return forward(layer, scale, x).b

    layer, scale = Layer(np.full((2, 2), 0.1), np.zeros(2)), Frozen(2.0)
    x = np.array([[1.0, 2.0]])
    f = tf.differentiable(loss, wrt=1)
    for _ in range(2):
        g_scale = f.grad(layer, scale, x)
        assert type(g_scale) is Frozen
    h = np.tanh(x @ layer.w + layer.b)
    np.testing.assert_allclose(g_scale.scale, h.sum())
    out = tf.differentiable(forward)(layer, scale, x)  # a static field (a str) comes back
    assert type(out) is Layer and out.activation == "tanh"
    np.testing.assert_allclose(out.w.numpy(), 2.0 * h)
    numbers = Layer(np.full((2, 2), 0.1), np.zeros(2), 1.0)  # all floats: a wrt argument
    g = tf.grad(lambda layer, x: tf.reduce_sum(x @ layer.w + layer.b) * layer.activation)(
        numbers, x)
    assert type(g) is Layer and g.activation == pytest.approx(0.6)
    np.testing.assert_allclose(g.b, [1.0, 1.0])


def test_none_is_an_empty_subtree():
    def loss(params, x):
        y = x * params["w"]
        if params["b"] is not None:
            y = y + params["b"]
        return tf.reduce_sum(y * y), {"y": y, "nothing": None}

    f = tf.differentiable(loss, has_aux=True)
    x = np.array([1.0, 2.0])
    for _ in range(2):
        g, aux = f.grad({"w": np.ones(2), "b": None}, x)
        assert g["b"] is None and aux["nothing"] is None
        np.testing.assert_array_equal(g["w"], 2 * x * x)
    g, _ = f.grad({"w": np.ones(2), "b": np.zeros(2)}, x)  # not None: another kernel
    np.testing.assert_array_equal(g["b"], 2 * x)
    assert tree_flatten([None, (None,)]) == ([], tree_flatten([None, (None,)])[1])


def test_an_ordered_dict_comes_back_an_ordered_dict():
    # A compiled call returned a plain dict for an OrderedDict, and .grad of one too.
    f = tf.differentiable(lambda d: tf.reduce_sum(d["a"] * d["b"]))
    x = np.array([1.0, 2.0])
    for _ in range(2):  # the general path, then the warm entry
        g = f.grad(collections.OrderedDict(b=x, a=2 * x))
        assert type(g) is collections.OrderedDict and list(g) == ["b", "a"]
        np.testing.assert_array_equal(g["a"], x)
    out = tf.differentiable(lambda x: collections.OrderedDict(b=x, a=x * 2))(x)
    assert type(out) is collections.OrderedDict and list(out) == ["b", "a"]
    assert type(f.grad(collections.defaultdict(list, a=x, b=x))) is dict  # no factory kept
    g = f.grad(_Tagged("t", a=x, b=x))  # a constructor that takes no dict: a dict back
    assert type(g) is dict and list(g) == ["a", "b"]
    np.testing.assert_array_equal(g["a"], x)  # it raised KeyError (helper 83)


class _Tagged(dict):
    def __init__(self, tag=None, **items):
        super().__init__(**items)
        self.tag = tag


def test_a_registered_type():
    def loss(p, x):
        return tf.reduce_sum((p.x * x + p.y) ** 2)

    f = tf.differentiable(loss)
    x = np.array([1.0, 2.0])
    for _ in range(2):
        g = f.grad(Point(np.ones(2), np.zeros(2), "a"), x)
        assert type(g) is Point and g.label == "a"
        np.testing.assert_array_equal(g.x, 2 * x * x)
    g = f.grad(Point(np.ones(2), np.zeros(2), "b"), x)  # other aux data: another kernel
    assert g.label == "b" and f.cache_info().kernels == 2
    leaves, tree = tree_flatten(Point(1.0, 2.0, "c"))
    assert leaves == [1.0, 2.0] and tree_unflatten(tree, [3.0, 4.0]).y == 4.0


class _Listed:
    def __init__(self, a):
        self.a = a


tf.register_pytree_node(_Listed, lambda u: ((u.a,), [1]), lambda aux, parts: _Listed(*parts))


def test_aux_data_that_does_not_hash_is_named():
    # A raw "unhashable type: 'list'" from the kernel cache before (helper 81).
    with pytest.raises(TypeError, match=r"registered for _Listed returned aux data \[1\]"):
        tf.grad(lambda u: tf.reduce_sum(u.a ** 2))(_Listed(np.ones(2)))


@pytest.mark.parametrize("sources", [
    lambda x, y: Params(x, y), lambda x, y: Pair(x, y), lambda x, y: Point(x, y, "p"),
    lambda x, y: {"x": x, "skip": None, "y": y},
])
def test_the_tapes_sources_and_gradients_alike(sources):
    x, y = tf.Variable([1.0, 2.0]), tf.Variable(3.0)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(x * x) * y
    grads = tape.gradient(loss, sources(x, y))
    assert type(grads) is type(sources(x, y))
    (gx, gy), _ = tree_flatten(grads)
    np.testing.assert_array_equal(gx.numpy(), [6.0, 12.0])
    assert float(gy) == 5.0


def test_an_optimizer_over_a_namedtuple_of_variables():
    params = Params(tf.Variable([1.0, 2.0]), tf.Variable(0.5))
    opt = tf.optimizers.SGD(0.1)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(params.w * params.w) + params.b
    grads = tape.gradient(loss, params)
    assert type(grads) is Params
    opt.apply_gradients(zip(grads, params))
    np.testing.assert_allclose(params.w.numpy(), [0.8, 1.6])
    np.testing.assert_allclose(params.b.numpy(), 0.4)
    # The functional form returns the new values in the same type.
    new = tf.optimizers.SGD(0.5).apply(Params(np.ones(2), 1.0), Params(np.zeros(2), 0.0))
    assert type(new) is Params
    np.testing.assert_allclose(np.asarray(new.w), [-0.5, -0.5])


def test_a_compiled_training_step_over_a_namedtuple():
    @tf.differentiable
    def step(params, x):
        with tf.GradientTape() as tape:
            tape.watch(params)
            loss = tf.reduce_sum((params.w * x + params.b) ** 2)
        grads = tape.gradient(loss, params)
        return Params(params.w - 0.1 * grads.w, params.b - 0.1 * grads.b), loss

    params = Params(np.ones(2), 0.0)
    for _ in range(3):
        params, loss = step(params, np.array([1.0, -1.0]))
        assert type(params) is Params
    assert float(loss) < 2.0


def test_dict_keys_one_to_a_dict_but_not_to_the_function():
    """0.0 and -0.0, 1 and 1.0 are one key to a dict (and to a tuple's ==), but a
    function that reads its keys sees them apart, so they do not share a kernel."""
    def quotient(d):
        (k, v), = d.items()
        return tf.reduce_sum(v / k)

    f, x = tf.differentiable(quotient), np.ones(3)
    for _ in range(2):  # the second round takes each warm entry
        assert f({0.0: x}) == np.inf and f({-0.0: x}) == -np.inf
    assert f.cache_info().kernels == 2
    g = f.grad({1.0: x})
    assert list(g) == [1.0] and type(next(iter(g))) is float
    g = f.grad({1: x})
    assert list(g) == [1] and type(next(iter(g))) is int
    np.testing.assert_array_equal(g[1], np.ones(3))


def test_dict_keys_that_do_not_compare_raise_saying_so():
    """sorted()'s bare "'<' not supported between 'str' and 'int'" came out (helper 74);
    TensorFlow and JAX refuse such keys too."""
    f = tf.differentiable(lambda p: tf.reduce_sum(p[1]) + tf.reduce_sum(p["a"]))
    for run in (f, f.grad):
        with pytest.raises(TypeError, match=r"keys of types int, str\) has no order"):
            run({1: np.ones(2), "a": np.ones(2)})


@dataclasses.dataclass(frozen=True, order=True)
class Key:
    """A dict key of the user's own, whose repr is no Python expression."""

    name: str

    def __repr__(self):
        return f"<key {self.name}>"


def test_dict_keys_that_are_no_literal_are_named_in_generated_code():
    """A key whose repr is no expression (an object of the user's, inf) is read and
    returned through a named constant: the generated entry was a SyntaxError."""
    x = np.array([1.0, 2.0])
    for keys in ((Key("a"), Key("b")), (float("-inf"), float("inf"))):
        f = tf.differentiable(lambda d, a=keys[0], b=keys[1]: tf.reduce_sum(d[a] * d[b]))
        for _ in range(2):  # the second call takes the warm entry
            g = f.grad({keys[0]: x, keys[1]: 3 * x})
            assert list(g) == list(keys)
            np.testing.assert_array_equal(g[keys[0]], 3 * x)
            np.testing.assert_array_equal(g[keys[1]], x)
        assert f.cache_info().hits == 1


class Plain:
    """A key equal by value, with object's repr (its address): a new one each call."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, Plain) and other.value == self.value

    def __hash__(self):
        return hash(self.value)


def test_dict_keys_equal_by_value_share_a_kernel_and_a_nan_key_raises():
    f = tf.differentiable(lambda d: tf.reduce_sum(next(iter(d.values())) ** 2))
    for _ in range(3):
        g = f.grad({Plain(1): np.ones(2)})
        assert [k.value for k in g] == [1]
    assert f.cache_info().kernels == 1
    with pytest.raises(TypeError, match="not equal to itself"):
        f({float("nan"): np.ones(2)})
