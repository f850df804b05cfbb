"""The README's first screen stays true: its two commands are the ones CI runs, and its
tour runs as written and prints what its comments say."""

import re
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _blocks(language, text):
    return re.findall(rf"```{language}\n(.*?)```", text, re.DOTALL)


def _section(title):
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_commands_are_the_ones_ci_runs():
    commands = [line for line in _blocks("sh", README)[0].splitlines()
                if line and not line.startswith("#")]
    assert len(commands) == 2 and "examples/quickstart.py" in commands[0] \
        and "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text().replace('"', "")
    for command in commands:
        for step in command.replace(".venv", "$venv").split(" && "):
            assert step in ci, f"README step {step!r} is not what .ci/run runs"


def _run_section(title, folder):
    """Runs the Python blocks of the README's section `title` as one script; its globals."""
    script = folder / "section.py"
    script.write_text("\n".join(_blocks("python", _section(title))))
    return runpy.run_path(str(script), run_name="__main__")


def test_the_tour_runs_and_prints_what_it_says(tmp_path, capsys):
    _run_section("Tour", tmp_path)
    printed = capsys.readouterr().out.splitlines()
    assert printed[:2] == ["Result of y: 9.0", "6.0"]
    assert any(line.startswith("def loss") for line in printed[2:])  # loss.source(w, x)


def _numpy_table_names():
    """The NumPy names the README's table lists: backticked words outside parentheses
    (which hold options and examples)."""
    rows = [line for line in _section("NumPy functions").splitlines() if line.startswith("| ")]
    text = re.sub(r"\([^()]*\)", "", "\n".join(rows[1:]))  # rows[0]: the header
    return set(re.findall(r"`([a-z_][a-z0-9_.]*)`", text))


def _numpy_callable(name):
    """np.<name>, else np.linalg.<name>, else scipy.special.<name> (the table names a
    module once, as in `linalg.det`, then its functions by their own names)."""
    import numpy as np
    import scipy.special

    prefix, _, attr = name.rpartition(".")
    modules = {"linalg": [np.linalg], "scipy.special": [scipy.special]}.get(
        prefix, [np, np.linalg, scipy.special])
    return next((f for f in (getattr(m, attr, None) for m in modules) if f is not None), None)


def test_the_numpy_table_lists_what_dispatches():
    """Every name in the table dispatches to a srcxform op, and every NumPy callable that
    dispatches is in the table (under its own name or an alias of it)."""
    from srcxform.ops.numpy_dispatch import FUNCTIONS, ufuncs

    names = _numpy_table_names()
    listed = {name: _numpy_callable(name) for name in names}
    assert len(names) > 80  # the table was found
    assert [name for name, f in listed.items() if f not in ufuncs() and f not in FUNCTIONS] == []
    missing = [f.__name__ for f in [*ufuncs(), *FUNCTIONS] if f not in listed.values()]
    assert missing == []


@pytest.mark.slow
def test_the_forward_mode_example_runs_and_computes_what_it_says(tmp_path):
    import numpy as np

    namespace = _run_section("Forward mode, hvp, vmap and Jacobians", tmp_path)
    np.testing.assert_allclose(namespace["acc"].jvp(namespace["g"]), [6.0, 0.0, 0.0])
    rosen, x, v = namespace["rosen"], namespace["x"], namespace["v"]
    tf = namespace["tf"]
    np.testing.assert_allclose(tf.hvp(rosen)(x, v), tf.hessian(rosen)(x) @ v, rtol=1e-10)
    X = namespace["X"]
    np.testing.assert_allclose(namespace["per_example"],
                               [2 * (X[i].sum() - 1.0) * X[i] for i in range(3)])



def test_the_layout_names_every_module():
    layout = _section("Layout")
    modules = [path for path in (ROOT / "srcxform").rglob("*.py") if path.name != "__init__.py"]
    missing = sorted(str(path.relative_to(ROOT)) for path in modules if path.name not in layout)
    assert missing == [], "the README's Layout leaves these out"
