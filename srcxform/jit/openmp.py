"""How idle OpenMP workers wait, for processes that run parallel kernels.

A `parallel=True` kernel runs its `prange` loops on Numba's thread pool, which on Linux
is GNU OpenMP's (libgomp), and its matrix products on SciPy's OpenBLAS, which has a pool
of its own. By default libgomp's idle workers spin for a while before they sleep, so
after each `prange` they hold the cores OpenBLAS's threads need next: a small MLP's
parallel gradient step took 7 times its serial time on 2 cores (benchmarks/README.md).
With the OpenMP standard's `OMP_WAIT_POLICY=PASSIVE` they sleep at once, and the parallel
step beat the serial one. What that costs is a worker's wake-up at each `prange`, which
codegen's PARALLEL_MIN accounts for.

libgomp reads the setting once, when it is loaded, which Numba does when it first starts
its pool. So srcxform sets it, in this process's environment, when a parallel function is
made, unless the pool already runs or the user chose a wait policy themselves.
"""

import os
import sys

# The settings by which a user chooses how OpenMP workers wait (the standard's, GNU's and
# LLVM's/Intel's): srcxform leaves any one of them as it is.
_USER_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")


def passive_idle_workers():
    """Sets OMP_WAIT_POLICY=PASSIVE for the OpenMP runtime Numba will start, where it has
    not started yet and no wait setting is in the environment. Returns whether it did."""
    if any(name in os.environ for name in _USER_SETTINGS) or _pool_started():
        return False
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return True


def _pool_started():
    numba = sys.modules.get("numba")  # not imported for it: tier 0 runs without Numba
    if numba is None:
        return False
    try:
        numba.threading_layer()  # raises until Numba has started its threads
    except ValueError:
        return False
    return True
