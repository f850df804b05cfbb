"""Each workload's loss and analytic gradient, written by hand in NumPy.

These also define the reference gradients every system is checked against (the smoke
test checks them in turn against central finite differences of the losses below).
"""

import numpy as np

from benchmarks.hand_numba import lotka_volterra_vg
from benchmarks.workloads import (LV_DT, NEWTON_TOL, Runner, newton_sqrt_step,
                                  rk4_lotka_volterra)

# ----- losses (for finite differences) -----


def quadratic(x):
    return x * x + 2.0 * x - 1.0


def seed_sum(x, z):
    return np.sum(x * x + 2.0 * z)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def logreg_loss(w, b, X, y):
    z = X @ w + b
    return np.mean(np.logaddexp(0.0, z) - y * z)


def _hidden(a, relu):
    return np.maximum(a, 0.0) if relu else np.tanh(a)


def mlp_loss(params, X, Y, relu=False):
    """W5's loss (tanh hidden layer), or W9's with relu."""
    W1, b1, W2, b2 = params
    logits = _hidden(X @ W1 + b1, relu) @ W2 + b2
    m = logits.max(axis=1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def cube(x):
    return x * x * x


def lotka_volterra(p, u0, steps):
    x, y = u0
    for _ in range(steps):
        x, y = rk4_lotka_volterra(x, y, *p, LV_DT)
    return x + y


def newton_sqrt(a):
    x, step = a, np.ones_like(a)
    while np.max(np.abs(step)) > NEWTON_TOL:
        new = newton_sqrt_step(x, a)
        x, step = new, new - x
    return np.sum(x)


# ----- analytic gradients -----


def quadratic_grad(x):
    return 2.0 * x + 2.0


def seed_sum_grad(x, z):
    return 2.0 * x, 2.0 * x.size


def rosenbrock_grad(x):
    a = x[1:] - x[:-1] ** 2
    g = np.zeros_like(x)
    g[:-1] = -400.0 * a * x[:-1] - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * a
    return g


def logreg_grad(w, b, X, y):
    z = X @ w + b
    r = (1.0 / (1.0 + np.exp(-z)) - y) / X.shape[0]
    return X.T @ r, np.sum(r)


def mlp_grad(params, X, Y, relu=False):
    W1, b1, W2, b2 = params
    h = _hidden(X @ W1 + b1, relu)
    logits = h @ W2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    d = (p * Y.sum(axis=1, keepdims=True) - Y) / X.shape[0]
    da = (d @ W2.T) * ((h > 0.0) if relu else (1.0 - h * h))
    return [X.T @ da, da.sum(axis=0), h.T @ d, d.sum(axis=0)]


def cube_d2(x):
    return 6.0 * x


def lotka_volterra_grad(p, u0, steps):
    """The RK4 adjoint (hand_numba's kernel run as plain Python: a loop over scalars
    has no NumPy form)."""
    return lotka_volterra_vg.py_func(p, u0, steps, LV_DT)[1]


def newton_sqrt_grad(a):
    """Every iterate kept, then the adjoint backwards: x_{k+1} = (x_k + a/x_k)/2, x_0 = a."""
    xs, step = [a], np.ones_like(a)
    while np.max(np.abs(step)) > NEWTON_TOL:
        xs.append(newton_sqrt_step(xs[-1], a))
        step = xs[-1] - xs[-2]
    ga, gx = np.zeros_like(a), np.ones_like(a)
    for x in reversed(xs[:-1]):
        ga += gx * 0.5 / x
        gx = gx * 0.5 * (1.0 - a / (x * x))
    return ga + gx


def gemms(X, W1, H, W2, D, DA):
    """W9-gemm: the products of workloads.gemms, through NumPy's BLAS."""
    return [X @ W1, H @ W2, H.T @ D, D @ W2.T, X.T @ DA]


# ----- SGD steps (in place on a list of parameters) -----


def logreg_step(params, X, y, lr):
    gw, gb = logreg_grad(params[0], params[1], X, y)
    params[0] -= lr * gw
    params[1] -= lr * gb


def mlp_step(params, X, Y, lr, relu=False):
    for p, g in zip(params, mlp_grad(params, X, Y, relu)):
        p -= lr * g


# ----- runners -----


def build(wl):
    d = wl.data
    if wl.kind == "gemm":
        ops = d["ops"]
        return Runner(lambda: gemms(*ops), list)
    if wl.family == "W1":
        x = d["x"]
        return Runner(lambda: quadratic_grad(x), lambda g: [g])
    if wl.family == "W2":
        x, z = d["x"], d["z"]
        return Runner(lambda: seed_sum_grad(x, z), list)
    if wl.family == "W3":
        x = d["x"]
        return Runner(lambda: rosenbrock_grad(x), lambda g: [g])
    if wl.family in ("W4", "W5", "W9"):
        step = {"W4": logreg_step, "W5": mlp_step,
                "W9": lambda *args: mlp_step(*args, relu=True)}[wl.family]
        a, b, lr = (d["X"], d["y"], d["lr"]) if wl.family == "W4" else (d["X"], d["Y"], d["lr"])
        st = []

        def reset():
            st[:] = [np.array(p, np.float64) for p in wl.params0()]

        reset()
        return Runner(lambda: step(st, a, b, lr), state=lambda: [p.copy() for p in st],
                      reset=reset)
    if wl.family == "W6":
        x = d["x"]
        return Runner(lambda: cube_d2(x), lambda g: [g])
    if wl.family == "W8":
        a = d["a"]
        return Runner(lambda: newton_sqrt_grad(a), lambda g: [g])
    return None
