"""A small convolutional network on scikit-learn's 8x8 digits, with a compiled step.

conv2d (3x3, SAME) -> ReLU -> max_pool2d (2x2) -> dropout -> dense, trained with Adam and
Keras's decoupled weight decay. As in mlp_digits.py, the step is TensorFlow's custom-loop idiom
decorated with `@srcxform.differentiable`: the forward pass, its adjoint (the
convolution's and the pooling's included) and Adam's update run as one Numba-compiled
kernel, whose convolutions are BLAS products of image patches.

    pip install -e '.[examples]'
    python examples/cnn_digits.py                          # 1797 images, 30 epochs
    python examples/cnn_digits.py --subset 500 --epochs 3 --out /tmp/loss.png

Prints the held-out accuracy (at least 97% with the defaults) and the time of an eager
step against a compiled one, and saves the loss curve as a PNG.
"""

import argparse

import numpy as np
from _training import add_out_option, prepare_out, train_twins  # examples/_training.py
from mlp_digits import MLP, dense, load_data, one_hot  # examples/mlp_digits.py

import srcxform as tf

SIDE = 8  # the digits are 8x8 grey images


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--filters", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=0.005)
    parser.add_argument("--weight-decay", type=float, default=1e-4)
    parser.add_argument("--dropout", type=float, default=0.25,
                        help="the rate at which training steps drop pooled features")
    parser.add_argument("--subset", type=int, default=None,
                        help="use only the first N images (after a seeded shuffle)")
    parser.add_argument("--timing-steps", type=int, default=100,
                        help="steps to time eagerly, for the comparison")
    add_out_option(parser, "cnn_digits_loss.png", "the loss curve")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser.parse_args(argv)


def conv(rng, size, n_in, n_out, name):
    """He-uniform HWIO filters for a ReLU layer, and zero biases."""
    limit = np.sqrt(6.0 / (size * size * n_in))
    w = rng.uniform(-limit, limit, (size, size, n_in, n_out)).astype(np.float32)
    return {"w": tf.Variable(w, name=f"{name}_w"),
            "b": tf.Variable(np.zeros(n_out, np.float32), name=f"{name}_b")}


class CNN(MLP):
    """8x8x1 images -> `filters` 3x3 ReLU maps -> 2x2 max pooling -> dropout while
    training -> 10 logits; its training step, accuracy and variables are the MLP's."""

    def __init__(self, filters, learning_rate, weight_decay, dropout, seed):
        rng = np.random.default_rng(seed)
        # The model's own stream of dropout masks: its state is a Variable the compiled
        # step advances, so each step draws a fresh mask, and a twin model the same ones.
        self.noise = tf.random.Generator.from_seed(seed)
        self.dropout = dropout
        pooled = (SIDE // 2) * (SIDE // 2) * filters
        self.params = {"conv": conv(rng, 3, 1, filters, "conv"),
                       "output": dense(rng, pooled, 10, "output")}
        self.optimizer = tf.optimizers.Adam(learning_rate=learning_rate,
                                            weight_decay=weight_decay)

    def logits(self, X, training=False):
        conv, output = self.params["conv"], self.params["output"]
        h = tf.nn.relu(tf.nn.conv2d(X, conv["w"], strides=1, padding="SAME") + conv["b"])
        h = tf.nn.max_pool2d(h, ksize=2, strides=2, padding="VALID")  # (n, 4, 4, filters)
        h = tf.reshape(h, (h.shape[0], output["w"].shape[0]))
        if training:
            h = tf.nn.experimental.general_dropout(h, self.dropout, self.noise.uniform)
        return h @ output["w"] + output["b"]


def main(argv=None):
    args = parse_args(argv)
    prepare_out(args.out)
    X_train, y_train, X_test, y_test = load_data(args.subset, args.seed)
    X_train, X_test = (X.reshape(-1, SIDE, SIDE, 1) for X in (X_train, X_test))  # NHWC
    labels = one_hot(y_train)
    print(f"digits: {len(X_train)} training and {len(X_test)} test images of "
          f"{SIDE}x{SIDE} pixels")

    def new_model():
        return CNN(args.filters, args.learning_rate, args.weight_decay, args.dropout,
                   args.seed)

    return train_twins(new_model, (X_train, labels, X_test, y_test, y_train), args,
                       "Convolutional network, digits (srcxform, Adam)")


if __name__ == "__main__":
    main()
