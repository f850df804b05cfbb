"""Nested structures: flatten tuples, lists and dicts to leaves and back.

Dict keys are visited in sorted order (as tf.nest and JAX do), so a structure's leaves
are deterministic; a dict is rebuilt in its own key order (as tf.nest does). TreeDefs are
hashable: they key the kernel cache.
"""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TreeDef:
    """The shape of a nested structure: a leaf (kind None), or a container of children."""

    kind: type | None
    keys: tuple = ()  # a dict's keys, sorted: its children's order
    children: tuple = ()
    order: tuple = ()  # a dict's keys in its own order, to rebuild it so

    @property
    def num_leaves(self):
        return 1 if self.kind is None else sum(c.num_leaves for c in self.children)


LEAF = TreeDef(None)


def tree_flatten(tree):
    """Returns (leaves, treedef)."""
    leaves = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree, leaves):
    if isinstance(tree, dict):
        keys = tuple(sorted(tree))
        return TreeDef(dict, keys, tuple(_flatten(tree[k], leaves) for k in keys), tuple(tree))
    if isinstance(tree, (list, tuple)) and not hasattr(tree, "_fields"):
        return TreeDef(type(tree), (), tuple(_flatten(t, leaves) for t in tree))
    leaves.append(tree)
    return LEAF


def leaf_paths(treedef):
    """The path to each leaf of a structure, in tree_flatten's order: the tuple of the
    keys and indices that reach it."""
    if treedef.kind is None:
        return [()]
    keys = treedef.keys if treedef.kind is dict else range(len(treedef.children))
    return [(k, *path) for k, child in zip(keys, treedef.children) for path in leaf_paths(child)]


def tree_unflatten(treedef, leaves):
    """Builds the structure `treedef` describes from a flat sequence of leaves."""
    return _unflatten(treedef, iter(leaves))


def _unflatten(treedef, it):
    if treedef.kind is None:
        return next(it)
    children = [_unflatten(c, it) for c in treedef.children]
    if treedef.kind is dict:
        by_key = dict(zip(treedef.keys, children))
        return {k: by_key[k] for k in treedef.order}
    return treedef.kind(children)
