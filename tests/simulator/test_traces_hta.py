"""A public NCCL trace set (Holistic Trace Analysis's test data: ranks 0 and 1 of a 128-GPU run, older torch) through
`collsim import-trace`: the report is checked against counts read from the JSON here, independently of the reader."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from collsim.import_trace import ImportTraceRequest
from simulator.errors import CollsimError

HTA = Path(__file__).resolve().parents[1] / "data" / "traces" / "hta-sampled-2of128"
FILES = tuple(str(HTA / f"sampled_rank-{r}.json.gz") for r in (0, 1))


def _trace(path: str) -> dict:
    with gzip.open(path) as f:
        return json.load(f)


def _step_c10d(trace: dict) -> Counter:
    """The c10d operators issued within the first ProfilerStep span, by name."""
    spans = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    step = min((e for e in spans if e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
    return Counter(e["name"] for e in spans if e["name"].startswith("c10d::")
                   and step["ts"] <= e["ts"] <= step["ts"] + step["dur"])


def test_partial_world_lists_every_call_of_each_rank_with_a_reason():
    result = ImportTraceRequest(files=FILES).run()
    data = result.data()
    traces = [_trace(f) for f in FILES]
    world = traces[0]["distributedInfo"]["world_size"]
    assert data["world"] == world == 128 and data["program"] is None
    assert data["missing"] == [r for r in range(world) if r not in {t["distributedInfo"]["rank"] for t in traces}]
    for t in traces:
        rank = t["distributedInfo"]["rank"]
        reported = Counter({u["name"]: u["count"] for u in data["unmapped"] if u["rank"] == rank})
        mapped = Counter(c["issued"] for c in data["calls"] if c["rank"] == rank)
        assert reported + mapped == _step_c10d(t)
    assert "missing rank(s) 2, 3," in result.text() and "no program" in result.text()


def test_groups_are_not_guessed_without_pg_config():
    """No pg_config: the all-gather gathers 64 buffers in a world of 128, so taking the world as its group is wrong."""
    trace = _trace(FILES[0])
    assert "pg_config" not in trace["distributedInfo"]
    gather = next(e for e in trace["traceEvents"] if e.get("name") == "c10d::_allgather_base_")
    (out,), (inp,) = gather["args"]["Input Dims"][:2]
    assert out // inp == 64 != trace["distributedInfo"]["world_size"]
    data = ImportTraceRequest(files=FILES).run().data()
    assert data["calls"] == []
    assert {u["why"].split(":")[0] for u in data["unmapped"] if "allgather" in u["name"]} == {"process group unknown"}


def test_old_record_param_comms_are_named_in_a_note():
    params = sum(e.get("name") == "record_param_comms" and e.get("ph") == "X" for e in _trace(FILES[0])["traceEvents"])
    assert params and not any("Collective name" in (e.get("args") or {}) for e in _trace(FILES[0])["traceEvents"]
                              if e.get("name") == "record_param_comms")
    notes = ImportTraceRequest(files=FILES[:1]).run().data()["notes"]
    assert f"{params} record_param_comms event(s) without 'Collective name' (an older torch): calls read from the c10d " \
           "operators" in notes


def test_partial_world_with_out_is_refused(tmp_path):
    with pytest.raises(CollsimError, match="missing rank\\(s\\) 2, 3, .*without --out, the ranks given are listed"):
        ImportTraceRequest(files=FILES, out=str(tmp_path / "p.yaml")).run()
