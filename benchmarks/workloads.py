"""The benchmark workloads: their data, their reference results, the srcxform functions
under test, and the table of systems that run them.

A system turns a workload into a `Runner`: `call()` is the unit that is timed (one
gradient, or one SGD step), `grads(result)` turns what a gradient call returned into a
list of NumPy arrays, and an SGD runner has `state()` (its current parameters) and
`reset()`. Every runner is checked against the workload's reference before it is timed.
"""

import dataclasses
import functools
from collections.abc import Callable

import numpy as np

import srcxform
import srcxform as tf
from benchmarks import threads

# ----- what a system hands back -----


@dataclasses.dataclass
class Runner:
    call: Callable[[], object]
    grads: Callable[[object], list] | None = None
    state: Callable[[], list] | None = None
    reset: Callable[[], None] | None = None
    expected: list | None = None  # overrides the workload's reference (a forward value)


class CheckFailed(AssertionError):
    """A system's result differs from the reference."""


# ----- the functions srcxform compiles (module level: the disk cache keys on them) -----


def quadratic(x):
    return x**2 + 2 * x - 1


def seed_sum(x, z):
    return tf.reduce_sum(x * x + 2 * z)


def rosenbrock(x):
    return tf.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def logreg(w, b, X, y):
    z = X @ w + b
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=z))


def mlp(params, X, Y):
    W1, b1, W2, b2 = params
    h = tf.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    return tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=Y, logits=logits))


def mlp_relu(params, X, Y):
    W1, b1, W2, b2 = params
    h = tf.nn.relu(X @ W1 + b1)
    logits = h @ W2 + b2
    return tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=Y, logits=logits))


def gemms(X, W1, H, W2, D, DA):
    """The five matrix products of an MLP training step, alone (W9-gemm): the forward
    layers, then the adjoint's weight gradient, hidden cotangent and input-weight gradient."""
    return X @ W1, H @ W2, tf.transpose(H) @ D, D @ tf.transpose(W2), tf.transpose(X) @ DA


def cube(x):
    return x * x * x


def cube_d2_tapes(x):
    """The second derivative of x^3 through nested tapes, as the seed writes it."""
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = x * x * x
        dy_dx = inner.gradient(y, x)
    return outer.gradient(dy_dx, x)


# W7 and W8: loops. The step's arithmetic is written once, and every system runs it on its
# own values (floats, tensors, tracers) inside its own loop construct.
LV_PARAMS = (1.5, 1.0, 3.0, 1.0)  # prey growth, predation, predator death, predator growth
LV_DT = 0.01
NEWTON_TOL = 1e-10


def rk4_lotka_volterra(x, y, a, b, c, d, h):
    """One fixed RK4 step of the Lotka–Volterra equations x' = ax − bxy, y' = dxy − cy."""
    def f(x, y):
        return a * x - b * x * y, d * x * y - c * y

    k1x, k1y = f(x, y)
    k2x, k2y = f(x + h / 2 * k1x, y + h / 2 * k1y)
    k3x, k3y = f(x + h / 2 * k2x, y + h / 2 * k2y)
    k4x, k4y = f(x + h * k3x, y + h * k3y)
    return (x + h / 6 * (k1x + 2 * k2x + 2 * k3x + k4x),
            y + h / 6 * (k1y + 2 * k2y + 2 * k3y + k4y))


def newton_sqrt_step(x, a):
    """One Newton step towards sqrt(a)."""
    return 0.5 * (x + a / x)


def lotka_volterra(p, u0, steps):
    """W7: x + y after `steps` RK4 steps from u0, with parameters p (4,)."""
    def body(i, u):
        return rk4_lotka_volterra(u[0], u[1], p[0], p[1], p[2], p[3], LV_DT)

    x, y = tf.fori_loop(0, steps, body, (u0[0], u0[1]))
    return x + y


def newton_sqrt_on(lib):
    """W8 on `lib`, srcxform or TensorFlow (the same code runs on both): sum(sqrt(a)) by
    Newton's method from x = a, iterated until no element moves more than NEWTON_TOL, so
    the trip count depends on the data."""
    def newton_sqrt(a):
        def moving(x, step):
            return lib.reduce_max(lib.abs(step)) > NEWTON_TOL

        def body(x, step):
            new = newton_sqrt_step(x, a)
            return new, new - x

        x, _ = lib.while_loop(moving, body, (a, lib.ones_like(a)))
        return lib.reduce_sum(x)

    return newton_sqrt


newton_sqrt = newton_sqrt_on(tf)


QUADRATIC = srcxform.differentiable(quadratic)
SEED_SUM = srcxform.differentiable(seed_sum, wrt=(0, 1))
ROSENBROCK = srcxform.differentiable(rosenbrock)
LOGREG = srcxform.differentiable(logreg, wrt=(0, 1))
MLP = srcxform.differentiable(mlp)
CUBE = srcxform.differentiable(cube)
CUBE_D2 = srcxform.differentiable(CUBE.grad)
CUBE_D2_TAPES = srcxform.differentiable(cube_d2_tapes)
MLP_RELU = srcxform.differentiable(mlp_relu)
GEMMS = srcxform.differentiable(gemms)
LOTKA_VOLTERRA = srcxform.differentiable(lotka_volterra)
NEWTON_SQRT = srcxform.differentiable(newton_sqrt)


def _compiled(parallel):
    """srcxform's function under test for each family, compiled with `parallel`."""
    d = functools.partial(srcxform.differentiable, parallel=parallel)
    return {"W1": d(quadratic), "W2": d(seed_sum, wrt=(0, 1)), "W3": d(rosenbrock),
            "W4": d(logreg, wrt=(0, 1)), "W5": d(mlp), "W6": d(d(cube).grad),
            "W7": d(lotka_volterra), "W8": d(newton_sqrt), "W9": d(mlp_relu),
            "W9-gemm": d(gemms)}


COMPILED = {"W1": QUADRATIC, "W2": SEED_SUM, "W3": ROSENBROCK, "W4": LOGREG, "W5": MLP,
            "W6": CUBE_D2, "W7": LOTKA_VOLTERRA, "W8": NEWTON_SQRT, "W9": MLP_RELU,
            "W9-gemm": GEMMS}
COMPILED_PARALLEL = _compiled(parallel=True)  # all-cores table; nothing compiles until called

# What a new process calls first in each workload (benchmarks/firstcall.py), by family.
FIRST_CALLS = {
    "W1": lambda d: QUADRATIC.grad(d["x"]),
    "W2": lambda d: SEED_SUM.grad(d["x"], d["z"]),
    "W3": lambda d: ROSENBROCK.grad(d["x"]),
    "W4": lambda d: LOGREG.grad(d["w0"], np.array(d["b0"]), d["X"], d["y"]),
    "W5": lambda d: MLP.grad(d["params0"], d["X"], d["Y"]),
    "W6": lambda d: CUBE_D2.grad(d["x"]),
    "W7": lambda d: LOTKA_VOLTERRA.grad(d["p"], d["u0"], d["steps"]),
    "W8": lambda d: NEWTON_SQRT.grad(d["a"]),
    "W9": lambda d: MLP_RELU.grad(d["params0"], d["X"], d["Y"]),
}


# ----- workloads -----


@dataclasses.dataclass
class Workload:
    key: str  # "W3-1e3"
    family: str  # "W3"
    title: str
    kind: str  # "grad": call() returns a gradient; "sgd": call() takes one step;
    # "gemm": call() returns matrix products (a system's BLAS alone)
    data: dict
    steps: int = 0  # sgd: the length of the training run that is checked
    flops: float = 0.0  # gemm: floating-point operations per call

    @property
    def unit(self):
        return {"sgd": "step", "gemm": "5 GEMMs"}.get(self.kind, "call")

    @property
    def compiled(self):
        """This workload's key in COMPILED and COMPILED_PARALLEL."""
        return self.key if self.kind == "gemm" else self.family

    def params0(self):
        """The initial parameters of an SGD workload, as a list of float64 arrays."""
        if self.family == "W4":
            return [self.data["w0"].copy(), np.array(self.data["b0"])]
        return [p.copy() for p in self.data["params0"]]

    def reference(self):
        """The reference result: the gradient (a list of arrays) for a "grad" workload,
        the products for a "gemm" one; for an "sgd" one, the parameters after one step
        and after `steps` steps."""
        if "_reference" not in self.data:
            self.data["_reference"] = _reference(self)
        return self.data["_reference"]


def _reference(wl):
    from benchmarks import hand_numpy as hn

    d = wl.data
    if wl.kind == "gemm":
        return hn.gemms(*d["ops"])
    if wl.family == "W1":
        return [np.float64(hn.quadratic_grad(d["x"]))]
    if wl.family == "W2":
        gx, gz = hn.seed_sum_grad(d["x"], d["z"])
        return [gx, np.float64(gz)]
    if wl.family == "W3":
        return [hn.rosenbrock_grad(d["x"])]
    if wl.family == "W6":
        return [np.float64(hn.cube_d2(d["x"]))]
    if wl.family == "W7":
        return [hn.lotka_volterra_grad(d["p"], d["u0"], d["steps"])]
    if wl.family == "W8":
        return [hn.newton_sqrt_grad(d["a"])]
    step = {"W4": hn.logreg_step, "W5": hn.mlp_step,
            "W9": functools.partial(hn.mlp_step, relu=True)}[wl.family]
    labels = d["y"] if wl.family == "W4" else d["Y"]
    params = wl.params0()
    after = []
    for k in range(wl.steps):
        step(params, d["X"], labels, d["lr"])
        if k == 0 or k == wl.steps - 1:
            after.append([p.copy() for p in params])
    return after


W3_SIZES = {"W3-10": (10, 10), "W3-1e3": (1_000, 30), "W3-1e6": (1_000_000, 100)}


def make_workloads(tiny=False, only=None, short=False):
    """All workloads (tiny sizes for the smoke test), optionally filtered by `only`: a
    list of keys or families ("W3" selects every size of W3). `short` checks shorter
    training runs (--quick): 20 steps of W4 and 10 of W5."""
    rng = np.random.default_rng(0)
    out = [
        Workload("W1", "W1", "W1 f(x)=x²+2x−1, grad at 2", "grad", {"x": 2.0}),
        Workload("W2", "W2", "W2 sum(x·x+2z), x 2×3", "grad",
                 {"x": np.full((2, 3), 3.0), "z": 5.0}),
    ]
    for key, (n, n_tiny) in W3_SIZES.items():
        size = n_tiny if tiny else n
        out.append(Workload(key, "W3", f"W3 Rosenbrock n={size:g}", "grad",
                            {"x": np.random.default_rng(3).uniform(-1.5, 1.5, size)}))
    rows, cols, steps = (40, 5, 3) if tiny else (1000, 50, 20 if short else 200)
    X = rng.standard_normal((rows, cols))
    w_true = rng.standard_normal(cols) / np.sqrt(cols)
    y = (rng.random(rows) < 1.0 / (1.0 + np.exp(-(X @ w_true)))).astype(np.float64)
    out.append(Workload("W4", "W4", f"W4 logistic regression {rows}×{cols}, SGD", "sgd",
                        {"X": X, "y": y, "w0": np.zeros(cols), "b0": np.float64(0.0),
                         "lr": 0.5}, steps=steps))
    batch, d_in, hidden, classes, steps = \
        (8, 6, 7, 3, 3) if tiny else (256, 64, 128, 10, 10 if short else 100)
    params0 = [rng.standard_normal((d_in, hidden)) / np.sqrt(d_in), np.zeros(hidden),
               rng.standard_normal((hidden, classes)) / np.sqrt(hidden), np.zeros(classes)]
    Xb = rng.standard_normal((batch, d_in))
    Yb = np.eye(classes)[rng.integers(0, classes, batch)]
    out.append(Workload("W5", "W5", f"W5 MLP {d_in}→{hidden}→{classes}, batch {batch}, SGD",
                        "sgd", {"X": Xb, "Y": Yb, "params0": params0, "lr": 0.1},
                        steps=steps))
    out.append(Workload("W6", "W6", "W6 d²/dx² x³ at 1", "grad", {"x": 1.0}))
    steps = 20 if tiny else 1000
    out.append(Workload("W7", "W7", f"W7 RK4 Lotka–Volterra, {steps} steps, d/dparams", "grad",
                        {"p": np.array(LV_PARAMS), "u0": np.array([1.0, 1.0]),
                         # a NumPy int: srcxform traces it (a Python int would be static:
                         # part of the cache key, a kernel for each trip count)
                         "steps": np.int64(steps)}))
    n = 5 if tiny else 10_000
    out.append(Workload("W8", "W8", f"W8 Newton sqrt while loop, n={n:g}, d/da", "grad",
                        {"a": np.random.default_rng(8).uniform(1.0, 100.0, n)}))
    out += _mlp_training(rng, tiny, short)
    if only:
        out = [wl for wl in out if wl.key in only or wl.family in only]
    return out


def _mlp_training(rng, tiny, short):
    """W9: an MLP training step at a size users train (MNIST's 784 inputs), with SGD as
    W5, and W9-gemm: the same step's five matrix products alone, on each system's BLAS."""
    batch, d_in, hidden, classes, steps = \
        (8, 12, 6, 3, 3) if tiny else (512, 784, 256, 10, 3 if short else 10)
    params0 = [rng.standard_normal((d_in, hidden)) * np.sqrt(2.0 / d_in), np.zeros(hidden),
               rng.standard_normal((hidden, classes)) / np.sqrt(hidden), np.zeros(classes)]
    X = rng.standard_normal((batch, d_in))
    Y = np.eye(classes)[rng.integers(0, classes, batch)]
    step = Workload("W9", "W9", f"W9 MLP {d_in}→{hidden}→{classes} relu, batch {batch}, SGD",
                    "sgd", {"X": X, "Y": Y, "params0": params0, "lr": 0.1}, steps=steps)
    H = np.maximum(X @ params0[0], 0.0)  # operands with the step's shapes and layouts
    ops = [X, params0[0], H, params0[2], rng.standard_normal((batch, classes)),
           rng.standard_normal((batch, hidden))]
    flops = 2.0 * (2 * batch * d_in * hidden + 3 * batch * hidden * classes)
    gemm = Workload("W9-gemm", "W9", f"W9's five GEMMs alone ({flops / 1e6:.3g} MFLOP)", "gemm",
                    {"ops": ops}, flops=flops)
    return [step, gemm]


# ----- checking a runner -----


def _close(got, want, rtol, atol, what):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        raise CheckFailed(f"{what}: shape {got.shape}, expected {want.shape}")
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        err = np.max(np.abs(got - want))
        raise CheckFailed(f"{what}: max abs error {err:.3g} (expected {want.ravel()[:3]}…, "
                          f"got {got.ravel()[:3]}…)")


def check(wl, runner, first=None):
    """Raises CheckFailed unless the runner reproduces the reference. `first` is the result
    of a call already made (the timed first call), so it is not repeated."""
    if wl.kind in ("grad", "gemm"):
        result = runner.call() if first is None else first
        got = runner.grads(result)
        want = runner.expected if runner.expected is not None else wl.reference()
        if len(got) != len(want):
            raise CheckFailed(f"{len(got)} gradients, expected {len(want)}")
        for i, (g, r) in enumerate(zip(got, want)):
            scale = max(1.0, float(np.max(np.abs(r))) if np.size(r) else 1.0)
            _close(g, r, 1e-7, 1e-9 * scale, f"gradient {i}")
        return
    one, last = wl.reference()
    if first is None:
        runner.reset()
        runner.call()
    for i, (p, r) in enumerate(zip(runner.state(), one)):
        _close(p, r, 1e-8, 1e-10, f"parameter {i} after 1 step")
    for _ in range(wl.steps - 1):
        runner.call()
    for i, (p, r) in enumerate(zip(runner.state(), last)):
        _close(p, r, 1e-6, 1e-9, f"parameter {i} after {wl.steps} steps")
    runner.reset()


# ----- srcxform's runners -----


def _sgd_runner(wl, grad_fn, labels):
    d = wl.data
    st = []

    def reset():
        st[:] = wl.params0()

    def call():
        for p, g in zip(st, grad_fn(st, d["X"], labels)):
            p -= d["lr"] * g

    reset()
    return Runner(call, state=lambda: [p.copy() for p in st], reset=reset)


def srcxform_compiled(wl, functions=COMPILED):
    """srcxform's compiled function for the workload, from `functions` (COMPILED or
    COMPILED_PARALLEL)."""
    d, f = wl.data, functions[wl.compiled]
    if wl.kind == "gemm":
        ops = d["ops"]
        return Runner(lambda: f(*ops), lambda r: [np.asarray(t) for t in r])
    if wl.family in ("W1", "W3", "W6"):
        x = d["x"]
        return Runner(lambda: f.grad(x), lambda g: [g])
    if wl.family == "W2":
        x, z = d["x"], d["z"]
        return Runner(lambda: f.grad(x, z), list)
    if wl.family == "W7":
        p, u0, steps = d["p"], d["u0"], d["steps"]
        return Runner(lambda: f.grad(p, u0, steps), lambda g: [g])
    if wl.family == "W8":
        a = d["a"]
        return Runner(lambda: f.grad(a), lambda g: [g])
    if wl.family == "W4":
        return _sgd_runner(wl, lambda st, X, y: f.grad(st[0], st[1], X, y), d["y"])
    if wl.family in ("W5", "W9"):
        return _sgd_runner(wl, lambda st, X, Y: f.grad(st, X, Y), d["Y"])
    return None


def srcxform_forward(wl):
    """The compiled forward alone, for the gradient-cost ratio (W3 n ≥ 1e3)."""
    if wl.family != "W3" or wl.data["x"].size < 1000:
        return None
    from benchmarks import hand_numpy as hn

    x = wl.data["x"]
    return Runner(lambda: ROSENBROCK(x), lambda v: [v], expected=[hn.rosenbrock(x)])


def srcxform_serial_kernel(wl):
    """In the all-cores table, W3 n=1e6 without parallel=True: parallel's speedup."""
    return srcxform_compiled(wl) if wl.key == "W3-1e6" else None


def srcxform_train_step(wl):
    """A whole SGD step compiled: GradientTape and Variable.assign_sub inside."""
    d = wl.data
    if wl.family == "W4":
        w, b = tf.Variable(d["w0"].copy()), tf.Variable(np.float64(d["b0"]))
        variables = [w, b]

        def train_step(X, y, lr):
            with tf.GradientTape() as tape:
                z = X @ w + b
                loss = tf.reduce_mean(
                    tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=z))
            gw, gb = tape.gradient(loss, [w, b])
            w.assign_sub(lr * gw)
            b.assign_sub(lr * gb)
            return loss

        labels = d["y"]
    elif wl.family in ("W5", "W9") and wl.kind == "sgd":
        variables = [tf.Variable(p.copy()) for p in d["params0"]]
        activation = tf.nn.relu if wl.family == "W9" else tf.tanh

        def train_step(X, Y, lr):
            with tf.GradientTape() as tape:
                W1, b1, W2, b2 = variables
                h = activation(X @ W1 + b1)
                logits = h @ W2 + b2
                loss = tf.reduce_mean(
                    tf.nn.softmax_cross_entropy_with_logits(labels=Y, logits=logits))
            for v, g in zip(variables, tape.gradient(loss, variables)):
                v.assign_sub(lr * g)
            return loss

        labels = d["Y"]
    else:
        return None
    step = srcxform.differentiable(train_step)
    X, lr = d["X"], d["lr"]

    def reset():
        for v, p in zip(variables, wl.params0()):
            v.assign(p)

    return Runner(lambda: step(X, labels, lr), state=lambda: [v.numpy() for v in variables],
                  reset=reset)


def srcxform_nested_tapes(wl):
    """W6 with the seed's nested tapes inside the compiled function."""
    if wl.family != "W6":
        return None
    x = wl.data["x"]
    return Runner(lambda: CUBE_D2_TAPES(x), lambda g: [g])


def tape_runner(tape_module, wl, wrap=lambda f: f):
    """W1, W2, W3 and W6 written once for the tape: `tape_module` is srcxform or
    TensorFlow (the seeds' point: the same code runs on both); `wrap` may be tf.function.
    None for the other workloads."""
    tft, d = tape_module, wl.data

    def rosenbrock_tape(x):
        return tft.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    if wl.family in ("W1", "W3", "W6"):
        x = tft.Variable(np.asarray(d["x"], np.float64))

        @wrap
        def call():
            if wl.family == "W6":
                with tft.GradientTape() as outer:
                    with tft.GradientTape() as inner:
                        y = x * x * x
                    dy_dx = inner.gradient(y, x)
                return outer.gradient(dy_dx, x)
            with tft.GradientTape() as tape:
                y = x**2 + 2 * x - 1 if wl.family == "W1" else rosenbrock_tape(x)
            return tape.gradient(y, x)

        return Runner(call, lambda g: [g.numpy()])
    if wl.family == "W2":
        x, z = tft.Variable(d["x"]), tft.Variable(np.float64(d["z"]))

        @wrap
        def call():
            with tft.GradientTape() as tape:
                y = tft.reduce_sum(x * x + 2 * z)
            return tape.gradient(y, [x, z])

        return Runner(call, lambda g: [t.numpy() for t in g])
    return None


def loop_call(wl):
    """W7's and W8's function and arguments; the gradient is wrt the first argument."""
    d = wl.data
    if wl.family == "W7":
        return lotka_volterra, (d["p"], d["u0"], d["steps"])
    return newton_sqrt, (d["a"],)


def srcxform_eager(wl):
    d = wl.data
    if wl.family in ("W1", "W2", "W3", "W6"):
        return tape_runner(tf, wl)
    if wl.family in ("W7", "W8"):
        fn, (first, *rest) = loop_call(wl)

        def call():
            x = tf.constant(first)
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = fn(x, *rest)
            return tape.gradient(y, x)

        return Runner(call, lambda g: [g.numpy()])
    if wl.family in ("W4", "W5", "W9") and wl.kind == "sgd":
        variables = [tf.Variable(p) for p in wl.params0()]
        loss_fn = {"W4": logreg, "W5": mlp, "W9": mlp_relu}[wl.family]
        labels = d["y"] if wl.family == "W4" else d["Y"]
        X, lr = d["X"], d["lr"]

        def call():
            with tf.GradientTape() as tape:
                if wl.family == "W4":
                    loss = loss_fn(variables[0], variables[1], X, labels)
                else:
                    loss = loss_fn(variables, X, labels)
            for v, g in zip(variables, tape.gradient(loss, variables)):
                v.assign_sub(lr * g)

        def reset():
            for v, p in zip(variables, wl.params0()):
                v.assign(p)

        return Runner(call, state=lambda: [v.numpy() for v in variables], reset=reset)
    return None


# ----- the systems, in table order -----


@dataclasses.dataclass
class System:
    name: str
    build: Callable  # Workload -> Runner, or None where the system does not apply
    peer: bool = False  # an optional system from the `bench` extra
    aux: bool = False  # a variant reported beside the main rows (not a peer)
    requires: str | None = None  # the module whose absence skips it


def systems(table=threads.SERIAL):
    """The systems of one table. Serial: srcxform's kernels as compiled by default, with
    its variants beside them. All cores: srcxform compiled with parallel=True (and its
    serial kernel where parallel's speedup is a target); the others as in serial, each
    library left to its own thread pools."""
    from benchmarks import hand_numba, hand_numpy, peers

    if table == threads.SERIAL:
        compiled = [
            System("srcxform compiled", srcxform_compiled),
            System("srcxform compiled, train step", srcxform_train_step, aux=True),
            System("srcxform compiled, nested tapes", srcxform_nested_tapes, aux=True),
            System("srcxform compiled, forward only", srcxform_forward, aux=True),
        ]
    else:
        compiled = [
            System("srcxform compiled",
                   functools.partial(srcxform_compiled, functions=COMPILED_PARALLEL)),
            System("srcxform compiled, serial kernel", srcxform_serial_kernel, aux=True),
        ]
    return [System("hand Numba", hand_numba.build), *compiled,
            System("srcxform eager", srcxform_eager),
            System("hand NumPy", hand_numpy.build)] + peers.systems()
