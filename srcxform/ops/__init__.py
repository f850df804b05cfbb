"""THE ONLY PLACE PRIMITIVES ARE DECLARED, one family a module.

The families are imported in a fixed order, which is the order of REGISTRY.
"""

import types as _types

from srcxform.ops.elementwise import (  # noqa: F401
    abs, add, add_n, bitwise_and, bitwise_or, bitwise_xor, cast, ceil, clip_by_value, cos, divide,
    divide_no_nan, equal, exp, expm1, floor, floordiv, greater, greater_equal, invert,
    is_finite, less, less_equal, log, log1p, logical_and, logical_not, logical_or, maximum,
    minimum, mod, multiply, negative, not_equal, pow, relu, round, sigmoid, sign, sin,
    softplus, sqrt, square, stop_gradient, subtract, tan, tanh, truediv, where,
)
from srcxform.ops.elementwise import identity  # noqa: F401
from srcxform.ops.elementwise import reciprocal  # noqa: F401
from srcxform.ops.shape import (  # noqa: F401
    boolean_mask, broadcast_to, concat, embed, expand_dims, gather, getitem, reshape,
    scatter_add, squeeze, stack, tile, transpose,
)
from srcxform.ops.reduce import (  # noqa: F401
    reduce_all, reduce_any, reduce_logsumexp, reduce_max, reduce_mean, reduce_min,
    reduce_prod, reduce_sum,
)
# tf.math's functions that TensorFlow also has top-level; srcxform.math and .nn import
# the others from their family modules.
from srcxform.ops.mathfuncs import (  # noqa: F401
    acos, acosh, asin, asinh, atan, atan2, atanh, cosh, sinh,
)
from srcxform.ops.cumulative import cumsum  # noqa: F401
from srcxform.ops.selection import (  # noqa: F401
    argmax, argmin, argsort, gather_nd, one_hot, scatter_nd, sort, tensor_scatter_nd_add,
    tensor_scatter_nd_max, tensor_scatter_nd_min, tensor_scatter_nd_sub, tensor_scatter_nd_update,
)
from srcxform.ops.linalg import dot, matmul, outer  # noqa: F401
from srcxform.ops.lapack import norm  # noqa: F401
from srcxform.ops.einsum import einsum, tensordot  # noqa: F401
from srcxform.ops.nn import (  # noqa: F401
    log_softmax, sigmoid_cross_entropy_with_logits, softmax, softmax_cross_entropy_with_logits,
)
# Only under srcxform.nn, as TensorFlow has them: imported here to register in order.
from srcxform.ops import conv, normalization  # noqa: F401
from srcxform.ops.layout import (  # noqa: F401
    ensure_shape, is_tensor, meshgrid, pad, rank, repeat, reverse, roll, sequence_mask, shape,
    size, slice, split, strided_slice, unstack,
)
from srcxform.ops.control import custom_gradient  # noqa: F401
from srcxform.ops import random as _random  # noqa: F401  (the philox primitive)
from srcxform.ops.creation import (  # noqa: F401
    constant, convert_to_tensor, eye, fill, linspace, ones, ones_like, range, zeros, zeros_like,
)
from srcxform.ops import numpy_dispatch  # noqa: F401
from srcxform.ops import numpy_composites  # noqa: F401  (adds to numpy_dispatch's tables)
from srcxform.ops import operators as _operators

_operators.install()

# `from srcxform.ops import *` exports the ops only: the family modules would otherwise
# shadow TensorFlow's namespaces (`srcxform.nn` is srcxform/nn.py, not ops/nn.py), and
# indexing's and the adjoints' own ops are srcxform's, not TensorFlow's names.
_INTERNAL = frozenset(("embed", "getitem"))
__all__ = [name for name, value in list(globals().items())
           if not name.startswith("_") and not isinstance(value, _types.ModuleType)
           and name not in _INTERNAL]
