"""The big run of the loop-nest fuzzer (tests/fuzz_nests.py, issue 26): thousands of
programs, each at three sizes or more in sequence through one Differentiable, every form,
compiled and as Python, against the eager tape; split over jobs, one process each.

    python -m benchmarks.fuzz_nests --programs 5000 --jobs 16 [--seed 0] [--out DIR]
                                    [--paths compiled,interpreted] [--minutes M]

Job j runs `python -m tests.fuzz_nests` on its share of the programs with seed
seed * 1000 + j (jobs, and runs of other seeds, draw other programs), a kernel cache of its
own in a fresh folder under DIR (every kernel is traced and compiled), SRCXFORM_CHECK=1
and SRCXFORM_TIERED=0 (as the test suite runs), and one BLAS thread (the jobs fill the
cores). Each job's report goes to DIR/job-<j>.txt; the summary (programs, mismatches by
kind, wall and CPU seconds a program) to DIR/summary.json and stdout. Exit status 1 when a
program failed.
"""

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PASSED = re.compile(r"^(\d+) passed, (\d+) failed$")
KIND = re.compile(r"^\s*(\d+) {2}(.+)$")  # a line of the report's count by kind


def _job_command(options, job, count):
    command = [sys.executable, "-m", "tests.fuzz_nests", "--programs", str(count),
               "--seed", str(options.seed * 1000 + job), "--paths", options.paths]
    if options.minutes is not None:
        command += ["--minutes", str(options.minutes)]
    return command


def _environment(out, job):
    env = dict(os.environ, SRCXFORM_CACHE_DIR=str(out / f"cache-{job}"))
    env.setdefault("SRCXFORM_CHECK", "1")
    env.setdefault("SRCXFORM_TIERED", "0")
    for threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(threads, "1")
    return env


def _read_report(text):
    """(passed, failed, {kind: programs}) from a job's report: its count by kind comes
    after its first line, up to the first blank one."""
    lines = text.splitlines()
    last = next((PASSED.match(line) for line in reversed(lines) if PASSED.match(line)), None)
    kinds = {}
    for line in lines[1:]:
        if not (match := KIND.match(line)):
            break
        kinds[match[2]] = int(match[1])
    return (int(last[1]), int(last[2]), kinds) if last else (0, 0, kinds)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fuzz_nests", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--programs", type=int, default=5000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--paths", default="compiled,interpreted")
    parser.add_argument("--minutes", type=float, default=None,
                        help="each job stops after this long")
    parser.add_argument("--out", type=Path, default=None,
                        help="the folder for reports and caches (default: a new temporary one)")
    options = parser.parse_args(argv)
    out = options.out or Path(tempfile.mkdtemp(prefix="fuzz_nests-"))
    out.mkdir(parents=True, exist_ok=True)
    shares = [options.programs // options.jobs + (j < options.programs % options.jobs)
              for j in range(options.jobs)]
    start = time.time()
    procs = []
    for job, count in enumerate(shares):
        if count:
            report = open(out / f"job-{job}.txt", "w")  # noqa: SIM115 -- closed below
            procs.append((job, report, subprocess.Popen(
                _job_command(options, job, count), cwd=ROOT, env=_environment(out, job),
                stdout=report, stderr=subprocess.STDOUT)))
    codes = []
    for _, report, proc in procs:
        codes.append(proc.wait())
        report.close()
    wall = time.time() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    passed = failed = 0
    kinds = {}
    for job, _, _ in procs:
        job_passed, job_failed, job_kinds = _read_report((out / f"job-{job}.txt").read_text())
        passed, failed = passed + job_passed, failed + job_failed
        for kind, n in job_kinds.items():
            kinds[kind] = kinds.get(kind, 0) + n
    programs = passed + failed
    summary = {
        "programs": programs, "passed": passed, "failed": failed, "kinds": kinds,
        "jobs": len(procs), "paths": options.paths, "seed": options.seed,
        "wall_s": round(wall, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "cpu_s_per_program": round((usage.ru_utime + usage.ru_stime) / max(programs, 1), 2),
        "job_exit_codes": codes, "out": str(out),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    print(f"{passed} passed, {failed} failed")
    short = options.minutes is None and programs < options.programs  # a job died
    sys.exit(1 if failed or any(codes) or short else 0)


if __name__ == "__main__":
    main()
