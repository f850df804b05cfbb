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

from benchmarks.workloads import LV_DT, NEWTON_TOL, Runner

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


# ----- W5, W9: MLP, softmax cross-entropy, one SGD step -----


@_jit
def _softmax_xent(logits, b2, Y):
    """Adds b2 to logits in place; returns the summed loss, its adjoint wrt the logits
    (already ÷ batch) and the bias gradient, fused per row."""
    B, C = logits.shape
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
    return loss, d, gb2


@_jit
def _sgd_update(p, g, lr):
    flat, gflat = p.reshape(-1), g.reshape(-1)
    for i in range(flat.size):
        flat[i] -= lr * gflat[i]


@_jit
def _mlp_step(W1, b1, W2, b2, X, Y, lr, relu):
    B, H = X.shape[0], W1.shape[1]
    # forward: h = act(X @ W1 + b1); logits = h @ W2 + b2
    h = np.dot(X, W1)
    for i in range(B):
        for j in range(H):
            a = h[i, j] + b1[j]
            h[i, j] = max(a, 0.0) if relu else math.tanh(a)
    loss, d, gb2 = _softmax_xent(np.dot(h, W2), b2, Y)
    # adjoint of the layers
    gW2 = np.dot(h.T, d)
    dh = np.dot(d, W2.T)
    gb1 = np.zeros(H, np.float64)
    for i in range(B):
        for j in range(H):
            hij = h[i, j]
            da = dh[i, j] * ((1.0 if hij > 0.0 else 0.0) if relu else 1.0 - hij * hij)
            dh[i, j] = da
            gb1[j] += da
    gW1 = np.dot(X.T, dh)
    # the update, in place
    _sgd_update(W1, gW1, lr)
    _sgd_update(b1, gb1, lr)
    _sgd_update(W2, gW2, lr)
    _sgd_update(b2, gb2, lr)
    return loss / B


@_jit
def gemms(X, W1, H, W2, D, DA):
    """W9-gemm: the five products through np.dot, which Numba hands to SciPy's BLAS (the
    one srcxform's generated code calls)."""
    return np.dot(X, W1), np.dot(H, W2), np.dot(H.T, D), np.dot(D, W2.T), np.dot(X.T, DA)


# ----- W6: second derivative of x^3 -----


@_jit
def cube_d2(x):
    """(d/dx x^3, d2/dx2 x^3): the value and gradient of the first derivative."""
    return 3.0 * x * x, 6.0 * x


# ----- W7: RK4 Lotka–Volterra, gradient wrt the parameters -----


@_jit
def _lv(x, y, a, b, c, d):
    return a * x - b * x * y, d * x * y - c * y


@_jit
def _lv_vjp(x, y, gx, gy, a, b, c, d, gp):
    """(x̄, ȳ) of the right-hand side at (x, y) for the cotangent (gx, gy); adds p̄ to gp."""
    gp[0] += x * gx
    gp[1] -= x * y * gx
    gp[2] -= y * gy
    gp[3] += x * y * gy
    return (a - b * y) * gx + d * y * gy, -b * x * gx + (d * x - c) * gy


@_jit
def lotka_volterra_vg(p, u0, steps, h):
    """x + y after `steps` RK4 steps, and its gradient wrt p: the forward stores each
    step's state; the adjoint recomputes a step's stages from it, backwards."""
    a, b, c, d = p[0], p[1], p[2], p[3]
    xs, ys = np.empty(steps), np.empty(steps)
    x, y = u0[0], u0[1]
    for n in range(steps):
        xs[n], ys[n] = x, y
        k1x, k1y = _lv(x, y, a, b, c, d)
        k2x, k2y = _lv(x + h / 2 * k1x, y + h / 2 * k1y, a, b, c, d)
        k3x, k3y = _lv(x + h / 2 * k2x, y + h / 2 * k2y, a, b, c, d)
        k4x, k4y = _lv(x + h * k3x, y + h * k3y, a, b, c, d)
        x += h / 6 * (k1x + 2 * k2x + 2 * k3x + k4x)
        y += h / 6 * (k1y + 2 * k2y + 2 * k3y + k4y)
    value = x + y
    gp = np.zeros(4)
    gx, gy = 1.0, 1.0
    for n in range(steps - 1, -1, -1):
        x, y = xs[n], ys[n]
        k1x, k1y = _lv(x, y, a, b, c, d)
        v2x, v2y = x + h / 2 * k1x, y + h / 2 * k1y
        k2x, k2y = _lv(v2x, v2y, a, b, c, d)
        v3x, v3y = x + h / 2 * k2x, y + h / 2 * k2y
        k3x, k3y = _lv(v3x, v3y, a, b, c, d)
        v4x, v4y = x + h * k3x, y + h * k3y
        # the stages' cotangents from u' = u + h/6 (k1 + 2 k2 + 2 k3 + k4)
        g1x, g1y, g2x, g2y = h / 6 * gx, h / 6 * gy, h / 3 * gx, h / 3 * gy
        g3x, g3y, g4x, g4y = g2x, g2y, g1x, g1y
        wx, wy = _lv_vjp(v4x, v4y, g4x, g4y, a, b, c, d, gp)
        gx, gy, g3x, g3y = gx + wx, gy + wy, g3x + h * wx, g3y + h * wy
        wx, wy = _lv_vjp(v3x, v3y, g3x, g3y, a, b, c, d, gp)
        gx, gy, g2x, g2y = gx + wx, gy + wy, g2x + h / 2 * wx, g2y + h / 2 * wy
        wx, wy = _lv_vjp(v2x, v2y, g2x, g2y, a, b, c, d, gp)
        gx, gy, g1x, g1y = gx + wx, gy + wy, g1x + h / 2 * wx, g1y + h / 2 * wy
        wx, wy = _lv_vjp(x, y, g1x, g1y, a, b, c, d, gp)
        gx, gy = gx + wx, gy + wy
    return value, gp


# ----- W8: Newton's method for sqrt, a data-dependent while loop -----


@_jit
def newton_sqrt_vg(a, tol):
    """sum(sqrt(a)) by Newton from x = a until no element moves more than tol, and its
    gradient: the iterates kept in a buffer that doubles when full, then the adjoint."""
    n = a.size
    xs = np.empty((16, n))
    xs[0] = a
    k, moving = 0, True
    while moving:
        if k + 1 == xs.shape[0]:
            grown = np.empty((2 * xs.shape[0], n))
            grown[:k + 1] = xs[:k + 1]
            xs = grown
        biggest = 0.0
        for i in range(n):
            x = xs[k, i]
            new = 0.5 * (x + a[i] / x)
            xs[k + 1, i] = new
            biggest = max(biggest, abs(new - x))
        k += 1
        moving = biggest > tol
    value = 0.0
    for i in range(n):
        value += xs[k, i]
    ga, gx = np.zeros(n), np.ones(n)
    for j in range(k - 1, -1, -1):  # an iterate's row at a time: contiguous reads
        for i in range(n):
            x = xs[j, i]
            ga[i] += gx[i] * 0.5 / x
            gx[i] *= 0.5 * (1.0 - a[i] / (x * x))
    for i in range(n):
        ga[i] += gx[i]
    return value, ga


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
    if wl.kind == "gemm":
        ops = d["ops"]
        return Runner(lambda: gemms(*ops), list)
    if wl.family in ("W5", "W9"):
        X, Y, lr, relu = d["X"], d["Y"], d["lr"], wl.family == "W9"
        st = []

        def reset():
            st[:] = [p.copy() for p in d["params0"]]

        reset()
        return Runner(lambda: _mlp_step(st[0], st[1], st[2], st[3], X, Y, lr, relu),
                      state=lambda: [p.copy() for p in st], reset=reset)
    if wl.family == "W6":
        x = d["x"]
        return Runner(lambda: cube_d2(x), lambda r: [r[1]])
    if wl.family == "W7":
        p, u0, steps = d["p"], d["u0"], d["steps"]
        return Runner(lambda: lotka_volterra_vg(p, u0, steps, LV_DT), lambda r: [r[1]])
    if wl.family == "W8":
        a = d["a"]
        return Runner(lambda: newton_sqrt_vg(a, NEWTON_TOL), lambda r: [r[1]])
    return None
