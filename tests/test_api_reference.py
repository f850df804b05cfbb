"""The public API documents itself: every public namespace says what it exports
(`__all__`), every public callable has a docstring, and the API reference builds from them
(`python -m srcxform docs OUT`)."""

import importlib
import inspect
import subprocess
import sys

import pytest

import srcxform

NAMESPACES = ["srcxform"] + sorted(f"srcxform.{name}" for name in srcxform._NAMESPACES)


def _exports(module_name):
    module = importlib.import_module(module_name)
    return module, [getattr(module, name) for name in module.__all__]


@pytest.mark.parametrize("module_name", NAMESPACES)
def test_each_public_namespace_lists_its_names(module_name):
    module = importlib.import_module(module_name)
    assert isinstance(getattr(module, "__all__", None), list), f"{module_name} has no __all__"
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing, f"{module_name}.__all__ names what it lacks: {missing}"


@pytest.mark.parametrize("module_name", NAMESPACES)
def test_each_public_callable_has_a_docstring(module_name):
    module, values = _exports(module_name)
    undocumented = [name for name, value in zip(module.__all__, values)
                    if callable(value) and not isinstance(value, type(srcxform.float32))
                    and not inspect.getdoc(value)]
    assert not undocumented, f"{module_name}: no docstring on {undocumented}"


def test_the_implementation_stays_out_of_the_public_names():
    for internal in ("embed", "getitem", "api", "backend", "codegen", "np"):
        assert internal not in srcxform.__all__
        assert internal not in dir(srcxform)
    for name in srcxform._NAMESPACES:
        assert "np" not in importlib.import_module(f"srcxform.{name}").__all__


def test_the_api_reference_builds(tmp_path):
    pytest.importorskip("pdoc")
    result = subprocess.run([sys.executable, "-m", "srcxform", "docs", str(tmp_path)],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "srcxform.html").read_text()
    assert "GradientTape" in page and "differentiable" in page
    assert (tmp_path / "srcxform" / "nn.html").exists()
    assert not (tmp_path / "srcxform" / "api.html").exists()  # the implementation stays out
