"""srcxform.show_config() and `python -m srcxform config`: what the process runs with, as
the environment and the installed libraries set it."""

import subprocess
import sys

import numba
import numpy as np
import pytest

import srcxform as tf


def test_the_dicts_report_the_environment_s_settings(monkeypatch, tmp_path):
    monkeypatch.setenv("SRCXFORM_TIERED", "0")
    monkeypatch.setenv("SRCXFORM_CACHE_MAX", "2G")
    monkeypatch.setenv("SRCXFORM_SLOW_COMPILE", "0")
    settings = tf.show_config(mode="dicts")["settings"]
    assert settings["SRCXFORM_TIERED"] is False
    assert settings["SRCXFORM_CACHE_MAX"] == 2 << 30
    assert settings["SRCXFORM_SLOW_COMPILE"] == 0.0
    assert settings["SRCXFORM_DEVICE"] == "cpu"
    with tf.debug_nans(True):
        assert tf.show_config(mode="dicts")["settings"]["SRCXFORM_DEBUG_NANS"] is True
    assert tf.show_config(mode="dicts")["settings"]["SRCXFORM_DEBUG_NANS"] is False


def test_the_dicts_name_the_versions_and_each_half_s_blas():
    config = tf.show_config(mode="dicts")
    assert config["srcxform"]["version"] == tf.__version__
    assert config["Numba"]["version"] == numba.__version__
    assert config["Numba"]["threads"] == numba.get_num_threads()
    blas = config["BLAS"]
    numpy_blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    assert blas["eager ops (NumPy)"] == f"{numpy_blas['name']} {numpy_blas['version']}"
    assert blas["compiled kernels (SciPy, through Numba)"] != "unknown"


def test_stdout_prints_each_section_and_the_cli_prints_the_same(capsys):
    assert tf.show_config() is None
    printed = capsys.readouterr().out
    for section in ("srcxform:", "CPU:", "BLAS:", "Numba:", "settings:"):
        assert f"\n{section}\n" in f"\n{printed}"
    assert "  SRCXFORM_DEVICE: cpu\n" in printed
    cli = subprocess.run([sys.executable, "-m", "srcxform", "config"], capture_output=True,
                         text=True, check=True)
    # The same settings (a test before may have set this process's BLAS threads)
    assert cli.stdout.split("settings:")[1] == printed.split("settings:")[1]


def test_an_unknown_mode_raises():
    with pytest.raises(ValueError, match="'stdout' or 'dicts', not 'yaml'"):
        tf.show_config(mode="yaml")


def test_an_unknown_device_is_reported_not_raised(monkeypatch):
    monkeypatch.setenv("SRCXFORM_DEVICE", "tpu")
    device = tf.show_config(mode="dicts")["settings"]["SRCXFORM_DEVICE"]
    assert "SRCXFORM_DEVICE='tpu' is not a device" in device
