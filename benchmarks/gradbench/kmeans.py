"""GradBench's `kmeans`: `cost`, the sum over points of the squared distance to the
nearest centroid, and `dir`, the Newton direction J / H of the cost in the centroids (H's
diagonal, the Hessian-vector product along ones) (evals/kmeans/run.py: points uniform in
[0, 1)^d, the centroids the last k points, k in 10, 100, 1000, n in 1,000, 10,000, d in 8,
16, seed 31337)."""

import numpy as np

import srcxform as tf
from benchmarks.gradbench.common import Case, jax_module

SIZES = tuple((k, n, d) for k in (10, 100, 1000) for n in (1000, 10000) for d in (8, 16))


def inputs(k: int, n: int, d: int):
    np.random.seed(31337)
    points = np.random.rand(n, d)
    return points, points[-k:].copy()


def cost(points, centroids):
    """The srcxform program: all squared distances (k x n) by one product, the nearest."""
    squared = (tf.reduce_sum(centroids * centroids, 1)[:, None]
               + tf.reduce_sum(points * points, 1)[None, :]
               - 2.0 * tf.matmul(centroids, tf.transpose(points)))
    return tf.reduce_sum(tf.reduce_min(squared, 0))


def newton_direction(points, centroids):
    """J / diag(H): forward over reverse, the gradient and its JVP along ones together."""
    with tf.autodiff.ForwardAccumulator(centroids, tf.ones_like(centroids)) as acc:
        with tf.GradientTape() as tape:
            tape.watch(centroids)
            value = cost(points, centroids)
        gradient = tape.gradient(value, centroids)
    return gradient / acc.jvp(gradient)


def srcxform_builder(function: str, points, centroids):
    def build():
        f = tf.differentiable(cost if function == "cost" else newton_direction, wait=True)
        return lambda: f(points, centroids)
    return build


# ----- peers: adapted from python/gradbench/gradbench/tools/{jax,pytorch}/kmeans.py -----


def jax_builder(function: str, points, centroids):
    def build():
        jax = jax_module()
        jnp = jax.numpy

        def cost_jax(p, c):
            squared = (jnp.sum(p**2, 1)[None, :] + jnp.sum(c**2, 1)[:, None]
                       - 2 * jnp.matmul(p, c.T).T)
            return jnp.min(squared, axis=0).sum()

        def direction(p, c):
            g, h = jax.jvp(jax.grad(lambda cs: cost_jax(p, cs)), [c], [jnp.ones(c.shape)])
            return g / h

        f = jax.jit(cost_jax if function == "cost" else direction)
        p, c = jnp.asarray(points), jnp.asarray(centroids)
        return lambda: f(p, c).block_until_ready()
    return build


def torch_builder(function: str, points, centroids):
    def build():
        import torch
        from torch.autograd.functional import vhp, vjp

        def cost_torch(p, c):
            squared = (p**2).sum(1)[None, :] + (c**2).sum(1)[:, None] - 2 * torch.matmul(c, p.T)
            return torch.min(squared, dim=0)[0].sum()

        p, c = torch.tensor(points), torch.tensor(centroids)
        seed, ones = torch.tensor(1.0, dtype=torch.float64), torch.ones_like(c)

        def direction():
            jac = vjp(lambda cs: cost_torch(p, cs), c, v=seed)[1]
            hes = vhp(lambda cs: cost_torch(p, cs), c, v=ones)[1]
            return jac / hes

        return (lambda: cost_torch(p, c)) if function == "cost" else direction
    return build


def cases(sizes=((10, 1000, 8), (1000, 10000, 16))) -> list:
    out = []
    for k, n, d in sizes:
        points, centroids = inputs(k, n, d)
        for function in ("cost", "dir"):
            out.append(Case("kmeans", function, f"k={k},n={n},d={d}",
                            srcxform_builder(function, points, centroids),
                            {"JAX": jax_builder(function, points, centroids),
                             "PyTorch": torch_builder(function, points, centroids)}))
    return out
