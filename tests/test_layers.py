"""The packages are layered simulator -> verify -> collsim -> app: each imports (at module level or inside functions,
not under `if TYPE_CHECKING:`) only from itself and the layers before it; and the app's pages build no command line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("simulator", "verify", "collsim", "app")
FACES = ("app/ui", "app/views", "app/streamlit_app.py")  # the app's pages: they build requests, never argv


def imported(path: Path, root: Path = ROOT) -> set[str]:
    """Top-level names of every module `path` imports, relative imports resolved inside its package."""
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
                   for stmt in block.body for n in ast.walk(stmt)}
    out = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = path.relative_to(root).parts[:-1]
                base = ".".join(parts[:len(parts) - node.level + 1])
                out.add(f"{base}.{node.module}" if node.module else base)
            else:
                out.add(node.module)
    return out


def files(where: str) -> list[Path]:
    target = ROOT / where
    return [target] if target.is_file() else sorted(target.rglob("*.py"))


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_imports_only_the_layers_before_it(layer: str):
    later = set(LAYERS[LAYERS.index(layer) + 1:])
    wrong = {f"{p.relative_to(ROOT)} imports {m}" for p in files(layer) for m in imported(p) if m.split(".")[0] in later}
    assert not wrong, sorted(wrong)


def test_the_app_pages_build_no_command_line():
    wrong = {f"{p.relative_to(ROOT)} imports {m}" for where in FACES for p in files(where) for m in imported(p)
             if m == "argparse" or m.startswith("app.commands") or m == "app.cli"}
    assert not wrong, sorted(wrong)


def test_the_checker_sees_a_violation(tmp_path):
    """imported() finds imports inside functions and resolves relative ones (so the tests above can fail)."""
    module = tmp_path / "verify" / "probe.py"
    module.parent.mkdir()
    module.write_text("def f():\n    from app.output import emit_json\n    from .program import run\n")
    assert imported(module, tmp_path) == {"app.output", "verify.program"}
