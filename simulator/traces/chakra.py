"""Chakra execution traces (one file per rank) -> a program of collectives (docs/traces.md, "Chakra").

What each node becomes:

| node | operation |
|---|---|
| COMP_NODE | `compute` of `duration_micros` (or the exact `duration_s` collsim's export adds) |
| COMM_COLL_NODE with `comm_type`, `comm_size`, `pg_name` | the collective on that process group, `comm_size` bytes |
| COMM_SEND_NODE / COMM_RECV_NODE with `comm_dst` / `comm_src`, `comm_size` | `send` / `recv` |
| METADATA, MEM_LOAD and MEM_STORE nodes, barriers, nodes lacking a field | not mapped: listed, deps pass through |

Dependencies are the nodes' `data_deps` (what ASTRA-sim's feeder resolves); `ctrl_deps` (the call tree of a PyTorch
host trace: a parent encloses its children, it does not precede them) are counted and not read. Program order is file
order (a topological order by file position when a node comes before one it depends on). Streams: a node's `stream`
attribute (PyTorch's CUDA stream, or collsim's stream name), else chains of the dependency graph (each node continues
the stream of a dependency it is the first follower of, else starts one), so independent nodes stay concurrent. A
dependency on another stream becomes a record/wait event pair (`n<id>`). Process groups: a `pg_name` of "" or "0" is
the world (ASTRA-sim's rule); others take their members from ASTRA-sim's comm-group file (`{"1": [0, 1]}`), from the
metadata collsim's export writes, or else from the ranks that call them (said in a note).

A trace written by `collsim export-chakra` carries collsim's own attributes beside Chakra's (the op, stream and event
names, after, dtype, root, redop, algorithm, exact durations, flops): with them the import gives back the program
exactly; without them (ASTRA-sim ignores them and other tools do not write them) the same step, by the rules above.
"""

from __future__ import annotations

import heapq
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..collective import DTYPES, ROOTED
from ..errors import CollsimError
from ..units import format_size
from .chakra_io import EtTrace, attrs_of, pb

COLL = {0: "allreduce", 1: "reduce", 2: "allgather", 3: "gather", 4: "scatter", 5: "broadcast", 6: "alltoall",
        7: "reduce_scatter"}
COMM_TYPE = {op: code for code, op in COLL.items()}
NOT_MAPPED_COLL = {8: "REDUCE_SCATTER_BLOCK (its size meaning is not the reduce-scatter's)", 9: "BARRIER (no data)"}
COMP, SEND, RECV, COLL_NODE, METADATA = 4, 5, 6, 7, 1
WORLD_PGS = ("", "0")
SCHEMA = "collsim program"


@dataclass
class Node:
    """One mapped node: its operation (file form, without stream and dependencies) and where it sits."""

    id: int
    item: dict
    stream: str | None
    deps: list[int]
    own: dict  # collsim's attributes: op, stream, after, event (empty for other tools' traces)


@dataclass
class ChakraImport:
    """The program (file form), what was mapped and what not (per rank: count x kind and why), and notes."""

    program: dict
    ops: dict[int, Counter]
    unmapped: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def import_traces(traces: list[EtTrace], comm_groups: dict[str, list[int]] | None = None,
                  compute_scale: float = 1.0) -> ChakraImport:
    """The traces (ranks 0..n-1, each once) as one program."""
    world = _check_ranks(traces)
    meta = attrs_of(traces[0].metadata)
    ranks, unmapped, ignored = {}, [], 0
    for t in traces:
        nodes, missed = _map_rank(t, compute_scale)
        unmapped += [{"rank": t.rank, "count": n, "name": k, "why": why} for (k, why), n in missed.items()]
        ranks[t.rank] = nodes
        ignored += sum(len(n.ctrl_deps) for n in t.nodes)
    groups, pg_names, note = _groups(ranks, world, meta, comm_groups)
    program: dict[str, Any] = {"world": world}
    program.update(_program_top(meta))
    program["groups"] = groups
    program["ranks"] = {r: _ops(ranks[r], pg_names) for r in sorted(ranks)}
    ops = {r: Counter(item["op"] for item in items) for r, items in program["ranks"].items()}
    notes = [note] if note else []
    if ignored:
        notes.append(f"{ignored:,} ctrl_deps not read (the call tree of a host trace; data_deps order the nodes)")
    return ChakraImport(program, ops, unmapped, notes)


def _check_ranks(traces: list[EtTrace]) -> int:
    seen: dict[int, str] = {}
    for t in traces:
        if t.rank in seen:
            raise CollsimError(f"trace: {t.path}: rank {t.rank} again (also {seen[t.rank]}); expected one file per rank")
        seen[t.rank] = t.path
    world = len(traces)
    missing = [r for r in range(world) if r not in seen]
    if missing:
        extra = sorted(r for r in seen if r >= world)
        raise CollsimError(f"trace: rank {missing[0]} missing: {world} files hold ranks {', '.join(map(str, sorted(seen)))} "
                           f"(rank {extra[0]} is outside a world of {world}); expected ranks 0..{world - 1}, one file each")
    return world


def _program_top(meta: dict) -> dict:
    """The program's own fields (gpu, mfu, name, ...) from the metadata of collsim's export."""
    text = meta.get("program") if meta.get("schema") == SCHEMA else None
    return json.loads(text) if isinstance(text, str) else {}


# --- one rank: nodes -> operations -------------------------------------------------------------------------------

def _map_rank(trace: EtTrace, scale: float) -> tuple[list[Node], Counter]:
    """The rank's mapped nodes in program order; unmapped ones counted by (kind, why), their dependencies passed on."""
    by_id = _index(trace)
    missed: Counter = Counter()
    mapped: dict[int, Node] = {}
    through: dict[int, list[int]] = {}  # an unmapped node -> the mapped nodes it stands for
    for node in _order(trace, by_id):
        deps = sorted({m for d in node.data_deps for m in ([d] if d in mapped else through[d])})
        item, why = _item(node, attrs_of(node), trace.rank, scale)
        if item is None:
            missed[(_kind(node), why)] += 1
            through[node.id] = deps
            continue
        own = {k: v for k, v in attrs_of(node).items() if k in ("collsim_op", "stream", "after", "event")}
        stream = own.get("stream")
        mapped[node.id] = Node(node.id, item, stream if isinstance(stream, str) else
                               None if stream is None else f"stream{stream}", deps, own)
    nodes = list(mapped.values())
    _chain_streams(nodes, {n.id for n in trace.nodes if attrs_of(n).get("is_cpu_op") is True})
    return nodes, missed


def _index(trace: EtTrace) -> dict[int, Any]:
    by_id: dict[int, Any] = {}
    for node in trace.nodes:
        if node.id in by_id:
            raise CollsimError(f"trace: {trace.path}: node id {node.id} twice; expected unique node ids")
        by_id[node.id] = node
    for node in trace.nodes:
        bad = next((d for d in node.data_deps if d not in by_id), None)
        if bad is not None:
            raise CollsimError(f"trace: {trace.path}: node {node.id}: data_deps: {bad} is no node of this trace; expected "
                               "ids of nodes in the same file")
    return by_id


def _order(trace: EtTrace, by_id: dict[int, Any]) -> list:
    """File order when every node follows its dependencies, else the topological order nearest to it."""
    place = {node.id: i for i, node in enumerate(trace.nodes)}
    if all(place[d] < place[n.id] for n in trace.nodes for d in n.data_deps):
        return list(trace.nodes)
    waiting = {n.id: len(set(n.data_deps)) for n in trace.nodes}
    users: dict[int, list[int]] = {}
    for n in trace.nodes:
        for d in set(n.data_deps):
            users.setdefault(d, []).append(n.id)
    ready = [place[i] for i, k in waiting.items() if k == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        node = trace.nodes[heapq.heappop(ready)]
        out.append(node)
        for u in users.get(node.id, ()):
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, place[u])
    if len(out) < len(trace.nodes):
        stuck = next(n.id for n in trace.nodes if waiting[n.id] > 0)
        raise CollsimError(f"trace: {trace.path}: node {stuck}'s data_deps form a cycle; expected a dependency graph "
                           "without cycles")
    return out


def _kind(node: Any) -> str:
    name = pb().NodeType.Name(node.type)
    return f"{name} {node.name}" if node.name and node.type == COLL_NODE else name


def _item(node: Any, attrs: dict, rank: int, scale: float) -> tuple[dict | None, str]:
    """The node's operation in file form (no stream, no dependencies), or None and why not."""
    own = attrs.get("collsim_op")
    if own in ("record", "wait"):
        return {"op": own, "event": str(attrs.get("event"))}, ""
    if node.type == COMP:
        seconds = attrs["duration_s"] if "duration_s" in attrs else node.duration_micros * 1e-6
        item = {"op": "compute", "time": seconds * scale}
        if "flops" in attrs and scale == 1.0:
            item = {"op": "compute", "flops": attrs["flops"], **{k: attrs[k] for k in ("gpu", "mfu") if k in attrs}}
        return _named(item, attrs), ""
    if node.type == COLL_NODE:
        return _collective(node, attrs)
    if node.type in (SEND, RECV):
        return _p2p(node, attrs, rank)
    return None, "no operation of a program (zero time; its dependencies pass through it)"


def _named(item: dict, attrs: dict) -> dict:
    if "op_name" in attrs:
        item["name"] = str(attrs["op_name"])
    return item


def _size(attrs: dict) -> int | None:
    size = attrs.get("comm_size", attrs.get("tensor_size"))
    return size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None


def _dtype(attrs: dict, size: int) -> str:
    """collsim's dtype attribute, else bfloat16 for an even byte count, int8 for an odd one."""
    dtype = attrs.get("dtype")
    if isinstance(dtype, str) and dtype in DTYPES and size % DTYPES[dtype] == 0:
        return dtype
    return "bfloat16" if size % 2 == 0 else "int8"


def _collective(node: Any, attrs: dict) -> tuple[dict | None, str]:
    code, size = attrs.get("comm_type"), _size(attrs)
    if code in NOT_MAPPED_COLL:
        return None, NOT_MAPPED_COLL[code]
    if code not in COLL:
        return None, "no comm_type attribute (a host-side operator, or a tool that does not say which collective)" \
            if code is None else f"comm_type {code} is no Chakra collective"
    if size is None:
        return None, "no comm_size attribute"
    item = {"op": COLL[code], "group": str(attrs.get("pg_name", "")), "size": size, "dtype": _dtype(attrs, size)}
    for key in ("redop", "algorithm"):
        if key in attrs:
            item[key] = str(attrs[key])
    if "root" in attrs and item["op"] in ROOTED:
        item["root"] = int(attrs["root"])
    seconds = attrs.get("duration_s", node.duration_micros * 1e-6 if node.duration_micros else None)
    if seconds is not None:
        item["time"] = seconds
    return _named(item, attrs), ""


def _p2p(node: Any, attrs: dict, rank: int) -> tuple[dict | None, str]:
    send = node.type == SEND
    key = "comm_dst" if send else "comm_src"
    peer, size = attrs.get(key), _size(attrs)
    if not isinstance(peer, int) or isinstance(peer, bool):
        return None, f"no {key} attribute (the peer)"
    if size is None:
        return None, "no comm_size attribute"
    return _named({"op": "send" if send else "recv", "peer": peer, "size": size, "dtype": _dtype(attrs, size)}, attrs), ""


def _chain_streams(nodes: list[Node], cpu: set[int]) -> None:
    """Streams for nodes without one, as ASTRA-sim runs them: compute on one lane per rank ('cpu' for host operators,
    'compute' for the rest), communication concurrent: a call continues the stream of the first dependency whose chain
    it can extend (that dependency's last follower so far), else it starts one ('comm', 'comm1', ...)."""
    tail: dict[str, int] = {}  # stream -> id of its last node
    of: dict[int, str] = {}
    fresh = 0
    for n in nodes:
        if n.stream is None and n.item["op"] == "compute":
            n.stream = "cpu" if n.id in cpu else "compute"
        elif n.stream is None:
            n.stream = next((of[d] for d in n.deps if d in of and of[d].startswith("comm") and tail.get(of[d]) == d), None)
            if n.stream is None:
                n.stream = "comm" if fresh == 0 else f"comm{fresh}"
                fresh += 1
        of[n.id] = n.stream
        tail[n.stream] = n.id


# --- groups ------------------------------------------------------------------------------------------------------

def _groups(ranks: dict[int, list[Node]], world: int, meta: dict,
            given: dict[str, list[int]] | None) -> tuple[dict[str, list[int]], dict[str, str], str]:
    """The program's groups (name -> members), each pg_name's group name, and a note on where members came from."""
    used: dict[str, set[int]] = {}
    for rank, nodes in ranks.items():
        for n in nodes:
            if "group" in n.item:
                used.setdefault(n.item["group"], set()).add(rank)
    own = _own_groups(meta)
    groups = {name: members for name, members in own.values()}  # collsim's export: every group, called or not
    names = {pg: name for pg, (name, _) in own.items()}
    guessed = []
    for pg in sorted((p for p in used if p not in own), key=lambda p: (len(p), p)):
        if given is not None and pg in given:
            name, members = f"pg{pg}", list(given[pg])
        elif pg in WORLD_PGS:
            name, members = "world", list(range(world))
        else:
            name, members = f"pg{pg}", sorted(used[pg])
            guessed.append(pg)
        names[pg] = name
        groups[name] = members
    note = (f"process group(s) {', '.join(guessed)}: members taken as the ranks that call them (no comm-group file "
            "names them)") if guessed else ""
    return groups, names, note


def _own_groups(meta: dict) -> dict[str, tuple[str, list[int]]]:
    text = meta.get("groups") if meta.get("schema") == SCHEMA else None
    return {g["pg_name"]: (g["name"], g["ranks"]) for g in json.loads(text)} if isinstance(text, str) else {}


# --- operations in program order ---------------------------------------------------------------------------------

def _ops(nodes: list[Node], pg_names: dict[str, str]) -> list[dict]:
    """File-form operations: each node on its stream; collsim's after/events as written, other dependencies on another
    stream as record/wait pairs of events named n<id>."""
    cross = _cross(nodes)
    marked = {d for deps in cross.values() for d in deps}
    out: list[dict] = []
    for n in nodes:
        out += [{"op": "wait", "event": f"n{d}", "stream": n.stream} for d in cross[n.id]]
        item = dict(n.item)
        if "group" in item:
            item["group"] = pg_names[item["group"]]
        if n.own.get("after"):
            item["after"] = list(n.own["after"])
        out.append({"op": item.pop("op"), "stream": n.stream, **item})
        if n.id in marked:
            out.append({"op": "record", "event": f"n{n.id}", "stream": n.stream})
    return [_sized(item) for item in out]


def _cross(nodes: list[Node]) -> dict[int, list[int]]:
    """Per node, the dependencies its stream's order does not already give (directly or through an earlier wait):
    vector clocks per stream, so a dependency on an op at or before one already waited for is left out. collsim's own
    nodes have none: their stream order, after and events are the program's."""
    pos: dict[int, tuple[str, int]] = {}
    clock_of: dict[int, dict[str, int]] = {}
    last: dict[str, dict[str, int]] = {}
    count: dict[str, int] = {}
    out: dict[int, list[int]] = {}
    for n in nodes:
        clock = dict(last.get(n.stream, {}))
        need = []
        for d in ([] if "collsim_op" in n.own else n.deps):
            stream, at = pos[d]
            if stream != n.stream and clock.get(stream, -1) < at:
                need.append(d)
                for s, k in clock_of[d].items():
                    if clock.get(s, -1) < k:
                        clock[s] = k
        out[n.id] = need
        count[n.stream] = count.get(n.stream, -1) + 1
        pos[n.id] = (n.stream, count[n.stream])
        clock[n.stream] = count[n.stream]
        clock_of[n.id] = last[n.stream] = clock
    return out


def _sized(item: dict) -> dict:
    if isinstance(item.get("size"), int):
        item["size"] = format_size(item["size"])
    return item
