"""Options of the engine's subcommands (simulate, sweep): topology, link numbers, ports, stragglers, congestion."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from simulator.engine import EngineOptions
from simulator.errors import CollsimError
from simulator.profile import load_profile
from simulator.profile_adapter import ProfileAdapter
from simulator.topology import Topology, ideal, parse_topology
from simulator.units import parse_time

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
    p.add_argument("--ecmp", action="store_true", help="spread rank pairs over equal-cost paths (hash of the pair)")
    p.add_argument("--placement", metavar="D0,D1,...",
                   help="run rank i on device Di (distinct device numbers; devices not named follow in order)")


def parse_gamma(text: str | None) -> float | None:
    """Seconds per reduced byte from the command line, or None when not given."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise CollsimError(f"gamma: cannot read {text!r}; expected seconds per byte such as 1e-11") from None
    if not value >= 0:
        raise CollsimError(f"gamma: {text!r} is negative; expected seconds per byte >= 0")
    return value


def _pairs(values: list[str], field: str, accepted: str) -> list[tuple[str, str]]:
    out = []
    for text in values:
        key, sep, value = text.rpartition(":")
        if not sep or not key or not value:
            raise CollsimError(f"{field}: cannot read {text!r}; expected {accepted}")
        out.append((key, value))
    return out


def _rank(text: str, field: str, ranks: int) -> int:
    try:
        rank = int(text)
    except ValueError:
        raise CollsimError(f"{field}: {text!r} is not a rank; expected 0..{ranks - 1}") from None
    if not 0 <= rank < ranks:
        raise CollsimError(f"{field}: rank {rank} is not one of 0..{ranks - 1}")
    return rank


def _link(text: str, topology: Topology) -> int:
    if text.isdigit():
        lid = int(text)
        if lid >= topology.num_links:
            raise CollsimError(f"congestion: link {lid} does not exist; {topology.name} has links 0..{topology.num_links - 1}")
        return lid
    for lid in range(min(topology.num_links, 200000)):
        if topology.link_name(lid) == text:
            return lid
    raise CollsimError(f"congestion: no link named {text!r} in {topology.name}; see `collsim topology show {topology.name} --links`")


def _placement(text: str, devices: int) -> list[int]:
    try:
        named = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise CollsimError(f"placement: cannot read {text!r}; expected device numbers such as 0,2,4,6,1,3,5,7") from None
    if len(set(named)) != len(named) or any(not 0 <= d < devices for d in named):
        raise CollsimError(f"placement: {text!r} must name distinct devices in 0..{devices - 1}")
    return named + [d for d in range(devices) if d not in set(named)]


@dataclass(frozen=True)
class Machine:
    """The topology a run uses, gamma, and the profile adapter when --profile was given."""

    topology: Topology
    gamma: float
    adapter: ProfileAdapter | None = None

    def options(self, base: EngineOptions, nbytes: int) -> EngineOptions:
        """`base` with the profile's message regime for a collective of `nbytes` (unchanged without a profile)."""
        return self.adapter.options(nbytes, base) if self.adapter else base


def resolve_machine(args: argparse.Namespace, ranks: int | None) -> Machine:
    """The topology with --profile (through the profile adapter), then --alpha/--bandwidth per link, applied; and gamma
    (from --gamma, else the profile, else 0)."""
    # without --topology: the textbook machine with `collsim cost`'s defaults, so the two commands agree
    topology = parse_topology(args.topology) if args.topology else ideal(ranks or 8, 2e-6, 25e9)
    adapter = None
    gamma = 0.0
    if args.profile:
        adapter = ProfileAdapter(load_profile(args.profile))
        topology = adapter.topology(topology)
        gamma = adapter.profile.gamma_s_per_byte
    latency = parse_time(args.alpha, "alpha") if args.alpha is not None else None
    bandwidth = None
    if args.bandwidth is not None:
        from simulator.units import parse_bandwidth

        bandwidth = parse_bandwidth(args.bandwidth)
    if latency is not None or bandwidth is not None:
        topology = topology.with_links(latency, bandwidth)
    if args.ecmp:
        topology = topology.with_ecmp(True)
    if args.placement:
        topology = topology.with_placement(_placement(args.placement, topology.num_devices))
    given = parse_gamma(args.gamma)
    return Machine(topology, given if given is not None else gamma, adapter)


def engine_options(args: argparse.Namespace, topology: Topology, ranks: int, gamma: float) -> EngineOptions:
    """EngineOptions from the command line."""
    delays = {_rank(r, "straggler", ranks): parse_time(v, "straggler")
              for r, v in _pairs(args.straggler, "straggler", "RANK:DELAY such as 3:20us")}
    slow = {}
    for r, v in _pairs(args.slow, "slow", "RANK:FACTOR such as 5:2.5"):
        rank = _rank(r, "slow", ranks)
        try:
            slow[rank] = float(v)
        except ValueError:
            raise CollsimError(f"slow: {v!r} is not a factor; expected a number > 0 such as 2.5") from None
    background = {}
    for name, v in _pairs(args.congestion, "congestion", "LINK:SHARE such as 0:0.5 or gpu0->switch:0.5"):
        lid = _link(name, topology)
        try:
            background[lid] = float(v)
        except ValueError:
            raise CollsimError(f"congestion: {v!r} is not a share; expected a number in [0, 1)") from None
    if args.ports < 0:
        raise CollsimError(f"ports: {args.ports}; expected an integer >= 1, or 0 for unlimited")
    return EngineOptions(gamma=gamma, ports=args.ports, contention=not args.no_contention, header_bytes=args.header_bytes,
                         start_delay=delays, slowdown=slow, background=background)
