"""GradBench's `ode`: s steps of fourth-order Runge-Kutta from y = 0 to t = 2 of
y_0' = x_0, y_i' = x_i y_{i-1}; `primal` is the final y, `gradient` the gradient of its
last element with respect to x (evals/ode/run.py: x uniform in [0, 1), n in 1,000,
10,000, 100,000, s in 1, 10, 100, seed 31337)."""

import numpy as np

import srcxform as tf
from benchmarks.gradbench.common import Case, jax_module

SIZES = tuple((n, s) for n in (1000, 10000, 100000) for s in (1, 10, 100))
T_END = 2.0


def inputs(n: int) -> np.ndarray:
    np.random.seed(31337)
    return np.random.rand(n)


def solve(x, steps):
    """The srcxform program: the RK4 steps as one compiled loop (tf.fori_loop). steps is
    an argument (an int64 scalar), not a Python int: one kernel for every s (a Python-int
    s is one loop too, but static: a kernel for each s)."""
    h = T_END / tf.cast(steps, tf.float64)

    def rate(y):  # y_i' = x_i * y_{i-1}, and x_0 for the first
        return tf.concat([x[:1], x[1:] * y[:-1]], 0)

    def step(_, y):
        k1 = rate(y)
        k2 = rate(y + h / 2 * k1)
        k3 = rate(y + h / 2 * k2)
        k4 = rate(y + h * k3)
        return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

    return tf.fori_loop(0, steps, step, tf.zeros_like(x))


def last(x, steps):
    return solve(x, steps)[-1]


def srcxform_builder(function: str, x: np.ndarray, steps: int):
    count = np.int64(steps)

    def build():
        f = tf.differentiable(solve if function == "primal" else last, wait=True)
        return (lambda: f(x, count)) if function == "primal" else (lambda: f.grad(x, count))
    return build


# ----- peer: adapted from python/gradbench/gradbench/tools/jax/ode.py (no PyTorch tool) -----


def jax_builder(function: str, x: np.ndarray, steps: int):
    def build():
        jax = jax_module()
        jnp = jax.numpy

        def rate_of(v):
            def rate(y):
                return jnp.where(jnp.arange(v.shape[0]) == 0, v, v * jnp.roll(y, 1))
            return rate

        def solve_jax(v):
            rate, h = rate_of(v), T_END / steps

            def body(y, _):
                k1 = rate(y)
                k2 = rate(y + h / 2 * k1)
                k3 = rate(y + h / 2 * k2)
                k4 = rate(y + h * k3)
                y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
                return y, y

            return jax.lax.scan(body, jnp.zeros_like(v), None, length=steps)[1][-1]

        f = jax.jit(solve_jax if function == "primal"
                    else jax.grad(lambda v: solve_jax(v)[-1]))
        arg = jnp.asarray(x)
        return lambda: f(arg).block_until_ready()
    return build


def cases(sizes=((1000, 10), (100000, 100))) -> list:
    out = []
    for n, steps in sizes:
        x = inputs(n)
        for function in ("primal", "gradient"):
            out.append(Case("ode", function, f"n={n},s={steps}",
                            srcxform_builder(function, x, steps),
                            {"JAX": jax_builder(function, x, steps)}))
    return out
