"""GradBench's `lse`: log-sum-exp of a vector, `primal` and `gradient`
(evals/lse/run.py: x uniform in [0, 1), n from 2,500 to 1,280,000, seed 31337)."""

import numpy as np

import srcxform as tf
from benchmarks.gradbench.common import Case, jax_module

SIZES = (2500, 5000, 10000, 20000, 40000, 80000, 160000, 320000, 640000, 1280000)


def inputs(n: int) -> np.ndarray:
    np.random.seed(31337)
    return np.random.rand(n)


def logsumexp(x):
    """The srcxform program: shifted by the maximum, as every GradBench tool writes it."""
    top = tf.reduce_max(x)
    return tf.math.log(tf.reduce_sum(tf.exp(x - top))) + top


def srcxform_builder(function: str, x: np.ndarray):
    def build():
        f = tf.differentiable(logsumexp, wait=True)
        return (lambda: f(x)) if function == "primal" else (lambda: f.grad(x))
    return build


# ----- peers: adapted from python/gradbench/gradbench/tools/{jax,pytorch}/lse.py -----


def jax_builder(function: str, x: np.ndarray):
    def build():
        jax = jax_module()
        jnp = jax.numpy

        def lse(v):
            top = jnp.max(v)
            return jnp.log(jnp.sum(jnp.exp(v - top))) + top

        f = jax.jit(lse if function == "primal" else jax.grad(lse))
        arg = jnp.asarray(x)
        return lambda: f(arg).block_until_ready()
    return build


def torch_builder(function: str, x: np.ndarray):
    def build():
        import torch
        from torch.autograd.functional import vjp

        def lse(v):
            top = torch.max(v)
            return top + torch.log(torch.sum(torch.exp(v - top)))

        arg, seed = torch.tensor(x), torch.tensor(1.0, dtype=torch.float64)
        if function == "primal":
            return lambda: lse(arg)
        return lambda: vjp(lse, arg, v=seed)[1]
    return build


def cases(sizes=(2500, 1280000)) -> list:
    out = []
    for n in sizes:
        x = inputs(n)
        for function in ("primal", "gradient"):
            out.append(Case("lse", function, f"n={n}", srcxform_builder(function, x),
                            {"JAX": jax_builder(function, x),
                             "PyTorch": torch_builder(function, x)}))
    return out
