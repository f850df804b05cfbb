"""The CUDA target on a GPU beside JAX and PyTorch on the same GPU (issue 35).

    python -m benchmarks.gpu                 every row, a markdown table
    python -m benchmarks.gpu --tiny          tiny sizes: a dry run (the simulator, or JAX
                                             and PyTorch on the CPU where no GPU is)
    python -m benchmarks.gpu --out FILE      the rows as JSON too

Each row is the gradient of a workload's loss with respect to its parameters (W3 the
input, the MLPs and the CNN their four arrays; the CNN is a 3x3 SAME convolution, ReLU,
2x2 max pooling and a dense layer to 10 logits, as examples/cnn_digits.py's), float64,
with every input already on the device: srcxform's as numba device arrays, JAX's as jax
arrays, PyTorch's as CUDA tensors. Each call is followed by a synchronization
(`cuda.synchronize`, `block_until_ready`, `torch.cuda.synchronize`), so a time is a
latency, not a launch. "first" is the first call, compile included, in this process
after each library has made its CUDA context; "warm" is the median of repeated calls.
srcxform's row "from NumPy" passes host arrays, copied to the device at every call. Each
peer's gradient is checked against srcxform's before it is timed. The last row is
srcxform's alone: examples/cnn_digits.py's whole training step (dropout's draws and
Adam, Variables on the host) with images from NumPy.
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

os.environ.setdefault("SRCXFORM_TIERED", "0")  # first calls wait for their kernel

import srcxform  # after the environment is set
from benchmarks import workloads as W

WARM_SECONDS = 1.0  # each warm measurement: calls for about this long (at least 5)


def _sizes(tiny):
    rng = np.random.default_rng(0)
    w3 = [10, 30] if tiny else [10**6, 10**7, 10**8]
    mlps = [("W5", 8, 6, 7, 3, False), ("W9", 8, 12, 6, 3, True)] if tiny else \
        [("W5", 256, 64, 128, 10, False), ("W9", 512, 784, 256, 10, True),
         ("W9 wide", 16384, 784, 1024, 10, True)]
    rows = [(f"W3 Rosenbrock n={n:g}", "W3", [rng.uniform(-1.5, 1.5, n)]) for n in w3]
    batch, side, filters = (2, 6, 2) if tiny else (1024, 28, 32)
    conv = [rng.standard_normal((3, 3, 1, filters)) / 3, np.zeros(filters),
            rng.standard_normal(((side // 2) ** 2 * filters, 10)) / 30, np.zeros(10)]
    rows.append((f"CNN {side}×{side}, {filters} filters, batch {batch}", "CNN",
                 [conv, rng.standard_normal((batch, side, side, 1)),
                  np.eye(10)[rng.integers(0, 10, batch)]]))
    for name, batch, d_in, hidden, classes, relu in mlps:
        params = [rng.standard_normal((d_in, hidden)) / np.sqrt(d_in), np.zeros(hidden),
                  rng.standard_normal((hidden, classes)) / np.sqrt(hidden), np.zeros(classes)]
        X = rng.standard_normal((batch, d_in))
        Y = np.eye(classes)[rng.integers(0, classes, batch)]
        act = "relu" if relu else "tanh"
        rows.append((f"{name} MLP {d_in}→{hidden}→{classes} {act}, batch {batch}",
                     "W9" if relu else "W5", [params, X, Y]))
    return rows


def _timed(call, sync):
    """(first, warm): the first call's seconds and the median of warm calls'."""
    start = time.perf_counter()
    result = call()
    sync()
    first = time.perf_counter() - start
    times, began = [], time.perf_counter()
    while len(times) < 5 or time.perf_counter() - began < WARM_SECONDS:
        start = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - start)
    return result, first, statistics.median(times)


# ----- srcxform -----

def cnn(params, X, Y):
    w, b, w2, b2 = params
    h = srcxform.nn.max_pool2d(srcxform.nn.relu(srcxform.nn.conv2d(X, w, 1, "SAME") + b), 2, 2,
                               "VALID")
    logits = srcxform.reshape(h, (-1, w2.shape[0])) @ w2 + b2
    return srcxform.reduce_mean(srcxform.nn.softmax_cross_entropy_with_logits(Y, logits))


def _srcxform(family, args):
    from numba import cuda

    fn = {"W3": W.rosenbrock, "W5": W.mlp, "W9": W.mlp_relu, "CNN": cnn}[family]
    f = srcxform.differentiable(fn, device="cuda")
    on_device = [cuda.to_device(a) if isinstance(a, np.ndarray) else
                 [cuda.to_device(p) for p in a] for a in args]
    grads, first, warm = _timed(lambda: f.grad(*on_device), cuda.synchronize)
    _, _, from_host = _timed(lambda: f.grad(*args), cuda.synchronize)
    leaves = grads if isinstance(grads, list) else [grads]
    return [g.copy_to_host() for g in leaves], first, warm, from_host


# ----- JAX -----

def _jax(family, args):
    import jax

    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def rosenbrock(x):
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    def mlp(p, X, Y):
        h = (jax.nn.relu if family == "W9" else jnp.tanh)(X @ p[0] + p[1])
        return -jnp.mean(jnp.sum(Y * jax.nn.log_softmax(h @ p[2] + p[3], axis=1), axis=1))

    def cnn(p, X, Y):
        h = jax.lax.conv_general_dilated(X, p[0], (1, 1), "SAME",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = jax.lax.reduce_window(jax.nn.relu(h + p[1]), -jnp.inf, jax.lax.max, (1, 2, 2, 1),
                                  (1, 2, 2, 1), "VALID")
        logits = h.reshape(h.shape[0], -1) @ p[2] + p[3]
        return -jnp.mean(jnp.sum(Y * jax.nn.log_softmax(logits, axis=1), axis=1))

    g = jax.jit(jax.grad({"W3": rosenbrock, "CNN": cnn}.get(family, mlp)))
    on_device = jax.device_put([a if isinstance(a, np.ndarray) else list(a) for a in args])
    jax.block_until_ready(jnp.zeros(1) + 1)  # the context and its streams, made here
    grads, first, warm = _timed(lambda: jax.block_until_ready(g(*on_device)), lambda: None)
    leaves = grads if isinstance(grads, list) else [grads]
    return [np.asarray(t) for t in leaves], first, warm, jax.devices()[0].device_kind


# ----- PyTorch -----

def _torch(family, args):
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def tensor(a, grad=False):
        return torch.tensor(a, dtype=torch.float64, device=device, requires_grad=grad)

    if family == "W3":
        (x,) = wrt = [tensor(args[0], True)]

        def loss():
            return torch.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    else:
        wrt = p = [tensor(a, True) for a in args[0]]
        X, Y = tensor(args[1]), tensor(args[2])
        act = torch.relu if family == "W9" else torch.tanh

        def features():
            if family != "CNN":
                return act(X @ p[0] + p[1])
            # NHWC and HWIO as NCHW and OIHW; the pooled maps back to NHWC before flattening
            h = torch.conv2d(X.permute(0, 3, 1, 2), p[0].permute(3, 2, 0, 1), padding="same")
            h = torch.max_pool2d(torch.relu(h + p[1][:, None, None]), 2)
            return h.permute(0, 2, 3, 1).reshape(h.shape[0], -1)

        def loss():
            logp = torch.log_softmax(features() @ p[2] + p[3], dim=1)
            return -torch.mean(torch.sum(Y * logp, dim=1))
    sync()
    grads, first, warm = _timed(lambda: torch.autograd.grad(loss(), wrt), sync)
    return [t.cpu().numpy() for t in grads], first, warm, device


def _cnn_step(tiny):
    """(first, warm) of examples/cnn_digits.py's training step on the CUDA target."""
    from numba import cuda

    sys.path.append(os.path.join(os.path.dirname(__file__), os.pardir, "examples"))
    import cnn_digits
    import mlp_digits

    rng, batch = np.random.default_rng(0), 4 if tiny else 256
    X = rng.normal(size=(batch, 8, 8, 1)).astype(np.float32)
    labels = mlp_digits.one_hot(rng.integers(0, 10, batch), 10)
    model = cnn_digits.CNN(4 if tiny else 16, 0.01, 1e-4, 0.1, seed=0)
    step = srcxform.differentiable(model.train_step, device="cuda")
    _, first, warm = _timed(lambda: step(X, labels), cuda.synchronize)
    return f"batch {batch}", first, warm


def _ms(seconds):
    return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.3g} µs"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--out")
    options = parser.parse_args(argv)
    results, device = [], None
    for label, family, args in _sizes(options.tiny):
        want, first, warm, from_host = _srcxform(family, args)
        row = {"row": label, "srcxform": [first, warm], "srcxform from NumPy": from_host}
        for name, run in (("JAX", _jax), ("PyTorch", _torch)):
            got, first, warm, where = run(family, args)
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-10, err_msg=name)
            row[name] = [first, warm]
            device = device or where
        results.append(row)
        print(json.dumps(row), flush=True)
    step = _cnn_step(options.tiny)
    print(f"\nGPU: {device}\n\n| row | srcxform first | warm | from NumPy | JAX first | warm "
          "| PyTorch first | warm |\n|---|---|---|---|---|---|---|---|")
    for row in results:
        print(f"| {row['row']} | " + " | ".join(
            [_ms(row["srcxform"][0]), _ms(row["srcxform"][1]),
             _ms(row["srcxform from NumPy"]), _ms(row["JAX"][0]), _ms(row["JAX"][1]),
             _ms(row["PyTorch"][0]), _ms(row["PyTorch"][1])]) + " |")
    print(f"| CNN example's training step, {step[0]} | {_ms(step[1])} | {_ms(step[2])} | "
          "(from NumPy) | | | | |")
    if options.out:
        with open(options.out, "w") as out:
            json.dump({"device": device, "rows": results, "cnn step": step}, out, indent=1)


if __name__ == "__main__":
    main()
