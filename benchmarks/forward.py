"""Forward mode, hvp and vmap against JAX, torch.func and TensorFlow (issue 32), warm calls.

    python -m benchmarks.forward                  every case, a markdown table
    python -m benchmarks.forward --only jacobian  one case (jacobian, hvp, per-example)
    taskset -c 1 python -m benchmarks.forward --only jacobian --serial

Cases: the Jacobian of a 100 -> 100 map, tanh(W @ x) (jacfwd, jacrev, and srcxform.jacobian,
which picks the smaller side), against JAX jit(jacfwd/jacrev), torch.func's eager
jacfwd/jacrev and TensorFlow's tape.jacobian (pfor) in a tf.function, as a graph and by
XLA (jit_compile=True); hvp on Rosenbrock with n = 1e6 (forward over reverse in every
system) against one gradient call;
per-example gradients of logistic regression (1,000 examples x 50 features) by
vmap(grad), and by vmap of a parallel=True function's grad (its loop over examples a
prange), against JAX's jit(vmap(grad)), torch.func's vmap(grad) and TensorFlow's
vectorized_map of a GradientTape gradient in a tf.function, graph and XLA. Each peer's
value is checked against srcxform's before it is timed; a peer that does not import is
skipped (n/a, and a note under the table).
srcxform's first call compiles and waits (`SRCXFORM_TIERED=0`); the times are the median
of warm calls, in this process. `--serial` pins the process to the first core it may run
on and asks every pool for one thread (before NumPy or a peer starts one; torch and
TensorFlow by their own calls, before their first op); the table then
says how many threads ran in each system's timed calls (benchmarks/threads.py's meter).
"""

import argparse
import os
import statistics
import sys
import time
from types import SimpleNamespace

from benchmarks import threads  # imports no NumPy: nothing may start a pool before pinning

SERIAL = "--serial" in sys.argv[1:]
if SERIAL:
    threads.limit_pools(1)
    threads.pin({threads.affinity()[0]})

import numpy as np  # after the pools are limited

os.environ.setdefault("SRCXFORM_TIERED", "0")  # first calls wait for their kernel
METERS: dict = {}  # label -> the threads that ran in its timed calls (CpuMeter)
NOTES: list = []  # the peers skipped, and why


def _median_seconds(fn, repeat, label=None):
    """The median of `repeat` warm calls (the first compiles); with a label, the threads
    that ran in them are kept in METERS."""
    fn()
    times, meter = [], threads.CpuMeter()
    for _ in range(repeat):
        before = threads.snapshot()
        start = time.perf_counter_ns()
        fn()
        elapsed = time.perf_counter_ns() - start
        meter.add(before, threads.snapshot(), elapsed)
        times.append(elapsed / 1e9)
    if label:
        METERS[label] = meter
    return statistics.median(times)


def _jax():
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as error:
        NOTES.append(f"JAX skipped: {error}")
        return None
    jax.config.update("jax_enable_x64", True)
    return jax, jnp


def _torch():
    try:
        import torch
        import torch.func
    except ImportError as error:
        NOTES.append(f"PyTorch skipped: {error}")
        return None
    if SERIAL:
        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
    return torch


def _tensorflow():
    """TensorFlow, or None where it does not import (NOTES says why). With --serial its
    intra-op and inter-op pools get one thread each, set before its first op (later, TF
    refuses the setting)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import tensorflow
    except ImportError as error:
        NOTES.append(f"TensorFlow skipped: {error}")
        return None
    if SERIAL:
        tensorflow.config.threading.set_intra_op_parallelism_threads(1)
        tensorflow.config.threading.set_inter_op_parallelism_threads(1)
    return tensorflow


def _tf_functions(tensorflow, fn):
    """fn as a tf.function: a graph (TF) and compiled by XLA (TF XLA)."""
    return {"TF": tensorflow.function(fn),
            "TF XLA": tensorflow.function(fn, jit_compile=True)}


def _checked_seconds(fn, expected, repeat, system, label):
    """_median_seconds of a peer's call, once its value is srcxform's (to rounding)."""
    np.testing.assert_allclose(np.asarray(fn()), expected, rtol=1e-9, atol=1e-12,
                               err_msg=f"{system}, {label}")
    return _median_seconds(fn, repeat, (system, label))


def jacobian_case(tf, jax, torch=None, tensorflow=None):
    x = np.linspace(-1, 1, 100)
    w = np.random.default_rng(0).standard_normal((100, 100)) / 10

    def f(x):
        return tf.tanh(tf.linalg.matvec(w, x))

    forms = {"jacfwd 100->100": tf.jacfwd(f), "jacrev 100->100": tf.jacrev(f),
             "jacobian 100->100 (srcxform.jacobian picks)": tf.jacobian(f)}
    rows = {label: _median_seconds(lambda j=j: j(x), 200, ("srcxform", label))
            for label, j in forms.items()}
    expected = forms["jacrev 100->100"](x)
    peers = {}
    if jax:
        jx, jnp = jax
        for label, form in (("jacfwd 100->100", jx.jacfwd), ("jacrev 100->100", jx.jacrev)):
            jitted = jx.jit(form(lambda x: jnp.tanh(w @ x)))
            peers.setdefault("JAX", {})[label] = _checked_seconds(
                lambda j=jitted: j(x).block_until_ready(), expected, 200, "JAX", label)
    if torch:
        wt, xt = torch.from_numpy(w), torch.from_numpy(x)
        for label, form in (("jacfwd 100->100", torch.func.jacfwd),
                            ("jacrev 100->100", torch.func.jacrev)):
            jac = form(lambda x: torch.tanh(wt @ x))
            peers.setdefault("torch.func", {})[label] = _checked_seconds(
                lambda j=jac: j(xt), expected, 200, "torch.func", label)
    if tensorflow:
        wt, xt = tensorflow.constant(w), tensorflow.constant(x)

        def tape_jacobian(x):
            with tensorflow.GradientTape() as tape:
                tape.watch(x)
                y = tensorflow.tanh(tensorflow.linalg.matvec(wt, x))
            return tape.jacobian(y, x)  # pfor: the rows' walks vectorized, one graph

        label = "jacrev 100->100"
        for system, jac in _tf_functions(tensorflow, tape_jacobian).items():
            peers[system] = {label: _checked_seconds(lambda j=jac: j(xt), expected, 200,
                                                     system, label)}
    return rows, peers


def _rosen(tf):
    return lambda x: tf.reduce_sum(100. * (x[1:] - x[:-1] ** 2) ** 2 + (1. - x[:-1]) ** 2)


def hvp_case(tf, jax, torch=None, tensorflow=None):
    rng = np.random.default_rng(0)
    x, v = rng.standard_normal(10 ** 6), rng.standard_normal(10 ** 6)
    hvp, grad = tf.hvp(_rosen(tf)), tf.grad(_rosen(tf))
    label, one = "hvp rosenbrock 1e6", "grad rosenbrock 1e6 (one call)"
    rows = {label: _median_seconds(lambda: hvp(x, v), 10, ("srcxform", label)),
            one: _median_seconds(lambda: grad(x), 10, ("srcxform", one))}
    expected = {label: hvp(x, v), one: grad(x)}

    def timed(system, hvp_call, grad_call):
        peers[system] = {name: _checked_seconds(call, expected[name], 10, system, name)
                         for name, call in ((label, hvp_call), (one, grad_call))}

    peers: dict = {}
    if jax:
        jx, jnp = jax
        f = _rosen(SimpleNamespace(reduce_sum=jnp.sum))
        jhvp = jx.jit(lambda x, v: jx.jvp(jx.grad(f), (x,), (v,))[1])
        jgrad = jx.jit(jx.grad(f))
        timed("JAX", lambda: jhvp(x, v).block_until_ready(),
              lambda: jgrad(x).block_until_ready())
    if torch:  # forward over reverse, as JAX's
        f = _rosen(SimpleNamespace(reduce_sum=torch.sum))
        xt, vt = torch.from_numpy(x), torch.from_numpy(v)
        timed("torch.func", lambda: torch.func.jvp(torch.func.grad(f), (xt,), (vt,))[1],
              lambda: torch.func.grad(f)(xt))
    if tensorflow:  # the advanced-autodiff guide's forward over backward
        f = _rosen(tensorflow)

        def gradient(x):
            with tensorflow.GradientTape() as tape:
                tape.watch(x)
                y = f(x)
            return tape.gradient(y, x)

        def forward_over_backward(x, v):
            with tensorflow.autodiff.ForwardAccumulator(x, v) as acc:
                g = gradient(x)
            return acc.jvp(g)

        xt, vt = tensorflow.constant(x), tensorflow.constant(v)
        grads = _tf_functions(tensorflow, gradient)
        for system, tf_hvp in _tf_functions(tensorflow, forward_over_backward).items():
            timed(system, lambda h=tf_hvp: h(xt, vt), lambda g=grads[system]: g(xt))
    return rows, peers


def _logistic(tf, log1p_exp):
    def loss(w, x, y):
        z = tf.reduce_sum(w * x)
        return log1p_exp(-z) + (1. - y) * z
    return loss


def per_example_case(tf, jax, torch=None, tensorflow=None):
    rng = np.random.default_rng(0)
    X, y, w = rng.standard_normal((1000, 50)), (rng.random(1000) < 0.5) * 1.0, np.zeros(50)
    loss = _logistic(tf, tf.nn.softplus)
    label, threaded = "per-example grads 1000x50", "per-example grads, parallel=True"
    per = tf.vmap(tf.grad(loss), in_axes=(None, 0, 0))
    # parallel=True: the loop over examples is a prange (every core; one when --serial)
    on_threads = tf.vmap(tf.differentiable(loss, parallel=True).grad, in_axes=(None, 0, 0))
    rows = {label: _median_seconds(lambda: per(w, X, y), 50, ("srcxform", label)),
            threaded: _median_seconds(lambda: on_threads(w, X, y), 50, ("srcxform", threaded))}
    expected = per(w, X, y)
    peers = {}
    if jax:
        jx, jnp = jax
        jloss = _logistic(SimpleNamespace(reduce_sum=jnp.sum), jx.nn.softplus)
        jper = jx.jit(jx.vmap(jx.grad(jloss), in_axes=(None, 0, 0)))
        peers["JAX"] = {label: _checked_seconds(lambda: jper(w, X, y).block_until_ready(),
                                                expected, 20, "JAX", label)}
    if torch:
        tloss = _logistic(SimpleNamespace(reduce_sum=torch.sum),
                          torch.nn.functional.softplus)
        tper = torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))
        wt, Xt, yt = (torch.from_numpy(a) for a in (w, X, y))
        peers["torch.func"] = {label: _checked_seconds(lambda: tper(wt, Xt, yt), expected,
                                                       20, "torch.func", label)}
    if tensorflow:
        tfloss = _logistic(tensorflow, tensorflow.nn.softplus)

        def per_example(w, X, y):
            def one(example):
                with tensorflow.GradientTape() as tape:
                    tape.watch(w)
                    value = tfloss(w, *example)
                return tape.gradient(value, w)
            return tensorflow.vectorized_map(one, (X, y))  # pfor over the examples

        wt, Xt, yt = (tensorflow.constant(a) for a in (w, X, y))
        for system, tper in _tf_functions(tensorflow, per_example).items():
            peers[system] = {label: _checked_seconds(lambda f=tper: f(wt, Xt, yt), expected,
                                                     20, system, label)}
    return rows, peers


CASES = {"jacobian": jacobian_case, "hvp": hvp_case, "per-example": per_example_case}


PEERS = ("JAX", "torch.func", "TF", "TF XLA")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(CASES))
    parser.add_argument("--serial", action="store_true",
                        help="one core, one thread a pool (read before NumPy is imported)")
    args = parser.parse_args()
    import srcxform as tf

    jax, torch, tensorflow = _jax(), _torch(), _tensorflow()
    print("| case | srcxform (ms) | JAX jit (ms) | torch.func (ms) | TF tf.function (ms) "
          "| TF jit_compile (ms) |"
          + (" threads ran (srcxform/JAX/torch/TF/TF XLA) |" if SERIAL else "")
          + "\n| --- | ---: | ---: | ---: | ---: | ---: |" + (" :---: |" if SERIAL else ""))
    for name, case in CASES.items():
        if args.only and name != args.only:
            continue
        rows, peers = case(tf, jax, torch, tensorflow)
        for label, seconds in rows.items():
            shown = [peers.get(peer, {}).get(label) for peer in PEERS]
            cells = [f"{t * 1e3:.3f}" if t is not None else "n/a" for t in shown]
            ran = "/".join(str(METERS[(system, label)].threads())
                           if (system, label) in METERS else "-"
                           for system in ("srcxform",) + PEERS)
            print(f"| {label} | {seconds * 1e3:.3f} | " + " | ".join(cells) + " |"
                  + (f" {ran} |" if SERIAL else ""), flush=True)
    if SERIAL:
        pools = tensorflow.config.threading if tensorflow else None
        print(f"\npinned to cores {threads.affinity()}; torch threads "
              f"{torch.get_num_threads() if torch else '-'}; TF intra-op/inter-op threads "
              f"{pools.get_intra_op_parallelism_threads() if pools else '-'}/"
              f"{pools.get_inter_op_parallelism_threads() if pools else '-'}; numba threads "
              f"{__import__('numba').get_num_threads()}")
    for note in NOTES:
        print(note)


if __name__ == "__main__":
    main()
