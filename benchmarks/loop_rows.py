"""How a loop's gradient grows with the data: Python loops reading x[i] (and x[i, j]) an
element at a time, converted to compiled loops, their gradients at several sizes.

    python -m benchmarks.loop_rows [--sizes 1000 4000 16000 64000]

Three loops as a signal-processing or grid user writes them: an exponential moving average
of a vector, its squares summed, a double loop over a matrix of 8 columns multiplying
each cell by its left neighbour, and a window of 3 a loop slides (x[i:i + 3]). Each against its adjoint written by hand in Numba, and
JAX's `jit(grad)` of the same loops (`lax.scan`, nested `lax.fori_loop`) where JAX is
installed; each checked against the hand gradient, then timed in one process pinned to
one core (the minimum over blocks of calls). A gradient whose cost per element stays flat
grows linearly: before add_rows (codegen/control.py) each reverse trip added a scatter of
its row to the whole gradient, and before _into_loop each row's inner loop a whole array.
"""

import argparse
import json
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


@tf.differentiable
def cell_energy(x):
    total = 0.0 * x[0, 0]
    for i in range(x.shape[0]):
        for j in range(1, x.shape[1]):
            total += x[i, j] * x[i, j - 1]
    return total


@numba.njit(cache=True)
def hand_cell_grad(x):
    g = np.zeros_like(x)
    for i in range(x.shape[0]):
        for j in range(1, x.shape[1]):
            g[i, j] += x[i, j - 1]
            g[i, j - 1] += x[i, j]
    return g


@tf.differentiable
def window_energy(x):
    total = 0.0 * x[0]
    for i in range(len(x) - 2):
        w = x[i:i + 3]
        total += tf.reduce_sum(w * w) * w[1]
    return total


@numba.njit(cache=True)
def hand_window_grad(x):
    g = np.zeros_like(x)
    for i in range(x.shape[0] - 2):
        s = x[i] ** 2 + x[i + 1] ** 2 + x[i + 2] ** 2
        g[i] += 2.0 * x[i] * x[i + 1]
        g[i + 1] += 2.0 * x[i + 1] * x[i + 1] + s
        g[i + 2] += 2.0 * x[i + 2] * x[i + 1]
    return g


def _jax_grads():
    """JAX's jit(grad) of the loops, or Nones where JAX is not installed."""
    try:
        import jax
    except ImportError:
        return None, None, None
    jax.config.update("jax_enable_x64", True)

    def energy(x):
        def step(y, xi):
            y = A * y + (1 - A) * xi
            return y, y ** 2
        return jax.lax.scan(step, x[0], x[1:])[1].sum()

    def cells(x):
        def row(i, total):
            return jax.lax.fori_loop(1, x.shape[1], lambda j, t: t + x[i, j] * x[i, j - 1],
                                     total)
        return jax.lax.fori_loop(0, x.shape[0], row, 0.0)

    def windows(x):
        def step(i, total):
            w = jax.lax.dynamic_slice(x, (i,), (3,))
            return total + (w * w).sum() * w[1]
        return jax.lax.fori_loop(0, x.shape[0] - 2, step, 0.0)

    return [jax.jit(jax.grad(f)) for f in (energy, cells, windows)]


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
    parser.add_argument("--json", type=Path,
                        help="write each loop's ratio to hand Numba at the last size here, "
                             "without JAX (benchmarks/guard.py's rows)")
    args = parser.parse_args(argv)
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    jax_rows, jax_cells, jax_windows = _jax_grads() if args.json is None else (None,) * 3
    print("| loop | n | hand Numba | srcxform | ns per element | × hand | JAX |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    ratios = {}
    for label, ours, hand, peer, shape in (
            ("x[i]", smoothed_energy.grad, hand_grad, jax_rows, lambda n: (n,)),
            ("x[i, j]", cell_energy.grad, hand_cell_grad, jax_cells, lambda n: (n // 8, 8)),
            ("x[i:i+3]", window_energy.grad, hand_window_grad, jax_windows, lambda n: (n,))):
        for n in args.sizes:
            x = np.random.default_rng(0).uniform(-1, 1, shape(n))
            ratios[f"loop:{label}"] = _row(label, x, ours, hand, peer)
    if args.json is not None:
        args.json.write_text(json.dumps(ratios))


def _row(label, x, ours, hand, peer):
    """One row of the table, each system's gradient checked, then timed; srcxform's time
    as a ratio to the hand kernel's."""
    want = hand(x)
    np.testing.assert_allclose(ours(x), want, rtol=1e-10, atol=1e-13)
    hand_time, our_time = _best(hand, x), _best(ours, x)
    shown = "not installed"
    if peer is not None:
        np.testing.assert_allclose(np.asarray(peer(x)), want, rtol=1e-10, atol=1e-13)
        shown = f"{_best(lambda v: peer(v).block_until_ready(), x) * 1e6:.0f} µs"
    print(f"| {label} | {x.size} | {hand_time * 1e6:.0f} µs | {our_time * 1e6:.0f} µs | "
          f"{our_time / x.size * 1e9:.0f} | {our_time / hand_time:.1f} | {shown} |", flush=True)
    return our_time / hand_time

if __name__ == "__main__":
    main()
