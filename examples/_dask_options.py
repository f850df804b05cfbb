"""The command-line options the Dask examples share: the data's size and blocks, the
training's length, the cluster, the seed, the progress bar and where the plot goes.

Each example passes its own defaults and adds the options only it has.
"""

import argparse

from _training import add_out_option  # examples/_training.py


def dask_parser(description, *, rows, features, block_rows, per, epochs, learning_rate, plot):
    """An ArgumentParser with the shared options; `per` names what one block's task serves
    (an epoch, a step) in --block-rows's help, `plot` is (file name, what it shows)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rows", type=int, default=rows)
    parser.add_argument("--features", type=int, default=features)
    parser.add_argument("--block-rows", type=int, default=block_rows,
                        help=f"rows per block: one task each, per {per}")
    parser.add_argument("--epochs", type=int, default=epochs)
    parser.add_argument("--learning-rate", type=float, default=learning_rate)
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--persist", action="store_true",
                        help="keep the blocks in the workers' memory (when they fit)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_out_option(parser, *plot)
    return parser
