"""srcxform's use of Numba beyond its public API (jit.py: the on-disk kernel cache)."""
