"""Named hardware presets, each built from public numbers (see docs/topologies.md for the sources).

Bandwidths are per direction. Latencies are per link and are rough: they follow the per-hop
latencies of NCCL's tuning model (REFERENCE.md) split over the links a hop crosses, and are meant
to be replaced by a measured profile (--profile) when one exists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import CollsimError
from .builders import GraphBuilder, cluster, torus
from .model import Topology

GB = 1e9

# Networks between nodes: per-direction bandwidth of one NIC port and latency per network link.
NETWORKS = {
    "ib400": (400e9 / 8, 1.0e-6, "400 Gbit/s InfiniBand NDR (ConnectX-7, Quantum-2 leaf-spine)"),
    "roce200": (200e9 / 8, 1.5e-6, "200 Gbit/s RoCE Ethernet (ConnectX-6 Dx class, leaf-spine)"),
}


@dataclass(frozen=True)
class Preset:
    """A named machine: how to build it for a node count and network, and what it is."""

    name: str
    summary: str
    gpus_per_node: int
    build: Callable[[int, str], Topology]
    multinode: bool = True


PCIE4, PCIE5 = 31.5 * GB, 63 * GB  # x16, per direction: 16 / 32 GT/s x 16 lanes x 128/130 / 8


def _nvswitch_box(name: str, gpus: int, nvlink_Bps: float, nvlink_latency: float = 0.3e-6, pcie: float = PCIE5):
    def build(nodes: int, net: str) -> Topology:
        net_bw, net_lat, _ = NETWORKS[net]
        label = name if nodes == 1 else f"{name}:nodes={nodes},net={net}"
        return cluster(nodes, gpus, "switch", "gpu", nvlink_latency, nvlink_Bps, net_lat, net_bw, name=label,
                       pcie_bandwidth=pcie)
    return build


def _mi300x(nodes: int, net: str) -> Topology:
    net_bw, net_lat, _ = NETWORKS[net]
    label = "mi300x" if nodes == 1 else f"mi300x:nodes={nodes},net={net}"
    return cluster(nodes, 8, "mesh", "gpu", 0.6e-6, 64 * GB, net_lat, net_bw, name=label)


def _pcie_box(nodes: int, net: str) -> Topology:
    if nodes != 1:
        raise CollsimError("pcie-8gpu: single node only; use cluster:nodes=N,... for several PCIe nodes")
    pcie, upi = PCIE4, 62.4 * GB  # three UPI links at 11.2 GT/s
    g = GraphBuilder()
    gpus = [g.node(f"gpu{i}", "gpu") for i in range(8)]
    cpus = [g.node(f"cpu{s}", "cpu") for s in range(2)]
    for k in range(4):
        sw = g.node(f"pcieswitch{k}", "switch")
        g.cable(sw, cpus[k // 2], 0.5e-6, pcie)
        for gpu in gpus[2 * k:2 * k + 2]:
            g.cable(gpu, sw, 0.5e-6, pcie)
    g.cable(cpus[0], cpus[1], 0.5e-6, upi)
    return g.build("pcie-8gpu", gpus, None, "8 GPUs on PCIe 4.0 x16 behind 4 PCIe switches, 2 CPU sockets, no NVLink")


def _tpu(nodes: int, net: str) -> Topology:
    if nodes != 1:
        raise CollsimError("tpu-v4-4x4x4: one slice only; use torus:AxBxC,bw=...,lat=... for other shapes")
    topo = torus([4, 4, 4], latency=1e-6, bandwidth=50 * GB)
    topo.name = "tpu-v4-4x4x4"
    topo.description = "TPU-v4-like 4x4x4 3-D torus slice (64 chips, 6 ICI links each)"
    return topo


PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("dgx-a100", "8x A100 SXM, NVSwitch (NVLink 3: 300 GB/s per direction per GPU), 8x 200G HDR IB", 8,
           _nvswitch_box("dgx-a100", 8, 300 * GB, pcie=PCIE4)),
    Preset("dgx-h100", "8x H100 SXM, NVSwitch (NVLink 4: 450 GB/s per direction per GPU), 8x 400G NDR IB", 8,
           _nvswitch_box("dgx-h100", 8, 450 * GB)),
    Preset("hgx-b200", "8x B200, NVSwitch (NVLink 5: 900 GB/s per direction per GPU), 8x 400G NICs", 8,
           _nvswitch_box("hgx-b200", 8, 900 * GB)),
    Preset("gb200-nvl72", "72x B200 in one NVLink 5 domain (900 GB/s per direction per GPU); racks = nodes", 72,
           _nvswitch_box("gb200-nvl72", 72, 900 * GB, nvlink_latency=0.5e-6)),
    Preset("pcie-8gpu", "8 GPUs on PCIe 4.0 x16 (31.5 GB/s per direction), 2 sockets joined by UPI, no NVLink", 8,
           _pcie_box, multinode=False),
    Preset("mi300x", "8x MI300X, xGMI fully connected (64 GB/s per direction per GPU pair), 8x 400G NICs", 8, _mi300x),
    Preset("tpu-v4-4x4x4", "TPU-v4-like 4x4x4 3-D torus slice, 50 GB/s per ICI link per direction", 64, _tpu,
           multinode=False),
)}


def build_preset(name: str, nodes: int = 1, net: str = "ib400") -> Topology:
    """The preset machine, with `nodes` of them joined by network `net` (ib400 or roce200)."""
    preset = PRESETS.get(name)
    if preset is None:
        raise CollsimError(f"topology: unknown preset {name!r}; expected one of {', '.join(PRESETS)}")
    if net not in NETWORKS:
        raise CollsimError(f"net: unknown network {net!r}; expected one of {', '.join(NETWORKS)}")
    if isinstance(nodes, bool) or int(nodes) != nodes or nodes < 1:
        raise CollsimError(f"nodes: {nodes!r} is not a node count; expected an integer >= 1")
    if nodes > 1 and not preset.multinode:
        raise CollsimError(f"nodes: preset {name} is a single machine; nodes={nodes} is not available for it")
    return preset.build(int(nodes), net)
