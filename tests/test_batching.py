"""Vector mode (srcxform/passes/batching.py): a Jacobian's pushes run on every basis vector
at once where each op has a batching rule. One program per rule, each Jacobian by jacfwd
and by jacrev (the tangent program and the reverse walk batch different operands), equal
to the eager tape's, and no loop over the basis left in the kernel (so that the rule, not
the loop, made the values). Kernels run as Python (SRCXFORM_JIT=0)."""

import numpy as np
import pytest

import srcxform as tf

RNG = np.random.default_rng(7)
W = RNG.standard_normal((16, 16)) / 4  # products of 16 terms: GEMM's (ops/linalg.py)

PROGRAMS = {  # name: (fn, size of x); each name says the rules it reaches
    "elementwise, broadcasting": (lambda x: tf.sin(x)[:, None] * x[None, :] + 1.0, 4),
    "reductions, keepdims": (lambda x: tf.reduce_max(tf.reshape(x, (2, 3)), axis=1,
                                                     keepdims=True) * tf.reduce_sum(x * x), 6),
    "transpose, reshape": (lambda x: tf.reshape(tf.transpose(tf.reshape(x, (2, 3)))
                                                * tf.constant([1.0, 2.0]), (-1,)), 6),
    "slices, embed": (lambda x: x[1:4] * x[::-2], 6),
    "concat, a constant piece": (lambda x: tf.concat([x[1:], x[:1] * 2.0,
                                                      tf.constant([1.0])], 0), 5),
    "broadcast_to": (lambda x: tf.broadcast_to(x[:, None], (5, 4))
                     * tf.constant([1.0, -1.0, 2.0, 0.5]), 5),
    "gather, scatter_add": (lambda x: tf.gather(x, [2, 0, 2, 4]) * x[0], 5),
    "matmul, rows of x": (lambda x: tf.tanh(tf.matmul(tf.reshape(x, (2, 16)), W)), 32),
    "matmul, rows of y": (lambda x: tf.matmul(W, tf.reshape(tf.sin(x), (16, 2))), 32),
    "matvec": (lambda x: tf.linalg.matvec(W, tf.tanh(x)), 16),
    "cond, one predicate for every row": (lambda x: tf.cond(
        tf.reduce_sum(x) > 0.0, lambda: x * x[::-1], lambda: tf.sin(x)), 4),
}


@pytest.fixture(autouse=True)
def python_kernels(monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")


def eager_jacobian(fn, x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = fn(x)
    return tape.jacobian(out, x, unconnected_gradients="zero").numpy()


@pytest.mark.parametrize("form", [tf.jacfwd, tf.jacrev])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_each_rule_gives_the_loops_jacobian_without_a_loop(name, form):
    fn, n = PROGRAMS[name]
    compiled = form(fn)
    for x in (np.linspace(-0.9, 1.2, n), -np.linspace(0.3, 1.1, n)):  # both cond branches
        np.testing.assert_allclose(compiled(x), eager_jacobian(fn, x), rtol=1e-13,
                                   atol=1e-14)
    source = compiled._kernel("value", (x,), {})[0].source
    assert "for it in range(" not in source, source


def test_a_hessian_through_a_cond_is_batched():
    """Forward over reverse through a cond: the reverse walk's cond, pushed for every
    column at once, each branch batched, the predicate the primal's."""
    def fn(x):
        return tf.cond(tf.reduce_sum(x) > 0.0, lambda: tf.reduce_sum(x ** 3),
                       lambda: tf.reduce_sum(tf.sin(x)))

    hessian = tf.hessian(fn)
    for x in (np.array([0.5, -0.2, 1.0]), np.array([-0.5, -0.2, 0.1])):
        want = np.diag(6 * x if x.sum() > 0 else -np.sin(x))
        np.testing.assert_allclose(hessian(x), want, rtol=1e-13, atol=1e-15)
    source = hessian._kernel("value", (x,), {})[0].source
    assert "for it in range(" not in source, source


def test_a_push_whose_rows_would_outgrow_the_jacobian_keeps_the_loop():
    """jacfwd through an outer product that a product reads: batched, its tangent would be
    stored whole, n x n a row for n rows (n^3; the Jacobian is n^2): the loop stores one
    row at a time."""
    def fn(x):
        return tf.linalg.matvec(tf.sin(x)[:, None] * tf.cos(x)[None, :], tf.tanh(x))

    compiled, x = tf.jacfwd(fn), np.linspace(-1.0, 1.0, 20)
    np.testing.assert_allclose(compiled(x), eager_jacobian(fn, x), rtol=1e-12, atol=1e-14)
    source = compiled._kernel("value", (x,), {})[0].source
    assert source.count("for it in range(") == 1, source


def test_a_kernel_batched_at_one_size_is_not_reused_where_a_row_outgrows_it():
    """The room is compared as traced sizes, so the comparison is a guard: at n = 10 the
    outer product's tangent (n * n a row) fits the output's 100 and batches; at n = 12 it
    would not, and the Jacobian traces again, a loop (reused at n = 600 it had taken
    1.9 GB against the loop's 0.2)."""
    scale = np.linspace(0.1, 1.0, 100)

    def fn(x):
        return tf.reduce_sum(tf.linalg.matvec(tf.sin(x[:, None] * x[None, :]), x)) * scale

    compiled = tf.jacfwd(fn)
    for n, looped in ((10, False), (12, True), (11, True)):
        x = np.linspace(-1.0, 1.0, n)
        np.testing.assert_allclose(compiled(x), eager_jacobian(fn, x), rtol=1e-12,
                                   atol=1e-14)
        source = compiled._kernel("value", (x,), {})[0].source
        assert ("for it in range(" in source) == looped, n
    assert compiled.cache_info().kernels == 2


@pytest.mark.parametrize("fn, moved", [
    (lambda x: tf.tanh(tf.linalg.matvec(W, x)), True),  # W @ e_i is W's column i
    (lambda x: tf.matmul(W, x[:, None]) * 2.0, True),
    (lambda x: tf.linalg.matvec(W, 2.0 * x), False),  # the rows are 2 e_i: a product
    (lambda x: tf.matmul(x[None, :], W), False)])  # e_i @ W: the general rule
def test_a_product_with_the_basis_itself_moves_the_other_operand(fn, moved):
    """jacfwd's seed is the identity: a product that reads it (W @ e_i, the first layer of
    most maps) is W's columns, moved, and the identity is never built (the 100 -> 100
    map: 0.065 -> 0.030 ms); rows that are not the basis itself take the product."""
    compiled, x = tf.jacfwd(fn), np.linspace(-1.0, 1.0, 16)
    np.testing.assert_allclose(compiled(x), eager_jacobian(fn, x), rtol=1e-13, atol=1e-14)
    source = compiled._kernel("value", (x,), {})[0].source
    assert ("arrays.cumulative(" not in source) == moved, source


def test_unbatched_work_in_the_push_is_computed_once():
    """What does not depend on the basis vector (1 - tanh^2 in tanh's reverse walk) is
    computed outside the batched part: one tanh derivative, not one a row."""
    w = RNG.standard_normal((16, 16))
    compiled, x = tf.jacrev(lambda v: tf.tanh(tf.linalg.matvec(w, v))), np.ones(16) / 4
    np.testing.assert_allclose(compiled(x), (1 - np.tanh(w @ x) ** 2)[:, None] * w,
                               rtol=1e-13)
    program = str(compiled._kernel("value", (x,), {})[0].program)
    assert program.count("subtract(1,") == 1 and "fori_loop" not in program, program
