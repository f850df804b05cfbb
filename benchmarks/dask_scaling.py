"""Data-parallel gradients on Dask: time per epoch at 1 and 2 worker processes, and the
costs a model of a larger cluster needs (issue #31).

    python -m benchmarks.dask_scaling                     rows 1,000,000, 8 blocks
    python -m benchmarks.dask_scaling --rows 200000 --epochs 3

An epoch is one full-batch step of examples/dask_logistic_regression.py: the data is
persisted in the workers' memory first (so that the time is the gradient's, not the
generation of rows), then each system's first two epochs (each worker compiles) are set
aside and the median of the others reported. Both systems run the same algorithm: srcxform.dask's
compiled kernel per block, and the same gradient written in dask.array. When dask-ml is
installed, its LogisticRegression (unpenalized: the same loss) is fitted on the same data by
each solver, `--dask-ml-iter` steps at most, after a fit of one step (imports on the
workers): its time per solver step, the fit's time over its steps, a step being what
the example's STEPS says (an lbfgs step is one pass, as an epoch). Also measured: the
cost of one more task (an epoch of many tiny blocks) and the bandwidth between two
workers, the parameters of the model in benchmarks/README.md. Not a timed test: run it on
an idle machine.

Each worker is one process of one thread, and every thread pool in it is pinned to one
thread (OpenMP, OpenBLAS, MKL, Numba: PINNED below); the run checks that in each worker
and prints the counts, with the machine's load average before and after each size.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import dask_logistic_regression as example  # examples/ is not a package: on the path above


# One thread per worker for every library that could start more (read at their import).
PINNED = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
          "NUMBA_NUM_THREADS": "1"}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--workers", default="1,2", help="cluster sizes to time")
    parser.add_argument("--dask-ml-iter", type=int, default=10,
                        help="max_iter of each dask-ml fit timed")
    parser.add_argument("--no-dask-ml", action="store_true", help="leave dask-ml's rows out")
    return parser.parse_args(argv)


def seconds_per_epoch(value_and_grad, features, epochs, client, warm_up=2):
    """The median time of a gradient-descent epoch, after `warm_up` epochs (each worker
    compiles at its first block), and the CPU seconds an epoch took in all the workers
    together: the work (and the workers' own event loops), which a loaded machine's
    waiting does not inflate as it does the wall time."""
    def descend(count):
        settings = argparse.Namespace(features=features, epochs=count, learning_rate=2.0)
        return example.descend(value_and_grad, np.zeros(features), 0.0, settings,
                               lambda epochs: epochs)[1]

    descend(warm_up)
    cpu = workers_cpu(client)
    seconds = descend(epochs)
    return statistics.median(seconds), (workers_cpu(client) - cpu) / epochs


def seconds_per_solver_step(X, y, solver, max_iter, client):
    """dask-ml's fit by `solver`: the seconds per step (the fit's wall time over its steps),
    its workers' CPU seconds per step, and its steps; after a warm-up fit of one step."""
    example.fit_dask_ml(X, y, solver, max_iter=1)
    cpu = workers_cpu(client)
    _, steps, seconds = example.fit_dask_ml(X, y, solver, max_iter)
    return seconds / steps, (workers_cpu(client) - cpu) / steps, steps


def workers_cpu(client):
    """The CPU seconds all the workers have used so far."""
    return sum(client.run(time.process_time).values())


def task_overhead(step, features, blocks=200):
    """Seconds one more block task adds to an epoch: an epoch of `blocks` one-row blocks,
    less an epoch of one block, per block."""
    import dask

    times = []
    for count in (1, blocks):
        X, y = dask.persist(*example.lazy_data(count, features, 1, seed=1))
        step(np.zeros(features), 0.0, X, y)  # warm
        start = time.perf_counter()
        step(np.zeros(features), 0.0, X, y)
        times.append(time.perf_counter() - start)
    return (times[1] - times[0]) / (blocks - 1)


def bandwidth(client, megabytes=64):
    """Bytes a second from one worker to another (a scattered array fetched by a task)."""
    first, second = list(client.scheduler_info()["workers"])[:2]
    future = client.scatter(np.ones(megabytes * 2**20 // 8), workers=[first])
    client.submit(len, [0], workers=[second]).result()  # the task path, warm
    start = time.perf_counter()
    client.submit(len, future, workers=[second], pure=False).result()
    return megabytes * 2**20 / (time.perf_counter() - start)


def thread_counts():
    """On a worker: the threads each of its pools may use (threadpoolctl's view of
    OpenBLAS, MKL and OpenMP, and Numba's), and the pinning variables it was started with."""
    import numba
    from threadpoolctl import threadpool_info

    counts = {pool["internal_api"]: pool["num_threads"] for pool in threadpool_info()}
    counts["numba"] = numba.get_num_threads()
    return counts, {name: os.environ.get(name) for name in PINNED}


def check_pinned(client):
    """The workers' thread counts, printed; an error if any pool may use more than one."""
    for worker, (counts, environ) in client.run(thread_counts).items():
        print(f"{worker}: threads {counts}, {environ}")
        if any(n != 1 for n in counts.values()) or environ != PINNED:
            raise RuntimeError(f"{worker} is not pinned to one thread: {counts}, {environ}")


def measure(workers, args, solvers):
    """One cluster size's row of the table."""
    import dask
    from distributed import Client, LocalCluster

    import srcxform.dask

    load_before = os.getloadavg()[0]
    # No profiler: its thread samples every worker's stack each 10 ms, CPU time that is
    # not the work's (the workers take this process's config). PINNED is set before each
    # worker is spawned, not after (env=): a spawned worker imports this module again, and
    # with it dask.array, which imports Numba where pydata/sparse is installed (dask-ml
    # brings it), before variables set after the spawn could reach Numba.
    spawn_environ = {**dask.config.get("distributed.nanny.pre-spawn-environ"), **PINNED}
    with dask.config.set({"distributed.worker.profile.enabled": False,
                          "distributed.nanny.pre-spawn-environ": spawn_environ}), \
            LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                         dashboard_address=None) as cluster, \
            Client(cluster) as client:
        check_pinned(client)
        X, y = dask.persist(*example.lazy_data(args.rows, args.features,
                                               -(-args.rows // args.blocks), seed=0))
        step = srcxform.dask.value_and_grad(example.loss, reduce="mean", wrt=(0, 1))
        row = {"workers": workers,
               "srcxform": seconds_per_epoch(lambda w, b: step(w, b, X, y), args.features,
                                             args.epochs, client),
               "dask.array": seconds_per_epoch(
                   lambda w, b: example.numpy_value_and_grad(w, b, X, y), args.features,
                   args.epochs, client),
               "task": task_overhead(step, args.features)}
        for solver in solvers:
            row[solver] = seconds_per_solver_step(X, y, solver, args.dask_ml_iter, client)
        if solvers:  # again: the fits loaded libraries (SciPy's) whose pools must be pinned
            check_pinned(client)
        if workers > 1:
            row["bandwidth"] = bandwidth(client)
        row["load"] = (load_before, os.getloadavg()[0])
        return row


def main(argv=None):
    args = parse_args(argv)
    # The workers (which inherit it) compile at a kernel's first call, in the warm-up
    # epochs, rather than running the epochs after them on the eager tape meanwhile.
    os.environ.setdefault("SRCXFORM_TIERED", "0")
    print(f"{os.cpu_count()} cores; {PINNED}")
    solvers = example.dask_ml_solvers(not args.no_dask_ml)
    rows = [measure(int(w), args, solvers) for w in args.workers.split(",")]
    print(f"{args.rows} rows x {args.features} features (float64), {args.blocks} blocks, "
          "persisted; per epoch (one full-batch step): median wall time, and CPU time of "
          "all workers together\n")
    print("| workers | srcxform.dask | its workers' CPU | dask.array (NumPy) | its workers' "
          "CPU | one more task | worker-to-worker | load average (1 min) before, after |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        rate = f"{row['bandwidth'] / 2**20:.0f} MiB/s" if "bandwidth" in row else "-"
        times = " | ".join(f"{1000 * row[name][0]:.0f} ms | {1000 * row[name][1]:.0f} ms"
                           for name in ("srcxform", "dask.array"))
        print(f"| {row['workers']} | {times} | {1000 * row['task']:.1f} ms | {rate} | "
              f"{row['load'][0]:.1f}, {row['load'][1]:.1f} |")
    print_dask_ml_table(rows, solvers, args.dask_ml_iter)
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        ratio = last["workers"] / first["workers"]
        for name in ("srcxform", "dask.array", *solvers):
            efficiency = first[name][0] / last[name][0] / ratio
            work = last[name][1] / first[name][1]
            label, unit = (f"dask-ml {name}", "step") if name in solvers else (name, "epoch")
            print(f"\n{label}: scaling efficiency {first['workers']} -> {last['workers']} "
                  f"workers: {100 * efficiency:.0f}% (wall); the workers' CPU per {unit} "
                  f"x{work:.2f}")


def print_dask_ml_table(rows, solvers, max_iter):
    """dask-ml's rows: per solver step, wall time and the workers' CPU, by cluster size."""
    if not solvers:
        return
    print(f"\ndask-ml LogisticRegression (C=inf: the same loss), max_iter={max_iter}; per "
          "solver step (the fit's wall time over its steps) and the workers' CPU per step\n")
    print("| workers | solver | steps | per step | its workers' CPU | a step |")
    print("| ---: | --- | ---: | ---: | ---: | --- |")
    for row in rows:
        for solver in solvers:
            wall, cpu, steps = row[solver]
            print(f"| {row['workers']} | {solver} | {steps} | {1000 * wall:.0f} ms | "
                  f"{1000 * cpu:.0f} ms | {example.STEPS[solver]} |")


if __name__ == "__main__":
    main()
