"""A compiled function's Python side effects (a print, a counter) run when it is traced:
once per form and new signature in a process, never at a warm call, whatever the cache
(cold, or a kernel found in the on-disk index), tiering (first calls on NumPy while the
kernel compiles, or waiting for it) and threads. Tier 0 runs the traced program, not the
function (srcxform/jit/interpret.py); an indexed kernel's function is traced all the same."""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import srcxform as tf

SCRIPT = textwrap.dedent("""
    import io, contextlib
    import numpy as np
    import srcxform as tf

    @tf.differentiable
    def f(x):
        print("traced")
        return tf.reduce_sum(x * x)

    calls = []  # a function reading a list of the program's is not indexed

    @tf.differentiable
    def g(x):
        calls.append(1)
        return tf.reduce_sum(x * x)

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        for _ in range(6):
            f(np.ones(3))
            g(np.ones(3))
        for _ in range(3):
            f(np.ones((2, 2)))  # a new signature: traced once more
            g(np.ones((2, 2)))
    print(buf.getvalue().count("traced"), f.cache_info().loaded, len(calls))
""")


def run(cache, tiered):
    env = dict(os.environ, SRCXFORM_CACHE_DIR=str(cache), SRCXFORM_TIERED=tiered)
    env.pop("SRCXFORM_CHECK", None)  # check=True runs the function again beside the kernel
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return [int(n) for n in done.stdout.split()]


@pytest.mark.parametrize("tiered", ["1", "0"])
def test_python_runs_once_per_signature_with_a_cold_cache(tmp_path, tiered):
    assert run(tmp_path, tiered) == [2, 0, 2]  # traced and compiled


@pytest.mark.slow
@pytest.mark.parametrize("tiered", ["1", "0"])
def test_python_runs_once_per_signature_with_a_warm_cache(tmp_path, tiered):
    run(tmp_path, "0")  # fills the index (a tiered run's may still be compiling at exit)
    assert run(tmp_path, tiered) == [2, 2, 2]  # f's two kernels from the index


def test_python_runs_once_when_threads_make_the_first_calls(monkeypatch):
    monkeypatch.delenv("SRCXFORM_CHECK", raising=False)
    calls = []

    @tf.differentiable
    def f(x):
        calls.append(1)
        return tf.reduce_sum(tf.tanh(x))

    barrier = threading.Barrier(4)

    def call():
        barrier.wait()
        for _ in range(3):
            f.grad(np.ones(5))

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
