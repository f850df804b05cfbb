"""TensorShape: a value's shape as TensorFlow's `x.shape` shows it, and still a tuple.

Every part of srcxform reads shapes as tuples, so TensorShape is one: indexing, `len`,
`+` and hashing are the tuple's, and it prints as the tuple (messages and generated code
show shapes so). It adds TensorFlow's accessors, and equality with a list.
"""


class TensorShape(tuple):
    __slots__ = ()

    @property
    def rank(self):
        return len(self)

    ndims = rank

    def as_list(self):
        return list(self)

    def num_elements(self):
        total = 1
        for d in self:
            total = total * d
        return total

    def is_fully_defined(self):
        return True  # every size is known: eagerly, and in a trace (for this call)

    def __eq__(self, other):
        # TensorFlow compares a shape with any sequence of sizes: x.shape == [2, 3].
        return tuple.__eq__(self, tuple(other) if isinstance(other, list) else other)

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = tuple.__hash__
