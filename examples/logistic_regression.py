"""Logistic regression on scikit-learn's breast-cancer data, with a compiled training step.

The training step is TensorFlow's custom-loop idiom, unchanged but decorated with
`@srcxform.differentiable`: the forward pass, the tape's adjoint and Adam's update run as
one Numba-compiled kernel, and the new values of the weights and the optimizer's state
are written back after each call.

    pip install -e '.[examples]'
    python examples/logistic_regression.py                 # 569 samples, 100 epochs
    python examples/logistic_regression.py --subset 200 --epochs 5 --out /tmp/loss.png

Prints the held-out accuracy and the time of an eager step against a compiled one, and
saves the loss curve as a PNG.
"""

import argparse

import numpy as np
from _training import add_out_option, prepare_out, train_twins  # examples/_training.py

import srcxform as tf


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--subset", type=int, default=None,
                        help="use only the first N samples (after a seeded shuffle)")
    parser.add_argument("--timing-steps", type=int, default=200,
                        help="steps to time eagerly, for the comparison")
    add_out_option(parser, "logistic_regression_loss.png", "the loss curve")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser.parse_args(argv)


def load_data(subset, seed):
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(X))[:subset]
    X_train, X_test, y_train, y_test = train_test_split(
        X[order], y[order], test_size=0.25, random_state=seed, stratify=y[order])
    scaler = StandardScaler().fit(X_train)
    return (scaler.transform(X_train).astype(np.float32), y_train.astype(np.float32),
            scaler.transform(X_test).astype(np.float32), y_test.astype(np.float32))


class LogisticRegression:
    """The weights and the optimizer, and a training step to run eagerly or compiled."""

    def __init__(self, n_features, learning_rate):
        self.w = tf.Variable(tf.zeros((n_features,)), name="w")
        self.b = tf.Variable(0.0, name="b")
        self.optimizer = tf.optimizers.Adam(learning_rate=learning_rate)

    def logits(self, X):
        return tf.reduce_sum(X * self.w, axis=1) + self.b

    def train_step(self, X, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(
                tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=self.logits(X)))
        grads = tape.gradient(loss, [self.w, self.b])
        self.optimizer.apply_gradients(zip(grads, [self.w, self.b]))
        return loss

    def accuracy(self, X, y):
        return float(np.mean((np.asarray(self.logits(X)) > 0) == (y > 0.5)))

    @property
    def variables(self):
        return [self.w, self.b]


def main(argv=None):
    args = parse_args(argv)
    prepare_out(args.out)
    X_train, y_train, X_test, y_test = load_data(args.subset, args.seed)
    print(f"breast cancer: {len(X_train)} training and {len(X_test)} test samples, "
          f"{X_train.shape[1]} features")

    return train_twins(lambda: LogisticRegression(X_train.shape[1], args.learning_rate),
                       (X_train, y_train, X_test, y_test, y_train), args,
                       "Logistic regression, breast cancer (srcxform, Adam)", "weights")


if __name__ == "__main__":
    main()
