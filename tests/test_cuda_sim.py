"""The CUDA target (srcxform/cuda) against the CPU kernel, on numba-cuda's simulator.

numba.cuda picks the simulator or the real target when a process first imports it
(NUMBA_ENABLE_CUDASIM), so the CUDA side of each check runs in a child process: one for
all the workloads (one trace and compile each), at their tiny sizes, which returns its
results for this process to compare with the CPU kernel's. Lowering and its refusals need
no numba.cuda and run here. Skipped where numba-cuda is not installed.
"""

import importlib.util
import os
import pathlib
import pickle
import subprocess
import sys

import numpy as np
import pytest

import srcxform
import srcxform as tf
import srcxform.cuda as sc
from srcxform.core.tree import tree_flatten

pytestmark = pytest.mark.skipif(importlib.util.find_spec("numba_cuda") is None,
                                reason="numba-cuda is not installed (srcxform[cuda])")

ROOT = pathlib.Path(__file__).resolve().parent.parent
LOWERED = ["W1", "W2", "W3", "W4", "W5", "W6", "W9"]  # W7 and W8 loop on traced values


def _cases(tiny=True):
    """{workload: (function, args, wrt)} for the workloads of benchmarks/workloads.py."""
    from benchmarks import workloads as W

    d = {wl.key: wl.data for wl in W.make_workloads(tiny=tiny)}
    return {
        "W1": (W.quadratic, (2.0,), 0),
        "W2": (W.seed_sum, (d["W2"]["x"], 5.0), (0, 1)),
        "W3": (W.rosenbrock, (d["W3-10" if tiny else "W3-1e6"]["x"],), 0),
        "W4": (W.logreg, (d["W4"]["w0"] + 0.1, np.array(d["W4"]["b0"]), d["W4"]["X"],
                          d["W4"]["y"]), (0, 1)),
        "W5": (W.mlp, (d["W5"]["params0"], d["W5"]["X"], d["W5"]["Y"]), 0),
        "W6": (W.CUBE.grad, (1.0,), 0),
        "W7": (W.lotka_volterra, (d["W7"]["p"], d["W7"]["u0"], d["W7"]["steps"]), 0),
        "W8": (W.newton_sqrt, (d["W8"]["a"],), 0),
        "W9": (W.mlp_relu, (d["W9"]["params0"], d["W9"]["X"], d["W9"]["Y"]), 0),
    }


def _leaves(result):
    return [np.asarray(leaf) for leaf in tree_flatten(result)[0]]


def _on_cuda(tiny):
    """In the child: each lowered workload's value and gradient on CUDA, as leaves; W3's
    gradient from a device array (where it stays), and at a second size; how many kernels
    W3's function compiled for the two sizes."""
    from numba import cuda

    cases, found = _cases(tiny), {}
    for name in LOWERED:
        fn, args, wrt = cases[name]
        found[name] = _leaves(sc.differentiable(fn, wrt=wrt).value_and_grad(*args))
    fn, (x,), _ = cases["W3"]
    f = sc.differentiable(fn)
    on_device = f.grad(cuda.to_device(x))
    found["W3 device"] = (cuda.cudadrv.devicearray.is_cuda_ndarray(on_device),
                          on_device.copy_to_host())
    found["W3 longer"] = _leaves(f.grad(np.concatenate([x, x[:3]])))
    found["W3 kernels"] = sum(len(k) for k in f._kernels.values())
    return found


def _ptx():
    """In the child, without the simulator: the number of kernels of each lowered workload
    that compiled to PTX, and launch.py's own; or None where NVVM is missing."""
    from numba import cuda

    from srcxform.cuda import launch

    cases, found = _cases(), {}
    try:
        cuda.compile_ptx(launch._fill.py_func, "(float64[:], float64)", cc=(8, 0))
    except Exception as err:  # NVVM or NVRTC missing: whatever numba-cuda raises then
        if "nvvm" in str(err).lower() or "nvrtc" in str(err).lower():
            return None
        raise
    for name in LOWERED:
        fn, args, wrt = cases[name]
        found[name] = len(sc.differentiable(fn, wrt=wrt).ptx(*args))
    for dtype in ("float32", "float64"):
        for kernel, types in [(launch._matmul, f"({dtype}[:, :], {dtype}[:, :], {dtype}[:, :])"),
                              (launch._matvec, f"({dtype}[:, :], {dtype}[:], {dtype}[:])"),
                              (launch._copy_2d, f"({dtype}[:, :], {dtype}[:, :])")]:
            cuda.compile_ptx(kernel.py_func, types, cc=(8, 0))
    found["launch"] = 3
    return found


def run_child(what, simulator, tiny=True):
    """What `what` (_on_cuda, _ptx) returns, run in a new process with or without the
    simulator."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    if simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    call = f"t._on_cuda(tiny={tiny!r})" if what == "_on_cuda" else f"t.{what}()"
    code = f"import pickle, sys, test_cuda_sim as t\nsys.stdout.buffer.write(pickle.dumps({call}))"
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True,
                          env=env, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return pickle.loads(done.stdout)


def check_against_cpu(found, tiny):
    """Each lowered workload's CUDA results equal the CPU kernel's: to float rounding, as
    atomics add in another order."""
    cases = _cases(tiny)
    for name in LOWERED:
        fn, args, wrt = cases[name]
        want = _leaves(srcxform.differentiable(fn, wrt=wrt).value_and_grad(*args))
        assert len(found[name]) == len(want), name
        for got, expected in zip(found[name], want):
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12, err_msg=name)


@pytest.fixture(scope="module")
def simulated():
    return run_child("_on_cuda", simulator=True)


@pytest.mark.slow
def test_the_workloads_give_the_cpu_kernels_values_and_gradients(simulated):
    check_against_cpu(simulated, tiny=True)


@pytest.mark.slow
def test_a_device_array_is_taken_as_it_is_and_the_gradient_stays_on_the_device(simulated):
    is_device, grad = simulated["W3 device"]
    x = _cases()["W3"][1][0]
    assert is_device
    np.testing.assert_allclose(grad, srcxform.differentiable(_cases()["W3"][0]).grad(x),
                               rtol=1e-12)


@pytest.mark.slow
def test_a_new_size_runs_the_same_kernel(simulated):
    fn, (x,), _ = _cases()["W3"]
    longer = np.concatenate([x, x[:3]])
    np.testing.assert_allclose(simulated["W3 longer"][0],
                               srcxform.differentiable(fn).grad(longer), rtol=1e-12)
    assert simulated["W3 kernels"] == 1


@pytest.mark.slow
def test_every_kernel_compiles_to_ptx_for_a_real_gpu():
    """What the simulator cannot say: numba-cuda types and compiles each kernel for the
    device (compute capability 8.0). Needs NVVM (nvidia-nvvm, nvidia-cuda-nvrtc)."""
    found = run_child("_ptx", simulator=False)
    if found is None:
        pytest.skip("NVVM is not installed (pip install nvidia-nvvm nvidia-cuda-nvrtc)")
    assert {name: found[name] > 0 for name in LOWERED} == {name: True for name in LOWERED}


# ----- lowering, here: no numba.cuda needed -----

def test_a_loop_nest_is_a_kernel_with_a_thread_per_element_and_origin_comments():
    fn, args, _ = _cases()["W3"]
    source = sc.source(fn, *args)
    assert source.count("@cuda.jit") == 2
    assert "for flat in range(cuda.grid(1), (n0 - 1), cuda.gridsize(1)):" in source
    # the sum to a scalar: a register per thread, then one atomic
    assert "t9_acc += t8_i" in source and "cuda.atomic.add(t9, 0, t9_acc)" in source
    assert "# grad of workloads.py:" in source and "# ---- adjoint ----" in source


def test_a_reduction_that_keeps_an_axis_adds_atomically_at_its_kept_index():
    fn, args, _ = _cases()["W5"]
    source = sc.source(fn, *args)
    assert "cuda.atomic.max(t3, (i0, 0), logits_i)" in source  # the softmax's row max
    assert "cuda.atomic.add(t21, (0, i1), t20_i)" in source  # the bias gradient
    assert "t0 = launch.matmul(X, params_0)" in source


@pytest.mark.parametrize("name, op", [("W7", "fori_loop"), ("W8", "while_loop")])
def test_a_loop_on_traced_values_is_refused_naming_the_op_and_line(name, op):
    fn, args, wrt = _cases()[name]
    with pytest.raises(sc.UnsupportedOnCuda, match=rf"{op} \(workloads\.py:\d+: .*\) is "
                                                   "control flow on traced values"):
        sc.differentiable(fn, wrt=wrt).source(*args)


def product_of(x):
    return tf.reduce_prod(x * x)


def cumulative(x):
    return tf.reduce_sum(tf.math.cumsum(x))


@pytest.mark.parametrize("fn, message", [
    (product_of, r"reduce_prod \(test_cuda_sim\.py:\d+: return tf\.reduce_prod\(x \* x\)\) has"),
    (cumulative, r"cumsum \(test_cuda_sim\.py:\d+: .*\) has no CUDA lowering"),
])
def test_an_op_the_target_does_not_lower_is_refused_naming_it(fn, message):
    with pytest.raises(sc.UnsupportedOnCuda, match=message):
        sc.differentiable(fn).source(np.ones(4))
