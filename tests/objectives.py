"""Objectives written as TensorFlow users write them: Python loops over rows, unrolled
while tracing, with many small slices, stacks and products. Our own versions of the
shapes of GradBench's (ADBench's) Gaussian mixture objective, for the compiler-scaling
tests and benchmarks; `gmm_numpy` is the same mathematics in NumPy, the reference. And
Rosenbrock's function with its Hessian in closed form, for the second-order tests."""

import math

import numpy as np
from scipy.special import logsumexp, multigammaln

import srcxform


def rosen(x):
    """Rosenbrock's function of a vector: the sum over consecutive pairs (W3)."""
    return srcxform.reduce_sum(100. * (x[1:] - x[:-1] ** 2) ** 2 + (1. - x[:-1]) ** 2)


def rosen_hessian(x):
    """rosen's Hessian at x, in closed form."""
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        h[i + 1, i + 1] += 200
        h[i, i + 1] = h[i + 1, i] = -400 * x[i]
    return h


def gmm_inputs(d, k, n, seed=0):
    """Random inputs of GMM's sizes: d dimensions, k components, n points."""
    rng = np.random.default_rng(seed)
    return {"alpha": rng.normal(size=k), "mu": rng.normal(size=(k, d)),
            "q": rng.normal(size=(k, d)) * 0.3, "l": rng.normal(size=(k, d * (d - 1) // 2)),
            "x": rng.normal(size=(n, d))}


def _lower_triangle(tf, l_row, d):
    """The d x d strictly-lower-triangular matrix whose columns are filled from l_row in
    order, built a column at a time as user code does."""
    columns, taken = [], 0
    for c in range(d):
        below = d - c - 1
        columns.append(tf.concat([tf.zeros(c + 1, dtype=tf.float64),
                                  l_row[taken:taken + below]], 0))
        taken += below
    return tf.stack(columns, -1)


def gmm(tf, alpha, mu, q, l, x, gamma=1.0, m=0):
    """The negative log-likelihood of x under a Gaussian mixture with precision factors
    exp(q) on the diagonal and l below it, plus a Wishart prior, written with `tf` (a
    module: srcxform or TensorFlow)."""
    k, d = mu.shape
    n = x.shape[0]
    diag = tf.exp(q)
    sum_q = tf.reduce_sum(q, 1)
    tri = tf.stack([_lower_triangle(tf, l[j], d) for j in range(k)])
    centered = tf.stack([x[i] - mu for i in range(n)])  # n x k x d
    scaled = diag * centered + tf.linalg.matvec(tri, centered)
    inner = alpha + sum_q - 0.5 * tf.reduce_sum(scaled ** 2, 2)
    top = tf.reduce_max(inner, 1)
    log_like = tf.reduce_sum(tf.math.log(tf.reduce_sum(tf.exp(inner - top[:, None]), 1)) + top)
    alpha_top = tf.reduce_max(alpha)
    log_alpha = tf.math.log(tf.reduce_sum(tf.exp(alpha - alpha_top))) + alpha_top
    prior = tf.reduce_sum(0.5 * gamma * gamma * (tf.reduce_sum(diag ** 2, 1)
                                                 + tf.reduce_sum(l ** 2, 1)) - m * sum_q)
    return -(log_like - n * log_alpha - prior) + _constants(d, k, n, gamma, m)


def _constants(d, k, n, gamma, m):
    dof = d + m + 1
    wishart = k * (dof * d * math.log(gamma / math.sqrt(2)) - multigammaln(0.5 * dof, d))
    return n * d * 0.5 * math.log(2 * math.pi) - wishart


def gmm_numpy(alpha, mu, q, l, x, gamma=1.0, m=0):
    """gmm in NumPy, by matrices rather than rows: the reference."""
    k, d = mu.shape
    n = x.shape[0]
    tri = np.zeros((k, d, d))
    rows, cols = np.triu_indices(d, 1)  # column-major order of the strict lower triangle
    tri[:, cols, rows] = l
    diag = np.exp(q)
    centered = x[:, None, :] - mu[None]
    scaled = diag * centered + np.einsum("kij,nkj->nki", tri, centered)
    inner = alpha + q.sum(1) - 0.5 * (scaled ** 2).sum(2)
    prior = np.sum(0.5 * gamma ** 2 * ((diag ** 2).sum(1) + (l ** 2).sum(1)) - m * q.sum(1))
    return -(logsumexp(inner, 1).sum() - n * logsumexp(alpha) - prior) \
        + _constants(d, k, n, gamma, m)
