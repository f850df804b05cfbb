"""A whole training loop inside one Numba function, calling srcxform's compiled gradient.

`loss.kernel(*args)` is the compiled value-and-gradient as an ordinary `@njit` function,
so an optimizer written in Numba can call it with no Python in the loop. The same loop in
Python, calling `loss.grad`, gives the same parameters.

    python examples/numba_loop.py [--steps 500]
"""

import argparse
import time

import numba
import numpy as np

import srcxform as tf


def loss(w, b, X, y):
    """Logistic regression: the mean cross-entropy of sigmoid(X @ w + b) against y."""
    logits = X @ w + b
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))


compiled = tf.differentiable(loss, wrt=(0, 1))


@numba.njit
def train(kernel, w, b, X, y, steps, learning_rate):
    """Gradient descent with momentum, entirely in Numba."""
    vw, vb = np.zeros_like(w), 0.0
    for _ in range(steps):
        value, gw, gb = kernel(w, b, X, y)
        vw = 0.9 * vw - learning_rate * gw
        vb = 0.9 * vb - learning_rate * gb
        w = w + vw
        b = b + vb
    return w, b, value


def train_in_python(w, b, X, y, steps, learning_rate):
    """The same loop in Python, one compiled gradient call a step."""
    vw, vb = np.zeros_like(w), 0.0
    for _ in range(steps):
        gw, gb = compiled.grad(w, b, X, y)
        vw = 0.9 * vw - learning_rate * gw
        vb = 0.9 * vb - learning_rate * gb
        w, b = w + vw, b + vb
    return w, b


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 20))
    true_w = rng.normal(size=20)
    y = (X @ true_w + 0.5 * rng.normal(size=1000) > 0).astype(np.float64)
    w0, b0 = np.zeros(20), 0.0

    kernel = compiled.kernel(w0, b0, X, y)
    train(kernel, w0, b0, X, y, 1, 0.1)  # compile the loop
    start = time.perf_counter()
    w, b, value = train(kernel, w0, b0, X, y, args.steps, 0.1)
    numba_s = time.perf_counter() - start

    start = time.perf_counter()
    w_py, b_py = train_in_python(w0, b0, X, y, args.steps, 0.1)
    python_s = time.perf_counter() - start

    accuracy = np.mean(((X @ w + b) > 0) == (y > 0.5))
    print(f"loss after {args.steps} steps: {value:.5f}; training accuracy: {accuracy:.1%}")
    print(f"Numba loop: {numba_s * 1e3:.1f} ms; Python loop: {python_s * 1e3:.1f} ms")
    print(f"largest difference between the two loops' parameters: "
          f"{max(np.max(np.abs(w - w_py)), abs(b - b_py)):.3g}")


if __name__ == "__main__":
    main()
