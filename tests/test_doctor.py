"""`collsim doctor`: the machine inferred from each bundled log, its expectation within 15% of the measured busbw at
sizes >= 64 MiB on the healthy logs (each on its machine's preset), and the right cause named first on copies made
deliberately unhealthy (benchmarks/doctor_accuracy.py DEGRADED)."""

from __future__ import annotations

import json
from statistics import median

import pytest

from app.cli import main
from benchmarks.doctor_accuracy import DEGRADED, bundled, capped, degraded_copy, large_errors, run_degraded, run_healthy
from collsim.doctor import LARGE, infer_machine
from simulator.formats.nccl_tests import parse_log
from simulator.nccl.log_presets import CASES, preset_of

MODEL_OFF = "06_"  # dgx-a100 across nodes: predict 72-92% above measured at >= 64 MiB (docs/accuracy.md)


def _text(prefix: str) -> tuple[str, str]:
    path = bundled(prefix)
    return path.name, path.read_text(encoding="utf-8", errors="replace")


@pytest.mark.parametrize("prefix", [c.prefix for c in CASES])
def test_the_machine_is_inferred_from_the_log(prefix):
    name, text = _text(prefix)
    inferred = infer_machine(parse_log(text, name), text).spec
    if prefix == "17_":  # its comments name B200 and 4 nodes, not the p6-b200 instance: the family's default preset
        assert inferred == "hgx-b200:nodes=4"
    else:
        assert inferred == preset_of(name)


@pytest.mark.slow
@pytest.mark.parametrize("prefix", [c.prefix for c in CASES if c.prefix != MODEL_OFF])
def test_a_healthy_log_is_expected_within_15_percent_at_64_MiB_and_up(prefix):
    result = run_healthy(prefix)
    errors = large_errors(result)
    assert errors and median(abs(e) for e in errors) <= 0.15, errors
    assert result.diagnosis.verdict == "healthy" and not result.diagnosis.causes


@pytest.mark.slow
def test_where_the_model_is_known_off_no_fault_is_named():
    result = run_healthy(MODEL_OFF)
    assert median(large_errors(result)) > 0.5  # the model's own error on this class (docs/accuracy.md: 43% median)
    assert result.diagnosis.verdict == "within model error" and not result.diagnosis.causes
    assert "model's own error" in result.text()


@pytest.mark.parametrize("case", DEGRADED, ids=[c.name for c in DEGRADED])
def test_a_degraded_copy_names_the_right_cause_first(case):
    result = run_degraded(case)
    assert result.diagnosis.verdict == "slow"
    assert case.cause.lower() in result.diagnosis.causes[0].name.lower(), [c.name for c in result.diagnosis.causes]
    assert "evidence:" in result.text() and "try:" in result.text()


def test_a_capped_copy_prints_busbw_at_the_cap():
    name, text = _text("03_")
    copy = parse_log(degraded_copy(text, name, capped(12.5)), name)
    large = [r.out.busbw_GBps for r in copy.rows if r.bytes >= LARGE]
    assert large and all(abs(b - 12.5) <= 0.02 for b in large)  # the cap, to the printed 2 decimals
    assert copy.ranks == 16


def test_the_one_nic_evidence_names_the_rate_and_the_nic_count():
    result = run_degraded(DEGRADED[1])
    evidence = result.diagnosis.causes[0].evidence
    assert "12.5 GB/s" in evidence and "32 per node" in evidence  # p5: 32 x 100G EFA = 12.5 GB/s each


def test_expected_busbw_is_nccl_tests_busbw_of_the_predicted_time(capsys):
    assert main(["doctor", str(bundled("04_")), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["preset"] == "p5" and data["verdict"] == "healthy"
    for p in data["points"]:  # allreduce on 8 ranks: busbw = bytes / time x 2 (n - 1) / n (nccl-tests' PERFORMANCE.md)
        assert p["expected_busbw_GBps"] == pytest.approx(p["bytes"] / p["expected_s"] * 2 * 7 / 8 / 1e9, rel=2e-3)
    assert {p["bytes"] for p in data["points"]} >= {64 << 20, 16 << 30}


def test_html_writes_the_figure_of_measured_and_expected_busbw(tmp_path, capsys):
    out = tmp_path / "doctor.html"
    assert main(["doctor", str(bundled("07_")), "--html", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"wrote the figure (HTML): {out}" in printed and "<html>" in out.read_text()
    assert "busbw: measured against expected" in out.read_text()
