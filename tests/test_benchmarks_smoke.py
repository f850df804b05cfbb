"""The benchmark workloads at tiny sizes, without timing: each reference equals central
finite differences, and every system (peers skipped when not installed) reproduces it."""

import os
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("SRCXFORM_BENCH_NUMBA_CACHE", "1")  # the hand kernels, between runs

from benchmarks import hand_numpy as hn
from benchmarks import peers, threads, workloads

pytestmark = pytest.mark.slow  # every benchmark workload compiled, with its peers

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
    if wl.family == "W7":
        return [_fd(lambda p: hn.lotka_volterra(p, d["u0"], d["steps"]), d["p"])]
    if wl.family == "W8":
        return [_fd(hn.newton_sqrt, d["a"])]
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


# ----- the harness: pinning, measured threads, both tables -----


def test_pin_moves_threads_that_already_run():
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("one core: pinning to it changes nothing")
    started, release, tid = threading.Event(), threading.Event(), []

    def wait():
        tid.append(threading.get_native_id())
        started.set()
        release.wait()

    worker = threading.Thread(target=wait)
    worker.start()
    started.wait()
    try:
        threads.pin({allowed[-1]})
        assert os.sched_getaffinity(tid[0]) == {allowed[-1]}
        assert threads.affinity() == [allowed[-1]]
    finally:
        threads.pin(set(allowed))
        release.set()
        worker.join()
    assert threads.affinity() == allowed


def _burn(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


@pytest.mark.parametrize("workers", [1, 2])
def test_meter_counts_the_threads_that_ran(workers):
    """Workers burn CPU while the measuring thread waits: only they count."""
    burnt, release, tids = threading.Barrier(workers + 1), threading.Event(), []

    def work():
        tids.append(threading.get_native_id())
        _burn(0.1)
        burnt.wait()
        release.wait()  # alive until the snapshot after the block has read its clock

    pool = [threading.Thread(target=work) for _ in range(workers)]
    meter = threads.CpuMeter()
    before, t0 = threads.snapshot(), time.perf_counter_ns()
    for t in pool:
        t.start()
    burnt.wait()
    wall = time.perf_counter_ns() - t0
    meter.add(before, threads.snapshot(), wall)
    release.set()
    for t in pool:
        t.join()
    assert meter.threads() == workers
    for tid in tids:
        assert meter.cpu[tid] >= 0.1e9 * 0.9  # each worker's own clock, not the wall's
    assert 0.0 < meter.cores_busy() <= workers + 0.1


def test_a_slow_system_runs_fewer_rounds_than_the_others(monkeypatch):
    """A system slower than SLOW_CALL_NS a call is timed in slow_rounds rounds only."""
    from benchmarks import run
    from benchmarks.workloads import Runner

    monkeypatch.setattr(run, "SLOW_CALL_NS", 2e6)
    calls = {"fast": 0, "slow": 0}

    def fast():
        calls["fast"] += 1

    def slow():
        calls["slow"] += 1
        time.sleep(0.004)

    config = {"rounds": 4, "slow_rounds": 2, "block_ms": 0.1, "warm_calls": 1}
    times, inner, _ = run.measure({"fast": Runner(fast), "slow": Runner(slow)}, config)
    assert (len(times["fast"]), len(times["slow"])) == (4, 2)
    assert inner["slow"] == 1 and calls["slow"] == 1 + 2  # no warm-up calls, one timed
    assert calls["fast"] == 1 + 1 + 3 + 4 * inner["fast"]


def test_harness_writes_both_tables_with_threads():
    """One tiny workload through the timing loop of each table, then the report."""
    from benchmarks import run

    wl = next(w for w in WORKLOADS if w.key == "W1")
    config = {"rounds": 2, "slow_rounds": 1, "block_ms": 0.2, "warm_calls": 1}
    tables = {}
    for table in run.TABLES:
        systems = [s for s in workloads.systems(table)
                   if s.name in ("hand Numba", "srcxform compiled")]
        result = run.bench_workload(wl, systems, {}, config)
        for row in result["rows"]:
            assert row["status"] == "ok", row
            assert row["threads"] >= 1 and row["median_ns"] > 0
        tables[table] = {"meta": {"affinity": threads.affinity(), "harness_ns": 50.0,
                                  "blas_threads": "?", "numba_threads": 1},
                         "workloads": [result]}
    report = {"meta": {"date": "-", "mode": "test", "cpu": "-", "cores": 2, "python": "-",
                       "versions": {}, "skipped": []},
              "tables": tables, "recompile": None, "first_call": None}
    report["targets"] = run.evaluate_targets(tables, None, None)
    text = run.markdown(report)
    for title in run.TABLE_TITLES.values():
        assert f"## {title}" in text
    assert text.count(" thr |") >= 2 * len(run.TABLES)
    assert {t["table"] for t in report["targets"]} == {threads.SERIAL}


def test_report_shows_tiered_first_calls():
    """The tiered-against-blocking targets and table, from first calls as first_calls
    records them (no JAX here: the first call is shown, not judged)."""
    from benchmarks import run

    def timing(first, native, eager):
        return {"first_ms": first, "native_ms": native, "tier0_calls": eager, "warm_us": 1.0}

    first = {"cold": {"W1": 40.0}, "warm_ms": {"W1": 300.0}, "floor_ms": 290.0,
             "import_ms": {"srcxform": 300.0, "numba": 200.0}, "errors": [], "table": "serial",
             "tiered": {"W1": timing(8.0, 700.0, 12)},
             "blocking": {"W1": timing(600.0, 600.0, 0)}}
    targets = run.evaluate_targets({}, None, first)
    by_name = {t["name"]: t for t in targets}
    assert by_name["W1 first call, tiered vs JAX's first call"]["status"] == "n/a"
    native = by_name["W1 time to native, tiered vs blocking"]
    assert native["status"] == "PASS" and native["measured"].startswith("1.17×")
    report = {"meta": {"date": "-", "mode": "test", "cpu": "-", "cores": 2, "python": "-",
                       "versions": {}, "skipped": []},
              "tables": {}, "recompile": None, "first_call": first, "targets": targets}
    assert "| W1 | 8 ms | 700 ms | 12 | 600 ms | 1 µs | 1 µs |" in run.markdown(report)


def test_a_further_functions_first_call_is_judged_less_its_next_call():
    """W9's step takes milliseconds itself: the target is on what its first call adds."""
    from benchmarks import run

    first = {"cold": {"W1": 40.0, "W9": 900.0}, "warm_ms": {"W1": 300.0, "W9": 12.0},
             "warm_load_ms": {"W1": 290.0, "W9": 4.0}, "floor_ms": 295.0,
             "import_ms": {"srcxform": 300.0, "numba": 200.0}, "errors": [],
             "table": "serial", "tiered": {}, "blocking": {}}
    by_name = {t["name"]: t for t in run.evaluate_targets({}, None, first)}
    further = by_name["new process, warm cache: each further function, less its next call"]
    assert further["status"] == "PASS"
    assert further["measured"] == "max 4.0 ms (W9: first call 12.0 ms)"
