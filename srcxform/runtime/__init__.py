"""The helpers generated code calls at run time (`from srcxform.runtime import blas`):
compiled with Numba, and imported only by generated code and the backend, never by
`import srcxform`. Importing this package itself imports none of them."""

# The runtime modules, by name: what an emit template may call, and what the backend
# imports for a process's first kernel and digests into each generated module's name.
MODULES = ("arrays", "blas", "specfun", "vecmath", "windows")
