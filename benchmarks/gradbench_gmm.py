"""GradBench's Gaussian mixture objective (gmm) as its TensorFlow tool writes it
(python/gradbench/gradbench/tools/tensorflow/gmm_objective.py, from ADBench), with
`import srcxform as tf`: a generator over the n rows stacked, the k triangular factors
built a column at a time by concat, `logsumexpvec` through transposes. Written here again
(not copied), operation for operation, so the compiler sees the program GradBench runs;
tests/objectives.py's gmm is our shorter variant of the same mathematics.

    python -m benchmarks.scaling --only gradbench-gmm-100,gradbench-gmm-1000
        first and warm calls beside JAX (see scaling.py)
    python -m benchmarks.gradbench_gmm profile 1000
        where one blocking first call's time goes: trace (with the adjoint) and passes,
        codegen, Numba's typing, lowering and LLVM (see profile)
"""

import math
import sys
import time

import numpy as np
from numba.core import event
from scipy import special


def inputs(d: int, k: int, n: int, seed: int = 31337) -> dict:
    """Inputs as GradBench's gmm generator draws them (evals/gmm/run.py: x, alpha, q and
    l normal, mu uniform; m = 0, gamma = 1), from a seeded generator, as arrays."""
    rng = np.random.default_rng(seed)
    x = np.array([rng.normal(size=d) for _ in range(n)])
    alpha = rng.normal(size=k)
    mu = np.array([rng.uniform(size=d) for _ in range(k)])
    q = np.array([rng.normal(size=d) for _ in range(k)])
    l = np.array([rng.normal(size=d * (d - 1) // 2) for _ in range(k)])
    return {"alpha": alpha, "mu": mu, "q": q, "l": l, "x": x}


def objective(tf, alpha, mu, q, l, x, m=0, gamma=1.0):
    """The negative log-posterior, GradBench's way (its sign and constants)."""
    k, d = mu.shape
    n = x.shape[0]
    q_diags = tf.exp(q)
    sum_qs = tf.reduce_sum(q, 1)
    factors = tf.stack(tuple(_lower(tf, d, l[j]) for j in range(k)))
    centered = tf.stack(tuple(x[i] - mu for i in range(n)))
    scaled = q_diags * centered + tf.linalg.matvec(factors, centered)
    inner = alpha + sum_qs - 0.5 * tf.reduce_sum(scaled ** 2, 2)
    total = tf.reduce_sum(_logsumexp_rows(tf, inner))
    const = tf.constant(-n * d * 0.5 * math.log(2 * math.pi), dtype=tf.float64)
    return const + total - n * _logsumexp(tf, alpha) \
        + _wishart(tf, k, d, gamma, m, sum_qs, q_diags, l)


def _lower(tf, d, row):
    """The d x d strictly lower triangle filled column by column from row."""
    columns, taken = [], 0
    for i in range(d):
        size = d - i - 1
        columns.append(tf.concat([tf.zeros(i + 1, dtype=tf.float64), row[taken:taken + size]], 0))
        taken += size
    return tf.stack(tuple(columns), -1)


def _logsumexp(tf, x):
    top = tf.reduce_max(x)
    return tf.reduce_logsumexp(x - top) + top


def _logsumexp_rows(tf, x):
    top = tf.reduce_max(x, 1)
    return tf.transpose(tf.reduce_logsumexp(tf.transpose(x) - top, 0) + top)


def _wishart(tf, k, p, gamma, m, sum_qs, q_diags, l):
    dof = p + m + 1
    out = tf.reduce_sum(0.5 * gamma * gamma * (tf.reduce_sum(q_diags ** 2, 1)
                                               + tf.reduce_sum(l ** 2, 1)) - m * sum_qs)
    c = dof * p * math.log(gamma / math.sqrt(2))
    return -out + k * (c - special.multigammaln(0.5 * dof, p))


NAMES = ("alpha", "mu", "q", "l", "x")


def profile(n: int) -> dict:
    """Where one blocking first call of the gradient (d = 2, k = 5) spends its time, in
    CPU seconds of the thread doing it (a loaded machine's wall time is mostly other
    processes'): our trace (with the adjoint and the passes) and codegen, timed alone
    first; then the first call (and its wall time), its Numba time by Numba's own events,
    each exclusive of the events nested in it: typing, lowering, LLVM under its lock."""
    import srcxform as tf
    from srcxform.jit import compiler

    args = [inputs(2, 5, n)[a] for a in NAMES]

    def fn(alpha, mu, q, l, x):
        return objective(tf, alpha, mu, q, l, x)

    stages = {}
    start = time.thread_time()
    kernel, generate = compiler.trace_kernel(fn, "grad", tuple(args), {}, list(args), None,
                                             wrt=(0, 1, 2, 3), parallel=False,
                                             as_eager=False)
    stages["trace + passes"] = time.thread_time() - start
    start = time.thread_time()
    kernel.generated(generate())
    stages["codegen"] = time.thread_time() - start
    stages["kernel lines"] = len(kernel.source.splitlines())
    numba = _NumbaStages()
    event.register("numba:run_pass", numba)
    event.register("numba:llvm_lock", numba)
    f = tf.differentiable(fn, wrt=(0, 1, 2, 3), wait=True)
    start, cpu = time.perf_counter(), time.process_time()
    f.grad(*args)
    stages["first call, wall"] = time.perf_counter() - start
    stages["first call, CPU (process)"] = time.process_time() - cpu
    stages.update(sorted(numba.stages.items(), key=lambda kv: -kv[1]))
    return stages


class _NumbaStages(event.Listener):
    """Exclusive time by stage of Numba's nested run_pass and llvm_lock events."""

    def __init__(self):
        self.stack, self.stages = [], {}

    def on_start(self, ev):
        self.stack.append([time.thread_time(), 0.0])

    def on_end(self, ev):
        began, nested = self.stack.pop()
        spent = time.thread_time() - began
        if self.stack:
            self.stack[-1][1] += spent
        name = "LLVM (llvm_lock)" if ev.kind == "numba:llvm_lock" else _stage(ev.data["name"])
        self.stages[name] = self.stages.get(name, 0.0) + spent - nested


def _stage(pass_name):
    """A Numba pass's stage: typing, lowering or another pass."""
    name = pass_name.split(" ")[0]
    if "type" in name:
        return "Numba typing"
    return "Numba lowering (Python side)" if "lowering" in name else "Numba, other passes"


if __name__ == "__main__":
    for stage, value in profile(int(sys.argv[2]) if len(sys.argv) > 2 else 1000).items():
        print(f"{stage}: {value:.3f}" if isinstance(value, float) else f"{stage}: {value}")
