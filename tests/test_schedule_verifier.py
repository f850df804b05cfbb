"""The verifier of generated kernels (codegen/verify.py): a local read where no earlier
statement certainly defined it is a stale or undefined value, and raises with its line.
It runs on every kernel srcxform generates, so the whole suite exercises its other side:
no kernel srcxform makes is refused."""

import textwrap

import pytest

from srcxform.codegen.verify import ScheduleError, check


def _check(source):
    check(textwrap.dedent(source))


def test_a_temporary_of_one_loop_nest_read_in_the_next_is_refused():
    # The loop scheduler's bug as it was generated: the second nest's v_i is the last
    # element the first nest left behind.
    with pytest.raises(ScheduleError, match=r"`v_i`.* line 7: t0 = np.maximum\(t0, v_i\)"):
        _check("""\
            def f(x, n0):
                t0 = -1.0
                for i0 in range(n0):
                    v_i = x[i0] * x[i0]
                    x[i0] = v_i
                for i0 in range(n0):
                    t0 = np.maximum(t0, v_i)
                return t0
            """)


def test_a_read_before_its_definition_in_the_same_body_is_refused():
    # In the body's order the first read sees the previous iteration's value.
    with pytest.raises(ScheduleError, match="`s_i`"):
        _check("""\
            def f(x, n0):
                t = 0.0
                for i0 in range(n0):
                    t += s_i
                    s_i = x[i0]
                return t
            """)


def test_a_value_one_branch_alone_defines_is_refused_after_the_if():
    with pytest.raises(ScheduleError, match="`a`"):
        _check("""\
            def f(p):
                if p:
                    a = 1.0
                else:
                    b = 2.0
                return a
            """)


def test_what_kernels_do_is_accepted():
    _check("""\
        def f(x, n0, p):
            acc = 0.0                      # an accumulator defined before its loop
            for i0 in range(n0):
                t_i = x[i0] * 2.0
                acc += t_i
            if p:                          # both branches define it
                c = acc
            else:
                c = -acc
            trips = 0
            while True:                    # a while loop's value at its break
                k = trips * 2
                if not k < n0:
                    break
                trips += 1
            return c + k + trips
        """)


def test_a_while_true_defines_only_what_every_break_has():
    with pytest.raises(ScheduleError, match="`late`"):
        _check("""\
            def f(n0):
                while True:
                    if n0 > 3:
                        break
                    late = 1
                    break
                return late
            """)
