"""debug_nans in threads: what one thread's reverse walk holds (nan_checks.Holding) and
what explain's probe turns off are that thread's only.

Each test holds one thread inside a custom_gradient's gradient function (threading.Event)
while another acts, so that the interleaving happens every run. Eager only: no compile.
"""

import threading

import numpy as np
import pytest
from helpers import tape_gradient

import srcxform as tf

WAIT = 30  # seconds an Event wait may take before the test fails instead of hanging


def _in_thread(target):
    """Starts target in a thread; the returned join() re-raises what it raised and gives
    what it returned."""
    outcome = {}

    def run():
        try:
            outcome["value"] = target()
        except BaseException as err:  # noqa: BLE001 - handed to the joining thread
            outcome["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def join():
        thread.join(WAIT)
        assert not thread.is_alive(), "the thread did not finish"
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    return join


def _held_at_first_gradient_call(make_nan=False):
    """(custom_gradient f, entered, release): f's gradient function, called first, sets
    `entered` and waits for `release`; with make_nan it makes a NaN (0 / 0) before the
    wait, held until its cotangent is judged after it."""
    entered, release = threading.Event(), threading.Event()

    @tf.custom_gradient
    def f(x):
        def grad(upstream):
            scale = tf.constant(0.0) / tf.constant(0.0) if make_nan else 3.0
            entered.set()
            assert release.wait(WAIT)
            return upstream * scale
        return x * 3.0, grad

    return f, entered, release


def _explain_of(f):
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.explain(y, x)


def _overflowing_sum_gradient():
    """d(x * c + x * c)/dx at a tiny x: the forward is finite, the gradient's sum c + c of
    the two cotangents (backprop's accumulation, outside any VJP) makes an inf."""
    x = tf.constant(1e-300, dtype="float64")
    c = tf.constant(1e308, dtype="float64")
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * c + x * c
    return tape.gradient(y, x)


def test_a_gradient_raises_at_once_while_another_thread_holds_a_vjp():
    f, entered, release = _held_at_first_gradient_call()
    with tf.debug_nans(True):
        join = _in_thread(lambda: tape_gradient(f, 2.0))
        try:
            assert entered.wait(WAIT)
            with pytest.raises(FloatingPointError, match="add made an inf in the gradient "
                               "of multiply"):
                _overflowing_sum_gradient()
            with pytest.raises(FloatingPointError, match="divide made a NaN"):
                tf.constant(0.0) / tf.constant(0.0)
        finally:
            release.set()
        assert join().numpy() == 3.0


def test_an_error_held_in_one_thread_outlives_another_threads_reverse_walk():
    f, entered, release = _held_at_first_gradient_call(make_nan=True)
    with tf.debug_nans(True):
        join = _in_thread(lambda: tape_gradient(f, 2.0))
        try:
            assert entered.wait(WAIT)
            # A whole reverse walk here, its VJPs held and judged, while the other's runs.
            assert tape_gradient(lambda x: x * x, 3.0).numpy() == 6.0
        finally:
            release.set()
        with pytest.raises(FloatingPointError, match="made a NaN in the gradient "
                           "of custom_gradient"):
            join()


def test_explain_in_one_thread_leaves_another_threads_checks_on():
    f, entered, release = _held_at_first_gradient_call()
    with tf.debug_nans(True):
        join = _in_thread(lambda: _explain_of(f))  # its probe asks f's gradient function
        try:
            assert entered.wait(WAIT)
            with pytest.raises(FloatingPointError, match="divide made a NaN"):
                tf.constant(0.0) / tf.constant(0.0)
        finally:
            release.set()
        assert join().kind == "connected"


def test_debug_nans_turned_on_during_another_threads_explain_stays_on():
    f, entered, release = _held_at_first_gradient_call()
    with tf.debug_nans(False):
        join = _in_thread(lambda: _explain_of(f))
        try:
            assert entered.wait(WAIT)
            with tf.debug_nans(True):
                release.set()
                assert join().kind == "connected"  # its probe ended: checks still on here
                with pytest.raises(FloatingPointError, match="divide made a NaN"):
                    tf.constant(0.0) / tf.constant(0.0)
        finally:
            release.set()
        assert np.isnan((tf.constant(0.0) / tf.constant(0.0)).numpy())  # off again
