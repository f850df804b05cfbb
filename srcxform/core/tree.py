"""Nested structures: flatten them to leaves and back.

The containers are tuples and lists (and their subclasses), dicts, NamedTuples,
dataclasses, None (a container of no leaves, as in JAX) and the types registered with
`register_pytree_node`; anything else is a leaf. Dict keys are visited in sorted order (as
tf.nest and JAX do), so a structure's leaves are deterministic; a dict is rebuilt in its
own key order (as tf.nest does). TreeDefs are hashable: they key the kernel cache.
"""

import collections
import dataclasses
import functools
from collections.abc import Callable, Iterable
from typing import NamedTuple

import numpy as np

# How each kind of container is taken apart and made again, by its node's `how`.
SEQUENCE, DICT, NONE, NAMEDTUPLE, DATACLASS, REGISTERED = (
    "sequence", "dict", "none", "namedtuple", "dataclass", "registered")


class TreeDef(NamedTuple):
    """The shape of a nested structure: a leaf (kind None), or a container of children.

    `keys` names the children: a dict's keys (sorted: its children's order), a
    NamedTuple's or dataclass's fields; for a registered type, it is the aux data its
    flatten function returned. `how` says which kind of container it is. (A tuple: one is
    made per container at each flatten, and a tuple is made in C, where a frozen
    dataclass sets each field through object.__setattr__.)"""

    kind: type | None
    keys: tuple = ()
    children: tuple = ()
    # A dict's keys in its own order, to rebuild it so; a registered type's aux data
    # (SpelledKeys: compared by type and spelling, as the cache must).
    order: tuple = ()
    how: str = SEQUENCE

    @property
    def num_leaves(self):
        return 1 if self.kind is None else sum(c.num_leaves for c in self.children)


class SpelledKeys(tuple):
    """A dict's keys, equal to other keys only where each is of the same type and, for a
    float, spelled the same: 1, 1.0 and True, or 0.0 and -0.0, are one key to a dict but
    not to a function that reads them (`tf.constant(k)`, `1 / k`), so not to its cache
    either. It wins a comparison with a plain tuple (Python asks the subclass first), as
    the entry's test `tuple(d) != keys` does."""

    def __eq__(self, other):
        return isinstance(other, tuple) and len(self) == len(other) and all(
            map(_same_key, self, other))

    def __ne__(self, other):
        return not self == other

    __hash__ = tuple.__hash__


def _same_key(a, b):
    if a is b:
        return True
    if type(a) is not type(b) or a != b:
        return False
    if isinstance(a, tuple):
        return all(map(_same_key, a, b))
    if isinstance(a, (set, frozenset)):  # equal sets: each element spelled alike
        return sorted(map(repr, a)) == sorted(map(repr, b))
    return not isinstance(a, (float, complex, np.inexact)) or repr(a) == repr(b)


def unequal_key(treedef):
    """A dict key or a registered type's aux data in the structure that is not equal to
    itself (a NaN, or one inside a tuple or set), or None: such a structure cannot key a
    compiled function's cache, where a call finds its kernel (each call missed it)."""
    if treedef.how == DICT and isinstance(treedef.order, SpelledKeys):
        found = next((k for k in treedef.order if _unequal(k)), None)
        if found is not None:
            return found
    if treedef.how == REGISTERED and _unequal(treedef.keys):
        return treedef.keys
    return next((k for k in map(unequal_key, treedef.children) if k is not None), None)


def _unequal(value):
    if isinstance(value, (tuple, frozenset)):
        return any(map(_unequal, value))
    return value != value  # noqa: PLR0124 - NaN


def spelled_key(key) -> bool:
    """Whether generated code spells a dict key as its repr (a str, int, bool or None);
    any other key (a float's inf or NaN, an object of the user's) is a named constant."""
    return type(key) in (str, int, bool, type(None))


LEAF = TreeDef(None)
_NONE = TreeDef(type(None), how=NONE)
_node = functools.partial(tuple.__new__, TreeDef)  # TreeDef(*fields), without its __new__

# Types registered by register_pytree_node: (flatten, unflatten) each.
_REGISTERED = {}
# Each type met, by its kind of container (None: a leaf); filled as types are met.
_KINDS = {tuple: SEQUENCE, list: SEQUENCE, dict: DICT, type(None): NONE}


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable):
    """Makes instances of `nodetype` containers, as JAX's `register_pytree_node`:
    `flatten_func(x)` returns `(children, aux_data)`, an iterable of children and hashable
    data (part of a compiled function's cache key), and `unflatten_func(aux_data,
    children)` makes the instance again. Gradients of such a structure come back as one.

    Example:
        >>> srcxform.register_pytree_node(Point, lambda p: ((p.x, p.y), None),
        ...                               lambda aux, xy: Point(*xy))
    """
    _REGISTERED[nodetype] = (flatten_func, unflatten_func)
    _KINDS[nodetype] = REGISTERED


def _kind_of(kind):
    """How a type's instances are flattened (None: they are leaves)."""
    if issubclass(kind, tuple) and hasattr(kind, "_fields"):
        return NAMEDTUPLE
    if issubclass(kind, (tuple, list)):
        return SEQUENCE
    if issubclass(kind, dict):
        return DICT
    if dataclasses.is_dataclass(kind):
        return DATACLASS
    return None


def tree_flatten(tree):
    """Returns (leaves, treedef)."""
    leaves = []
    return leaves, _flatten(tree, leaves)


def _sorted_keys(mapping):
    """A dict's keys sorted (its leaves' order, as tf.nest's and JAX's); TypeError saying
    so where they do not compare (1 and 'a'), as TensorFlow and JAX raise."""
    try:
        return tuple(sorted(mapping))
    except TypeError:
        kinds = sorted({type(k).__name__ for k in mapping})
        raise TypeError(f"a dict whose keys do not compare with one another (keys of types "
                        f"{', '.join(kinds)}) has no order for its values: srcxform orders "
                        "a dict's values by sorted keys, as tf.nest and JAX do; use keys "
                        "of one type") from None


def _flatten(tree, leaves):
    kind = type(tree)
    how = _KINDS.get(kind, 0)
    if how == 0:
        how = _KINDS[kind] = _kind_of(kind)
    if how is None:
        leaves.append(tree)
        return LEAF
    if how == SEQUENCE:
        return _node((kind, (), tuple([_flatten(t, leaves) for t in tree]), (), how))
    if how == DICT:
        keys, order = _sorted_keys(tree), tuple(tree)
        if not all(type(k) is str for k in order):
            order = SpelledKeys(order)
        return _node((kind, keys, tuple([_flatten(tree[k], leaves) for k in keys]),
                      order, how))
    if how == NONE:
        return _NONE
    if how == NAMEDTUPLE:
        keys, children = kind._fields, tree
    elif how == DATACLASS:
        keys = tuple(f.name for f in dataclasses.fields(tree) if f.init)
        children = [getattr(tree, k) for k in keys]
    else:
        children, keys = _REGISTERED[kind][0](tree)
        try:
            hash(keys)  # it keys the kernel cache, as JAX's aux data keys its
        except TypeError:
            raise TypeError(f"the flatten function registered for {kind.__name__} returned "
                            f"aux data {keys!r} that does not hash; return a tuple (or "
                            f"another hashable value) instead") from None
    # A registered type's aux data is compared as a dict's keys are (1 is not True there:
    # a function reading it may tell them apart), through `order`.
    order = SpelledKeys((keys,)) if how == REGISTERED else ()
    return _node((kind, keys, tuple([_flatten(t, leaves) for t in children]), order, how))


def leaf_paths(treedef):
    """The path to each leaf of a structure, in tree_flatten's order: the tuple of the
    keys, field names and indices that reach it."""
    if treedef.kind is None:
        return [()]
    keys = treedef.keys if treedef.how in (DICT, NAMEDTUPLE, DATACLASS) \
        else range(len(treedef.children))
    return [(k, *path) for k, child in zip(keys, treedef.children) for path in leaf_paths(child)]


def tree_unflatten(treedef, leaves: Iterable, build: Callable | None = None):
    """Builds the structure `treedef` describes from a flat sequence of leaves. With
    `build`, each container is `build(node, children)` instead (generated code builds
    expressions so)."""
    if build is None:
        return _unflatten(treedef, iter(leaves))
    return _built(treedef, iter(leaves), build)


def _unflatten(treedef, it):
    if treedef.kind is None:
        return next(it)
    children = [_unflatten(c, it) for c in treedef.children]
    if treedef.how == SEQUENCE:  # the most common, without a call
        return treedef.kind(children)
    return make_node(treedef, children)


def _built(treedef, it, build):
    if treedef.kind is None:
        return next(it)
    return build(treedef, [_built(c, it, build) for c in treedef.children])


def make_node(node: TreeDef, children: list):
    """The container `node` describes, holding `children`."""
    how = node.how
    if how == SEQUENCE:
        return node.kind(children)
    if how == DICT:
        by_key = dict(zip(node.keys, children))
        built, kind = {k: by_key[k] for k in node.order}, dict_type(node.kind)
        return built if kind is dict else kind(built)
    if how == NONE:
        return None
    if how == NAMEDTUPLE:
        return node.kind(*children)
    if how == DATACLASS:
        return node.kind(**dict(zip(node.keys, children)))
    return _REGISTERED[node.kind][1](node.keys, children)


def dict_type(kind: type) -> type:
    """The type a dict of `kind` is rebuilt as: an OrderedDict's its own; any other a dict
    (a defaultdict's factory is not part of the structure, and a subclass's constructor
    may not take a dict)."""
    return kind if kind is collections.OrderedDict else dict


def unflatten_function(kind: type) -> Callable:
    """The unflatten function registered for `kind`."""
    return _REGISTERED[kind][1]


def flatten_function(kind: type) -> Callable:
    """The flatten function registered for `kind`."""
    return _REGISTERED[kind][0]
