"""compare --trace: predicted and measured transfer intervals per rank in one Chrome trace; the error split into terms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main
from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.profile import LinkProfile
from verify.steptrace import chrome_trace, engine_trace, error_terms, predicted_intervals

pytest.importorskip("torch")
# rank processes run one at a time on one xdist worker (--dist loadgroup): their timeouts and timings assume it
pytestmark = pytest.mark.xdist_group("processes")


def _check_schema(data: dict, ranks: int) -> dict[tuple[int, str], list[dict]]:
    """Perfetto/Chrome JSON: traceEvents with ph/ts/dur/pid/tid; returns the complete events per (rank, side)."""
    assert isinstance(data["traceEvents"], list)
    names = {}
    tracks: dict[tuple[int, str], list[dict]] = {}
    for ev in data["traceEvents"]:
        assert ev["ph"] in ("M", "X")
        assert isinstance(ev["pid"], int)
        if ev["ph"] == "M":
            if ev["name"] == "thread_name":
                names[ev["tid"]] = ev["args"]["name"]
            continue
        for key in ("ts", "dur"):
            assert isinstance(ev[key], (int, float)) and ev[key] >= 0, ev
        assert isinstance(ev["tid"], int) and ev["tid"] in names, ev
        rank_text, side = names[ev["tid"]].removeprefix("rank ").split(" ")
        assert side == ev["cat"]
        tracks.setdefault((int(rank_text), side), []).append(ev)
    for r in range(ranks):
        for side in ("predicted", "measured"):
            assert f"rank {r} {side}" in names.values()
    return tracks


@pytest.mark.slow
def test_compare_trace_has_both_tracks_for_every_rank(tmp_path: Path, capsys) -> None:
    out = tmp_path / "steps.json"
    argv = ["compare", "--op", "allreduce", "--algo", "ring", "--ranks", "3", "--alpha", "20us", "--bandwidth", "2GB/s",
            "--sizes", "12KiB,96KiB", "--budget", "0.2", "--trace", str(out), "--trace-size", "96KiB", "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    tracks = _check_schema(json.loads(out.read_text()), 3)
    schedule = build_schedule(Collective("allreduce", 3, 96 * 1024, "float32"), "ring")
    for r in range(3):
        mine = {(t.id, "send") for t in schedule.transfers if t.src == r and not t.local}
        mine |= {(t.id, "recv") for t in schedule.transfers if t.dst == r and not t.local}
        for side in ("predicted", "measured"):  # every transfer of the rank, on both sides
            assert {(e["args"]["id"], e["args"]["kind"]) for e in tracks[(r, side)]} == mine
    measured_end = max(e["ts"] + e["dur"] for (r, side), evs in tracks.items() if side == "measured" for e in evs)
    assert measured_end > 0
    assert report["trace_written"] == str(out) and len(report["terms"]) == 2


def test_trace_without_a_live_run_is_refused(tmp_path: Path, capsys) -> None:
    measured = tmp_path / "m.json"
    measured.write_text(json.dumps({"records": [{"op": "allreduce", "algorithm": "ring", "ranks": 2, "bytes": 65536,
                                                 "time_s": 1e-4}]}))
    argv = ["compare", "--op", "allreduce", "--algo", "ring", "--alpha", "1us", "--bandwidth", "1GB/s",
            "--measured", str(measured), "--trace", str(tmp_path / "t.json")]
    assert main(argv) != 0
    assert "trace" in capsys.readouterr().err and not (tmp_path / "t.json").exists()


def test_predicted_intervals_follow_the_ring_by_hand() -> None:
    """Ring allreduce, p = 2, 64 KiB, alpha 20 us, 2 GB/s: 2 steps of 32 KiB, each 20 us + 16.384 us."""
    profile = LinkProfile(20e-6, 2e9, 0.0, "hand")
    trace = engine_trace("allreduce", "ring", 2, 65536, profile, {})
    rows = predicted_intervals(trace)
    step = 20e-6 + 32768 / 2e9
    sends = sorted((s, e) for _, kind, s, e in rows[0] if kind == "send")
    assert [pytest.approx(x) for x in sends[0]] == [0.0, step]
    assert sends[1][1] == pytest.approx(2 * step)
    data = chrome_trace(trace.schedule, rows, {0: [], 1: []}, "t")
    assert {e["tid"] for e in data["traceEvents"] if e["ph"] == "X"} == {0, 2}  # predicted tracks of ranks 0 and 1


def test_error_terms_by_hand() -> None:
    """Ring allreduce p = 4, 1 MiB, alpha 10 us, 1 GB/s: latency 2(p-1) alpha, bandwidth 2(p-1)/p n / bw, no contention
    on a switch (each rank sends to one neighbour), no segments; the error and the factors follow from a measured time."""
    profile = LinkProfile(10e-6, 1e9, 0.0, "hand")
    n, measured = 1 << 20, 3e-3
    (row,) = error_terms("allreduce", "ring", 4, [n], [measured], profile, {})
    latency, bandwidth = 6 * 10e-6, 6 / 4 * n / 1e9
    assert row["latency_s"] == pytest.approx(latency)
    assert row["bandwidth_s"] == pytest.approx(bandwidth)
    assert row["contention_s"] == pytest.approx(0.0, abs=1e-12) and row["protocol_s"] == 0.0
    assert row["predicted_s"] == pytest.approx(latency + bandwidth)
    assert row["error_pct"] == pytest.approx((latency + bandwidth - measured) / measured * 100)
    assert row["bandwidth_x_to_close"] == pytest.approx((measured - latency) / bandwidth)
