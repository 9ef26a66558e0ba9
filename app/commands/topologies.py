"""`collsim topologies` (what machines exist) and `collsim topology show SPEC` (what one looks like)."""

from __future__ import annotations

import argparse

from collsim.topology import TopologiesRequest, TopologyRequest
from simulator.errors import CollsimError

from ..limits import add_limit_args, limits
from ..show import show


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
    add_limit_args(show)
    show.set_defaults(func=run_show)
    t.set_defaults(func=_no_action)


def _no_action(args: argparse.Namespace) -> int:
    raise CollsimError("topology: give an action: show SPEC (e.g. collsim topology show switch:8)")


def run_list(args: argparse.Namespace) -> int:
    return show(TopologiesRequest().run(), args.json)


def run_show(args: argparse.Namespace) -> int:
    return show(TopologyRequest(args.spec, args.links, limits(args)).run(), args.json)
