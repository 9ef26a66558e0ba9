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

import json
from pathlib import Path

import yaml

from ..errors import CollsimError
from ..units import parse_bandwidth, parse_time
from .builders import GraphBuilder
from .model import NODE_KINDS, Topology


def load_topology(path: str | Path) -> Topology:
    """Read and check a topology file."""
    path = Path(path)
    try:
        text = path.read_text()
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except OSError as exc:
        raise CollsimError(f"topology: cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise CollsimError(f"topology: {path} line {exc.lineno}: not valid JSON: {exc.msg}") from None
    except yaml.YAMLError as exc:
        raise CollsimError(f"topology: {path} is not valid YAML: {exc}") from None
    return topology_from_dict(data, str(path))


def topology_from_dict(data, where: str = "<dict>") -> Topology:
    """Build a topology from the file's data, raising CollsimError naming `where` and the bad entry."""
    def fail(message: str) -> CollsimError:
        return CollsimError(f"topology: {where}: {message}")

    if not isinstance(data, dict):
        raise fail("expected a mapping with 'nodes' and 'links'")
    unknown = sorted(set(data) - {"collsim_topology", "name", "description", "defaults", "nodes", "links", "ranks"})
    if unknown:
        raise fail(f"unknown key {unknown[0]!r}; expected name, description, defaults, nodes, links, ranks")
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise fail("defaults: expected a mapping such as {latency: 1us, bandwidth: 25GB/s}")
    g = GraphBuilder()
    nodes = data.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        raise fail("nodes: expected a non-empty list of {name, kind}")
    for i, entry in enumerate(nodes):
        if isinstance(entry, str):
            entry = {"name": entry, "kind": "gpu"}
        if not isinstance(entry, dict) or "name" not in entry:
            raise fail(f"nodes[{i}]: expected {{name: ..., kind: gpu|switch|nic|cpu}}, got {entry!r}")
        name, kind = str(entry["name"]), str(entry.get("kind", "gpu"))
        if kind not in NODE_KINDS:
            raise fail(f"nodes[{i}] ({name}): unknown kind {kind!r}; expected one of {', '.join(NODE_KINDS)}")
        if name in g.index:
            raise fail(f"nodes[{i}]: duplicate node name {name!r}")
        g.node(name, kind)
    links = data.get("links")
    if not isinstance(links, list):
        raise fail("links: expected a list of {a, b, bandwidth, latency}")
    seen: dict[tuple[int, int], int] = {}
    for i, entry in enumerate(links):
        if not isinstance(entry, dict) or "a" not in entry or "b" not in entry:
            raise fail(f"links[{i}]: expected {{a: NODE, b: NODE, bandwidth: ..., latency: ...}}, got {entry!r}")
        ends = []
        for side in ("a", "b"):
            node = str(entry[side])
            if node not in g.index:
                raise fail(f"links[{i}]: unknown node {node!r} in '{side}'; nodes are {_names(g.names)}")
            ends.append(g.index[node])
        if ends[0] == ends[1]:
            raise fail(f"links[{i}]: a link from {entry['a']!r} to itself")
        if "bandwidth" not in entry and "bandwidth" not in defaults:
            raise fail(f"links[{i}] ({entry['a']} - {entry['b']}): no bandwidth; give one here or under defaults")
        try:
            bandwidth = parse_bandwidth(entry.get("bandwidth", defaults.get("bandwidth")), f"links[{i}] bandwidth")
            latency = parse_time(entry.get("latency", defaults.get("latency", 0)), f"links[{i}] latency")
        except CollsimError as exc:
            raise fail(str(exc)) from None
        duplex = entry.get("duplex", True)
        if not isinstance(duplex, bool):
            raise fail(f"links[{i}]: duplex {duplex!r}; expected true or false")
        for u, v in ([(ends[0], ends[1]), (ends[1], ends[0])] if duplex else [(ends[0], ends[1])]):
            if (u, v) in seen:
                raise fail(f"links[{i}]: duplicate link {g.names[u]} -> {g.names[v]} (already in links[{seen[(u, v)]}])")
            seen[(u, v)] = i
        g.cable(ends[0], ends[1], latency, bandwidth, duplex)
    rank_names = data.get("ranks")
    if rank_names is None:
        devices = [i for i, k in enumerate(g.kinds) if k == "gpu"]
    else:
        if not isinstance(rank_names, list):
            raise fail("ranks: expected a list of node names")
        devices = []
        for i, node in enumerate(rank_names):
            if str(node) not in g.index:
                raise fail(f"ranks[{i}]: unknown node {node!r}; nodes are {_names(g.names)}")
            devices.append(g.index[str(node)])
        if len(set(devices)) != len(devices):
            raise fail("ranks: a node is listed twice")
    if not devices:
        raise fail("no gpu nodes: mark the nodes ranks run on with kind: gpu (or list them under ranks)")
    topo = g.build(str(data.get("name", Path(where).stem)), devices, None, str(data.get("description", "")))
    bad = topo.unreachable()
    if bad:
        i, j = bad[0]
        raise fail(f"disconnected: rank {i} ({topo.node_names[devices[i]]}) cannot reach rank {j} "
                   f"({topo.node_names[devices[j]]}); add links so every rank reaches every other")
    return topo


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
