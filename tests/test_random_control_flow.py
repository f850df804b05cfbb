"""Random programs with data-dependent control flow: cond, fori_loop, while_loop and scan,
their branches and bodies drawn from the op pool of test_random_programs.py, nested up
to two deep. The eager tape, the compiled kernel and central differences must agree, at
several sizes and trip counts, through one kernel per program.

A program is prog(n, xs, *inputs): n an int64 trip count (traced: fori_loop(0, n) and
while k < n), xs a (T, m) sequence (scanned, or indexed by a fori_loop over its rows),
the inputs of shapes built from m. A construct's body reads any value of the enclosing
scopes (captured), its carry, the index and the row; it returns `0.5 * (carry +
tanh(result))`, so values stay small however many trips run. A cond's predicate is the
sign of a value's sum, so loops take both branches from one trip to the next.

Each program compiles one new kernel (seconds, with its loops), hence few programs by
default; SRCXFORM_FUZZ_CONTROL_FLOW=N runs N of them.
"""

import os

import numpy as np
import pytest
from corpus import assert_trees_close, eager_value_and_grad
from test_random_programs import _shape_of, apply_step, random_step

import srcxform as tf
from srcxform.testing import check_grads

PROGRAMS = int(os.environ.get("SRCXFORM_FUZZ_CONTROL_FLOW", "4"))
INPUT_SHAPES = [(), ("m",), (2, "m"), (2, 1), (1, "m"), "float"]
CONSTRUCTS = ("cond", "fori", "fori_rows", "while", "scan")
# How many values a body's scope adds (index, row, carry) before its own.
SCOPE_SIZES = {"cond": 0, "fori": 2, "fori_rows": 3, "while": 1, "scan": 2}
MAX_DEPTH = 2
# (m, T, trip counts) of each call, in order; the first trip count of a size is also
# checked against finite differences. Shapes are drawn at the first size: m and T, and
# what slicing leaves of them (m - 1, ...), differ there from the constant sizes 1 and 2
# and from each other, so a shape relation that holds there holds at every size, and no
# size becomes 1 (which would be another kernel).
CALLS = [(7, 5, (3, 0, 1, 5)), (6, 4, (2, 4))]
BASE_M, BASE_T = CALLS[0][:2]
TOL = {"rtol": 1e-9, "atol": 1e-11}


def _sized(shape, m):
    return tuple(m if d == "m" else d for d in shape)


# ----- drawing a program -----


class Generator:
    """Draws statements from a seeded generator, tracking each value's shape (at BASE_M).

    A statement is ("step", step) with a step of test_random_programs, or a construct:
    ("cond", pred, true_block, false_block, ref, broadcasts), ("fori", carry, body,
    broadcasts), and the same for "fori_rows", "while" and "scan". A block is a list of
    statements whose result is its last value, brought to the shape of ref or the carry
    (broadcast, or its mean broadcast where `broadcasts` is False)."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def pick(self, options):
        return options[self.rng.integers(len(options))]

    def block(self, shapes, depth, size, first=None):
        """`size` statements on values of `shapes` (extended in place as they are drawn)."""
        statements = []
        for k in range(size):
            if depth < MAX_DEPTH and self.rng.random() < 0.3:
                statement, shape = self.construct(shapes, depth)
            else:
                step = random_step(self.rng, shapes, first if k == 0 else None, any_size=True)
                statement, shape = ("step", step), _shape_of(step, shapes)
            statements.append(statement)
            shapes.append(shape)
        return statements

    def construct(self, shapes, depth):
        kind = self.pick(CONSTRUCTS)
        ref = int(self.rng.integers(len(shapes)))
        if kind == "cond":
            pred = int(self.rng.integers(len(shapes)))
            true_block, true_fits = self.body(shapes, [], depth, ref)
            false_block, false_fits = self.body(shapes, [], depth, ref)
            return ("cond", pred, true_block, false_block, ref,
                    (true_fits, false_fits)), shapes[ref]
        scope = {"fori": [(), shapes[ref]], "fori_rows": [(), (BASE_M,), shapes[ref]],
                 "while": [shapes[ref]], "scan": [(BASE_M,), shapes[ref]]}[kind]
        assert len(scope) == SCOPE_SIZES[kind]
        body, fits = self.body(shapes, scope, depth, len(shapes) + len(scope) - 1)
        return (kind, ref, body, fits), shapes[ref]

    def body(self, shapes, scope, depth, target):
        """A block on the enclosing values and `scope`'s (index, row, carry: the carry last,
        the first operand of its first step), and whether its result broadcasts to
        values[target]'s shape."""
        inner = list(shapes) + scope
        first = len(inner) - 1 if scope else None
        block = self.block(inner, depth + 1, int(self.rng.integers(1, 4)), first)
        return block, _broadcastable(inner[-1], inner[target])

    def program(self):
        n_inputs = int(self.rng.integers(1, 4))
        templates = [self.pick(INPUT_SHAPES) for _ in range(n_inputs)]
        shapes = [(BASE_T, BASE_M)] + [() if t == "float" else _sized(t, BASE_M)
                                       for t in templates]
        before = self.block(shapes, 0, int(self.rng.integers(0, 2)))
        construct, shape = self.construct(shapes, 0)  # at least one in every program
        shapes.append(shape)
        after = self.block(shapes, 0, int(self.rng.integers(1, 4)))
        return templates, [*before, construct, *after]


def _broadcastable(a, target):
    try:
        return np.broadcast_shapes(a, target) == tuple(target)
    except ValueError:
        return False


# ----- running a program, eagerly or traced -----


def _fit(value, like, broadcasts):
    """value brought to like's shape: broadcast, or its mean broadcast."""
    return (value if broadcasts else tf.reduce_mean(value)) + tf.zeros_like(like)


def _update(carry, result, broadcasts):
    return 0.5 * (carry + tf.tanh(_fit(result, carry, broadcasts)))


def run_block(statements, values, n, xs):
    """Runs the statements, appending their values; returns the block's result: its last
    value, plus half the mean of each other value of its own that no statement reads."""
    start = len(values)
    for statement in statements:
        values.append(_run(statement, values, n, xs))
    result = values[-1]
    for i in _unread(statements, start)[:-1]:
        result = result + 0.5 * tf.reduce_mean(values[i])
    return result


def _run(statement, values, n, xs):
    kind = statement[0]
    if kind == "step":
        return apply_step(statement[1], values)
    if kind == "cond":
        _, pred, true_block, false_block, ref, (true_fits, false_fits) = statement

        def branch(block, fits):
            return lambda: _fit(run_block(block, list(values), n, xs), values[ref], fits)

        return tf.cond(tf.reduce_sum(values[pred]) > 0.0, branch(true_block, true_fits),
                       branch(false_block, false_fits))
    _, ref, body, fits = statement

    def run_body(*scope):
        carry = scope[-1]
        return _update(carry, run_block(body, list(values) + list(scope), n, xs), fits)

    if kind == "fori":
        return tf.fori_loop(0, n, lambda i, c: run_body(0.1 * tf.cast(i, tf.float64), c),
                            values[ref])
    if kind == "fori_rows":
        return tf.fori_loop(0, xs.shape[0], lambda i, c: run_body(
            0.1 * tf.cast(i, tf.float64), xs[i], c), values[ref])
    if kind == "while":
        _, out = tf.while_loop(lambda k, c: k < n, lambda k, c: (k + 1, run_body(c)),
                               (tf.constant(0, tf.int64), values[ref]))
        return out
    assert kind == "scan"
    ys = tf.scan(lambda acc, x: run_body(x, acc), xs, initializer=values[ref])
    return tf.reduce_sum(ys, axis=0)


def make_program(statements, n_inputs):
    """prog(n, xs, *inputs): the sum of the top-level values no later statement reads."""
    outputs = _unread(statements, 1 + n_inputs)

    def prog(n, xs, *inputs):
        values = [xs, *inputs]
        run_block(statements, values, n, xs)
        total = tf.reduce_sum(values[outputs[-1]])
        for i in outputs[:-1]:
            total = total + 0.5 * tf.reduce_sum(values[i])
        return total

    return prog


def _unread(statements, start):
    """The indices of the statements' values (numbered from start) that none reads; the
    last is always among them."""
    read = _reads(statements, start)
    return [start + k for k in range(len(statements)) if start + k not in read]


def _reads(statements, start):
    """The indices of the values the statements read (theirs numbered from start): a
    nested block's reads of the scopes around it, not of its own values."""
    read = set()
    for k, statement in enumerate(statements):
        here = start + k  # the statement's value; a body's scope values come next
        if statement[0] == "step":
            read.update(statement[1][1])
            continue
        read.update(statement[1:2] + (statement[4:5] if statement[0] == "cond" else ()))
        for block in statement[2:4] if statement[0] == "cond" else statement[2:3]:
            read |= {i for i in _reads(block, here + SCOPE_SIZES[statement[0]]) if i < here}
    return read


def arguments(templates, m, rows, trips, rng):
    inputs = [float(rng.uniform(-1.5, 1.5)) if t == "float"
              else rng.uniform(-1.5, 1.5, _sized(t, m)) for t in templates]
    return [np.int64(trips), rng.uniform(-1.5, 1.5, (rows, m)), *inputs]


# ----- the tests -----


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(PROGRAMS))
def test_random_control_flow_eager_compiled_and_numeric_agree(seed):
    templates, statements = Generator(seed).program()
    prog = make_program(statements, len(templates))
    wrt = tuple(range(1, 2 + len(templates)))
    f = tf.differentiable(prog, wrt=wrt)
    rng = np.random.default_rng(seed)
    for m, rows, trip_counts in CALLS:
        data = arguments(templates, m, rows, 0, rng)
        for k, trips in enumerate(trip_counts):
            args = [np.int64(trips), *data[1:]]
            where = f"program {seed} {statements}\nat m={m}, T={rows}, n={trips}"
            eager_value, eager_grads = eager_value_and_grad(prog, args, wrt)
            value, grads = f.value_and_grad(*args)
            np.testing.assert_allclose(value, eager_value, **TOL, err_msg=where)
            assert_trees_close(grads, eager_grads, **TOL, what=f"compiled vs eager, {where}")
            if k == 0:
                check_grads(prog, args, wrt=wrt, rtol=1e-5, atol=1e-6, compiled=False)
                kernels = f.cache_info().kernels
        # Another trip count is the same kernel.
        assert f.cache_info().kernels == kernels, where
    assert f.cache_info().kernels == 1  # and so is another size


@pytest.mark.parametrize("kind", CONSTRUCTS)
def test_the_generator_draws_every_construct_nested(kind):
    """Each construct at the top and inside another construct's body, over 50 programs."""
    top, nested = set(), set()
    for seed in range(50):
        _, statements = Generator(seed).program()
        for statement in statements:
            if statement[0] != "step":
                top.add(statement[0])
                blocks = statement[2:4] if statement[0] == "cond" else [statement[2]]
                nested |= {s[0] for block in blocks for s in block}
    assert kind in top and kind in nested
