"""GradBench's evaluations, srcxform beside GradBench's JAX and PyTorch tools, in one
process pinned to one core, every system asked for one thread:

    taskset -c 1 python -m benchmarks.gradbench.run [--only lse,ode] [--full]

Prints a markdown table. srcxform's first call blocks on its compile (`wait=True`, a fresh
SRCXFORM_CACHE_DIR, Numba started beforehand by a trivial program); JAX's first call is
jit's trace and compile and the call. Warm: the best of 5 means of repeated calls.
--full runs every size GradBench's eval sends (by default: its smallest and largest).
ht reads ADBench's hand files from a GradBench checkout named by GRADBENCH_DIR (without
one: seeded hands of the same sizes).
"""

import argparse
import importlib
import os
import sys
import tempfile

from benchmarks import threads

threads.limit_pools(1)  # before NumPy, JAX or torch start a pool
os.environ["SRCXFORM_TIERED"] = "0"
os.environ["SRCXFORM_CACHE_DIR"] = tempfile.mkdtemp(prefix="gradbench-")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")

EVALUATIONS = ("lse", "ode", "llsq", "det", "kmeans", "lstm", "ba", "ht")
COLUMNS = ("evaluation", "function", "size", "srcxform first", "srcxform warm",
           "JAX first", "JAX warm", "PyTorch warm", "checked against")


def seconds(s) -> str:
    if s is None:
        return "—"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def start_numba():
    """Compiles a trivial program so the first case's first call is its own compile only."""
    import numpy as np

    import srcxform as tf
    tf.differentiable(lambda x: tf.reduce_sum(x * x), wait=True).grad(np.ones(3))


def limit_peer_threads():
    try:
        import torch
        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
    except ImportError:
        pass
    try:  # imported here, not in its first call's time
        from benchmarks.gradbench.common import jax_module
        jax_module()
    except ImportError:
        pass


def measure(case, common) -> list:
    first, thunk = common.first_call_s(case.srcxform)
    ours = thunk()
    row = {"srcxform first": first, "srcxform warm": common.warm_s(thunk)}
    results = {}
    for name, build in case.peers.items():
        peer_first, peer_thunk = common.first_call_s(build)
        results[name] = peer_thunk()
        row[f"{name} first"] = peer_first
        row[f"{name} warm"] = common.warm_s(peer_thunk)
    ref_name, ref_build = case.reference or next(iter(case.peers.items()))
    want = results[ref_name] if ref_name in results else ref_build()()
    error = common.mismatch(ours, want)
    verdict = "ok" if error <= case.tolerance else "MISMATCH"
    cells = [case.evaluation, case.function, case.size]
    cells += [seconds(row.get(c)) for c in COLUMNS[3:-1]]
    cells.append(f"{ref_name} ({verdict}, {error:.1e})")
    return cells


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default=",".join(EVALUATIONS))
    parser.add_argument("--full", action="store_true")
    args = parser.parse_args(argv)
    if 1 in os.sched_getaffinity(0):
        threads.pin({1})
    limit_peer_threads()
    from benchmarks.gradbench import common
    start_numba()
    print(f"pinned to cores {threads.affinity()}; one thread asked of each system\n")
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + " --- |" * len(COLUMNS))
    for name in args.only.split(","):
        module = importlib.import_module(f"benchmarks.gradbench.{name}")
        chosen = module.cases(module.SIZES) if args.full else module.cases()
        for case in chosen:
            print("| " + " | ".join(measure(case, common)) + " |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
