"""What debug_nans costs a compiled gradient: the checked kernel against the plain one, in
one process, in interleaved blocks (the flag switched between blocks), as a ratio.

    python -m benchmarks.nan_overhead [--rounds 15] [--block-ms 20]

The issue's target (33) is at most 1.5x on W3 and W5. Prints a markdown table.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("SRCXFORM_TIERED", "0")  # first calls wait for the kernel: none is eager
os.environ.setdefault("SRCXFORM_CHECK", "0")  # no call is checked against the eager tape
import srcxform
from benchmarks.workloads import MLP, ROSENBROCK, make_workloads


def _calls():
    """(label, call) per measured gradient."""
    out = []
    for n in (1_000, 100_000, 1_000_000):
        x = np.random.default_rng(3).uniform(-1.5, 1.5, n)
        out.append((f"W3 Rosenbrock n={n:g}", lambda x=x: ROSENBROCK.grad(x)))
    w5 = next(wl for wl in make_workloads(only=["W5"]) if wl.key == "W5").data
    params, X, Y = w5["params0"], w5["X"], w5["Y"]
    out.append(("W5 MLP 64-128-10, batch 256 (one gradient)", lambda: MLP.grad(params, X, Y)))
    return out


def _block(call, n):
    t0 = time.perf_counter_ns()
    for _ in range(n):
        call()
    return (time.perf_counter_ns() - t0) / n


def measure(call, rounds, block_ms):
    """(median ns unchecked, median ns checked, median over rounds of their ratio)."""
    for checked in (False, True):  # compile both kernels, warm both entries
        with srcxform.debug_nans(checked):
            call()
            call()
    one = _block(call, 3)
    n = max(1, int(block_ms * 1e6 / one))
    plain, checked = [], []
    for _ in range(rounds):
        plain.append(_block(call, n))
        with srcxform.debug_nans(True):
            call()  # the warm entry is rebuilt when the flag changes: not timed
            checked.append(_block(call, n))
        call()
    ratio = statistics.median(c / p for c, p in zip(checked, plain))
    return statistics.median(plain), statistics.median(checked), ratio


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--block-ms", type=float, default=20.0)
    args = parser.parse_args(argv)
    print("| workload | grad, checks off | grad, `debug_nans(True)` | ratio (median of "
          f"{args.rounds} paired rounds) |")
    print("| --- | --- | --- | --- |")
    for label, call in _calls():
        plain, checked, ratio = measure(call, args.rounds, args.block_ms)
        print(f"| {label} | {plain / 1e3:.1f} us | {checked / 1e3:.1f} us | {ratio:.2f}x |",
              flush=True)


if __name__ == "__main__":
    main()
