"""A compile that takes longer than SRCXFORM_SLOW_COMPILE seconds says so once, naming the
kernel and its size (srcxform/jit/slow_compile.py)."""

import linecache
import time
import warnings

import numpy as np
import pytest

import srcxform as tf
from srcxform.jit import slow_compile


def test_a_long_blocking_compile_warns_once_with_the_kernels_size(monkeypatch, tmp_path):
    monkeypatch.setenv("SRCXFORM_CACHE_DIR", str(tmp_path))  # compiled, not loaded
    monkeypatch.setenv("SRCXFORM_SLOW_COMPILE", "0.001")  # every compile is slow here
    f = tf.differentiable(lambda x: tf.reduce_sum(tf.sin(x) * x), wait=True)
    with pytest.warns(tf.SlowCompileWarning, match=r"compiling .*__grad has taken .* lines") \
            as warned:
        f.grad(np.ones(3))
    # The call's line, not the timer thread's threading.py (helper 134).
    assert [(w.filename, w.lineno) for w in warned] == [(__file__, warned[0].lineno)]
    assert "f.grad(np.ones(3))" in linecache.getline(__file__, warned[0].lineno)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f.grad(np.ones(3))  # no compile, no warning


def test_a_watch_stopped_in_time_says_nothing(monkeypatch):
    monkeypatch.setenv("SRCXFORM_SLOW_COMPILE", "0.05")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with slow_compile.Watch("quick", "line\n"):
            pass
        time.sleep(0.1)  # past the limit: the stopped timer must not fire


def test_zero_turns_the_notice_off(monkeypatch):
    monkeypatch.setenv("SRCXFORM_SLOW_COMPILE", "0")
    watch = slow_compile.Watch("anything", "")
    assert watch._timer is None


def test_a_setting_that_is_no_number_warns_and_keeps_five_seconds(monkeypatch):
    # It raised a raw ValueError from every compile and from show_config (helper 90).
    monkeypatch.setenv("SRCXFORM_SLOW_COMPILE", "soon")
    with pytest.warns(UserWarning, match="SRCXFORM_SLOW_COMPILE='soon' is not a number"):
        assert slow_compile.limit() == 5.0
    monkeypatch.setenv("SRCXFORM_SLOW_COMPILE", "")
    assert slow_compile.limit() == 5.0
