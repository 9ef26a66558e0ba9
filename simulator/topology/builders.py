"""Builders of regular machines: ideal, switch, ring, torus, fat tree (leaf-spine) and multi-node clusters.

Every builder takes the per-link latency (s) and bandwidth (B/s per direction) and returns a
Topology with a router that follows the shape (dimension-order on a torus, up-down in a tree),
so that a 4096-GPU cluster needs no graph search.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import CollsimError
from .model import IdealTopology, Topology

DEFAULT_LATENCY = 1e-6
DEFAULT_BANDWIDTH = 25e9


class GraphBuilder:
    """Collects named nodes and full- or half-duplex cables, then makes a Topology."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.kinds: list[str] = []
        self.index: dict[str, int] = {}
        self.links: list[tuple[int, int, float, float]] = []

    def node(self, name: str, kind: str) -> int:
        """Add a node; return its index."""
        if name in self.index:
            raise CollsimError(f"topology: duplicate node name {name!r}")
        self.index[name] = len(self.names)
        self.names.append(name)
        self.kinds.append(kind)
        return self.index[name]

    def cable(self, a: int, b: int, latency: float, bandwidth: float, duplex: bool = True) -> None:
        """A link a -> b, and b -> a too when full duplex."""
        self.links.append((a, b, latency, bandwidth))
        if duplex:
            self.links.append((b, a, latency, bandwidth))

    def build(self, name: str, devices: Sequence[int], router=None, description: str = "", multipath: bool = False) -> Topology:
        """The topology with these devices (node indices, in rank order); `multipath`: the router spreads pairs itself."""
        return Topology(name, self.names, self.kinds, self.links, devices, router=router, description=description,
                        multipath=multipath)


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise CollsimError(f"{name}: {value!r} must be > 0")


def _count(name: str, value: int, minimum: int = 1) -> int:
    if isinstance(value, bool) or int(value) != value or value < minimum:
        raise CollsimError(f"{name}: {value!r} is not a count; expected an integer >= {minimum}")
    return int(value)


def ideal(n: int, latency: float = DEFAULT_LATENCY, bandwidth: float = DEFAULT_BANDWIDTH) -> IdealTopology:
    """A dedicated full-duplex link between every ordered pair of n devices (alpha = latency, beta = 1/bandwidth)."""
    _positive("bandwidth", bandwidth)
    return IdealTopology(_count("ideal devices", n), latency, bandwidth)


def switch(n: int, latency: float = DEFAULT_LATENCY, bandwidth: float = DEFAULT_BANDWIDTH) -> Topology:
    """n devices on one non-blocking switch: a message crosses two links (2 latency + bytes / bandwidth)."""
    n = _count("switch devices", n)
    _positive("bandwidth", bandwidth)
    g = GraphBuilder()
    gpus = [g.node(f"gpu{i}", "gpu") for i in range(n)]
    sw = g.node("switch", "switch")
    for gpu in gpus:
        g.cable(gpu, sw, latency, bandwidth)
    return g.build(f"switch:{n}", gpus, lambda a, b: (a, sw, b), f"{n} devices on one non-blocking switch")


def ring(n: int, bidirectional: bool = True, latency: float = DEFAULT_LATENCY,
         bandwidth: float = DEFAULT_BANDWIDTH) -> Topology:
    """n devices in a ring; bidirectional (shortest way round, ties go forward) or unidirectional (i -> i+1 only)."""
    n = _count("ring devices", n)
    _positive("bandwidth", bandwidth)
    g = GraphBuilder()
    gpus = [g.node(f"gpu{i}", "gpu") for i in range(n)]
    if n == 2:
        g.cable(gpus[0], gpus[1], latency, bandwidth, duplex=True)
    elif n > 2:
        for i in range(n):
            g.cable(gpus[i], gpus[(i + 1) % n], latency, bandwidth, duplex=bidirectional)

    def router(a: int, b: int) -> list[int]:
        forward = (b - a) % n
        step = -1 if bidirectional and n - forward < forward else 1
        path = [a]
        while path[-1] != b:
            path.append((path[-1] + step) % n)
        return path

    kind = "bidirectional" if bidirectional else "unidirectional"
    return g.build(f"ring:{n}" + ("" if bidirectional else ",uni"), gpus, router, f"{n} devices in a {kind} ring")


def torus(dims: Sequence[int], latency: float = DEFAULT_LATENCY, bandwidth: float = DEFAULT_BANDWIDTH) -> Topology:
    """A 2-D or 3-D torus with wrap-around links; dimension-order routing, shortest way in each dimension."""
    dims = [_count("torus dimension", d) for d in dims]
    if len(dims) not in (2, 3):
        raise CollsimError(f"torus: {'x'.join(map(str, dims))} has {len(dims)} dimensions; expected 2 or 3 (e.g. 4x4 or 4x4x4)")
    _positive("bandwidth", bandwidth)
    total = 1
    for d in dims:
        total *= d
    strides = [1] * len(dims)
    for k in range(len(dims) - 2, -1, -1):
        strides[k] = strides[k + 1] * dims[k + 1]

    def coords(i: int) -> list[int]:
        return [(i // strides[k]) % dims[k] for k in range(len(dims))]

    g = GraphBuilder()
    gpus = [g.node("tpu" + "_".join(map(str, coords(i))), "gpu") for i in range(total)]
    for i in range(total):
        c = coords(i)
        for k, size in enumerate(dims):
            if size == 1 or (size == 2 and c[k] == 1):
                continue
            j = i + (((c[k] + 1) % size) - c[k]) * strides[k]
            g.cable(i, j, latency, bandwidth)

    def router(a: int, b: int) -> list[int]:
        path, cur = [a], coords(a)
        target = coords(b)
        for k, size in enumerate(dims):
            forward = (target[k] - cur[k]) % size
            step = 1 if forward <= size - forward else -1
            while cur[k] != target[k]:
                cur[k] = (cur[k] + step) % size
                path.append(sum(c * s for c, s in zip(cur, strides)))
        return path

    shape = "x".join(map(str, dims))
    return g.build(f"torus:{shape}", gpus, router, f"{shape} torus, dimension-order routing")


def fat_tree(hosts: int, leaf: int = 4, oversub: float = 1.0, latency: float = DEFAULT_LATENCY,
             bandwidth: float = DEFAULT_BANDWIDTH) -> Topology:
    """Two-level leaf-spine: `leaf` hosts per leaf switch, each leaf with leaf/oversub uplinks, one to each spine."""
    hosts, leaf = _count("fat_tree hosts", hosts), _count("fat_tree leaf", leaf)
    if not oversub >= 1:
        raise CollsimError(f"oversub: {oversub!r} must be >= 1 (1 = non-blocking, 2 = 2:1 oversubscribed)")
    _positive("bandwidth", bandwidth)
    uplinks = leaf / oversub
    if uplinks < 1 or uplinks != int(uplinks):
        raise CollsimError(f"oversub: {leaf} hosts per leaf / oversub {oversub:g} = {uplinks:g} uplinks; "
                           f"choose oversub so that it is a whole number >= 1")
    spines = int(uplinks)
    g = GraphBuilder()
    gpus = [g.node(f"gpu{i}", "gpu") for i in range(hosts)]
    leaves = [g.node(f"leaf{j}", "switch") for j in range((hosts + leaf - 1) // leaf)]
    for i, gpu in enumerate(gpus):
        g.cable(gpu, leaves[i // leaf], latency, bandwidth)
    spine_nodes = [g.node(f"spine{k}", "switch") for k in range(spines)] if len(leaves) > 1 else []
    for lf in leaves:
        for sp in spine_nodes:
            g.cable(lf, sp, latency, bandwidth)

    def router(a: int, b: int) -> tuple[int, ...]:
        la, lb = leaves[a // leaf], leaves[b // leaf]
        if la == lb:
            return (a, la, b)
        return (a, la, spine_nodes[b % spines], lb, b)

    return g.build(f"fat_tree:hosts={hosts},leaf={leaf},oversub={oversub:g}", gpus, router,
                   f"leaf-spine: {len(leaves)} leaves of {leaf} hosts, {len(spine_nodes)} spines, {oversub:g}:1 oversubscribed")


def cluster(nodes: int, gpus: int = 8, intra: str = "switch", nic: str = "gpu", intra_latency: float = 0.3e-6,
            intra_bandwidth: float = 450e9, net_latency: float = 1e-6, net_bandwidth: float = 50e9,
            nodes_per_leaf: int | None = None, oversub: float = 1.0, name: str | None = None,
            pcie_latency: float = 0.0, pcie_bandwidth: float = 63e9, nics: int | None = None) -> Topology:
    """N nodes of G GPUs (NVSwitch-like switch or full NVLink/xGMI mesh inside), NIC nodes (one per GPU or per node) into a leaf-spine.

    A NIC hangs off its GPU (or the node's switch) by a PCIe link (default PCIe 5.0 x16, 63 GB/s per
    direction, no added latency) and reaches its leaf switch by a network link. With nic=gpu,
    `nics` (NICs per node, default G) sets the rails: fewer NICs than GPUs are shared by
    consecutive GPUs (p4de: 4 NICs, GPUs 0-1 on NIC 0, ...); more are bonded per GPU into one NIC
    node of nics/G times the bandwidth (p5: 32 x 100G = 4 x 100G per GPU, which NCCL stripes
    channels over).
    """
    nodes, gpus = _count("nodes", nodes), _count("gpus", gpus)
    if intra not in ("switch", "mesh"):
        raise CollsimError(f"intra: {intra!r}; expected switch (NVSwitch-like) or mesh (every GPU pair linked)")
    if nic not in ("gpu", "node"):
        raise CollsimError(f"nic: {nic!r}; expected gpu (one NIC per GPU) or node (one NIC per node)")
    if nic == "node" and intra != "switch":
        raise CollsimError("nic: one NIC per node needs intra=switch (the NIC hangs off the node's switch)")
    if not oversub >= 1:
        raise CollsimError(f"oversub: {oversub!r} must be >= 1")
    for field, value in (("intra bandwidth", intra_bandwidth), ("net bandwidth", net_bandwidth),
                         ("pcie bandwidth", pcie_bandwidth)):
        _positive(field, value)
    nics = nic_count(gpus, nics) if nic == "gpu" else 1
    share, bond, ports = nic_layout(gpus, nics)
    per_leaf = nodes_per_leaf or max(1, 32 // ports)
    per_leaf = min(_count("nodes_per_leaf", per_leaf), nodes)
    down = per_leaf * ports
    spines = max(1, int(down // oversub))
    g = GraphBuilder()
    dev, nvs = boxes(g, nodes, gpus, intra, intra_latency, intra_bandwidth)
    leaves = [g.node(f"leaf{j}", "switch") for j in range((nodes + per_leaf - 1) // per_leaf)] if nodes > 1 else []
    spine_nodes = [g.node(f"spine{k}", "switch") for k in range(spines)] if len(leaves) > 1 else []
    nic_of: dict[int, int] = {}  # device (nic=gpu) or node index (nic=node) -> its NIC node
    for i in range(nodes if leaves else 0):
        if nic == "gpu":
            cards = [g.node(f"n{i}nic{k}", "nic") for k in range(gpus // share)]
            for card in cards:
                g.cable(card, leaves[i // per_leaf], net_latency, net_bandwidth * bond)
            for k, d in enumerate(dev[i * gpus:(i + 1) * gpus]):
                card = nic_of[d] = cards[k // share]
                g.cable(d, card, pcie_latency, pcie_bandwidth)
        else:
            card = nic_of[i] = g.node(f"n{i}nic", "nic")
            g.cable(nvs[i], card, pcie_latency, pcie_bandwidth)
            g.cable(card, leaves[i // per_leaf], net_latency, net_bandwidth)
    for lf in leaves:
        for sp in spine_nodes:
            g.cable(lf, sp, net_latency, net_bandwidth * bond)

    def router(a: int, b: int) -> tuple[int, ...]:
        na, nb = a // gpus, b // gpus  # device nodes are numbered first, so node index == device index
        if na == nb:
            return (a, nvs[na], b) if intra == "switch" else (a, b)
        la, lb = leaves[na // per_leaf], leaves[nb // per_leaf]
        up = (a, nic_of[a], la) if nic == "gpu" else (a, nvs[na], nic_of[na], la)
        down_ = (lb, nic_of[b], b) if nic == "gpu" else (lb, nic_of[nb], nvs[nb], b)
        if la == lb:
            return up + down_[1:]
        return up + (spine_nodes[b % spines],) + down_

    label = name or f"cluster:nodes={nodes},gpus={gpus},intra={intra},nic={nic}" + (f",nics={nics}" if nics != gpus else "")
    rails = "one NIC per " + nic if nic == "node" or nics == gpus else f"{nics} NICs per node"
    return g.build(label, dev, router,
                   f"{nodes} nodes x {gpus} GPUs ({'NVSwitch-like switch' if intra == 'switch' else 'full mesh'} inside, "
                   f"{rails}), {len(leaves)} leaves, {len(spine_nodes)} spines, {oversub:g}:1")


def nic_layout(gpus: int, nics: int) -> tuple[int, int, int]:
    """(GPUs per NIC, NICs bonded per GPU, NIC nodes per node) for `nics` NICs on a node of `gpus` GPUs."""
    share, bond = max(1, gpus // nics), max(1, nics // gpus)
    return share, bond, nics // bond  # a bonded NIC is one node of bond x the bandwidth


def boxes(g: GraphBuilder, nodes: int, gpus: int, intra: str, latency: float, bandwidth: float) -> tuple[list[int], list[int]]:
    """The nodes' GPUs (numbered first, node by node) and, with intra=switch, one NVSwitch-like switch per node
    (else a full mesh of GPU pairs); returns (GPU node ids, switch node ids)."""
    dev = [g.node(f"n{i}g{k}", "gpu") for i in range(nodes) for k in range(gpus)]
    nvs = [g.node(f"n{i}nvswitch", "switch") for i in range(nodes)] if intra == "switch" else []
    for i in range(nodes):
        local = dev[i * gpus:(i + 1) * gpus]
        if intra == "switch":
            for d in local:
                g.cable(d, nvs[i], latency, bandwidth)
        else:
            for x in range(gpus):
                for y in range(x + 1, gpus):
                    g.cable(local[x], local[y], latency, bandwidth)
    return dev, nvs


def nic_count(gpus: int, nics: int | None) -> int:
    """NICs per node for one-NIC-per-GPU clusters: a divisor or a multiple of the GPU count."""
    if nics is None:
        return gpus
    nics = _count("nics", nics)
    if gpus % nics and nics % gpus:
        raise CollsimError(f"nics: {nics} NICs per node with {gpus} GPUs per node; expected a divisor or a multiple "
                           f"of {gpus} (GPUs share NICs evenly, or each GPU has the same number)")
    return nics
