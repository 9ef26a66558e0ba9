"""`collsim doctor LOG [--preset SPEC]`: bad inputs, each refused in one line naming the field, the value and what is
accepted (issue 23)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.formats.nccl_tests import ResultRow, format_log

from .harness import Case, run_case

LOGS = Path(__file__).resolve().parents[1] / "data" / "nccl-tests"
TWO_NODES = str(LOGS / "03_h100_p5_2node_16gpu_efa_allreduce.txt")
SIZES = (1 << 10, 1 << 20, 1 << 26)


def _log(op: str, sizes=SIZES, header: str = "") -> str:
    """An nccl-tests table of `op` on 8 ranks at 10 GB/s algbw, with a `header` line first."""
    redop = "none" if op in ("alltoall", "allgather") else "sum"
    per = 8 if op in ("alltoall", "allgather") else 1
    rows = [ResultRow(s, s // 4 // per, "float", redop, -1, 20e-6 + s / 10e9) for s in sizes]
    return header + format_log(op, 8, rows)


H100 = "#  Rank  0 Group  0 Pid 1 on host0 device  0 [0x1a] NVIDIA H100 80GB HBM3\n"

CASES = [
    Case("not-a-log", ["doctor", "notes.txt"], "log", "notes.txt", "is not an nccl-tests log", files={"notes.txt": "hello\n"}),
    Case("empty", ["doctor", "empty.txt"], "log", "empty.txt", "no result rows", files={"empty.txt": ""}),
    Case("missing", ["doctor", "nope.txt"], "log", "nope.txt", "No such file"),
    Case("unknown-preset", ["doctor", TWO_NODES, "--preset", "nosuch"], "preset", "'nosuch'", "expected one of"),
    Case("preset-too-small", ["doctor", TWO_NODES, "--preset", "p5"], "preset", "p5", "e.g. p5:nodes=2"),
    Case("preset-bad-nodes", ["doctor", TWO_NODES, "--preset", "p5:nodes=0"], "nodes", "nodes=0", "integer >= 1"),
    Case("preset-empty", ["doctor", TWO_NODES, "--preset", ""], "preset", "''", "expected"),
    Case("unknown-op", ["doctor", "a2a.txt"], "op", "alltoall", "allreduce, allgather, reduce_scatter",
         files={"a2a.txt": _log("alltoall", header=H100)}),
    Case("only-tiny-sizes", ["doctor", "tiny.txt"], "log", "tiny.txt", "expected a sweep",
         files={"tiny.txt": _log("allreduce", sizes=(8, 64, 512), header=H100)}),
    Case("no-gpu-named", ["doctor", "plain.txt"], "preset", "plain.txt", "expected --preset SPEC",
         files={"plain.txt": _log("allreduce")}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_doctor_input_is_refused_in_one_line(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def test_case_ids_are_unique() -> None:
    assert len({c.id for c in CASES}) == len(CASES)
