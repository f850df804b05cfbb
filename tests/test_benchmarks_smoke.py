"""The benchmark workloads at tiny sizes, without timing: each reference equals central
finite differences, and every system (peers skipped when not installed) reproduces it."""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("SRCXFORM_BENCH_NUMBA_CACHE", "1")  # the hand kernels, between runs

from benchmarks import hand_numpy as hn
from benchmarks import peers, threads, workloads

WORKLOADS = workloads.make_workloads(tiny=True)
SYSTEMS = workloads.systems()


def _fd(f, x, h=1e-6):
    """Central differences of a scalar function at a float or array x."""
    x = np.array(x, np.float64)
    g = np.empty_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        g[i] = (f(up) - f(down)) / (2 * h)
    return g


def _fd_reference(wl):
    d = wl.data
    if wl.kind == "gemm":  # no derivative here: each product summed term by term
        X, W1, H, W2, D, DA = d["ops"]
        return [np.einsum("ik,kj->ij", *pair) for pair in
                ((X, W1), (H, W2), (H.T, D), (D, W2.T), (X.T, DA))]
    if wl.family == "W1":
        return [_fd(hn.quadratic, d["x"])]
    if wl.family == "W2":
        return [_fd(lambda x: hn.seed_sum(x, d["z"]), d["x"]),
                _fd(lambda z: hn.seed_sum(d["x"], z), d["z"])]
    if wl.family == "W3":
        return [_fd(hn.rosenbrock, d["x"])]
    if wl.family == "W6":
        return [_fd(lambda x: _fd(hn.cube, x, 1e-4), d["x"], 1e-4)]
    params = wl.params0()
    if wl.family == "W4":
        def loss(p):
            return hn.logreg_loss(p[0], p[1], d["X"], d["y"])
    else:
        def loss(p):
            return hn.mlp_loss(p, d["X"], d["Y"], relu=wl.family == "W9")
    grads = []
    for k in range(len(params)):
        def partial(v, k=k):
            return loss(params[:k] + [v] + params[k + 1:])
        grads.append(_fd(partial, params[k]))
    # the reference stores parameters after one step: p1 = p0 - lr * g
    return [p - d["lr"] * g for p, g in zip(params, grads)]


@pytest.mark.parametrize("wl", WORKLOADS, ids=[wl.key for wl in WORKLOADS])
def test_reference_matches_finite_differences(wl):
    want = wl.reference()[0] if wl.kind == "sgd" else wl.reference()
    for got, fd in zip(want, _fd_reference(wl)):
        np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-6)


# The all-cores table's srcxform kernels (parallel=True) where they have loops to split:
# W3's and the MLP's (compiling parallel=True for every workload would double the test).
PARALLEL = [s for s in workloads.systems(threads.ALL_CORES)
            if s.name.startswith("srcxform compiled")]
CASES = ([(wl, s, s.name) for wl in WORKLOADS for s in SYSTEMS]
         + [(wl, s, f"{s.name} (all cores)") for wl in WORKLOADS for s in PARALLEL
            if wl.family in ("W3", "W9")])


@pytest.mark.parametrize("wl,system", [c[:2] for c in CASES],
                         ids=[f"{wl.key}-{name}" for wl, _, name in CASES])
def test_system_matches_reference(wl, system):
    if system.requires and not peers.available()[system.requires]:
        pytest.skip(f"{system.requires} is not installed (pip install -e '.[bench]')")
    runner = system.build(wl)
    if runner is None:
        pytest.skip(f"{system.name} does not run {wl.key}")
    workloads.check(wl, runner)
