"""A two-layer perceptron on scikit-learn's handwritten digits, with a compiled step.

The model's parameters are one nested structure, a dict of dicts of Variables; the
tape returns the gradients in the same structure and the optimizer takes them whole.
The step is TensorFlow's custom-loop idiom decorated with `@srcxform.differentiable`,
so forward pass, adjoint and Adam's update run as one Numba-compiled kernel.

    pip install -e '.[examples]'
    python examples/mlp_digits.py                          # 1797 images, 40 epochs
    python examples/mlp_digits.py --subset 500 --epochs 3 --out /tmp/loss.png

Prints the held-out accuracy (at least 95% with the defaults) and the time of an eager
step against a compiled one, and saves the loss curve as a PNG.
"""

import argparse

import numpy as np
from _training import add_out_option, prepare_out, train_twins  # examples/_training.py

import srcxform as tf


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=0.002)
    parser.add_argument("--subset", type=int, default=None,
                        help="use only the first N images (after a seeded shuffle)")
    parser.add_argument("--timing-steps", type=int, default=100,
                        help="steps to time eagerly, for the comparison")
    add_out_option(parser, "mlp_digits_loss.png", "the loss curve")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser.parse_args(argv)


def load_data(subset, seed):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(X))[:subset]
    X_train, X_test, y_train, y_test = train_test_split(
        X[order] / 16.0, y[order], test_size=0.25, random_state=seed, stratify=y[order])
    return X_train.astype(np.float32), y_train, X_test.astype(np.float32), y_test


def one_hot(labels, n=10):
    return np.eye(n, dtype=np.float32)[labels]


def dense(rng, n_in, n_out, name):
    """Glorot-uniform weights and zero biases (Keras's Dense defaults)."""
    limit = np.sqrt(6.0 / (n_in + n_out))
    w = rng.uniform(-limit, limit, (n_in, n_out)).astype(np.float32)
    return {"w": tf.Variable(w, name=f"{name}_w"),
            "b": tf.Variable(np.zeros(n_out, np.float32), name=f"{name}_b")}


class MLP:
    """64 pixels -> `hidden` ReLU units -> 10 logits, with its optimizer."""

    def __init__(self, n_in, hidden, n_out, learning_rate, seed):
        rng = np.random.default_rng(seed)
        self.params = {"hidden": dense(rng, n_in, hidden, "hidden"),
                       "output": dense(rng, hidden, n_out, "output")}
        self.optimizer = tf.optimizers.Adam(learning_rate=learning_rate)

    def logits(self, X, training=False):
        """The logits; `training` is Keras's flag (this model acts the same either way)."""
        h = tf.nn.relu(X @ self.params["hidden"]["w"] + self.params["hidden"]["b"])
        return h @ self.params["output"]["w"] + self.params["output"]["b"]

    def train_step(self, X, labels):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(
                tf.nn.softmax_cross_entropy_with_logits(labels=labels,
                                                        logits=self.logits(X, training=True)))
        grads = tape.gradient(loss, self.params)  # {"hidden": {"b": .., "w": ..}, ...}
        self.optimizer.apply(grads, self.params)
        return loss

    def accuracy(self, X, y):
        return float(np.mean(np.argmax(np.asarray(self.logits(X)), axis=1) == y))

    @property
    def variables(self):
        return [v for layer in self.params.values() for v in layer.values()]


def main(argv=None):
    args = parse_args(argv)
    prepare_out(args.out)
    X_train, y_train, X_test, y_test = load_data(args.subset, args.seed)
    labels = one_hot(y_train)
    print(f"digits: {len(X_train)} training and {len(X_test)} test images of "
          f"{X_train.shape[1]} pixels")

    def new_model():
        return MLP(X_train.shape[1], args.hidden, 10, args.learning_rate, args.seed)

    return train_twins(new_model, (X_train, labels, X_test, y_test, y_train), args,
                       "Two-layer perceptron, digits (srcxform, Adam)")


if __name__ == "__main__":
    main()
