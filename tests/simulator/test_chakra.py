"""Chakra execution traces: import (simulator/traces/chakra.py) and export (chakra_export.py), on the real traces of
tests/data/chakra (ASTRA-sim's examples, one rank of a PyTorch run converted by chakra) and on hand-written programs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collsim.chakra import ExportChakraRequest
from collsim.import_trace import ImportTraceRequest
from simulator.program.loader import program_from_dict, program_to_dict
from simulator.program.run import run_program
from simulator.topology import ideal
from simulator.traces.chakra_io import write_et

pytest.importorskip("google.protobuf")
from google.protobuf.internal.decoder import _DecodeVarint32  # noqa: E402  (protobuf's own reader, as protolib's)

from simulator.traces import et_def_pb2 as pb  # noqa: E402

CHAKRA = Path(__file__).resolve().parents[1] / "data" / "chakra"
CHAKRA_ATTRS = {"is_cpu_op", "comm_type", "comm_size", "pg_name", "comm_src", "comm_dst", "comm_tag"}

# Every kind of operation and field: two streams joined by an event and by `after`, named and unnamed calls on three
# groups, a rooted call with its redop, a measured time, an algorithm, compute in time and in flops, a send and a recv.
EVERY_KIND = {
    "world": 4, "gpu": "h100", "mfu": 0.5, "name": "every kind", "groups": {"tp0": [0, 1], "tp1": [2, 3], "all": "0-3"},
    "ranks": {r: [
        {"op": "compute", "time": "1500us", "stream": "compute", "name": "fwd"},
        {"op": "allreduce", "group": f"tp{r // 2}", "size": "4MiB", "dtype": "float32", "stream": "compute",
         "name": "act", "time": "250us", "algorithm": "ring"},
        {"op": "compute", "flops": 1.0e12, "stream": "compute"},
        {"op": "record", "event": "grads", "stream": "compute"},
        {"op": "wait", "event": "grads", "stream": "comm"},
        {"op": "reduce", "group": "all", "size": "1MiB", "root": 2, "redop": "max", "stream": "comm"},
        {"op": "send" if r < 2 else "recv", "peer": (r + 2) % 4, "size": "64KiB", "stream": "pp"},
        {"op": "allgather", "group": "all", "size": "8MiB", "stream": "comm", "name": "gather"},
        {"op": "compute", "time": "2ms", "stream": "compute", "after": ["gather"], "name": "opt"},
    ] for r in range(4)},
}


def _export(program: dict, tmp_path: Path, name: str = "step") -> tuple[list[str], dict]:
    """The program's traces (rank order) and comm-group file, as `collsim export-chakra` writes them."""
    src = tmp_path / f"{name}.json"
    src.write_text(json.dumps(program))
    result = ExportChakraRequest(str(src), str(tmp_path / "et")).run()
    for f in result.files():
        f.content(f.path) if callable(f.content) else Path(f.path).write_text(f.content)
    return [str(tmp_path / "et" / f"{name}.{r}.et") for r in range(program["world"])], result.groups


def _decode(path: str) -> tuple:
    """A trace decoded as chakra's protolib.decodeMessage does it: varint length, then the message."""
    raw, pos, messages = Path(path).read_bytes(), 0, []
    while pos < len(raw):
        size, pos = _DecodeVarint32(raw, pos)
        messages.append(raw[pos:pos + size])
        pos += size
    meta = pb.GlobalMetadata.FromString(messages[0])
    return meta, [pb.Node.FromString(m) for m in messages[1:]]


def _attrs(node) -> dict:
    return {a.name: getattr(a, a.WhichOneof("value")) for a in node.attr}


def test_round_trip_gives_the_same_program(tmp_path):
    files, _ = _export(EVERY_KIND, tmp_path)
    back = ImportTraceRequest(files=tuple(files)).run()
    assert program_to_dict(back.program) == program_to_dict(program_from_dict(EVERY_KIND))
    assert back.imported.unmapped == []


@pytest.mark.parametrize("name", ["ddp2", "swapped"])
def test_round_trip_of_the_corpus_programs(tmp_path, name):
    import yaml

    data = yaml.safe_load((CHAKRA.parent / "programs" / f"{name}.yaml").read_text())
    files, _ = _export(data, tmp_path, name)
    assert program_to_dict(ImportTraceRequest(files=tuple(files)).run().program) == program_to_dict(program_from_dict(data))


def test_exported_nodes_hold_what_astra_sim_reads(tmp_path):
    files, groups = _export(EVERY_KIND, tmp_path)
    assert groups == {"1": [0, 1], "2": [2, 3], "3": [0, 1, 2, 3]}  # group numbers 1.. (ASTRA-sim reserves 0)
    _, nodes = _decode(files[0])
    assert [n.id for n in nodes] == list(range(9))
    ar = nodes[1]
    assert (ar.type, _attrs(ar)["comm_type"], _attrs(ar)["comm_size"], _attrs(ar)["pg_name"]) == \
        (pb.COMM_COLL_NODE, pb.ALL_REDUCE, 4 * 2**20, "1")
    assert list(ar.data_deps) == [0]  # after fwd, on the same stream
    assert nodes[0].type == pb.COMP_NODE and nodes[0].duration_micros == 1500
    assert list(nodes[4].data_deps) == [3]  # the wait: its event's record (first op of stream comm)
    send = _attrs(nodes[6])
    assert nodes[6].type == pb.COMM_SEND_NODE and (send["comm_src"], send["comm_dst"], send["comm_tag"], send["comm_size"]) \
        == (0, 2, 0, 64 * 1024)
    assert sorted(nodes[8].data_deps) == [3, 7]  # opt: the compute stream's previous op (the record) and after: gather
    assert all(_attrs(n)["is_cpu_op"] is False for n in nodes)  # ASTRA-sim refuses communication on the CPU


def _strip(files: list[str]) -> None:
    """Leave only what Chakra's own tools write: no collsim attributes, no metadata."""
    for path in files:
        _, nodes = _decode(path)
        for n in nodes:
            keep = [a for a in n.attr if a.name in CHAKRA_ATTRS]
            del n.attr[:]
            n.attr.extend(keep)
        write_et(path, [pb.GlobalMetadata(version="0.0.4")] + nodes)


def test_without_collsims_attributes_the_same_step(tmp_path):
    """The nodes, comm types, sizes, groups (from the comm-group file) and data_deps alone give a program whose step
    on the engine is the original's: the dependencies are rebuilt as streams and events, not copied."""
    program = json.loads(json.dumps(EVERY_KIND))
    for ops in program["ranks"].values():
        ops[2] = {"op": "compute", "time": "700us", "stream": "compute"}  # whole microseconds: duration_micros is exact
    files, groups = _export(program, tmp_path)
    (tmp_path / "groups.json").write_text(json.dumps(groups))
    _strip(files)
    back = ImportTraceRequest(files=tuple(files), comm_groups=str(tmp_path / "groups.json")).run()
    assert set(back.program.groups) == {"pg1", "pg2", "pg3"}
    machine = ideal(4, 2e-6, 25e9)
    original = run_program(program_from_dict(program), machine, timing="measured").step_time
    assert run_program(back.program, machine, timing="measured").step_time == pytest.approx(original, rel=1e-12)


def test_astra_sim_allreduce_example_is_one_world_allreduce_of_1mib():
    files = tuple(str(p) for p in sorted((CHAKRA / "astra-sim-allreduce-4npus").glob("*.et")))
    result = ImportTraceRequest(files=files).run()
    assert program_to_dict(result.program)["groups"] == {"world": [0, 1, 2, 3]}  # no pg_name: the world
    for r in range(4):
        (op,) = result.program.ops(r)
        assert (op.op, op.group, op.nbytes) == ("allreduce", "world", 1024 * 1024)  # generator: 1 MB x 1024 x 1024
    # a ring all-reduce on ideal links of 2 us and 25 GB/s: 2(p-1) steps of a quarter each, 6 x (2 us + 262,144 B / 25 GB/s)
    step = run_program(result.program, ideal(4, 2e-6, 25e9)).step_time
    assert step == pytest.approx(6 * (2e-6 + 262144 / 25e9), rel=1e-9)


def test_astra_sim_alltoall_example():
    files = tuple(str(p) for p in sorted((CHAKRA / "astra-sim-alltoall-4npus").glob("*.et")))
    result = ImportTraceRequest(files=files).run()
    assert {(op.op, op.nbytes) for r in range(4) for op in result.program.ops(r)} == {("alltoall", 1024 * 1024)}


def test_pytorch_trace_maps_gpu_calls_and_lists_host_operators():
    result = ImportTraceRequest(files=(str(CHAKRA / "chakra-pytorch-1rank" / "chakra.0.et.gz"),)).run()
    ops = result.imported.ops[0]
    # 3,643 COMP_NODEs; of the 21 COMM_COLL_NODEs, the 7 GPU-side ones carry comm_type: 5 all-reduces, 2 broadcasts
    assert (ops["compute"], ops["allreduce"], ops["broadcast"]) == (3643, 5, 2)
    unmapped = {u["name"]: u["count"] for u in result.imported.unmapped}
    assert sum(unmapped.values()) == 14 and all(name.startswith("COMM_COLL_NODE c10d::") for name in unmapped)
    assert all("no comm_type" in u["why"] for u in result.imported.unmapped)
    assert set(result.program.streams(0)) >= {"cpu", "compute"}  # host operators and kernels on their own lanes


def test_pg_name_without_a_comm_group_file_is_its_callers(tmp_path):
    lib = pb
    for r in range(4):
        node = lib.Node(id=7, name="ar", type=lib.COMM_COLL_NODE, attr=[
            lib.AttributeProto(name="comm_type", int64_val=lib.ALL_GATHER),
            lib.AttributeProto(name="comm_size", int64_val=3),  # odd: int8 elements
            lib.AttributeProto(name="pg_name", string_val=str(1 + r // 2))])
        write_et(str(tmp_path / f"t.{r}.et"), [lib.GlobalMetadata(version="0.0.4"), node])
    result = ImportTraceRequest(files=tuple(str(tmp_path / f"t.{r}.et") for r in range(4))).run()
    assert program_to_dict(result.program)["groups"] == {"pg1": [0, 1], "pg2": [2, 3]}
    assert result.program.ops(3)[0].dtype == "int8"
    assert any("members taken as the ranks that call them" in n for n in result.imported.notes)


def test_dependencies_on_other_streams_become_one_event_each(tmp_path):
    """comp A; two calls that need A (on two comm chains); comp B needs both calls: B waits for each call once, and
    each call's stream waits for A once."""
    lib = pb
    coll = [lib.AttributeProto(name="comm_type", int64_val=lib.ALL_REDUCE),
            lib.AttributeProto(name="comm_size", int64_val=1024)]
    nodes = [lib.Node(id=1, type=lib.COMP_NODE, duration_micros=5),
             lib.Node(id=2, type=lib.COMM_COLL_NODE, data_deps=[1], attr=coll),
             lib.Node(id=3, type=lib.COMM_COLL_NODE, data_deps=[1], attr=coll),
             lib.Node(id=4, type=lib.COMP_NODE, duration_micros=3, data_deps=[1, 2, 3])]
    write_et(str(tmp_path / "d.0.et"), [lib.GlobalMetadata(), *nodes])
    ops = program_to_dict(ImportTraceRequest(files=(str(tmp_path / "d.0.et"),)).run().program)["ranks"][0]
    assert [(o["op"], o.get("stream"), o.get("event")) for o in ops] == [
        ("compute", "compute", None), ("record", "compute", "n1"),
        ("wait", "comm", "n1"), ("allreduce", "comm", None), ("record", "comm", "n2"),
        ("wait", "comm1", "n1"), ("allreduce", "comm1", None), ("record", "comm1", "n3"),
        ("wait", "compute", "n2"), ("wait", "compute", "n3"), ("compute", "compute", None)]


def test_round_trip_of_a_moe_step(tmp_path):
    """Sends and receives on a stream per peer, events joining them, and a group no call uses."""
    from simulator.program.moe import MoeSpec, generate_moe, parse_routing
    from simulator.program.presets import get_gpu, get_model

    model = get_model("mixtral-8x7b")
    data = program_to_dict(generate_moe(MoeSpec(model, get_gpu("h100"), 4, 64, parse_routing("zipf:1", 8, 4), 1)))
    files, _ = _export(data, tmp_path, "moe")
    assert program_to_dict(ImportTraceRequest(files=tuple(files)).run().program) == program_to_dict(program_from_dict(data))


def test_traces_that_do_not_match_are_imported_with_a_note(tmp_path):
    """Rank 0's trace all-reduces 1 KiB, rank 1's 2 KiB: the program is written and the mismatch said."""
    lib = pb
    for r in range(2):
        node = lib.Node(id=1, type=lib.COMM_COLL_NODE, attr=[
            lib.AttributeProto(name="comm_type", int64_val=lib.ALL_REDUCE),
            lib.AttributeProto(name="comm_size", int64_val=1024 * (r + 1))])
        write_et(str(tmp_path / f"m.{r}.et"), [lib.GlobalMetadata(), node])
    notes = ImportTraceRequest(files=(str(tmp_path / "m.0.et"), str(tmp_path / "m.1.et"))).run().imported.notes
    assert any(n.startswith("1 problem(s) of matching or order, the first: mismatch") and "2KiB" in n for n in notes)


def test_node_budget_is_refused_while_reading(tmp_path):
    """The limit on nodes over all traces (MAX_NODES) counts as the file is read: here a budget of 2 for 3 nodes."""
    from simulator.errors import CollsimError
    from simulator.traces.chakra_io import read_et

    path = str(tmp_path / "b.0.et")
    write_et(path, [pb.GlobalMetadata()] + [pb.Node(id=i, type=pb.COMP_NODE) for i in range(3)])
    assert len(read_et(path, 0, budget=3).nodes) == 3
    with pytest.raises(CollsimError, match="over 2 nodes, the limit of 2,000,000 over all traces"):
        read_et(path, 0, budget=2)
