"""`collsim whatif --program`: a program on other machines, compute spans scaled by a stated rule (issue 24)."""

from __future__ import annotations

import pytest

from collsim.whatif_program import ProgramWhatifRequest

PROGRAM = """world: 2
gpu: h100
groups: {world: [0, 1]}
ranks:
  0: [{op: compute, time: 1ms}, {op: allreduce, group: world, size: 1MiB}]
  1: [{op: compute, time: 1ms}, {op: allreduce, group: world, size: 1MiB}]
"""
H100, B200, A100 = 989e12, 2250e12, 312e12  # dense BF16 peaks of the datasheets (simulator/program/presets.py)


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(PROGRAM)
    return str(path)


def _rows(path: str, **kw) -> dict[str, dict]:
    result = ProgramWhatifRequest(path, ("dgx-h100", "hgx-b200", "dgx-a100"), **kw).run()
    return {r["machine"]: r for r in result.data()["machines"]}


def test_compute_scales_by_the_flop_rate_ratio_exactly(program):
    rows = _rows(program)
    for machine, peak in (("dgx-h100", H100), ("hgx-b200", B200), ("dgx-a100", A100)):
        assert rows[machine]["compute_s"] == pytest.approx(1e-3 * H100 / peak, rel=1e-12)
        assert rows[machine]["rule"].startswith("FLOP-rate ratio")


def test_a_factor_given_replaces_the_rule_and_leaves_the_collectives_alone(program):
    flops, given = _rows(program), _rows(program, compute_scale="0.5")
    for machine, row in given.items():
        assert row["compute_s"] == pytest.approx(0.5e-3, rel=1e-12) and row["rule"] == "--compute-scale 0.5"
        comm = flops[machine]["step_s"] - flops[machine]["compute_s"]  # the allreduce, after both ranks' compute
        assert row["step_s"] - row["compute_s"] == pytest.approx(comm, rel=1e-9)


def test_from_gpu_overrides_the_programs_gpu(program):
    rows = _rows(program, from_gpu="a100")
    assert rows["dgx-a100"]["compute_s"] == pytest.approx(1e-3, rel=1e-12)
    assert rows["hgx-b200"]["compute_s"] == pytest.approx(1e-3 * A100 / B200, rel=1e-12)


def test_text_names_the_rule_of_each_machine(program):
    text = ProgramWhatifRequest(program, ("hgx-b200",)).run().text()
    assert "FLOP-rate ratio H100 SXM 989 / B200 2250 TFLOP/s" in text
