"""Logistic regression on Dask: a data set made block by block, a cluster of processes.

The rows are generated lazily, each block of rows from its own seed, so the data set can
be larger than the machine's memory: no process ever holds more than a few blocks. Each
epoch is one full-batch gradient-descent step: `srcxform.dask.value_and_grad` runs the
compiled loss-and-gradient kernel on every block as one task, on a `LocalCluster` of
worker processes, and adds the blocks' parts up in a tree; the parameters are updated in
this process and sent once per step.

Compared in the same run, on the same data: the same descent with the gradient written in
`dask.array` (NumPy in each task), and, when dask-ml is installed, dask-ml's
`LogisticRegression` with its solvers `gradient_descent` (with a line search), `lbfgs`
and `admm`, unpenalized so that all minimize the same mean logistic loss (`fit_dask_ml`).
dask-ml's fits report no epochs: their time is per solver step, the fit's time over its
steps (STEPS says what a step is), and their loss the final one.

    pip install -e '.[dask,examples]'
    python examples/dask_logistic_regression.py                      # 4 million rows
    python examples/dask_logistic_regression.py --rows 20000 --epochs 5

Prints the loss at each epoch and the time per epoch of both descents, dask-ml's time per
step and final losses, and saves the loss curves (dask-ml's final losses as lines) as a PNG.
"""

import collections
import importlib.util
import time

import dask
import dask.array as da
import numpy as np
from _dask_options import dask_parser  # examples/_dask_options.py
from _training import prepare_out  # examples/_training.py

import srcxform as tf
import srcxform.dask


def parse_args(argv=None):
    parser = dask_parser(__doc__.split("\n\n")[0], rows=4_000_000, features=20,
                         block_rows=250_000, per="epoch", epochs=10, learning_rate=2.0,
                         plot=("dask_logistic_regression_loss.png", "the loss curves"))
    parser.add_argument("--dask-ml-max-iter", type=int, default=100,
                        help="max_iter of dask-ml's fits (default: dask-ml's own)")
    parser.add_argument("--no-dask-ml", action="store_true",
                        help="leave dask-ml's LogisticRegression out of the comparison")
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


# ----- the comparison: dask-ml's LogisticRegression, when it is installed -----

# What one step of each dask-ml solver is: its time per step is the fit's time over them.
STEPS = {"gradient_descent": "iteration: a gradient and a line search, 2+ passes over the data",
         "lbfgs": "evaluation of the loss and gradient: one pass, as an epoch above",
         "admm": "iteration: an L-BFGS fit on every block (up to 200 passes over it), then "
                 "their average"}


def dask_ml_solvers(wanted=True):
    """The dask-ml solvers to compare: none if not `wanted`, or (said) without dask-ml."""
    if not wanted:
        return ()
    if importlib.util.find_spec("dask_ml") is None:
        print("dask-ml is not installed (pip install dask-ml): its LogisticRegression is "
              "left out of the comparison")
        return ()
    return tuple(STEPS)


def step_counting():
    """dask-glm's logistic family and L2 penalty, counting the calls each solver makes once
    a step; they are made in this process (the workers run dask-glm's own functions)."""
    from dask_glm.families import Logistic
    from dask_glm.regularizers import L2

    steps = collections.Counter()

    class CountedLogistic(Logistic):
        @staticmethod
        def gradient(Xbeta, X, y):  # gradient_descent: once an iteration
            steps["gradient_descent"] += 1
            return Logistic.gradient(Xbeta, X, y)

    class CountedL2(L2):
        def gradient(self, beta):  # lbfgs: once an evaluation of the loss and gradient
            steps["lbfgs"] += 1
            return super().gradient(beta)

        def proximal_operator(self, beta, t):  # admm: once an iteration
            steps["admm"] += 1
            return super().proximal_operator(beta, t)

    return steps, CountedLogistic, CountedL2()


def fit_dask_ml(X, y, solver, max_iter):
    """dask-ml's LogisticRegression fitted by `solver`: ((coefficients, intercept), its
    steps, the seconds the fit took).

    Unpenalized, C=inf (dask-glm's lambda = 1/C = 0), so that every solver minimizes
    srcxform's loss: dask-glm's logistic loss is the sum over rows (rows times our mean),
    the intercept a column of ones, X standardized inside the solver (which moves no
    minimum). dask-ml's default, penalty="l2" with C=1, adds ||beta||^2 / (2 C) of the
    standardized coefficients and the intercept to that sum, in lbfgs and admm only:
    gradient_descent ignores the penalty, so no one penalty on our side would match all three.
    """
    from dask_ml.linear_model import LogisticRegression

    steps, family, penalty = step_counting()
    model = LogisticRegression(solver=solver, penalty=penalty, C=np.inf, max_iter=max_iter,
                               solver_kwargs={"family": family})
    start = time.perf_counter()
    model.fit(X, y)
    seconds = time.perf_counter() - start
    return (np.asarray(model.coef_), float(model.intercept_)), steps[solver], seconds


def run_dask_ml(X, y, solver, max_iter):
    """One fit: its final mean loss (computed as the dask.array twin's), steps and seconds."""
    print(f"dask-ml {solver}: fitting (max_iter={max_iter})")
    (w, b), steps, seconds = fit_dask_ml(X, y, solver, max_iter)
    return float(numpy_value_and_grad(w, b, X, y)[0]), steps, seconds


def main(argv=None):
    from distributed import Client, LocalCluster

    args = parse_args(argv)
    out = prepare_out(args.out)
    solvers = dask_ml_solvers(not args.no_dask_ml)
    X, y = lazy_data(args.rows, args.features, args.block_rows, args.seed)
    print(f"{args.rows} rows, {args.features} features ({X.nbytes / 2**30:.2f} GiB), in "
          f"{X.numblocks[0]} blocks generated on the workers")
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        if args.persist:
            X, y = dask.persist(X, y)
        results = train_both(X, y, args)
        dask_ml = {solver: run_dask_ml(X, y, solver, args.dask_ml_max_iter)
                   for solver in solvers}
    report(results, dask_ml)
    plot(results, dask_ml, out)


def train_both(X, y, args):
    """The two descents' (losses, seconds) by epoch, by name, with a progress bar each."""
    from tqdm import tqdm

    results = {}
    for name, train in [("srcxform.dask", train_srcxform),
                        ("dask.array (NumPy)", train_dask_array)]:
        def progress(epochs, name=name):
            return tqdm(epochs, desc=name, unit="epoch", disable=args.no_progress)

        results[name] = train(X, y, args, progress)
        print(f"{name}: loss by epoch {' '.join(f'{v:.6f}' for v in results[name][0])}")
    return results


def report(results, dask_ml):
    """Time per epoch (the first aside: it compiles), and the final losses; then dask-ml's
    time per step and final loss, against srcxform.dask's."""
    for name, (losses, seconds) in results.items():
        steady = seconds[1:] or seconds
        print(f"{name}: {1000 * np.median(steady):.0f} ms per epoch after the first "
              f"({1000 * seconds[0]:.0f} ms); final loss {losses[-1]:.8f}")
    (ours, _), (theirs, _) = results.values()
    print(f"largest difference between the two runs' losses: "
          f"{max(abs(a - b) for a, b in zip(ours, theirs)):.1e}")
    for solver, (loss, steps, seconds) in dask_ml.items():
        print(f"dask-ml {solver}: {steps} steps in {seconds:.1f} s, "
              f"{1000 * seconds / steps:.0f} ms a step (one {STEPS[solver]}); final loss "
              f"{loss:.8f}, {loss - ours[-1]:+.1e} from srcxform.dask's")


def plot(results, dask_ml, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for (name, (losses, _)), style in zip(results.items(), ["-o", "--x"]):
        ax.plot(range(1, len(losses) + 1), losses, style, label=name)
    for (solver, (loss, steps, _)), color in zip(dask_ml.items(), ["C2", "C3", "C4"]):
        ax.axhline(loss, linestyle=":", color=color,
                   label=f"dask-ml {solver}: final, after {steps} steps")
    ax.set(xlabel="epoch (one full-batch step)", ylabel="mean logistic loss",
           title="Logistic regression on Dask")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out)
    print(f"loss curves saved to {out}")


if __name__ == "__main__":
    main()
