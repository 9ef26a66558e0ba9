"""The README keeps its promises: the counts it states are the code's, and every command it shows parses and runs."""

import glob
import re
import shlex
from pathlib import Path

import pytest

from app.argv import join_signed_values
from app.cli import build_parser, main
from simulator.algorithms import names_for
from simulator.collective import OPS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# the commands of the README's table "your question, the command, the page"
COMMANDS = [c for line in README.splitlines() if line.startswith("|") for c in re.findall(r"`(collsim [^`]+)`", line)]
EXIT = {"lint-program": 1}  # its example is the program that deadlocks: the checker finds it and exits 1


def test_the_readme_counts_the_registered_algorithms():
    algorithms, collectives = map(int, re.search(r"(\d+) algorithms over (\d+) collectives", README).groups())
    assert collectives == len(OPS)
    assert algorithms == sum(len(names_for(op)) for op in OPS)


def _argv(command: str) -> list[str]:
    """The command's arguments as a shell would pass them from the repository root (paths absolute, globs expanded)."""
    argv = []
    for word in shlex.split(command)[1:]:
        here = ("" if not word.startswith("tests/") else f"{ROOT}/") + word.replace("@tests/", f"@{ROOT}/tests/")
        argv += sorted(glob.glob(here)) if "*" in here else [here]
    return argv


def test_the_readme_shows_the_commands_its_table_promises():
    shown = {shlex.split(c)[1] for c in COMMANDS}
    assert {"predict", "doctor", "whatif", "draw", "check", "simulate", "sweep", "verify", "import-trace", "colocate",
            "fit", "lint-program", "run-program", "export-chakra", "scenario"} <= shown


@pytest.mark.parametrize("command", COMMANDS)
def test_every_readme_command_parses(command):
    parser = build_parser()
    argv = join_signed_values(parser, _argv(command))
    args, extras = parser.parse_known_args(argv)
    assert extras == [] and getattr(args, "_command", None)


@pytest.mark.slow
@pytest.mark.xdist_group("processes")  # verify starts a gloo world
@pytest.mark.parametrize("command", COMMANDS)
def test_every_readme_command_runs(command, tmp_path, monkeypatch, capsys):
    """Each in a fresh folder, in README order of need (run-program real.yaml needs import-trace's output); `check
    --all` on ranks 1-3 instead of 1-33 (the full run, 3 minutes on 2 cores, is in docs/benchmarks.md)."""
    monkeypatch.chdir(tmp_path)
    if "real.yaml --timing measured" in command:
        assert main(_argv(next(c for c in COMMANDS if c.startswith("collsim import-trace")))) == 0
    argv = [a if a != "1-33" else "1-3" for a in _argv(command)]
    assert main(argv) == EXIT.get(argv[0], 0), capsys.readouterr().err[-2000:]
