"""Runs the benchmarks and writes results.json, results.md and chart.png.

    python -m benchmarks.run [--quick] [--only W1,W3] [--tables serial,all-cores]

Two tables, each measured in a new process of its own, so every library starts its thread
pools under that table's conditions: **serial**, the process pinned to one core (every
thread, with sched_setaffinity) and every pool asked for one thread; **all cores**,
srcxform compiled with parallel=True and every other system at its defaults. For each
system the tables record the threads that actually ran during its timed blocks (per-thread
CPU clocks from /proc/self/task; benchmarks/threads.py), and the CPU time ÷ wall time.

Each system's result is checked against the workload's reference before it is timed; a
system that raises or gives a wrong result is recorded as FAIL or WRONG, not timed.
Timing is interleaved: in every round each system runs one block of calls (the order
rotates), so a noisy, shared machine slows all systems alike; a ratio to hand Numba is
the median over rounds of the two blocks' ratio. First calls are timed in this process
(its srcxform cache folder starts empty) and, for srcxform, in new processes
(benchmarks/firstcall.py): cold, with a fresh cache; and warm, with the disk cache
filled, against the first call of a trivial cached @njit function (its decoration included:
that is where Numba starts its compiler target) as the floor.
"""

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks import threads  # imports no NumPy: nothing may start a pool before pinning

NS = time.perf_counter_ns
TABLES = (threads.SERIAL, threads.ALL_CORES)
TABLE_TITLES = {threads.SERIAL: "Serial: every system pinned to one core",
                threads.ALL_CORES: "All cores: srcxform parallel=True, the others at their "
                                   "defaults"}

FULL = {"rounds": 21, "slow_rounds": 5, "block_ms": 10.0, "warm_calls": 3,
        "cold": ["W1", "W2", "W3-1e3", "W4", "W5", "W6", "W9"], "reps": 9}
QUICK = {"rounds": 7, "slow_rounds": 3, "block_ms": 4.0, "warm_calls": 1,
         "cold": ["W1", "W5"], "reps": 1}
# CI's speed guard (benchmarks/guard.py): the quick sizes, with more and longer blocks,
# as its verdict must hold on a shared machine.
GUARD = {**QUICK, "rounds": 15, "block_ms": 10.0}
# A system whose one call takes longer than this (PyTorch and TensorFlow eager on W7's
# 1,000 steps: seconds) is timed in the first slow_rounds rounds only, or one workload
# would take most of an hour; its row records how many rounds it ran.
SLOW_CALL_NS = 50e6

MAIN = "srcxform compiled"
REFERENCE = "hand Numba"


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


# ----- timing -----


def _block(call, n):
    gc_was = gc.isenabled()
    gc.disable()
    try:
        t0 = NS()
        for _ in range(n):
            call()
        return (NS() - t0) / n
    finally:
        if gc_was:
            gc.enable()


def measure(runners, config):
    """{name: [ns per call, one per round]} with interleaved, rotating blocks, and
    {name: CpuMeter}: each thread's CPU time over that system's blocks."""
    inner, rounds = {}, {}
    for name, runner in runners.items():
        one = _block(runner.call, 1)
        slow = one > SLOW_CALL_NS
        if not slow:
            for _ in range(config["warm_calls"]):
                runner.call()
            one = statistics.median(_block(runner.call, 1) for _ in range(3))
        inner[name] = max(1, min(200_000, int(config["block_ms"] * 1e6 / max(one, 1.0))))
        rounds[name] = config["slow_rounds"] if slow else config["rounds"]
    names = list(runners)
    times = {name: [] for name in names}
    meters = {name: threads.CpuMeter() for name in names}
    for r in range(config["rounds"]):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            if r >= rounds[name]:
                continue
            before = threads.snapshot()
            t = _block(runners[name].call, inner[name])
            meters[name].add(before, threads.snapshot(), t * inner[name])
            times[name].append(t)
    return times, inner, meters


NOOP = "(no-op)"  # timed in every round: the harness's own share of a time


def _noop_runner():
    from benchmarks.workloads import Runner

    return Runner(lambda: None)


def paired_ratio(a, b):
    """The median over rounds of a[r] / b[r]."""
    return statistics.median(x / y for x, y in zip(a, b)) if a and b else None


def _quantile(values, q):
    values = sorted(values)
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


# ----- one workload -----


def _error(err):
    frames = traceback.extract_tb(err.__traceback__)
    where = f" ({Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}{where}"[:400]


def bench_workload(wl, systems, available, config):
    from benchmarks.workloads import CheckFailed, check

    rows, runners = [], {}
    for system in systems:
        row = {"system": system.name, "peer": system.peer, "aux": system.aux,
               "status": "ok", "error": None}
        if system.requires and not available.get(system.requires):
            continue
        try:
            runner = system.build(wl)
        except Exception as err:  # noqa: BLE001 - recorded, not hidden
            rows.append({**row, "status": "FAIL", "error": _error(err)})
            continue
        if runner is None:
            continue  # the system does not run this workload
        try:
            if wl.kind == "sgd":
                runner.reset()
            t0 = NS()
            result = runner.call()
            row["first_call_ms"] = (NS() - t0) / 1e6
            check(wl, runner, first=True if wl.kind == "sgd" else result)
        except CheckFailed as err:
            row.update(status="WRONG", error=str(err))
        except Exception as err:  # noqa: BLE001
            row.update(status="FAIL", error=_error(err))
        if row["status"] == "ok":
            runners[system.name] = runner
        else:
            log(f"  {wl.key} {system.name}: {row['status']} {row['error']}")
        rows.append(row)
    t0 = NS()
    runners[NOOP] = _noop_runner()
    times, inner, meters = measure(runners, config)
    reference = times.get(REFERENCE)
    for row in rows:
        t = times.get(row["system"])
        if not t:
            continue
        row.update(median_ns=statistics.median(t), p25_ns=_quantile(t, 0.25),
                   p75_ns=_quantile(t, 0.75), calls_per_block=inner[row["system"]],
                   rounds=len(t), ratio=paired_ratio(t, reference) if reference else None,
                   **meters[row["system"]].summary())
    log(f"  timed {len(runners)} systems in {(NS() - t0) / 1e9:.1f} s")
    return {"key": wl.key, "family": wl.family, "kind": wl.kind, "title": wl.title,
            "unit": wl.unit, "steps": wl.steps or None, "flops": wl.flops or None,
            "rows": rows, "times_ns": times}


# ----- checks that are not a timing table -----


def recompile_check():
    """Fresh compiled functions called at several sizes: one trace and one kernel each."""
    import numpy as np

    import srcxform
    from benchmarks import workloads as w

    rng = np.random.default_rng(1)
    cases = {
        "W3 rosenbrock, n": (srcxform.differentiable(w.rosenbrock),
                             [(n, (rng.uniform(-1, 1, n),)) for n in (10, 1000, 100_000)]),
        "W4 logreg, rows": (srcxform.differentiable(w.logreg, wrt=(0, 1)),
                            [(m, (np.zeros(50), np.array(0.0), rng.standard_normal((m, 50)),
                                  (rng.random(m) < 0.5).astype(float)))
                             for m in (1000, 500, 1500)]),
        "W5 mlp, batch": (srcxform.differentiable(w.mlp),
                          [(b, ([rng.standard_normal((64, 128)), np.zeros(128),
                                 rng.standard_normal((128, 10)), np.zeros(10)],
                                rng.standard_normal((b, 64)), np.eye(10)[rng.integers(0, 10, b)]))
                           for b in (256, 100, 512)]),
    }
    out = {}
    for name, (fn, calls) in cases.items():
        entry = {"sizes": [s for s, _ in calls], "first_call_ms": []}
        try:
            for _, args in calls:
                t0 = NS()
                fn.grad(*args)
                entry["first_call_ms"].append((NS() - t0) / 1e6)
            info = fn.cache_info()
            entry.update(misses=info.misses, kernels=info.kernels,
                         numba_signatures=_numba_signatures(fn),
                         ok=info.misses == 1 and info.kernels == 1)
        except Exception as err:  # noqa: BLE001
            entry.update(ok=False, error=_error(err))
        out[name] = entry
    return out


def _numba_signatures(fn):
    """How many machine-code specializations Numba made (internal; None if unknown)."""
    try:
        total = 0
        for kernels in fn._kernels.values():
            for k in kernels:
                compiled = getattr(k, "fn", k)
                dispatcher = getattr(compiled, "dispatcher", compiled)
                total += len(dispatcher.signatures)
        return total
    except Exception:  # noqa: BLE001 - srcxform's internals may change
        return None


def _on_every_core():
    """A child's affinity (subprocess's preexec_fn): every core of the machine, whatever its
    parent was pinned to."""
    os.sched_setaffinity(0, range(os.cpu_count()))


def first_calls(config, keys):
    """srcxform's first calls in new processes: cold (fresh disk cache), warm (filled
    cache), and the floor (a trivial cached @njit function)."""
    cache = tempfile.mkdtemp(prefix="srcxform-bench-firstcall-")
    numba_cache = tempfile.mkdtemp(prefix="srcxform-bench-floor-")
    env = {**os.environ, "SRCXFORM_CACHE_DIR": cache, "PYTHONPATH": str(ROOT) + os.pathsep
           + os.environ.get("PYTHONPATH", "")}
    env.pop("SRCXFORM_CHECK", None)

    def run(*args, extra=None, all_cores=False):
        child_env = {**env, **(extra or {})}
        if all_cores:  # the libraries' default pools, on every core of the machine
            child_env = {k: v for k, v in child_env.items() if k not in threads.POOL_VARS}
        proc = subprocess.run([sys.executable, "-m", "benchmarks.firstcall", *args],
                              check=False, cwd=ROOT, env=child_env,
                              preexec_fn=_on_every_core if all_cores else None,
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"firstcall {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])

    out = {"cold": {}, "warm": [], "floor": [], "errors": [], "tiered": {}, "blocking": {}}
    # Tiered against blocking, each in a new process that has not imported Numba, with a
    # fresh cache folder of its own (the kernel compiles), on every core: tiered execution
    # compiles in a second process, which pinned beside its parent to one core would
    # only take turns with it (time to native 2.7-3.9x blocking, against 1.8x unpinned).
    for key in keys:
        for mode in ("blocking", "tiered"):
            try:
                fresh = tempfile.mkdtemp(prefix=f"srcxform-bench-{mode}-")
                got = run(mode, key, extra={"SRCXFORM_CACHE_DIR": fresh}, all_cores=True)
                out[mode][key] = {k: got[k][key] for k in
                                  ("first_ms", "native_ms", "tier0_calls", "warm_us")}
                log(f"  {mode} {key}: first call {got['first_ms'][key]:.1f} ms, native after "
                    f"{got['native_ms'][key]:.1f} ms")
            except Exception as err:  # noqa: BLE001
                out["errors"].append(_error(err))
    # Each cold process compiles only its own workload, into the shared folder, so after
    # the loop the folder holds every kernel and the warm runs find them all.
    for key in keys:
        try:
            out["cold"][key] = run("cold", key)["first_ms"][key]
            log(f"  cold first call {key}: {out['cold'][key]:.1f} ms")
        except Exception as err:  # noqa: BLE001
            out["errors"].append(_error(err))
    floor_env = {"NUMBA_CACHE_DIR": numba_cache}
    try:
        run("floor", extra=floor_env)  # fills NUMBA_CACHE_DIR
        for _ in range(config["reps"]):
            out["floor"].append(run("floor", extra=floor_env))
            out["warm"].append(run("warm", ",".join(out["cold"])))
    except Exception as err:  # noqa: BLE001
        out["errors"].append(_error(err))
    for e in out["errors"]:
        log("  first-call error:", e)
    out["floor_ms"] = _median([r["first_ms"]["njit"] for r in out["floor"]])
    keys_done = list(out["cold"])
    out["warm_ms"] = {k: _median([r["first_ms"][k] for r in out["warm"]]) for k in keys_done}
    # The loading a further function's first call does: its time less the next calls'
    # (W9's step itself takes milliseconds).
    out["warm_load_ms"] = {k: _median([r["first_ms"][k] - r["then_ms"][k]
                                       for r in out["warm"]]) for k in keys_done}
    out["import_ms"] = {"srcxform": _median([r["import_ms"] for r in out["warm"]]),
                        "numba": _median([r["import_ms"] for r in out["floor"]])}
    return out


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


# ----- targets -----


def _row(results, key, system):
    for wl in results:
        if wl["key"] == key:
            for row in wl["rows"]:
                if row["system"] == system:
                    return row
    return None


def _times(results, key, system):
    for wl in results:
        if wl["key"] == key:
            return wl["times_ns"].get(system)
    return None


def _fastest_peer(results, key):
    """The row of the fastest peer that ran `key` correctly, or None."""
    peers = [r for wl in results if wl["key"] == key for r in wl["rows"]
             if r["peer"] and r["status"] == "ok"]
    return min(peers, key=lambda r: r["median_ns"]) if peers else None


def evaluate_targets(tables, recompile, first):
    """Serial targets from the serial table, parallel ones from the all-cores table: a
    ratio is only taken between times measured in the same rounds of one process."""
    serial = tables.get(threads.SERIAL, {}).get("workloads", [])
    all_cores = tables.get(threads.ALL_CORES, {}).get("workloads", [])
    targets = []

    def add(name, target, measured, passed, key=None, table=threads.SERIAL):
        status = "n/a" if passed is None else ("PASS" if passed else "MISS")
        targets.append({"name": name, "target": target, "measured": measured,
                        "status": status, "key": key, "table": table})

    def failed(results, key):
        row = _row(results, key, MAIN)
        if row is None:
            return "not run"
        return None if row["status"] == "ok" else f"{row['status']}: {row['error']}"

    for key in ("W1", "W2", "W6"):
        if _row(serial, key, MAIN) is None:
            continue
        bad = failed(serial, key)
        if bad:
            add(f"{key} compiled call", "≤ 0.6 µs", bad, False, key)
            continue
        t, noop = _times(serial, key, MAIN), _times(serial, key, NOOP)
        net = statistics.median(a - b for a, b in zip(t, noop))
        add(f"{key} compiled call", "≤ 0.6 µs",
            f"{fmt_ns(net)} (median {fmt_ns(_row(serial, key, MAIN)['median_ns'])}, less the "
            f"harness's {statistics.median(noop):.0f} ns)", net <= 600, key)
    for key, limit in (("W1", 1.2), ("W6", 1.2), ("W3-10", 1.5), ("W3-1e3", 1.5),
                       ("W3-1e6", 1.2), ("W4", 1.2), ("W7", 1.5)):
        row = _row(serial, key, MAIN)
        if row is None:
            continue
        bad = failed(serial, key)
        ratio = row.get("ratio")
        add(f"{key} compiled vs hand Numba", f"≤ {limit}×",
            bad or (f"{ratio:.2f}×" if ratio else "no reference"),
            False if bad else (ratio <= limit if ratio else None), key)
    for table, results in ((threads.SERIAL, serial), (threads.ALL_CORES, all_cores)):
        for wl in results:
            if wl["kind"] == "gemm" or (table == threads.ALL_CORES and wl["key"] != "W3-1e6"):
                continue  # the issue's all-cores target is W3 n=1e6's
            name, key = f"{wl['key']} compiled vs fastest peer", wl["key"]
            best, bad = _fastest_peer(results, key), failed(results, key)
            if bad:
                add(name, "≤ 1×", bad, False, key, table)
            elif best is None:
                add(name, "≤ 1×", "no peer installed", None, key, table)
            else:
                ratio = paired_ratio(_times(results, key, MAIN), _times(results, key,
                                                                        best["system"]))
                add(name, "≤ 1×", f"{ratio:.2f}× {best['system']} "
                    f"({fmt_ns(best['median_ns'])})", ratio <= 1.0, key, table)
    tf_function = "TensorFlow tf.function"
    if _row(serial, "W8", MAIN) is not None and _row(serial, "W8", tf_function) is not None:
        bad = failed(serial, "W8")
        ratio = None if bad else paired_ratio(_times(serial, "W8", MAIN),
                                              _times(serial, "W8", tf_function))
        add("W8 compiled vs tf.function", "≤ 0.1×", bad or f"{ratio:.3f}×",
            False if bad else ratio <= 0.1, "W8")
    for key in ("W3-1e3", "W3-1e6"):
        grad_t = _times(serial, key, MAIN)
        fwd_t = _times(serial, key, "srcxform compiled, forward only")
        if grad_t and fwd_t:
            ratio = paired_ratio(grad_t, fwd_t)
            add(f"{key} gradient vs compiled forward", "≤ 2×", f"{ratio:.2f}×", ratio <= 2.0,
                key)
        elif _row(serial, key, MAIN) is not None:
            add(f"{key} gradient vs compiled forward", "≤ 2×",
                failed(serial, key) or "not measured", False, key)
    if first is not None:
        for key, limit in (("W1", 150.0), ("W5", 1000.0)):
            if key in first["cold"]:
                ms = first["cold"][key]
                add(f"{key} first call, cold (Numba warmed)", f"< {limit:g} ms",
                    f"{ms:.0f} ms", ms < limit, key)
            elif key in (first.get("requested") or []):
                add(f"{key} first call, cold (Numba warmed)", f"< {limit:g} ms", "failed",
                    False, key)
        # JAX's first call on every core, as the tiered processes ran, where measured.
        every_core = tables.get(threads.ALL_CORES, {}).get("workloads", [])
        for key in ("W1", "W2", "W3-1e3", "W4", "W5"):
            tier, block = first.get("tiered", {}).get(key), first.get("blocking", {}).get(key)
            if not tier or not block:
                continue
            jax = _row(every_core, key, "JAX jit(grad)") or _row(serial, key, "JAX jit(grad)")
            jax_ms = jax.get("first_call_ms") if jax and jax["status"] == "ok" else None
            if jax_ms:
                ratio = tier["first_ms"] / jax_ms
                add(f"{key} first call, tiered vs JAX's first call", "≤ 0.25×",
                    f"{ratio:.2f}× ({tier['first_ms']:.0f} ms, JAX {jax_ms:.0f} ms)",
                    ratio <= 0.25, key)
            else:
                add(f"{key} first call, tiered vs JAX's first call", "≤ 0.25×",
                    f"no JAX: {tier['first_ms']:.0f} ms (blocking "
                    f"{block['first_ms']:.0f} ms)", None, key)
            ratio = tier["native_ms"] / block["native_ms"]
            add(f"{key} time to native, tiered vs blocking", "≤ 1.2×",
                f"{ratio:.2f}× ({tier['native_ms']:.0f} ms, {tier['tier0_calls']} eager "
                f"calls; blocking {block['native_ms']:.0f} ms)", ratio <= 1.2, key)
        keys = list(first["warm_ms"])
        if keys and first["floor_ms"] is not None and first["warm_ms"][keys[0]] is not None:
            extra = first["warm_ms"][keys[0]] - first["floor_ms"]
            add("new process, warm cache: first call − trivial @njit",
                "≤ 10 ms", f"{extra:+.0f} ms ({keys[0]}: {first['warm_ms'][keys[0]]:.0f} ms, "
                f"floor {first['floor_ms']:.0f} ms)", extra <= 10.0)
            further = {k: first["warm_load_ms"][k] for k in keys[1:]}
            if further:
                worst = max(further, key=further.get)
                add("new process, warm cache: each further function, less its next call",
                    "≤ 5 ms", f"max {further[worst]:.1f} ms ({worst}: first call "
                    f"{first['warm_ms'][worst]:.1f} ms)", further[worst] <= 5.0)
    if recompile:
        bad = [name for name, e in recompile.items() if not e.get("ok")]
        detail = "; ".join(f"{name}: {e.get('misses', '?')} traces, {e.get('kernels', '?')} kernels"
                           + (f" ({e['error']})" if e.get("error") else "")
                           for name, e in recompile.items())
        add("no recompilation across sizes", "1 trace per function", detail, not bad)
    serial_kernel = _times(all_cores, "W3-1e6", "srcxform compiled, serial kernel")
    par = _times(all_cores, "W3-1e6", MAIN)
    if serial_kernel and par:
        speedup = paired_ratio(serial_kernel, par)
        add("W3 n=1e6 parallel=True vs serial kernel", f"≥ 1.6× on {os.cpu_count()} cores",
            f"{speedup:.2f}×", speedup >= 1.6, "W3-1e6", threads.ALL_CORES)
    elif _row(all_cores, "W3-1e6", MAIN) is not None:
        add("W3 n=1e6 parallel=True vs serial kernel", "≥ 1.6×", failed(all_cores, "W3-1e6"),
            False, "W3-1e6", threads.ALL_CORES)
    return targets


# ----- writing -----


def fmt_ns(ns):
    if ns is None:
        return "—"
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.3g} µs"
    if ns < 1e9:
        return f"{ns / 1e6:.3g} ms"
    return f"{ns / 1e9:.3g} s"


def fmt_ratio(ratio):
    if ratio is None:
        return "—"
    return f"{ratio:,.0f}×" if ratio >= 10 else f"{ratio:.2f}×"


def fmt_ms(ms):
    return "—" if ms is None else fmt_ns(ms * 1e6)


def fmt_threads(row):
    return f"{row['threads']} thr" if row.get("threads") is not None else "—"


def _table_conditions(name, meta):
    cores = ", ".join(str(c) for c in meta["affinity"])
    if name == threads.SERIAL:
        return (f"Every thread of the process pinned to core {cores} (sched_setaffinity, before "
                "any library started a pool); OpenMP, BLAS and Numba pools asked for one "
                "thread, PyTorch and TensorFlow set to one intra- and inter-op thread.")
    return (f"Cores {cores}, each library at its defaults (thread pools: "
            f"{meta['blas_threads']}; Numba: {meta['numba_threads']}); srcxform compiled with "
            "parallel=True, "
            "its serial kernel beside it where parallel's speedup is a target. "
            f"OMP_WAIT_POLICY: {meta.get('omp_wait_policy') or 'unset'} (srcxform sets "
            "PASSIVE as its parallel functions are made, before the peers are imported).")


def markdown(report):
    meta, tables = report["meta"], report["tables"]
    harness = _median([t["meta"]["harness_ns"] for t in tables.values()])
    lines = [
        "# srcxform benchmarks",
        "",
        f"{meta['date']} · {meta['mode']} · {meta['cpu']} ({meta['cores']} cores) · "
        f"Python {meta['python']} · " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()
                                                    if v),
        "",
        ("Median time per gradient call (W4, W5, W9: per SGD step, update included; W9-gemm: "
         "the step's five matrix products alone), its ratio to the hand-written Numba kernel "
         "timed in the same rounds, and `N thr`: the threads that ran during the system's "
         f"timed blocks (CPU time ≥ {threads.RAN_SHARE:.0%} of the blocks' wall time, from "
         "each thread's clock in /proc/self/task). Each table is measured in a process of its "
         f"own. Times include the harness's own {harness or 0:.0f} ns per call (a no-op "
         "through the same loop)."),
    ]
    for name, table in tables.items():
        lines += ["", f"## {TABLE_TITLES[name]}", "",
                  _table_conditions(name, table["meta"]), ""]
        lines += summary_table(table["workloads"])
    lines += blas_share(tables)
    lines += ["", "## All rows", "",
              ("| table | workload | system | median | × hand Numba | threads | cores busy "
               "| first call | target |"),
              "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    by_key = {}
    for t in report["targets"]:
        if t.get("key"):
            by_key.setdefault((t["table"], t["key"]), []).append(t)
    for name, table in tables.items():
        for wl in table["workloads"]:
            for row in wl["rows"]:
                if row["status"] != "ok":
                    med, ratio = f"**{row['status']}**", row["error"].replace("|", "\\|")
                else:
                    med = fmt_ns(row.get("median_ns"))
                    ratio = fmt_ratio(row.get("ratio"))
                target = ""
                if row["system"] == MAIN:
                    target = "; ".join(f"{t['target']} {t['status']}"
                                       for t in by_key.get((name, wl["key"]), []))
                busy = row.get("cores_busy")
                lines.append(f"| {name} | {wl['title']} | {row['system']} | {med} | {ratio} | "
                             f"{row.get('threads', '—')} | "
                             f"{'—' if busy is None else f'{busy:.2f}'} | "
                             f"{fmt_ms(row.get('first_call_ms'))} | {target} |")
    lines += ["", "## Targets", "", "| table | target | goal | measured | status |",
              "| --- | --- | --- | --- | --- |"]
    for t in report["targets"]:
        measured = str(t["measured"]).replace("|", "\\|")
        lines.append(f"| {t['table']} | {t['name']} | {t['target']} | {measured} | "
                     f"{t['status']} |")
    first = report.get("first_call")
    if first:
        imports = (f"Imports, not counted below: srcxform "
                   f"{fmt_ms(first['import_ms']['srcxform'])}, numba "
                   f"{fmt_ms(first['import_ms']['numba'])}. Floor: the first call of a trivial "
                   f"cached `@njit` function in a new process, its decoration included, "
                   f"{fmt_ms(first['floor_ms'])}. Measured from the {first['table']} table's "
                   "process, whose conditions the new processes inherit.")
        lines += ["", "## First calls in a new process (srcxform)", "", imports, "",
                  ("| workload | cold: fresh cache, Numba warmed | warm disk cache, in this "
                   "order | warm, less the next call |"), "| --- | ---: | ---: | ---: |"]
        load = first.get("warm_load_ms", {})
        for key, ms in first["cold"].items():
            lines.append(f"| {key} | {fmt_ms(ms)} | {fmt_ms(first['warm_ms'].get(key))} "
                         f"| {fmt_ms(load.get(key))} |")
        if first.get("tiered"):
            lines += ["", ("Tiered execution against a blocking first call, each in a new "
                           "process that has not imported Numba, with a fresh cache, on "
                           "every core with the libraries' default pools (tiered compiles "
                           "in a second process; JAX's first call to compare is the "
                           "all-cores table's): the "
                           "first call; the time until a call runs natively (calling in a "
                           "loop, from the first call's start); a warm call after it (median "
                           "of 30)."), "",
                      ("| workload | tiered: first call | tiered: native after | eager calls "
                       "| blocking: first call | warm call, tiered | warm call, blocking |"),
                      "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
            for key, tier in first["tiered"].items():
                block = first["blocking"].get(key, {})
                lines.append(f"| {key} | {fmt_ms(tier['first_ms'])} | "
                             f"{fmt_ms(tier['native_ms'])} | {tier['tier0_calls']} | "
                             f"{fmt_ms(block.get('first_ms'))} | "
                             f"{fmt_ns(tier['warm_us'] * 1e3)} | "
                             f"{fmt_ns(block['warm_us'] * 1e3) if block else '–'} |")
        for e in first["errors"]:
            lines.append(f"\nError: {e}")
    if report.get("recompile"):
        lines += ["", "## Recompilation across sizes", "",
                  ("| function | sizes | traces | kernels | Numba signatures "
                   "| first call at each size |"),
                  "| --- | --- | ---: | ---: | ---: | --- |"]
        for name, e in report["recompile"].items():
            calls = ", ".join(f"{ms:.2f} ms" for ms in e.get("first_call_ms", []))
            lines.append(f"| {name} | {e['sizes']} | {e.get('misses', '—')} | "
                         f"{e.get('kernels', '—')} | {e.get('numba_signatures') or '—'} | "
                         f"{calls or e.get('error', '')} |")
    if meta["skipped"]:
        lines += ["", "Not installed (skipped): " + ", ".join(meta["skipped"]) + "."]
    return "\n".join(lines) + "\n"


def summary_table(workloads):
    """Workloads down, main systems across: median (× hand Numba) and threads per cell."""
    names = []
    for wl in workloads:
        for row in wl["rows"]:
            if not row["aux"] and row["system"] not in names:
                names.append(row["system"])
    lines = ["| workload | " + " | ".join(names) + " |",
             "| --- |" + " ---: |" * len(names)]
    for wl in workloads:
        cells = []
        for name in names:
            row = next((r for r in wl["rows"] if r["system"] == name), None)
            if row is None:
                cells.append("—")
            elif row["status"] != "ok":
                cells.append(f"**{row['status']}**")
            elif row.get("ratio") is None or name == REFERENCE:
                cells.append(f"{fmt_ns(row.get('median_ns'))} · {fmt_threads(row)}")
            else:
                cells.append(f"{fmt_ns(row['median_ns'])} ({fmt_ratio(row['ratio'])}) · "
                             f"{fmt_threads(row)}")
        lines.append(f"| {wl['key']} | " + " | ".join(cells) + " |")
    return lines


def blas_share(tables):
    """W9's step beside its five GEMMs alone, per system: how much of a step is BLAS."""
    lines = []
    for name, table in tables.items():
        wls = {wl["key"]: wl for wl in table["workloads"]}
        step, gemm = wls.get("W9"), wls.get("W9-gemm")
        if not step or not gemm:
            continue
        if not lines:
            lines = ["", "## W9: how much of a training step is BLAS", "",
                     ("The step's five GEMMs alone, on each system's own BLAS (srcxform and "
                      "hand Numba: SciPy's OpenBLAS, called from compiled code; hand NumPy: "
                      "NumPy's OpenBLAS; PyTorch: MKL; JAX and TensorFlow: their own CPU "
                      f"kernels), {gemm['flops'] / 1e6:.0f} MFLOP per step."), "",
                     ("| table | system | step | GEMMs alone | GEMM GFLOP/s | GEMMs ÷ step "
                      "| GEMM threads |"),
                     "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
        for g in gemm["rows"]:
            if g["status"] != "ok" or g.get("median_ns") is None:
                continue
            s = next((r for r in step["rows"] if r["system"] == g["system"]
                      and r.get("median_ns")), None)
            share = f"{g['median_ns'] / s['median_ns']:.0%}" if s else "—"
            lines.append(f"| {name} | {g['system']} | {fmt_ns(s and s['median_ns'])} | "
                         f"{fmt_ns(g['median_ns'])} | {gemm['flops'] / g['median_ns']:.1f} | "
                         f"{share} | {fmt_threads(g)} |")
    return lines


def chart(report, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("  matplotlib is not installed: no chart")
        return False
    tables = report["tables"]
    wls = tables.get(threads.SERIAL, next(iter(tables.values())))["workloads"]
    names = []
    for wl in wls:
        for row in wl["rows"]:
            if not row["aux"] and row["system"] not in names:
                names.append(row["system"])
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(12, 9), height_ratios=[3, 2])
    width = 0.8 / max(1, len(names))
    cmap = plt.get_cmap("tab10")
    for i, name in enumerate(names):
        xs, ys = [], []
        for j, wl in enumerate(wls):
            row = next((r for r in wl["rows"] if r["system"] == name), None)
            if row and row.get("ratio"):
                xs.append(j + (i - (len(names) - 1) / 2) * width)
                ys.append(row["ratio"])
            elif row and row["status"] != "ok":
                ax.annotate("✗", (j + (i - (len(names) - 1) / 2) * width, 1.0), ha="center",
                            color="red", fontsize=12)
        ax.bar(xs, ys, width, label=name, color=cmap(i % 10),
               edgecolor="black" if name == MAIN else None, linewidth=1.5)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(wls)), [wl["key"] for wl in wls])
    ax.set_ylabel("time ÷ hand Numba (log; lower is better)")
    ax.set_title("Median time per gradient call / SGD step, relative to a hand-written "
                 "Numba kernel (serial table: one core)")
    ax.legend(fontsize=8, ncol=3)
    ax.grid(axis="y", which="both", alpha=0.3)
    first = report.get("first_call")
    if first and first["cold"]:
        keys = list(first["cold"])
        xs = range(len(keys))
        cold = ax2.bar([x - 0.2 for x in xs], [first["cold"][k] for k in keys], 0.4,
                       label="cold: fresh cache, Numba warmed (trace + codegen + compile)",
                       color=cmap(1))
        warm = ax2.bar([x + 0.2 for x in xs], [first["warm_ms"].get(k) or 0 for k in keys],
                       0.4, label="new process, warm disk cache (calls in this order)",
                       color=cmap(2))
        for bars in (cold, warm):
            ax2.bar_label(bars, fmt="%.0f", fontsize=8)
        if first["floor_ms"]:
            ax2.axhline(first["floor_ms"], color="black", linestyle="--", linewidth=0.8,
                        label="first call of a trivial cached @njit")
        ax2.set_yscale("log")
        ax2.set_xticks(list(xs), keys)
        ax2.set_ylabel("ms (log)")
        ax2.set_title("srcxform first call in a new process")
        ax2.legend(fontsize=8)
        ax2.grid(axis="y", which="both", alpha=0.3)
    else:
        ax2.set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ----- main -----


def _meta(config_name, available, import_ms):
    """What is true of the whole run: the machine, the versions, the peers."""
    import numba
    import numpy

    import srcxform
    from benchmarks import peers

    versions = {"srcxform": srcxform.__version__, "numpy": numpy.__version__,
                "numba": numba.__version__}
    for name, ok in available.items():
        versions[name] = peers.version(name) if ok else None
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    return {"date": time.strftime("%Y-%m-%d %H:%M"), "mode": config_name, "cpu": cpu,
            "cores": os.cpu_count(), "python": platform.python_version(),
            "versions": versions, "peer_import_ms": import_ms,
            "skipped": [k for k, ok in available.items() if not ok]}


def _table_meta(results):
    """The conditions one table ran under, as the process saw them at its end."""
    import numba

    try:
        import threadpoolctl

        pools = [{k: i.get(k) for k in ("internal_api", "prefix", "num_threads")}
                 for i in threadpoolctl.threadpool_info()]
        blas = ", ".join(sorted({f"{i['prefix']} {i['num_threads']}" for i in pools}))
    except ImportError:
        pools, blas = "threadpoolctl not installed", "threads unknown"
    return {"affinity": threads.affinity(), "threads_at_end": len(threads.tids()),
            "pool_env": {v: os.environ.get(v) for v in threads.POOL_VARS},
            # srcxform sets it as its parallel functions are made (srcxform/jit/openmp.py),
            # before the peers load: every OpenMP runtime loaded later reads it too.
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "numba_threads": numba.config.NUMBA_NUM_THREADS, "threadpools": pools,
            "blas_threads": blas,
            "harness_ns": _median([statistics.median(wl["times_ns"][NOOP])
                                   for wl in results if wl["times_ns"].get(NOOP)])}


def _parser():
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="fewer rounds and first-call processes (a few minutes)")
    parser.add_argument("--only", help="workloads to run: keys or families, e.g. W1,W3-1e6,W9")
    parser.add_argument("--systems", help="systems to run (substrings of their names); "
                        "hand Numba always runs")
    parser.add_argument("--no-subprocess", action="store_true",
                        help="skip the first-call measurements in new processes")
    parser.add_argument("--tables", default=",".join(TABLES),
                        help=f"tables to measure (default {','.join(TABLES)})")
    parser.add_argument("--core", type=int,
                        help="the core of the serial table (default: the highest allowed)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"),
                        help="output folder (default: benchmarks/results)")
    # One table's process, started by the run itself.
    parser.add_argument("--table", choices=TABLES, help=argparse.SUPPRESS)
    parser.add_argument("--json", help=argparse.SUPPRESS)
    parser.add_argument("--extras", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--guard", action="store_true", help=argparse.SUPPRESS)
    return parser


def run_table(args):
    """Measures one table in this process (a new one: its libraries not yet imported) and
    writes it to args.json."""
    config = GUARD if args.guard else QUICK if args.quick else FULL
    started = NS()
    if args.table == threads.SERIAL:
        core = max(os.sched_getaffinity(0)) if args.core is None else args.core
        threads.pin({core})  # before any pool exists, so every pool inherits it
        threads.limit_pools(1)
    else:
        for var in threads.POOL_VARS:  # the libraries' defaults, whatever the caller set
            os.environ.pop(var, None)
    # An empty srcxform cache, so first calls in this process compile.
    os.environ["SRCXFORM_CACHE_DIR"] = tempfile.mkdtemp(prefix="srcxform-bench-")
    os.environ.pop("SRCXFORM_CHECK", None)
    # The rows time native calls, and the first call a blocking compile; tiered first
    # calls are timed in new processes (first_calls).
    os.environ["SRCXFORM_TIERED"] = "0"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # TensorFlow's and XLA's C++ logs
    import warnings

    import numba

    from benchmarks import peers, workloads

    # parallel=True on a function with no loop to split says so once per kernel
    warnings.filterwarnings("ignore", category=numba.NumbaPerformanceWarning)
    peers.THREADS = 1 if args.table == threads.SERIAL else None

    @numba.njit
    def _warm(x):  # "in a process where Numba already compiled something"
        return x + 1.0

    _warm(1.0)
    available = peers.available()
    import_ms = {}
    for name, ok in available.items():
        if ok:
            t0 = NS()
            try:
                peers.load(name)
                import_ms[name] = (NS() - t0) / 1e6
            except Exception as err:  # noqa: BLE001 - a broken peer is skipped
                log(f"  {name} failed to import: {_error(err)}")
                available[name] = False
    only = args.only.split(",") if args.only else None
    systems = workloads.systems(args.table)
    if args.systems:
        wanted = args.systems.split(",")
        systems = [s for s in systems
                   if s.name == REFERENCE or any(w.lower() in s.name.lower() for w in wanted)]
    results = []
    for wl in workloads.make_workloads(only=only, short=args.quick):
        log(f"[{args.table}] {wl.key}: {wl.title} ({(NS() - started) / 1e9:.0f} s)")
        results.append(bench_workload(wl, systems, available, config))
    out = {"table": args.table, "meta": _meta("quick" if args.quick else "full", available,
                                              import_ms),
           "table_meta": _table_meta(results), "workloads": results,
           "recompile": None, "first_call": None}
    if args.extras and (not only or any(k in only for k in ("W3", "W4", "W5"))):
        log(f"recompilation across sizes ({(NS() - started) / 1e9:.0f} s)")
        out["recompile"] = recompile_check()
    if args.extras and not args.no_subprocess:
        keys = [k for k in config["cold"]
                if not only or k in only or k.split("-")[0] in only]
        if keys:
            log(f"first calls in new processes ({(NS() - started) / 1e9:.0f} s)")
            first = first_calls(config, keys)
            out["first_call"] = {**first, "requested": keys, "table": args.table}
    Path(args.json).write_text(json.dumps(out, default=float) + "\n")
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(argv)
    if args.table:
        return run_table(args)
    started = NS()
    tables = [t.strip() for t in args.tables.split(",") if t.strip()]
    unknown = set(tables) - set(TABLES)
    if unknown or not tables:
        _parser().error(f"--tables takes {', '.join(TABLES)}; got {args.tables}")
    parts = {}
    with tempfile.TemporaryDirectory(prefix="srcxform-bench-tables-") as tmp:
        for i, table in enumerate(tables):
            path = Path(tmp) / f"{table}.json"
            extras = ["--extras"] if i == 0 else []  # first calls, recompilation: once
            proc = subprocess.run([sys.executable, "-m", "benchmarks.run", *argv,
                                   "--table", table, "--json", str(path), *extras],
                                  cwd=ROOT, check=False)
            if proc.returncode != 0 or not path.exists():
                log(f"the {table} table failed (exit {proc.returncode})")
                return proc.returncode or 1
            parts[table] = json.loads(path.read_text())
    first = parts[tables[0]]
    report = {"meta": first["meta"],
              "tables": {t: {"meta": p["table_meta"], "workloads": p["workloads"]}
                         for t, p in parts.items()},
              "recompile": first["recompile"], "first_call": first["first_call"]}
    report["targets"] = evaluate_targets(report["tables"], report["recompile"],
                                         report["first_call"])
    report["meta"]["wall_s"] = (NS() - started) / 1e9
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(report, indent=1, default=float) + "\n")
    text = markdown(report)
    (out / "results.md").write_text(text)
    chart(report, out / "chart.png")
    print(text)
    log(f"wrote {out}/results.json, results.md, chart.png in {report['meta']['wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
