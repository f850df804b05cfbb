"""The seed snippets (shared/seeds/seed_snippets.py) run unchanged and every assert passes."""

import importlib.util
import inspect
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parents[1]
_CANDIDATES = [
    _REPO.parent / "shared" / "seeds" / "seed_snippets.py",  # parents[2]: a sibling checkout
    _REPO / "shared" / "seeds" / "seed_snippets.py",
]
SEEDS_FILE = next((p for p in _CANDIDATES if p.is_file()), None)


def _load_snippets():
    if SEEDS_FILE is None:
        return []
    spec = importlib.util.spec_from_file_location("seed_snippets", SEEDS_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [fn for name, fn in vars(module).items()
            if name.startswith("seed") and inspect.isfunction(fn)]


SNIPPETS = _load_snippets()


def test_seeds_file_found():
    if SEEDS_FILE is None:
        pytest.skip("shared/seeds/seed_snippets.py not found next to the repository "
                    f"(looked at {', '.join(str(p) for p in _CANDIDATES)})")
    assert len(SNIPPETS) >= 8


def test_seeds_use_srcxform():
    if SEEDS_FILE is None:
        pytest.skip("shared/seeds/seed_snippets.py not found")
    import srcxform

    assert SNIPPETS[0].__globals__["tf"] is srcxform


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[fn.__name__ for fn in SNIPPETS])
def test_seed_snippet(snippet):
    snippet()
