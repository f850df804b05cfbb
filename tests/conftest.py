"""Test-wide settings: verify the IR after every pass, keep compiled kernels in a cache
folder of the checkout's own, so a rerun reuses them and CI starts clean, and compile at
the first call (tiered execution, which runs first calls eagerly while a worker compiles,
is tested in test_tiered.py)."""

import os
from pathlib import Path

os.environ.setdefault("SRCXFORM_CHECK", "1")
os.environ.setdefault("SRCXFORM_TIERED", "0")
os.environ.setdefault("SRCXFORM_CACHE_DIR", str(Path(__file__).parents[1] / ".srcxform-cache"))


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite tests/golden/ from the current IR and generated source")
