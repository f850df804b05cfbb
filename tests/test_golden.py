"""The printed IR and the generated source of canonical functions, against files kept
under tests/golden/ (refresh them with `pytest --update-golden`, then read the diff)."""

from pathlib import Path

import pytest
from golden_functions import CASES

import srcxform
from srcxform import numba_adapter

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("kind", ["ir", "source"])
def test_golden(name, kind, request):
    if kind == "source" and numba_adapter.sole_reference_count() != 3:
        # The files hold the default's warm entries, which reuse output arrays where the
        # reference count, 3 on today's CPython, says nothing else holds them.
        pytest.skip("the golden source is Numba's internals on, a reference count of 3")
    fn, wrt, args = CASES[name]
    compiled = srcxform.differentiable(fn, wrt=wrt)
    text = compiled.ir(*args) if kind == "ir" else compiled.source(*args)
    path = GOLDEN / f"{name}.{'ir' if kind == 'ir' else 'py.txt'}"
    if request.config.getoption("--update-golden"):
        path.write_text(text)
    assert path.exists(), f"no golden file {path.name}; run pytest --update-golden"
    assert text == path.read_text()
