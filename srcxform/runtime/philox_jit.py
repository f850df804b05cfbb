"""srcxform.core.philox compiled with Numba: the draws generated code makes.

The same source as eager evaluation runs (see philox's docstring), so compiled draws equal
eager ones bit for bit. The functions it calls are registered with Numba
(register_jitable: they stay Python functions, and Numba compiles them where jitted code
calls them); the entry points are helpers, compiled when first used and cached on disk.
"""

from numba.extending import register_jitable

from srcxform.numba_adapter.jit import helper
from srcxform.core import philox

for _function in philox.INTERNALS:
    register_jitable(_function)

uniform = helper(philox.uniform)
integers = helper(philox.integers)
bits = helper(philox.bits)
normal = helper(philox.normal)
truncated_normal = helper(philox.truncated_normal)
