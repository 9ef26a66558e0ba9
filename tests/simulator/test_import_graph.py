"""The simulator package's imports form no cycle, counting imports made inside functions too (not those under
`if TYPE_CHECKING:`), and its top level holds
no NCCL-specific module (those live in simulator/nccl/)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "simulator"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: set[str]) -> set[str]:
    """The simulator modules a file imports anywhere in it (module level or inside functions)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
                   for stmt in block.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in typing_only:  # `if TYPE_CHECKING:` imports are for annotations only, never run
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            target = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
            if target in modules:
                out.add(target)
            out |= {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules}
    return out - {name}


def graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: imports(path, set(files)) for name, path in files.items()}


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(u: str) -> list[str] | None:
        state[u] = 1
        stack.append(u)
        for v in sorted(edges.get(u, ())):
            if state.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if v not in state and (found := visit(v)):
                return found
        stack.pop()
        state[u] = 2
        return None

    for u in sorted(edges):
        if u not in state and (found := visit(u)):
            return found
    return None


def test_cycle_finder_finds_a_cycle_and_accepts_a_dag():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_simulator_imports_have_no_cycle():
    edges = graph()
    # a package's __init__ importing its own modules is how a package is assembled, not a cycle of ideas
    edges = {u: {v for v in vs if not v.startswith(u + ".")} for u, vs in edges.items()}
    assert "simulator.nccl.predict" in edges and edges["simulator.nccl.predict"]
    assert cycle(edges) is None, f"import cycle: {' -> '.join(cycle(edges))}"


NCCL_WORDS = ("nccl", "nvls", "collnet", "pat_predict", "calibration", "protocols", "ranks_per_node", "predict",
              "fit_bounds", "log_presets")


def test_top_level_holds_no_nccl_module():
    top = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert not [m for m in top if any(w in m for w in NCCL_WORDS)], top
    assert (PACKAGE / "nccl" / "predict.py").exists()
