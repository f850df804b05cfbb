"""One value read by several loop nests (issue 26): every form, compiled and as Python, at
several sizes in sequence through one Differentiable, gives the eager tape's answer.

The issue's reproducers first: a value both stored and recomputed (v = x * x) was read
stale, as its producer loop's last element, by a reduction in a loop nest of its own
beside cumsum, sort, reduce_prod or a transpose, and by a trip count computed from it.
Then slices of the nests fuzzer (tests/fuzz_nests.py): a few programs through every path
(Numba compiles each form's kernel: seconds each), and more through the generated code
run as Python only.
"""

import numpy as np
import pytest
from corpus import eager_value_and_grad
from fuzz import VALUE_TOL, Outcome, compare
from fuzz_nests import PATHS, NumpyShim, check_reference, data, program_for, run, run_program

import srcxform as tf

pytestmark = pytest.mark.slow  # random programs at several sizes: minutes on two cores

# Through every path: Numba compiles three kernels or more a program (5-20 s of CPU
# uncached). This seed's three draw both loop forms, det, sort and cumsum, and no sort of
# a matrix (whose kernel is traced again at each size: seconds more).
FUZZ_SEED, FUZZ_PROGRAMS = 20261226, 3
PYTHON_SEED, PYTHON_PROGRAMS = 20261203, 40  # as Python only: a third of a second each
ISSUE_X = np.array([0.9, -0.5, 1.2, 0.3, 1.1, -0.2])


# ----- the reproducers -----


def stale_max(x):
    v = x * x
    return tf.reduce_max(v) + tf.reduce_sum(tf.cumsum(tf.tanh(x)) * v)


def stale_sum_beside_a_prod(x):
    v = x * x
    return tf.reduce_sum(v) + tf.reduce_prod(tf.tanh(x)) + tf.reduce_sum(tf.cumsum(v))


def stale_max_beside_a_sort(x):
    v = x * x
    w = tf.tanh(x)
    return tf.reduce_max(v) + tf.reduce_sum(tf.sort(v, axis=0)) + tf.reduce_sum(tf.transpose(w))


def stale_trip_count(x):
    v = x * x
    n = tf.cast(tf.reduce_max(v) * 3.0, tf.int64)
    c = tf.fori_loop(0, n, lambda i, c: 0.5 * (c + tf.tanh(c * v)), tf.tanh(x))
    return tf.reduce_sum(tf.cumsum(tf.tanh(x)) * v) + tf.reduce_sum(c)


def stale_trip_count_of_a_for(x):
    v = x * x
    c = tf.tanh(x)
    for i in range(tf.cast(tf.reduce_max(v) * 3.0, tf.int64)):  # autograph: a fori_loop
        c = 0.5 * (c + tf.tanh(c * v))
    return tf.reduce_sum(tf.cumsum(tf.tanh(x)) * v) + tf.reduce_sum(c)


# The sizes in order. At n = 3 the last element of v is its largest, so a stale read
# gives the right trip count by luck; at 5 and 4 it does not (SRCXFORM_CHECK=1 checks a
# kernel's first call only).
REPRODUCERS = {
    "stale_max": (stale_max, [ISSUE_X, data(4, False), data(7, False)]),
    "stale_sum_beside_a_prod": (stale_sum_beside_a_prod,
                                [ISSUE_X, data(3, False), data(5, False)]),
    "stale_max_beside_a_sort": (stale_max_beside_a_sort,
                                [data(3, True), data(5, True), data(2, True)]),
    "stale_trip_count": (stale_trip_count, [data(n, False) for n in (3, 5, 4)]),
    "stale_trip_count_of_a_for": (stale_trip_count_of_a_for,
                                  [data(n, False) for n in (3, 5, 4)]),
}


def test_eager_gives_the_values_numpy_does():
    """The reference: the issue's eager values, which NumPy's agree with."""
    v = ISSUE_X * ISSUE_X
    expected = {
        stale_max: np.max(v) + np.sum(np.cumsum(np.tanh(ISSUE_X)) * v),  # 6.4910...
        stale_sum_beside_a_prod: np.sum(v) + np.prod(np.tanh(ISSUE_X)) + np.sum(np.cumsum(v)),
    }
    for fn, value in expected.items():
        np.testing.assert_allclose(float(fn(tf.constant(ISSUE_X))), value, rtol=1e-13)
    assert round(float(expected[stale_max]), 4) == 6.4910
    assert round(float(expected[stale_sum_beside_a_prod]), 4) == 18.4527


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", REPRODUCERS)
def test_every_form_reads_the_value_fresh_at_every_size(name, path, monkeypatch):
    fn, xs = REPRODUCERS[name]
    monkeypatch.setenv("SRCXFORM_JIT", "1" if path == "compiled" else "0")
    f = tf.differentiable(fn, wait=True)  # one Differentiable: its kernels meet every size
    for x in xs:
        value, grad = eager_value_and_grad(fn, (x,), 0)
        both = f.value_and_grad(x)
        for form, got, expected in [("f(x)", f(x), value), ("f.grad", f.grad(x), grad),
                                    ("f.value_and_grad value", both[0], value),
                                    ("f.value_and_grad gradient", both[1], grad)]:
            np.testing.assert_allclose(np.asarray(got), expected, **VALUE_TOL,
                                       err_msg=f"{path} {form} at x of shape {x.shape}")


# ----- the fuzzer's slices -----


def test_random_nest_programs_agree_in_every_form_at_every_size():
    report = run(seed=FUZZ_SEED, count=FUZZ_PROGRAMS, minimizing=False)
    assert report.programs == FUZZ_PROGRAMS
    assert not report.mismatches, report.text()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # reduce_prod's gradient: 0 * inf, unused
def test_more_random_nest_programs_agree_as_python():
    """The scheduler's bugs show with or without Numba: many more programs, run as Python."""
    failures = []
    for k in range(PYTHON_PROGRAMS):
        program = program_for(PYTHON_SEED, k)
        found = run_program(program, f"python {PYTHON_SEED}:{k}", paths=("interpreted",))
        failures += [f"{program.describe()}\n  {m}" for m in found]
    assert not failures, "\n\n".join(failures)


# ----- the fuzzer's own parts -----


def _trip_counts(program, n):
    env = {"tf": NumpyShim, "np": np, "x": data(n, program.matrix)}
    for statement in program.statements:
        exec(statement.text, env)  # noqa: S102 -- the generator's text
    return tuple(int(env[s.name]) for s in program.statements if s.name.startswith("k"))


def test_the_generator_draws_the_issues_family():
    """Every op the issue names, loops of both forms, and trip counts that change with
    the size, over 200 programs, each at three sizes or more."""
    programs = [program_for(0, k) for k in range(200)]
    text = "\n".join(p.source() for p in programs)
    for op in ["tf.cumsum(", "tf.sort(", "tf.reduce_prod(", "tf.transpose(", "tf.linalg.det(",
               "tf.matmul(", "tf.math.cumprod(", "tf.reduce_max(", "tf.reduce_min(",
               "tf.reduce_mean(", ", axis=", "tf.fori_loop(", "for i in range(", "tf.nn.relu(",
               "tf.where(", "tf.clip_by_value(", "tf.maximum(", "tf.minimum(", "tf.sigmoid(",
               "tf.exp(", "tf.tanh("]:
        assert op in text, op
    assert all(len(set(p.sizes)) >= 3 for p in programs)
    assert sum(p.matrix for p in programs) > 50 and sum(not p.matrix for p in programs) > 50
    changing = [p for p in programs if len({_trip_counts(p, n) for n in p.sizes}) > 1]
    assert len(changing) >= 20


def test_a_gradient_only_form_is_compared_by_its_gradient():
    eager = Outcome(2.0, [np.array([1.0, 2.0])])
    assert compare("f.grad", Outcome(None, [np.array([1.0, 2.0])]), eager) is None
    assert compare("f.grad", Outcome(None, [np.array([1.0, 2.5])]), eager) == "f.grad gradient"
    assert compare("f(x)", Outcome(2.5), eager) == "f(x) value"


def test_the_reference_catches_a_wrong_eager_value_or_gradient():
    program = program_for(0, 0)
    args = program.args(program.sizes[0])
    value, grad = eager_value_and_grad(stale_max, args, 0)  # any function of x's shape
    right = Outcome(float(value), [np.asarray(grad)])
    assert check_reference(program.with_terms(["tf.reduce_max(x * x)"]), args,
                           right) == "eager value != NumPy"
    program = program.with_terms(["tf.reduce_max(x * x)",
                                  "tf.reduce_sum(tf.cumsum(tf.tanh(x)) * (x * x))"])
    assert check_reference(program, args, right) is None
    wrong = Outcome(right.value, [right.grads[0] * 1.01])
    assert check_reference(program, args, wrong) == "eager gradient != central differences"
