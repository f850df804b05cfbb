"""How the compiler's cost grows with the program: programs written with Python loops
over rows, at several sizes, against JAX and TensorFlow where they are installed.

    python -m benchmarks.scaling                 the table (benchmarks/results/scaling.md)
    python -m benchmarks.scaling --only gmm-100  one case

Each measurement runs in a new process pinned to one core, srcxform with a fresh cache
folder: the first call blocks (`wait=True`: trace, passes, codegen and Numba's compile,
Numba's start-up included), as JAX's first call of `jit(grad(f))` compiles and
TensorFlow's first call of a `tf.function` around a GradientTape's gradient traces its
graph (one intra-op and one inter-op thread), timed on the wall clock and in the
process's CPU time (on a loaded machine the wall time is mostly other processes'); then
the median of warm calls, and how many threads ran in them (benchmarks/threads.py's
meter). Each system's gradient is checked against srcxform's. Cases: the unrolled pattern
`reduce_sum(stack([x[i] - mu for i in range(n)]) ** 2)` (mu 5 x 2, x n x 2), an unrolled
chain of adds (`s = s + x[i] * w[i]` for i < n, x and w n x 4, then `reduce_sum(s **
2)`; chain-sub subtracts the terms, chain-rows adds them to a 5 x 4 matrix, broadcast),
our Gaussian mixture (tests/objectives.py, d = 2, k = 5, GradBench's sizes) and
GradBench's own, as its TensorFlow tool writes it (benchmarks/gradbench_gmm.py, inputs
drawn as its generator draws them).
"""

import argparse
import importlib.util
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

from benchmarks import threads

_ROOT = Path(__file__).resolve().parents[1]
CASES = {"rows-10": ("rows", 10), "rows-100": ("rows", 100), "rows-1000": ("rows", 1000),
         "chain-10": ("chain", 10), "chain-30": ("chain", 30), "chain-100": ("chain", 100),
         "chain-300": ("chain", 300), "chain-sub-100": ("chain-sub", 100),
         "chain-rows-100": ("chain-rows", 100), "gmm-100": ("gmm", 100), "gmm-1000": ("gmm", 1000),
         "gradbench-gmm-100": ("gradbench-gmm", 100), "gradbench-gmm-300": ("gradbench-gmm", 300),
         "gradbench-gmm-1000": ("gradbench-gmm", 1000)}
SYSTEMS = {"srcxform": "srcxform", "jax": "JAX", "tensorflow": "TF"}  # module: column
COLUMNS = {"first_ms": "first", "first_cpu_ms": "first, CPU", "warm_ms": "warm"}


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
    elif system == "tensorflow":
        call, args = _tf_gradient(kind, n, wrt, args)
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
    runs, meter = [], threads.CpuMeter()
    for _ in range(max(5, min(200, int(0.5 / max(once, 1e-5))))):  # about half a second
        before, start = threads.snapshot(), time.perf_counter_ns()
        grads = call(*args)
        runs.append(time.perf_counter_ns() - start)
        meter.add(before, threads.snapshot(), runs[-1])
    return {"first_ms": first * 1e3, "first_cpu_ms": first_cpu * 1e3,
            "warm_ms": statistics.median(runs) / 1e6, "threads": meter.threads(),
            "grad": [np.asarray(g).tolist() for g in grads]}


def _tf_gradient(kind, n, wrt, args):
    """GradBench's TensorFlow tool's gradient (a GradientTape's, wrt the first `wrt`
    arguments) in a tf.function, and the arguments as tensors."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)  # before TF's first op
    tf.config.threading.set_inter_op_parallelism_threads(1)
    f = _function(kind, n, tf)

    @tf.function
    def gradient(*args):
        with tf.GradientTape() as tape:
            tape.watch(args[:wrt])
            value = f(*args)
        return tape.gradient(value, args[:wrt])

    return gradient, [tf.constant(a) for a in args]


def _child(system, case):
    threads.pin({max(os.sched_getaffinity(0))})
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


def _check(results):
    """Marks a system whose gradient is not srcxform's (to rounding) as an error."""
    reference = results["srcxform"].get("grad")
    for system, result in results.items():
        if reference is None or "grad" not in result:
            continue
        if len(result["grad"]) != len(reference) or not all(
                np.allclose(g, r, rtol=1e-8, atol=1e-10)
                for g, r in zip(result["grad"], reference)):
            results[system] = {"error": "gradient differs from srcxform's"}


def _row(case, results):
    cells = [_cell(results[s], key) for key in COLUMNS for s in SYSTEMS]
    ran = "/".join(str(results[s].get("threads", "-")) for s in SYSTEMS)
    return f"| {case} | " + " | ".join(cells) + f" | {ran} |"


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", nargs=2)
    parser.add_argument("--only", default=",".join(CASES))
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--out", default=str(_ROOT / "benchmarks" / "results" / "scaling.md"))
    options = parser.parse_args(argv)
    if options.child:
        return _child(*options.child)
    absent = [s for s in SYSTEMS if importlib.util.find_spec(s) is None]
    rows = ["| case | " + " | ".join(f"{SYSTEMS[s]} {title} (ms)" for title in COLUMNS.values()
                                    for s in SYSTEMS)
            + f" | threads ran, warm ({'/'.join(SYSTEMS.values())}) |",
            "| --- |" + " ---: |" * (len(COLUMNS) * len(SYSTEMS)) + " :---: |"]
    for case in options.only.split(","):
        results = {s: {"error": "not installed"} if s in absent else
                   _run(s, case, options.timeout) for s in SYSTEMS}
        _check(results)
        rows.append(_row(case, results))
        print(rows[-1], flush=True)
    notes = [f"{SYSTEMS[s]} is not installed: its cells say so." for s in absent]
    if notes:
        print(*notes, sep="\n")
    Path(options.out).write_text("\n".join(rows + notes) + "\n")


if __name__ == "__main__":
    main()
