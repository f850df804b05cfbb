"""First calls in a new process, run by benchmarks/run.py one process at a time; prints
one JSON object on its last line.

  python -m benchmarks.firstcall cold W3-1e3   Numba warmed by a trivial function first,
                                              then the workload's first srcxform call
                                              (trace + codegen + compile: SRCXFORM_CACHE_DIR
                                              must not hold it yet)
  python -m benchmarks.firstcall warm W1,W2    no warming: the first srcxform call, then each
                                              further one (SRCXFORM_CACHE_DIR holds them all);
                                              cold and warm also time the calls after each
                                              first one (then_ms, a median of 3)
  python -m benchmarks.firstcall floor         the first call of a trivial @njit(cache=True)
                                              function, its decoration included
                                              (NUMBA_CACHE_DIR already holds it)
  python -m benchmarks.firstcall blocking W5   SRCXFORM_TIERED=0, Numba not imported before:
                                              the first call compiles, Numba's start-up
                                              included (a fresh SRCXFORM_CACHE_DIR)
  python -m benchmarks.firstcall tiered W5     SRCXFORM_TIERED=1, likewise: the first call
                                              (tier 0, eager), then calls in a loop until
                                              one runs natively: the time to native, from
                                              the first call's start to that call's end

blocking and tiered also time warm calls once native (warm_us, a median), and give the
first call's CPU time in the calling thread (first_cpu_ms: on a loaded machine the wall
time is mostly other processes'). Each mode sets SRCXFORM_TIERED itself: 1 for tiered,
else 0. Imports are timed apart from the calls.
"""

import json
import os
import statistics
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
    os.environ["SRCXFORM_TIERED"] = "1" if mode == "tiered" else "0"
    if mode in ("tiered", "blocking"):
        print(json.dumps(_until_native(mode, keys, t0)))
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
    first, then = {}, {}
    for key in keys:
        call, data = workloads.FIRST_CALLS[wls[key].family], wls[key].data
        first[key] = _timed_ms(call, data)
        then[key] = statistics.median(_timed_ms(call, data) for _ in range(3))
    print(json.dumps({"mode": mode, "import_ms": (imported - t0) / 1e6,
                      "numba_warm_ms": warmed_ms, "first_ms": first, "then_ms": then}))


def _timed_ms(call, data):
    start = time.perf_counter_ns()
    call(data)
    return (time.perf_counter_ns() - start) / 1e6


def _until_native(mode, keys, t0):
    """The first call of each workload, the time until a call runs natively, and warm
    calls, in a process that has not imported Numba before the first call."""
    from benchmarks import workloads

    imported = time.perf_counter_ns()
    wls = {wl.key: wl for wl in workloads.make_workloads(only=keys)}
    out = {"mode": mode, "import_ms": (imported - t0) / 1e6, "first_ms": {},
           "first_cpu_ms": {}, "native_ms": {}, "tier0_calls": {}, "warm_us": {}}
    for key in keys:
        wl = wls[key]
        call, compiled = workloads.FIRST_CALLS[wl.family], workloads.COMPILED[wl.family]
        start, cpu = time.perf_counter_ns(), time.thread_time_ns()
        call(wl.data)
        out["first_ms"][key] = (time.perf_counter_ns() - start) / 1e6
        out["first_cpu_ms"][key] = (time.thread_time_ns() - cpu) / 1e6
        calls = 1
        while compiled._compiling:  # this call ran on tier 0: the next may switch
            call(wl.data)
            calls += 1
        out["native_ms"][key] = (time.perf_counter_ns() - start) / 1e6
        out["tier0_calls"][key] = calls - 1
        out["warm_us"][key] = statistics.median(_timed_ms(call, wl.data) * 1e3
                                                for _ in range(30))
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
