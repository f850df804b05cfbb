"""The canonical functions whose IR and generated source are kept under tests/golden/.

Each entry: name -> (function, wrt, example arguments). Their lines appear in origin
comments, so edits here change the golden files (refresh with --update-golden).
"""

import numpy as np

import srcxform as tf


def quadratic(x):
    f = x**2 + 2 * x - 1
    return f


def partials(x, z):
    y = tf.reduce_sum(x * x + 2 * z)
    return y


def tanh_loss(w, x):
    a = x * w
    b = tf.tanh(a)
    s = tf.reduce_sum(b)
    return s


def rosenbrock(x):
    head, tail = x[:-1], x[1:]
    return tf.reduce_sum(100.0 * (tail - head**2) ** 2 + (1.0 - head) ** 2)


def logistic_loss(w, X, y):
    logits = X @ w
    losses = tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits)
    return tf.reduce_mean(losses)


def mlp_loss(params, X, labels):
    hidden = tf.tanh(X @ params["W1"] + params["b1"])
    logits = hidden @ params["W2"] + params["b2"]
    losses = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return tf.reduce_mean(losses)


def softmax_row(x):
    p = tf.nn.softmax(x)
    return tf.reduce_sum(p[:, 0])


weights = tf.Variable(np.zeros(3), name="weights")


def sgd_step(X, y):
    with tf.GradientTape() as tape:
        residual = X @ weights - y
        loss = tf.reduce_mean(residual * residual)
    grad = tape.gradient(loss, weights)
    weights.assign_sub(0.1 * grad)
    return loss


_rng = np.random.default_rng(0)
_mlp = {"W1": _rng.normal(size=(4, 5)), "b1": np.zeros(5), "W2": _rng.normal(size=(5, 3)),
        "b2": np.zeros(3)}

CASES = {
    "quadratic": (quadratic, 0, (2.0,)),
    "partials": (partials, (0, 1), (np.full((2, 3), 3.0), 5.0)),
    "tanh_loss": (tanh_loss, (0, 1), (np.ones(4), np.linspace(0, 1, 4))),
    "rosenbrock": (rosenbrock, 0, (np.linspace(-1, 1, 6),)),
    "logistic_loss": (logistic_loss, 0, (np.zeros(3), np.ones((5, 3)), np.ones(5))),
    "mlp_loss": (mlp_loss, 0, (_mlp, np.ones((6, 4)), np.eye(3)[[0, 1, 2, 0, 1, 2]])),
    "softmax_row": (softmax_row, 0, (np.ones((3, 4)),)),
    "sgd_step": (sgd_step, 0, (np.ones((5, 3)), np.ones(5))),
}
