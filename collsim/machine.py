"""The machine a run uses and the engine's options on it, as simulate and sweep take them: a topology (preset,
builder or file; default the textbook ideal:P of `collsim cost`), link numbers or a measured link profile laid over
it, and stragglers, slow reducers, background congestion, ports, message headers, eager sends, latency-weighted sharing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulator import units
from simulator.engine import EngineOptions
from simulator.errors import CollsimError
from simulator.profile import load_profile
from simulator.profile_adapter import ProfileAdapter
from simulator.topology import Topology, ideal, parse_topology
from simulator.units import parse_time

from .limits import ENGINE_TRANSFER_BYTES, Footprint


@dataclass(frozen=True)
class Machine:
    """The topology a run uses, gamma, and the profile adapter when a profile was given."""

    topology: Topology
    gamma: float
    adapter: ProfileAdapter | None = None

    def options(self, base: EngineOptions, nbytes: int) -> EngineOptions:
        """`base` with the profile's message regime for a collective of `nbytes` (unchanged without a profile)."""
        return self.adapter.options(nbytes, base) if self.adapter else base


@dataclass(frozen=True)
class MachineSetup:
    """What builds the machine and the engine's options: plain values, so a setup travels to worker processes."""

    topology: str | Topology | None = None  # SPEC, or one built already; None: ideal:P at 2 us and 25 GB/s per link
    alpha: str | None = None  # every link's latency, e.g. '2us'
    bandwidth: str | None = None  # every link's bandwidth, e.g. '25GB/s'
    profile: str | None = None  # a link profile file (collsim fit / calibrate)
    gamma: str | float | None = None  # seconds per reduced byte, e.g. '1e-11' (default 0, or the profile's)
    ports: int = 1  # messages a rank may have in flight each way (0: unlimited)
    contention: bool = True
    header_bytes: int = 0
    eager: str | int | None = None  # sends under this size are eager, e.g. '64KiB' (SMPI's default); None: none
    latency_weighted: bool = False  # shares of a link in inverse proportion to route latency (SimGrid CM02)
    ecmp: bool = False
    placement: str | None = None  # 'D0,D1,...': rank i on device Di
    stragglers: tuple[str, ...] = ()  # 'RANK:DELAY'
    slow: tuple[str, ...] = ()  # 'RANK:FACTOR'
    congestion: tuple[str, ...] = ()  # 'LINK:SHARE'

    def __post_init__(self) -> None:
        if isinstance(self.ports, bool) or self.ports < 0:
            raise CollsimError(f"ports: {self.ports}; expected an integer >= 1, or 0 for unlimited")
        if isinstance(self.header_bytes, bool) or self.header_bytes < 0:
            raise CollsimError(f"header-bytes: {self.header_bytes}; expected a byte count >= 0")
        if self.eager is not None:
            units.parse_size(self.eager, "eager")

    def footprint(self, command: str, op: str, algo: str | None, ranks: int | None, params: tuple[tuple[str, Any], ...],
                  **more: Any) -> Footprint:
        """What a run of `algo` (a name, a comma list or None: every one of `op`) holds on this machine, by default on
        every device of its topology, with the engine's bytes per transfer (simulate, sweep)."""
        built = isinstance(self.topology, Topology)
        return Footprint(command, op, algo, ranks=ranks, topology=None if built else self.topology,
                         devices=self.topology.num_devices if built else None, params=params,
                         ranks_from_topology=True, transfer_bytes=ENGINE_TRANSFER_BYTES, **more)

    def machine(self, ranks: int | None) -> Machine:
        """The topology with the profile (through the profile adapter), then alpha/bandwidth per link, applied; and
        gamma (given, else the profile's, else 0)."""
        if isinstance(self.topology, Topology):
            topology = self.topology
        else:
            topology = parse_topology(self.topology) if self.topology else ideal(ranks or 8, 2e-6, 25e9)
        adapter = None
        gamma = 0.0
        if self.profile:
            adapter = ProfileAdapter(load_profile(self.profile))
            topology = adapter.topology(topology)
            gamma = adapter.profile.gamma_s_per_byte
        latency = parse_time(self.alpha, "alpha") if self.alpha is not None else None
        bandwidth = units.parse_bandwidth(self.bandwidth) if self.bandwidth is not None else None
        if latency is not None or bandwidth is not None:
            topology = topology.with_links(latency, bandwidth)
        if self.ecmp:
            topology = topology.with_ecmp(True)
        if self.placement:
            topology = topology.with_placement(_placement(self.placement, topology.num_devices))
        given = None if self.gamma is None else units.parse_gamma(self.gamma)
        return Machine(topology, given if given is not None else gamma, adapter)

    def options(self, topology: Topology, ranks: int, gamma: float) -> EngineOptions:
        """The engine's options on `topology` for `ranks` ranks."""
        delays = {_rank(r, "straggler", ranks): parse_time(v, "straggler")
                  for r, v in _pairs(self.stragglers, "straggler", "RANK:DELAY such as 3:20us")}
        slow = {_rank(r, "slow", ranks): _number(v, "slow", "a factor; expected a number > 0 such as 2.5")
                for r, v in _pairs(self.slow, "slow", "RANK:FACTOR such as 5:2.5")}
        background = {_link(name, topology): _number(v, "congestion", "a share; expected a number in [0, 1)")
                      for name, v in _pairs(self.congestion, "congestion", "LINK:SHARE such as 0:0.5 or gpu0->switch:0.5")}
        eager = units.parse_size(self.eager, "eager") if self.eager is not None else 0
        return EngineOptions(gamma=gamma, ports=self.ports, contention=self.contention, header_bytes=self.header_bytes,
                             eager_bytes=eager, latency_weighted=self.latency_weighted, start_delay=delays,
                             slowdown=slow, background=background)


def _number(text: str, field: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise CollsimError(f"{field}: {text!r} is not {what}") from None


def _pairs(values, field: str, accepted: str) -> list[tuple[str, str]]:
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
