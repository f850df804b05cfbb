"""First calls in a new process, run by benchmarks/run.py one process at a time; prints
one JSON object on its last line.

  python -m benchmarks.firstcall cold W3-1e3   Numba warmed by a trivial function first,
                                              then the workload's first srcxform call
                                              (trace + codegen + compile: SRCXFORM_CACHE_DIR
                                              must not hold it yet)
  python -m benchmarks.firstcall warm W1,W2    no warming: the first srcxform call, then each
                                              further one (SRCXFORM_CACHE_DIR holds them all)
  python -m benchmarks.firstcall floor         the first call of a trivial @njit(cache=True)
                                              function, its decoration included
                                              (NUMBA_CACHE_DIR already holds it)

Imports are timed apart from the calls.
"""

import json
import sys
import time


def main(argv):
    mode, keys = argv[0], (argv[1].split(",") if len(argv) > 1 else [])
    t0 = time.perf_counter_ns()
    if mode == "floor":
        import numba

        imported = time.perf_counter_ns()
        # Decorating is timed with the call: Numba starts its compiler target for the first
        # function it decorates, and srcxform's first call is where srcxform decorates.
        from benchmarks import _trivial

        _trivial.trivial(2.0)
        first = {"njit": (time.perf_counter_ns() - imported) / 1e6}
        print(json.dumps({"mode": mode, "import_ms": (imported - t0) / 1e6, "first_ms": first}))
        return
    import numba

    from benchmarks import workloads  # imports NumPy and srcxform

    imported = time.perf_counter_ns()
    warmed_ms = None
    if mode == "cold":
        @numba.njit
        def warm(x):
            return x + 1.0

        warm(1.0)
        warmed_ms = (time.perf_counter_ns() - imported) / 1e6
    wls = {wl.key: wl for wl in workloads.make_workloads(only=keys)}
    first = {}
    for key in keys:
        wl = wls[key]
        start = time.perf_counter_ns()
        workloads.FIRST_CALLS[wl.family](wl.data)
        first[key] = (time.perf_counter_ns() - start) / 1e6
    print(json.dumps({"mode": mode, "import_ms": (imported - t0) / 1e6,
                      "numba_warm_ms": warmed_ms, "first_ms": first}))


if __name__ == "__main__":
    main(sys.argv[1:])
