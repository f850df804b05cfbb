"""Threads: each thread records its own tapes and traces, and first calls may race.

Focused tests hold one thread at a known point (threading.Event) while another acts, so
that each interleaving SPEC's "Safe in threads" rules out happens every run. The stress
test mixes eager tapes, warm compiled calls, first calls of fresh Differentiables and
Variable assigns in several threads and checks every result against its known value.
Run longer as a script:

    python -m tests.test_threads --results 100000 [--threads 8] [--switch 1e-5]
"""

import argparse
import collections
import os
import random
import sys
import threading
import time
import uuid
import weakref

import numpy as np
import pytest

import srcxform as tf
from srcxform import numba_adapter
from srcxform.jit import backend
from srcxform.numba_adapter import cachefiles
from srcxform.ad.trace import Trace

WAIT = 30  # seconds an Event wait may take before the test fails instead of hanging


def _in_thread(target):
    """Starts target in a thread; join() re-raises what it raised."""
    errors = []

    def run():
        try:
            target()
        except BaseException as err:  # noqa: BLE001 - handed to the joining thread
            errors.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def join():
        thread.join(WAIT)
        assert not thread.is_alive(), "the thread did not finish"
        if errors:
            raise errors[0]

    return join


def _set_and_wait(ready, go):
    ready.set()
    assert go.wait(WAIT)


def _f64(value):
    return tf.constant(np.float64(value))  # exact (a Python float would become float32)


def cube(x):
    return x * x * x


def sum_of_squares(x):
    return tf.reduce_sum(x * x)


def scaled_sum(v, x):
    return tf.reduce_sum(v * x)


def store_double(v, x):
    v.assign(x * 2.0)
    return x


CUBE = tf.differentiable(cube)
SUM_OF_SQUARES = tf.differentiable(sum_of_squares)
SCALED_SUM = tf.differentiable(scaled_sum, wrt=1)
STORE_DOUBLE = tf.differentiable(store_double, wrt=1)


# ----- tapes and traces belong to the thread that opened them -----


def test_another_threads_tape_does_not_record_this_threads_ops():
    x = _f64(3.0)
    opened, done = threading.Event(), threading.Event()
    found = {}

    def hold_tape():
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x * x
            _set_and_wait(opened, done)
            z = y * x
        found["a"] = tape
        found["dz"] = tape.gradient(z, x)

    join = _in_thread(hold_tape)
    assert opened.wait(WAIT)
    with tf.GradientTape() as tape:
        tape.watch(x)
        w = x * x * x * x
    done.set()
    join()
    assert float(tape.gradient(w, x)) == 108.0  # 4 x^3
    assert float(found["dz"]) == 27.0  # 3 x^2
    # x is watched by both tapes, but this thread's ops are not on the other's.
    assert found["a"].gradient(w, x) is None


def test_compiled_call_takes_the_warm_path_while_another_thread_holds_a_tape():
    assert CUBE.grad(2.0) == 12.0  # compiled, with its entry, before the tape opens
    opened, done = threading.Event(), threading.Event()

    def hold_tape():
        with tf.GradientTape() as tape:
            tape.watch(_f64(1.0))
            _set_and_wait(opened, done)

    join = _in_thread(hold_tape)
    assert opened.wait(WAIT)
    try:
        hits = CUBE.cache_info().hits
        result = CUBE.grad(3.0)
        assert CUBE.cache_info().hits == hits + 1  # the entry ran it: not inlined
    finally:
        done.set()
        join()
    assert type(result) is float and result == 27.0


def test_compiled_call_under_this_threads_tape_is_recorded():
    """The warm entry still hands a call under the caller's own tape to the tape."""
    assert CUBE.grad(2.0) == 12.0
    x = _f64(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = CUBE.grad(x)  # 3 x^2, recorded
    assert float(y) == 12.0 and float(tape.gradient(y, x)) == 12.0  # 6 x


def test_assign_while_another_thread_traces_is_applied_here():
    v = tf.Variable(np.float64(1.0))
    tracing, assigned = threading.Event(), threading.Event()

    def double(x):  # never touches v; its events keep it out of the on-disk index
        if not tracing.is_set():
            _set_and_wait(tracing, assigned)
        return x * 2.0

    f = tf.differentiable(double)
    join = _in_thread(lambda: f(np.ones(3)))
    assert tracing.wait(WAIT)
    try:
        v.assign(5.0)
        assert float(v) == 5.0  # read here, not as the other thread's traced input
    finally:
        assigned.set()
        join()
    v.assign(1.0)
    np.testing.assert_array_equal(f(np.arange(3.0)), [0.0, 2.0, 4.0])
    assert float(v) == 1.0  # the kernel does not write v


def test_guards_go_to_the_trace_of_their_own_thread():
    opened, compared, closed = threading.Event(), threading.Event(), threading.Event()
    traces = {}

    def trace_a():
        with Trace("a") as trace:
            traces["a"] = trace
            x = trace.new_input(np.ones(3), "x")
            _set_and_wait(opened, compared)
            assert x.shape[0] == 3
        closed.set()

    join = _in_thread(trace_a)
    assert opened.wait(WAIT)
    with Trace("b") as trace_b:
        y = trace_b.new_input(np.ones(4), "y")
        assert y.shape[0] > 2
        compared.set()
        assert closed.wait(WAIT)  # the other trace closed while this one runs
        assert y.shape[0] != 5
    join()
    assert [g[1:] for g in traces["a"].guards] == [("==", 3, True)]
    assert [g[1:] for g in trace_b.guards] == [(">", 2, True), ("!=", 5, True)]


# ----- warm calls may race -----


@pytest.mark.skipif(numba_adapter.sole_reference_count() is None,
                    reason="output arrays are reused only where reference counts tell")
def test_a_reused_output_array_has_the_shape_this_call_needs():
    """A warm entry refills the array it returned last when nothing else holds it. Here a
    call in another thread replaces that array (with one of a new size) between this
    call's reference count test and its shape test: the pause is put in the entry's
    getrefcount, right after it counts."""
    f = tf.differentiable(sum_of_squares)
    small, large = np.arange(2.0), np.arange(7.0)
    f.grad(small)
    f.grad(large)  # checked here (SRCXFORM_CHECK): the calls below run the entry
    entry = f.grad
    paused, resume = threading.Event(), threading.Event()
    pausing = []  # the thread to pause, once

    def getrefcount(obj):
        count = sys.getrefcount(obj) - 1  # less this function's own reference
        if pausing and threading.current_thread() is pausing[0]:
            pausing.clear()
            _set_and_wait(paused, resume)
        return count

    entry.__globals__["getrefcount"] = getrefcount
    try:
        first = f.grad(small)
        reused = weakref.ref(first)
        del first
        assert f.grad(small) is reused()  # the counts are right: the array is refilled
        found = {}

        def call_large():
            pausing.append(threading.current_thread())
            found["grad"] = f.grad(large)

        join = _in_thread(call_large)
        assert paused.wait(WAIT)  # its reference count test passed: the array is free
        try:
            np.testing.assert_array_equal(f.grad(large), 2 * large)  # a new array
        finally:
            resume.set()
            join()
    finally:
        entry.__globals__["getrefcount"] = sys.getrefcount
    np.testing.assert_array_equal(found["grad"], 2 * large)


# ----- each update of a Variable is atomic -----


def _in_threads(*targets, switch=1e-5):
    """Runs each target in a thread of its own, started together, with the interpreter
    switching threads every `switch` seconds (so that updates interleave); joins them."""
    start = threading.Barrier(len(targets))
    joins = [_in_thread(lambda target=target: (start.wait(WAIT), target())) for target in targets]
    old = sys.getswitchinterval()
    sys.setswitchinterval(switch)
    try:
        for join in joins:
            join()
    finally:
        sys.setswitchinterval(old)


def _repeat(n, update):
    return lambda: [update() for _ in range(n)]


def test_assign_add_and_assign_sub_from_threads_lose_no_update():
    v = tf.Variable(np.float64(0.0))
    _in_threads(*[_repeat(3_000, lambda: v.assign_add(1.0))] * 8)
    assert float(v) == 24_000.0
    _in_threads(*[_repeat(3_000, lambda: v.assign_sub(1.0))] * 8)
    assert float(v) == 0.0


def test_assigns_to_parts_of_a_variable_from_threads_keep_the_other_parts():
    v = tf.Variable(np.zeros(8))

    def count(k):  # only this thread writes v[k]; each write keeps the rest of v
        return _repeat(3_000, lambda: v[k].assign(v[k] + 1.0))

    _in_threads(*[count(k) for k in range(8)])
    np.testing.assert_array_equal(v.numpy(), [3_000.0] * 8)


def test_a_compiled_assign_add_from_threads_adds_once_a_call():
    v = tf.Variable(np.float64(0.0))

    @tf.differentiable
    def count(x):
        v.assign_add(x)
        return x

    count(1.0)  # compiled here, with its warm entry
    v.assign(0.0)
    # The warm entry, the general path (a keyword) and eager updates, all at once.
    _in_threads(*[_repeat(3_000, lambda: count(1.0))] * 5,
                *[_repeat(3_000, lambda: count(x=1.0))] * 2,
                _repeat(3_000, lambda: v.assign_sub(2.0)))
    assert float(v) == 15_000.0


def test_compiled_transfers_between_variable_arguments_from_threads():
    """Each call assigns two Variables, its arguments: calls taking them in either order
    wait for each other rather than each holding one (the locks are taken in one order)."""
    a, b = tf.Variable(np.float64(50_000.0)), tf.Variable(np.float64(0.0))

    @tf.differentiable
    def transfer(source, target, amount):
        source.assign_sub(amount)
        target.assign_add(amount)
        return amount

    transfer(a, b, 0.0)
    _in_threads(*[_repeat(3_000, lambda: transfer(a, b, 2.0))] * 4,
                *[_repeat(3_000, lambda: transfer(b, a, 1.0))] * 4)
    assert (float(a), float(b)) == (38_000.0, 12_000.0)


def test_a_trace_takes_no_variable_lock():
    """Tracing changes no Variable, so takes no lock of one. Here h's trace (holding h's
    lock) assigns v while another thread checks f's first call (SRCXFORM_CHECK), holding
    v's lock from f's compiled run to its eager run, which calls h: were the trace to wait
    for v, each thread would wait for the other."""
    v = tf.Variable(np.float64(0.0))
    tracing, go, checking = threading.Event(), threading.Event(), threading.Event()

    def h(x):
        if not tracing.is_set():
            _set_and_wait(tracing, go)
        v.assign_add(x)
        return x

    compiled_h = tf.differentiable(h)

    def f(x):
        v.assign_add(x)
        if isinstance(x, tf.Tensor):  # the check's eager run, holding v's lock
            checking.set()
        return compiled_h(x)

    join_h = _in_thread(lambda: compiled_h(1.0))
    assert tracing.wait(WAIT)
    join_f = _in_thread(lambda: tf.differentiable(f, check=True)(1.0))
    try:
        assert checking.wait(WAIT)
    finally:
        go.set()
        join_h()
        join_f()
    assert float(v) == 3.0  # h's first call once, f's (which calls h) once


def _sgd_steps(optimizer, w, steps, compiled):
    """`steps` updates of w by optimizer with the gradient 1 (compiled: in one kernel)."""
    def step(g):
        optimizer.apply_gradients([(g, w)])
        return g

    run = tf.differentiable(step) if compiled else step
    one = np.ones(w.shape)
    return lambda: [run(one) for _ in range(steps)]


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("momentum", [0.0, 0.5])
def test_optimizer_updates_of_a_shared_variable_from_threads(compiled, momentum):
    """Each update (the Variable's read, its momentum slot's update, its assign) is
    atomic, so the threads' updates end where as many in one thread do, bit for bit."""
    def sgd():
        return tf.optimizers.SGD(learning_rate=0.5, momentum=momentum)

    optimizer, w = sgd(), tf.Variable(np.zeros(3))
    _sgd_steps(optimizer, w, 1, compiled)()  # compiled here
    _in_threads(*[_sgd_steps(optimizer, w, 200, compiled)] * 8)
    alone, w_alone = sgd(), tf.Variable(np.zeros(3))
    _sgd_steps(alone, w_alone, 1_601, compiled)()
    np.testing.assert_array_equal(w.numpy(), w_alone.numpy())
    assert int(optimizer.iterations) == 1_601
    if momentum == 0.0:
        np.testing.assert_array_equal(w.numpy(), [-800.5] * 3)


# ----- first calls may race -----


def test_first_calls_racing_compile_once():
    fresh = tf.differentiable(cube)
    barrier = threading.Barrier(8)
    results = []

    def first_call():
        barrier.wait(WAIT)
        results.append(fresh.grad(2.0))

    joins = [_in_thread(first_call) for _ in range(8)]
    for join in joins:
        join()
    assert results == [12.0] * 8
    assert fresh.cache_info().misses == 1  # one thread compiled; the others waited for it


def test_a_generated_module_is_visible_only_once_it_has_run(tmp_path, monkeypatch):
    """A thread loading a module another thread is running waits for it to finish."""
    monkeypatch.setenv("SRCXFORM_CACHE_DIR", str(tmp_path))
    probe = type(sys)("srcxform_thread_probe")
    probe.running, probe.finish = threading.Event(), threading.Event()
    sys.modules[probe.__name__] = probe
    source = (f"# {uuid.uuid4()}\nimport srcxform_thread_probe as probe\n"
              "probe.running.set()\nassert probe.finish.wait(30)\n\n"
              "def answer():\n    return 42\n")
    try:
        first = {}
        join_first = _in_thread(lambda: first.update(fn=backend.load(source, "answer",
                                                                      jit=False)))
        assert probe.running.wait(WAIT)
        second = {}
        join_second = _in_thread(lambda: second.update(fn=backend.load(source, "answer",
                                                                        jit=False)))
        time.sleep(0.2)  # the second load has found the module running, or waits for it
        probe.finish.set()
        join_first()
        join_second()
    finally:
        probe.finish.set()
        del sys.modules[probe.__name__]
    assert first["fn"]() == second["fn"]() == 42


def test_threads_writing_one_file_at_once(tmp_path, monkeypatch):
    """Both writers have written their temporary file before either renames it."""
    both_written = threading.Barrier(2)
    replace = os.replace

    def replace_after_both(src, dst):
        both_written.wait(WAIT)
        replace(src, dst)

    monkeypatch.setattr(backend.os, "replace", replace_after_both)
    path = str(tmp_path / "entry.pkl")
    joins = [_in_thread(lambda data=data: cachefiles.write_atomic(path, data))
             for data in (b"one", b"two")]
    for join in joins:
        join()
    with open(path, "rb") as f:
        assert f.read() in (b"one", b"two")
    assert os.listdir(tmp_path) == ["entry.pkl"]


# ----- stress -----


class Checker:
    """Counts checked results by kind, and the ones that were wrong or raised."""

    def __init__(self, target, seconds):
        self.target, self.deadline = target, time.monotonic() + seconds
        self.counts, self.errors = collections.Counter(), []
        self.lock = threading.Lock()

    def running(self):
        return sum(self.counts.values()) < self.target and time.monotonic() < self.deadline \
            and len(self.errors) < 20

    def check(self, kind, got, expected):
        ok = got is not None and np.allclose(np.asarray(got, np.float64), expected,
                                             rtol=1e-12, atol=0)
        with self.lock:
            self.counts[kind] += 1
            if not ok:
                self.errors.append(f"{kind}: got {got!r}, expected {expected!r}")

    def failed(self, kind, err):
        with self.lock:
            self.counts[kind] += 1
            self.errors.append(f"{kind}: {type(err).__name__}: {err}")


def _eager_tape(rng, check):
    a = rng.uniform(-2, 2)
    x = _f64(a)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x * x
    check("eager tape", tape.gradient(y, x), 3 * a * a)


def _variable_tape(rng, check):
    a = rng.uniform(-2, 2)
    w = tf.Variable(np.float64(a))
    with tf.GradientTape() as tape:
        y = w * w
    check("variable tape", tape.gradient(y, w), 2 * a)


def _compiled_under_tape(rng, check):
    a = rng.uniform(-2, 2)
    x = _f64(a)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = CUBE(x)  # the tape records the function's ops
    check("compiled under tape", tape.gradient(y, x), 3 * a * a)


def _warm_scalar(rng, check):
    a = rng.uniform(-2, 2)
    got = CUBE.grad(a)
    check("warm scalar", got if type(got) is float else None, 3 * a * a)


def _warm_array(rng, check):
    x = rng.uniform(-2, 2, rng.integers(2, 9))
    value, grad = SUM_OF_SQUARES.value_and_grad(x)
    check("warm array", [value, *grad], [np.sum(x * x), *(2 * x)])


def _warm_variable(rng, check, v):
    a = rng.uniform(-2, 2)
    v.assign(a)
    x = rng.uniform(-2, 2, 3)
    check("warm variable read", SCALED_SUM.grad(v, x), np.full(3, a))
    b = float(x[0])
    STORE_DOUBLE(v, b)
    check("warm variable write", v.numpy(), 2 * b)


def _first_call(rng, check):
    a = rng.uniform(-2, 2)
    check("first call", tf.differentiable(cube).grad(a), 3 * a * a)


def _assign(rng, check, v):
    a = rng.uniform(-2, 2)
    v.assign(a)
    check("assign", v.numpy(), a)


ACTIONS = [_eager_tape, _variable_tape, _compiled_under_tape, _warm_scalar, _warm_array,
           _warm_variable, _first_call, _assign]
WEIGHTS = [4, 2, 1, 6, 4, 2, 1, 4]


def stress(threads=8, results=20_000, seconds=20.0, switch=None, seed=0):
    """Runs the actions in `threads` threads until `results` results were checked (or
    `seconds` passed); returns the Checker."""
    for warm in (lambda: CUBE.grad(1.0), lambda: SUM_OF_SQUARES.value_and_grad(np.ones(3)),
                 lambda: SCALED_SUM.grad(tf.Variable(np.float64(1.0)), np.ones(3)),
                 lambda: STORE_DOUBLE(tf.Variable(np.float64(1.0)), 1.0)):
        warm()  # compiled here: the threads race on first calls of fresh functions only
    checker = Checker(results, seconds)
    start = threading.Barrier(threads)

    def worker(n):
        rng = np.random.default_rng([seed, n])
        pick = random.Random(n)
        v = tf.Variable(np.float64(0.0))  # each thread assigns its own
        start.wait(WAIT)
        while checker.running():
            action = pick.choices(ACTIONS, WEIGHTS)[0]
            try:
                if action in (_warm_variable, _assign):
                    action(rng, checker.check, v)
                else:
                    action(rng, checker.check)
            except Exception as err:  # noqa: BLE001 - counted and reported
                checker.failed(action.__name__, err)

    old = sys.getswitchinterval()
    if switch:
        sys.setswitchinterval(switch)
    try:
        workers = [threading.Thread(target=worker, args=(n,), daemon=True)
                   for n in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        sys.setswitchinterval(old)
    return checker


def test_stress_mixed_actions_in_threads():
    checker = stress(threads=8, results=6_000, seconds=20.0, switch=1e-5)
    assert not checker.errors, checker.errors[:5]
    assert sum(checker.counts.values()) >= 1_000, checker.counts
    assert set(checker.counts) >= {"eager tape", "warm scalar", "first call", "assign"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=3600.0)
    parser.add_argument("--switch", type=float, default=None,
                        help="sys.setswitchinterval while running (e.g. 1e-5)")
    args = parser.parse_args()
    began = time.monotonic()
    checker = stress(args.threads, args.results, args.seconds, args.switch)
    total = sum(checker.counts.values())
    print(f"{total} results checked in {time.monotonic() - began:.1f} s, "
          f"{len(checker.errors)} errors")
    for kind, n in sorted(checker.counts.items()):
        print(f"  {kind}: {n}")
    for error in checker.errors[:20]:
        print("  error:", error)
    return 1 if checker.errors or total < args.results else 0


if __name__ == "__main__":
    sys.exit(main())
