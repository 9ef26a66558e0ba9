"""Bad PyTorch profiler traces for `collsim import-trace` (issue 24): each refused with one line naming the file or
field, the bad value and what is accepted, before any program is written. Built from the real traces in
tests/data/traces (benchmarks/make_traces.py), cut, renumbered or swapped."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import app.cli  # noqa: F401  (imported once here, so each forked case starts warm)
from simulator.traces.kineto import MAX_EVENTS

from .harness import Case, run_case

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
DDP0 = gzip.decompress((TRACES / "ddp-2r" / "rank0.json.gz").read_bytes())
DDP1 = gzip.decompress((TRACES / "ddp-2r" / "rank1.json.gz").read_bytes())
FSDP1 = gzip.decompress((TRACES / "fsdp-2r" / "rank1.json.gz").read_bytes())


def _with_info(raw: bytes, **info) -> bytes:
    """The trace with distributedInfo fields replaced."""
    data = json.loads(raw)
    data["distributedInfo"].update(info)
    return json.dumps(data).encode()


MILLION = b'{"traceEvents": [' + b",".join([b'{"ph": "X"}'] * 1_000_000) + b'], "distributedInfo": {}}'
COLLSIM_TRACE = json.dumps({"traceEvents": [{"name": "rank 0", "ph": "M", "pid": 10}], "displayTimeUnit": "ns",
                            "otherData": {"collsim": {}}})
OUT = ["--out", "p.yaml"]


def _case(tag: str, files: dict[str, bytes | str], field: str, value: str, accepted: str, extra: list[str] | None = None,
          timeout_s: float = 5.0) -> Case:
    return Case(f"import-trace-{tag}", ["import-trace", *files, *OUT, *(extra or [])], field, value, accepted, files,
                outputs=["p.yaml"], timeout_s=timeout_s)


CASES = [
    _case("truncated-json", {"r0.json": DDP0[:len(DDP0) // 2], "r1.json": DDP1}, "trace", "r0.json: not valid JSON",
          "expected a complete trace"),
    _case("truncated-gzip", {"r0.json.gz": gzip.compress(DDP0)[:2000], "r1.json": DDP1}, "trace", "cannot decompress",
          "expected a whole gzip file"),
    _case("empty", {"r0.json": b"", "r1.json": DDP1}, "trace", "r0.json is empty", "expected a PyTorch profiler"),
    _case("missing-rank", {"r0.json": DDP0}, "ranks", "missing rank(s) 1", "expected one trace file per rank"),
    _case("rank-twice", {"a.json": DDP0, "b.json": DDP0}, "trace", "rank 0 again (also a.json)",
          "expected one trace per rank"),
    _case("world-differs", {"r0.json": DDP0, "r1.json": _with_info(DDP1, world_size=4)}, "trace",
          "world_size 4, but r0.json says 2", "expected the traces of one run"),
    _case("rank-outside-world", {"r0.json": DDP0, "r1.json": _with_info(DDP1, rank=5)}, "trace",
          "distributedInfo rank 5 of world_size 2", "expected 0 <= rank < world_size"),
    _case("other-tool", {"r0.json": COLLSIM_TRACE}, "trace", "no distributedInfo with rank and world_size",
          "expected the trace of one rank of a torch.distributed run"),
    _case("json-list", {"r0.json": "[1, 2, 3]"}, "trace", "the JSON holds a list", "expected an object with traceEvents"),
    _case("no-trace-events", {"r0.json": '{"schemaVersion": 1}'}, "trace", "no traceEvents list",
          "expected a PyTorch profiler (Kineto) trace"),
    _case("million-events", {"r0.json.gz": gzip.compress(MILLION)}, "trace", "about 1,000,000 events",
          f"over the limit of {MAX_EVENTS:,}", timeout_s=10.0),
    _case("different-steps", {"r0.json": DDP0, "r1.json": FSDP1}, "trace", "on rank 1 but allreduce 514KiB float32 on rank 0",
          "expected every rank's trace of the same step"),
    _case("step-missing", {"r0.json": DDP0, "r1.json": DDP1}, "step", "3 in r0.json", "expected 0..0", ["--step", "3"]),
    _case("scale-zero", {"r0.json": DDP0, "r1.json": DDP1}, "compute-scale", "0.0", "expected a factor > 0",
          ["--compute-scale", "0"]),
    _case("out-missing-folder", {"r0.json": DDP0, "r1.json": DDP1}, "out", "'missing/p.yaml'",
          "expected a file path in an existing, writable directory", ["--out", "missing/p.yaml"]),
    _case("out-suffix", {"r0.json": DDP0, "r1.json": DDP1}, "out", "'p.txt'", "expected a name ending in .yaml, .yml, .json",
          ["--out", "p.txt"]),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_trace(case, tmp_path):
    result = run_case(case, tmp_path)
    assert result.status != 0


def test_case_ids_are_unique():
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids))
