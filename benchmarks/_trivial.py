"""A trivial cached Numba function: the floor for a new process's first compiled call."""

import numba


@numba.njit(cache=True)
def trivial(x):
    return x * x + 1.0
