"""parallel=True: the same results as the serial code, at every size (the chunked prange
a slice's adjoint gets runs an interior of the index range in 64 chunks, and the edges
with their bounds tests), serial code without pranges, and idle OpenMP workers that
sleep (srcxform/jit/openmp.py)."""

import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import srcxform as tf
from srcxform.jit import openmp
from srcxform.codegen.lower import PARALLEL_MIN

ROOT = Path(__file__).resolve().parents[1]


def rosenbrock(x):
    return tf.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def broadcast_2d(X, b):
    return tf.reduce_sum(tf.tanh(X + b) ** 2)


def row_sums(X):
    return tf.reduce_sum(tf.reduce_sum(X * X, axis=1) ** 2)


def column_sums(X):
    return tf.reduce_sum(tf.reduce_sum(X * X, axis=0) ** 2)


def offsets(x):
    return tf.reduce_sum(x[2:-3] * x[1:-4] + x[5:] ** 2)


def exp_tanh(x):
    return tf.reduce_sum(tf.exp(-x[1:]) * tf.tanh(x[:-1]))


def differences_2d(X):
    return tf.reduce_sum((X[1:, :] - X[:-1, :]) ** 2) + tf.reduce_sum(X[:, 1:] * X[:, :-1])


def nested_slices(x):
    return tf.reduce_sum(x[1:][1:] * x[:-2] + x[1:-1] ** 3)


def first_element(x):  # an integer index: its adjoint tests i0 == 0, which is no bound
    return x[0] * tf.reduce_sum(x[1:] ** 2)


def sums_beside_slices(x, a):  # scalar sums in the chunked loop, and in its edges
    y = x[1:] * x[:-1]
    return tf.reduce_sum(tf.tanh(a * y)) + tf.reduce_sum(x * a)


def sliced_rows(X):  # the chunked loop's views are 2-D; a bounds test on the inner axis
    r = tf.reduce_sum(X[:, 1:] * X[:, :-1], axis=1)
    return tf.reduce_sum(r[1:] ** 2 * X[1:, 0] + r[:-1])


def vector(n):
    return (np.linspace(-1.5, 1.3, n),)


def matrix(n):
    return (np.linspace(-1.0, 1.2, 5 * n).reshape(n, 5),)


CASES = {
    "rosenbrock": (rosenbrock, 0, vector),
    "broadcast_2d": (broadcast_2d, (0, 1),
                     lambda n: matrix(n) + (np.array([0.1, -0.2, 0.3, 0.0, 0.5]),)),
    "row_sums": (row_sums, 0, matrix),
    "column_sums": (column_sums, 0, matrix),
    "offsets": (offsets, 0, vector),
    "exp_tanh": (exp_tanh, 0, vector),
    "differences_2d": (differences_2d, 0, matrix),
    "nested_slices": (nested_slices, 0, vector),
    "first_element": (first_element, 0, vector),
    "sums_beside_slices": (sums_beside_slices, (0, 1), lambda n: vector(n) + (0.7,)),
    "sliced_rows": (sliced_rows, 0, matrix),
}

# Below PARALLEL_MIN elements a nest runs serially; 70_001 and 70_065 (and five times
# that in `matrix`) run in parallel, in chunks of unequal sizes.
SIZES = (1, 2, 3, 4, 6, 7, 65, 130, 1001, 70_001, 70_065)


def _flat(result):
    value, grads = result
    return [value] + (list(grads) if isinstance(grads, (tuple, list)) else [grads])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_parallel_equals_serial_at_every_size(name):
    fn, wrt, make = CASES[name]
    serial = tf.differentiable(fn, wrt=wrt)
    parallel = tf.differentiable(fn, wrt=wrt, parallel=True)
    for n in SIZES:
        args = make(n)
        expected, got = _flat(serial.value_and_grad(*args)), _flat(parallel.value_and_grad(*args))
        assert len(got) == len(expected)
        # In parallel, loops with sums call libm's exp and tanh; serial ones store their
        # terms and vectorize with vecmath's (both within 4e-16 of NumPy's), so where
        # terms cancel, a few units of 1e-16 differ.
        atol = 0 if n < PARALLEL_MIN else 1e-14
        for a, b in zip(expected, got):
            np.testing.assert_allclose(b, a, rtol=1e-12, atol=atol, err_msg=f"{name}, n={n}")


def test_a_slice_adjoint_runs_in_chunks_and_the_serial_code_has_no_prange():
    x = np.linspace(-1, 1, 10)
    source = tf.differentiable(rosenbrock, parallel=True).source(x)
    assert "for c0 in prange(chunks):" in source
    assert "for edge in (range(lo), range(hi, n0)):" in source
    assert "bx_c[i0] = bx_i" in source  # the interior writes through a view
    assert "prange" not in tf.differentiable(rosenbrock).source(x)


def scalar_poly(x):
    return x ** 3 - 2.0 * x


def test_a_parallel_kernel_with_no_prange_compiles_without_numbas_warning():
    """Helper 146: Numba warned (NumbaPerformanceWarning, naming the cache's file) of a
    parallel=True kernel whose code has no prange (a vmap's of a loop): the kernel is
    compiled serially where its source makes no prange."""
    f = tf.differentiable(scalar_poly, parallel=True, wait=True)
    assert "prange" not in f.source(2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f.value_and_grad(np.float64(2.0)) == (4.0, 10.0)


def test_a_nest_below_the_threshold_runs_serially():
    source = tf.differentiable(row_sums, parallel=True).source(*matrix(3))
    # Each parallel nest is one branch of a test of its element count; the other runs
    # the same body in plain loops (a prange would wake the thread pool).
    tests = re.findall(rf"^    if (.+) >= {PARALLEL_MIN}:$", source, re.MULTILINE)
    assert tests == ["n0 * n1", "n0", "n0 * n1"]  # the row sums, the fused loop, bX
    assert source.count("\n    else:\n        for i0 in range(n0):\n") == 3


def test_a_float32_sum_in_a_parallel_kernel_adds_in_float64(monkeypatch):
    """Found by helper 117: each thread's share was one running float32 sum, 9e-4 off
    over 2e5 equal terms (serial code adds chunks in lanes: 2e-6)."""
    monkeypatch.setenv("SRCXFORM_CHECK", "0")  # the compiled path alone
    x = np.full(2 * PARALLEL_MIN, 0.64, np.float32)
    f = tf.differentiable(lambda x: tf.reduce_sum(x * x), parallel=True)
    assert "_wide = np.float64(0.0)" in f.source(x)
    got = f(x)
    assert got.dtype == tf.float32
    np.testing.assert_allclose(got, np.sum(x.astype(np.float64) ** 2), rtol=1e-7)


def test_an_integer_index_keeps_the_plain_prange():
    x = np.linspace(-1, 1, 10)
    source = tf.differentiable(first_element, parallel=True).source(x)
    assert "prange(n0)" in source and "chunks" not in source


def test_generated_names_do_not_clash_with_the_users():
    def f(lo, hi):
        start = lo * hi
        return tf.reduce_sum(start[1:] - start[:-1] ** 2)

    args = (np.linspace(0.0, 1.0, 9), np.linspace(1.0, 2.0, 9))
    serial = tf.differentiable(f, wrt=(0, 1)).value_and_grad(*args)
    g = tf.differentiable(f, wrt=(0, 1), parallel=True)
    parallel = g.value_and_grad(*args)
    for a, b in zip(_flat(serial), _flat(parallel)):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=0)
    source = g.source(*args)
    assert "chunks" in source and "start_1 = " in source  # `start` is the user's


# ----- how idle OpenMP workers wait -----


def test_a_parallel_function_makes_openmp_workers_sleep_before_numba_loads_openmp():
    # In a new process: making the function sets the policy while libgomp is not loaded
    # yet; its first call starts Numba's pool, and libgomp reads the policy as it loads.
    script = textwrap.dedent("""
        import os
        import numba
        import numpy as np
        import srcxform as tf

        def libgomp_loaded():
            with open("/proc/self/maps") as maps:
                return "libgomp" in maps.read()

        def loss(x):
            return tf.reduce_sum(x * x)

        serial = tf.differentiable(loss)
        print(os.environ.get("OMP_WAIT_POLICY"))
        f = tf.differentiable(loss, parallel=True)
        print(os.environ.get("OMP_WAIT_POLICY"), libgomp_loaded())
        x = np.linspace(-1.0, 1.0, 70_001)
        assert np.array_equal(f.grad(x), 2 * x)
        print(numba.threading_layer() != "omp" or libgomp_loaded())
        """)
    env = {k: v for k, v in os.environ.items() if k not in openmp._USER_SETTINGS}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300, check=False,
                         env={**env, "PYTHONPATH": str(ROOT), "SRCXFORM_TIERED": "0"})
    assert out.returncode == 0, out.stderr
    assert out.stdout == "None\nPASSIVE False\nTrue\n"


@pytest.mark.parametrize("setting", ["OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME"])
def test_a_users_wait_setting_is_kept(monkeypatch, setting):
    monkeypatch.setattr(os, "environ", {setting: "1000"})
    assert not openmp.passive_idle_workers()
    tf.differentiable(rosenbrock, parallel=True)
    assert os.environ == {setting: "1000"}


def test_a_pool_already_started_is_left_as_it_is(monkeypatch):
    import numba

    monkeypatch.setattr(os, "environ", {})
    monkeypatch.setattr(numba, "threading_layer", lambda: "omp")
    assert not openmp.passive_idle_workers()
    assert os.environ == {}

    def not_started():
        raise ValueError("Threading layer is not initialized.")

    monkeypatch.setattr(numba, "threading_layer", not_started)
    assert openmp.passive_idle_workers()
    assert os.environ == {"OMP_WAIT_POLICY": "PASSIVE"}
