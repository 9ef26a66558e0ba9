"""`collsim run-program --timing`: calls timed as NCCL runs them, checked against direct `predict` calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main
from simulator.nccl.predict import predict
from simulator.topology import parse_topology

DDP2 = str(Path(__file__).resolve().parents[1] / "data" / "programs" / "ddp2.yaml")
# ddp2.yaml: 2 ranks (GPUs 0 and 1 of one node), bfloat16 all-reduces of 25 MB ("b1") and 125 MB ("b2") on a comm
# stream after 5 ms and 7 ms of backward, 3 ms of compute after the last
BUCKETS = {'allreduce#1 (group dp, "b1")': 25_000_000, 'allreduce#2 (group dp, "b2")': 125_000_000}


def run_json(capsys, *argv: str) -> dict:
    assert main(["run-program", DDP2, *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def call_times(data: dict) -> dict[str, tuple[float, str]]:
    return {o["label"]: (o["end"] - o["start"], o["algorithm"]) for o in data["operations"] if o["rank"] == 0 and o["group"]}


@pytest.mark.parametrize("machine", ["dgx-h100", "hgx-b200:nodes=2"])
def test_run_program_timing_nccl_gives_predicts_time_for_each_call(capsys, machine):
    data = run_json(capsys, "--topology", machine, "--timing", "nccl")
    topo = parse_topology(machine)
    calls = call_times(data)
    assert set(calls) == set(BUCKETS)
    for label, nbytes in BUCKETS.items():
        best = predict(topo, "allreduce", [nbytes], ranks=2, dtype="bfloat16")[0]  # both ranks on node 0
        seconds, algorithm = calls[label]
        assert seconds == pytest.approx(best.time_s, abs=2e-12)  # the engine keeps whole picoseconds
        assert algorithm == f"nccl {best.nccl_algo}/{best.proto}"
    totals = data["totals"]
    assert totals["timing"] == "nccl" and totals["mode"] == "symmetric"  # auto runs isolated under NCCL timing
    assert totals["timed"] == {"nccl": 2, "engine": 0, "closed form": 0}
    assert totals["step_s"] == pytest.approx(10e-3)  # b2 (7 ms + its time) ends inside the 3 ms of compute after it


def test_run_program_timing_links_is_the_default_and_differs(capsys):
    links = run_json(capsys, "--topology", "dgx-h100")
    nccl = run_json(capsys, "--topology", "dgx-h100", "--timing", "nccl")
    assert links["totals"]["timing"] == "links" and links["totals"]["timed"] == {}
    for label in BUCKETS:
        assert call_times(links)[label][1] == "ring"
        assert call_times(links)[label][0] != pytest.approx(call_times(nccl)[label][0], rel=1e-3)


def test_run_program_table_says_how_calls_were_timed(capsys):
    assert main(["run-program", DDP2, "--topology", "dgx-h100", "--timing", "nccl"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"# {DDP2}: 2 ranks on dgx-h100; symmetric run,")
    assert first.endswith("; calls timed 2 NCCL (NCCL: as collsim predict times them)")
    assert main(["run-program", DDP2, "--timing", "nccl"]) == 0  # ideal:2, no preset: every call on the links
    assert "; calls timed 0 NCCL, 2 links (" in capsys.readouterr().out.splitlines()[0]
    assert main(["run-program", DDP2, "--topology", "dgx-h100"]) == 0  # links: the line as before
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"# {DDP2}: 2 ranks on dgx-h100; exact run,") and "timed" not in first
