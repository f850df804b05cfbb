"""Logistic regression on Dask: a data set made block by block, a cluster of processes.

The rows are generated lazily, each block of rows from its own seed, so the data set can
be larger than the machine's memory: no process ever holds more than a few blocks. Each
epoch is one full-batch gradient-descent step: `srcxform.dask.value_and_grad` runs the
compiled loss-and-gradient kernel on every block as one task, on a `LocalCluster` of
worker processes, and adds the blocks' parts up in a tree; the parameters are updated in
this process and sent once per step.

For comparison, the same run is repeated with the gradient written in `dask.array`
(NumPy in each task): the same algorithm as dask-ml's
`LogisticRegression(solver="gradient_descent")`. dask-ml itself is not used: it is not in
this project's package mirror.

    pip install -e '.[dask,examples]'
    python examples/dask_logistic_regression.py                      # 4 million rows
    python examples/dask_logistic_regression.py --rows 20000 --epochs 5

Prints the loss at each epoch and the time per epoch of both, and saves both loss curves
as a PNG.
"""

import argparse
import time

import dask
import dask.array as da
import numpy as np
from _training import add_out_option, prepare_out  # examples/_training.py

import srcxform as tf
import srcxform.dask


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--block-rows", type=int, default=250_000,
                        help="rows per block: one task each, per epoch")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--learning-rate", type=float, default=2.0)
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--persist", action="store_true",
                        help="keep the blocks in the workers' memory (when they fit)")
    add_out_option(parser, "dask_logistic_regression_loss.png", "both loss curves")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser.parse_args(argv)


# ----- the data: rows made per block, from a seed -----

def true_weights(features, seed):
    return np.random.default_rng(seed).normal(size=features)


def make_block(block_index, sizes, features, seed):
    """One block of rows, [features | label], the same whenever it is made again."""
    index = int(block_index[0])
    rng = np.random.default_rng([seed, index])
    rows = sizes[index]
    X = rng.normal(size=(rows, features))
    probability = 1.0 / (1.0 + np.exp(-X @ true_weights(features, seed)))
    y = (rng.random(rows) < probability).astype(np.float64)
    return np.column_stack([X, y])


def lazy_data(rows, features, block_rows, seed):
    """(X, y) as Dask arrays of `rows` rows, in blocks of `block_rows`, never computed here."""
    sizes = [block_rows] * (rows // block_rows) + ([rows % block_rows] if rows % block_rows
                                                   else [])
    blocks = da.arange(len(sizes), chunks=1)
    data = blocks.map_blocks(make_block, sizes=tuple(sizes), features=features, seed=seed,
                             dtype=np.float64, chunks=(tuple(sizes), (features + 1,)),
                             new_axis=1)
    return data[:, :features], data[:, features]


# ----- the loss, compiled by srcxform -----

def loss(w, b, X, y):
    """The mean logistic loss of the rows of X, labels y."""
    logits = tf.reduce_sum(X * w, axis=1) + b
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))


def train_srcxform(X, y, args, progress):
    step = srcxform.dask.value_and_grad(loss, reduce="mean", wrt=(0, 1))
    w, b = np.zeros(args.features), 0.0
    return descend(lambda w, b: step(w, b, X, y), w, b, args, progress)


# ----- the comparison: the same gradient in dask.array -----

def numpy_value_and_grad(w, b, X, y):
    """The mean logistic loss and its gradient, written in dask.array and computed."""
    logits = X @ w + b
    residual = 1.0 / (1.0 + da.exp(-logits)) - y
    value = da.mean(da.logaddexp(0.0, logits) - y * logits)
    value, grad_w, grad_b = dask.compute(value, X.T @ residual / len(y), da.mean(residual))
    return value, (grad_w, grad_b)


def train_dask_array(X, y, args, progress):
    w, b = np.zeros(args.features), 0.0
    return descend(lambda w, b: numpy_value_and_grad(w, b, X, y), w, b, args, progress)


def descend(value_and_grad, w, b, args, progress):
    """Full-batch gradient descent, one step an epoch: the losses and seconds per epoch."""
    losses, seconds = [], []
    for _ in progress(range(args.epochs)):
        start = time.perf_counter()
        value, (grad_w, grad_b) = value_and_grad(w, b)
        w, b = w - args.learning_rate * grad_w, b - args.learning_rate * grad_b
        seconds.append(time.perf_counter() - start)
        losses.append(float(value))
    return losses, seconds


def main(argv=None):
    from distributed import Client, LocalCluster
    from tqdm import tqdm

    args = parse_args(argv)
    out = prepare_out(args.out)
    X, y = lazy_data(args.rows, args.features, args.block_rows, args.seed)
    print(f"{args.rows} rows, {args.features} features ({X.nbytes / 2**30:.2f} GiB), in "
          f"{X.numblocks[0]} blocks generated on the workers")
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        if args.persist:
            X, y = dask.persist(X, y)
        results = {}
        for name, train in [("srcxform.dask", train_srcxform),
                            ("dask.array (NumPy)", train_dask_array)]:
            def progress(epochs, name=name):
                return tqdm(epochs, desc=name, unit="epoch", disable=args.no_progress)

            results[name] = train(X, y, args, progress)
            print(f"{name}: loss by epoch {' '.join(f'{v:.6f}' for v in results[name][0])}")
    report(results)
    plot(results, out)


def report(results):
    """Time per epoch (the first aside: it compiles), and the final losses."""
    for name, (losses, seconds) in results.items():
        steady = seconds[1:] or seconds
        print(f"{name}: {1000 * np.median(steady):.0f} ms per epoch after the first "
              f"({1000 * seconds[0]:.0f} ms); final loss {losses[-1]:.8f}")
    (ours, _), (theirs, _) = results.values()
    print(f"largest difference between the two runs' losses: "
          f"{max(abs(a - b) for a, b in zip(ours, theirs)):.1e}")


def plot(results, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for (name, (losses, _)), style in zip(results.items(), ["-o", "--x"]):
        ax.plot(range(1, len(losses) + 1), losses, style, label=name)
    ax.set(xlabel="epoch (one full-batch step)", ylabel="mean logistic loss",
           title="Logistic regression on Dask, two ways")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out)
    print(f"loss curves saved to {out}")


if __name__ == "__main__":
    main()
