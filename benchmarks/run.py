"""Runs the benchmarks and writes results.json, results.md and chart.png.

    python -m benchmarks.run [--quick] [--only W1,W3] [--out benchmarks/results]

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
NS = time.perf_counter_ns

FULL = {"rounds": 21, "block_ms": 10.0, "warm_calls": 3,
        "cold": ["W1", "W2", "W3-1e3", "W4", "W5", "W6"], "reps": 9}
QUICK = {"rounds": 7, "block_ms": 4.0, "warm_calls": 1, "cold": ["W1", "W5"], "reps": 1}

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
    """{name: [ns per call, one per round]} with interleaved, rotating blocks."""
    inner = {}
    for name, runner in runners.items():
        for _ in range(config["warm_calls"]):
            runner.call()
        one = statistics.median(_block(runner.call, 1) for _ in range(3))
        inner[name] = max(1, min(200_000, int(config["block_ms"] * 1e6 / max(one, 1.0))))
    names = list(runners)
    times = {name: [] for name in names}
    for r in range(config["rounds"]):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(_block(runners[name].call, inner[name]))
    return times, inner


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
            check(wl, runner, first=result if wl.kind == "grad" else True)
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
    times, inner = measure(runners, config)
    reference = times.get(REFERENCE)
    for row in rows:
        t = times.get(row["system"])
        if not t:
            continue
        row.update(median_ns=statistics.median(t), p25_ns=_quantile(t, 0.25),
                   p75_ns=_quantile(t, 0.75), calls_per_block=inner[row["system"]],
                   rounds=len(t), ratio=paired_ratio(t, reference) if reference else None)
    log(f"  timed {len(runners)} systems in {(NS() - t0) / 1e9:.1f} s")
    return {"key": wl.key, "family": wl.family, "title": wl.title, "unit": wl.unit,
            "steps": wl.steps or None, "rows": rows, "_times": times}


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


def first_calls(config, keys):
    """srcxform's first calls in new processes: cold (fresh disk cache), warm (filled
    cache), and the floor (a trivial cached @njit function)."""
    cache = tempfile.mkdtemp(prefix="srcxform-bench-firstcall-")
    numba_cache = tempfile.mkdtemp(prefix="srcxform-bench-floor-")
    env = {**os.environ, "SRCXFORM_CACHE_DIR": cache, "PYTHONPATH": str(ROOT) + os.pathsep
           + os.environ.get("PYTHONPATH", "")}
    env.pop("SRCXFORM_CHECK", None)

    def run(*args, extra=None):
        proc = subprocess.run([sys.executable, "-m", "benchmarks.firstcall", *args],
                              check=False, cwd=ROOT, env={**env, **(extra or {})},
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"firstcall {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])

    out = {"cold": {}, "warm": [], "floor": [], "errors": []}
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
            return wl["_times"].get(system)
    return None


def evaluate_targets(results, recompile, first):
    targets = []

    def add(name, target, measured, passed, key=None, note=""):
        status = "n/a" if passed is None else ("PASS" if passed else "MISS")
        targets.append({"name": name, "target": target, "measured": measured,
                        "status": status, "key": key, "note": note})

    def failed(key):
        row = _row(results, key, MAIN)
        if row is None:
            return "not run"
        return None if row["status"] == "ok" else f"{row['status']}: {row['error']}"

    for key in ("W1", "W2", "W6"):
        row = _row(results, key, MAIN)
        if row is None:
            continue
        bad = failed(key)
        if bad:
            add(f"{key} compiled call", "≤ 0.6 µs", bad, False, key)
            continue
        t, noop = _times(results, key, MAIN), _times(results, key, NOOP)
        net = statistics.median(a - b for a, b in zip(t, noop))
        add(f"{key} compiled call", "≤ 0.6 µs",
            f"{fmt_ns(net)} (median {fmt_ns(row['median_ns'])}, less the harness's "
            f"{statistics.median(noop):.0f} ns)", net <= 600, key)
    for key, limit in (("W3-10", 1.5), ("W3-1e3", 1.5), ("W3-1e6", 1.2), ("W4", 1.2)):
        row = _row(results, key, MAIN)
        if row is None:
            continue
        bad = failed(key)
        ratio = row.get("ratio")
        add(f"{key} compiled vs hand Numba", f"≤ {limit}×",
            bad or (f"{ratio:.2f}×" if ratio else "no reference"),
            False if bad else (ratio <= limit if ratio else None), key)
    row = _row(results, "W5", MAIN)
    if row is not None:
        peers = [r for wl in results if wl["key"] == "W5" for r in wl["rows"]
                 if r["peer"] and r["status"] == "ok"]
        bad = failed("W5")
        if bad:
            add("W5 compiled step vs fastest peer", "≤ fastest peer", bad, False, "W5")
        elif not peers:
            add("W5 compiled step vs fastest peer", "≤ fastest peer", "no peer installed",
                None, "W5")
        else:
            best = min(peers, key=lambda r: r["median_ns"])
            ratio = paired_ratio(_times(results, "W5", MAIN), _times(results, "W5",
                                                                     best["system"]))
            add("W5 compiled step vs fastest peer", "≤ fastest peer",
                f"{ratio:.2f}× {best['system']} ({fmt_ns(best['median_ns'])})", ratio <= 1.0,
                "W5")
    for key in ("W3-1e3", "W3-1e6"):
        grad_t = _times(results, key, MAIN)
        fwd_t = _times(results, key, "srcxform compiled, forward only")
        if grad_t and fwd_t:
            ratio = paired_ratio(grad_t, fwd_t)
            add(f"{key} gradient vs compiled forward", "≤ 2×", f"{ratio:.2f}×", ratio <= 2.0,
                key)
        elif _row(results, key, MAIN) is not None:
            add(f"{key} gradient vs compiled forward", "≤ 2×", failed(key) or "not measured",
                False, key)
    if first is not None:
        for key, limit in (("W1", 150.0), ("W5", 1000.0)):
            if key in first["cold"]:
                ms = first["cold"][key]
                add(f"{key} first call, cold (Numba warmed)", f"< {limit:g} ms",
                    f"{ms:.0f} ms", ms < limit, key)
            elif key in (first.get("requested") or []):
                add(f"{key} first call, cold (Numba warmed)", f"< {limit:g} ms", "failed",
                    False, key)
        keys = list(first["warm_ms"])
        if keys and first["floor_ms"] is not None and first["warm_ms"][keys[0]] is not None:
            extra = first["warm_ms"][keys[0]] - first["floor_ms"]
            add("new process, warm cache: first call − trivial @njit",
                "≤ 10 ms", f"{extra:+.0f} ms ({keys[0]}: {first['warm_ms'][keys[0]]:.0f} ms, "
                f"floor {first['floor_ms']:.0f} ms)", extra <= 10.0)
            further = {k: first["warm_ms"][k] for k in keys[1:]}
            if further:
                worst = max(further, key=further.get)
                add("new process, warm cache: each further function", "≤ 5 ms",
                    f"max {further[worst]:.1f} ms ({worst})", further[worst] <= 5.0)
    if recompile:
        bad = [name for name, e in recompile.items() if not e.get("ok")]
        detail = "; ".join(f"{name}: {e.get('misses', '?')} traces, {e.get('kernels', '?')} kernels"
                           + (f" ({e['error']})" if e.get("error") else "")
                           for name, e in recompile.items())
        add("no recompilation across sizes", "1 trace per function", detail, not bad)
    serial = _times(results, "W3-1e6", MAIN)
    par = _times(results, "W3-1e6", "srcxform compiled, parallel")
    if serial and par:
        speedup = paired_ratio(serial, par)
        add("W3 n=1e6 parallel=True vs serial", f"≥ 1.6× on {os.cpu_count()} cores",
            f"{speedup:.2f}×", speedup >= 1.6, "W3-1e6")
    elif _row(results, "W3-1e6", "srcxform compiled, parallel") is not None:
        row = _row(results, "W3-1e6", "srcxform compiled, parallel")
        add("W3 n=1e6 parallel=True vs serial", "≥ 1.6×",
            f"{row['status']}: {row['error']}", False, "W3-1e6")
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


def markdown(report):
    meta = report["meta"]
    lines = [
        "# srcxform benchmarks",
        "",
        f"{meta['date']} · {meta['mode']} · {meta['cpu']} ({meta['cores']} cores; "
        f"{meta['threads']} BLAS/intra-op thread(s), Numba parallel {meta['numba_threads']}) · "
        f"Python {meta['python']} · " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()
                                                    if v),
        "",
        "Median time per gradient call (W4, W5: per SGD step, update included), its ratio to",
        "the hand-written Numba kernel timed in the same rounds, and the first call in this",
        "process (srcxform: trace + codegen + compile into an empty cache). Times include",
        f"the harness's own {meta['harness_ns'] or 0:.0f} ns per call (a no-op through the same",
        "loop, timed in the same rounds).",
        "",
    ]
    lines += summary_table(report) + [
        "",
        "## All rows",
        "",
        "| workload | system | median | × hand Numba | first call | target |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    by_key = {}
    for t in report["targets"]:
        if t.get("key"):
            by_key.setdefault(t["key"], []).append(t)
    for wl in report["workloads"]:
        for row in wl["rows"]:
            if row["status"] != "ok":
                med, ratio = f"**{row['status']}**", row["error"].replace("|", "\\|")
            else:
                med = fmt_ns(row.get("median_ns"))
                ratio = fmt_ratio(row.get("ratio"))
            target = ""
            if row["system"] == MAIN:
                target = "; ".join(f"{t['target']} {t['status']}"
                                   for t in by_key.get(wl["key"], []))
            lines.append(f"| {wl['title']} | {row['system']} | {med} | {ratio} | "
                         f"{fmt_ms(row.get('first_call_ms'))} | {target} |")
    lines += ["", "## Targets", "", "| target | goal | measured | status |",
              "| --- | --- | --- | --- |"]
    for t in report["targets"]:
        measured = str(t["measured"]).replace("|", "\\|")
        lines.append(f"| {t['name']} | {t['target']} | {measured} | {t['status']} |")
    first = report.get("first_call")
    if first:
        imports = (f"Imports, not counted below: srcxform "
                   f"{fmt_ms(first['import_ms']['srcxform'])}, numba "
                   f"{fmt_ms(first['import_ms']['numba'])}. Floor: the first call of a trivial "
                   f"cached `@njit` function in a new process, its decoration included, "
                   f"{fmt_ms(first['floor_ms'])}.")
        lines += ["", "## First calls in a new process (srcxform)", "", imports, "",
                  "| workload | cold: fresh cache, Numba warmed | warm disk cache, in this order |",
                  "| --- | ---: | ---: |"]
        for key, ms in first["cold"].items():
            lines.append(f"| {key} | {fmt_ms(ms)} | {fmt_ms(first['warm_ms'].get(key))} |")
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


def summary_table(report):
    """Workloads down, main systems across: median (× hand Numba) per cell."""
    names = []
    for wl in report["workloads"]:
        for row in wl["rows"]:
            if not row["aux"] and row["system"] not in names:
                names.append(row["system"])
    lines = ["| workload | " + " | ".join(names) + " |",
             "| --- |" + " ---: |" * len(names)]
    for wl in report["workloads"]:
        cells = []
        for name in names:
            row = next((r for r in wl["rows"] if r["system"] == name), None)
            if row is None:
                cells.append("—")
            elif row["status"] != "ok":
                cells.append(f"**{row['status']}**")
            elif row.get("ratio") is None or name == REFERENCE:
                cells.append(fmt_ns(row.get("median_ns")))
            else:
                cells.append(f"{fmt_ns(row['median_ns'])} ({fmt_ratio(row['ratio'])})")
        lines.append(f"| {wl['key']} | " + " | ".join(cells) + " |")
    return lines


def chart(report, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("  matplotlib is not installed: no chart")
        return False
    wls = report["workloads"]
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
                 "Numba kernel")
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


def limit_threads(n):
    """Caps BLAS and OpenMP pools at n threads (XLA's too, for n == 1); the pools read
    these when they start, so this runs before NumPy or any peer is imported. Numba's
    own threads (parallel=True) are left alone."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        os.environ[var] = str(n)
    if n == 1:
        flags = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flags).strip()


def _meta(config_name, available, import_ms, threads):
    import numba
    import numpy

    import srcxform
    from benchmarks import peers

    versions = {"srcxform": srcxform.__version__, "numpy": numpy.__version__,
                "numba": numba.__version__}
    for name, ok in available.items():
        versions[name] = peers.version(name) if ok else None
    blas = None
    try:
        import threadpoolctl

        blas = [{k: i.get(k) for k in ("internal_api", "num_threads", "architecture")}
                for i in threadpoolctl.threadpool_info()]
    except ImportError:
        blas = "threadpoolctl not installed"
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    return {"date": time.strftime("%Y-%m-%d %H:%M"), "mode": config_name, "cpu": cpu,
            "cores": os.cpu_count(), "python": platform.python_version(),
            "versions": versions, "threads": threads or "library defaults",
            "numba_threads": numba.config.NUMBA_NUM_THREADS, "threadpools": blas,
            "peer_import_ms": import_ms,
            "skipped": [k for k, ok in available.items() if not ok]}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="fewer rounds and first-call processes (under 2 minutes)")
    parser.add_argument("--only", help="workloads to run: keys or families, e.g. W1,W3-1e6,W5")
    parser.add_argument("--systems", help="systems to run (substrings of their names); "
                        "hand Numba always runs")
    parser.add_argument("--no-subprocess", action="store_true",
                        help="skip the first-call measurements in new processes")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS/OpenMP/intra-op threads for every system (default 1: the "
                        "machine is shared; 0 leaves the libraries' defaults). Numba's "
                        "parallel=True keeps all cores")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"),
                        help="output folder (default: benchmarks/results)")
    args = parser.parse_args(argv)
    config = QUICK if args.quick else FULL
    started = NS()
    # An empty srcxform cache, so first calls in this process compile.
    os.environ["SRCXFORM_CACHE_DIR"] = tempfile.mkdtemp(prefix="srcxform-bench-")
    os.environ.pop("SRCXFORM_CHECK", None)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # TensorFlow's and XLA's C++ logs
    sys.path.insert(0, str(ROOT))
    if args.threads:
        limit_threads(args.threads)  # before NumPy is imported
    import numba

    from benchmarks import peers, workloads

    peers.THREADS = args.threads or None

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
    systems = workloads.systems()
    if args.systems:
        wanted = args.systems.split(",")
        systems = [s for s in systems
                   if s.name == REFERENCE or any(w.lower() in s.name.lower() for w in wanted)]
    results = []
    for wl in workloads.make_workloads(only=only, short=args.quick):
        log(f"{wl.key}: {wl.title} ({(NS() - started) / 1e9:.0f} s)")
        results.append(bench_workload(wl, systems, available, config))
    recompile = None
    if not only or any(k in only for k in ("W3", "W4", "W5")):
        log(f"recompilation across sizes ({(NS() - started) / 1e9:.0f} s)")
        recompile = recompile_check()
    first = None
    if not args.no_subprocess:
        keys = [k for k in config["cold"]
                if not only or k in only or k.split("-")[0] in only]
        if keys:
            log(f"first calls in new processes ({(NS() - started) / 1e9:.0f} s)")
            first = first_calls(config, keys)
            first["requested"] = keys
    report = {"meta": _meta("quick" if args.quick else "full", available, import_ms,
                            args.threads),
              "workloads": results, "recompile": recompile, "first_call": first}
    report["meta"]["harness_ns"] = _median([statistics.median(wl["_times"][NOOP])
                                            for wl in results if wl["_times"].get(NOOP)])
    report["targets"] = evaluate_targets(results, recompile, first)
    for wl in results:
        wl["times_ns"] = wl.pop("_times")
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
