"""Rows computed alike and joined, or added up in a chain, become one loop
(srcxform/passes/reroll.py): the kernel's size does not grow with the number of rows, and
values and gradients are the eager tape's (a chain's sum bit for bit the unrolled one's)."""

import time

import numpy as np
import pytest

import srcxform as tf
from srcxform.jit import compiler
from srcxform.core.dims import guard_conditions
from srcxform.passes import reroll
from srcxform.passes.reroll import MIN_ROWS, MIN_TERMS

from objectives import gmm, gmm_inputs, gmm_numpy

RNG = np.random.default_rng(7)


def _eager(fn, args):
    variables = [tf.Variable(a) for a in args]
    with tf.GradientTape() as tape:
        y = fn(*variables)
    return y.numpy(), [g.numpy() for g in tape.gradient(y, variables)]


def _agree(fn, *shapes, jit=True, monkeypatch=None):
    """fn's compiled value and gradients equal the eager tape's, at each list of shapes in
    turn, through one Differentiable (a kernel traced at one size runs at the next)."""
    compiled = tf.differentiable(fn, wrt=tuple(range(len(shapes[0]))), wait=True)
    for call in shapes:
        args = [RNG.normal(size=s) for s in call]
        value, grads = compiled.value_and_grad(*args)
        want, want_grads = _eager(fn, args)
        np.testing.assert_allclose(value, want, rtol=1e-12)
        for g, w in zip(grads, want_grads):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)
    return compiled


def _rows_of(n):
    def f(x, mu):
        return tf.reduce_sum(tf.stack(tuple(x[i] - mu for i in range(n))) ** 2)
    return f


def test_a_stack_of_rows_is_one_loop_whatever_the_rows():
    x, mu = np.ones((64, 2)), np.ones((5, 2))
    small = tf.differentiable(_rows_of(8)).source(x, mu)
    large = tf.differentiable(_rows_of(56)).source(x, mu)
    assert "fori_loop" in tf.differentiable(_rows_of(8)).ir(x, mu)
    assert len(large.splitlines()) == len(small.splitlines())


@pytest.mark.slow
@pytest.mark.parametrize("jit", ["1", "0"])
def test_stacked_rows_give_the_tapes_values_and_gradients(jit, monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", jit)

    def f(x, mu):  # rows from 1 on, a transcendental, a captured constant, axis -1
        rows = [tf.tanh(x[i + 1] * 2.0) * np.arange(3.0) - mu for i in range(6)]
        return tf.reduce_sum(tf.stack(rows, -1) ** 2) + tf.reduce_max(tf.stack(rows))

    def g(x, mu):  # every other row, joined along an existing axis
        return tf.reduce_sum(tf.concat([x[2 * i] * mu for i in range(5)], axis=1) ** 3)

    def h(x, mu):  # two sources, each at its own stride
        return tf.reduce_sum(tf.stack([x[i] * mu[2 * i] for i in range(4)]) ** 2)

    for fn, shapes in [(f, [(13, 3), (5, 3)]), (g, [(12, 3), (5, 3)]), (h, [(4, 3), (8, 3)])]:
        compiled = _agree(fn, shapes, [(d + 3, 3) for d, _ in shapes])
        assert "fori_loop" in compiled.ir(*[np.ones(s) for s in shapes]), fn.__name__


def test_a_training_step_over_rows_updates_as_the_tape_does():
    w = tf.Variable(np.linspace(0.5, 1.5, 3))
    opt = tf.optimizers.SGD(0.1)

    def loss_of(x):
        return tf.reduce_sum(tf.stack([tf.sigmoid(x[i] * w) for i in range(6)]) ** 2)

    @tf.differentiable(wait=True)
    def step(x):
        with tf.GradientTape() as tape:
            loss = loss_of(x)
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        return loss

    x = RNG.normal(size=(6, 3))
    assert "fori_loop" in step.ir(x)
    eager_w = tf.Variable(w.numpy())
    for _ in range(3):
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(tf.stack([tf.sigmoid(x[i] * eager_w) for i in range(6)]) ** 2)
        eager_w.assign_sub(0.1 * tape.gradient(y, eager_w))
        step(x)
    np.testing.assert_allclose(w.numpy(), eager_w.numpy(), rtol=1e-12)


def test_rows_that_are_not_copies_are_joined_as_they_are():
    def different_ops(x):
        return tf.reduce_sum(tf.stack([x[i] * 2.0 if i % 2 else x[i] + 1.0 for i in range(6)]))

    def not_evenly_spaced(x):
        return tf.reduce_sum(tf.stack([x[i] * 2.0 for i in (0, 1, 2, 4, 5)]))

    def too_few(x):
        return tf.reduce_sum(tf.stack([x[i] * 2.0 for i in range(MIN_ROWS - 1)]))

    x = np.ones((6, 2))
    for fn in (different_ops, not_evenly_spaced, too_few):
        assert "fori_loop" not in tf.differentiable(fn).ir(x), fn.__name__
        _agree(fn, [(6, 2)], [(9, 2)])


def test_a_row_index_guards_the_size_once():
    """x[i] for i < n guards x's rows against n once, not n times: the warm entry tests
    the strongest condition only."""
    a = ("size", 0)
    guards = [(i, "<", a, True) for i in range(100)]
    assert guard_conditions(guards) == [(("-", a, 100), ">=")]


def _chain_of(n, term=lambda x, w, i: x[i] * w[i], link=lambda s, t, i: s + t,
              first=lambda x, w: x[0] * w[0]):
    def f(x, w):
        s = first(x, w)
        for i in range(1, n):
            s = link(s, term(x, w, i), i)
        return tf.reduce_sum(s ** 2)
    return f


def _trace_and_generate(fn, n):
    x, w = np.ones((n, 2)), np.ones((max(n, 5), 2))
    start = time.perf_counter()
    compiler.generate_kernel(fn(n), "grad", (x, w), {}, [x, w], None, wrt=0,
                             parallel=False, as_eager=False)
    return time.perf_counter() - start


@pytest.mark.parametrize("fn", [_rows_of, _chain_of], ids=["stacked rows", "add chain"])
def test_tracing_and_generating_grow_no_faster_than_the_program(fn):
    """The compiler-scaling issue's guard, without Numba: trace, passes and codegen at
    n = 100 rows take at most 15 times their time at n = 10 (the best of three, so a busy
    machine's pause is not counted)."""
    _trace_and_generate(fn, 10)  # imports and first-use costs
    small = min(_trace_and_generate(fn, 10) for _ in range(3))
    large = min(_trace_and_generate(fn, 100) for _ in range(3))
    assert large <= 15 * small, (small, large)


def _has_loop(compiled, args):
    """Whether compiled's program has a loop equation (its comments quote the user's lines,
    this one among them)."""
    lines = compiled.ir(*args).splitlines()
    return any("= fori_loop(" in line for line in lines if not line.lstrip().startswith("#"))


def _unrolled_and_folded(fn, args, monkeypatch):
    """fn's compiled value and gradients with add chains folded into loops, and without."""
    folded = tf.differentiable(fn, wrt=(0, 1), wait=True)
    got = folded.value_and_grad(*args)
    monkeypatch.setattr(reroll.Folder, "__call__", lambda *_: None)
    unrolled = tf.differentiable(fn, wrt=(0, 1), wait=True)
    want = unrolled.value_and_grad(*args)
    monkeypatch.undo()
    return folded, got, unrolled, want


def test_an_add_chain_is_one_loop_whatever_its_length():
    args = np.ones((4 * MIN_TERMS + 3, 2)), np.ones((4 * MIN_TERMS + 7, 2))
    sources = [tf.differentiable(_chain_of(n), wrt=(0, 1)).source(*args)
               for n in (MIN_TERMS + 2, 4 * MIN_TERMS)]
    assert len(sources[0].splitlines()) == len(sources[1].splitlines())
    assert _has_loop(tf.differentiable(_chain_of(N), wrt=(0, 1)), args)


N = MIN_TERMS + 4  # a chain that folds: its last 5 terms make the loop longer


def _args():
    return RNG.normal(size=(N + 3, 2)), RNG.normal(size=(2 * N, 2))


def _sum_of_rows(x, w):  # Python's sum: 0 + x[2] + x[3] + ...
    return tf.reduce_sum(sum(x[i] for i in range(2, N + 2)) * w[0])


def _strided_terms(x, w):  # a transcendental, a constant, rows at two strides
    return _chain_of(N, lambda x, w, i: tf.tanh(x[i] * w[2 * i]) * np.arange(2.0))(x, w)


def _link_chain(link, term=lambda x, w, i: x[i] * w[i], first=lambda x, w: x[0] * w[0]):
    return _chain_of(N, term, lambda s, t, i: link(s, t), first)


# Chains written every way a loop over rows writes them: the running sum on the right, by
# subtraction (either side), and terms that broadcast against it.
LINKS = {
    "running_on_the_right": _link_chain(lambda s, t: t + s),
    "subtracted_terms": _link_chain(lambda s, t: s - t),
    "running_subtracted": _link_chain(lambda s, t: t - s),  # alternating signs: rounds as unrolled
    "scalar_terms": _link_chain(lambda s, t: s + t, lambda x, w, i: x[i, 0] * w[i, 1]),
    "running_subtracted_from_scalars": _link_chain(lambda s, t: t - s, lambda x, w, i: tf.sin(x[i, 1])),
    "rows_added_to_a_matrix": _link_chain(lambda s, t: s + t,
                                          lambda x, w, i: x[i] * w[2 * i],
                                          lambda x, w: tf.reshape(w[:2], (2, 2)) * 1.0),
    # The first link broadcasts the scalar it starts from: the loop starts after it.
    "from_a_scalar": _link_chain(lambda s, t: s + t, first=lambda x, w: x[0, 0] * w[0, 0]),
}


@pytest.mark.parametrize("jit", ["0", pytest.param("1", marks=pytest.mark.slow)])
@pytest.mark.parametrize("fn", [_chain_of(N), _sum_of_rows, _strided_terms] + list(LINKS.values()),
                         ids=["chain", "sum", "strided"] + list(LINKS))
def test_a_folded_chain_gives_the_unrolled_sum_bit_for_bit_and_the_tapes_gradient(
        fn, jit, monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    args = _args()
    folded, got, unrolled, want = _unrolled_and_folded(fn, args, monkeypatch)
    assert _has_loop(folded, args) and not _has_loop(unrolled, args)
    assert got[0] == want[0]
    for g, w in zip(got[1], want[1]):
        np.testing.assert_array_equal(g, w)
    value, grads = _eager(fn, args)
    np.testing.assert_allclose(got[0], value, rtol=1e-12)
    for g, w in zip(got[1], grads):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)


def test_adds_that_are_not_a_chain_of_copies_stay_adds(monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "0")

    def recurrence(x, w):
        s = x[0]
        for i in range(1, N):
            s = s + s * x[i] * w[i]
        return tf.reduce_sum(s)

    def different_terms(x, w):
        return _chain_of(N, lambda x, w, i: x[i] * w[i] if i % 2 else x[i] - w[i])(x, w)

    def not_evenly_spaced(x, w):
        return _chain_of(N, lambda x, w, i: x[i * i % N] * w[i])(x, w)

    def adds_and_subtracts(x, w):  # a loop's body is one op: + and - cannot alternate
        return _chain_of(N, lambda x, w, i: x[i] * w[i], lambda s, t, i: s + t if i % 2
                         else s - t)(x, w)

    def sides_alternate(x, w):
        return _chain_of(N, lambda x, w, i: x[i] * w[i], lambda s, t, i: s + t if i % 2
                         else t + s)(x, w)

    def too_few(x, w):
        return _chain_of(MIN_TERMS)(x, w)

    args = _args()
    for fn in (recurrence, different_terms, not_evenly_spaced, adds_and_subtracts,
               sides_alternate, too_few):
        compiled = tf.differentiable(fn, wrt=(0, 1))
        assert not _has_loop(compiled, args), fn.__name__
        value, grads = compiled.value_and_grad(*args)
        want, want_grads = _eager(fn, args)
        np.testing.assert_allclose(value, want, rtol=1e-12, err_msg=fn.__name__)
        for g, w in zip(grads, want_grads):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13, err_msg=fn.__name__)


def test_a_chain_that_becomes_alike_later_is_folded_from_there(monkeypatch):
    """Its first terms differ; the sum before the first of MIN_TERMS copies is the loop's
    start, and the value is still the unrolled chain's."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")

    def late(x, w):
        return _chain_of(N + 3, lambda x, w, i: x[i] - w[i] if i < 3 else x[i] * w[i])(x, w)

    args = _args()
    folded, got, _, want = _unrolled_and_folded(late, args, monkeypatch)
    assert _has_loop(folded, args)
    assert got[0] == want[0]
    for g, w in zip(got[1], want[1]):
        np.testing.assert_array_equal(g, w)


def test_a_chain_whose_sum_is_read_as_it_grows_goes_on_as_adds(monkeypatch):
    """Velocity and position: each partial sum of v is read by x's term, so v's loop is
    not made longer at every add (each longer loop would stay, n loops of up to n rows)."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")

    def motion(a, dt):
        v, x = a[0] * dt[0], a[0] * dt[0]
        for i in range(1, N + 3):
            v = v + a[i] * dt[0]
            x = x + v * dt[0]
        return tf.reduce_sum(x ** 2)

    args = (RNG.normal(size=(N + 3, 2)), RNG.normal(size=(1, 2)))
    folded, got, _, want = _unrolled_and_folded(motion, args, monkeypatch)
    program = folded.ir(*args).split("---- adjoint ----")[0]
    assert program.count("= fori_loop(") == 1
    _assert_gradients_match(got, want)


def test_partial_sums_stacked_after_the_chain_read_its_adds(monkeypatch):
    """A cumulative sum: the partial sums of loops other than the latest are read as adds,
    so one loop stays, not one per partial sum; the values are the unrolled chain's."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")

    def cumulative(x, w):
        s, sums = x[0], []
        for i in range(1, N):
            s = s + x[i] * w[i]
            sums.append(s)
        return tf.reduce_sum(tf.stack(sums) ** 2)

    args = _args()
    folded, got, _, want = _unrolled_and_folded(cumulative, args, monkeypatch)
    assert folded.ir(*args).split("---- adjoint ----")[0].count("= fori_loop(") == 1
    _assert_gradients_match(got, want)


def _assert_gradients_match(got, want):
    """The value bit for bit; the gradients to rounding: where partial sums are read, the
    loop's adjoint adds their contributions in another order than the unrolled chain's."""
    assert got[0] == want[0]
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13 * np.abs(w).max())


@pytest.mark.slow
def test_a_gaussian_mixture_written_with_python_loops_compiles_as_loops():
    """Our own version of GradBench's GMM objective (tests/objectives.py): its rows and
    its components are stacks of copies, so its kernel is the same size at every n, and
    its value and gradient are NumPy's and the eager tape's."""
    names = ("alpha", "mu", "q", "l", "x")
    compiled = tf.differentiable(lambda alpha, mu, q, l, x: gmm(tf, alpha, mu, q, l, x),
                                 wrt=(0, 1, 2, 3), wait=True)
    sources = []
    for n in (12, 40):
        inputs = gmm_inputs(3, 4, n)
        args = [inputs[a] for a in names]
        value, grads = compiled.value_and_grad(*args)
        np.testing.assert_allclose(value, gmm_numpy(**inputs), rtol=1e-12)
        x = tf.constant(inputs["x"])
        want, want_grads = _eager(lambda *p, x=x: gmm(tf, *p, x), args[:4])
        np.testing.assert_allclose(value, want, rtol=1e-12)
        for g, w in zip(grads, want_grads):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
        sources.append(compiled.source(*args))
    # range(n) made n copies, so each n is traced apart, but the kernel is no longer.
    assert len(sources[0].splitlines()) == len(sources[1].splitlines())
    assert "fori_loop" in compiled.ir(*args)


def _gradient_wrt_a_partial_sum(x, link=lambda s, t: s + t):
    with tf.GradientTape() as tape:
        tape.watch(x)
        s = x[0] * 0.0
        for i in range(MIN_TERMS + 8):
            s = link(s, x[i] * x[i])
            if i == MIN_TERMS + 5:
                middle = s
        loss = tf.reduce_sum(s * s) + tf.reduce_sum(middle * 3.0)
    return tape.gradient(loss, middle)


def _gradient_wrt_a_partial_difference(x):
    return _gradient_wrt_a_partial_sum(x, lambda s, t: t - s)


def _gradient_wrt_a_stacked_row(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        rows = [tf.sin(x[i]) for i in range(MIN_ROWS + 2)]
        loss = tf.reduce_sum(tf.stack(rows) ** 2)
    return tape.gradient(loss, rows[2])


@pytest.mark.parametrize("fn", [_gradient_wrt_a_partial_sum, _gradient_wrt_a_partial_difference,
                                _gradient_wrt_a_stacked_row])
def test_a_tape_inside_asking_for_a_value_a_loop_went_around_traces_without_loops(
        fn, monkeypatch):
    """A folded chain's partial sums and a join's rows are computed apart from the loop
    that replaced them (its equal, not its function): a gradient wrt one traces the
    function again without rerolling (it was zeros, or None)."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    x = np.random.default_rng(0).normal(size=(MIN_TERMS + 8, 3))
    want = fn(tf.constant(x)).numpy()
    assert np.abs(want).min() > 0
    np.testing.assert_allclose(tf.differentiable(fn)(x), want, rtol=1e-12)


def _signed_zeros(x):
    return 1.0 / (x * 0.0), 1.0 / (x * -0.0)


def _chain_of_signed_zeros(x):
    s = x[0] * 0.0
    for i in range(MIN_TERMS + 2):  # -0.0 in the first terms, 0.0 after
        s = s + x[i] * (-0.0 if i < MIN_TERMS else 0.0)
    return 1.0 / s


@pytest.mark.parametrize("fn", [_signed_zeros, _chain_of_signed_zeros])
def test_zeros_of_two_signs_are_two_constants(fn, monkeypatch):
    """-0.0 == 0.0, but 1 / -0.0 is -inf: CSE and the fold's matching tell them apart."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    x = np.ones((MIN_TERMS + 2, 3))
    with np.errstate(divide="ignore"):
        want, got = fn(tf.constant(x)), tf.differentiable(fn)(x)
    want, got = (v if isinstance(v, tuple) else (v,) for v in (want, got))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_gradbench_gmm_as_its_tensorflow_tool_writes_it_is_rerolled_and_right(monkeypatch):
    """GradBench's gmm written as its TensorFlow tool writes it (benchmarks/gradbench_gmm.py):
    its rows and factors are loops, and its value and gradients are NumPy's and the tape's."""
    from benchmarks.gradbench_gmm import NAMES, inputs, objective

    monkeypatch.setenv("SRCXFORM_JIT", "0")
    given = inputs(2, 5, 12, seed=3)
    args = [given[a] for a in NAMES]
    compiled = tf.differentiable(lambda *a: objective(tf, *a), wrt=(0, 1, 2, 3))
    assert _has_loop(compiled, args)
    value, grads = compiled.value_and_grad(*args)
    np.testing.assert_allclose(value, -gmm_numpy(**given), rtol=1e-12)
    x = tf.constant(given["x"])
    want, want_grads = _eager(lambda *p: objective(tf, *p, x), args[:4])
    np.testing.assert_allclose(value, want, rtol=1e-12)
    for g, w in zip(grads, want_grads):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@tf.custom_gradient
def _half_gradient(v):
    return v * v, lambda dy: dy * 0.5  # deliberately not d(v * v)/dv


def _custom_chain(x, w):
    s = x[0] * 0.0
    for i in range(MIN_TERMS + 1):
        s = s + _half_gradient(x[i]) * w[i]
    return tf.reduce_sum(s)


def _custom_rows(x, w):
    return tf.reduce_sum(tf.stack([_half_gradient(x[i]) for i in range(MIN_ROWS + 1)])
                         * w[:MIN_ROWS + 1])


@pytest.mark.parametrize("fn", [_custom_chain, _custom_rows], ids=["add chain", "stack"])
def test_a_custom_gradient_is_never_rerolled(fn, monkeypatch):
    # A loop's body would replay v * v's equations and differentiate them: 2v, not the
    # custom 0.5 the tape gives.
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    compiled = _agree(fn, [(MIN_TERMS + 1, 3), (MIN_TERMS + 1, 3)])
    args = (np.ones((MIN_TERMS + 1, 3)), np.ones((MIN_TERMS + 1, 3)))
    np.testing.assert_array_equal(compiled.grad(*args)[0][:MIN_ROWS + 1], 0.5)
    assert not _has_loop(compiled, args)
