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
    Case("preset-bad-nodes", ["doctor", TWO_NODES, "--preset", "p5:nodes=0"], "preset", "nodes=0", "integer >= 1"),
    Case("preset-huge", ["doctor", TWO_NODES, "--preset", "dgx-h100:nodes=99999"], "ranks", "dgx-h100:nodes=99999",
         "at most 16,384"),
    Case("preset-empty", ["doctor", TWO_NODES, "--preset", ""], "preset", "''", "expected"),
    Case("html-extension", ["doctor", str(LOGS / "04_h100_p5_1node_8gpu_allreduce_awsbatch.txt"), "--html", "d.png"],
         "html", "'d.png'", ".html", outputs=["d.png"]),
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


# The Doctor page (app/views/doctor.py) opens on log 04 (8 H100 ranks): a preset typed there, or an upload, that the
# page refuses in one error line naming the field (no files or builders on a page; the page's rank limit).
PAGE_CASES = [
    ("ring:16", "preset", "'ring:16'"),
    ("/etc/passwd", "preset", "'/etc/passwd'"),
    ("p4de:nodes=x", "preset", "'p4de:nodes=x'"),
    ("dgx-h100:nodes=99999", "ranks", "dgx-h100:nodes=99999 has 799,992 GPUs"),
]


@pytest.mark.parametrize("text, field, quoted", PAGE_CASES, ids=[t for t, _, _ in PAGE_CASES])
def test_a_bad_preset_on_the_doctor_page_is_one_error_line(text, field, quoted):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.switch_page("views/doctor.py")
    at.session_state["doctor.preset"] = text
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith(f"{field}") and quoted in errors[0], errors


def test_an_upload_over_the_page_rank_limit_is_refused():
    from app.ui.doctor_model import request
    from simulator.errors import CollsimError

    rows = [ResultRow(s, s // 4, "float", "sum", -1, 20e-6 + s / 10e9) for s in SIZES]
    with pytest.raises(CollsimError, match=r"^ranks: the log has 64 ranks, over this page's limit of 32"):
        request(None, ("big.txt", (H100 + format_log("allreduce", 64, rows)).encode()), "dgx-h100:nodes=8")
