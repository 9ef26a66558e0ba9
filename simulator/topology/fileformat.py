"""The YAML/JSON topology file: nodes, links and rank order, checked with errors that name the file and the entry.

```yaml
collsim_topology: 1
name: two-boxes
defaults: {latency: 1us, bandwidth: 25GB/s}   # for links that do not say
nodes:
  - {name: gpu0, kind: gpu}                  # kind: gpu (a rank can run here), switch, nic, cpu
  - {name: sw, kind: switch}
links:
  - {a: gpu0, b: sw, bandwidth: 50GB/s, latency: 0.5us}   # full duplex unless duplex: false (then a -> b only)
ranks: [gpu0, gpu1]                          # optional: rank order; default every gpu node in file order
```
"""

from __future__ import annotations

from pathlib import Path

from ..errors import CollsimError
from ..readfile import read_data
from ..units import parse_bandwidth, parse_time
from .builders import GraphBuilder
from .model import LINK_VALUES, NODE_KINDS, Topology, check_link_value

TOP_KEYS = ("collsim_topology", "name", "description", "defaults", "nodes", "links", "ranks")
NODE_KEYS = ("name", "kind")
LINK_KEYS = ("a", "b", "bandwidth", "latency", "duplex")
DEFAULT_KEYS = ("latency", "bandwidth")
FORMAT_VERSION = 1


def load_topology(path: str | Path) -> Topology:
    """Read and check a topology file (size-capped, UTF-8, YAML or JSON for a .json name)."""
    return topology_from_dict(read_data(path, "topology"), str(path))


def topology_from_dict(data, where: str = "<dict>") -> Topology:
    """Build a topology from the file's data, raising CollsimError naming `where` and the bad entry."""
    def fail(message: str) -> CollsimError:
        return CollsimError(f"topology: {where}: {message}")

    if data is None:
        raise fail("the file is empty; expected a mapping with 'nodes' and 'links'")
    if not isinstance(data, dict):
        raise fail(f"the file holds a {_kind(data)}; expected a mapping with 'nodes' and 'links'")
    _check_keys(data, TOP_KEYS, "", fail)
    if data.get("collsim_topology", FORMAT_VERSION) != FORMAT_VERSION:
        raise fail(f"collsim_topology {data['collsim_topology']!r}: expected {FORMAT_VERSION} (the only format version)")
    for key in ("name", "description"):
        if key in data and not isinstance(data[key], str):
            raise fail(f"{key}: {data[key]!r} is a {_kind(data[key])}; expected text")
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise fail("defaults: expected a mapping such as {latency: 1us, bandwidth: 25GB/s}")
    _check_keys(defaults, DEFAULT_KEYS, "defaults: ", fail)
    g = GraphBuilder()
    _add_nodes(g, data.get("nodes"), fail)
    _add_links(g, data.get("links"), defaults, fail)
    devices = _devices(g, data.get("ranks"), fail)
    _check_connected(g, devices, fail)
    return g.build(str(data.get("name", Path(where).stem)), devices, None, str(data.get("description", "")))


def _kind(value) -> str:
    return {dict: "mapping", list: "list", str: "string", bool: "boolean", int: "number", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)


def _check_keys(entry: dict, accepted: tuple[str, ...], where: str, fail) -> None:
    unknown = [k for k in entry if k not in accepted]
    if unknown:
        raise fail(f"{where}unknown key {unknown[0]!r}; expected {', '.join(accepted)}")


def _name(value, where: str, fail) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value) == "":
        raise fail(f"{where}: {value!r} is not a node name; expected text or an integer")
    return str(value)


def _add_nodes(g: GraphBuilder, nodes, fail) -> None:
    if not isinstance(nodes, list) or not nodes:
        raise fail("nodes: expected a non-empty list of {name, kind}")
    for i, entry in enumerate(nodes):
        if isinstance(entry, (str, int)) and not isinstance(entry, bool):
            entry = {"name": entry, "kind": "gpu"}
        if not isinstance(entry, dict) or "name" not in entry:
            raise fail(f"nodes[{i}]: expected {{name: ..., kind: gpu|switch|nic|cpu}}, got {entry!r}")
        _check_keys(entry, NODE_KEYS, f"nodes[{i}]: ", fail)
        name, kind = _name(entry["name"], f"nodes[{i}] name", fail), entry.get("kind", "gpu")
        if kind not in NODE_KINDS:
            raise fail(f"nodes[{i}] ({name}): unknown kind {kind!r}; expected one of {', '.join(NODE_KINDS)}")
        if name in g.index:
            raise fail(f"nodes[{i}]: duplicate node name {name!r}")
        g.node(name, kind)


def _add_links(g: GraphBuilder, links, defaults: dict, fail) -> None:
    if not isinstance(links, list):
        raise fail("links: expected a list of {a, b, bandwidth, latency}")
    seen: dict[tuple[int, int], int] = {}
    for i, entry in enumerate(links):
        if not isinstance(entry, dict) or "a" not in entry or "b" not in entry:
            raise fail(f"links[{i}]: expected {{a: NODE, b: NODE, bandwidth: ..., latency: ...}}, got {entry!r}")
        _check_keys(entry, LINK_KEYS, f"links[{i}]: ", fail)
        ends = []
        for side in ("a", "b"):
            node = _name(entry[side], f"links[{i}] {side}", fail)
            if node not in g.index:
                raise fail(f"links[{i}]: unknown node {node!r} in '{side}'; nodes are {_names(g.names)}")
            ends.append(g.index[node])
        if ends[0] == ends[1]:
            raise fail(f"links[{i}]: a link from {entry['a']!r} to itself")
        if "bandwidth" not in entry and "bandwidth" not in defaults:
            raise fail(f"links[{i}] ({entry['a']} - {entry['b']}): no bandwidth; give one here or under defaults")
        bandwidth, latency = _link_values(entry, defaults, i, fail)
        duplex = entry.get("duplex", True)
        if not isinstance(duplex, bool):
            raise fail(f"links[{i}]: duplex {duplex!r}; expected true or false")
        for u, v in ([(ends[0], ends[1]), (ends[1], ends[0])] if duplex else [(ends[0], ends[1])]):
            if (u, v) in seen:
                raise fail(f"links[{i}]: duplicate link {g.names[u]} -> {g.names[v]} (already in links[{seen[(u, v)]}])")
            seen[(u, v)] = i
        g.cable(ends[0], ends[1], latency, bandwidth, duplex)


def _link_values(entry: dict, defaults: dict, i: int, fail) -> tuple[float, float]:
    """(bandwidth B/s, latency s) of links[i], from the entry or the defaults; finite, bandwidth > 0, latency >= 0."""
    values = []
    for key, parse, default in (("bandwidth", parse_bandwidth, None), ("latency", parse_time, 0)):
        raw = entry.get(key, defaults.get(key, default))
        field = f"links[{i}] {key}" if key in entry else f"defaults: {key} (for links[{i}])"
        if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
            raise fail(f"{field} {raw!r}: expected {LINK_VALUES[key]} such as "
                       f"{'25GB/s' if key == 'bandwidth' else '1us'}")
        try:
            values.append(check_link_value(field, parse(raw, field), ""))
        except CollsimError as exc:
            raise fail(str(exc)) from None
    return values[0], values[1]


def _devices(g: GraphBuilder, rank_names, fail) -> list[int]:
    if rank_names is None:
        devices = [i for i, k in enumerate(g.kinds) if k == "gpu"]
    else:
        if not isinstance(rank_names, list):
            raise fail("ranks: expected a list of node names")
        devices = []
        for i, node in enumerate(rank_names):
            name = _name(node, f"ranks[{i}]", fail)
            if name not in g.index:
                raise fail(f"ranks[{i}]: unknown node {node!r}; nodes are {_names(g.names)}")
            devices.append(g.index[name])
        if len(set(devices)) != len(devices):
            raise fail("ranks: a node is listed twice")
    if not devices:
        raise fail("no gpu nodes: mark the nodes ranks run on with kind: gpu (or list them under ranks)")
    return devices


def _check_connected(g: GraphBuilder, devices: list[int], fail) -> None:
    """Every rank reaches every other: all reach the first rank's node and it reaches all (two searches)."""
    out: list[list[int]] = [[] for _ in g.names]
    back: list[list[int]] = [[] for _ in g.names]
    for u, v, _, _ in g.links:
        out[u].append(v)
        back[v].append(u)
    for adjacency, forward in ((back, False), (out, True)):
        seen = _reach(adjacency, devices[0])
        for rank, node in enumerate(devices):
            if node not in seen:
                i, j = (0, rank) if forward else (rank, 0)
                raise fail(f"disconnected: rank {i} ({g.names[devices[i]]}) cannot reach rank {j} "
                           f"({g.names[devices[j]]}); add links so every rank reaches every other")


def _reach(adjacency: list[list[int]], start: int) -> set[int]:
    seen, stack = {start}, [start]
    while stack:
        for nxt in adjacency[stack.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def topology_to_dict(topo: Topology) -> dict:
    """The file form of a topology (every directed link written as a one-way link)."""
    return {
        "collsim_topology": 1, "name": topo.name, "description": topo.description,
        "nodes": [{"name": n, "kind": k} for n, k in zip(topo.node_names, topo.node_kinds)],
        "links": [{"a": topo.node_names[int(topo.link_src[i])], "b": topo.node_names[int(topo.link_dst[i])],
                   "latency": float(topo.latency[i]), "bandwidth": float(topo.bandwidth[i]), "duplex": False}
                  for i in range(topo.num_links)],
        "ranks": [topo.node_names[d] for d in topo.devices],
    }


def _names(names: list[str]) -> str:
    return ", ".join(names[:8]) + (f", ... ({len(names)} in all)" if len(names) > 8 else "")
