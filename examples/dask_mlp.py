"""A two-layer perceptron trained data-parallel on Dask, on rows generated block by block.

The rows are generated lazily, each block from its own seed (features, and the class a
fixed random "teacher" network gives them), so the data set can be larger than the
machine's memory. Each training step takes the next few blocks as its mini-batch:
`srcxform.dask.train_step` runs the compiled loss-and-gradient kernel of the perceptron
on every block as one task, on a `LocalCluster` of worker processes, adds the blocks'
gradients up in a tree (weighted by rows: the loss is a mean), and applies one Adam
update to the Variables in this process. An epoch is one pass over all the blocks.

    pip install -e '.[dask,examples]'
    python examples/dask_mlp.py                                  # 2 million rows
    python examples/dask_mlp.py --rows 6001 --block-rows 1000 --epochs 3 --check

Prints the loss by epoch and the held-out accuracy, and saves the loss curve as a PNG.
With --check it also runs the same steps in one process on the whole (computed) data,
with a GradientTape and its own Adam, and prints how far the two runs' parameters differ.
"""

import time

import dask
import dask.array as da
import numpy as np
from _dask_options import dask_parser  # examples/_dask_options.py
from _training import prepare_out  # examples/_training.py

import srcxform as tf
import srcxform.dask


def parse_args(argv=None):
    parser = dask_parser(__doc__.split("\n\n")[0], rows=2_000_000, features=10,
                         block_rows=100_000, per="step", epochs=5, learning_rate=0.01,
                         plot=("dask_mlp_loss.png", "the loss curve"))
    parser.add_argument("--classes", type=int, default=3)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--blocks-per-step", type=int, default=2,
                        help="blocks in one step's mini-batch")
    parser.add_argument("--check", action="store_true",
                        help="compare with the one-process loop (computes the whole data)")
    return parser.parse_args(argv)


# ----- the data: rows made per block, from a seed; classes from a random teacher -----

def teacher_class(X, classes, seed):
    """The class of each row: the argmax of a fixed random two-layer network's logits."""
    rng = np.random.default_rng([seed, 2**31])
    hidden = np.tanh(X @ rng.normal(size=(X.shape[1], 16)))
    return np.argmax(hidden @ rng.normal(size=(16, classes)), axis=1)


def make_block(block_index, sizes, features, classes, seed, part):
    """One block of rows, [features | one-hot class], the same whenever it is made again;
    `part` 0 for the training rows, 1 for the held-out ones (the same teacher)."""
    index = int(block_index[0])
    X = np.random.default_rng([seed, part, index]).normal(size=(sizes[index], features))
    return np.column_stack([X, np.eye(classes)[teacher_class(X, classes, seed)]])


def lazy_data(rows, features, classes, block_rows, seed, part=0):
    """(X, labels) as Dask arrays of `rows` rows in blocks of `block_rows`; labels one-hot."""
    sizes = [block_rows] * (rows // block_rows) + ([rows % block_rows] if rows % block_rows
                                                   else [])
    data = da.arange(len(sizes), chunks=1).map_blocks(
        make_block, sizes=tuple(sizes), features=features, classes=classes, seed=seed,
        part=part, dtype=np.float64, chunks=(tuple(sizes), (features + classes,)), new_axis=1)
    return data[:, :features], data[:, features:]


# ----- the model -----

def new_parameters(features, hidden, classes, seed):
    """Glorot-uniform weights and zero biases, as float64 Variables."""
    rng = np.random.default_rng(seed)

    def dense(n_in, n_out):
        limit = np.sqrt(6.0 / (n_in + n_out))
        return {"w": tf.Variable(rng.uniform(-limit, limit, (n_in, n_out))),
                "b": tf.Variable(np.zeros(n_out))}

    return {"hidden": dense(features, hidden), "output": dense(hidden, classes)}


def logits(params, X):
    hidden = tf.nn.relu(X @ params["hidden"]["w"] + params["hidden"]["b"])
    return hidden @ params["output"]["w"] + params["output"]["b"]


def loss(params, X, labels):
    """The mean softmax cross-entropy of the rows of X."""
    return tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=labels,
                                                                  logits=logits(params, X)))


def step_batches(blocks, per_step):
    """Each step's blocks, as (first, end) block numbers: consecutive runs of `per_step`."""
    return [(i, min(i + per_step, blocks)) for i in range(0, blocks, per_step)]


# ----- training: data-parallel, and (with --check) the same steps in one process -----

def train_dask(X, labels, args, progress):
    params = new_parameters(args.features, args.hidden, args.classes, args.seed)
    step = srcxform.dask.train_step(loss, tf.optimizers.Adam(args.learning_rate), params,
                                    reduce="mean")
    losses, seconds = [], []
    for _ in progress(range(args.epochs)):
        start = time.perf_counter()
        losses.append([float(step(X.blocks[first:end], labels.blocks[first:end]))
                       for first, end in step_batches(X.numblocks[0], args.blocks_per_step)])
        seconds.append(time.perf_counter() - start)
    return params, losses, seconds


def train_one_process(X, labels, args):
    """The same steps on the computed data: a GradientTape and Adam, no Dask."""
    params = new_parameters(args.features, args.hidden, args.classes, args.seed)
    optimizer = tf.optimizers.Adam(args.learning_rate)
    bounds = np.cumsum((0,) + X.chunks[0])
    X, labels = dask.compute(X, labels)
    for _ in range(args.epochs):
        for first, end in step_batches(len(bounds) - 1, args.blocks_per_step):
            rows = slice(bounds[first], bounds[end])
            with tf.GradientTape() as tape:
                value = loss(params, X[rows], labels[rows])
            optimizer.apply(tape.gradient(value, params), params)
    return params


def largest_difference(params, others):
    return max(float(np.max(np.abs(params[layer][name].numpy() -
                                   others[layer][name].numpy())))
               for layer in params for name in params[layer])


def accuracy(params, args):
    """The share of a held-out block (its own seed) whose class the model gets right."""
    X, labels = lazy_data(10_000, args.features, args.classes, 10_000, args.seed, part=1)
    X, labels = dask.compute(X, labels, scheduler="sync")
    predicted = np.argmax(np.asarray(logits(params, X)), axis=1)
    return float(np.mean(predicted == np.argmax(labels, axis=1)))


def main(argv=None):
    from distributed import Client, LocalCluster
    from tqdm import tqdm

    args = parse_args(argv)
    out = prepare_out(args.out)
    X, labels = lazy_data(args.rows, args.features, args.classes, args.block_rows, args.seed)
    steps = len(step_batches(X.numblocks[0], args.blocks_per_step))
    print(f"{args.rows} rows, {args.features} features, {args.classes} classes "
          f"({(X.nbytes + labels.nbytes) / 2**30:.2f} GiB), in {X.numblocks[0]} blocks "
          f"generated on the workers; {steps} steps an epoch")
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        if args.persist:
            X, labels = dask.persist(X, labels)

        def progress(epochs):
            return tqdm(epochs, desc="srcxform.dask", unit="epoch", disable=args.no_progress)

        params, losses, seconds = train_dask(X, labels, args, progress)
        if args.check:
            gap = largest_difference(params, train_one_process(X, labels, args))
    means = [float(np.mean(epoch)) for epoch in losses]
    print(f"mean loss by epoch: {' '.join(f'{v:.6f}' for v in means)}")
    print(f"{1000 * np.median(seconds[1:] or seconds):.0f} ms per epoch after the first "
          f"({1000 * seconds[0]:.0f} ms: each worker compiles)")
    print(f"held-out accuracy: {100 * accuracy(params, args):.1f}%")
    if args.check:
        print(f"largest difference from the one-process loop's parameters: {gap:.1e}")
    plot([v for epoch in losses for v in epoch], steps, out)


def plot(losses, steps, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(np.arange(1, len(losses) + 1) / steps, losses)
    ax.set(xlabel="epoch", ylabel="mean softmax cross-entropy of the step's rows",
           title="Two-layer perceptron on Dask (srcxform.dask.train_step, Adam)")
    fig.tight_layout()
    fig.savefig(out)
    print(f"loss curve saved to {out}")


if __name__ == "__main__":
    main()
