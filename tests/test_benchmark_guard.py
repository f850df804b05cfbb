"""CI's speed guard (benchmarks/guard.py): which rows count as a gross regression, and
the guard itself run against the ratios recorded in the repository."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import guard


def test_a_row_fails_only_past_the_tolerance():
    recorded = {"W1": 1.0, "W3-1e6": 0.6, "W4:train step": 0.9}
    assert guard.regressions(recorded, {"W1": 1.49, "W3-1e6": 0.89,
                                        "W4:train step": 0.2}) == []
    assert guard.regressions(recorded, {"W1": 1.51, "W3-1e6": 0.91,
                                        "W4:train step": 0.9}) == ["W1", "W3-1e6"]


def test_a_recorded_row_not_measured_is_a_regression():
    # a workload that fails (WRONG, FAIL) has no ratio: that must not pass quietly
    assert guard.regressions({"W1": 1.0, "W2": 1.0}, {"W1": 1.0}) == ["W2"]
    assert guard.regressions({"W1": 1.0}, {"W1": 1.0, "W9": 5.0}) == []


def test_the_record_covers_every_workload_family():
    recorded = json.loads(guard.RECORD.read_text())
    families = {row.split(":")[0].split("-")[0] for row in recorded}
    assert families == {f"W{i}" for i in range(1, 10)} | {"loop"}  # loop: loop_rows.py's
    # x[i, j] in a loop is 150-370x its hand kernel (three small allocations a cell: see
    # benchmarks/README.md); the record guards its growth (quadratic was 2,000x); a window
    # x[i:i + 3] 9-14x (its block's gradient added through a vector of indices)
    assert all(0 < ratio < {"loop:x[i, j]": 1000, "loop:x[i:i+3]": 30}.get(row, 10)
               for row, ratio in recorded.items())


@pytest.mark.slow
def test_no_gross_regression_against_the_record():
    proc = subprocess.run([sys.executable, "-m", "benchmarks.guard"], check=False,
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
