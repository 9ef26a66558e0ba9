"""`collsim topologies` (what machines exist) and `collsim topology show SPEC` (what one looks like)."""

from __future__ import annotations

import argparse

from simulator.errors import CollsimError
from simulator.render import table
from simulator.topology import BUILDERS, NETWORKS, PRESETS, ROUTINGS, build_preset, parse_topology
from simulator.topology.spec import COMMON_OPTIONS

from ..limits import Footprint
from ..output import emit_json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("topologies", help="list hardware presets and topology builders",
                       description="Hardware presets (numbers and sources in docs/topologies.md) and the builders "
                                   "a SPEC can name. Use a SPEC with --topology or `collsim topology show SPEC`.")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_list)
    t = sub.add_parser("topology", help="inspect one topology (show SPEC)",
                       description="Inspect a topology named by a SPEC: a preset, a builder or a .yaml/.json file.")
    tsub = t.add_subparsers(title="actions", metavar="ACTION")
    show = tsub.add_parser("show", help="ranks, links and bisection bandwidth of a topology",
                           description="Print a topology's devices, nodes, links and bisection bandwidth (max flow "
                                       "from the first half of the ranks to the second half).",
                           epilog="examples: collsim topology show torus:4x4 ; collsim topology show dgx-h100:nodes=4 --links")
    show.add_argument("spec", metavar="SPEC", help="preset name (dgx-h100:nodes=4,routing=ecmp), builder (ring:8, switch:16, torus:4x4, "
                                       "rails:nodes=4,gpus=8, cluster:nodes=4,gpus=8) or file")
    show.add_argument("--links", action="store_true", help="list every link (id, ends, latency, bandwidth)")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=run_show, _footprint=Footprint())
    t.set_defaults(func=_no_action)


def _no_action(args: argparse.Namespace) -> int:
    raise CollsimError("topology: give an action: show SPEC (e.g. collsim topology show switch:8)")


def run_list(args: argparse.Namespace) -> int:
    presets = []
    for preset in PRESETS.values():
        topo = build_preset(preset.name)
        presets.append({"name": preset.name, "devices": topo.num_devices, "multinode": preset.multinode,
                        "summary": preset.summary})
    builders = [{"name": name, "syntax": syntax, "summary": what} for name, (syntax, what) in BUILDERS.items()]
    networks = [{"name": k, "bandwidth_Bps": v[0], "latency_s": v[1], "summary": v[2]} for k, v in NETWORKS.items()]
    if args.json:
        emit_json({"presets": presets, "builders": builders, "networks": networks, "options": COMMON_OPTIONS})
        return 0
    print(f"# presets (multi-node: NAME:nodes=N[,net={'|'.join(NETWORKS)}][,routing={'|'.join(ROUTINGS)}]; "
          "sources in docs/topologies.md)")
    print(table(["name", "GPUs", "multi-node", "what"], [[p["name"], p["devices"], p["multinode"], p["summary"]] for p in presets],
                align="lrll"))
    print("\n# builders (" + COMMON_OPTIONS + ")")
    print(table(["syntax", "what"], [[b["syntax"], b["summary"]] for b in builders], align="ll"))
    print("\n# networks between nodes")
    print(table(["net", "GB/s per direction", "latency per link (us)", "what"],
                [[n["name"], n["bandwidth_Bps"] / 1e9, n["latency_s"] * 1e6, n["summary"]] for n in networks], align="lrrl"))
    return 0


def run_show(args: argparse.Namespace) -> int:
    topo = parse_topology(args.spec)
    summary = topo.summary()
    bisection = topo.bisection_bandwidth()
    summary["bisection_Bps"] = bisection
    listing = []
    if args.links:
        listing = [{"id": lid, "from": topo.link(lid).src, "to": topo.link(lid).dst, "latency_s": float(topo.latency[lid]),
                    "bandwidth_Bps": float(topo.bandwidth[lid])} for lid in range(min(topo.num_links, 100000))]
        summary["link_list"] = listing
    summary["ranks"] = [topo.device_name(r) for r in range(topo.num_devices)]
    if args.json:
        emit_json(summary)
        return 0
    print(f"# {topo.name}: {topo.description}")
    nodes = ", ".join(f"{v} {k}" for k, v in summary["nodes"].items())
    print(f"ranks (devices)   {topo.num_devices}")
    print(f"nodes             {nodes}")
    print(f"links (directed)  {topo.num_links}")
    if topo.num_links:
        lat, bw = summary["latency_s"], summary["bandwidth_Bps"]
        print(f"link latency      {lat[0] * 1e6:g} .. {lat[1] * 1e6:g} us")
        print(f"link bandwidth    {bw[0] / 1e9:g} .. {bw[1] / 1e9:g} GB/s per direction")
    print("bisection         " + (f"{bisection / 1e9:g} GB/s (max flow, first half of the ranks to the second half)"
                                  if bisection is not None else "not computed (too many links)"))
    if topo.num_devices >= 2:
        hops = len(topo.route(0, topo.num_devices - 1))
        print(f"route 0 -> {topo.num_devices - 1}      {hops} links")
    if listing:
        print(table(["id", "from", "to", "latency(us)", "GB/s"],
                    [[x["id"], x["from"], x["to"], x["latency_s"] * 1e6, x["bandwidth_Bps"] / 1e9] for x in listing]))
    return 0
