"""The examples run as the README says, on a small subset, and write their loss curve.

Each runs in a fresh Python process (its own compilation, as a user's first run), and
must finish in a few minutes (a minute or less on an idle machine).
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each example trains, compiled


def _needs_examples_extra():
    for name in ("sklearn", "matplotlib", "tqdm"):
        pytest.importorskip(name)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_plotting_example(name, tmp_path, *flags):
    """The example's output, once it ran and saved its PNG at --out."""
    _needs_examples_extra()
    out = tmp_path / f"{name}.png"
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py"), "--out", str(out), "--no-progress",
         *flags],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return result.stdout


def run_example(name, tmp_path, *flags):
    text = run_plotting_example(name, tmp_path, *flags)
    assert re.search(r"eager step: [\d.]+ ms; compiled step: [\d.]+ ms", text), text
    return float(re.search(r"test accuracy: ([\d.]+)%", text).group(1)) / 100, text


def test_logistic_regression_small(tmp_path):
    accuracy, text = run_example("logistic_regression", tmp_path, "--subset", "200",
                                 "--epochs", "5", "--timing-steps", "20")
    assert "breast cancer: 150 training and 50 test samples" in text
    assert accuracy >= 0.85, text


def test_mlp_digits_small(tmp_path):
    accuracy, text = run_example("mlp_digits", tmp_path, "--subset", "400", "--epochs", "5",
                                 "--timing-steps", "20")
    assert "digits: 300 training and 100 test images" in text
    assert accuracy >= 0.6, text


def test_mlp_digits_reaches_95_percent(tmp_path):
    # The full data set with the defaults; training itself takes about a second compiled.
    accuracy, text = run_example("mlp_digits", tmp_path, "--timing-steps", "20")
    assert accuracy >= 0.95, text


def test_cnn_digits_reaches_97_percent(tmp_path):
    # The full data set with the defaults: 97% needs them all; training takes seconds.
    # (Its compiled-over-eager speedup is printed, not asserted: a shared machine's timings
    # are no test.)
    accuracy, text = run_example("cnn_digits", tmp_path, "--timing-steps", "20")
    assert "digits: 1347 training and 450 test images of 8x8 pixels" in text
    assert accuracy >= 0.97, text


def test_numba_loop_gives_the_python_loops_parameters():
    result = subprocess.run([sys.executable, str(EXAMPLES / "numba_loop.py"), "--steps", "50"],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "largest difference between the two loops' parameters: 0\n" in result.stdout


def test_ode_sensitivity_recovers_the_lotka_volterra_parameters(tmp_path):
    # 300 Adam steps and 5 RK4 steps between observations: half the default run.
    text = run_plotting_example("ode_sensitivity", tmp_path, "--steps", "300",
                                "--substeps", "5")
    assert "150 noisy observations of 750 RK4 steps" in text
    fitted = dict(re.findall(r"^ *(alpha|beta|gamma|delta) +[\d.]+ +([\d.]+)$", text,
                             re.MULTILINE))
    true = {"alpha": 1.1, "beta": 0.4, "gamma": 0.4, "delta": 0.1}
    assert fitted.keys() == true.keys(), text
    for name, value in true.items():  # the initial guess is up to 25% off
        assert abs(float(fitted[name]) / value - 1) < 0.05, text


def test_dask_logistic_regression_matches_its_dask_array_twin(tmp_path):
    # A LocalCluster of two worker processes, on 20,001 rows in 5 blocks (one uneven).
    pytest.importorskip("distributed")
    text = run_plotting_example("dask_logistic_regression", tmp_path, "--rows", "20001",
                                "--block-rows", "5000", "--epochs", "4", "--no-dask-ml")
    assert "20001 rows, 20 features (0.00 GiB), in 5 blocks" in text
    losses = [float(v) for v in re.search(r"srcxform.dask: loss by epoch (.*)", text)
              .group(1).split()]
    assert losses[0] > losses[-1] and len(losses) == 4, text
    difference = re.search(r"two runs' losses: (\S+)", text).group(1)
    assert float(difference) < 1e-12, text


def test_dask_logistic_regression_reaches_dask_mls_loss(tmp_path):
    # 30 steps at rate 16 take the descent to 1e-8 of the minimum at 4,001 rows; dask-ml's
    # lbfgs reaches it in 10 iterations, if its loss is ours (its default L2 penalty, C=1,
    # would leave its fit 2.7e-5 above); gradient_descent and admm stop short of it.
    pytest.importorskip("distributed")
    pytest.importorskip("dask_ml")
    text = run_plotting_example("dask_logistic_regression", tmp_path, "--rows", "4001",
                                "--block-rows", "1000", "--epochs", "30", "--learning-rate",
                                "16", "--dask-ml-max-iter", "10")
    ours = float(re.search(r"srcxform.dask: .* final loss (\S+)", text).group(1))
    steps = {solver: int(n) for solver, n in re.findall(r"dask-ml (\w+): (\d+) steps in", text)}
    # Neither iterative solver converges in 10 iterations here; lbfgs evaluates at least
    # once an iteration.
    assert steps["gradient_descent"] == steps["admm"] == 10 <= steps["lbfgs"], text
    final = {solver: float(loss) for solver, loss in
             re.findall(r"dask-ml (\w+): .* final loss (\S+),", text)}
    assert abs(final["lbfgs"] - ours) < 1e-7, text
    assert all(0 <= final[solver] - ours < 1e-3 for solver in ("gradient_descent", "admm")), text


def test_dask_mlp_trains_as_the_one_process_loop(tmp_path):
    # Two worker processes, 6,001 rows in 7 blocks (the last of one row), 3 steps an epoch.
    pytest.importorskip("distributed")
    text = run_plotting_example("dask_mlp", tmp_path, "--rows", "6001", "--block-rows",
                                "1000", "--blocks-per-step", "3", "--epochs", "3", "--check")
    assert "6001 rows, 10 features, 3 classes (0.00 GiB), in 7 blocks" in text
    losses = [float(v) for v in re.search(r"mean loss by epoch: (.*)", text).group(1).split()]
    assert len(losses) == 3 and losses[-1] < 0.8 * losses[0], text
    difference = re.search(r"one-process loop's parameters: (\S+)", text).group(1)
    assert float(difference) < 1e-12, text
