"""Forward mode, hvp and vmap against JAX (issue 32's table), warm calls.

    python -m benchmarks.forward                 every case, a markdown table
    python -m benchmarks.forward --only hvp      one case (jacobian, hvp, per-example)

Cases: the Jacobian of a 100 -> 100 map (jacfwd and jacrev); hvp on Rosenbrock with
n = 1e6 against one gradient call; per-example gradients of logistic regression (1,000
examples x 50 features) by vmap(grad). srcxform's first call compiles and waits
(`SRCXFORM_TIERED=0`); the times are the median of warm calls, in this process (not
pinned: a quick look, not the pinned peers run of benchmarks/run.py).
"""

import argparse
import os
import statistics
import time
from types import SimpleNamespace

import numpy as np

os.environ.setdefault("SRCXFORM_TIERED", "0")  # first calls wait for their kernel


def _median_seconds(fn, repeat):
    fn()  # the first call compiles
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _jax():
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    return jax, jnp


def _map100(tf):
    return lambda x: tf.tanh(x * x[::-1]) + tf.reduce_sum(x) * 0.01


def jacobian_case(tf, jax):
    x = np.linspace(-1, 1, 100)
    fwd, rev = tf.jacfwd(_map100(tf)), tf.jacrev(_map100(tf))
    rows = {"jacfwd 100->100": _median_seconds(lambda: fwd(x), 5),
            "jacrev 100->100": _median_seconds(lambda: rev(x), 5)}
    peers = {}
    if jax:
        jx, jnp = jax
        f = _map100(SimpleNamespace(tanh=jnp.tanh, reduce_sum=jnp.sum))
        fwd, rev = jx.jit(jx.jacfwd(f)), jx.jit(jx.jacrev(f))
        peers = {"jacfwd 100->100": _median_seconds(lambda: fwd(x).block_until_ready(), 20),
                 "jacrev 100->100": _median_seconds(lambda: rev(x).block_until_ready(), 20)}
    return rows, peers


def _rosen(tf):
    return lambda x: tf.reduce_sum(100. * (x[1:] - x[:-1] ** 2) ** 2 + (1. - x[:-1]) ** 2)


def hvp_case(tf, jax):
    rng = np.random.default_rng(0)
    x, v = rng.standard_normal(10 ** 6), rng.standard_normal(10 ** 6)
    hvp, grad = tf.hvp(_rosen(tf)), tf.grad(_rosen(tf))
    rows = {"hvp rosenbrock 1e6": _median_seconds(lambda: hvp(x, v), 5),
            "grad rosenbrock 1e6 (one call)": _median_seconds(lambda: grad(x), 5)}
    peers = {}
    if jax:
        jx, jnp = jax
        f = _rosen(SimpleNamespace(reduce_sum=jnp.sum))
        jhvp = jx.jit(lambda x, v: jx.jvp(jx.grad(f), (x,), (v,))[1])
        jgrad = jx.jit(jx.grad(f))
        peers = {"hvp rosenbrock 1e6": _median_seconds(
                     lambda: jhvp(x, v).block_until_ready(), 10),
                 "grad rosenbrock 1e6 (one call)": _median_seconds(
                     lambda: jgrad(x).block_until_ready(), 10)}
    return rows, peers


def _logistic(tf, log1p_exp):
    def loss(w, x, y):
        z = tf.reduce_sum(w * x)
        return log1p_exp(-z) + (1. - y) * z
    return loss


def per_example_case(tf, jax):
    rng = np.random.default_rng(0)
    X, y, w = rng.standard_normal((1000, 50)), (rng.random(1000) < 0.5) * 1.0, np.zeros(50)
    loss = _logistic(tf, tf.nn.softplus)
    per = tf.vmap(tf.grad(loss), in_axes=(None, 0, 0))
    rows = {"per-example grads 1000x50": _median_seconds(lambda: per(w, X, y), 5)}
    peers = {}
    if jax:
        jx, jnp = jax
        jloss = _logistic(SimpleNamespace(reduce_sum=jnp.sum), jx.nn.softplus)
        jper = jx.jit(jx.vmap(jx.grad(jloss), in_axes=(None, 0, 0)))
        peers = {"per-example grads 1000x50": _median_seconds(
            lambda: jper(w, X, y).block_until_ready(), 20)}
    return rows, peers


CASES = {"jacobian": jacobian_case, "hvp": hvp_case, "per-example": per_example_case}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(CASES))
    args = parser.parse_args()
    import srcxform as tf

    jax = _jax()
    print("| case | srcxform (ms) | JAX jit (ms) |\n| --- | ---: | ---: |")
    for name, case in CASES.items():
        if args.only and name != args.only:
            continue
        rows, peers = case(tf, jax)
        for label, seconds in rows.items():
            peer = peers.get(label)
            shown = f"{peer * 1e3:.3f}" if peer is not None else "n/a"
            print(f"| {label} | {seconds * 1e3:.3f} | {shown} |", flush=True)


if __name__ == "__main__":
    main()
