"""Every benchmark script still imports: a name it takes from the package that moved or was renamed fails here, not
months later when someone reruns the benchmark (benchmarks run only under `if __name__ == "__main__"`)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCHMARKS = sorted(p.stem for p in (Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("name", BENCHMARKS)
def test_the_benchmark_imports(name: str):
    importlib.import_module(f"benchmarks.{name}")
