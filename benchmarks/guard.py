"""CI's speed guard: srcxform's warm calls as ratios to hand-written Numba, measured now,
against the ratios recorded in benchmarks/guard.json.

    python -m benchmarks.guard            # exit 1 on a gross regression
    python -m benchmarks.guard --record   # write the ratios measured now as the record

It measures the serial table of `benchmarks.run` at its quick sizes (one core, every
pool at one thread; srcxform and hand Numba interleaved in the same process, so a shared,
noisy machine slows both alike) and the converted loops of `benchmarks.loop_rows`, and
fails only where a ratio is more than `TOLERANCE` times the recorded one: a slip of a few percent passes, a kernel that lost its fusion or
its BLAS call does not. A row over the line is measured again (twice at most, each time in
a new process) before it counts, so one noisy moment cannot turn CI red. The record keeps
each row's largest ratio over `RECORD_RUNS` measurements: on a loaded machine a small
kernel's ratio moves by 2x between runs, and the guard is for regressions beyond that,
not for drift.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "benchmarks" / "guard.json"
TOLERANCE = 1.5
RECORD_RUNS = 3
RETRIES = 2
MAIN = "srcxform compiled"
LOOPS = "loop:"  # the rows of benchmarks/loop_rows.py


def measure(only=None):
    """{row: ratio to hand Numba} for every srcxform compiled row of the serial table
    (a workload's key, with its variant after a colon: 'W4:train step') and for the
    loops of benchmarks/loop_rows.py ('loop:x[i]'); with `only`, those rows' own runs."""
    loops = only is None or any(row.startswith(LOOPS) for row in only)
    rows = [row for row in only or () if not row.startswith(LOOPS)]
    with tempfile.TemporaryDirectory(prefix="srcxform-guard-") as tmp:
        ratios = _loop_ratios(Path(tmp) / "loops.json") if loops else {}
        if only is not None and not rows:
            return ratios
        out = Path(tmp) / "serial.json"
        argv = [sys.executable, "-m", "benchmarks.run", "--quick", "--guard", "--table", "serial",
                "--systems", MAIN, "--json", str(out)]
        if rows:
            argv += ["--only", ",".join(sorted({row.split(":")[0] for row in rows}))]
        subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        table = json.loads(out.read_text())
    for workload in table["workloads"]:
        for row in workload["rows"]:
            name = row["system"]
            if name.startswith(MAIN) and row.get("ratio"):
                variant = name[len(MAIN):].lstrip(", ")
                ratios[workload["key"] + (f":{variant}" if variant else "")] = row["ratio"]
    return ratios


def _loop_ratios(out):
    """loop_rows' ratios at one size (16,000 elements: long enough that the loops, not a
    call's fixed cost, are timed)."""
    subprocess.run([sys.executable, "-m", "benchmarks.loop_rows", "--sizes", "16000",
                    "--json", str(out)], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def regressions(recorded, measured, tolerance=TOLERANCE):
    """The rows whose measured ratio is over tolerance x the recorded one, or which were
    recorded and not measured at all (a workload that now fails is a regression too)."""
    return sorted(row for row, ratio in recorded.items()
                  if measured.get(row) is None or measured[row] > tolerance * ratio)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.guard", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--record", action="store_true",
                        help="write the ratios measured now to benchmarks/guard.json")
    args = parser.parse_args(argv)
    if args.record:
        runs = [measure() for _ in range(RECORD_RUNS)]
        worst = {row: max(run[row] for run in runs) for row in set.intersection(
            *(set(run) for run in runs))}
        RECORD.write_text(json.dumps({k: round(v, 3) for k, v in sorted(worst.items())},
                                     indent=1) + "\n")
        print(f"recorded {len(worst)} ratios in {RECORD.relative_to(ROOT)}")
        return 0
    measured = measure()
    recorded = json.loads(RECORD.read_text())
    for _ in range(RETRIES):  # a suspect is measured again, alone; its best ratio counts
        suspects = regressions(recorded, measured)
        if not suspects:
            break
        again = measure(only=suspects)
        measured.update({row: min(measured.get(row, again[row]), again[row])
                         for row in suspects if row in again})
    for row in sorted(recorded):
        got = measured.get(row)
        print(f"{row:28} recorded {recorded[row]:6.2f}x  now "
              + (f"{got:6.2f}x" if got is not None else "   not measured"))
    failed = regressions(recorded, measured)
    if failed:
        print(f"gross regression (over {TOLERANCE}x the recorded ratio): {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
