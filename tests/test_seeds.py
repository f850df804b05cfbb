"""The seed tutorials' snippets run unchanged with `import srcxform as tf`, and print what
TensorFlow prints.

tests/seed_snippets.py is the project's copy of shared/seeds/seed_snippets.py (the two seed
documents' code, one function a snippet, with TensorFlow's printed output written in), so a
clone checks the seeds too. Where the shared file sits next to the checkout (as in CI), the
snippets run from it, and the copy must be identical to it.
"""

import importlib.util
import inspect
from pathlib import Path

import pytest

import srcxform

_REPO = Path(__file__).resolve().parents[1]
COPY = Path(__file__).with_name("seed_snippets.py")
_SHARED_CANDIDATES = [
    _REPO.parent / "shared" / "seeds" / "seed_snippets.py",  # a sibling checkout
    _REPO / "shared" / "seeds" / "seed_snippets.py",
]
SHARED = next((p for p in _SHARED_CANDIDATES if p.is_file()), None)


def _load_snippets(path):
    spec = importlib.util.spec_from_file_location("seed_snippets", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [fn for name, fn in vars(module).items()
            if name.startswith("seed") and inspect.isfunction(fn)]


SNIPPETS = _load_snippets(SHARED or COPY)


def test_the_seeds_are_all_there():
    # Two documents: five snippets of the TensorFlow guide, three of the course chapter.
    assert [fn.__name__.split("_")[0] for fn in SNIPPETS] == ["seed000"] * 5 + ["seed003"] * 3


def test_seeds_use_srcxform():
    assert SNIPPETS[0].__globals__["tf"] is srcxform


def test_the_copy_is_the_shared_file():
    if SHARED is None:
        pytest.skip("no shared/seeds/seed_snippets.py next to the checkout: the snippets run "
                    "from the project's copy")
    assert COPY.read_text() == SHARED.read_text(), \
        f"copy {SHARED} to {COPY}: the shared seeds changed"


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[fn.__name__ for fn in SNIPPETS])
def test_seed_snippet(snippet):
    snippet()
