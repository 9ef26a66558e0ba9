"""Options of the engine's subcommands (simulate, sweep): topology, link numbers, ports, stragglers, congestion
(read into collsim/machine.py's MachineSetup)."""

from __future__ import annotations

import argparse

from collsim.machine import MachineSetup

TOPOLOGY_HELP = ("a preset (dgx-h100, dgx-h100:nodes=4,net=roce200, ...), a builder (ideal:8, switch:16, ring:8[,uni], "
                 "torus:4x4, fat_tree:hosts=16,leaf=4,oversub=2, cluster:nodes=4,gpus=8) or a .yaml/.json file; "
                 "see `collsim topologies`")


def add_engine_args(p: argparse.ArgumentParser) -> None:
    """The options simulate and sweep share."""
    p.add_argument("--topology", default=None, metavar="SPEC",
                   help=f"machine to run on (default: ideal:P with 2us and 25GB/s per link, as `collsim cost`): {TOPOLOGY_HELP}")
    p.add_argument("--alpha", metavar="TIME", help="set every link's latency (per link: a message on switch:P crosses 2 links)")
    p.add_argument("--bandwidth", metavar="BW", help="set every link's bandwidth per direction, e.g. 25GB/s or 400Gbit/s")
    p.add_argument("--profile", metavar="FILE",
                   help="a link profile (collsim calibrate / fit): its per-message alpha is split over a route's links, its "
                        "bandwidth and gamma apply, and a piecewise profile's segment is chosen by the size (docs/model.md)")
    p.add_argument("--gamma", default=None, help="reduction cost in seconds per byte, e.g. 1e-11 (default 0, or the profile's)")
    p.add_argument("--ports", type=int, default=1,
                   help="sends and receives a rank may have in flight at once (default 1, the single-port model; 0 = unlimited)")
    p.add_argument("--no-contention", action="store_true",
                   help="give every flow its route's bottleneck bandwidth (no max-min sharing between flows)")
    p.add_argument("--straggler", action="append", default=[], metavar="RANK:DELAY",
                   help="rank RANK starts DELAY late (e.g. 3:20us); repeatable")
    p.add_argument("--slow", action="append", default=[], metavar="RANK:FACTOR",
                   help="rank RANK reduces FACTOR times slower (e.g. 5:2.5); repeatable")
    p.add_argument("--congestion", action="append", default=[], metavar="LINK:SHARE",
                   help="background load takes SHARE (0..1) of a link's bandwidth; LINK is an id or a name a->b; repeatable")
    p.add_argument("--header-bytes", type=int, default=0, metavar="N",
                   help="bytes added to every network message (SimGrid SMPI adds 16; default 0)")
    p.add_argument("--eager", default=None, metavar="SIZE",
                   help="sends under SIZE are eager: the sender goes on once the message starts (SimGrid SMPI's "
                        "send-is-detached-thresh, 64KiB by default there; default here: every send rendezvous)")
    p.add_argument("--latency-weighted", action="store_true",
                   help="flows share a link in inverse proportion to their route latency, as SimGrid's CM02 model "
                        "(default: equal max-min shares)")
    p.add_argument("--ecmp", action="store_true", help="spread rank pairs over equal-cost paths (hash of the pair)")
    p.add_argument("--placement", metavar="D0,D1,...",
                   help="run rank i on device Di (distinct device numbers; devices not named follow in order)")


def machine_setup(args: argparse.Namespace) -> MachineSetup:
    """The machine options of the command line, as the request layer takes them."""
    return MachineSetup(topology=args.topology, alpha=args.alpha, bandwidth=args.bandwidth, profile=args.profile,
                        gamma=args.gamma, ports=args.ports, contention=not args.no_contention,
                        header_bytes=args.header_bytes, eager=args.eager,
                        latency_weighted=args.latency_weighted, ecmp=args.ecmp, placement=args.placement,
                        stragglers=tuple(args.straggler), slow=tuple(args.slow), congestion=tuple(args.congestion))
