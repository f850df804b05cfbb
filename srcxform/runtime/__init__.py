"""The helpers generated code calls at run time (`from srcxform.runtime import blas`):
compiled with Numba, and imported only by generated code and the backend, never by
`import srcxform`. Importing this package itself imports none of them."""

# The runtime modules, by name: what an emit template may call, and what the backend
# imports for a process's first kernel and digests into each generated module's name.
MODULES = ("arrays", "blas", "lapack", "philox_jit", "specfun", "vecmath", "windows")
# Modules outside this package whose code a runtime module compiles into kernels (paths
# from the srcxform folder), digested with the runtime's: the Philox algorithm, which
# philox_jit compiles and eager evaluation runs as it is, and how helpers are compiled
# (their Numba options).
COMPILED_SOURCES = ("core/philox.py", "numba_adapter/jit.py")

# The terms of a sum a compiled loop stores before adding them (codegen/lanes.py): 4 KiB
# of float64, in L1 beside the loop's operands; arrays.chunk_terms holds them.
CHUNK = 512
