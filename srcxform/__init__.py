"""srcxform: a TensorFlow-style GradientTape that is also a compiler.

The public surface only: re-exports under TensorFlow's names.
"""

from srcxform.core.version import __version__  # noqa: F401

from srcxform import ops  # noqa: F401  (first: the primitives register on import)
from srcxform.core.dtypes import bool_ as bool  # noqa: F401
from srcxform.core.dtypes import (  # noqa: F401
    double, float16, float32, float64, half, int8, int16, int32, int64, uint8, uint16, uint32,
    uint64,
)
from srcxform.jit.crosscheck import CheckError  # noqa: F401
from srcxform.core.errors import (  # noqa: F401
    AutographWarning, CacheWarning, CompileError, GradientCutWarning, ShapeError,
    SlowCompileWarning, SrcxformError, TracingError,
)
from srcxform.ops import *
from srcxform.ops import (  # noqa: F401
    abs, cast, constant, convert_to_tensor, custom_gradient, range, round, stop_gradient,
)
from srcxform import bitwise, dtypes, errors, linalg, math, nn, random  # noqa: F401
from srcxform.control_flow import (  # noqa: F401
    cond, fori_loop, map_fn, scan, switch_case, while_loop,
)
from srcxform.ad.tape import GradientTape, UnconnectedGradients  # noqa: F401
from srcxform.ad.nan_checks import debug_nans  # noqa: F401
from srcxform.core.tensor import Tensor, Variable  # noqa: F401
from srcxform.core.tensor_shape import TensorShape  # noqa: F401
from srcxform.core.tree import register_pytree_node  # noqa: F401
from srcxform.api import differentiable, grad, value_and_grad  # noqa: F401
from srcxform.diagnose import explain  # noqa: F401
from srcxform.config import show_config  # noqa: F401
from srcxform.transforms import hessian, hvp, jacfwd, jacobian, jacrev, jvp, linearize  # noqa: F401
from srcxform.vmap import vectorized_map, vmap  # noqa: F401
from srcxform import autodiff  # noqa: F401
from srcxform.tf_function import TensorSpec, function  # noqa: F401
from srcxform import optimizers  # noqa: F401
from srcxform import keras  # noqa: F401
from srcxform import testing  # noqa: F401  (check_grads, without an import of its own)
from srcxform.optimizers import clip_by_global_norm, clip_by_norm  # noqa: F401

from types import ModuleType as _ModuleType

newaxis = None  # x[tf.newaxis] inserts an axis, as x[None]

# TensorFlow's namespaces among the package's submodules: dir() lists these and hides the
# others (the implementation: aval, backend, codegen, ...), which stay importable.
_NAMESPACES = frozenset(("autodiff", "bitwise", "dtypes", "errors", "keras", "linalg", "math",
                         "nn", "optimizers", "random", "testing"))

# The public names: what `import *`, dir() and the API reference (pdoc) show.
__all__ = [name for name, value in sorted(globals().items())
           if not name.startswith("_")
           and (not isinstance(value, _ModuleType) or name in _NAMESPACES)]


def __dir__():
    return sorted(__all__ + [name for name in globals() if name.startswith("__")])
