"""A program -> Chakra execution traces, one per rank, for ASTRA-sim (and back: chakra.py).

Each operation is one node, its id the operation's index on the rank:

| operation | node |
|---|---|
| compute | COMP_NODE, `duration_micros` (whole microseconds, what ASTRA-sim replays), `duration_s` (exact) |
| a collective | COMM_COLL_NODE, `comm_type`, `comm_size` (bytes, collsim's size), `pg_name` (the group's number, 1..) |
| send / recv | COMM_SEND_NODE / COMM_RECV_NODE, `comm_src`, `comm_dst`, `comm_size`, `comm_tag` (k-th message of the pair) |
| record / wait | METADATA_NODE (no work; ASTRA-sim passes it) |

`data_deps`: the previous operation on the same stream, the operations named in `after`, and for a wait the record of
its event, so ASTRA-sim runs the same order. Every node has `is_cpu_op` false (ASTRA-sim refuses communication on the
CPU). collsim's attributes ride along for the way back: `collsim_op`, `stream`, `op_name`, `after`, `event`, `dtype`,
`root`, `redop`, `algorithm`, `flops`, `gpu`, `mfu`; the metadata holds the groups' names and members and the
program's own fields. `comm_group.json` ({"1": [0, 1], ...}) is ASTRA-sim's --comm-group-configuration.
"""

from __future__ import annotations

import json
from typing import Any

from ..program.model import COMPUTE, RECORD, RECV, SEND, WAIT, Op, Program
from .chakra import COLL_NODE, COMM_TYPE, COMP, METADATA, SCHEMA
from .chakra import RECV as RECV_NODE
from .chakra import SEND as SEND_NODE
from .chakra_io import pb

VERSION = "0.0.4"  # the schema version ASTRA-sim's examples write


def export_program(program: Program) -> tuple[dict[int, list], dict[str, list[int]]]:
    """Per rank, the messages of its trace (metadata first); and the comm-group file's content."""
    lib = pb()
    pg = {name: str(i) for i, name in enumerate(program.groups, 1)}
    described = [{"pg_name": pg[n], "name": n, "ranks": list(m)} for n, m in program.groups.items()]
    top = {k: v for k, v in (("gpu", program.gpu), ("mfu", program.mfu)) if v is not None}
    top.update(program.meta)
    traces = {}
    for rank in range(program.world):
        meta = lib.GlobalMetadata(version=VERSION, attr=[
            _attr(lib, "schema", SCHEMA), _attr(lib, "rank", rank), _attr(lib, "world", program.world),
            _attr(lib, "groups", json.dumps(described)), _attr(lib, "program", json.dumps(top))])
        traces[rank] = [meta] + _nodes(lib, program.ops(rank), rank, pg)
    return traces, {pg[n]: list(m) for n, m in program.groups.items()}


def _nodes(lib: Any, ops: list[Op], rank: int, pg: dict[str, str]) -> list:
    last: dict[str, int] = {}
    named = {op.name: i for i, op in enumerate(ops) if op.name}
    records = {op.event: i for i, op in enumerate(ops) if op.op == RECORD}
    tags: dict[tuple[int, int], int] = {}
    out = []
    for i, op in enumerate(ops):
        deps = [last[op.stream]] if op.stream in last else []
        deps += [named[a] for a in op.after]
        if op.op == WAIT:
            deps.append(records[op.event])
        last[op.stream] = i
        node = lib.Node(id=i, name=op.name or op.op, type=_type(op), data_deps=sorted(set(deps)))
        node.attr.extend(_attr(lib, k, v) for k, v in _attrs(op, rank, pg, tags).items())
        if op.seconds is not None and (op.op == COMPUTE or op.is_collective):
            node.duration_micros = round(op.seconds * 1e6)
        out.append(node)
    return out


def _type(op: Op) -> int:
    if op.op == COMPUTE:
        return COMP
    if op.is_collective:
        return COLL_NODE
    return {SEND: SEND_NODE, RECV: RECV_NODE}.get(op.op, METADATA)


def _attrs(op: Op, rank: int, pg: dict[str, str], tags: dict[tuple[int, int], int]) -> dict[str, Any]:
    """Chakra's attributes of the node, then collsim's."""
    a: dict[str, Any] = {"is_cpu_op": False}
    if op.is_collective:
        a.update(comm_type=COMM_TYPE[op.op], comm_size=op.nbytes, pg_name=pg[op.group])
    elif op.is_p2p:
        pair = (rank, op.peer) if op.op == SEND else (op.peer, rank)
        tags[pair] = tags.get(pair, -1) + 1
        a.update(comm_src=pair[0], comm_dst=pair[1], comm_size=op.nbytes, comm_tag=tags[pair])
    a.update(collsim_op=op.op, stream=op.stream)
    if op.name:
        a["op_name"] = op.name
    if op.after:
        a["after"] = list(op.after)
    if op.event is not None:
        a["event"] = op.event
    if op.nbytes is not None:
        a["dtype"] = op.dtype
    if op.root is not None:
        a["root"] = op.root
    if op.is_collective and op.redop != "sum":
        a["redop"] = op.redop
    a.update({k: v for k, v in (("algorithm", op.algorithm), ("flops", op.flops), ("gpu", op.gpu), ("mfu", op.mfu))
              if v is not None})
    if op.seconds is not None and (op.op == COMPUTE or op.is_collective):
        a["duration_s"] = op.seconds
    return a


def _attr(lib: Any, name: str, value: Any) -> Any:
    """An AttributeProto of the type Chakra's tools write: bool, int64, double, string, or a string list."""
    if isinstance(value, bool):
        return lib.AttributeProto(name=name, bool_val=value)
    if isinstance(value, int):
        return lib.AttributeProto(name=name, int64_val=value)
    if isinstance(value, float):
        return lib.AttributeProto(name=name, double_val=value)
    if isinstance(value, list):
        return lib.AttributeProto(name=name, string_list=lib.StringList(values=[str(v) for v in value]))
    return lib.AttributeProto(name=name, string_val=str(value))
