"""The network model: devices (GPUs), switches and NICs as nodes, directed links with latency and bandwidth, routes.

A `Topology` holds its links in flat arrays (latency in s, bandwidth in B/s per direction) and
answers `route(src_rank, dst_rank)` with the link ids a message crosses. Routes are shortest paths
by hop count with a deterministic tie-break (the lowest-numbered next node), or, with ECMP, a
next node picked by a hash of the (source, destination) pair among the equal-cost ones. Builders of
regular shapes pass their own router (dimension-order on a torus, up-down in a leaf-spine) so that
large machines need no graph search; a router returns None for a pair it does not route (a switch
made a device, simulator/nccl/nvls.py switch_view), which then takes the shortest path. A router that
spreads traffic itself (the rail fabric's adaptive or hashed spines, simulator/topology/fabric.py) is
`multipath`: ECMP leaves it in charge. A placement maps ranks to devices and can be permuted.
`IdealTopology` is the textbook machine: a dedicated link per ordered pair, made on demand.
"""

from __future__ import annotations

import zlib
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import CollsimError

if TYPE_CHECKING:
    from .presets import PresetBuild

NODE_KINDS = ("gpu", "switch", "nic", "cpu")
LINK_VALUES = {"latency": "a finite time >= 0 s", "bandwidth": "a finite bandwidth > 0 B/s"}
Router = Callable[[int, int], "Sequence[int] | None"]  # (src node, dst node) -> node path including both ends, or None


def check_link_value(field: str, value, where: str, unbounded: bool = False) -> float:
    """`value` as a float when it is a valid link latency or bandwidth: finite, >= 0 for latency, > 0 for bandwidth.

    What a person types (files, SPEC options, the app) must be finite. `unbounded=True` also accepts a bandwidth of
    +inf, which the library uses for "no per-byte cost" (a flat profile segment, the alpha basis of a fit).
    """
    kind = "bandwidth" if "bandwidth" in field or field in ("bw", "intra_bw", "net_bw") else "latency"
    number = value if isinstance(value, (int, float, np.floating)) and not isinstance(value, bool) else None
    infinite_ok = unbounded and kind == "bandwidth" and number == np.inf
    if number is None or not (np.isfinite(number) or infinite_ok) or number < 0 or (kind == "bandwidth" and number == 0):
        raise CollsimError(f"{where}{field} is {value!r}; expected {LINK_VALUES[kind]}")
    return float(number)


def _check_link_arrays(name: str, names: Sequence[str], src: np.ndarray, dst: np.ndarray, latency: np.ndarray,
                       bandwidth: np.ndarray) -> None:
    """Raise naming the first link whose latency is not finite and >= 0, or whose bandwidth is not > 0 (NaN included)."""
    for field, values, ok in (("latency", latency, np.isfinite(latency) & (latency >= 0)),
                              ("bandwidth", bandwidth, bandwidth > 0)):
        bad = np.flatnonzero(~ok)
        if bad.size:
            lid = int(bad[0])
            check_link_value(field, float(values[lid]), f"topology {name}: link {names[src[lid]]}->{names[dst[lid]]} ", True)


@dataclass(frozen=True)
class Link:
    """One direction of a cable: from node `src` to node `dst`, with latency (s) and bandwidth (B/s)."""

    id: int
    src: str
    dst: str
    latency: float
    bandwidth: float


class Topology:
    """Nodes, directed links and routes between the devices that ranks run on.

    Its attributes are those `__slots__` declares: nothing can be attached to a topology after it is built. `origin`
    is the preset build it came from (simulator/topology/presets.py PresetBuild; None for anything else), which
    NCCL's machine description is resolved from (simulator/nccl/machine.py); copies keep it.
    """

    __slots__ = ("name", "description", "node_names", "node_kinds", "devices", "ecmp", "_router", "multipath",
                 "link_src", "link_dst", "latency", "bandwidth", "_link_of", "_out", "_in", "placement", "_routes",
                 "_dist_to", "origin")
    ideal = False

    def __init__(self, name: str, node_names: Sequence[str], node_kinds: Sequence[str],
                 links: Sequence[tuple[int, int, float, float]], devices: Sequence[int],
                 router: Router | None = None, ecmp: bool = False, placement: Sequence[int] | None = None,
                 description: str = "", multipath: bool = False):
        self.origin: PresetBuild | None = None
        self.name = name
        self.description = description
        self.node_names = list(node_names)
        self.node_kinds = list(node_kinds)
        self.devices = list(devices)  # node index of each device, in device order
        self.ecmp = ecmp
        self._router = router
        self.multipath = multipath  # the router spreads pairs over the paths itself: ECMP keeps it
        self.link_src = np.array([link[0] for link in links], dtype=np.int64)
        self.link_dst = np.array([link[1] for link in links], dtype=np.int64)
        self.latency = np.array([link[2] for link in links], dtype=np.float64)
        self.bandwidth = np.array([link[3] for link in links], dtype=np.float64)
        _check_link_arrays(name, self.node_names, self.link_src, self.link_dst, self.latency, self.bandwidth)
        self._link_of: dict[tuple[int, int], int] = {}
        for i, (u, v, _, _) in enumerate(links):
            if (u, v) in self._link_of:
                raise CollsimError(f"topology {name}: duplicate link {self.node_names[u]} -> {self.node_names[v]}")
            self._link_of[(u, v)] = i
        self._out: list[list[int]] = [[] for _ in self.node_names]
        self._in: list[list[int]] = [[] for _ in self.node_names]
        for u, v in sorted(self._link_of):
            self._out[u].append(v)
            self._in[v].append(u)
        self.placement = list(placement) if placement is not None else list(range(len(self.devices)))
        self._routes: dict[tuple[int, int], tuple[int, ...]] = {}
        self._dist_to: dict[int, np.ndarray] = {}

    # ---- sizes and names -------------------------------------------------------------------
    @property
    def num_devices(self) -> int:
        """Devices (GPUs) a rank can be placed on."""
        return len(self.devices)

    @property
    def num_links(self) -> int:
        """Directed links."""
        return len(self.latency)

    @property
    def num_nodes(self) -> int:
        """Nodes of every kind."""
        return len(self.node_names)

    def link(self, lid: int) -> Link:
        """The link with id `lid`."""
        return Link(int(lid), self.node_names[self.link_src[lid]], self.node_names[self.link_dst[lid]],
                    float(self.latency[lid]), float(self.bandwidth[lid]))

    def link_name(self, lid: int) -> str:
        """'a->b' for a link id."""
        return f"{self.node_names[self.link_src[lid]]}->{self.node_names[self.link_dst[lid]]}"

    def device_name(self, rank: int) -> str:
        """Name of the node rank `rank` runs on."""
        return self.node_names[self.devices[self.placement[rank]]]

    # ---- variants ----------------------------------------------------------------------------
    def _copy(self) -> Topology:
        clone = object.__new__(type(self))
        _copy_slots(self, clone)
        clone.latency = self.latency.copy()
        clone.bandwidth = self.bandwidth.copy()
        clone._routes = {}
        clone.placement = list(self.placement)
        return clone

    def with_links(self, latency: float | None = None, bandwidth: float | None = None) -> Topology:
        """A copy in which every link has this latency (s) and/or bandwidth (B/s per direction)."""
        clone = self._copy()
        if latency is not None:
            clone.latency[:] = check_link_value("latency", latency, "", unbounded=True)
        if bandwidth is not None:
            clone.bandwidth[:] = check_link_value("bandwidth", bandwidth, "", unbounded=True)
        return clone

    def with_placement(self, placement: Sequence[int]) -> Topology:
        """A copy in which rank i runs on device placement[i] (a permutation of the devices)."""
        placement = [int(d) for d in placement]
        if sorted(placement) != list(range(self.num_devices)):
            raise CollsimError(f"placement: {placement!r} is not a permutation of devices 0..{self.num_devices - 1}")
        clone = self._copy()
        clone.placement = placement
        return clone

    def with_origin(self, origin: PresetBuild | None) -> Topology:
        """A copy built from `origin` (the preset build it stands for, simulator/topology/presets.py PresetBuild)."""
        clone = self._copy()
        clone.origin = origin
        return clone

    def with_ecmp(self, ecmp: bool = True) -> Topology:
        """A copy that spreads pairs over equal-cost paths (hash of the pair) instead of the lowest-numbered one."""
        clone = self._copy()
        clone.ecmp = ecmp
        return clone

    def check_ranks(self, ranks: int, field: str = "ranks", expected: str | None = None) -> None:
        """Raise a clear error when more ranks are asked for than the topology has devices; `field` names what asked
        for them (an option such as ranks or gpus, or the topology a program runs on), `expected` what would do
        (default: --FIELD <= the devices, or a larger topology)."""
        if ranks > self.num_devices:
            expected = expected or f"--{field} <= {self.num_devices} or a larger topology"
            raise CollsimError(f"{field}: {ranks} ranks asked but topology {self.name} has only {self.num_devices} devices; "
                               f"expected {expected}")

    # ---- routing -----------------------------------------------------------------------------
    def route(self, src: int, dst: int) -> tuple[int, ...]:
        """Link ids a message from rank src to rank dst crosses (empty for src == dst)."""
        key = (src, dst)
        hit = self._routes.get(key)
        if hit is not None:
            return hit
        a, b = self.devices[self.placement[src]], self.devices[self.placement[dst]]
        path: Sequence[int] | None = [a] if a == b else None
        if path is None and self._router is not None and (self.multipath or not self.ecmp):
            path = self._router(a, b)
        if path is None:
            path = self._shortest_path(a, b, src, dst)
        try:
            links = tuple(self._link_of[(u, v)] for u, v in zip(path[:-1], path[1:]))
        except KeyError as exc:  # a router naming a missing link is a bug in the builder
            raise RuntimeError(f"topology {self.name}: route {src}->{dst} uses a missing link {exc}") from None
        self._routes[key] = links
        return links

    def _distances_to(self, target: int) -> np.ndarray:
        dist = self._dist_to.get(target)
        if dist is None:
            dist = np.full(self.num_nodes, -1, dtype=np.int64)
            dist[target] = 0
            queue = deque([target])
            while queue:
                v = queue.popleft()
                for u in self._in[v]:
                    if dist[u] < 0:
                        dist[u] = dist[v] + 1
                        queue.append(u)
            self._dist_to[target] = dist
        return dist

    def _shortest_path(self, a: int, b: int, src_rank: int, dst_rank: int) -> list[int]:
        dist = self._distances_to(b)
        if dist[a] < 0:
            raise CollsimError(f"topology {self.name}: no path from {self.node_names[a]} to {self.node_names[b]} "
                               f"(rank {src_rank} cannot reach rank {dst_rank})")
        path, u = [a], a
        salt = zlib.crc32(f"{src_rank},{dst_rank}".encode())
        while u != b:
            nexts = [v for v in self._out[u] if dist[v] == dist[u] - 1]
            u = nexts[salt % len(nexts)] if self.ecmp else nexts[0]
            path.append(u)
        return path

    def bfs_hops(self, src: int, dst: int) -> int:
        """Hop count of a shortest path between two ranks' devices (a check on builders' routers)."""
        a, b = self.devices[self.placement[src]], self.devices[self.placement[dst]]
        return int(self._distances_to(b)[a])

    def unreachable(self) -> list[tuple[int, int]]:
        """Device pairs (as device indices) with no path, first few only."""
        bad = []
        for j, b in enumerate(self.devices):
            dist = self._distances_to(b)
            for i, a in enumerate(self.devices):
                if dist[a] < 0:
                    bad.append((i, j))
                    if len(bad) >= 5:
                        return bad
        return bad

    # ---- summaries ---------------------------------------------------------------------------
    def path_cost(self, src: int, dst: int) -> tuple[float, float]:
        """(sum of latencies, bottleneck bandwidth) of the route between two ranks."""
        links = self.route(src, dst)
        if not links:
            return 0.0, float("inf")
        idx = list(links)
        return float(self.latency[idx].sum()), float(self.bandwidth[idx].min())

    def bisection_bandwidth(self, max_links: int = 20000) -> float | None:
        """Max flow (B/s) from the first half of the devices to the second half, or None when too large to compute."""
        import networkx as nx

        if self.num_links > max_links or self.num_devices < 2:
            return None
        g = nx.DiGraph()
        for lid in range(self.num_links):
            g.add_edge(int(self.link_src[lid]), int(self.link_dst[lid]), capacity=float(self.bandwidth[lid]))
        half = self.num_devices // 2
        order = [self.devices[d] for d in self.placement]
        for node in order[:half]:
            g.add_edge("S", node, capacity=float("inf"))
        for node in order[half:2 * half]:
            g.add_edge(node, "T", capacity=float("inf"))
        return float(nx.maximum_flow_value(g, "S", "T"))

    def summary(self) -> dict:
        """Counts of nodes by kind, links, and the range of link numbers."""
        kinds = {k: self.node_kinds.count(k) for k in NODE_KINDS if k in self.node_kinds}
        return {"name": self.name, "description": self.description, "devices": self.num_devices, "nodes": kinds,
                "links": self.num_links,
                "latency_s": [float(self.latency.min()), float(self.latency.max())] if self.num_links else [],
                "bandwidth_Bps": [float(self.bandwidth.min()), float(self.bandwidth.max())] if self.num_links else [],
                "ecmp": self.ecmp}


class IdealTopology(Topology):
    """The textbook alpha-beta machine: a dedicated full-duplex link for every ordered pair of ranks, made on demand."""

    __slots__ = ("uniform_latency", "uniform_bandwidth")
    ideal = True

    def __init__(self, devices: int, latency: float, bandwidth: float, name: str | None = None):
        if devices < 1:
            raise CollsimError(f"ideal: {devices} devices; expected an integer >= 1")
        latency = check_link_value("latency", latency, "ideal: ", unbounded=True)
        bandwidth = check_link_value("bandwidth", bandwidth, "ideal: ", unbounded=True)
        self.name = name or f"ideal:{devices}"
        self.description = "a dedicated link per ordered pair of ranks (the textbook alpha-beta machine)"
        self.node_names = [f"gpu{i}" for i in range(devices)]
        self.node_kinds = ["gpu"] * devices
        self.devices = list(range(devices))
        self.placement = list(range(devices))
        self.ecmp = False
        self.multipath = False
        self.origin = None
        self.uniform_latency = float(latency)
        self.uniform_bandwidth = float(bandwidth)
        self._routes = {}

    @property
    def num_links(self) -> int:
        return self.num_devices * (self.num_devices - 1)

    @property
    def latency(self) -> _Uniform:  # type: ignore[override]
        return _Uniform(self.uniform_latency, self.num_links)

    @property
    def bandwidth(self) -> _Uniform:  # type: ignore[override]
        return _Uniform(self.uniform_bandwidth, self.num_links)

    def _ends(self, lid: int) -> tuple[int, int]:
        d = self.num_devices
        a, rest = divmod(int(lid), d - 1)
        return a, rest if rest < a else rest + 1

    def link(self, lid: int) -> Link:
        a, b = self._ends(lid)
        return Link(int(lid), self.node_names[a], self.node_names[b], self.uniform_latency, self.uniform_bandwidth)

    def link_name(self, lid: int) -> str:
        a, b = self._ends(lid)
        return f"{self.node_names[a]}->{self.node_names[b]}"

    def link_id(self, a: int, b: int) -> int:
        """Id of the link from device a to device b."""
        return a * (self.num_devices - 1) + (b if b < a else b - 1)

    def _copy(self) -> IdealTopology:
        clone = object.__new__(IdealTopology)
        _copy_slots(self, clone)
        clone._routes = {}
        clone.placement = list(self.placement)
        return clone

    def with_links(self, latency: float | None = None, bandwidth: float | None = None) -> IdealTopology:
        clone = self._copy()
        if latency is not None:
            clone.uniform_latency = check_link_value("latency", latency, "", unbounded=True)
        if bandwidth is not None:
            clone.uniform_bandwidth = check_link_value("bandwidth", bandwidth, "", unbounded=True)
        return clone

    def route(self, src: int, dst: int) -> tuple[int, ...]:
        if src == dst:
            return ()
        return (self.link_id(self.placement[src], self.placement[dst]),)

    def route_array(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Link ids for arrays of (src, dst) rank pairs, all distinct ranks."""
        place = np.asarray(self.placement, dtype=np.int64)
        a, b = place[src], place[dst]
        return a * (self.num_devices - 1) + np.where(b < a, b, b - 1)

    def path_cost(self, src: int, dst: int) -> tuple[float, float]:
        if src == dst:
            return 0.0, float("inf")
        return self.uniform_latency, self.uniform_bandwidth

    def bfs_hops(self, src: int, dst: int) -> int:
        return 0 if src == dst else 1

    def unreachable(self) -> list[tuple[int, int]]:
        return []

    def bisection_bandwidth(self, max_links: int = 20000) -> float | None:
        half = self.num_devices // 2
        return float(half * (self.num_devices - half) * self.uniform_bandwidth) if half else None

    def summary(self) -> dict:
        return {"name": self.name, "description": self.description, "devices": self.num_devices,
                "nodes": {"gpu": self.num_devices}, "links": self.num_links,
                "latency_s": [self.uniform_latency] * 2, "bandwidth_Bps": [self.uniform_bandwidth] * 2, "ecmp": False}


def _copy_slots(source: Topology, clone: Topology) -> None:
    """Give `clone` every attribute `source` has set, as its classes' __slots__ declare them."""
    for klass in type(source).__mro__:
        for slot in klass.__dict__.get("__slots__", ()):
            member = klass.__dict__[slot]
            try:
                member.__set__(clone, member.__get__(source, klass))
            except AttributeError:  # not set on the source
                pass


class _Uniform:
    """A read-only array-like of one value repeated (latency or bandwidth of every ideal link)."""

    __slots__ = ("value", "size")

    def __init__(self, value: float, size: int):
        self.value, self.size = value, size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index):
        if isinstance(index, (int, np.integer)):
            return self.value
        count = len(range(*index.indices(self.size))) if isinstance(index, slice) else len(np.atleast_1d(index))
        return np.full(count, self.value)

    def min(self) -> float:
        return self.value

    def max(self) -> float:
        return self.value
