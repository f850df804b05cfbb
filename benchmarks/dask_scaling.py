"""Data-parallel gradients on Dask: time per epoch at 1 and 2 worker processes, and the
costs a model of a larger cluster needs (issue #31).

    python -m benchmarks.dask_scaling                     rows 1,000,000, 8 blocks
    python -m benchmarks.dask_scaling --rows 200000 --epochs 3

An epoch is one full-batch step of examples/dask_logistic_regression.py: the data is
persisted in the workers' memory first (so that the time is the gradient's, not the
generation of rows), then each system's first two epochs (each worker compiles) are set
aside and the median of the others reported. Both systems run the same algorithm: srcxform.dask's
compiled kernel per block, and the same gradient written in dask.array. Also measured: the
cost of one more task (an epoch of many tiny blocks) and the bandwidth between two
workers, the parameters of the model in benchmarks/README.md. Not a timed test: run it on
an idle machine.
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


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--workers", default="1,2", help="cluster sizes to time")
    return parser.parse_args(argv)


def seconds_per_epoch(value_and_grad, features, epochs, warm_up=2):
    """The median time of a gradient-descent epoch, the first `warm_up` set aside: each
    worker compiles at its first block."""
    settings = argparse.Namespace(features=features, epochs=epochs + warm_up,
                                  learning_rate=2.0)
    _, seconds = example.descend(value_and_grad, np.zeros(features), 0.0, settings,
                                 lambda epochs: epochs)
    return statistics.median(seconds[warm_up:])


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


def measure(workers, args):
    """One cluster size's row of the table."""
    import dask
    from distributed import Client, LocalCluster

    import srcxform.dask

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        X, y = dask.persist(*example.lazy_data(args.rows, args.features,
                                               -(-args.rows // args.blocks), seed=0))
        step = srcxform.dask.value_and_grad(example.loss, reduce="mean", wrt=(0, 1))
        row = {"workers": workers,
               "srcxform": seconds_per_epoch(lambda w, b: step(w, b, X, y), args.features,
                                             args.epochs),
               "dask.array": seconds_per_epoch(
                   lambda w, b: example.numpy_value_and_grad(w, b, X, y), args.features,
                   args.epochs),
               "task": task_overhead(step, args.features)}
        if workers > 1:
            row["bandwidth"] = bandwidth(client)
        return row


def main(argv=None):
    args = parse_args(argv)
    # The workers (which inherit it) compile at a kernel's first call, in the warm-up
    # epochs, rather than running the epochs after them on the eager tape meanwhile.
    os.environ.setdefault("SRCXFORM_TIERED", "0")
    rows = [measure(int(w), args) for w in args.workers.split(",")]
    print(f"{args.rows} rows x {args.features} features (float64), {args.blocks} blocks, "
          "persisted; median seconds per epoch (one full-batch step)\n")
    print("| workers | srcxform.dask | dask.array (NumPy) | one more task | worker-to-worker |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        rate = f"{row['bandwidth'] / 2**20:.0f} MiB/s" if "bandwidth" in row else "-"
        print(f"| {row['workers']} | {1000 * row['srcxform']:.0f} ms | "
              f"{1000 * row['dask.array']:.0f} ms | {1000 * row['task']:.1f} ms | {rate} |")
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        ratio = last["workers"] / first["workers"]
        for name in ("srcxform", "dask.array"):
            efficiency = first[name] / last[name] / ratio
            print(f"\n{name}: scaling efficiency {first['workers']} -> {last['workers']} "
                  f"workers: {100 * efficiency:.0f}%")


if __name__ == "__main__":
    main()
