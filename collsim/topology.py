"""What machines exist (`collsim topologies`) and what one looks like (`collsim topology show SPEC`).

Limits: a SPEC's devices are bounded where it is parsed (simulator/topology/spec.py); a link listing stops at
MAX_LISTED links, and the bisection is left out by the topology itself past its own size."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulator.render import table
from simulator.topology import BUILDERS, NETWORKS, PRESETS, ROUTINGS, build_preset, parse_topology
from simulator.topology.model import Topology
from simulator.topology.spec import COMMON_OPTIONS

from .limits import Footprint, Limits
from .request import Request, Result

MAX_LISTED = 100000  # links listed by `topology show --links`


@dataclass(frozen=True)
class TopologiesRequest(Request):
    """Every hardware preset (with its GPU count), topology builder and network between nodes."""

    def run(self) -> TopologiesResult:
        presets = [{"name": p.name, "devices": build_preset(p.name).num_devices, "multinode": p.multinode,
                    "summary": p.summary} for p in PRESETS.values()]
        builders = [{"name": name, "syntax": syntax, "summary": what} for name, (syntax, what) in BUILDERS.items()]
        networks = [{"name": k, "bandwidth_Bps": v[0], "latency_s": v[1], "summary": v[2]} for k, v in NETWORKS.items()]
        return TopologiesResult(presets, builders, networks)


@dataclass(frozen=True)
class TopologiesResult(Result):
    presets: list[dict]
    builders: list[dict]
    networks: list[dict]

    def data(self) -> dict[str, Any]:
        return {"presets": self.presets, "builders": self.builders, "networks": self.networks, "options": COMMON_OPTIONS}

    def text(self) -> str:
        return "\n".join([
            f"# presets (multi-node: NAME:nodes=N[,net={'|'.join(NETWORKS)}][,routing={'|'.join(ROUTINGS)}]; "
            "sources in docs/topologies.md)",
            table(["name", "GPUs", "multi-node", "what"],
                  [[p["name"], p["devices"], p["multinode"], p["summary"]] for p in self.presets], align="lrll"),
            "\n# builders (" + COMMON_OPTIONS + ")",
            table(["syntax", "what"], [[b["syntax"], b["summary"]] for b in self.builders], align="ll"),
            "\n# networks between nodes",
            table(["net", "GB/s per direction", "latency per link (us)", "what"],
                  [[n["name"], n["bandwidth_Bps"] / 1e9, n["latency_s"] * 1e6, n["summary"]] for n in self.networks],
                  align="lrrl")])


@dataclass(frozen=True)
class TopologyRequest(Request):
    """The topology a SPEC names (preset, builder or file): devices, nodes, links, bisection; `links` lists them."""

    spec: str
    links: bool = False
    limits: Limits = Limits()  # transfers and memory the request may take
    topology: Topology = field(init=False, repr=False, compare=False)

    def check(self) -> None:
        Footprint("topology show", spec=self.spec).bound(self.limits)
        object.__setattr__(self, "topology", parse_topology(self.spec))

    def run(self) -> TopologyResult:
        topo = self.topology
        summary = topo.summary()
        summary["bisection_Bps"] = topo.bisection_bandwidth()
        listing = []
        if self.links:
            listing = [{"id": lid, "from": topo.link(lid).src, "to": topo.link(lid).dst, "latency_s": float(topo.latency[lid]),
                        "bandwidth_Bps": float(topo.bandwidth[lid])} for lid in range(min(topo.num_links, MAX_LISTED))]
            summary["link_list"] = listing
        summary["ranks"] = [topo.device_name(r) for r in range(topo.num_devices)]
        return TopologyResult(self, summary, listing)


@dataclass(frozen=True)
class TopologyResult(Result):
    request: TopologyRequest
    summary: dict
    listing: list[dict]

    def data(self) -> dict[str, Any]:
        return self.summary

    def text(self) -> str:
        topo, summary = self.request.topology, self.summary
        bisection = summary["bisection_Bps"]
        lines = [f"# {topo.name}: {topo.description}",
                 f"ranks (devices)   {topo.num_devices}",
                 f"nodes             {', '.join(f'{v} {k}' for k, v in summary['nodes'].items())}",
                 f"links (directed)  {topo.num_links}"]
        if topo.num_links:
            lat, bw = summary["latency_s"], summary["bandwidth_Bps"]
            lines += [f"link latency      {lat[0] * 1e6:g} .. {lat[1] * 1e6:g} us",
                      f"link bandwidth    {bw[0] / 1e9:g} .. {bw[1] / 1e9:g} GB/s per direction"]
        lines.append("bisection         " + (f"{bisection / 1e9:g} GB/s (max flow, first half of the ranks to the second half)"
                                              if bisection is not None else "not computed (too many links)"))
        if topo.num_devices >= 2:
            lines.append(f"route 0 -> {topo.num_devices - 1}      {len(topo.route(0, topo.num_devices - 1))} links")
        if self.listing:
            lines.append(table(["id", "from", "to", "latency(us)", "GB/s"],
                               [[x["id"], x["from"], x["to"], x["latency_s"] * 1e6, x["bandwidth_Bps"] / 1e9]
                                for x in self.listing]))
        return "\n".join(lines)
