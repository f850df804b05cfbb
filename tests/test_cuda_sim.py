"""The CUDA target (srcxform/cuda) against the CPU kernel, on numba-cuda's simulator.

numba.cuda picks the simulator or the real target when a process first imports it
(NUMBA_ENABLE_CUDASIM), so the CUDA side of each check runs in a child process: one for
all the workloads (one trace and compile each, through srcxform.differentiable's device
keyword or SRCXFORM_DEVICE in turn), at their tiny sizes, and an example's training step,
which returns its results for this process to compare with the CPU kernel's. Lowering and
its refusals need no numba.cuda and run here. Skipped where numba-cuda is not installed.
"""

import importlib.util
import os
import pathlib
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest

import srcxform
import srcxform as tf
import srcxform.cuda as sc
from srcxform.core.tree import tree_flatten

pytestmark = pytest.mark.skipif(importlib.util.find_spec("numba_cuda") is None,
                                reason="numba-cuda is not installed (srcxform[cuda])")

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT / "examples"))
LOWERED = ["W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "ODE"]


def _ode_rate(x, y):
    """GradBench ode's right-hand side, read by the loop that follows."""
    rate = tf.concat([x[:1], x[1:] * y[:-1]], 0)
    return tf.reduce_sum(tf.exp(y + 0.5 * rate))


def _cases(tiny=True):
    """{workload: (function, args, wrt)} for the workloads of benchmarks/workloads.py."""
    from benchmarks import workloads as W

    d = {wl.key: wl.data for wl in W.make_workloads(tiny=tiny)}
    return {
        "W1": (W.quadratic, (2.0,), 0),
        "W2": (W.seed_sum, (d["W2"]["x"], 5.0), (0, 1)),
        "W3": (W.rosenbrock, (d["W3-10" if tiny else "W3-1e6"]["x"],), 0),
        "W4": (W.logreg, (d["W4"]["w0"] + 0.1, np.array(d["W4"]["b0"]), d["W4"]["X"],
                          d["W4"]["y"]), (0, 1)),
        "W5": (W.mlp, (d["W5"]["params0"], d["W5"]["X"], d["W5"]["Y"]), 0),
        "W6": (W.CUBE.grad, (1.0,), 0),
        "W7": (W.lotka_volterra, (d["W7"]["p"], d["W7"]["u0"], d["W7"]["steps"]), 0),
        "W8": (W.newton_sqrt, (d["W8"]["a"],), 0),
        "W9": (W.mlp_relu, (d["W9"]["params0"], d["W9"]["X"], d["W9"]["Y"]), 0),
        "ODE": (_ode_rate, tuple(np.random.default_rng(4).random((2, 9 if tiny else 10**6))),
                (0, 1)),
    }


def _leaves(result):
    return [np.asarray(leaf.copy_to_host() if hasattr(leaf, "copy_to_host") else leaf)
            for leaf in tree_flatten(result)[0]]


def _public(fn, wrt, k):
    """fn on CUDA through the public entry: the device keyword (k even) or the
    environment switch (k odd)."""
    if k % 2 == 0:
        return srcxform.differentiable(fn, wrt=wrt, device="cuda")
    os.environ["SRCXFORM_DEVICE"] = "cuda"
    try:
        return srcxform.differentiable(fn, wrt=wrt)
    finally:
        del os.environ["SRCXFORM_DEVICE"]


def _on_cuda(tiny):
    """In the child: each lowered workload's value and gradient on CUDA, as leaves, and
    the type the entry gave; W3's gradient from a device array (where it stays), and at a
    second size, and how many kernels its function compiled for the two; W5's kept
    buffers, its results from device arrays, and from two threads at once; the training
    step's."""
    from numba import cuda

    cases, found = _cases(tiny), {}
    for k, name in enumerate(LOWERED):
        fn, args, wrt = cases[name]
        f = _public(fn, wrt, k)
        found[name] = _leaves(f.value_and_grad(*args))
        found[f"{name} type"] = type(f).__name__
    fn, (x,), _ = cases["W3"]
    f = srcxform.differentiable(fn, device="cuda")
    on_device = f.grad(cuda.to_device(x))
    found["W3 device"] = (cuda.cudadrv.devicearray.is_cuda_ndarray(on_device),
                          on_device.copy_to_host())
    found["W3 longer"] = _leaves(f.grad(np.concatenate([x, x[:3]])))
    found["W3 kernels"] = sum(len(k) for k in f._kernels.values())
    found["kept"] = _kept_size("cuda")
    found.update(_w5_buffers(cases["W5"]))
    found["step"] = _training_steps(device="cuda")
    found["cnn step"] = _training_steps(device="cuda", example="cnn")
    found["edges"] = _edge_results("cuda")
    found["random loops"] = _random_loops("cuda")
    found["calls"] = _calls("cuda")
    return found


_SCALE = 2.0


def _calls(device):
    """How a compiled function is called, beside what it computes (helper 99): under a
    tape (it runs on it, as on the CPU), inside another compiled function, wrapping a
    CPU one with another wrt, and after a global it read is rebound."""
    x = tf.constant([0.5, -1.0, 2.0])
    squares = tf.differentiable(lambda a: tf.reduce_sum(a ** 2), device=device)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = squares(x) + tf.reduce_sum(x)
    inner = tf.differentiable(lambda a: tf.reduce_sum(tf.sin(a)), device=device)
    outer = tf.differentiable(lambda a: inner(a) * 3.0, device=device)
    on_cpu = tf.differentiable(lambda a, b: tf.reduce_sum(a * a * b))
    both = tf.differentiable(on_cpu, wrt=(0, 1), device=device)
    global _SCALE
    scaled = tf.differentiable(lambda a: tf.reduce_sum(a * _SCALE), device=device)
    before = float(scaled(x.numpy()))
    _SCALE = 3.0
    try:
        after = float(scaled(x.numpy()))
    finally:
        _SCALE = 2.0
    return (tape.gradient(y, x).numpy(), float(outer(np.ones(3))),
            _leaves(both.grad(np.array([1.0, 2.0]), np.array([3.0, 4.0]))), before, after)


def _kept_size(device):
    """A function reading back a size it kept at its first call (compiler.right_for): its
    value and gradient at 5 elements, then at 3."""
    kept = []

    def scaled(x):
        if not kept:
            kept.append(x.shape[0])
        return tf.reduce_sum(x * kept[0])

    f = srcxform.differentiable(scaled, device=device)
    return [_leaves(f.value_and_grad(np.arange(float(n)))) for n in (5, 3)]


def _random_loops(device):
    """tests/test_random_control_flow.py's first programs (cond, fori_loop over rows,
    while_loop and scan, nested) on `device`: {seed: their value and gradients as leaves,
    or the op the device refused}."""
    from test_random_control_flow import CALLS, Generator, arguments, make_program

    found = {}
    for seed in range(10):
        templates, statements = Generator(seed).program()
        wrt = tuple(range(1, 2 + len(templates)))
        f = srcxform.differentiable(make_program(statements, len(templates)), wrt=wrt,
                                    device=device)
        args = arguments(templates, *CALLS[0][:2], 3, np.random.default_rng(seed))
        try:
            found[seed] = _leaves(f.value_and_grad(*args))
        except sc.UnsupportedOnCuda as refused:
            found[seed] = str(refused).split()[1]
    return found


def _named_as_the_targets(flat, buffers):
    cuda = tf.exp(flat) * buffers
    slice = cuda[1:]
    abs = tf.reduce_max(slice)
    return tf.reduce_sum(cuda * abs)


def _edge_results(device):
    """What adversarial testing found wrong on CUDA, run on `device`: a captured array
    changed in place between calls (read once, it kept its first values); a NaN through
    max and min (CUDA's atomics skip it); scalars taken by views (indexing a device array
    by integers copies to the host); a 0-d device array; a strided column reshaped; slices'
    gradients; abs's (np.sign, which numba-cuda has not); convolutions and poolings over
    odd sizes, strided, dilated, padded, a Generator's draws, transposes of 3 and 4 axes,
    batched products and a concat returned (all refused before); a Generator's state past
    2**63 - 1 (raised) and three threads drawing from one (draws repeated: helper 52)."""
    w = np.ones(3)
    f = srcxform.differentiable(lambda x: tf.reduce_sum(x * w), device=device)
    found = {"captured": _leaves(f.value_and_grad(np.arange(3.0)))}
    w[:] = 2.0
    found["captured"] += _leaves(f.value_and_grad(np.arange(3.0)))
    x, m = np.array([1.0, np.nan, 2.0, 0.5]), np.array([[1.0, np.nan, 2.0], [3.0, 5.0, 4.0]])
    images = np.sin(np.arange(100.0)).reshape(2, 5, 5, 2)
    filters, batch = np.cos(np.arange(54.0)).reshape(3, 3, 2, 3), np.sin(np.arange(24.0))
    batch, generator = batch.reshape(2, 3, 4), tf.random.Generator.from_seed(3)
    cases = {
        "max": (tf.reduce_max, (x,)), "min": (tf.reduce_min, (x,)),
        "row max": (lambda m: tf.reduce_sum(tf.reduce_max(m, axis=1)), (m,)),
        "norm": (tf.norm, (np.arange(1.0, 4.0),)),
        "element": (lambda m: m[1, 2] * m[0, -1], (np.arange(1.0, 7.0).reshape(2, 3),)),
        "logsumexp": (tf.reduce_logsumexp, (np.arange(4.0),)),
        "column": (lambda a, b: tf.reduce_sum(tf.linalg.matvec(a, b[:, 0])),
                   (np.ones((2, 3)), np.arange(12.0).reshape(3, 4))),
        # slices' gradients outside loop nests (embed: refused before)
        "slices": (lambda m: tf.reduce_sum(tf.tanh(m[:, 1:])) + tf.reduce_sum(tf.exp(m[1])),
                   (np.arange(6.0).reshape(2, 3) / 6,)),
        "strided": (lambda x: tf.reduce_sum(tf.sin(x[::2])) * x[0], (np.arange(6.0),)),
        "abs": (lambda x: tf.reduce_sum(tf.abs(x) * 2.0), (np.array([-2.0, 0.0, 3.0]),)),
        "conv strided": (lambda x, w: tf.reduce_sum(tf.sin(tf.nn.conv2d(x, w, 2, "SAME"))),
                         (images, filters)),
        "conv dilated": (lambda x, w: tf.reduce_sum(
            tf.nn.conv2d(x, w, 1, "VALID", dilations=2) ** 2), (images, filters)),
        "pools": (lambda x: tf.reduce_sum(tf.nn.max_pool2d(x, 3, 2, "SAME") ** 2)
                  + tf.reduce_sum(tf.exp(tf.nn.avg_pool2d(x, 2, 1, "SAME"))), (images,)),
        "transposes": (lambda x: tf.reduce_sum(tf.reshape(tf.transpose(tf.reshape(
            x, (2, 3, 2, 2)), (3, 1, 0, 2)), (6, 4))[1:, ::2] ** 3), (batch,)),
        "batched": (lambda x: tf.reduce_sum(tf.tanh(x @ tf.transpose(x, (0, 2, 1))))
                    + tf.reduce_sum(tf.einsum("bij,kj->bik", x, x[1]) ** 2), (batch,)),
        "gather": (lambda x: tf.reduce_sum(tf.gather(x, np.array([0, -1, 2, 0])) ** 2),
                   (np.cos(np.arange(12.0)).reshape(4, 3),)),
        "gather_nd": (lambda x: tf.reduce_sum(tf.gather_nd(x, np.array([[0, 1], [3, 2]])) ** 2)
                      + tf.reduce_sum(tf.gather(x, np.array([[0, 1], [2, 2], [1, 0], [2, 1]]),
                                                batch_dims=1)),
                      (np.cos(np.arange(12.0)).reshape(4, 3),)),
        # a block at a begin known at run time (window: a copy on the device)
        "window": (lambda x, i: tf.reduce_sum(tf.sin(tf.slice(x, [i, 0], [2, 3]))) * x[1, 0],
                   (np.cos(np.arange(12.0)).reshape(4, 3), np.int64(1))),
        # products to one element, with a zero (no atomic multiplies: refused before)
        "products": (lambda m: tf.reduce_prod(tf.sin(m)) + tf.reduce_sum(
            tf.reduce_prod(m, keepdims=True) * m), (np.arange(6.0).reshape(2, 3) / 5,)),
        "draws": (lambda x: tf.reduce_sum(x * generator.normal((3,)))
                  + tf.reduce_sum(generator.truncated_normal((2, 2), dtype=tf.float32)),
                  (np.arange(3.0),)),
        # counts of a traced size (iota), made on the host as draws are
        "counted": (lambda x: tf.reduce_sum(tf.cast(tf.range(x.shape[0]), x.dtype) * x)
                    + tf.reduce_sum(tf.eye(x.shape[0], dtype=x.dtype) * x), (np.arange(3.0),)),
    }
    for name, (fn, args) in cases.items():
        found[name] = _leaves(srcxform.differentiable(fn, device=device).value_and_grad(*args))
    found["concat"] = _leaves(srcxform.differentiable(lambda x: tf.concat(
        [x[:, :, :3], tf.transpose(x[:, :, :3], (0, 2, 1))], axis=2), device=device)(
        np.arange(18.0).reshape(2, 3, 3)))
    # a Generator's counter past 2**63 - 1 (its bits as uint64); three threads drawing from
    # one Generator (each call reads and advances its counter under the Variable's lock)
    wrapped = tf.random.Generator.from_state((2**63 - 2, 5))
    f = srcxform.differentiable(lambda x: x + wrapped.normal((3,), dtype=tf.float64),
                                device=device)
    found["wrapped state"] = _leaves(f(np.zeros(3))) + _leaves(f(np.zeros(3)))
    shared, drawn = tf.random.Generator.from_seed(1), []
    f = srcxform.differentiable(lambda x: x * shared.normal((3,), dtype=tf.float64),
                                device=device)
    threads = [threading.Thread(target=lambda: drawn.extend(_leaves(f(np.ones(3))) for _ in
                                                            range(3))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    found["threaded draws"] = [np.sort(drawn, axis=None), shared.state.numpy()]
    # names the CUDA code binds itself, the user's (raw errors: helper 123); uint16
    # arithmetic (refused: np.uint16 was not among the names kernels keep)
    found["target's names"] = _leaves(srcxform.differentiable(
        _named_as_the_targets, device=device).value_and_grad(np.arange(3.0), np.ones(3)))
    found["uint16"] = _leaves(srcxform.differentiable(lambda x: x + x * 3, device=device)(
        np.array([1, 2, 3], np.uint16)))
    zero_d = _device(device, np.array(0.7))
    found["0-d"] = _leaves(srcxform.differentiable(tf.square, device=device).value_and_grad(
        zero_d))
    found.update(_control_flow_results(device))
    return found


def _branching(x):
    if tf.reduce_sum(x) > 0:
        y = tf.reduce_sum(x * x)
    else:
        y = tf.reduce_sum(tf.sin(x))
    return y


def _growing(x, n):
    """A while_loop of n trips (its stacks grow past their first 16 rows)."""
    return tf.reduce_sum(tf.while_loop(lambda x, k: k < n, lambda x, k: (
        tf.sin(x) + 0.5 * x, k + 1), (x, tf.constant(0, tf.int64)))[0])


def _checkpointed(x, n):
    """A fori_loop whose body reads its index, its adjoint recomputed from checkpoints."""
    return tf.reduce_sum(tf.fori_loop(0, n, lambda i, x: x * tf.cos(x) + tf.cast(
        i, tf.float64) * 0.1, x, checkpoint=3))


def _scanned(x, rows):
    """A scan: each iteration reads a row of `rows` and stacks a row of its own."""
    return tf.reduce_sum(tf.scan(lambda a, r: a * 0.9 + tf.sin(r) * x, rows, x) ** 2)


def _control_flow_results(device):
    """Loops and branches on traced values (run by the CUDA driver; refused before): a
    branch both ways, a while_loop's grown stacks, a checkpointed fori_loop reading its
    index, a scan's rows, a scalar given new axes in a body; and a loop of no trips
    returning its first value, called twice with device arrays on CUDA (a kept buffer
    returned would change under the first)."""
    x, rows = np.array([0.3, -0.2, 0.9]), np.cos(np.arange(12.0)).reshape(4, 3)
    n = np.int64(19)
    found = {}
    # rows picked by the loop's index (gather and its gradient: refused before, helper 54);
    # a scalar given new axes (AttributeError while generating: helper 54), in a loop
    by_index = lambda xs, n: tf.reduce_sum(tf.fori_loop(0, n, lambda i, a: a * 0.9 + tf.sin(
        xs[i]), tf.zeros(3, tf.float64)) ** 2)
    new_axes = lambda s, n: tf.fori_loop(0, n, lambda i, a: tf.reduce_sum(tf.sin(
        a[None, None] * 2.0)) + a[None][0], s)
    for name, fn, args in [("branch", _branching, (x,)), ("branch other", _branching, (-x,)),
                           ("while", _growing, (x, n)), ("checkpointed", _checkpointed, (x, n)),
                           ("scan", _scanned, (x, rows)), ("new axes", new_axes, (0.7, n)),
                           ("by index", by_index, (rows, np.int64(4))),
                           ("one element", _elements, (x,))]:
        f = srcxform.differentiable(fn, device=device)
        found[name] = _leaves(f.value_and_grad(*args))
    f = srcxform.differentiable(lambda x, n: tf.fori_loop(0, n, lambda i, x: x + 1.0, 2.0 * x),
                                device=device)
    first, second = (_device(device, x), np.int64(0)), (_device(device, -x), np.int64(0))
    kept = f(*first)
    found["no trips"] = _leaves([f(*second), kept])
    try:  # an index out of bounds raises, as the CPU kernel's does (a kernel cannot); the
        # CPU's names the op as the eager run does, getitem (api._as_eager_raises)
        srcxform.differentiable(by_index, device=device)(rows, np.int64(5))
    except tf.errors.InvalidArgumentError as error:
        found["bad index"] = [np.array("index 4 is out of bounds" in str(error))]
    return found


def _elements(x):
    """A loop reading x[i] and x[i - 1] of a vector: one element a trip, a scalar kept as
    a 1-element array (a 0-d one crashed its kernels: helper 140)."""
    total = 0.0
    for i in range(len(x)):
        total = total + x[i] * x[i - 1]
    return total


def _device(device, x):
    """x on the device where it is "cuda"."""
    if device != "cuda":
        return x
    from numba import cuda

    return cuda.to_device(x)


def _w5_buffers(case):
    """W5 on CUDA: its intermediates kept from one call to the next (how many, and
    whether the second call used the same arrays); its gradients from device arrays,
    the first call's as it returned them and as they are after a second call on other
    data; its gradients from two threads, and how many sets of intermediates they used."""
    from numba import config, cuda

    fn, (params, X, Y), _ = case
    f = srcxform.differentiable(fn, device="cuda")
    f.grad(params, X, Y)
    (kernel,) = [k for ks in f._kernels.values() for k in ks]
    kept = dict(kernel.local.buffers.kept)
    f.grad(params, X, Y)
    same = all(kernel.local.buffers.kept[site] is a for site, a in kept.items())
    first = f.grad(params, cuda.to_device(X), Y)
    returned = [g.copy_to_host() for g in tree_flatten(first)[0]]
    f.grad(params, cuda.to_device(2 * X), Y)
    results, used = {}, []

    def run(scale):
        results[scale] = _leaves(f.grad(params, scale * X, Y))
        used.append(kernel.local.buffers)  # held: no other takes its id

    # On a GPU the threads run at once. The simulator runs them in turn: while a kernel
    # runs it swaps the `cuda` of the kernel's module for a fake, which another thread's
    # launch would find.
    threads = [threading.Thread(target=run, args=(s,)) for s in (3.0, 4.0)]
    for t in threads:
        t.start()
        if config.ENABLE_CUDASIM:
            t.join()
    for t in threads:
        t.join()
    after = [g.copy_to_host() for g in tree_flatten(first)[0]]
    return {"W5 kept": (len(kept), same), "W5 device": (returned, after),
            "W5 threads": (results, len({id(b) for b in used})),
            "W5 warm compiles": None if config.ENABLE_CUDASIM else _compiles(
                lambda: f.grad(params, X, Y))}


def _compiles(call):
    """How many kernels numba-cuda compiled during call() (on a GPU; the simulator
    compiles none)."""
    from numba.cuda import dispatcher

    made, init = [], dispatcher._Kernel.__init__

    def counted(self, *args, **kwargs):
        made.append(args[0].__name__)
        init(self, *args, **kwargs)

    dispatcher._Kernel.__init__ = counted
    try:
        call()
    finally:
        dispatcher._Kernel.__init__ = init
    return made


def _training_steps(device, example="mlp"):
    """Two steps of examples/mlp_digits.py's training step (Adam, its Variables read and
    assigned), or of cnn_digits.py's (convolution, pooling, dropout's draws), compiled for
    `device`: the losses, then the model's and optimizer's Variables."""
    import cnn_digits
    import mlp_digits

    rng = np.random.default_rng(0)
    if example == "mlp":
        X, labels = rng.normal(size=(6, 5)), mlp_digits.one_hot(rng.integers(0, 3, 6), 3)
        model = mlp_digits.MLP(5, 4, 3, 0.01, seed=0)
    else:
        X, labels = rng.normal(size=(4, 8, 8, 1)), np.eye(10)[rng.integers(0, 10, 4)]
        model = cnn_digits.CNN(2, 0.01, 1e-4, 0.1, seed=0)
    step = srcxform.differentiable(model.train_step, device=device, wait=True)
    losses = [float(step(X, labels)) for _ in range(2)]
    return losses, [v.numpy() for v in model.variables + model.optimizer.variables]


def _ptx():
    """In the child, without the simulator: the number of kernels of each lowered workload
    that compiled to PTX, and launch.py's own; or None where NVVM is missing."""
    from numba import cuda

    from srcxform.cuda import launch

    cases, found = _cases(), {}
    try:
        cuda.compile_ptx(launch._fill.py_func, "(float64[:], float64)", cc=(8, 0))
    except Exception as err:  # NVVM or NVRTC missing: whatever numba-cuda raises then
        if "nvvm" in str(err).lower() or "nvrtc" in str(err).lower():
            return None
        raise
    for name in LOWERED:
        fn, args, wrt = cases[name]
        found[name] = len(sc.differentiable(fn, wrt=wrt).ptx(*args))
    ints = ", ".join(["int64"] * 6)  # an image's windows: strides, dilations, padding
    for dtype in ("float32", "float64"):
        image, windows = f"{dtype}[:, :, :, :]", f"{dtype}[:, :, :, :, :, :]"
        for kernel, types in [(launch._matmul, f"({dtype}[:, :], {dtype}[:, :], {dtype}[:, :])"),
                              (launch._matvec, f"({dtype}[:, :], {dtype}[:], {dtype}[:])"),
                              (launch._copy_1d, f"({dtype}[:], {dtype}[:])"),
                              (launch._copy_2d, f"({dtype}[:, :], {dtype}[:, :])"),
                              (launch._patches, f"({image}, {ints}, float64, {windows})"),
                              (launch._fold, f"({windows}, {ints}, {image})"),
                              (launch._gather, f"({dtype}[:, :], int64[:], {dtype}[:, :])"),
                              (launch._scatter_add,
                               f"({dtype}[:, :], int64[:], {dtype}[:, :])"),
                              (launch._multiplied, f"({dtype}[:], {dtype}[:])")]:
            cuda.compile_ptx(kernel.py_func, types, cc=(8, 0))
    found["launch"] = 9
    # a kernel storing each thread's partial product
    found["products"] = len(sc.differentiable(product_of).ptx(np.ones(5)))
    return found


def run_child(what, simulator, tiny=True):
    """What `what` (_on_cuda, _ptx) returns, run in a new process with or without the
    simulator."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    env.pop("SRCXFORM_DEVICE", None)
    if simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    call = f"t._on_cuda(tiny={tiny!r})" if what == "_on_cuda" else f"t.{what}()"
    code = f"import pickle, sys, test_cuda_sim as t\nsys.stdout.buffer.write(pickle.dumps({call}))"
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True,
                          env=env, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return pickle.loads(done.stdout)


def check_against_cpu(found, tiny):
    """Each lowered workload's CUDA results equal the CPU kernel's: to float rounding, as
    atomics add in another order."""
    cases = _cases(tiny)
    for name in LOWERED:
        fn, args, wrt = cases[name]
        want = _leaves(srcxform.differentiable(fn, wrt=wrt).value_and_grad(*args))
        assert found[f"{name} type"] == "CudaDifferentiable", name
        assert len(found[name]) == len(want), name
        for got, expected in zip(found[name], want):
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12, err_msg=name)


@pytest.fixture(scope="module")
def simulated():
    return run_child("_on_cuda", simulator=True)


@pytest.mark.slow
def test_the_workloads_give_the_cpu_kernels_values_and_gradients(simulated):
    check_against_cpu(simulated, tiny=True)


@pytest.mark.slow
def test_a_device_array_is_taken_as_it_is_and_the_gradient_stays_on_the_device(simulated):
    is_device, grad = simulated["W3 device"]
    x = _cases()["W3"][1][0]
    assert is_device
    np.testing.assert_allclose(grad, srcxform.differentiable(_cases()["W3"][0]).grad(x),
                               rtol=1e-12)


@pytest.mark.slow
def test_a_new_size_runs_the_same_kernel(simulated):
    fn, (x,), _ = _cases()["W3"]
    longer = np.concatenate([x, x[:3]])
    np.testing.assert_allclose(simulated["W3 longer"][0],
                               srcxform.differentiable(fn).grad(longer), rtol=1e-12)
    assert simulated["W3 kernels"] == 1


@pytest.mark.slow
def test_a_size_kept_at_an_earlier_call_is_that_calls_number(simulated):
    (value5, grad5), (value3, grad3) = simulated["kept"]
    assert (value5, value3) == (50.0, 15.0)
    np.testing.assert_array_equal(grad5, np.full(5, 5.0))
    np.testing.assert_array_equal(grad3, np.full(3, 5.0))


def check_buffers(found, tiny):
    """W5's intermediates were kept between calls, and no result was one of them."""
    count, same = found["W5 kept"]
    assert count > 0 and same
    returned, after = found["W5 device"]
    fn, (params, X, Y), _ = _cases(tiny)["W5"]
    want = _leaves(srcxform.differentiable(fn).grad(params, X, Y))
    for got, later, expected in zip(returned, after, want):
        np.testing.assert_array_equal(later, got)  # a second call wrote none of them
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def check_threads(found, tiny):
    """Two threads' calls each had intermediates of their own and the CPU's results."""
    results, sets = found["W5 threads"]
    fn, (params, X, Y), _ = _cases(tiny)["W5"]
    assert sets == 2
    for scale, got in results.items():
        want = _leaves(srcxform.differentiable(fn).grad(params, scale * X, Y))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


def check_training_step(found):
    """The training steps' losses and Variables are the CPU kernel's."""
    for key, example in (("step", "mlp"), ("cnn step", "cnn")):
        losses, variables = found[key]
        want_losses, want_variables = _training_steps(device="cpu", example=example)
        np.testing.assert_allclose(losses, want_losses, rtol=1e-12)
        assert len(variables) == len(want_variables) > 4  # the model's and Adam's
        for got, want in zip(variables, want_variables):
            # a GPU's atomics add in another order: float32's last bits differ
            rtol, atol = (1e-9, 1e-12) if want.dtype == np.float64 else (1e-5, 1e-7)
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=key)


def check_edges(found):
    """Each of _edge_results' cases gives the CPU kernel's results (NaN where it has NaN)."""
    want = _edge_results("cpu")
    assert found["edges"].keys() == want.keys()
    for name, expected in want.items():
        assert len(found["edges"][name]) == len(expected), name
        for got, w in zip(found["edges"][name], expected):
            np.testing.assert_allclose(got, w, rtol=1e-12, err_msg=name)


@pytest.mark.slow
def test_random_programs_with_loops_and_branches_give_the_cpu_kernels_results(simulated):
    found, want = simulated["random loops"], _random_loops("cpu")
    ran = [seed for seed, got in found.items() if not isinstance(got, str)]
    # the other reaches an op the target has no lowering for (polygamma, lgamma's gradient)
    assert len(ran) >= 9 and {got for got in found.values() if isinstance(got, str)} <= {
        "polygamma"}, found
    for seed in ran:
        for got, expected in zip(found[seed], want[seed], strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-11, err_msg=seed)


@pytest.mark.slow
def test_calls_under_a_tape_composed_rewrapped_and_rebound_are_the_cpus(simulated):
    """Each was wrong on CUDA (helper 99): not recorded on the tape ([1, 1, 1]), a raw
    'unhashable Tracer' composed, the CPU function's wrt taken over the one given, and
    the first trace's global kept (3.0 for 4.5)."""
    got, want = simulated["calls"], _calls("cpu")
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[0], [2.0, -1.0, 5.0])
    assert len(got[2]) == len(want[2]) == 2
    for g, w in zip(got[2], want[2]):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    assert got[1] == pytest.approx(want[1]) and got[3:] == want[3:] == (3.0, 4.5)


@pytest.mark.slow
def test_adversarial_cases_give_the_cpu_kernels_results(simulated):
    check_edges(simulated)


@pytest.mark.slow
def test_intermediates_are_kept_between_calls_and_a_result_never_is(simulated):
    check_buffers(simulated, tiny=True)


@pytest.mark.slow
def test_two_threads_use_intermediates_of_their_own(simulated):
    check_threads(simulated, tiny=True)


@pytest.mark.slow
def test_the_examples_training_steps_assign_their_variables_as_on_the_cpu(simulated):
    check_training_step(simulated)


@pytest.mark.slow
def test_every_kernel_compiles_to_ptx_for_a_real_gpu():
    """What the simulator cannot say: numba-cuda types and compiles each kernel for the
    device (compute capability 8.0). Needs NVVM (nvidia-nvvm, nvidia-cuda-nvrtc)."""
    found = run_child("_ptx", simulator=False)
    if found is None:
        pytest.skip("NVVM is not installed (pip install nvidia-nvvm nvidia-cuda-nvrtc)")
    assert {name: found[name] > 0 for name in LOWERED} == {name: True for name in LOWERED}
    assert found["products"] > 0


# ----- the entry and lowering, here: no numba.cuda needed -----

def test_the_device_keyword_the_switch_and_source_give_the_cuda_module(monkeypatch):
    fn, args, wrt = _cases()["W4"]
    want = sc.differentiable(fn, wrt=wrt).source(*args)
    assert "@cuda.jit" in want
    assert srcxform.differentiable(fn, wrt=wrt).source(*args, device="cuda") == want
    assert srcxform.differentiable(fn, wrt=wrt, device="cuda").source(*args) == want
    monkeypatch.setenv("SRCXFORM_DEVICE", "CUDA")
    assert srcxform.differentiable(wrt=wrt)(fn).source(*args) == want  # the decorator
    assert isinstance(srcxform.differentiable(fn, device="cpu"), srcxform.api.Differentiable)


class Model:
    scale = 3.0

    @srcxform.differentiable(device="cuda")
    def loss(self, x):
        return tf.reduce_sum(self.scale * x * x)


def test_a_decorated_method_is_compiled_for_each_instance():
    first, second = Model(), Model()
    second.scale = 5.0
    assert first.loss is first.loss and first.loss is not second.loss
    assert "np.float64(5.0)" in second.loss.source(np.ones(3))


def test_every_device_gives_what_compiled_promises():
    for device in ("cpu", "cuda"):
        assert isinstance(srcxform.differentiable(product_of, device=device),
                          srcxform.api.Compiled)


def test_an_unknown_device_or_a_cpu_option_is_refused_naming_the_choices(monkeypatch):
    with pytest.raises(ValueError, match="device='tpu' is not a device; the choices are "
                                         "'cpu', 'cuda'"):
        srcxform.differentiable(product_of, device="tpu")
    with pytest.raises(ValueError, match="device='gpu' is not a device"):
        srcxform.differentiable(product_of).source(np.ones(3), device="gpu")
    with pytest.raises(ValueError, match="parallel and check are options of the CPU kernel"):
        srcxform.differentiable(product_of, device="cuda", parallel=True)
    monkeypatch.setenv("SRCXFORM_DEVICE", "metal")
    with pytest.raises(ValueError, match="SRCXFORM_DEVICE='metal' is not a device"):
        srcxform.differentiable(product_of)


def test_a_loop_nest_is_a_kernel_with_a_thread_per_element_and_origin_comments():
    fn, args, _ = _cases()["W3"]
    source = sc.source(fn, *args)
    assert source.count("@cuda.jit") == 2
    assert "for flat in range(cuda.grid(1), (n0 - 1), cuda.gridsize(1)):" in source
    # the sum to a scalar: a register per thread, then one atomic
    assert "t9_acc += t8_i" in source and "cuda.atomic.add(t9, 0, t9_acc)" in source
    assert "# grad of workloads.py:" in source and "# ---- adjoint ----" in source


def test_one_thread_steps_run_first_in_each_thread_of_the_next_kernel():
    fn, args, wrt = _cases()["W4"]
    source = sc.differentiable(fn, wrt=wrt).source(*args)
    assert source.count("@cuda.jit") == 2 and "one thread" not in source
    # the mean's scale and the loss, computed by each thread, stored by thread 0 only
    assert ("t11_i = np.float64(1.0) / np.float64(n1)\n    if cuda.grid(1) == 0:\n"
            "        t10[0] = t10_i\n        t11[0] = t11_i\n") in source
    assert "t13_i = t11_i * t12[i0]" in source  # read as the thread's own, not from t11[0]
    # after a sum to a scalar, which all threads must finish, a step keeps its own launch
    fn, args, wrt = _cases()["W2"]
    assert "seed_sum__value_and_grad_cuda_k1[launch.grid(1)](t5, bz)" in \
        sc.differentiable(fn, wrt=wrt).source(*args)


def test_a_reduction_that_keeps_an_axis_adds_atomically_at_its_kept_index():
    fn, args, _ = _cases()["W5"]
    source = sc.source(fn, *args)
    assert "cuda.atomic.max(t3, (i0, 0), logits_i)" in source  # the softmax's row max
    assert "cuda.atomic.add(t21, (0, i1), t20_i)" in source  # the bias gradient


def test_intermediates_come_from_the_kernels_buffers_and_results_are_new_arrays():
    fn, args, _ = _cases()["W5"]
    source = sc.source(fn, *args)
    assert "t0 = launch.matmul(X, params_0, buffers.empty('t0', (n3, n1), np.float64))" \
        in source
    assert "bparams_0 = launch.matmul(t28, t26, launch.empty((n0, n1), np.float64))" in source
    # a view of it is returned (bparams_3 = launch.reshape(t21, (n2,))): a new array
    assert "t21 = launch.full((1, n2), np.float64(0.0), np.float64)" in source


def test_a_transpose_is_a_view_not_numba_cudas_copy():
    """numba-cuda's DeviceNDArray.T copies through a kernel it compiles at every call."""
    fn, args, _ = _cases()["W5"]
    source = sc.source(fn, *args)
    assert "t22 = launch.transpose(params_2, (1, 0))" in source and ".T\n" not in source


def test_windows_are_kernels_of_their_own_and_draws_are_made_on_the_host():
    generator = tf.random.Generator.from_seed(0)
    source = sc.source(lambda x, w: tf.reduce_sum(
        tf.nn.conv2d(x, w, 1, "SAME") * generator.uniform((1, 4, 4, 1))),
        np.ones((1, 4, 4, 1)), np.ones((3, 3, 1, 1)))
    calls = [line.strip().split("(")[0] for line in source.splitlines()
             if any(f"launch.{name}(" in line for name in ("patches", "drawn", "fold"))]
    # the image's windows, the draw, and the windows' gradient: the image's
    assert calls == ["t0 = launch.patches", "t5 = launch.drawn", "bx = launch.fold"], calls
    assert "t0 = launch.patches(x, (n2, n3), (1, 1), (1, 1), ((1, 1), (1, 1)), 0.0," in source


def test_a_loop_on_traced_values_runs_on_the_host_launching_its_bodys_kernels():
    fn, args, wrt = _cases()["W7"]
    lines = [line.strip() for line in
             sc.differentiable(fn, wrt=wrt).source(*args).splitlines()]
    forward = lines.index("for it in range(np.int64(0), steps_on_host):")
    # its bound read back once; its stacks on the device, a row copied in by a kernel; the
    # body's nest launched
    assert lines[forward - 5:forward + 3] == [
        "steps_on_host = launch.host(steps)", "t65, t66 = t0, t1",
        "trips = max(steps_on_host - np.int64(0), 0)",
        "stack = launch.empty((trips,), np.float64)",
        "stack_1 = launch.empty((trips,), np.float64)", lines[forward],
        "launch.put(stack, it, t65)", "launch.put(stack_1, it, t66)"]
    assert lines[forward + 14].startswith("lotka_volterra__value_and_grad_cuda_k0[launch.grid(1)]")
    # the adjoint's count, max(steps, 0), read back once too
    adjoint = lines.index("for it_1 in range(t68_on_host - 1, -1, -1):")
    assert "t68_i = max(steps[0], np.int64(0))" in lines[:adjoint]
    assert "x0 = launch.row(stack, it_1)" in lines[adjoint:]
    # the adjoint's results are new arrays at each iteration, never a kept buffer
    assert "t227 = launch.empty((n0,), np.float64)" in lines[adjoint:]


def product_of(x):
    return tf.reduce_prod(x * x)


def products_by_column(x):  # a product to one element is lowered (partials); by column not
    return tf.reduce_sum(tf.reduce_prod(tf.reshape(x, (2, 2)), axis=0))


def cumulative(x):
    return tf.reduce_sum(tf.math.cumsum(x))


@pytest.mark.parametrize("fn, message", [
    (products_by_column, r"reduce_prod \(test_cuda_sim\.py:\d+: .*\) has no atomic"),
    (cumulative, r"cumsum \(test_cuda_sim\.py:\d+: .*\) has no CUDA lowering"),
])
def test_an_op_the_target_does_not_lower_is_refused_naming_it(fn, message):
    with pytest.raises(sc.UnsupportedOnCuda, match=message):
        srcxform.differentiable(fn, device="cuda").source(np.ones(4))


def _squares(x):
    return tf.reduce_sum(x * x)


def test_a_cuda_function_and_its_forms_pickle():
    """They raised "cannot pickle '_thread.RLock' object" (helper 99); a copy traces and
    compiles its own kernels, as a CPU function's does."""
    for f in (sc.differentiable(_squares, wrt=(0,)), sc.differentiable(
            srcxform.differentiable(_squares), has_aux=False)):
        copy = pickle.loads(pickle.dumps(f))
        assert (copy.fn, copy.wrt, copy.has_aux) == (f.fn, f.wrt, f.has_aux)
        assert pickle.loads(pickle.dumps(f.grad)).__self__.wrt == f.wrt


def test_a_cuda_method_binds_to_a_dataclass_or_slotted_instance():
    # Helper 102: "unhashable type" and "cannot create weak reference" (a WeakKeyDictionary).
    import dataclasses

    @dataclasses.dataclass
    class Scaled:
        k: float = 2.0

        @sc.differentiable
        def f(self, x):
            return tf.reduce_sum(x * x) * self.k

    class Slotted:
        __slots__ = ()
        f = Scaled.f

    for obj in (Scaled(), Slotted()):
        assert obj.f.fn.__self__ is obj and obj.f is obj.f
