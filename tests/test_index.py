"""The on-disk kernel index: a new process skips tracing a function it has seen, and only
when nothing the trace read can have changed."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import srcxform as tf
from srcxform.jit import index

SCALE = 3.0
WEIGHTS = np.ones(3)


def reads_a_float(x):
    return tf.reduce_sum(SCALE * x * x)


def reads_an_array(x):
    return tf.reduce_sum(WEIGHTS * x)


def calls_a_helper(x):
    return reads_a_float(x) + 1.0


def test_the_digest_covers_code_globals_and_closures():
    global SCALE
    first = index.function_digest(reads_a_float)
    assert first == index.function_digest(reads_a_float)
    SCALE = 4.0
    try:
        assert index.function_digest(reads_a_float) != first
    finally:
        SCALE = 3.0

    def make(scale):
        return lambda x: scale * x

    assert index.function_digest(make(1.0)) != index.function_digest(make(2.0))
    assert index.function_digest(calls_a_helper) is not None
    composed = index.function_digest(tf.differentiable(reads_a_float).grad)
    assert composed is not None
    assert composed != index.function_digest(tf.differentiable(reads_a_float, wrt=1).grad)


def test_functions_reading_arrays_or_objects_are_not_indexed():
    assert index.function_digest(reads_an_array) is None
    assert index.function_digest(lambda x: x * tf.Variable(1.0)) is not None  # made inside
    variable = tf.Variable(1.0)
    assert index.function_digest(lambda x: x * variable) is None
    assert index.function_digest(tf.differentiable(reads_an_array).grad) is None


@pytest.mark.slow
def test_a_new_process_finds_the_kernel_and_its_entries_without_tracing(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(textwrap.dedent("""
        import sys
        import numpy as np
        import srcxform as tf
        from srcxform import api
        from srcxform.jit import backend

        SCALE = float(sys.argv[1])

        def loss(w, x):
            return tf.reduce_sum(tf.tanh(x * w) * SCALE)

        if sys.argv[2] == "no-tracing":
            api.Trace = None  # a trace would fail
            backend.compile = None  # so would compiling an entry's source
        f = tf.differentiable(loss)
        print(f.grad(np.ones(4), np.arange(4.0)).tolist())
        print(float(f(np.ones(5), np.arange(5.0))))  # a Tensor, as eager returns
        """))
    env = dict(os.environ, SRCXFORM_CACHE_DIR=str(tmp_path / "cache"))

    def run(*args):
        done = subprocess.run([sys.executable, str(script), *args], env=env,
                              capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        return [eval(line) for line in done.stdout.splitlines()]

    first = run("1.0", "trace")
    assert run("1.0", "no-tracing") == first
    env["SRCXFORM_DUMP"] = "source"  # asks to see the pipeline: traced again
    assert "def loss__grad(" in subprocess.run(
        [sys.executable, str(script), "1.0", "trace"], env=env, capture_output=True,
        text=True, timeout=300, check=False).stdout
    del env["SRCXFORM_DUMP"]
    doubled = run("2.0", "trace")  # a changed global: traced again
    x = np.arange(4.0)
    np.testing.assert_allclose(doubled[0], 2 * (1 - np.tanh(x) ** 2) * x, rtol=1e-12)
