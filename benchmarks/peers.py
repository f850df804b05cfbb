"""The optional peers (the `bench` extra): JAX jit(grad), PyTorch eager, TensorFlow eager
and tf.function, and HIPS autograd (not in W9-gemm: its products are NumPy's). Each is imported only when first used, and a peer
that is not installed is skipped (`available()` says which are).

Every peer computes in float64 (JAX with `jax_enable_x64`), and a call returns only when
its result is ready (JAX's `block_until_ready`), so a time is a latency, not a dispatch.
"""

import importlib
import importlib.util
import os
import sys

import numpy as np

from benchmarks.workloads import (LV_DT, NEWTON_TOL, Runner, System, newton_sqrt_on,
                                  newton_sqrt_step, rk4_lotka_volterra, tape_runner)

_MODULES = {"jax": "jax", "torch": "torch", "tensorflow": "tensorflow",
            "autograd": "autograd"}

THREADS = None  # set by benchmarks/run.py for the serial table: each peer's threads


def available():
    """{module: installed?} for each peer library, without importing it."""
    return {name: importlib.util.find_spec(mod) is not None for name, mod in _MODULES.items()}


def load(name):
    """Imports a peer library once, configured for these benchmarks."""
    if name == "tensorflow":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    first = _MODULES[name] not in sys.modules
    module = importlib.import_module(_MODULES[name])
    if name == "jax":
        module.config.update("jax_enable_x64", True)
    if first and THREADS:
        if name == "torch":
            module.set_num_threads(THREADS)
            module.set_num_interop_threads(THREADS)
        elif name == "tensorflow":
            module.config.threading.set_intra_op_parallelism_threads(THREADS)
            module.config.threading.set_inter_op_parallelism_threads(THREADS)
    return module


def version(name):
    try:
        return load(name).__version__
    except Exception:  # noqa: BLE001 - a broken install is reported as absent
        return None


def systems():
    return [
        System("JAX jit(grad)", jax_build, peer=True, requires="jax"),
        System("PyTorch eager", torch_build, peer=True, requires="torch"),
        System("TensorFlow eager", lambda wl: tf_build(wl, False), peer=True,
               requires="tensorflow"),
        System("TensorFlow tf.function", lambda wl: tf_build(wl, True), peer=True,
               requires="tensorflow"),
        System("autograd", autograd_build, peer=True, requires="autograd"),
    ]


# ----- JAX -----


def jax_build(wl):
    jax = load("jax")
    jnp = jax.numpy
    d = wl.data
    ready = jax.block_until_ready

    def rosenbrock(x):
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    if wl.kind == "gemm":
        products = jax.jit(lambda X, W1, H, W2, D, DA:
                           (X @ W1, H @ W2, H.T @ D, D @ W2.T, X.T @ DA))
        ops = [jnp.asarray(a) for a in d["ops"]]
        return Runner(lambda: ready(products(*ops)), lambda r: [np.asarray(t) for t in r])
    if wl.family == "W1":
        g = jax.jit(jax.grad(lambda x: x**2 + 2 * x - 1))
        x = jnp.float64(d["x"])
        return Runner(lambda: ready(g(x)), lambda r: [np.asarray(r)])
    if wl.family == "W2":
        g = jax.jit(jax.grad(lambda x, z: jnp.sum(x * x + 2 * z), argnums=(0, 1)))
        x, z = jnp.asarray(d["x"]), jnp.float64(d["z"])
        return Runner(lambda: ready(g(x, z)), lambda r: [np.asarray(t) for t in r])
    if wl.family == "W3":
        g = jax.jit(jax.grad(rosenbrock))
        x = jnp.asarray(d["x"])
        return Runner(lambda: ready(g(x)), lambda r: [np.asarray(r)])
    if wl.family == "W6":
        g = jax.jit(jax.grad(jax.grad(lambda x: x * x * x)))
        x = jnp.float64(d["x"])
        return Runner(lambda: ready(g(x)), lambda r: [np.asarray(r)])
    if wl.family == "W7":
        def lotka_volterra(p, u0):
            def body(i, u):
                return rk4_lotka_volterra(*u, p[0], p[1], p[2], p[3], LV_DT)
            x, y = jax.lax.fori_loop(0, d["steps"], body, (u0[0], u0[1]))
            return x + y
        g = jax.jit(jax.grad(lotka_volterra))
        p, u0 = jnp.asarray(d["p"]), jnp.asarray(d["u0"])
        return Runner(lambda: ready(g(p, u0)), lambda r: [np.asarray(r)])
    if wl.family == "W8":  # jax.grad of lax.while_loop raises: no reverse mode through it
        return None
    if wl.family == "W4":
        def loss(p, X, y):
            z = X @ p[0] + p[1]
            return jnp.mean(jax.nn.softplus(z) - y * z)
        labels = jnp.asarray(d["y"])
    elif wl.family in ("W5", "W9"):
        activation = jax.nn.relu if wl.family == "W9" else jnp.tanh

        def loss(p, X, Y):
            h = activation(X @ p[0] + p[1])
            logp = jax.nn.log_softmax(h @ p[2] + p[3], axis=1)
            return -jnp.mean(jnp.sum(Y * logp, axis=1))
        labels = jnp.asarray(d["Y"])
    else:
        return None
    lr = d["lr"]

    @jax.jit
    def step(p, X, labels):
        return [a - lr * g for a, g in zip(p, jax.grad(loss)(p, X, labels))]

    X = jnp.asarray(d["X"])
    st = []

    def reset():
        st[:] = [[jnp.asarray(p) for p in wl.params0()]]

    def call():
        st[0] = ready(step(st[0], X, labels))

    reset()
    return Runner(call, state=lambda: [np.asarray(p) for p in st[0]], reset=reset)


# ----- PyTorch -----


def torch_build(wl):
    torch = load("torch")
    d = wl.data
    grad = torch.autograd.grad

    def tensor(a, requires_grad=False):
        return torch.tensor(np.asarray(a, np.float64), dtype=torch.float64,
                            requires_grad=requires_grad)

    if wl.kind == "gemm":
        X, W1, H, W2, D, DA = (tensor(a) for a in d["ops"])
        return Runner(lambda: (X @ W1, H @ W2, H.T @ D, D @ W2.T, X.T @ DA),
                      lambda r: [t.numpy() for t in r])
    if wl.family in ("W1", "W3", "W6"):
        x = tensor(d["x"], True)

        def call():
            if wl.family == "W6":
                (dy,) = grad(x * x * x, x, create_graph=True)
                return grad(dy, x)[0]
            if wl.family == "W1":
                y = x**2 + 2 * x - 1
            else:
                y = torch.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
            return grad(y, x)[0]

        return Runner(call, lambda g: [g.detach().numpy()])
    if wl.family == "W2":
        x, z = tensor(d["x"], True), tensor(d["z"], True)
        return Runner(lambda: grad(torch.sum(x * x + 2 * z), (x, z)),
                      lambda r: [t.detach().numpy() for t in r])
    if wl.family in ("W7", "W8"):
        fn, (first, *rest) = _python_loops(
            wl, lambda step: float(step.detach().abs().max()), torch.sum)
        x, rest = tensor(first, True), [tensor(r) for r in rest]
        return Runner(lambda: grad(fn(x, *rest), x)[0], lambda g: [g.detach().numpy()])
    if wl.family == "W4":
        def loss(p, X, y):
            z = X @ p[0] + p[1]
            return torch.mean(torch.nn.functional.softplus(z) - y * z)
        labels = tensor(d["y"])
    elif wl.family in ("W5", "W9"):
        activation = torch.relu if wl.family == "W9" else torch.tanh

        def loss(p, X, Y):
            h = activation(X @ p[0] + p[1])
            logp = torch.log_softmax(h @ p[2] + p[3], dim=1)
            return -torch.mean(torch.sum(Y * logp, dim=1))
        labels = tensor(d["Y"])
    else:
        return None
    X, lr = tensor(d["X"]), d["lr"]
    params = [tensor(p, True) for p in wl.params0()]

    def call():
        grads = grad(loss(params, X, labels), params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.sub_(lr * g)

    def reset():
        with torch.no_grad():
            for p, p0 in zip(params, wl.params0()):
                p.copy_(tensor(p0))

    return Runner(call, state=lambda: [p.detach().numpy().copy() for p in params],
                  reset=reset)


# ----- TensorFlow -----


def tf_build(wl, function):
    tf = load("tensorflow")
    d = wl.data
    wrap = tf.function if function else (lambda f: f)

    if wl.kind == "gemm":
        mm = tf.linalg.matmul

        @wrap
        def products(X, W1, H, W2, D, DA):
            return (mm(X, W1), mm(H, W2), mm(H, D, transpose_a=True),
                    mm(D, W2, transpose_b=True), mm(X, DA, transpose_a=True))

        ops = [tf.constant(a) for a in d["ops"]]
        return Runner(lambda: products(*ops), lambda r: [t.numpy() for t in r])
    if wl.family in ("W1", "W2", "W3", "W6"):
        return tape_runner(tf, wl, wrap)
    if wl.family in ("W7", "W8"):
        steps = d.get("steps")

        def lotka_volterra(p, u0):
            x, y = u0[0], u0[1]
            for _ in tf.range(steps):  # autograph: a tf.while_loop in a tf.function
                x, y = rk4_lotka_volterra(x, y, p[0], p[1], p[2], p[3], LV_DT)
            return x + y

        fn, args = (lotka_volterra, (d["p"], d["u0"])) if wl.family == "W7" \
            else (newton_sqrt_on(tf), (d["a"],))
        first, *rest = [tf.constant(a) for a in args]

        @wrap
        def call(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = fn(x, *rest)
            return tape.gradient(y, x)

        return Runner(lambda: call(first), lambda g: [g.numpy()])
    if wl.family == "W4":
        def loss(p, X, y):
            z = tf.linalg.matvec(X, p[0]) + p[1]
            return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=z))
        labels = tf.constant(d["y"])
    elif wl.family in ("W5", "W9"):
        activation = tf.nn.relu if wl.family == "W9" else tf.tanh

        def loss(p, X, Y):
            h = activation(X @ p[0] + p[1])
            return tf.reduce_mean(
                tf.nn.softmax_cross_entropy_with_logits(labels=Y, logits=h @ p[2] + p[3]))
        labels = tf.constant(d["Y"])
    else:
        return None
    X, lr = tf.constant(d["X"]), d["lr"]
    params = [tf.Variable(p) for p in wl.params0()]

    @wrap
    def step(X, labels):
        with tf.GradientTape() as tape:
            value = loss(params, X, labels)
        for p, g in zip(params, tape.gradient(value, params)):
            p.assign_sub(lr * g)

    def reset():
        for p, p0 in zip(params, wl.params0()):
            p.assign(p0)

    return Runner(lambda: step(X, labels), state=lambda: [p.numpy() for p in params],
                  reset=reset)


# ----- HIPS autograd -----


def autograd_build(wl):
    autograd = load("autograd")
    anp = importlib.import_module("autograd.numpy")
    d = wl.data

    def rosenbrock(x):
        return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    if wl.kind == "gemm":
        return None
    if wl.family == "W1":
        g, x = autograd.grad(lambda x: x**2 + 2 * x - 1), d["x"]
        return Runner(lambda: g(x), lambda r: [r])
    if wl.family == "W2":
        g = autograd.grad(lambda xz: anp.sum(xz[0] * xz[0] + 2 * xz[1]))
        xz = (d["x"], d["z"])
        return Runner(lambda: g(xz), list)
    if wl.family == "W3":
        g, x = autograd.grad(rosenbrock), d["x"]
        return Runner(lambda: g(x), lambda r: [r])
    if wl.family == "W6":
        g, x = autograd.grad(autograd.grad(lambda x: x * x * x)), d["x"]
        return Runner(lambda: g(x), lambda r: [r])
    if wl.family in ("W7", "W8"):
        fn, (first, *rest) = _python_loops(  # (an ArrayBox's value is ._value)
            wl, lambda step: float(np.max(np.abs(getattr(step, "_value", step)))), anp.sum)
        g = autograd.grad(fn)
        return Runner(lambda: g(first, *rest), lambda r: [r])
    if wl.family == "W4":
        def loss(p, X, y):
            z = anp.dot(X, p[0]) + p[1]
            return anp.mean(anp.logaddexp(0.0, z) - y * z)
        labels = d["y"]
    elif wl.family in ("W5", "W9"):
        activation = (lambda a: anp.maximum(a, 0.0)) if wl.family == "W9" else anp.tanh

        def loss(p, X, Y):
            h = activation(anp.dot(X, p[0]) + p[1])
            logits = anp.dot(h, p[2]) + p[3]
            m = anp.max(logits, axis=1, keepdims=True)
            logp = logits - m - anp.log(anp.sum(anp.exp(logits - m), axis=1, keepdims=True))
            return -anp.mean(anp.sum(Y * logp, axis=1))
        labels = d["Y"]
    else:
        return None
    g, X, lr = autograd.grad(loss), d["X"], d["lr"]
    st = []

    def reset():
        st[:] = wl.params0()

    def call():
        for p, gp in zip(st, g(list(st), X, labels)):
            p -= lr * gp

    reset()
    return Runner(call, state=lambda: [np.asarray(p).copy() for p in st], reset=reset)


# ----- W7 and W8 as plain Python loops (PyTorch and autograd record each step) -----


def _python_loops(wl, largest_step, total):
    """W7's or W8's function on a library's arrays, and its arguments (the gradient is
    wrt the first). largest_step(step) is max(|step|) as a float, outside the tape."""
    d = wl.data

    def lotka_volterra(p, u0):
        x, y = u0[0], u0[1]
        for _ in range(d["steps"]):
            x, y = rk4_lotka_volterra(x, y, p[0], p[1], p[2], p[3], LV_DT)
        return x + y

    def newton_sqrt(a):
        x, moving = a, True
        while moving:
            new = newton_sqrt_step(x, a)
            moving = largest_step(new - x) > NEWTON_TOL
            x = new
        return total(x)

    if wl.family == "W7":
        return lotka_volterra, (d["p"], d["u0"])
    return newton_sqrt, (d["a"],)
