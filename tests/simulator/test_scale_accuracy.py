"""benchmarks/scale_accuracy.py: node counts, refused counts over predict's cap, and one end-to-end run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks import scale_accuracy
from simulator.errors import CollsimError
from simulator.nccl import predict as nccl

DATA = Path(__file__).resolve().parents[1] / "data" / "nccl-tests"


def test_node_counts_are_powers_of_two_from_two():
    assert scale_accuracy.node_counts(16) == [2, 4, 8, 16]
    assert scale_accuracy.node_counts(1024)[-1] == 1024 and len(scale_accuracy.node_counts(1024)) == 10
    for bad in (1, 12, 2048):
        with pytest.raises(CollsimError, match=f"^max-nodes: {bad}; expected a power of two from 2 to 1024"):
            scale_accuracy.node_counts(bad)


def test_counts_over_predicts_cap_are_refused_and_run_once_it_is_lifted(monkeypatch):
    monkeypatch.setattr(nccl, "MAX_RANKS", 8, raising=False)
    assert scale_accuracy.scale_case(2, [1 << 20])["refused"] == "predict simulates at most 8 ranks"
    monkeypatch.delattr(nccl, "MAX_RANKS", raising=False)  # the cap gone: 16 ranks run
    case = scale_accuracy.scale_case(2, [1 << 20])
    assert case["refused"] is None and case["ranks"] == 16
    (size,) = case["sizes"]
    # the ratio is predict's time over the model's, and predict's is what `collsim predict` gives on that machine
    from simulator.topology.spec import parse_topology

    assert size["predict_s"] == nccl.predict(parse_topology("dgx-h100:nodes=2"), "allreduce", [1 << 20])[0].time_s
    assert size["ratio"] == pytest.approx(size["predict_s"] / size["model_s"], rel=1e-12)


@pytest.mark.slow
def test_one_log_and_two_nodes_end_to_end(tmp_path, capsys):
    shutil.copy(DATA / "12_rtx4090_pcie_1node_2gpu_allreduce.txt", tmp_path)
    page = tmp_path / "page.md"
    page.write_text("head\n<!-- scale_accuracy:begin -->\nold\n<!-- scale_accuracy:end -->\ntail\n")
    # in two processes (--jobs): the log table in one, the node count in the other
    assert scale_accuracy.main(["--data", str(tmp_path), "--max-nodes", "2", "--jobs", "2", "--json", "--out",
                                str(page)]) == 0
    out = json.loads(capsys.readouterr().out)
    (log,) = out["logs"]
    assert (log["log"][:3], log["preset"], log["ranks"], log["held_out"]) == ("12_", "rtx4090-pcie", 2, None)
    assert [c["nodes"] for c in out["scale"]] == [2] and len(out["scale"][0]["sizes"]) == len(scale_accuracy.SIZES)
    text = page.read_text()
    assert text.startswith("head\n<!-- scale_accuracy:begin -->\n") and text.endswith("<!-- scale_accuracy:end -->\ntail\n")
    assert "| 12 | 2 x RTX 4090" in text and "| 16GiB |" in text and "old" not in text
    assert "`python -m benchmarks.scale_accuracy --max-nodes 2 --jobs 2 --out " in text


def test_jobs_below_one_is_one_clear_line(capsys):
    with pytest.raises(SystemExit):
        scale_accuracy.main(["--jobs", "0"])
    assert "jobs: 0; expected a process count >= 1" in capsys.readouterr().err
