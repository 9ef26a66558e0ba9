"""collsim import-trace: PyTorch profiler traces -> programs (simulator/traces/), on the real traces of
tests/data/traces (benchmarks/make_traces.py) and on small hand-made traces whose expected values are worked out by
hand in each test."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from collsim.import_trace import ImportTraceRequest
from simulator.errors import CollsimError
from simulator.program.loader import load_program, program_from_dict
from simulator.program.run import run_program
from simulator.topology import ideal
from simulator.traces.kineto import read_trace

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
LAYER = (256 * 256 + 256) * 4  # one Linear(256, 256) in float32: weight and bias, bytes


def _files(name: str) -> tuple[str, ...]:
    return tuple(str(p) for p in sorted((TRACES / name).glob("rank*.json.gz")))


def _replay(imported) -> float:
    program = program_from_dict(imported.program)
    return run_program(program, ideal(program.world, 2e-6, 25e9), timing="measured").step_time


def test_ddp_trace_holds_two_gradient_buckets_of_two_layers_each():
    imported = ImportTraceRequest(files=_files("ddp-2r")).run().imported
    # 4 layers, bucket_cap_mb=0.3 (314,573 B): a bucket closes once it passes the cap, so two layers per bucket
    assert [(c["op"], c["group"], c["bytes"], c["dtype"]) for c in imported.calls] == [("allreduce", "world", 2 * LAYER, "float32")] * 2
    assert imported.unmapped == []  # the barrier that starts each step lies before the ProfilerStep span


def test_fsdp_trace_gathers_each_layer_twice_and_reduce_scatters_it_once():
    imported = ImportTraceRequest(files=_files("fsdp-4r")).run().imported
    ops = [c["op"] for c in imported.calls]
    assert ops[:4] == ["allgather"] * 4  # forward: layers 0..3
    assert ops.count("allgather") == 8 and ops.count("reduce_scatter") == 4 and ops[-1] == "reduce_scatter"
    assert {c["bytes"] for c in imported.calls} == {LAYER}  # the whole layer: gathered, or reduced then scattered
    # gloo has no reduce-scatter: torch's gloo backend all-reduces, and the import says what ran
    assert {c["ran"] for c in imported.calls if c["op"] == "reduce_scatter"} == {"gloo:all_reduce"}


@pytest.mark.parametrize("name", ["ddp-2r", "ddp-4r", "fsdp-2r", "fsdp-4r"])
def test_replay_at_measured_times_gives_back_the_measured_step(name):
    """Every host span, wait, late start and call time taken from the traces, run on the engine: the step comes
    back to within 1% (the program loses no order or dependency); the step is at least each rank's own span, read
    here straight from the JSON."""
    imported = ImportTraceRequest(files=_files(name)).run().imported
    spans = []
    for f in _files(name):
        events = json.loads(gzip.decompress(Path(f).read_bytes()))["traceEvents"]
        spans += [e["dur"] * 1e-6 for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    assert imported.step_s >= max(spans) - 1e-9
    assert _replay(imported) == pytest.approx(imported.step_s, rel=0.01)


def _event(name: str, ts: float, dur: float, tid: int = 1, cat: str = "cpu_op", **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _rank(rank: int, issue: float, run: tuple[float, float], busy: list[tuple[float, float]], extra=()) -> dict:
    """A 2-rank gloo trace of one 10 ms step (microseconds): one all-reduce of 1,024 floats issued at `issue`, run by
    gloo over `run`, the step thread busy over `busy`."""
    events = [_event("ProfilerStep#0", 0, 10_000, cat="user_annotation"),
              _event("c10d::allreduce_", issue, 50, **{"Input Dims": [[[1024]]], "Input type": ["TensorList"]}),
              _event("gloo:all_reduce", run[0], run[1] - run[0], tid=2, cat="user_annotation",
                     **{"Input Dims": [[1024]], "Input type": ["float"]})]
    events += [_event("aten::mm", a, b - a) for a, b in busy] + list(extra)
    return {"traceEvents": events, "distributedInfo": {"backend": "gloo", "rank": rank, "world_size": 2,
                                                       "pg_config": [{"ranks": [0, 1]}]}}


def _write(tmp_path: Path, traces: list[dict]) -> tuple[str, ...]:
    paths = []
    for i, t in enumerate(traces):
        path = tmp_path / f"rank{i}.json"
        path.write_text(json.dumps(t))
        paths.append(str(path))
    return tuple(paths)


def test_a_hand_made_step_by_hand(tmp_path):
    """Rank 0 issues at 2 ms, gloo runs 2.1-5 ms, its thread idles 2.2-5.05 ms; rank 1 issues at 4 ms, runs
    4.05-5 ms, idles 4.1-5 ms. Both end the call at 5 ms (offset 0). The call: from the last issue, 4 ms, to 5 ms:
    1 ms. Rank 0: host 2 ms, host 0.2 ms, waits from 2.2 ms to 5 ms, host 5 ms (5 -> 10). Rank 1: host 4 ms, host
    0.1 ms, waits, host 5 ms. Replay: the call starts when both arrived (4 ms), ends at 5 ms; then 5 ms of host: 10 ms.
    Rank 1 begins its run at 4.3 ms instead: the call starts as late, so the replay charges 5 - 4 = 1 ms all the
    same (the backend's delay is the call's)."""
    files = _write(tmp_path, [_rank(0, 2000, (2100, 5000), [(0, 2200), (5050, 10_000)]),
                              _rank(1, 4000, (4050, 5000), [(0, 4100), (5000, 10_000)])])
    result = ImportTraceRequest(files=files).run()
    imp = result.imported
    assert imp.calls[0]["bytes"] == 4096 and imp.calls[0]["time_s"] == pytest.approx(1e-3)
    hosts = [(op["name"], op["time"]) for op in imp.program["ranks"][0] if op["op"] == "compute"]
    assert hosts == [("host0", "2000.000us"), ("host1", "200.000us"), ("host2", "5000.000us")]
    assert imp.step_s == pytest.approx(10e-3)
    assert _replay(imp) == pytest.approx(10e-3)
    late = _write(tmp_path, [_rank(0, 2000, (2100, 5000), [(0, 2200), (5050, 10_000)]),
                             _rank(1, 4000, (4300, 5000), [(0, 4100), (5000, 10_000)])])
    assert ImportTraceRequest(files=late).run().imported.calls[0]["time_s"] == pytest.approx(1e-3)


def test_calls_that_cannot_be_mapped_are_listed(tmp_path):
    alltoall = _event("c10d::alltoall_base_", 6000, 40)
    ran = _event("gloo:all_to_all", 6050, 100, tid=2, cat="user_annotation")
    traces = [_rank(r, 2000, (2100, 5000), [(0, 2200), (5050, 10_000)], (alltoall, ran)) for r in (0, 1)]
    result = ImportTraceRequest(files=_write(tmp_path, traces)).run()
    assert [(u["rank"], u["name"], u["count"]) for u in result.imported.unmapped] == [(0, "c10d::alltoall_base_", 1),
                                                                                      (1, "c10d::alltoall_base_", 1)]
    assert "# not mapped: rank 0: 1 x c10d::alltoall_base_" in result.text()
    assert result.data()["unmapped"][0]["why"].startswith("not a collective collsim maps")


def test_record_param_comms_gives_group_and_sizes(tmp_path):
    """An NCCL run's record_param_comms (field names of torch's ParamCommsUtils): an all-gather of 1,024 floats in,
    2,048 out, on ranks [0, 1]: 8,192 bytes gathered. Its GPU kernels are not read: no measured time, said so."""
    def rank(r: int) -> dict:
        comm = _event("record_param_comms", 1000, 20, **{"Collective name": "_allgather_base", "In msg nelems": 1024,
                                                          "Out msg nelems": 2048, "dtype": "Float",
                                                          "Process Group Ranks": "[0, 1]"})
        return {"traceEvents": [_event("ProfilerStep#0", 0, 3000, cat="user_annotation"), comm,
                                _event("aten::mm", 0, 3000)],
                "distributedInfo": {"backend": "nccl", "rank": r, "world_size": 2}}
    trace = read_trace(_write(tmp_path, [rank(0)])[0])
    call = trace.calls[0]
    assert (call.op, call.nbytes, call.dtype, call.members, call.end) == ("allgather", 8192, "float32", (0, 1), None)
    assert any("not read yet" in n for n in trace.notes)


def test_written_program_loads_with_measured_times(tmp_path):
    out = tmp_path / "ddp.yaml"
    result = ImportTraceRequest(files=_files("ddp-2r"), out=str(out)).run()
    (f,) = result.files()
    Path(f.path).write_text(f.content)
    program = load_program(out)
    calls = [op for op in program.ops(0) if op.is_collective]
    assert [op.seconds for op in calls] == pytest.approx([c["time_s"] for c in result.imported.calls], abs=1e-9)


def test_compute_scale_scales_host_spans_only():
    base = ImportTraceRequest(files=_files("ddp-2r")).run().imported.program
    fast = ImportTraceRequest(files=_files("ddp-2r"), compute_scale=0.5).run().imported.program

    def times(program, kind):
        return [float(op["time"][:-2]) for op in program["ranks"][0] if op["op"] == kind]
    assert times(fast, "compute") == pytest.approx([t * 0.5 for t in times(base, "compute")], abs=1e-3)
    assert times(fast, "allreduce") == times(base, "allreduce")


def test_bad_requests_are_refused_before_reading():
    with pytest.raises(CollsimError, match="files: none given"):
        ImportTraceRequest(files=())
    with pytest.raises(CollsimError, match="step: -1"):
        ImportTraceRequest(files=("a.json",), step=-1)
