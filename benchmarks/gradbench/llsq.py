"""GradBench's `llsq`: the least-squares fit of a degree m-1 polynomial to sign(t) at n
points t_i = -1 + 2i/(n-1); `primal` is half the sum of squared residuals, `gradient` its
gradient in the m coefficients x (evals/llsq/run.py: x uniform in [0, 1), m = 128, n from
16 to 16,392, seed 31337)."""

import numpy as np

import srcxform as tf
from benchmarks.gradbench.common import Case, jax_module

SIZES = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8196, 16392)
M = 128


def inputs(m: int = M) -> np.ndarray:
    np.random.seed(31337)
    return np.random.rand(m)


def llsq(x, n: int, m: int):
    """The srcxform program: the powers t_i^j by a running product along each row, as
    GradBench's JAX tool makes them, then one matrix-vector product. (linspace of Python
    floats is float32, as in TensorFlow: the float64 start keeps t exact.)"""
    t = tf.linspace(tf.constant(-1.0, tf.float64), 1.0, n)
    repeated = tf.concat([tf.ones((n, 1), tf.float64), tf.tile(t[:, None], (1, m - 1))], 1)
    powers = tf.math.cumprod(repeated, axis=1)
    residual = tf.sign(t) - tf.linalg.matvec(powers, x)
    return tf.reduce_sum(residual * residual) / 2.0


def srcxform_builder(function: str, x: np.ndarray, n: int):
    def build():
        f = tf.differentiable(lambda v: llsq(v, n, x.shape[0]), wait=True)
        return (lambda: f(x)) if function == "primal" else (lambda: f.grad(x))
    return build


# ----- peer: adapted from python/gradbench/gradbench/tools/jax/llsq.py (no PyTorch tool) -----


def jax_builder(function: str, x: np.ndarray, n: int):
    def build():
        jax = jax_module()
        jnp = jax.numpy

        def llsq_jax(v):
            m = v.shape[0]

            def residual_squared(i):
                ti = -1.0 + (i * 2.0) / (n - 1.0)
                muls = jnp.cumprod(jnp.full(m, ti).at[0].set(1))
                return (jnp.sign(ti) + jnp.sum(-v * muls)) ** 2

            return jnp.sum(jax.vmap(residual_squared)(jnp.arange(n))) / 2.0

        f = jax.jit(llsq_jax if function == "primal" else jax.grad(llsq_jax))
        arg = jnp.asarray(x)
        return lambda: f(arg).block_until_ready()
    return build


def cases(sizes=(16, 16392)) -> list:
    out, x = [], inputs()
    for n in sizes:
        for function in ("primal", "gradient"):
            out.append(Case("llsq", function, f"n={n},m={M}", srcxform_builder(function, x, n),
                            {"JAX": jax_builder(function, x, n)}))
    return out
