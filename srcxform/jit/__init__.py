"""From a call to a compiled kernel: trace, optimize, generate, compile with Numba (in a
background process while first calls run on NumPy), cache, and check."""
