"""TensorShape: a value's shape as TensorFlow's `x.shape` shows it, and still a tuple.

Every part of srcxform reads shapes as tuples, so TensorShape is one: indexing, `len` and
hashing are the tuple's (a slice, and `+`, give a TensorShape, as TensorFlow's), and it
prints as the tuple (messages and generated code show shapes so). It adds TensorFlow's
accessors, and equality with a list.
"""

import operator


class TensorShape(tuple):
    """tf.TensorShape(dims): a size or None (unknown: a spec's, a user's) for each axis."""

    __slots__ = ()

    def __new__(cls, dims=()):
        if dims is None:
            raise TypeError("TensorShape(None), a shape of unknown rank, is not supported: "
                            "give each axis's size or None")
        return super().__new__(cls, (None if d is None else _size(d) for d in dims))

    @classmethod
    def of(cls, sizes):
        """A value's shape, its sizes ints already (x.shape: no conversion on the way)."""
        return tuple.__new__(cls, sizes)

    def __getitem__(self, index):  # x.shape[1:] a TensorShape too, as TensorFlow's
        got = tuple.__getitem__(self, index)
        return TensorShape.of(got) if isinstance(index, slice) else got

    def __add__(self, other):  # x.shape + [4], as TensorFlow's concatenate
        return TensorShape.of(tuple(self) + tuple(other))

    def __radd__(self, other):
        return TensorShape.of(tuple(other) + tuple(self))

    def concatenate(self, other):
        return self + other

    @property
    def rank(self):
        return len(self)

    ndims = rank

    def as_list(self):
        return list(self)

    def num_elements(self):
        """The number of elements, None where a size is unknown (TensorFlow's)."""
        if not self.is_fully_defined():
            return None
        total = 1
        for d in self:
            total = total * d
        return total

    def is_fully_defined(self):
        # A value's every size is known, eagerly and in a trace (for this call); a shape
        # the user made may hold None.
        return None not in self

    def __eq__(self, other):
        # TensorFlow compares a shape with any sequence of sizes: x.shape == [2, 3].
        return tuple.__eq__(self, tuple(other) if isinstance(other, list) else other)

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = tuple.__hash__


def _size(d):
    """A size: an int of 0 or more (TensorFlow raises for 2.5, -1 and '3' too)."""
    size = operator.index(d)  # a float or a string: TypeError
    if size < 0:
        raise ValueError(f"TensorShape: a size must be 0 or more (or None), got {d}")
    return size
