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
