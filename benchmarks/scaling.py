"""How the compiler's cost grows with the program: programs written with Python loops
over rows, at several sizes, against JAX where it is installed.

    python -m benchmarks.scaling                 the table (benchmarks/results/scaling.md)
    python -m benchmarks.scaling --only gmm-100  one case

Each measurement runs in a new process pinned to one core, srcxform with a fresh cache
folder: the first call blocks (`wait=True`: trace, passes, codegen and Numba's compile,
Numba's start-up included), as JAX's first call of `jit(grad(f))` compiles, timed on the
wall clock and in the process's CPU time (on a loaded machine the wall time is mostly
other processes'); then the median of warm calls. Cases: the unrolled pattern
`reduce_sum(stack([x[i] - mu for i in range(n)]) ** 2)` (mu 5 x 2, x n x 2), an unrolled
chain of adds (`s = s + x[i] * w[i]` for i < n, x and w n x 4, then `reduce_sum(s **
2)`; chain-sub subtracts the terms, chain-rows adds them to a 5 x 4 matrix, broadcast),
our Gaussian mixture (tests/objectives.py, d = 2, k = 5, GradBench's sizes) and
GradBench's own, as its TensorFlow tool writes it (benchmarks/gradbench_gmm.py, inputs
drawn as its generator draws them).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

_ROOT = Path(__file__).resolve().parents[1]
CASES = {"rows-10": ("rows", 10), "rows-100": ("rows", 100), "rows-1000": ("rows", 1000),
         "chain-10": ("chain", 10), "chain-30": ("chain", 30), "chain-100": ("chain", 100),
         "chain-300": ("chain", 300), "chain-sub-100": ("chain-sub", 100),
         "chain-rows-100": ("chain-rows", 100), "gmm-100": ("gmm", 100), "gmm-1000": ("gmm", 1000),
         "gradbench-gmm-100": ("gradbench-gmm", 100), "gradbench-gmm-300": ("gradbench-gmm", 300),
         "gradbench-gmm-1000": ("gradbench-gmm", 1000)}
SYSTEMS = ("srcxform", "jax")


def _inputs(kind, n):
    sys.path.insert(0, str(_ROOT / "tests"))
    from objectives import gmm_inputs

    if kind == "rows":
        rng = np.random.default_rng(0)
        return [rng.normal(size=(n, 2)), rng.normal(size=(5, 2))], 1
    if kind.startswith("chain"):
        rng = np.random.default_rng(0)
        return [rng.normal(size=(n, 4)), rng.normal(size=(n, 4))], 2
    if kind == "gradbench-gmm":
        from benchmarks.gradbench_gmm import NAMES, inputs

        return [inputs(2, 5, n)[a] for a in NAMES], 4
    inputs = gmm_inputs(2, 5, n)
    return [inputs[a] for a in ("alpha", "mu", "q", "l", "x")], 4


def _function(kind, n, tf):
    from objectives import gmm

    if kind == "rows":
        return lambda x, mu: tf.reduce_sum(tf.stack([x[i] - mu for i in range(n)]) ** 2)
    if kind.startswith("chain"):
        return _chain(n, tf, kind)
    if kind == "gradbench-gmm":
        from benchmarks.gradbench_gmm import objective

        return lambda alpha, mu, q, l, x: objective(tf, alpha, mu, q, l, x)
    return lambda alpha, mu, q, l, x: gmm(tf, alpha, mu, q, l, x)


def _chain(n, tf, kind):
    def chain(x, w):
        s = w[:5] * 1.0 if kind == "chain-rows" else x[0] * w[0]  # rows added to a matrix
        for i in range(1, n):
            s = s - x[i] * w[i] if kind == "chain-sub" else s + x[i] * w[i]
        return tf.reduce_sum(s ** 2)

    return chain


def _jax_tf(jnp):
    """The few TensorFlow names the objectives use, in JAX."""
    import jax.scipy.special

    return SimpleNamespace(
        exp=jnp.exp, float64=jnp.float64, reduce_max=lambda x, axis=None: jnp.max(x, axis),
        reduce_sum=lambda x, axis=None: jnp.sum(x, axis), transpose=jnp.transpose,
        reduce_logsumexp=lambda x, axis=None: jax.scipy.special.logsumexp(x, axis),
        constant=lambda v, dtype: jnp.asarray(v, dtype),
        stack=lambda xs, axis=0: jnp.stack(xs, axis),
        concat=lambda xs, axis: jnp.concatenate(xs, axis),
        zeros=lambda n, dtype: jnp.zeros(n, dtype), math=SimpleNamespace(log=jnp.log),
        linalg=SimpleNamespace(matvec=lambda a, b: jnp.einsum("...ij,...j->...i", a, b)))


def _measure(system, case):
    """In this process: the first call's and the warm calls' times, in ms."""
    kind, n = CASES[case]
    args, wrt = _inputs(kind, n)
    if system == "srcxform":
        import srcxform as tf

        f = tf.differentiable(_function(kind, n, tf), wrt=tuple(range(wrt)), wait=True)
        call = f.grad
    else:
        import jax

        jax.config.update("jax_enable_x64", True)
        grad = jax.jit(jax.grad(_function(kind, n, _jax_tf(jax.numpy)),
                                argnums=tuple(range(wrt))))

        def call(*a):
            return jax.block_until_ready(grad(*a))
    start, cpu = time.perf_counter(), time.process_time()
    call(*args)
    first, first_cpu = time.perf_counter() - start, time.process_time() - cpu
    start = time.perf_counter()
    call(*args)
    once = time.perf_counter() - start
    runs = []
    for _ in range(max(5, min(200, int(0.5 / max(once, 1e-5))))):  # about half a second
        start = time.perf_counter()
        call(*args)
        runs.append(time.perf_counter() - start)
    return {"first_ms": first * 1e3, "first_cpu_ms": first_cpu * 1e3,
            "warm_ms": statistics.median(runs) * 1e3}


def _child(system, case):
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    print(json.dumps(_measure(system, case)))


def _run(system, case, timeout):
    env = dict(os.environ, SRCXFORM_CACHE_DIR=tempfile.mkdtemp(prefix="scaling-"),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    try:
        r = subprocess.run([sys.executable, "-m", "benchmarks.scaling", "--child", system,
                            case], cwd=_ROOT, env=env, capture_output=True, text=True,
                           timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"not finished in {timeout} s"}
    if r.returncode:
        return {"error": (r.stderr.strip().splitlines() or ["?"])[-1][:120]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def _cell(result, key):
    return result.get("error") or f"{result[key]:.4g}"


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", nargs=2)
    parser.add_argument("--only", default=",".join(CASES))
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--out", default=str(_ROOT / "benchmarks" / "results" / "scaling.md"))
    options = parser.parse_args(argv)
    if options.child:
        return _child(*options.child)
    header = ("| case | srcxform first (ms) | JAX first (ms) | srcxform first, CPU (ms) | "
              "JAX first, CPU (ms) | srcxform warm (ms) | JAX warm (ms) |")
    rows = [header, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for case in options.only.split(","):
        results = {s: _run(s, case, options.timeout) for s in SYSTEMS}
        rows.append(f"| {case} | {_cell(results['srcxform'], 'first_ms')} | "
                    f"{_cell(results['jax'], 'first_ms')} | "
                    f"{_cell(results['srcxform'], 'first_cpu_ms')} | "
                    f"{_cell(results['jax'], 'first_cpu_ms')} | "
                    f"{_cell(results['srcxform'], 'warm_ms')} | "
                    f"{_cell(results['jax'], 'warm_ms')} |")
        print(rows[-1], flush=True)
    Path(options.out).write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
