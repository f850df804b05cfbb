"""The README's first screen stays true: its two commands are the ones CI runs, and its
tour runs as written and prints what its comments say."""

import re
import runpy
from pathlib import Path

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


def test_the_tour_runs_and_prints_what_it_says(tmp_path, capsys):
    script = tmp_path / "tour.py"
    script.write_text("\n".join(_blocks("python", _section("Tour"))))
    runpy.run_path(str(script), run_name="__main__")
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
