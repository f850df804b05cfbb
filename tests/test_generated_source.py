"""The generated source as a person reads it: sections, size names, comment width, values
recomputed."""

import re

import numpy as np

import srcxform as tf


def _layer(x, w, v):
    return tf.reduce_sum(tf.tanh(x @ w) @ v)


def test_size_symbols_are_numbered_without_gaps():
    # x's second size is w's first, and w's second is v's first: five symbols, three sizes.
    source = tf.differentiable(_layer).source(np.ones((4, 3)), np.ones((3, 5)), np.ones(5))
    assert "(f64[n0,n1], f64[n1,n2], f64[n2])" in source
    assert set(re.findall(r"\bn\d+\b", source)) == {"n0", "n1", "n2"}


def _a_function_with_a_long_line(x):
    return tf.reduce_sum(tf.tanh(x) * tf.tanh(x + 1.0) * tf.tanh(x + 2.0) * tf.tanh(x + 3.0) * 2.0)


def test_sections_are_labelled_outside_loops_and_comments_fit_100_columns():
    source = tf.differentiable(_a_function_with_a_long_line).source(np.ones(3))
    comments = [line for line in source.split("\n") if line.lstrip().startswith("#")]
    assert all(len(line) <= 100 for line in comments)
    assert any(line.endswith("...") for line in comments)  # the user's line, cut
    sections = [line for line in comments if "# ----" in line]
    assert all(line.startswith("    # ----") for line in sections)
    assert "    # ---- forward and adjoint, fused ----" in sections


def _residual_loss(X, w, y):
    residual = X @ w - y
    return tf.reduce_mean(residual * residual)


def test_a_value_another_loop_computed_is_marked_recomputed_under_its_line():
    source = tf.differentiable(_residual_loss).source(np.ones((4, 3)), np.ones(3), np.ones(4))
    kernel = source.split("\n\n\n")[1].split("\n")
    computed = [k for k, line in enumerate(kernel) if line.strip().startswith("residual_i = ")]
    assert len(computed) == 2  # in the forward loop, and again in the adjoint's
    first, again = computed
    assert not kernel[first].endswith("# recomputed")
    assert kernel[again].endswith("  # recomputed")
    assert kernel[again - 1].strip().endswith("residual = X @ w - y")  # its line heads it
    # The next statement, the adjoint's, is headed by its own line again.
    assert kernel[again + 1].strip().startswith("# grad of ")


def _rotated(x):
    m = tf.reshape(x[:4], (2, 2))
    return tf.reduce_sum(tf.tanh(m @ m), axis=1)


def test_a_jacobians_pushes_are_headed_by_the_lines_they_push_through():
    # jacfwd pushes each basis vector through the records: the code it makes was headed
    # by the line that called the Jacobian, every statement of it (not the function's).
    # (The basis itself is the call's own.)
    source = tf.jacfwd(_rotated).source(np.arange(5.0))
    heads = {line.strip() for line in source.split("\n") if line.strip().startswith("# ")}
    called = [h for h in heads if h.startswith("# grad of") and "tf.jacfwd(_rotated)" in h]
    assert called == [], called
    assert any(h.endswith("m = tf.reshape(x[:4], (2, 2))") for h in heads)
    assert any(h.endswith("return tf.reduce_sum(tf.tanh(m @ m), axis=1)") for h in heads)
