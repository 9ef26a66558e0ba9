"""Rail-optimised leaf-spine fabrics: the network NVIDIA's DGX SuperPOD reference architectures describe.

NIC k of every node of a scalable unit (SU) goes to leaf switch k of that SU, its *rail* (with
`rails_per_leaf` > 1, one leaf takes several consecutive rails: a GB200 tray's NICs); leaves are
joined by a spine layer, non-blocking unless `oversub`. Traffic between two NICs of one rail and
one SU stays on their leaf; anything else goes leaf -> spine -> leaf. Three ways of spreading it
over the spines (`routing`):

- adaptive (default): InfiniBand adaptive routing, or the many flows of NCCL's channels spread
  by ECMP, keep every uplink equally loaded. For max-min sharing a spine layer in which every
  leaf reaches every spine, perfectly spread, is exactly one aggregated core link per leaf (each
  way) whose bandwidth is the sum of the leaf's uplinks: that is what this builds (one `spines`
  node), so no route can pile onto one spine.
- ecmp: each (source, destination) pair hashed (CRC32) onto one of the leaf's uplinks, one spine
  node each: pairs can collide on an uplink, as static hashing of few large flows does.
- static: InfiniBand's destination-mod-k forwarding (the subnet manager's default tables): the
  uplink is the destination port's index on its leaf mod the uplinks.

A leaf has as many uplinks as ports to the nodes of a full SU, divided by `oversub` (1:1 is the
SuperPOD's non-blocking fabric; the reference architectures cable leaves and spines for the full SU
even where fewer nodes are installed); each uplink runs at the NIC port's bandwidth. One spine layer joins
every SU (the SuperPOD's 2-tier fabric, up to 4 SUs; larger ones add a core tier not modelled here).
"""

from __future__ import annotations

import math
import zlib

from ..errors import CollsimError
from .builders import GraphBuilder, _count, _positive, boxes, nic_count, nic_layout
from .model import Topology

ROUTINGS = {
    "adaptive": "adaptive routing: every leaf's uplinks as one aggregated link to the spine layer (perfect spreading)",
    "ecmp": "hashed ECMP: each (source, destination) pair on one uplink by a CRC32 hash (pairs can collide)",
    "static": "InfiniBand destination-mod-k: the uplink is the destination's port on its leaf mod the uplinks",
}
SU_NODES = 32  # DGX SuperPOD H100 / B200: 32 nodes per scalable unit, one leaf per rail


def check_routing(routing: str) -> str:
    """`routing` when it is one of ROUTINGS, else a clear error."""
    if routing not in ROUTINGS:
        raise CollsimError(f"routing: {routing!r}; expected one of {', '.join(ROUTINGS)} ({'; '.join(ROUTINGS.values())})")
    return routing


def rail_fabric(nodes: int, gpus: int = 8, intra: str = "switch", intra_latency: float = 0.3e-6,
                intra_bandwidth: float = 450e9, net_latency: float = 1e-6, net_bandwidth: float = 50e9,
                nics: int | None = None, su: int = SU_NODES, rails_per_leaf: int = 1, oversub: float = 1.0,
                routing: str = "adaptive", pcie_latency: float = 0.0, pcie_bandwidth: float = 63e9,
                name: str | None = None, pxn: bool = False) -> Topology:
    """N nodes of G GPUs (NVSwitch-like switch or full mesh inside), one NIC per GPU (or `nics` per node, shared or
    bonded as in builders.cluster), each NIC on its rail's leaf in its SU of `su` nodes, leaves joined by spines.

    `pxn`: a GPU sending to a GPU of another node on another rail first hands the data over NVLink to the GPU of its
    own node on the destination's rail, which sends it through its NIC (NCCL's PXN, NCCL_PXN_DISABLE=0 since NCCL
    2.12), so the pair stays on its rail. Off by default: the pair then crosses the spines, which under adaptive
    routing costs no bandwidth, and its step costs the network latency alone, as NCCL's tuning model charges a ring's
    step across nodes (with the relay's NVLink hop, predict's ring at 8 B..64 KiB on 2 nodes runs 18% over NCCL's
    model: tests/simulator/test_small_sizes_model.py).
    """
    nodes, gpus, su = _count("nodes", nodes), _count("gpus", gpus), _count("su", su)
    rails_per_leaf = _count("rails_per_leaf", rails_per_leaf)
    check_routing(routing)
    if intra not in ("switch", "mesh"):
        raise CollsimError(f"intra: {intra!r}; expected switch (NVSwitch-like) or mesh (every GPU pair linked)")
    if not oversub >= 1:
        raise CollsimError(f"oversub: {oversub!r} must be >= 1 (1 = non-blocking, 2 = 2:1 oversubscribed)")
    for field, value in (("intra bandwidth", intra_bandwidth), ("net bandwidth", net_bandwidth),
                         ("pcie bandwidth", pcie_bandwidth)):
        _positive(field, value)
    share, bond, ports = nic_layout(gpus, nic_count(gpus, nics))
    port_bw = net_bandwidth * bond
    g = GraphBuilder()
    dev, nvs = boxes(g, nodes, gpus, intra, intra_latency, intra_bandwidth)
    card_of = _nics(g, nodes, gpus, ports, share, pcie_latency, pcie_bandwidth) if nodes > 1 else []
    leaf_of, port_of = _leaves(g, nodes, gpus, ports, share, su, rails_per_leaf, card_of, net_latency, port_bw)
    leaves = sorted(set(leaf_of.values()))
    uplinks = max(1, math.ceil(su * min(rails_per_leaf, ports) / oversub))  # cabled for the full SU
    core = _spines(g, leaves, routing, uplinks, net_latency, port_bw)

    def spine(a: int, b: int) -> int:
        if len(core) == 1:
            return core[0]
        if routing == "ecmp":
            return core[zlib.crc32(f"{a},{b}".encode()) % len(core)]
        return core[port_of[card_of[b]] % len(core)]

    def router(a: int, b: int) -> tuple[int, ...] | None:
        if a >= len(dev) or b >= len(dev):  # not a GPU (a switch made a device): the shortest path
            return None
        na, nb = a // gpus, b // gpus  # GPU nodes are numbered first, so node index == device index
        if na == nb:
            return (a, nvs[na], b) if nvs else (a, b)
        relay = na * gpus + b % gpus  # the GPU of a's node on b's rail
        hand = () if not pxn or card_of[relay] == card_of[a] else ((a, nvs[na]) if nvs else (a,))
        a = relay if hand else a
        ca, cb = card_of[a], card_of[b]
        la, lb = leaf_of[ca], leaf_of[cb]
        return hand + ((a, ca, la, cb, b) if la == lb else (a, ca, la, spine(hand[0] if hand else a, b), lb, cb, b))

    label = name or (f"rails:nodes={nodes},gpus={gpus}" + (f",nics={nics}" if nics not in (None, gpus) else "")
                     + f",routing={routing}")
    spines = f"{uplinks} uplinks per leaf, {oversub:g}:1, {routing} routing" if len(leaves) > 1 else "no spines"
    spines += ", PXN (cross-rail pairs relayed over NVLink)" if pxn else ", no PXN"
    return g.build(label, dev, router, f"{nodes} nodes x {gpus} GPUs, {ports} rails, rail-optimised leaf-spine: "
                   f"{su} nodes per SU, {len(leaves)} leaves, {spines}", multipath=True)


def _nics(g: GraphBuilder, nodes: int, gpus: int, ports: int, share: int, latency: float, bandwidth: float) -> list[int]:
    """Each node's NIC nodes, each GPU on its NIC's PCIe link; returns the NIC node of every GPU."""
    card_of = []
    for i in range(nodes):
        cards = [g.node(f"n{i}nic{k}", "nic") for k in range(ports)]
        for k in range(gpus):
            card_of.append(cards[k // share])
            g.cable(i * gpus + k, card_of[-1], latency, bandwidth)
    return card_of


def _leaves(g: GraphBuilder, nodes: int, gpus: int, ports: int, share: int, su: int, per_leaf: int, card_of: list[int],
            latency: float, bandwidth: float) -> tuple[dict[int, int], dict[int, int]]:
    """Leaf switches, NIC k of node i on leaf k // per_leaf of SU i // su; returns each NIC node's leaf node and its
    port number on that leaf (what destination-mod-k routing reads)."""
    leaf_at: dict[tuple[int, int], int] = {}
    leaf_of: dict[int, int] = {}
    port_of: dict[int, int] = {}
    for i in range(nodes if nodes > 1 else 0):
        for k in range(ports):
            key = (i // su, k // per_leaf)
            if key not in leaf_at:
                leaf_at[key] = g.node(f"su{key[0]}leaf{key[1]}", "switch")
            card = card_of[i * gpus + k * share]
            g.cable(card, leaf_at[key], latency, bandwidth)
            leaf_of[card], port_of[card] = leaf_at[key], (i % su) * per_leaf + k % per_leaf
    return leaf_of, port_of


def _spines(g: GraphBuilder, leaves: list[int], routing: str, uplinks: int, latency: float, bandwidth: float) -> list[int]:
    """The spine layer: one aggregated node (adaptive; each leaf's link to it carries all its uplinks) or one node per
    uplink, every leaf linked to each (ecmp, static); none for a single leaf."""
    if len(leaves) < 2:
        return []
    if routing == "adaptive":
        core = g.node("spines", "switch")
        for leaf in leaves:
            g.cable(leaf, core, latency, uplinks * bandwidth)
        return [core]
    spines = [g.node(f"spine{j}", "switch") for j in range(uplinks)]
    for leaf in leaves:
        for sp in spines:
            g.cable(leaf, sp, latency, bandwidth)
    return spines
