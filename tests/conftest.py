"""Test-wide settings: verify the IR after every pass, keep compiled kernels in a cache
folder of the checkout's own, so a rerun reuses them and CI starts clean, and compile at
the first call (tiered execution, which runs first calls eagerly while a worker compiles,
is tested in test_tiered.py). Under pytest-xdist each worker has its own cache folder: a
test that counts what it compiled or loaded sees only its own process's kernels."""

import os
from pathlib import Path

_CACHE = str(Path(__file__).parents[1] / ".srcxform-cache")
os.environ.setdefault("SRCXFORM_CHECK", "1")
os.environ.setdefault("SRCXFORM_TIERED", "0")
os.environ.setdefault("SRCXFORM_CACHE_DIR", _CACHE)


def pytest_configure(config):
    worker = getattr(config, "workerinput", {}).get("workerid")  # a pytest-xdist worker's
    if worker and os.environ["SRCXFORM_CACHE_DIR"] == _CACHE:
        os.environ["SRCXFORM_CACHE_DIR"] = os.path.join(_CACHE, worker)


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite tests/golden/ from the current IR and generated source")
