"""What a generated module's Python functions use (the call path and the warm entries,
codegen/callpath.py and entry.py), imported at the module's top so that the module reads
no name it does not define. Plain Python: the kernel itself is what Numba compiles."""

import sys

import numpy as np

from srcxform.core.errors import InvalidArgumentError
from srcxform.core.recording import CONTEXT, OPEN_ANYWHERE
from srcxform.core.signature import kernel_value as leaf  # a traced leaf as the kernel takes it
from srcxform.core.tensor import Tensor, Updating

# The entries' helpers, by the short names they are written with.
empty, asarray, getrefcount = np.empty, np.asarray, sys.getrefcount
tensor = Tensor._new  # a result the plain call returns as a Tensor
updating = Updating  # holds the locks of the Variables a call assigns

# The default of an entry's parameters: the caller gave fewer arguments (codegen/entry.py).
NO = object()

__all__ = ["CONTEXT", "NO", "OPEN_ANYWHERE", "InvalidArgumentError", "asarray", "assign",
           "empty", "getrefcount", "leaf", "tensor", "updating"]


def assign(variable, value):
    """A Variable's new value, from the kernel's output (a scalar for rank 0): a copy, as
    an eager assign makes, since the output may be an argument or a view of one."""
    variable._array = np.array(value, variable.dtype).reshape(variable.shape)
