"""A compiled function reused at a new size gives the eager answer, for indexing.

One bounded run of the random-program fuzzer (tests/fuzz.py, which runs its programs in
a subprocess: a kernel that indexes out of bounds may kill its process), then one test
per bug the fuzzer's kind of program found: each calls ONE Differentiable at several
sizes in sequence, as a user with a changing batch size does. Where eager raises, the
compiled function must raise the same exception type.
"""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from corpus import eager_value_and_grad
from fuzz import (
    ROOT, NumpyTF, _attempt, _eager, _function, check_reference, program_for, run,
)

import srcxform as tf

pytestmark = pytest.mark.slow  # random programs at several sizes: minutes on two cores

FUZZ_SEED, FUZZ_PROGRAMS = 20240611, 30


def test_random_indexing_programs_agree_at_every_size():
    report = run(seed=FUZZ_SEED, count=FUZZ_PROGRAMS, minimizing=False)
    assert report.programs == FUZZ_PROGRAMS
    assert not report.mismatches, report.text()


# ----- the reproducers, one Differentiable called in sequence -----


def _agrees_with_eager(f, fn, *calls):
    """f (a Differentiable of fn) at each call's args, in order: eager's value and
    gradient, or eager's exception type."""
    for args in calls:
        try:
            expected = eager_value_and_grad(fn, args, 0)
        except (IndexError, ValueError) as err:
            with pytest.raises(type(err)):
                f.value_and_grad(*args)
            continue
        value, grad = f.value_and_grad(*args)
        np.testing.assert_allclose(value, expected[0], rtol=1e-12, err_msg=f"at {args}")
        np.testing.assert_allclose(grad, expected[1], rtol=1e-12, err_msg=f"at {args}")


def test_a_negative_index_counts_from_the_end_of_the_new_size():
    last = tf.differentiable(lambda x: x[-1] * x[-1])
    last.value_and_grad(np.arange(1.0, 4.0))  # traced at 3 elements, run at 5 below
    value, grad = last.value_and_grad(np.arange(1.0, 6.0))
    assert value == 25.0
    np.testing.assert_array_equal(grad, [0, 0, 0, 0, 10])


def test_a_stepped_slice_takes_every_other_element_of_the_new_size():
    odd = tf.differentiable(lambda x: tf.reduce_sum(x[1::2] ** 2))
    odd.value_and_grad(np.arange(1.0, 4.0))
    value, grad = odd.value_and_grad(np.arange(1.0, 6.0))
    assert value == 20.0
    np.testing.assert_array_equal(grad, [0, 4, 0, 8, 0])


def test_chained_reversed_slices_at_a_new_size():
    revs = tf.differentiable(lambda x: tf.reduce_sum(x[1:][::-1][1:] * x[1:][::-1][:-1]))
    assert revs(np.arange(4.0)) == 8.0
    assert revs(np.arange(6.0)) == 40.0


def test_a_length_one_slice_broadcasts_against_a_longer_one():
    fn = lambda x: tf.reduce_sum(x[2:] * x[-1:])
    value, grad = tf.differentiable(fn).value_and_grad(np.arange(1.0, 6.0))
    assert value == 60.0
    np.testing.assert_array_equal(grad, [0, 0, 5, 5, 17])
    _agrees_with_eager(tf.differentiable(fn), fn, (np.arange(1.0, 5.0),),
                       (np.arange(1.0, 6.0),), (np.arange(1.0, 3.0),))


def test_a_slice_cut_short_by_the_end_broadcasts_as_eager_does():
    fn = lambda y: tf.reduce_sum(y[:2] * y[1:3])
    y = np.array([1.0, 2.0])
    assert float(fn(tf.constant(y))) == 6.0  # y[1:3] is [2.]: it broadcasts
    _agrees_with_eager(tf.differentiable(fn), fn, (y,))


@pytest.mark.parametrize("fn, sizes", [
    (lambda x: tf.reduce_sum(x[4:] * x[1:]), (5, 6, 2, 7)),
    (lambda x: tf.reduce_sum(x[-1:] * x), (3, 5)),
    (lambda x: tf.reduce_sum(tf.sin(x[-1:] + x)), (3, 5)),
    (lambda x: tf.reduce_sum(x[::2] ** 2), (4, 7)),
    (lambda x: tf.reduce_sum(x[::-1] * tf.sin(x)), (4, 7)),
    (lambda x: tf.reduce_sum(x[::-2] ** 2), (4, 7)),
], ids=["x[4:]*x[1:]", "x[-1:]*x", "x[-1:]+x", "x[::2]", "x[::-1]", "x[::-2]"])
def test_vector_indexing_at_new_sizes(fn, sizes):
    calls = [(np.sin(np.arange(n) * 1.7 + 0.3),) for n in sizes]
    _agrees_with_eager(tf.differentiable(fn), fn, *calls)


@pytest.mark.parametrize("fn, shapes", [
    (lambda a: tf.reduce_sum(a[1:] * a[-1:]), ((2, 3), (4, 3))),
    (lambda a: tf.reduce_sum(tf.sin(a[:, -1])), ((2, 3), (3, 5))),
], ids=["a[1:]*a[-1:]", "a[:, -1]"])
def test_matrix_indexing_at_new_sizes(fn, shapes):
    calls = [(np.sin(np.arange(np.prod(s)) * 1.7 + 0.3).reshape(s),) for s in shapes]
    _agrees_with_eager(tf.differentiable(fn), fn, *calls)


# ----- gathers out of bounds: each in a process of its own (today a kernel may crash) ----


def _run_isolated(code):
    """What `code` prints, run in a fresh interpreter; fails on a crash."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"exit status {done.returncode}\n{done.stderr[-2000:]}"
    return done.stdout.split()


_RAISES = """
    def raises(call):
        try:
            call()
        except IndexError:
            return "IndexError"
        return "no-error"
"""


def test_a_constant_gather_traced_on_a_large_array_raises_on_a_small_one():
    printed = _run_isolated(_RAISES + """
    import numpy as np
    import srcxform as tf
    f = tf.differentiable(lambda x: tf.reduce_sum(tf.gather(x, [1_999_999]) ** 2))
    print(f.value_and_grad(np.ones(2_000_000))[0])
    print(raises(lambda: f(np.ones(2))), raises(lambda: f.value_and_grad(np.ones(2))))
    """)
    assert printed == ["1.0", "IndexError", "IndexError"]


def test_gather_indices_out_of_bounds_at_run_time_raise():
    printed = _run_isolated(_RAISES + """
    import numpy as np
    import srcxform as tf
    f = tf.differentiable(lambda x, idx: tf.reduce_sum(tf.gather(x, idx) ** 2))
    x = np.arange(1.0, 4.0)
    print(f.value_and_grad(x, np.array([0, 2]))[0])
    for bad in ([0, 5], [10**8]):
        idx = np.array(bad)
        print(raises(lambda: f(x, idx)), raises(lambda: f.value_and_grad(x, idx)))
    """)
    assert printed == ["10.0", "IndexError", "IndexError", "IndexError", "IndexError"]


@pytest.mark.parametrize("name", ["i", "g", "out", "indices"])
def test_an_argument_may_share_a_name_with_the_generated_code(name):
    """The generated gather adjoint loops with `i` over `indices` into `out`: a user's
    argument of one of those names must not be captured by them."""
    namespace = {"tf": tf}
    source = f"def f(x, {name}):\n    return tf.reduce_sum(tf.gather(x, {name}) ** 2)\n"
    exec(source, namespace)  # noqa: S102 -- the test's own text
    fn = namespace["f"]
    x, indices = np.arange(1.0, 5.0), np.array([3, 0, 3])
    expected = eager_value_and_grad(fn, (x, indices), 0)
    value, grad = tf.differentiable(fn).value_and_grad(x, indices)
    assert value == expected[0] == 33.0
    np.testing.assert_array_equal(grad, expected[1])


def test_a_gather_out_of_bounds_raises_before_a_later_shape_error():
    """As eager does: the first bad line raises. A new idx length retraces; the trace
    must not find the multiply's shape error before the gather's bad index."""
    fn = lambda x, idx: tf.reduce_sum(tf.gather(x, [0, 2]) * tf.gather(x, idx))
    _agrees_with_eager(tf.differentiable(fn), fn, (np.arange(1.0, 4.0), np.array([1, 2])),
                       (np.arange(1.0, 3.0), np.array([0, 1, 1])))


def test_an_argument_gather_index_out_of_range_raises_before_a_later_shape_error():
    """The fuzzer's minimized program: the index argument is out of range at this call,
    and a later line's shapes do not match. Eager raises IndexError at the gather; so
    must the trace, which knows the call's index values while it runs."""

    def fn(y, idx):
        rows = tf.gather(tf.concat([y, y], axis=0) ** 2, idx)
        return tf.reduce_sum((rows - y * y) ** 2)

    _agrees_with_eager(tf.differentiable(fn), fn, (np.ones(3), np.array([0, 1, 5])),
                       (np.ones(13), np.array([7, 16, 1, 1, -27])))


def test_the_reference_checks_gather_indices_when_the_result_is_empty():
    # np.take skips its bounds check when the result has no elements; eager does not.
    x = np.zeros((0, 3))
    with pytest.raises(IndexError):
        NumpyTF.gather(x, [5], axis=1)
    with pytest.raises(IndexError, match="index 5 is out of bounds for a dimension of size 3"):
        tf.gather(x, [5], axis=1)
    assert NumpyTF.gather(x, [-3], axis=1).shape == tf.gather(x, [-3], axis=1).shape == (0, 1)


def test_the_reference_takes_either_side_of_a_kink_and_nothing_else():
    # Seed 81's program 172: two elements of a reduce_max tie to the last bit (the data are
    # sines), so central differences straddle the kink; eager's gradient is one side's.
    program = program_for(81, 172)
    args = program.args(program.calls[1])
    eager = _attempt(_eager, _function(program, "<kink>"), program, args)
    assert check_reference(program, args, eager) is None
    eager.grads = [g * 1.01 for g in eager.grads]
    assert check_reference(program, args, eager) == "eager gradient != central differences"
