"""Test-wide settings: verify the IR after every pass, keep compiled kernels in a cache
folder of the checkout's own, so a rerun reuses them and CI starts clean, and compile at
the first call (tiered execution, which runs first calls eagerly while a worker compiles,
is tested in test_tiered.py). Under pytest-xdist each worker has its own cache folder: a
test that counts what it compiled or loaded sees only its own process's kernels. The
runtime's helpers (the same in every worker, and no test counts them) are compiled once
for all workers, in one `runtime` folder each worker's links to."""

import os
import shutil
from pathlib import Path

_CACHE = str(Path(__file__).parents[1] / ".srcxform-cache")
os.environ.setdefault("SRCXFORM_CHECK", "1")
os.environ.setdefault("SRCXFORM_CHECK_DTYPES", "1")  # results' dtypes too (crosscheck)
os.environ.setdefault("SRCXFORM_TIERED", "0")
os.environ.setdefault("SRCXFORM_CACHE_DIR", _CACHE)


def pytest_configure(config):
    worker = getattr(config, "workerinput", {}).get("workerid")  # a pytest-xdist worker's
    if worker and os.environ["SRCXFORM_CACHE_DIR"] == _CACHE:
        own = os.path.join(_CACHE, worker)
        os.environ["SRCXFORM_CACHE_DIR"] = own
        _share_runtime(own)


def _share_runtime(own):
    shared, link = os.path.join(_CACHE, "runtime"), os.path.join(own, "runtime")
    os.makedirs(shared, mode=0o700, exist_ok=True)
    os.makedirs(own, mode=0o700, exist_ok=True)
    if os.path.isdir(link) and not os.path.islink(link):  # a folder of its own, from before
        shutil.rmtree(link)
    if not os.path.islink(link):
        os.symlink(shared, link)


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite tests/golden/ from the current IR and generated source")
