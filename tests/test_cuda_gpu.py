"""The CUDA target on a real GPU, at the workloads' full sizes: the checks of
test_cuda_sim.py (the CPU kernel's values and gradients through the device keyword and
SRCXFORM_DEVICE, device arrays in and out, one kernel for two sizes, intermediates kept
between calls and apart per thread, two threads at once, an example's training step),
run in a child process without the simulator. Skipped where numba-cuda is missing or
finds no GPU.
"""

import importlib.util
import os
import subprocess
import sys

import pytest

from test_cuda_sim import (ROOT, check_against_cpu, check_buffers, check_edges,
                           check_threads, check_training_step, run_child)


def _gpu_present():
    if importlib.util.find_spec("numba_cuda") is None:
        return False
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    code = "from numba import cuda; print(cuda.is_available())"
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)
    return done.stdout.strip() == "True"


pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not _gpu_present(), reason="no GPU that numba-cuda can use")]


@pytest.fixture(scope="module")
def on_gpu():
    return run_child("_on_cuda", simulator=False, tiny=False)


def test_the_workloads_give_the_cpu_kernels_values_and_gradients_at_full_size(on_gpu):
    check_against_cpu(on_gpu, tiny=False)


def test_a_device_array_stays_on_the_device_and_a_new_size_reuses_the_kernel(on_gpu):
    assert on_gpu["W3 device"][0]
    assert on_gpu["W3 kernels"] == 1


def test_adversarial_cases_give_the_cpu_kernels_results(on_gpu):
    check_edges(on_gpu)


def test_a_warm_call_compiles_no_kernel(on_gpu):
    assert on_gpu["W5 warm compiles"] == []


def test_intermediates_are_kept_between_calls_and_a_result_never_is(on_gpu):
    check_buffers(on_gpu, tiny=False)


def test_two_threads_at_once_use_intermediates_of_their_own(on_gpu):
    check_threads(on_gpu, tiny=False)


def test_the_examples_training_steps_assign_their_variables_as_on_the_cpu(on_gpu):
    check_training_step(on_gpu)
