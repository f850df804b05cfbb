"""The training loop the examples share: eager against compiled, timed, and the loss curve.

Each example keeps its model, its data and its training step; this module runs the
step eagerly for `args.timing_steps` steps and compiled for `args.epochs` epochs over
the same seeded batches, times both, measures how far the two runs' parameters differ
after the eager steps, prints the results and saves the curve of per-epoch mean losses.
"""

import pathlib
import time
from typing import NamedTuple

import numpy as np

import srcxform as tf


# Where the examples write their plots, whatever folder they are run from.
OUTPUT = pathlib.Path(__file__).resolve().parent / "output"


def add_out_option(parser, filename, what):
    """The --out option: a PNG in OUTPUT unless the user names another path."""
    parser.add_argument("--out", default=str(OUTPUT / filename),
                        help=f"where to save {what} (default: {OUTPUT / filename})")


def prepare_out(path):
    """Makes the folder of `path` and says, before the work starts, where the plot goes."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    print(f"the plot will be saved to {path}")
    return path


class Comparison(NamedTuple):
    losses: list  # mean training loss of each epoch, compiled
    eager_step: float  # seconds per eager step
    compiled_step: float  # seconds per compiled step, the first call left out
    first_call: float  # seconds of the first compiled call: tracing and compiling
    timing: int  # the number of steps timed eagerly
    gap: float  # largest parameter difference after `timing` steps


def batches(n, batch_size, rng):
    """One epoch's mini-batches: a permutation of range(n), cut into `batch_size` pieces."""
    order = rng.permutation(n)
    return [order[i:i + batch_size] for i in range(0, n, batch_size)]


def train_and_compare(train_step, eager_step, X_train, targets, args, gap):
    """Time `eager_step` on the first batches, then train with `train_step` for all epochs.

    `train_step` is the compiled step and `eager_step` the same step of a twin model;
    `gap()` returns how far the two models' parameters differ, and is called once the
    compiled model has taken as many steps as the eager one.
    """
    from tqdm import tqdm

    plan = [b for epoch in range(args.epochs)
            for b in batches(len(X_train), args.batch_size, np.random.default_rng(
                [args.seed, epoch]))]
    timing = min(args.timing_steps, len(plan))
    start = time.perf_counter()
    for idx in plan[:timing]:
        eager_step(X_train[idx], targets[idx])
    eager_time = (time.perf_counter() - start) / timing

    losses, compiled_time, steps_per_epoch = [], 0.0, -(-len(X_train) // args.batch_size)
    progress = tqdm(range(args.epochs), desc="training", unit="epoch", disable=args.no_progress)
    step = 0
    for epoch in progress:
        epoch_losses = []
        for idx in plan[epoch * steps_per_epoch:(epoch + 1) * steps_per_epoch]:
            start = time.perf_counter()
            loss = train_step(X_train[idx], targets[idx])
            elapsed = time.perf_counter() - start
            if step == 0:
                first_call = elapsed  # tracing and compiling, once
            else:
                compiled_time += elapsed
            step += 1
            epoch_losses.append(float(loss))
            if step == timing:
                difference = gap()
        losses.append(float(np.mean(epoch_losses)))
        progress.set_postfix(loss=f"{losses[-1]:.4f}")
    compiled_time /= max(step - 1, 1)
    return Comparison(losses, eager_time, compiled_time, first_call, timing, difference)


def train_twins(new_model, data, args, title, what="parameters"):
    """Trains new_model() with its step compiled and a twin eagerly, as train_and_compare
    does; prints the results and saves the loss curve titled `title`; returns the
    compiled model. `data` is (X_train, train targets, X_test, y_test, y_train); a model
    has train_step, accuracy(X, y) and variables, a list of its Variables."""
    X_train, targets, X_test, y_test, y_train = data
    model = new_model()
    # The same step, compiled. wait=True: every step runs the kernel (by default the first
    # steps run eagerly while it compiles), so the times and the comparison are its own.
    train_step = tf.differentiable(model.train_step, wait=True)
    eager = new_model()  # trained eagerly over the same first batches, for the comparison

    def gap():  # how far the two models' parameters differ
        return max(float(np.abs(a.numpy() - b.numpy()).max())
                   for a, b in zip(model.variables, eager.variables))

    result = train_and_compare(train_step, eager.train_step, X_train, targets, args, gap)
    print_results(result, model.accuracy(X_test, y_test), model.accuracy(X_train, y_train),
                  what)
    save_loss_curve(result.losses, title, args.out)
    return model


def print_results(result, test_accuracy, train_accuracy, what="parameters"):
    """The accuracy, the eager and compiled step times, and the parameter gap."""
    print(f"test accuracy: {test_accuracy:.2%} (train {train_accuracy:.2%})")
    print(f"eager step: {result.eager_step * 1e3:.3f} ms; compiled step: "
          f"{result.compiled_step * 1e3:.3f} ms ({result.eager_step / result.compiled_step:.0f}x "
          f"faster; the first call traced and compiled in {result.first_call:.1f} s)")
    print(f"eager and compiled {what} after {result.timing} steps differ by at most "
          f"{result.gap:.1e}")


def save_loss_curve(losses, title, path):
    """Plot the per-epoch mean losses on a log scale and save them as a PNG at `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(np.arange(1, len(losses) + 1), losses)
    ax.set(xlabel="epoch", ylabel="mean training loss", yscale="log", title=title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"loss curve saved to {path}")
