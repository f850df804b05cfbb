"""Fitting the four Lotka-Volterra parameters to noisy data, through a compiled RK4 loop.

The predator-prey model dx/dt = alpha x - beta x y, dy/dt = delta x y - gamma y is
integrated with fixed-step RK4 by a plain Python `for` over `range(observations.shape[0])`
(and an inner one over a traced number of substeps): srcxform's autograph makes both
loops real loops in one Numba kernel, with reverse mode through them, for any number of
observations. Adam fits the logarithms of the parameters (so they stay positive) to
noisy samples of a trajectory simulated with the true ones.

    pip install -e '.[examples]'
    python examples/ode_sensitivity.py                     # 1,500 RK4 steps, 600 Adam steps
    python examples/ode_sensitivity.py --steps 200 --out /tmp/fit.png

Prints the recovered parameters against the true ones and the time of a compiled step,
and saves the data and the fitted trajectories as a PNG.
"""

import argparse
import time

import numpy as np

import srcxform as tf
from _training import add_out_option, prepare_out  # examples/_training.py

NAMES = ("alpha", "beta", "gamma", "delta")
TRUE_PARAMS = np.array([1.1, 0.4, 0.4, 0.1])
Z0 = np.array([10.0, 5.0])  # prey, predators at t = 0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=600, help="Adam steps")
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--observations", type=int, default=150,
                        help="noisy samples of the trajectory, 0.1 time units apart")
    parser.add_argument("--substeps", type=int, default=10,
                        help="RK4 steps between two observations")
    parser.add_argument("--noise", type=float, default=0.3,
                        help="standard deviation of the noise added to the data")
    add_out_option(parser, "ode_sensitivity_fit.png", "the plot of data and fit")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser.parse_args(argv)


def lotka_volterra(z, params):
    """dz/dt at z = (prey, predators)."""
    x, y = z[0], z[1]
    alpha, beta, gamma, delta = params[0], params[1], params[2], params[3]
    return tf.stack([alpha * x - beta * x * y, delta * x * y - gamma * y])


def rk4_step(z, params, h):
    k1 = lotka_volterra(z, params)
    k2 = lotka_volterra(z + 0.5 * h * k1, params)
    k3 = lotka_volterra(z + 0.5 * h * k2, params)
    k4 = lotka_volterra(z + h * k3, params)
    return z + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def misfit(log_params, z0, observations, h, substeps):
    """The mean squared distance between the trajectory from z0 and the observations,
    one every `substeps` RK4 steps of h. Both loops are converted: their bounds are a
    shape and an argument, so the kernel serves every number of observations."""
    params = tf.exp(log_params)
    z, total = z0, 0.0
    for i in range(observations.shape[0]):
        for _ in range(substeps):
            z = rk4_step(z, params, h)
        total += tf.reduce_sum(tf.square(z - observations[i]))
    return total / tf.cast(tf.size(observations), tf.float64)


def trajectory(params, z0, n, h, substeps):
    """The states after every `substeps` RK4 steps, n of them, eagerly (for data and plots)."""
    z, states = tf.constant(z0), []
    for _ in range(n):
        for _ in range(substeps):
            z = rk4_step(z, params, h)
        states.append(z.numpy())
    return np.array(states)


def fit(observations, initial, args, h):
    """Adam on the log-parameters, each step one compiled value-and-gradient call."""
    from tqdm import tqdm

    # wait=True: the first call waits for the kernel rather than running eagerly meanwhile.
    value_and_grad = tf.differentiable(misfit, wait=True).value_and_grad
    log_params = tf.Variable(np.log(initial), name="log_params")
    optimizer = tf.optimizers.Adam(learning_rate=args.learning_rate)
    substeps, losses, elapsed = np.int64(args.substeps), [], 0.0
    for step in tqdm(range(args.steps), desc="fitting", unit="step", disable=args.no_progress):
        start = time.perf_counter()
        loss, grad = value_and_grad(log_params.numpy(), Z0, observations, h, substeps)
        if step > 0:  # the first call traced and compiled
            elapsed += time.perf_counter() - start
        optimizer.apply([grad], [log_params])
        losses.append(float(loss))
    return np.exp(log_params.numpy()), losses, elapsed / max(args.steps - 1, 1)


def save_plot(observations, fitted, times, losses, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax_loss) = plt.subplots(1, 2, figsize=(10, 4))
    for k, (label, colour) in enumerate((("prey", "tab:blue"), ("predators", "tab:red"))):
        ax.plot(times, observations[:, k], ".", color=colour, alpha=0.5, label=f"{label}, data")
        ax.plot(times, fitted[:, k], color=colour, label=f"{label}, fit")
    ax.set(xlabel="time", ylabel="population", title="Lotka-Volterra: noisy data and fit")
    ax.legend(fontsize="small")
    ax_loss.plot(np.arange(1, len(losses) + 1), losses)
    ax_loss.set(xlabel="Adam step", ylabel="mean squared misfit", yscale="log",
                title="training loss")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"data and fit saved to {path}")


def main(argv=None):
    args = parse_args(argv)
    prepare_out(args.out)
    h = 0.1 / args.substeps
    rng = np.random.default_rng(args.seed)
    initial = TRUE_PARAMS * rng.uniform(0.75, 1.25, 4)  # a guess within 25%
    clean = trajectory(TRUE_PARAMS, Z0, args.observations, h, args.substeps)
    observations = clean + args.noise * rng.standard_normal(clean.shape)
    print(f"{args.observations} noisy observations of {args.observations * args.substeps} "
          f"RK4 steps; initial guess {np.round(initial, 3)}")

    params, losses, step_time = fit(observations, initial, args, h)
    print(f"{'':>6} {'true':>8} {'fitted':>8}")
    for name, true, got in zip(NAMES, TRUE_PARAMS, params):
        print(f"{name:>6} {true:8.4f} {got:8.4f}")
    print(f"largest relative error: {np.max(np.abs(params / TRUE_PARAMS - 1)):.2%}")
    print(f"final misfit {losses[-1]:.4f} (the noise's variance: {args.noise ** 2:.4f}); "
          f"compiled step: {step_time * 1e3:.3f} ms")

    times = 0.1 * np.arange(1, args.observations + 1)
    save_plot(observations, trajectory(params, Z0, args.observations, h, args.substeps),
              times, losses, args.out)
    return params


if __name__ == "__main__":
    main()
