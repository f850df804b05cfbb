"""The reference: each workload's analytic forward and adjoint, written by hand as explicit
fused Numba loops (matmuls call np.dot, as srcxform's generated code does).

Every kernel computes the value and the gradient in one function, as srcxform's `.grad`
does (it runs value_and_grad and drops the value); the SGD kernels also apply the update
in place. Compiled lazily with the same options srcxform uses (`error_model="numpy"`,
no fastmath) and without `cache=True`, so the first call measures a real compile (the
smoke test sets SRCXFORM_BENCH_NUMBA_CACHE=1 to reuse compilations between its runs).
"""

import math
import os

import numba
import numpy as np

from benchmarks.workloads import Runner

_jit = numba.njit(cache=os.environ.get("SRCXFORM_BENCH_NUMBA_CACHE") == "1",
                  error_model="numpy")


# ----- W1: f(x) = x^2 + 2x - 1 -----


@_jit
def quadratic_vg(x):
    return x * x + 2.0 * x - 1.0, 2.0 * x + 2.0


# ----- W2: y = sum(x*x + 2z) -----


@_jit
def seed_sum_vg(x, z):
    n0, n1 = x.shape
    gx = np.empty((n0, n1), np.float64)
    y = 0.0
    for i in range(n0):
        for j in range(n1):
            v = x[i, j]
            y += v * v + 2.0 * z
            gx[i, j] = 2.0 * v
    return y, gx, 2.0 * n0 * n1


# ----- W3: Rosenbrock -----


@_jit
def rosenbrock_vg(x):
    n = x.shape[0]
    g = np.empty(n, np.float64)
    f = 0.0
    carry = 0.0  # d/dx[i] of the term i-1, which reads x[i] as its "next" element
    for i in range(n - 1):
        xi = x[i]
        a = x[i + 1] - xi * xi
        b = 1.0 - xi
        f += 100.0 * a * a + b * b
        g[i] = carry - 400.0 * a * xi - 2.0 * b
        carry = 200.0 * a
    if n > 0:
        g[n - 1] = carry
    return f, g


# ----- W4: logistic regression, one SGD step -----


@_jit
def logreg_step(w, b, X, y, lr):
    """b is a 1-element array so the update happens in place."""
    n, d = X.shape
    z = np.dot(X, w)
    r = np.empty(n, np.float64)
    loss = 0.0
    gb = 0.0
    for i in range(n):
        zi = z[i] + b[0]
        loss += math.log1p(math.exp(-abs(zi))) + max(zi, 0.0) - y[i] * zi
        ri = (1.0 / (1.0 + math.exp(-zi)) - y[i]) / n
        r[i] = ri
        gb += ri
    gw = np.dot(X.T, r)
    for j in range(d):
        w[j] -= lr * gw[j]
    b[0] -= lr * gb
    return loss / n


# ----- W5: MLP 64 -> 128 tanh -> 10 softmax cross-entropy, one SGD step -----


@_jit
def mlp_step(W1, b1, W2, b2, X, Y, lr):
    B = X.shape[0]
    H = W1.shape[1]
    C = W2.shape[1]
    # forward: h = tanh(X @ W1 + b1); logits = h @ W2 + b2
    h = np.dot(X, W1)
    for i in range(B):
        for j in range(H):
            h[i, j] = math.tanh(h[i, j] + b1[j])
    logits = np.dot(h, W2)
    # softmax cross-entropy and its adjoint, fused per row
    d = np.empty((B, C), np.float64)
    gb2 = np.zeros(C, np.float64)
    loss = 0.0
    for i in range(B):
        m = -np.inf
        for k in range(C):
            v = logits[i, k] + b2[k]
            logits[i, k] = v
            m = max(m, v)
        s = 0.0
        ysum = 0.0
        for k in range(C):
            e = math.exp(logits[i, k] - m)
            d[i, k] = e
            s += e
            ysum += Y[i, k]
        lse = m + math.log(s)
        for k in range(C):
            loss -= Y[i, k] * (logits[i, k] - lse)
            dk = (d[i, k] / s * ysum - Y[i, k]) / B
            d[i, k] = dk
            gb2[k] += dk
    # adjoint of the layers
    gW2 = np.dot(h.T, d)
    dh = np.dot(d, W2.T)
    gb1 = np.zeros(H, np.float64)
    for i in range(B):
        for j in range(H):
            hij = h[i, j]
            da = dh[i, j] * (1.0 - hij * hij)
            dh[i, j] = da
            gb1[j] += da
    gW1 = np.dot(X.T, dh)
    # the update, in place
    for a in range(W1.shape[0]):
        for j in range(H):
            W1[a, j] -= lr * gW1[a, j]
    for j in range(H):
        b1[j] -= lr * gb1[j]
        for k in range(C):
            W2[j, k] -= lr * gW2[j, k]
    for k in range(C):
        b2[k] -= lr * gb2[k]
    return loss / B


# ----- W6: second derivative of x^3 -----


@_jit
def cube_d2(x):
    """(d/dx x^3, d2/dx2 x^3): the value and gradient of the first derivative."""
    return 3.0 * x * x, 6.0 * x


# ----- runners -----


def build(wl):
    d = wl.data
    if wl.family == "W1":
        x = d["x"]
        return Runner(lambda: quadratic_vg(x), lambda r: [r[1]])
    if wl.family == "W2":
        x, z = d["x"], d["z"]
        return Runner(lambda: seed_sum_vg(x, z), lambda r: [r[1], r[2]])
    if wl.family == "W3":
        x = d["x"]
        return Runner(lambda: rosenbrock_vg(x), lambda r: [r[1]])
    if wl.family == "W4":
        X, y, lr = d["X"], d["y"], d["lr"]
        st = {}

        def reset():
            st["w"], st["b"] = d["w0"].copy(), np.array([d["b0"]], np.float64)

        reset()
        return Runner(lambda: logreg_step(st["w"], st["b"], X, y, lr),
                      state=lambda: [st["w"].copy(), np.float64(st["b"][0])], reset=reset)
    if wl.family == "W5":
        X, Y, lr = d["X"], d["Y"], d["lr"]
        st = []

        def reset():
            st[:] = [p.copy() for p in d["params0"]]

        reset()
        return Runner(lambda: mlp_step(st[0], st[1], st[2], st[3], X, Y, lr),
                      state=lambda: [p.copy() for p in st], reset=reset)
    if wl.family == "W6":
        x = d["x"]
        return Runner(lambda: cube_d2(x), lambda r: [r[1]])
    return None
