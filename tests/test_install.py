"""The installed `collsim` command works outside the checkout (every package the CLI imports is installed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_every_top_level_package_is_in_the_distribution() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    shipped = {pattern.rstrip("*") for pattern in include}
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "benchmarks"}
    assert packages <= shipped, f"packages missing from pyproject's include: {sorted(packages - shipped)}"


def test_console_script_runs_from_another_directory(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "collsim"
    assert script.exists(), f"no console script at {script}: install the project (make setup)"
    done = subprocess.run([str(script), "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage: collsim" in done.stdout
