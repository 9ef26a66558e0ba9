"""Trace: link statistics, critical path and the CSV / JSON / Chrome trace exports."""

import csv
import json

import pytest

from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.engine import EngineOptions, simulate
from simulator.schedule import Schedule, Transfer, region
from simulator.topology import ideal, switch


@pytest.fixture(scope="module")
def ring_trace():
    sched = build_schedule(Collective("allreduce", 4, 4 * 1024), "ring")
    return simulate(sched, switch(4, 1e-6, 25e9), EngineOptions(gamma=1e-11))


def test_totals_follow_nccl_tests_definitions(ring_trace):
    coll = ring_trace.schedule.collective
    assert ring_trace.algbw == pytest.approx(coll.nbytes / ring_trace.time)
    assert ring_trace.busbw == pytest.approx(ring_trace.algbw * 2 * 3 / 4)


def test_link_bytes_add_up_to_what_was_sent(ring_trace):
    table = ring_trace.link_table
    sent = ring_trace.schedule.bytes_sent_per_rank().sum()
    assert table["bytes"].sum() == pytest.approx(2 * sent)  # every message crosses two links on a switch
    assert set(table["peak_flows"].tolist()) == {1}


def test_busy_intervals_merge_and_lie_inside_the_run(ring_trace):
    lid = int(ring_trace.link_table["link"][0])
    spans = ring_trace.link_busy_intervals(lid)
    assert spans and all(a < b for a, b in spans) and all(b1 < a2 for (_, b1), (a2, _) in zip(spans, spans[1:]))
    assert spans[-1][1] <= ring_trace.time + 1e-15
    busy = dict(zip(ring_trace.link_table["link"].tolist(), ring_trace.link_table["busy_s"].tolist()))[lid]
    assert busy == pytest.approx(sum(b - a for a, b in spans))


def test_peak_concurrent_flows_counts_overlaps():
    coll = Collective("allreduce", 3, 4000)
    ts = [Transfer(i, s, 2, (region("in", 0, 1000),), False, ()) for i, s in enumerate((0, 1))]
    tr = simulate(Schedule(coll, "hand", ts), switch(3), EngineOptions(ports=0))
    row = [r for r in tr.link_rows() if r["name"] == "switch->gpu2"][0]
    assert row["peak_flows"] == 2 and row["bytes"] == 8000


def test_critical_path_of_ring_allreduce_has_2p_minus_2_transfers(ring_trace):
    path = ring_trace.critical_path()
    assert len(path) == 2 * 3
    assert ring_trace.end[path[-1]] == pytest.approx(ring_trace.time)
    for a, b in zip(path, path[1:]):
        assert ring_trace.start[b] == pytest.approx(ring_trace.end[a]) or ring_trace.start[b] == pytest.approx(ring_trace.arrive[a])


@pytest.mark.parametrize("pairs", [((0, 1), (0, 2), (0, 3)), ((1, 0), (2, 0), (3, 0))])
def test_critical_path_follows_freed_ports_when_no_dependency_explains_a_start(pairs):
    # three independent messages share a sender or a receiver port (one port): each starts when the previous arrives,
    # so the path is all three in id order, every link a freed port, not a dependency
    coll = Collective("allreduce", 4, 4000)
    ts = [Transfer(i, s, d, (region("in", 0, 1000),), False, ()) for i, (s, d) in enumerate(pairs)]
    tr = simulate(Schedule(coll, "hand", ts), switch(4, 1e-6, 25e9))
    assert tr.critical_path() == [0, 1, 2]
    assert tr.start[1] == tr.arrive[0] and tr.start[2] == tr.arrive[1]


def test_csv_export_has_a_row_per_transfer(ring_trace, tmp_path):
    path = tmp_path / "t.csv"
    ring_trace.export(path)
    rows = list(csv.DictReader(path.open()))
    assert len(rows) == len(ring_trace.schedule.transfers)
    assert rows[0]["route"] == "gpu0->switch>switch->gpu1" and rows[0]["chunk"].startswith("out[")
    assert float(rows[0]["end_s"]) > float(rows[0]["arrive_s"]) >= float(rows[0]["start_s"])


def test_json_export_holds_summary_links_and_transfers(ring_trace, tmp_path):
    path = tmp_path / "t.json"
    assert ring_trace.export(path) == "json"
    data = json.loads(path.read_text())
    assert data["summary"]["time_s"] == pytest.approx(ring_trace.time)
    assert len(data["transfers"]) == len(ring_trace.schedule.transfers) and data["links"] and data["critical_path"]


def test_chrome_trace_has_a_track_per_rank_and_per_link(ring_trace, tmp_path):
    path = tmp_path / "t.trace.json"
    assert ring_trace.export(path) == "chrome"
    events = json.loads(path.read_text())["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"rank 0 send", "rank 3 recv", "gpu0->switch", "switch->gpu3"} <= names
    spans = [e for e in events if e["ph"] == "X"]
    assert spans and all(e["dur"] >= 0 and e["ts"] >= 0 for e in spans)
    assert sum(e["ph"] == "b" for e in events) == sum(e["ph"] == "e" for e in events) > 0
    assert not list(tmp_path.glob(".*tmp"))  # written atomically, no leftovers


def test_ideal_link_statistics_work_without_link_objects():
    sched = build_schedule(Collective("allgather", 8, 8 * 4096), "ring")
    tr = simulate(sched, ideal(8))
    assert tr.busiest_link()["name"].startswith("gpu") and len(tr.link_rows()) == 8
