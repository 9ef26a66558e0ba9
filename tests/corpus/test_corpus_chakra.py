"""Bad Chakra execution traces for `collsim import-trace`, bad input to `collsim export-chakra` and to `collsim scenario
moe` (issue 24): each
refused with one line naming the file or field, the bad value and what is accepted, before anything is written. Built
from ASTRA-sim's 4-rank all-reduce example in tests/data/chakra, cut, renamed or swapped, and from nodes made here."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import app.cli  # noqa: F401  (imported once here, so each forked case starts warm)

from .harness import Case, run_case

pb = pytest.importorskip("simulator.traces.et_def_pb2")

DATA = Path(__file__).resolve().parents[1] / "data"
AR = [(DATA / "chakra" / "astra-sim-allreduce-4npus" / f"all_reduce.{r}.et").read_bytes() for r in range(4)]
KINETO = gzip.decompress((DATA / "traces" / "ddp-2r" / "rank0.json.gz").read_bytes())
LOG = (DATA / "nccl-tests" / sorted(p.name for p in (DATA / "nccl-tests").iterdir())[0]).read_bytes()
OUT = ["--out", "p.yaml"]


def _stream(*messages) -> bytes:
    """Messages length-prefixed, as chakra's protolib.encodeMessage writes them (sizes here stay under 128 bytes)."""
    out = b""
    for m in messages:
        body = m.SerializeToString()
        assert len(body) < 128
        out += bytes([len(body)]) + body
    return out


def _nodes(*nodes) -> bytes:
    return _stream(pb.GlobalMetadata(version="0.0.4"), *nodes)


def _ranks(first: bytes, rest: list[bytes] = AR[1:]) -> dict[str, bytes]:
    return {"t.0.et": first, **{f"t.{r}.et": raw for r, raw in enumerate(rest, 1)}}


def _case(tag: str, files: dict[str, bytes | str], field: str, value: str, accepted: str,
          extra: list[str] | None = None, argv: list[str] | None = None) -> Case:
    names = [n for n in files if n.endswith((".et", ".json", ".gz")) and n != "g.json"]  # g.json: a comm-group file
    return Case(f"chakra-{tag}", argv or ["import-trace", *names, *OUT, *(extra or [])], field, value, accepted, files,
                outputs=["p.yaml"], timeout_s=5.0)


COMP = pb.Node(id=1, type=pb.COMP_NODE, duration_micros=5)
CASES = [
    _case("truncated", _ranks(AR[0][:50]), "trace", "t.0.et: truncated, or not a Chakra trace: message 1 at byte 8 needs 72",
          "expected a complete Chakra execution trace"),
    _case("cut-length", _ranks(AR[0][:8] + b"\xff"), "trace", "message 1's length at byte 8 does not end",
          "expected a stream of length-delimited protobuf messages"),
    _case("empty", _ranks(b""), "trace", "t.0.et is empty", "expected a Chakra execution trace"),
    _case("truncated-gzip", _ranks(gzip.compress(AR[0])[:20]), "trace", "cannot decompress", "expected a whole gzip file"),
    _case("kineto-json", _ranks(KINETO), "trace", "holds JSON, not a Chakra execution trace",
          "a PyTorch profiler trace is read from a .json or .json.gz name"),
    _case("nccl-tests-log", _ranks(LOG), "trace", "message 0 is not a Chakra GlobalMetadata",
          "expected a Chakra execution trace (GlobalMetadata, then nodes)"),
    _case("missing-rank", {"t.0.et": AR[0], "t.1.et": AR[1], "t.3.et": AR[3]}, "trace", "rank 2 missing",
          "expected ranks 0..2, one file each"),
    _case("rank-twice", {"a/t.0.et": AR[0], "b/t.0.et": AR[1]}, "trace", "rank 0 again (also a/t.0.et)",
          "expected one file per rank"),
    _case("no-rank-in-name", {"t.0.et": AR[0], "other.et": AR[1]}, "trace", "other.et: no rank in the name",
          "expected every file named <prefix>.<rank>.et"),
    _case("mixed-kinds", {"t.0.et": AR[0], "r1.json": KINETO}, "files", "'t.0.et' is a Chakra trace but 'r1.json' is not",
          "expected one kind of trace for every rank"),
    _case("step", _ranks(AR[0]), "step", "1", "expected no --step with .et files", ["--step", "1"]),
    _case("comm-groups-for-kineto", {"r0.json": KINETO}, "comm-groups", "'g.json'", "expected .et files with it",
          ["--comm-groups", "g.json"]),
    _case("comm-groups-not-a-mapping", {**_ranks(AR[0]), "g.json": "[0, 1]"}, "comm-groups", "not a mapping",
          'expected ASTRA-sim\'s comm-group file, e.g. {"1": [0, 1], "2": [2, 3]}', ["--comm-groups", "g.json"]),
    _case("comm-groups-rank-outside", {**_ranks(AR[0]), "g.json": json.dumps({"1": [0, 9]})}, "comm-groups",
          "group 1: rank 9 is not in a world of 4", "expected ranks 0..3", ["--comm-groups", "g.json"]),
    _case("dangling-dep", {"t.0.et": _nodes(pb.Node(id=2, type=pb.COMP_NODE, data_deps=[9]))}, "trace",
          "node 2: data_deps: 9 is no node of this trace", "expected ids of nodes in the same file"),
    _case("dep-cycle", {"t.0.et": _nodes(pb.Node(id=1, type=pb.COMP_NODE, data_deps=[2]),
                                         pb.Node(id=2, type=pb.COMP_NODE, data_deps=[1]))}, "trace",
          "node 1's data_deps form a cycle", "expected a dependency graph without cycles"),
    _case("id-twice", {"t.0.et": _nodes(COMP, COMP)}, "trace", "node id 1 twice", "expected unique node ids"),
    _case("unknown-node-type", {"t.0.et": _nodes(pb.Node(id=1, type=42))}, "trace", "type 42 is no Chakra node type",
          "expected one of INVALID_NODE"),
    _case("group-not-a-member", {**_ranks(_nodes(pb.Node(id=1, type=pb.COMM_COLL_NODE, attr=[
        pb.AttributeProto(name="comm_type", int64_val=0), pb.AttributeProto(name="comm_size", int64_val=64),
        pb.AttributeProto(name="pg_name", string_val="1")])), [AR[1]]), "g.json": json.dumps({"1": [1]})},
        "group", "rank 0 is not a member of group 'pg1' [1]", "expected a group that contains this rank",
        ["--comm-groups", "g.json"]),
    Case("moe-routing-unknown", ["scenario", "moe", "--model", "mixtral-8x7b", "--gpus", "8", "--routing", "pareto"],
         "routing", "'pareto'", "expected uniform, zipf:S"),
    Case("moe-routing-too-skewed", ["scenario", "moe", "--model", "mixtral-8x7b", "--gpus", "8", "--routing", "zipf:3"],
         "routing", "zipf s=3", "expected a flatter distribution"),
    Case("moe-dense-model", ["scenario", "moe", "--model", "llama2-7b", "--gpus", "8"], "model", "Llama-2 7B has no experts",
         "expected a MoE model"),
    Case("moe-ep-not-all", ["scenario", "moe", "--model", "mixtral-8x7b", "--gpus", "8", "--ep", "4"], "ep", "4",
         "expected --ep 8 or none"),
    Case("moe-routing-file", ["scenario", "moe", "--model", "mixtral-8x7b", "--gpus", "2", "--routing", "r.json"],
         "routing", "r.json", "expected a list of 8 token counts per expert", {"r.json": "[1, 2, 3]"}),
    Case("colocate-jobs-file-without-jobs", ["colocate", "--topology", "ideal:4", "p.yaml"], "jobs", "p.yaml: no jobs section",
         "expected a mapping with jobs:", {"p.yaml": (DATA / "programs" / "ddp2.yaml").read_text()}, timeout_s=5.0),
    Case("colocate-jobs-file-one-job", ["colocate", "--topology", "ideal:4", "j.yaml"], "jobs", "jobs: [{",
         "expected a list of 2 to 64 jobs", {"j.yaml": "jobs: [{program: p.yaml, devices: 0-1}]\n"}, timeout_s=5.0),
    Case("colocate-jobs-file-missing-program", ["colocate", "--topology", "ideal:4", "j.yaml"], "job", "no file 'nope.yaml'",
         "expected a program file", {"j.yaml": "jobs:\n  - {program: nope.yaml, devices: 0-1}\n"
                                               "  - {program: nope.yaml, devices: 2-3}\n"}, timeout_s=5.0),
    Case("lint-program-of-a-jobs-file", ["lint-program", "j.yaml"], "jobs", "a file of jobs",
         "run by collsim colocate", {"j.yaml": "jobs: []\n"}, timeout_s=5.0),
    Case("chakra-export-out-dir-is-a-file", ["export-chakra", "p.yaml", "--out-dir", "f"], "out-dir", "'f' is a file",
         "expected a directory", {"p.yaml": (DATA / "programs" / "ddp2.yaml").read_text(), "f": "x"}, timeout_s=5.0),
    Case("chakra-export-out-dir-under-a-file", ["export-chakra", "p.yaml", "--out-dir", "f/sub"], "out-dir",
         "cannot make 'f/sub'", "expected a directory that can be made and written",
         {"p.yaml": (DATA / "programs" / "ddp2.yaml").read_text(), "f": "x"}, timeout_s=5.0),
    Case("chakra-export-bad-prefix", ["export-chakra", "p.yaml", "--out-dir", "d", "--prefix", "a/b"], "prefix", "'a/b'",
         "expected a file name without '/'", {"p.yaml": (DATA / "programs" / "ddp2.yaml").read_text()}, timeout_s=5.0),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_chakra_trace(case, tmp_path):
    result = run_case(case, tmp_path)
    assert result.status != 0


def test_case_ids_are_unique():
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids))
