"""The test suite's own rules: no test module imports another, each tier folder collects alone, `slow` is registered."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def _imported_modules(tree: ast.AST) -> list[str]:
    """Every module an `import X` or `from X import ...` statement names (relative ones with their dots)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append("." * node.level + (node.module or ""))
            if node.module is None:  # from . import test_x
                names += ["." + alias.name for alias in node.names]
    return names


def test_imported_modules_sees_every_form():
    tree = ast.parse("import a.test_b\nfrom .test_c import x\nfrom . import test_d\nfrom tests.e.test_f import y\nimport g")
    assert _imported_modules(tree) == ["a.test_b", ".test_c", ".", ".test_d", "tests.e.test_f", "g"]


def _is_test_module(name: str) -> bool:
    return name.rsplit(".", 1)[-1].startswith("test_")


def test_no_test_module_imports_another():
    """Shared cases and helpers live in plain modules (tests/*.py not named test_*) or in conftest fixtures, so that
    any folder or file can run alone and under pytest-xdist."""
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        offenders += [f"{path.relative_to(ROOT)} imports {name}" for name in _imported_modules(tree) if _is_test_module(name)]
    assert offenders == []


def test_the_slow_marker_is_registered_and_strict(pytestconfig):
    assert any(m.startswith("slow:") for m in pytestconfig.getini("markers"))
    assert "--strict-markers" in pytestconfig.getini("addopts")


@pytest.mark.slow
@pytest.mark.parametrize("folder", sorted(p.name for p in TESTS.iterdir() if p.is_dir() and any(p.glob("test_*.py"))))
def test_each_folder_collects_alone(folder):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", f"tests/{folder}"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
