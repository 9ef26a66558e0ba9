"""Adding a collective is one declaration (simulator/ops.py), adding a machine preset one (topology/presets.py).

The code that lowers, matches and runs programs reads the declarations: a scan of its source finds no
restated table of op names, and the declarations' own facts (program default, preset GPU) are checked
against what they name.
"""

import ast
import dataclasses
from pathlib import Path

import pytest

from simulator.algorithms import names_for
from simulator.errors import CollsimError
from simulator.formats.nccl_tests import GPU_FAMILIES
from simulator.ops import ALIASES, SPECS, OpSpec
from simulator.program.lower import algorithm_for
from simulator.program.model import Op
from simulator.program.whatif import gpu_for
from simulator.topology.presets import PRESET_GPUS, PRESETS

ROOT = Path(__file__).resolve().parents[2]
OP_NAMES = set(SPECS) | set(ALIASES)
# Code that must read the op specs, not restate them.
READERS = sorted([*ROOT.glob("simulator/program/*.py"), ROOT / "verify/program.py", ROOT / "verify/native.py"])
# The one stated exception: verify --program runs reduce_scatter as an allreduce on gloo.
ALLOWED = {("verify/program.py", "GLOO_RUNS_AS")}


def op_tables(source: str, path: str = "") -> list[tuple[int, str]]:
    """(line, kind) of every literal tuple/list/set holding an op name, dict keyed by one, or comparison with one
    (calls such as Collective("allreduce", ...) name one op and are not tables)."""
    tree = ast.parse(source)
    allowed = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
               and any(isinstance(t, ast.Name) and (path, t.id) in ALLOWED for t in node.targets)}

    def named(node) -> bool:
        return isinstance(node, ast.Constant) and node.value in OP_NAMES

    hits = []
    for node in ast.walk(tree):
        if id(node) in allowed:
            continue
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and any(named(e) for e in node.elts):
            hits.append((node.lineno, "collection"))
        elif isinstance(node, ast.Dict) and any(named(k) for k in node.keys if k is not None):
            hits.append((node.lineno, "dict"))
        elif isinstance(node, ast.Compare) and any(named(c) for c in (node.left, *node.comparators)):
            hits.append((node.lineno, "compare"))
    return hits


def test_the_scan_finds_restated_op_tables():
    """What main had before: a reducing-ops tuple, a default-algorithm dict, a per-op if-chain."""
    assert op_tables('if op.op in ("allreduce", "reduce_scatter", "reduce"):\n    pass') == [(1, "collection")]
    assert op_tables('D = {"allreduce": "ring", "alltoall": "direct"}') == [(1, "dict")]
    assert op_tables('if op.op == "allgather":\n    pass') == [(1, "compare")]
    assert op_tables('c = Collective("allreduce", 4, 0)\nx = arrays["reduce"]') == []
    assert op_tables('GLOO_RUNS_AS = {"reduce_scatter": "allreduce"}', "verify/program.py") == []
    assert op_tables('GLOO_RUNS_AS = {"reduce_scatter": "allreduce"}', "simulator/program/lower.py") == [(1, "dict")]


@pytest.mark.parametrize("path", READERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_program_code_restates_no_op_table(path):
    rel = str(path.relative_to(ROOT))
    assert op_tables(path.read_text(), rel) == [], f"{rel}: read the op's spec (simulator/ops.py) instead"


def test_op_specs_are_keyword_only():
    spec = SPECS["allgather"]
    with pytest.raises(TypeError):
        OpSpec("allgather", "block", "full", "all", "all", False, spec.bus_factor, "all_gather_into_tensor",  # noqa
               spec.torch_args, "allgather", "ring")


@pytest.mark.parametrize("op", list(SPECS))
def test_program_default_is_an_algorithm_of_its_op(op):
    assert SPECS[op].program_default in names_for(op)


def test_lowering_runs_the_specs_program_default(monkeypatch):
    call = Op(op="allreduce", group="g", nbytes=1 << 20)
    assert algorithm_for(call, 4, {}) == "ring"
    monkeypatch.setitem(SPECS, "allreduce", dataclasses.replace(SPECS["allreduce"], program_default="direct"))
    assert algorithm_for(call, 4, {}) == "direct"
    assert algorithm_for(call, 4, {"allreduce": "ring"}) == "ring"  # the run's choice still wins


def test_a_presets_gpu_is_stated_in_its_declaration():
    assert PRESET_GPUS == {name: p.gpu for name, p in PRESETS.items() if p.gpu is not None}
    assert set(PRESET_GPUS.values()) <= set(GPU_FAMILIES)
    # by hand, from the summaries: 8x H100 SXM, 72x B200, 4x RTX 4090
    assert (PRESET_GPUS["dgx-h100"], PRESET_GPUS["gb200-nvl72"], PRESET_GPUS["rtx4090-pcie"]) == ("h100", "b200", "rtx4090")
    assert gpu_for("dgx-h100:nodes=2", None) == "h100" and gpu_for("p4de", None) == "a100"


def test_a_new_presets_gpu_reaches_whatif(monkeypatch):
    monkeypatch.setitem(PRESETS, "test-box", dataclasses.replace(PRESETS["dgx-h100"], name="test-box", gpu="b200"))
    assert gpu_for("test-box:nodes=2", None) == "b200"
    monkeypatch.setitem(PRESETS, "test-box", dataclasses.replace(PRESETS["dgx-h100"], name="test-box", gpu=None))
    with pytest.raises(CollsimError, match="^gpu: machine 'test-box' has no GPU preset of its own; expected --gpu"):
        gpu_for("test-box", None)
