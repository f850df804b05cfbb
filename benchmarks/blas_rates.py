"""One core's DGEMM rate, in GFLOP/s, of each BLAS that Numba code in this process can
reach, at the MLP step's shapes (W9: 784→256→10, batch 512) and at 1024³.

    python -m benchmarks.blas_rates [--rounds 7]

The process is pinned to one core and every pool asked for one thread before NumPy is
imported (benchmarks/threads.py); the threads that ran are counted and printed. Each row
is timed in the same process, interleaved: in every round each library runs one block,
so a busy machine slows all of them alike; a rate is the median over rounds of the
block's best call. The libraries, each called from a Numba-compiled function on C arrays
(out = a @ b in row-major terms):

- srcxform: `srcxform.runtime.blas.matmul`, what generated code calls (Numba's helper
  library, which takes dgemm from scipy.linalg.cython_blas: SciPy's bundled OpenBLAS);
- numba np.dot: Numba's own product, the same BLAS;
- NumPy's OpenBLAS: the `cblas_dgemm` of the OpenBLAS NumPy's wheel bundles (64-bit
  integers), by address through ctypes;
- MKL (PyTorch): the Fortran `dgemm_` of the MKL linked into PyTorch's libtorch_cpu, by
  address, where PyTorch is installed (loading that library costs about half a second);
- MKL (the `mkl` wheel): the same from the wheel's libmkl_rt, where `pip install mkl` put
  it in this environment's lib/ (or at `--mkl PATH`), asked for one thread.

Reference rows, not from Numba: NumPy's `np.dot` and PyTorch's `torch.mm`.
"""

import argparse
import ctypes
import glob
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import threads  # imports no NumPy: pools are limited before they start

SHAPES = [(512, 784, 256), (784, 512, 256), (512, 256, 10), (256, 512, 10), (1024, 1024, 1024)]
_P, _I32, _I64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64
_ROW_MAJOR, _NO_TRANS = 101, 111


def _library(pattern):
    import numpy as np

    site = Path(np.__file__).resolve().parents[1]
    found = glob.glob(str(site / pattern))
    return ctypes.CDLL(found[0]) if found else None


def _numpy_cblas():
    """NumPy's bundled OpenBLAS's cblas_dgemm (ILP64: 64-bit sizes), or None."""
    lib = _library("numpy.libs/libscipy_openblas64_*.so")
    symbol = getattr(lib, "scipy_cblas_dgemm64_", None) if lib else None
    if symbol is None:
        return None
    signature = ctypes.CFUNCTYPE(None, _I32, _I32, _I32, _I64, _I64, _I64, ctypes.c_double,
                                 _P, _I64, _P, _I64, ctypes.c_double, _P, _I64)
    return signature(ctypes.cast(symbol, _P).value)


def _mkl_dgemm(lib):
    """The Fortran dgemm_ of an MKL library, or None."""
    if lib is None or not hasattr(lib, "mkl_get_max_threads"):
        return None
    return ctypes.CFUNCTYPE(None, *[_P] * 13)(ctypes.cast(lib.dgemm_, _P).value)


def _wheel_mkl(path=None):
    """The `mkl` wheel's libmkl_rt (at `path`, or in this environment's lib/), asked for
    one thread, or None."""
    found = [path] if path else glob.glob(os.path.join(sys.prefix, "lib", "libmkl_rt.so*"))
    if not found:
        return None
    lib = ctypes.CDLL(found[0])
    lib.MKL_Set_Num_Threads(1)
    return lib


def _products(mkl_path=None):
    """{name: f(a, b, out)} for every library found: a @ b, written into out (None
    returned) or returned."""
    import numba
    import numpy as np

    from srcxform.runtime import blas

    @numba.njit
    def srcxform_matmul(a, b, out):
        return blas.matmul(a, b)  # a new array, as generated code gets it

    @numba.njit
    def numba_dot(a, b, out):
        np.dot(a, b, out)

    products = {"srcxform (SciPy's OpenBLAS)": srcxform_matmul,
                "numba np.dot (SciPy's OpenBLAS)": numba_dot}
    cblas = _numpy_cblas()
    if cblas is not None:
        @numba.njit
        def numpy_openblas(a, b, out):
            m, k = a.shape
            n = b.shape[1]
            cblas(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, m, n, k, 1.0, a.ctypes.data, k,
                  b.ctypes.data, n, 0.0, out.ctypes.data, n)

        products["NumPy's OpenBLAS"] = numpy_openblas
    for name, lib in (("PyTorch's", _library("torch/lib/libtorch_cpu.so")),
                      ("the mkl wheel's", _wheel_mkl(mkl_path))):
        mkl = _mkl_dgemm(lib)
        if mkl is not None:
            products[f"MKL ({name}), from Numba"] = _fortran_product(mkl)
    products["np.dot from Python"] = lambda a, b, out: np.dot(a, b, out)
    try:
        import torch
    except ImportError:
        return products
    torch.set_num_threads(1)
    products["torch.mm (MKL)"] = lambda a, b, out: torch.mm(
        torch.from_numpy(a), torch.from_numpy(b), out=torch.from_numpy(out)).numpy()
    return products


def _fortran_product(dgemm):
    """out = a @ b from Numba by a Fortran dgemm_ (every argument by address)."""
    import numba
    import numpy as np

    @numba.njit
    def alive(*arrays):
        """Nothing: a use of arrays whose addresses a call took, so that they outlive it
        (Numba frees an array after its last use, and taking an address is not one: MKL's
        first call, loading its kernels, reused their memory: NaNs)."""

    @numba.njit
    def product(a, b, out):
        m, k = a.shape
        n = b.shape[1]
        # Column-major: out.T (n×m) = b.T (n×k) @ a.T (k×m), each C array read as its
        # transpose in place.
        sizes = np.array([n, m, k, n, k, n], np.int32)
        scalars = np.array([1.0, 0.0])
        no = np.array([ord("N")], np.uint8)
        dgemm(no.ctypes.data, no.ctypes.data, sizes[0:].ctypes.data, sizes[1:].ctypes.data,
              sizes[2:].ctypes.data, scalars.ctypes.data, b.ctypes.data,
              sizes[3:].ctypes.data, a.ctypes.data, sizes[4:].ctypes.data,
              scalars[1:].ctypes.data, out.ctypes.data, sizes[5:].ctypes.data)
        alive(sizes, scalars, no)

    return product


def _rates(products, shape, rounds, meters):
    import numpy as np

    m, k, n = shape
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(m, k)), rng.normal(size=(k, n))
    want, out = a @ b, np.empty((m, n))
    for name, product in products.items():  # compiles, and checks each against NumPy
        out[:] = np.nan
        got = product(a, b, out)
        if not np.allclose(out if got is None else got, want, rtol=1e-10, atol=1e-10):
            raise AssertionError(f"{name} gave a wrong product at {shape}")
    flops = 2.0 * m * n * k
    calls = max(3, int(0.02 / (flops / 5e10)))  # blocks of about 20 ms
    rates = {name: [] for name in products}
    for r in range(rounds):
        names = list(products)
        for name in names[r % len(names):] + names[:r % len(names)]:
            before, start, best = threads.snapshot(), time.perf_counter_ns(), float("inf")
            for _ in range(calls):
                t = time.perf_counter_ns()
                products[name](a, b, out)
                best = min(best, time.perf_counter_ns() - t)
            meters[name].add(before, threads.snapshot(), time.perf_counter_ns() - start)
            rates[name].append(flops / best)
    return {name: statistics.median(r) for name, r in rates.items()}


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--mkl", help="the path of an mkl wheel's libmkl_rt.so.N")
    options = parser.parse_args(argv)
    core = max(os.sched_getaffinity(0))
    threads.limit_pools(1)
    threads.pin({core})
    products = _products(options.mkl)
    meters = {name: threads.CpuMeter() for name in products}
    names = list(products)
    print(f"One core (core {core}), every pool asked for 1 thread; GFLOP/s, the median "
          f"of {options.rounds} interleaved rounds.\n")
    print("| m×k @ k×n | " + " | ".join(names) + " |")
    print("| --- |" + " ---: |" * len(names))
    for shape in SHAPES:
        rates = _rates(products, shape, options.rounds, meters)
        m, k, n = shape
        print(f"| {m}×{k} @ {k}×{n} | " + " | ".join(f"{rates[x]:.1f}" for x in names) + " |",
              flush=True)
    print("| threads that ran | " + " | ".join(str(meters[x].threads()) for x in names) + " |")


if __name__ == "__main__":
    main()
