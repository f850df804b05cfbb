"""`srcxform.show_config()`: what this process runs srcxform with, for a bug report or a
benchmark's record: the versions, the CPU, the BLAS each half of the house calls and its
threads, and the settings the environment chose (README, "API": environment)."""

import os
import platform
import sys
from typing import Any, Literal

import numpy as np

from srcxform import numba_adapter
from srcxform.ad import nan_checks
from srcxform.core import settings
from srcxform.core.version import __version__
from srcxform.jit import backend, crosscheck, slow_compile, tiered
from srcxform.numba_adapter import cachefiles, cachesize


def show_config(mode: Literal["stdout", "dicts"] = "stdout") -> dict[str, dict[str, Any]] | None:
    """Prints srcxform's configuration, section by section, as numpy.show_config does;
    with `mode="dicts"` returns it as a dict of sections instead. The BLAS section names the
    library eager ops call (NumPy's) and the one compiled kernels call (SciPy's, through
    Numba), with their threads and the CPU kernels they chose where threadpoolctl is
    installed."""
    if mode not in ("stdout", "dicts"):
        raise ValueError(f"srcxform.show_config: mode must be 'stdout' or 'dicts', not {mode!r}")
    import llvmlite.binding  # here: `import srcxform` loads neither Numba nor SciPy
    import numba
    config = {
        "srcxform": {"version": __version__, "python": sys.version.split()[0],
                     "platform": platform.platform()},
        "CPU": {"name": llvmlite.binding.get_host_cpu_name(), "cores usable": _cores()},
        "BLAS": _blas(),
        "Numba": {"version": numba.__version__, "llvmlite": llvmlite.__version__,
                  "threads": numba.get_num_threads(),
                  "threading layer": os.environ.get("NUMBA_THREADING_LAYER", "default"),
                  "internals used": numba_adapter.enabled()},
        "settings": _settings(),
    }
    if mode == "dicts":
        return config
    for section, entries in config.items():
        print(f"{section}:")
        for key, value in entries.items():
            print(f"  {key}: {value}")
    return None


def _cores():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def _blas():
    # SciPy's BLAS loaded, as the first kernel calling it loads it, so that its threads show
    import scipy.linalg.cython_blas

    blas = {"eager ops (NumPy)": _built_with(np), "compiled kernels (SciPy, through Numba)":
            _built_with(scipy)}
    try:
        import threadpoolctl
    except ImportError:
        blas["threads"] = "unknown (pip install threadpoolctl to see them)"
        return blas
    for pool in sorted(threadpoolctl.threadpool_info(), key=lambda pool: pool["filepath"]):
        if pool["user_api"] == "blas":
            name = os.path.basename(pool["filepath"])
            blas[name] = (f"{pool['internal_api']} {pool['version']}, {pool['num_threads']} "
                          f"threads, {pool.get('architecture') or 'its own'} kernels")
    return blas


def _built_with(module):
    """The BLAS `module` (numpy or scipy) was built with, as its show_config reports it."""
    try:
        found = module.show_config(mode="dicts")["Build Dependencies"]["blas"]
    except (TypeError, KeyError):  # older releases print their configuration only
        return "unknown"
    return f"{found.get('name', 'unknown')} {found.get('version', '')}".strip()


def _settings():
    """Each setting under the environment variable that sets it, as this process has it."""
    try:
        device = settings.device()
    except ValueError as err:  # reported, as the rest is
        device = str(err)
    return {
        "SRCXFORM_JIT": backend.jit_enabled(),
        "SRCXFORM_TIERED": tiered.enabled(False),
        "SRCXFORM_CHECK": crosscheck.enabled(False),
        "SRCXFORM_DEBUG_NANS": nan_checks.enabled(),  # or srcxform.debug_nans
        "SRCXFORM_DEVICE": device,
        "SRCXFORM_CACHE_DIR": cachefiles.cache_dir(),
        "SRCXFORM_CACHE_TRUST": os.environ.get("SRCXFORM_CACHE_TRUST", "private"),
        "SRCXFORM_CACHE_MAX": cachesize.limit(),
        "SRCXFORM_SLOW_COMPILE": slow_compile.limit(),
        "cache written by this process": cachefiles.writing(),
    }
