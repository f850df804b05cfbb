"""Tiered execution (srcxform/jit/tiered.py): a new kernel's first calls run its traced
program on NumPy while the compiler worker compiles it into the disk cache; the next call
after that loads it and runs natively. The suite runs with tiers off (conftest.py); these
tests turn them on, each with a fresh cache folder (so the worker really compiles) and
kernels of their own."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np
import pytest

import srcxform as tf
from srcxform import CacheWarning, numba_adapter
from srcxform.jit import backend, tiered
from srcxform.core.errors import TieredWarning
from srcxform.core.tree import tree_flatten

ROOT = Path(__file__).parents[1]
TIMEOUT = 300  # seconds a test waits for the worker: generous, for a loaded machine


@pytest.fixture(autouse=True)
def tiers_on(monkeypatch, tmp_path):
    monkeypatch.setenv("SRCXFORM_TIERED", "1")
    monkeypatch.setenv("SRCXFORM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("SRCXFORM_JIT", raising=False)


def the_job(f):
    """The worker's job for f's one kernel compiling, or None when it is native."""
    jobs = list(f._compiling.values())
    assert len(jobs) <= 1
    return jobs[0] if jobs else None


def the_kernel(f):
    (kernel,) = [k for candidates in f._kernels.values() for k in candidates]
    return kernel


def leaves_alike(got, want, rtol=1e-12):
    """The same structure, the same types and dtypes leaf by leaf, values within rtol."""
    got_leaves, got_tree = tree_flatten(got)
    want_leaves, want_tree = tree_flatten(want)
    assert got_tree == want_tree
    for a, b in zip(got_leaves, want_leaves):
        assert type(a) is type(b)
        assert np.asarray(getattr(a, "_array", a)).dtype == \
            np.asarray(getattr(b, "_array", b)).dtype
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol)


def mlp_loss(params, x):
    h = tf.tanh(x @ params["w"] + params["b"])
    return tf.reduce_sum(h * h), tf.reduce_max(h)


def test_first_calls_run_eagerly_then_switch_to_the_workers_kernel():
    f = tf.differentiable(mlp_loss, wrt=0, has_aux=True)
    rng = np.random.default_rng(0)
    params = {"w": rng.normal(size=(3, 2)).astype(np.float32),
              "b": rng.normal(size=2).astype(np.float32)}
    x = rng.normal(size=(4, 3)).astype(np.float32)
    eager = f.value_and_grad(params, x)
    job = the_job(f)
    assert job is not None and the_kernel(f).fn is None  # tier 0: nothing compiled here
    assert job.wait(TIMEOUT) and job.lost is None
    native = f.value_and_grad(params, x)
    assert the_job(f) is None
    kernel = the_kernel(f)
    assert isinstance(kernel.fn, backend.Compiled)
    # Loaded from the cache the worker wrote: a hit, and nothing compiled in this process.
    stats = kernel.fn.dispatcher.stats
    assert sum(stats.cache_hits.values()) == 1 and not stats.cache_misses
    leaves_alike(eager, native, rtol=1e-5)  # float32: eager and compiled sum differently
    w = params["w"].astype(np.float64)
    h = np.tanh(x.astype(np.float64) @ w + params["b"])
    np.testing.assert_allclose(native[0][0], np.sum(h * h), rtol=1e-5)
    # The gradient of the first result; the second is the aux.
    np.testing.assert_allclose(native[0][1], np.max(h), rtol=1e-5)
    np.testing.assert_allclose(native[1]["w"], x.T @ (2 * h * (1 - h * h)), rtol=1e-4)
    # Later calls take the warm entry made at the switch.
    hits = f.cache_info().hits
    leaves_alike(f.value_and_grad(params, x), native)
    assert f.cache_info().hits == hits + 1


def square_plus(x):
    return tf.reduce_sum(x * x) + 1.0


def test_a_kernel_another_thread_dropped_while_it_compiles_runs_this_call_on_numpy(
        monkeypatch):
    """Helper 134: a call handed a compiling kernel that another thread's call then found
    stale (dropped from f._compiling) ran it as compiled, its module not generated: a raw
    AttributeError. The race, made certain: the drop comes between the two."""
    f = tf.differentiable(square_plus)
    find = f._kernel

    def raced(*args, **kwargs):
        kernel, leaves = find(*args, **kwargs)
        f._drop([kernel])  # as another thread's call finding the kernel stale
        return kernel, leaves

    monkeypatch.setattr(f, "_kernel", raced)
    x = np.array([1.0, 2.0, 3.0])
    assert float(f(x)) == 15.0
    assert the_job(f) is None and float(f(x)) == 15.0  # and again, traced anew


def test_the_plain_call_returns_as_the_eager_function_on_both_tiers():
    f = tf.differentiable(square_plus)
    x = np.array([1.0, 2.0, 3.0])
    eager = f(x)
    assert the_job(f).wait(TIMEOUT)
    native = f(x)
    assert isinstance(native, tf.Tensor) and the_job(f) is None
    leaves_alike(eager, native)
    assert float(native) == 15.0


def cube_sum(x):
    return tf.reduce_sum(x * x * x)


def test_compile_blocks_until_the_kernels_are_native():
    """f.compile compiles both gradient forms' kernels: f.grad's, and f.value_and_grad's."""
    f = tf.differentiable(cube_sum)
    x = np.array([1.0, -2.0])
    assert f.compile(x) is f
    kernels = {k.conv.form: k for candidates in f._kernels.values() for k in candidates}
    assert sorted(kernels) == ["grad", "value_and_grad"] and the_job(f) is None
    assert all(isinstance(k.fn, backend.Compiled) for k in kernels.values())
    np.testing.assert_array_equal(f.grad(x), 3 * x * x)
    value, grad = f.value_and_grad(x)
    assert value == -7.0
    np.testing.assert_array_equal(grad, 3 * x * x)
    # The first calls ran natively: each kernel compiled once, for these arguments.
    assert [len(k.fn.dispatcher.signatures) for k in kernels.values()] == [1, 1]


def sin_sum(x):
    return tf.reduce_sum(tf.sin(x))


@pytest.mark.parametrize("how", ["environment", "wait"])
def test_tiers_off_compile_at_the_first_call(monkeypatch, how):
    if how == "environment":
        monkeypatch.setenv("SRCXFORM_TIERED", "0")
    f = tf.differentiable(sin_sum, wait=how == "wait")
    x = np.array([0.5, 1.5])
    np.testing.assert_allclose(f.grad(x), np.cos(x), rtol=1e-15)
    assert the_job(f) is None
    assert len(the_kernel(f).fn.dispatcher.signatures) == 1


def test_a_call_runs_once_on_either_tier():
    v = tf.Variable(np.zeros(3))
    x = np.array([1.0, 2.0, 4.0])

    def accumulate(x):
        v.assign_add(x)
        return tf.reduce_sum(v * x)

    f = tf.differentiable(accumulate)
    values = [float(f(x))]
    np.testing.assert_array_equal(v.numpy(), x)
    assert the_job(f).wait(TIMEOUT)
    values += [float(f(x)) for _ in range(3)]
    assert the_job(f) is None
    np.testing.assert_array_equal(v.numpy(), 4 * x)
    assert values == [k * float(x @ x) for k in (1, 2, 3, 4)]


def exp_sum(x):
    return tf.reduce_sum(tf.exp(x))


def test_a_worker_that_dies_leaves_the_kernel_to_this_process():
    worker = tiered._worker()
    os.kill(worker.process.pid, signal.SIGSTOP)  # it cannot finish the job before it dies
    f = tf.differentiable(exp_sum)
    x = np.array([0.0, 1.0])
    try:
        np.testing.assert_allclose(f.grad(x), np.exp(x), rtol=1e-15)
        job = the_job(f)
        # sent to this worker before it dies: sent after, it would go to a new worker
        assert job.sent.wait(TIMEOUT)
    finally:
        worker.process.kill()
    assert job.wait(TIMEOUT) and "exited" in job.lost
    with pytest.warns(TieredWarning, match="exp_sum"):
        np.testing.assert_allclose(f.grad(x), np.exp(x), rtol=1e-15)
    assert the_job(f) is None
    stats = the_kernel(f).fn.dispatcher.stats
    assert sum(stats.cache_misses.values()) == 1  # compiled here
    # The next kernel gets a new worker.
    g = tf.differentiable(cube_sum)
    g.grad(x)
    assert the_job(g).wait(TIMEOUT) and the_job(g).lost is None
    assert tiered._worker() is not worker


def cos_sum(x):
    return tf.reduce_sum(tf.cos(x))


@pytest.mark.skipif(not numba_adapter.enabled(), reason="Numba's own cache files are not "
                    "sealed: srcxform seals them with the Numba internals it uses")
def test_a_damaged_cache_file_is_compiled_here(tmp_path):
    f = tf.differentiable(cos_sum)
    x = np.array([0.25, 2.0])
    f.grad(x)
    assert the_job(f).wait(TIMEOUT)
    damaged = list((tmp_path / "__pycache__").glob("sx2-cos_sum__*.nbc"))
    assert damaged
    for path in damaged:
        path.write_bytes(path.read_bytes()[:100])
    with pytest.warns(CacheWarning, match="cos_sum"):
        np.testing.assert_allclose(f.grad(x), -np.sin(x), rtol=1e-15)
    assert sum(the_kernel(f).fn.dispatcher.stats.cache_misses.values()) == 1


def tanh_sum(x):
    return tf.reduce_sum(tf.tanh(x) * x)


def test_threads_calling_during_the_switch():
    f = tf.differentiable(tanh_sum)
    x = np.linspace(-1.0, 1.0, 7)
    want = np.tanh(x) + x * (1 - np.tanh(x) ** 2)
    np.testing.assert_allclose(f.grad(x), want, rtol=1e-14)
    job = the_job(f)
    got, errors = [], []

    def calls():
        try:
            while not job.ready():
                got.append(f.grad(x))
            got.extend(f.grad(x) for _ in range(20))  # across the switch and after it
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=calls) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert not errors and len(got) >= 80
    for g in got:
        np.testing.assert_allclose(g, want, rtol=1e-14)
    assert the_job(f) is None and f.cache_info().kernels == 1
    assert len(the_kernel(f).fn.dispatcher.signatures) == 1


def test_a_kernel_compiled_here_while_numba_starts_in_a_thread():
    """In a new process, f.source compiles f.value_and_grad's kernel here while the thread
    f.grad's eager call started imports Numba: the two import it one after the other
    (at once, one could meet a Numba module the other had half run)."""
    script = textwrap.dedent("""
        import numpy as np
        import srcxform as tf

        def log_sum(x):
            return tf.reduce_sum(tf.log(x))

        f = tf.differentiable(log_sum)
        x = np.array([1.0, 2.0])
        print(f.grad(x).tolist(), "def log_sum__value_and_grad(" in f.source(x))
        """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=TIMEOUT, check=False,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout == "[1.0, 0.5] True\n"


def test_the_worker_finishes_its_job_after_its_process_exits_then_ends(tmp_path):
    script = textwrap.dedent("""
        import numpy as np
        import srcxform as tf
        from srcxform.jit import tiered

        def log_sum(x):
            return tf.reduce_sum(tf.log(x))

        f = tf.differentiable(log_sum)
        print(f.grad(np.array([1.0, 2.0])).tolist(), tiered._worker().process.pid)
        """)  # it exits with the worker still compiling
    # Read to its end: the worker, going on, holds none of the process's output.
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=TIMEOUT, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    grads, pid = out.stdout.split("]")
    assert grads == "[1.0, 0.5"
    deadline = time.monotonic() + TIMEOUT  # not a measurement: a hang's limit
    while _running(int(pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(int(pid))
    assert list((tmp_path / "__pycache__").glob("*log_sum__grad_*.nbi"))  # its kernel


def test_the_worker_starts_with_the_first_tiered_function_and_ends_unused(tmp_path):
    script = textwrap.dedent("""
        import time
        import srcxform as tf
        from srcxform.jit import tiered

        def unused(x):
            return tf.reduce_sum(x)

        tf.differentiable(unused, wait=True)
        assert tiered._TIER_UP is None  # a function that waits needs no worker
        tf.differentiable(unused)
        while tiered._WORKER is None:  # started by the tier-up thread
            time.sleep(0.01)
        print(tiered._WORKER.process.pid)
        """)  # it exits without calling, the worker still importing or idle
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=TIMEOUT, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert not os.path.exists(f"/proc/{int(out.stdout)}")  # ended and reaped


def test_a_worker_without_a_job_is_ended_at_once():
    worker = tiered._Worker()
    os.kill(worker.process.pid, signal.SIGSTOP)  # as one busy importing: it reads no pipe
    start = time.perf_counter()
    worker.close()
    assert time.perf_counter() - start < 0.5  # what one with a job is given to finish
    assert worker.process.returncode == -signal.SIGKILL


def _running(pid):
    """Whether process pid runs (neither gone nor a zombie no one has reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc")
def test_the_worker_exits_when_its_parent_is_killed():
    """Killed by a signal, the parent ends its worker with no exit handler; and a child
    it forked (as a process pool's worker) holds the worker's pipe open, so the worker
    reads no end of it either. It sees its parent gone, and exits."""
    script = textwrap.dedent("""
        import os, signal, time
        from srcxform.jit import tiered

        worker = tiered._Worker()
        pool_worker = os.fork()
        if pool_worker == 0:
            time.sleep(600)
            os._exit(0)
        print(worker.process.pid, pool_worker, flush=True)
        os.kill(os.getpid(), signal.SIGTERM)
        """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    worker, pool_worker = map(int, parent.stdout.readline().split())
    try:
        assert parent.wait(TIMEOUT) == -signal.SIGTERM
        deadline = time.monotonic() + TIMEOUT  # not a measurement: a hang's limit
        while _running(worker) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not _running(worker)
    finally:
        os.kill(pool_worker, signal.SIGKILL)
        parent.stdout.close()


def test_a_worker_whose_parent_has_gone_exits_quietly(tmp_path):
    """Its reply finds the pipe closed (a process pool's worker, ended): no traceback."""
    to_child, from_parent = os.pipe()
    to_parent, from_child = os.pipe()
    worker = subprocess.Popen([sys.executable, "-c", tiered._BOOT, str(ROOT), str(to_child),
                               str(from_child), str(os.getpid())],
                              pass_fds=(to_child, from_child), stderr=subprocess.PIPE)
    for fd in (to_child, from_child, to_parent):  # to_parent: no one reads the replies
        os.close(fd)
    with Connection(from_parent, readable=False) as jobs:
        # A job that fails at once, whose reply is sent all the same.
        jobs.send((0, ({"SRCXFORM_CACHE_DIR": str(tmp_path)}, "not python (", "f", False,
                       [])))
        _, errors = worker.communicate(timeout=TIMEOUT)
    assert (worker.returncode, errors) == (0, b"")


def neg_sum(x):
    return -tf.reduce_sum(x)


def test_a_module_not_generated_in_the_background_fails_at_the_switch(monkeypatch):
    from srcxform.jit import compiler

    generate = compiler.generate_source

    def failing(*args, **kwargs):
        raise RuntimeError("codegen failed")

    monkeypatch.setattr(compiler, "generate_source", failing)
    f = tf.differentiable(neg_sum)
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(f.grad(x), [-1.0, -1.0])  # the eager run's, returned
    job = the_job(f)
    assert job.wait(TIMEOUT) and "could not be generated" in job.lost
    # The switching call generates it again, and raises as a blocking first call would.
    with pytest.warns(TieredWarning, match="neg_sum"), \
            pytest.raises(RuntimeError, match="codegen failed"):
        f.grad(x)
    monkeypatch.setattr(compiler, "generate_source", generate)
    with pytest.warns(TieredWarning, match="neg_sum"):
        np.testing.assert_array_equal(f.grad(x), [-1.0, -1.0])
    assert the_job(f) is None and isinstance(the_kernel(f).fn, backend.Compiled)


def abs_sum(x):
    return tf.reduce_sum(tf.abs(x))


def test_a_job_handed_off_as_the_process_exits_starts_no_worker(monkeypatch):
    monkeypatch.setattr(tiered, "_WORKER", None)  # as in a process that has none yet
    monkeypatch.setattr(tiered, "_EXITING", False)
    release = threading.Event()
    tiered._tier_up().put(release.wait)  # the tier-up thread busy until the exit began
    f = tf.differentiable(abs_sum)  # its worker's start waits behind that
    x = np.array([-1.0, 2.0])
    np.testing.assert_array_equal(f.grad(x), [-1.0, 1.0])
    tiered._at_exit()  # what atexit runs
    release.set()
    job = the_job(f)
    assert job.wait(TIMEOUT) and "exiting" in job.lost
    assert tiered._WORKER is None


def test_the_workers_scipy_linalg_loads_blas_alone_and_the_rest_on_demand():
    # The worker's start (compile_worker.serve): Numba's BLAS check loads cython_blas
    # without running scipy.linalg's __init__; a jitted product calls that BLAS; any other
    # name of scipy.linalg's loads the real package.
    script = textwrap.dedent("""
        import sys
        import numba
        import numpy as np
        from srcxform.jit import compile_worker

        compile_worker.scipy_linalg_on_demand()
        compile_worker.start_numba()
        print("scipy.linalg.cython_blas" in sys.modules, "scipy.linalg._basic" in sys.modules)
        a = np.arange(6.0).reshape(2, 3)
        print(numba.njit(lambda a: a @ a.T)(a).tolist())
        from scipy.linalg import solve
        print(solve(np.eye(2), np.ones(2)).tolist(), "scipy.linalg._basic" in sys.modules)
        """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=TIMEOUT, check=False,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout == "True False\n[[5.0, 14.0], [14.0, 50.0]]\n[1.0, 1.0] True\n"


SHORT_SCRIPT = textwrap.dedent("""
    import atexit, json
    out = {}
    # Registered before srcxform's exit handler, so run after it: the worker has its job.
    atexit.register(lambda: print(json.dumps(
        {**out, "worker": tiered._WORKER and tiered._WORKER.process.pid})))

    import numpy as np
    import srcxform as tf
    from srcxform.jit import tiered

    def cube_sum(x):
        return tf.reduce_sum(x * x * x)

    f = tf.differentiable(cube_sum)
    x = np.array([1.0, -2.0])
    out["grad"] = f.grad(x).tolist()
    (kernel,) = [k for candidates in f._kernels.values() for k in candidates]
    stats = kernel.fn.dispatcher.stats if kernel.fn is not None else None
    out["tier0"] = bool(f._compiling)
    out["loaded"] = stats is not None and sum(stats.cache_hits.values()) == 1 and \\
        not stats.cache_misses
    """)  # one call, then it exits: the worker compiling


def test_a_short_script_is_native_on_its_second_run(tmp_path):
    script = tmp_path / "short.py"
    script.write_text(SHORT_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SRCXFORM_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("SRCXFORM_TIERED")  # tiered, as by default

    def run():
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                             timeout=TIMEOUT, check=True, env=env)
        return json.loads(out.stdout.splitlines()[-1])

    first = run()
    assert first["tier0"] and first["worker"] is not None
    deadline = time.monotonic() + TIMEOUT  # the worker finishes its compile, then exits
    while _running(first["worker"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    second = run()
    assert first["grad"] == second["grad"] == [3.0, 12.0]
    assert not second["tier0"] and second["loaded"]  # native at once: the worker's kernel



FORKED_POOL_SCRIPT = """
import multiprocessing, threading
import numpy as np
import srcxform as tf
from srcxform.jit import tiered


@tf.differentiable
def f(x):
    return tf.reduce_sum(tf.sin(x) * x)


def child(_):
    f(np.ones(3))  # on NumPy: the job is handed off again, to this process's worker
    job = next(iter(f._compiling.values()), None)
    finished = job is None or job.wait(120)
    f(np.ones(3))
    return finished, len(f._compiling)


if __name__ == "__main__":
    f(np.ones(3))  # on NumPy; the worker compiles it
    # Numba started here first (the tier-up thread's task after the hand-off): a child
    # forked while a thread imports it keeps its calls on NumPy (tiered._after_fork).
    started = threading.Event()
    tiered._tier_up().put(started.set)
    started.wait(120)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        print(*pool.map(child, [0]))
"""


def test_a_forked_pool_worker_compiles_what_its_parent_was_compiling(tmp_path):
    # Helper 122: a child's copy of the parent's job was finished by the parent's reply
    # thread only, so the child ran on NumPy for good; it hands the job off again now.
    script = tmp_path / "forked_pool.py"
    script.write_text(FORKED_POOL_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SRCXFORM_CACHE_DIR": str(tmp_path / "c")}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=TIMEOUT, check=True, env=env)
    assert out.stdout.splitlines()[-1] == "(True, 0)"
