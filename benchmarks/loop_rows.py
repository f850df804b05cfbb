"""How a loop's gradient grows with the data: a Python loop reading x[i] a row at a time,
converted to one compiled loop, its gradient at several lengths of x.

    python -m benchmarks.loop_rows [--sizes 1000 4000 16000 64000]

The loop (an exponential moving average, its squares summed, as a signal-processing
user writes it) against its adjoint written by hand in Numba, and JAX's `jit(grad)` of
the same loop as `lax.scan` where JAX is installed; each checked against the hand
gradient, then timed in one process pinned to one core (the minimum over blocks of
calls). A gradient whose cost per element stays flat grows linearly; before add_rows
(codegen/control.py) each reverse trip added a scatter of its row to the whole
gradient, and the cost per element grew with n.
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("SRCXFORM_TIERED", "0")  # first calls wait for the kernel
os.environ.setdefault("SRCXFORM_CHECK", "0")  # no call is checked against the eager tape
import srcxform as tf

A = 0.9


@tf.differentiable
def smoothed_energy(x):
    y, total = x[0], 0.0 * x[0]
    for i in range(1, len(x)):
        y = A * y + (1 - A) * x[i]
        total += y ** 2
    return total


@numba.njit(cache=True)
def hand_grad(x):
    """smoothed_energy's gradient: the forward sweep storing y, then the adjoint's."""
    n = x.shape[0]
    ys = np.empty(n)
    ys[0] = x[0]
    for i in range(1, n):
        ys[i] = A * ys[i - 1] + (1 - A) * x[i]
    g = np.zeros(n)
    by = 0.0
    for i in range(n - 1, 0, -1):
        by += 2.0 * ys[i]
        g[i] = (1 - A) * by
        by *= A
    g[0] = by
    return g


def _jax_grad():
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)

    def energy(x):
        def step(y, xi):
            y = A * y + (1 - A) * xi
            return y, y ** 2
        return jax.lax.scan(step, x[0], x[1:])[1].sum()

    return jax.jit(jax.grad(energy))


def _best(call, x, seconds=0.3):
    """The fastest mean over blocks of calls of call(x), in seconds a call."""
    call(x)
    n = max(1, int(0.02 / max(_time(call, x, 1), 1e-7)))
    best, start = float("inf"), time.perf_counter()
    while time.perf_counter() - start < seconds:
        best = min(best, _time(call, x, n))
    return best


def _time(call, x, n):
    t0 = time.perf_counter()
    for _ in range(n):
        call(x)
    return (time.perf_counter() - t0) / n


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000, 16000, 64000])
    args = parser.parse_args(argv)
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    jax_grad = _jax_grad()
    print("| n | hand Numba | srcxform | ns per element | × hand | JAX lax.scan |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for n in args.sizes:
        x = np.random.default_rng(0).uniform(-1, 1, n)
        want = hand_grad(x)
        np.testing.assert_allclose(smoothed_energy.grad(x), want, rtol=1e-10, atol=1e-13)
        hand, ours = _best(hand_grad, x), _best(smoothed_energy.grad, x)
        peer = "not installed"
        if jax_grad is not None:
            np.testing.assert_allclose(np.asarray(jax_grad(x)), want, rtol=1e-10, atol=1e-13)
            peer = f"{_best(lambda v: jax_grad(v).block_until_ready(), x) * 1e6:.0f} µs"
        print(f"| {n} | {hand * 1e6:.0f} µs | {ours * 1e6:.0f} µs | {ours / n * 1e9:.0f} | "
              f"{ours / hand:.1f} | {peer} |", flush=True)


if __name__ == "__main__":
    main()
