"""Named hardware presets, each built from public numbers (see docs/topologies.md for the sources).

Bandwidths are per direction. Latencies are per link and are rough: they follow the per-hop
latencies of NCCL's tuning model (REFERENCE.md) split over the links a hop crosses, and are meant
to be replaced by a measured profile (--profile) when one exists. Every preset carries a
`Machine`: what NCCL's tuning model needs to know about it (GPU generation, link type, rails)
and the public source of its numbers. No number here is fitted to a log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import CollsimError
from .builders import GraphBuilder, cluster, torus
from .fabric import SU_NODES, check_routing, rail_fabric
from .model import Topology

if TYPE_CHECKING:
    from ..nccl.calibration import Calibration

GB = 1e9

# Networks between nodes: per-direction bandwidth of one NIC port and latency per network link.
NETWORKS = {
    "ib400": (400e9 / 8, 1.0e-6, "400 Gbit/s InfiniBand NDR (ConnectX-7, Quantum-2 leaf-spine)"),
    "roce200": (200e9 / 8, 1.5e-6, "200 Gbit/s RoCE Ethernet (ConnectX-6 Dx class, leaf-spine)"),
    "hdr200": (200e9 / 8, 1.0e-6, "200 Gbit/s InfiniBand HDR (ConnectX-6, Quantum leaf-spine)"),
    "efa100": (100e9 / 8, 2.0e-6, "100 Gbit/s AWS EFA port (SRD; p4d/p4de 4 per node, p5 32 per node)"),
    "efa400": (400e9 / 8, 2.0e-6, "400 Gbit/s AWS EFA v4 port (SRD; p6-b200 8 per node, one per GPU)"),
    "tcpxo200": (200e9 / 8, 2.0e-6, "200 Gbit/s GCP GPUDirect-TCPXO NIC (A3 Mega: 8 per node)"),
    "xdr800": (800e9 / 8, 1.0e-6, "800 Gbit/s InfiniBand XDR (ConnectX-8 SuperNIC, Quantum-X800 leaf-spine)"),
}

# FITTED, not published: extra latency per network step (s) on top of NCCL's tuning.cc figure, and what it was
# fitted to. Made by `python -m benchmarks.preset_accuracy --fit` (median |error| over sizes >= 1 MiB on the
# logs named); docs/accuracy.md reports each log with the value fitted on the *other* logs only. Empty: fitted per
# network (EFA: logs 02 + 03) it did not carry from one EFA log to the other; fitted per cloud family (EFA and TCPXO:
# 60 us on logs 01-03) it improves every held-out median but makes 03's worst 57% -> 108% (docs/accuracy.md), so
# the presets keep NCCL's constants.
NET_STEP_FIT: dict[str, tuple[float, str]] = {}


@dataclass(frozen=True)
class Machine:
    """What NCCL's tuning model needs to know about a preset, and where its numbers come from.

    arch and link select NCCL's constants (simulator/nccl/tuning.py); nics_per_node and net are the
    rails between nodes (None: single node only). The NCCL profile a provider documents for the
    machine, where it sets one: protocols (NCCL_PROTO; None: NCCL's own choice), buffsize
    (NCCL_BUFFSIZE, NCCL's default 4 MiB), nvls (NCCL_NVLS_ENABLE; None: NCCL's default).
    net_latency_us is the latency the network's NCCL plugin reports to NCCL (ncclNetProperties.latency),
    which NCCL adds to every step across nodes (tuning.cc: graph->latencyInter, twice for Simple: "flush
    extra latency"); 0 where the plugin reports none (NCCL's own InfiniBand transport).
    `source` names the public documents.
    """

    arch: str
    link: str = "nvlink"
    net: str = "ib400"
    nics_per_node: int | None = 8
    source: str = ""
    protocols: tuple[str, ...] | None = None
    buffsize: int = 4 << 20
    nvls: bool | None = None
    net_latency_us: float = 0.0


# The AWS EFA plugin (aws/aws-ofi-nccl src/platform-aws.cpp, platform_data_map, commit 2daf7d3 of 2026-08-21) reports
# `.latency = 75.0` us to NCCL for p4d/p4de and p5/p5e (since d87d61e, May 2023; 150 us before). Since f3f5c40 (May
# 2025) it also sets NCCL_BUFFSIZE=8388608 on them; the presets keep NCCL's 4 MiB, as the shared logs' era did (the
# plugin's 2023 EFA cheatsheet: "leave it out to use the default").
AWS_OFI_NCCL = "aws-ofi-nccl src/platform-aws.cpp (p4de, p5/p5e: latency 75 us reported to NCCL)"
EFA_PLUGIN_LATENCY_US = 75.0
# The same map's "p5en/p6-b200" entry (regex ^(p5en|p6-b200).*) reports 35 us and sets NCCL_BUFFSIZE=8388608.
AWS_OFI_NCCL_P6 = ("aws-ofi-nccl src/platform-aws.cpp, platform_data_map 'p5en/p6-b200' (commit 2daf7d3): latency 35 us "
                   "reported to NCCL, NCCL_BUFFSIZE=8388608")
EFA_P6_PLUGIN_LATENCY_US = 35.0
EFA_P4_SIMPLE = ("NCCL_PROTO=Simple: the plugin sets it where the EFA endpoint cannot deliver 128-byte stores in "
                 "order (force_proto_simple for p4d/p4de at its import, Jan 2023; the FI_OPT_EFA_*_IN_ORDER_ALIGNED_128_BYTES "
                 "check since Aug 2023, which p4d's EFA fails: aws/aws-ofi-nccl#715 logs 'Setting NCCL_PROTO to simple')")


@dataclass(frozen=True)
class Preset:
    """A named machine: how to build it for a node count, network and routing (simulator/topology/fabric.py
    ROUTINGS), and what it is. `fabric`: its nodes are joined by a rail-optimised leaf-spine (routing= applies)."""

    name: str
    summary: str
    gpus_per_node: int
    build: Callable[[int, str, str], Topology]
    multinode: bool = True
    machine: Machine | None = None
    fabric: bool = True
    gpu: str | None = None  # its GPU family when it has one GPU model (its summary names it; GPU_FAMILIES in formats/nccl_tests.py)


@dataclass(frozen=True)
class PresetBuild:
    """How a preset machine was built, every argument resolved: the preset, its node count, network, routing over the
    spines (simulator/topology/fabric.py ROUTINGS), the SHM load rate of a host-staged preset (None: its fitted one)
    and the calibration its links carry (simulator/nccl/calibration.py; None: the published links). A Topology's
    `origin`; NCCL's machine description (simulator/nccl/machine.py) is resolved from it."""

    preset: Preset
    nodes: int
    net: str
    routing: str = "adaptive"
    shm_Bps: float | None = None
    calibration: Calibration | None = None

    def build(self) -> Topology:
        """The machine as built (without its calibration)."""
        return build_preset(self.preset.name, self.nodes, self.net, self.shm_Bps, self.routing if self.routed else None)

    @property
    def routed(self) -> bool:
        """Whether routing= applies to the preset (a leaf-spine between nodes)."""
        return self.preset.multinode and self.preset.fabric


PCIE4, PCIE5 = 31.5 * GB, 63 * GB  # x16, per direction: 16 / 32 GT/s x 16 lanes x 128/130 / 8
PCIE6 = 121 * GB  # x16, per direction: 64 GT/s x 16 lanes / 8, 242 of every 256-byte FLIT payload (PCI-SIG PCIe 6.0)


def _label(name: str, nodes: int, net: str, routing: str) -> str:
    return name if nodes == 1 else f"{name}:nodes={nodes},net={net}" + ("" if routing == "adaptive" else f",routing={routing}")


def _nvswitch_box(name: str, gpus: int, nvlink_Bps: float, nvlink_latency: float = 0.3e-6, pcie: float = PCIE5,
                  nics: int | None = None, su: int = SU_NODES, rails_per_leaf: int = 1):
    """Nodes of `gpus` GPUs on an NVSwitch, `su` nodes per scalable unit of a rail-optimised leaf-spine (fabric.py)."""
    def build(nodes: int, net: str, routing: str = "adaptive") -> Topology:
        net_bw, net_lat, _ = NETWORKS[net]
        return rail_fabric(nodes, gpus, "switch", nvlink_latency, nvlink_Bps, net_lat, net_bw, nics=nics, su=su,
                           rails_per_leaf=rails_per_leaf, routing=routing, pcie_bandwidth=pcie,
                           name=_label(name, nodes, net, routing))
    return build


MAX_NVL_TRAYS = 18  # GB200 NVL72: 18 compute trays of 4 GPUs in one NVLink domain


def _nvl_trays(nodes: int, net: str, routing: str = "adaptive") -> Topology:
    """GB200 NVL compute trays (4 GPUs each) in one NVLink domain: every GPU on the rack's NVLink switch."""
    if nodes > MAX_NVL_TRAYS:
        raise CollsimError(f"nodes: {nodes} trays; gb200-nvl4 trays share one NVLink domain of at most "
                           f"{MAX_NVL_TRAYS} trays (72 GPUs); use gb200-nvl72:nodes=N for several racks")
    topo = cluster(1, 4 * nodes, "switch", "gpu", 0.5e-6, 900 * GB, name="gb200-nvl4" + (f":nodes={nodes}" if nodes > 1 else ""))
    topo.description = f"{nodes} GB200 compute tray(s) of 4 GPUs in one NVLink 5 domain (900 GB/s per direction per GPU)"
    return topo


# Host staging without P2P. NVIDIA disables peer-to-peer on GeForce cards, so NCCL connects two GPUs of one host with
# its SHM transport (NVIDIA/nccl src/transport/shm.cc): the sender's kernel stores into a pinned host-memory FIFO,
# placed by default on the receiver's side (NCCL_SHM_LOCALITY = SHM_RECV_SIDE), and the receiver's kernel loads it back
# over its own PCIe link. Every byte crosses PCIe twice (sender up, receiver down) and host memory once. NCCL charges
# these steps its PCI latencies (tuning.cc hwLat[PCI]: SHM has no constant of its own), which predict already uses.
# FITTED, not published: the rate (B/s per GPU) at which a GPU's kernel loads staged data out of host memory. Neither
# PCIe 4.0 x16 (31.5 GB/s) nor host DRAM (>= 100 GB/s on any server socket) explains the 2-3 GB/s of logs 12 and 13;
# their platform is not stated. Made by `python -m benchmarks.preset_accuracy --fit` (median |error| over sizes
# >= 1 MiB); docs/accuracy.md predicts each of the two logs with the value fitted on the *other* one only.
SHM_RATE_FIT: tuple[float, str] = (2.55e9, "logs 12, 13")


def host_staged(gpus: int = 4, shm_Bps: float | None = None) -> Topology:
    """Consumer GPUs, each on its own PCIe 4.0 x16 link to one CPU, no P2P: traffic is staged in host memory.

    Route a -> cpu -> b: a's PCIe link up (posted writes into the FIFO, PCIe rate), b's link down at the SHM
    load rate (default SHM_RATE_FIT), capped by PCIe.
    """
    shm_Bps = SHM_RATE_FIT[0] if shm_Bps is None else shm_Bps
    g = GraphBuilder()
    devices = [g.node(f"gpu{i}", "gpu") for i in range(gpus)]
    cpu = g.node("cpu", "cpu")
    for gpu in devices:
        g.cable(gpu, cpu, 0.5e-6, PCIE4, duplex=False)
        g.cable(cpu, gpu, 0.5e-6, min(PCIE4, shm_Bps), duplex=False)
    return g.build("rtx4090-pcie", devices, lambda a, b: (a, cpu, b),
                   f"{gpus}x RTX 4090 on PCIe 4.0 x16 (31.5 GB/s per direction), no NVLink, no P2P: NCCL's SHM "
                   f"transport stages every transfer in host memory, loaded back at {shm_Bps / GB:.2f} GB/s per GPU "
                   "(fitted, docs/accuracy.md)")


def _rtx4090(nodes: int, net: str, routing: str = "adaptive") -> Topology:
    if nodes != 1:
        raise CollsimError("rtx4090-pcie: single node only")
    return host_staged()


def _mi300x(nodes: int, net: str, routing: str = "adaptive") -> Topology:
    net_bw, net_lat, _ = NETWORKS[net]
    return rail_fabric(nodes, 8, "mesh", 0.6e-6, 64 * GB, net_lat, net_bw, routing=routing,
                       name=_label("mi300x", nodes, net, routing))


def _pcie_box(nodes: int, net: str, routing: str = "adaptive") -> Topology:
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


def _tpu(nodes: int, net: str, routing: str = "adaptive") -> Topology:
    if nodes != 1:
        raise CollsimError("tpu-v4-4x4x4: one slice only; use torus:AxBxC,bw=...,lat=... for other shapes")
    topo = torus([4, 4, 4], latency=1e-6, bandwidth=50 * GB)
    topo.name = "tpu-v4-4x4x4"
    topo.description = "TPU-v4-like 4x4x4 3-D torus slice (64 chips, 6 ICI links each)"
    return topo


SUPERPOD_H100 = ("NVIDIA DGX SuperPOD H100 reference architecture: 32 nodes per scalable unit, NIC k of every node on "
                 "leaf (rail) k, leaves joined by spines, non-blocking NDR")


PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("dgx-a100", "8x A100 SXM, NVSwitch (NVLink 3: 300 GB/s per direction per GPU), 8x 200G HDR IB", 8,
           _nvswitch_box("dgx-a100", 8, 300 * GB, pcie=PCIE4),
           machine=Machine("ampere", net="hdr200", source="NVIDIA DGX A100 datasheet: NVLink 3 600 GB/s bidirectional "
                           "per GPU, 8x ConnectX-6 200 Gb/s HDR"), gpu="a100"),
    Preset("dgx-h100", "8x H100 SXM, NVSwitch (NVLink 4: 450 GB/s per direction per GPU), 8x 400G NDR IB", 8,
           _nvswitch_box("dgx-h100", 8, 450 * GB),
           machine=Machine("hopper", source="NVIDIA DGX H100 datasheet: NVLink 4 900 GB/s bidirectional per GPU, "
                           f"8x ConnectX-7 400 Gb/s; {SUPERPOD_H100}"), gpu="h100"),
    Preset("dgx-h200", "8x H200 SXM, NVSwitch (NVLink 4: 450 GB/s per direction per GPU), 8x 400G NDR IB", 8,
           _nvswitch_box("dgx-h200", 8, 450 * GB),
           machine=Machine("hopper", source="NVIDIA DGX H200 datasheet: 8x H200 141 GB, NVLink 4 900 GB/s bidirectional "
                           f"per GPU (4x NVSwitch), 8x single-port ConnectX-7 400 Gb/s; {SUPERPOD_H100}"), gpu="h200"),
    Preset("hgx-b200", "8x B200, NVSwitch (NVLink 5: 900 GB/s per direction per GPU), 8x 400G NICs", 8,
           _nvswitch_box("hgx-b200", 8, 900 * GB),
           machine=Machine("blackwell", source="NVIDIA HGX B200 page: NVLink 5 1.8 TB/s per GPU; 8x 400G NICs "
                           "(the Vultr report of log 07 names 8x NDR 400G ConnectX-7); NVIDIA DGX SuperPOD B200 "
                           "reference architecture: 32 nodes per scalable unit, one leaf per rail (2 SUs: 16 leaves, "
                           "8 spines), non-blocking NDR"), gpu="b200"),
    Preset("hgx-b300", "8x B300, NVSwitch (NVLink 5: 900 GB/s per direction per GPU), 8x 800G ConnectX-8", 8,
           _nvswitch_box("hgx-b300", 8, 900 * GB, pcie=PCIE6, su=72),
           machine=Machine("blackwell", net="xdr800", source="NVIDIA HGX B300 page and DGX B300 datasheet: 8x Blackwell "
                           "Ultra, NVLink 5 1.8 TB/s per GPU, 8x ConnectX-8 SuperNIC 800 Gb/s (PCIe Gen6); NVIDIA DGX "
                           "SuperPOD B300 XDR reference architecture: 72 nodes per scalable unit, 8 leaves (one per "
                           "rail) and 4 spines per SU, Quantum-X800, non-blocking"), gpu="b300"),
    Preset("gb200-nvl72", "72x B200 in one NVLink 5 domain (900 GB/s per direction per GPU), 72x 400G NICs; "
           "racks = nodes", 72, _nvswitch_box("gb200-nvl72", 72, 900 * GB, nvlink_latency=0.5e-6, su=8, rails_per_leaf=4),
           machine=Machine("blackwell", nics_per_node=72, source="NVIDIA GB200 NVL72 page: 1.8 TB/s NVLink per GPU, "
                           "130 TB/s for 72 GPUs; 4 ConnectX-7 400 Gb/s per compute tray (one per GPU); NVIDIA DGX "
                           "SuperPOD GB200 reference architecture: 8 racks per scalable unit, NDR 400 Gb/s compute "
                           "fabric"), gpu="b200"),
    Preset("gb300-nvl72", "72x B300 in one NVLink 5 domain (900 GB/s per direction per GPU), 72x 800G ConnectX-8; "
           "racks = nodes", 72,
           _nvswitch_box("gb300-nvl72", 72, 900 * GB, nvlink_latency=0.5e-6, pcie=PCIE6, su=8, rails_per_leaf=4),
           machine=Machine("blackwell", net="xdr800", nics_per_node=72, source="NVIDIA GB300 NVL72 page: 72 Blackwell "
                           "Ultra GPUs, 130 TB/s NVLink (1.8 TB/s per GPU), ConnectX-8 SuperNIC 800 Gb/s per GPU "
                           "(Quantum-X800 InfiniBand); racks joined as the GB200 reference architecture's (8 racks per "
                           "scalable unit: assumed)"), gpu="b300"),
    Preset("gb200-nvl4", "GB200 compute trays of 4 GPUs in one NVLink 5 domain (MNNVL): nodes = trays, up to 18", 4,
           _nvl_trays, machine=Machine("blackwell", nics_per_node=None, source="NVIDIA GB200 NVL72 page (4 GPUs per "
                                       "compute tray, 1.8 TB/s NVLink per GPU); OCI BM.GPU.GB200.4 shape (log 05)"),
           fabric=False, gpu="b200"),
    Preset("p4de", "AWS p4de.24xlarge: 8x A100 80GB, NVSwitch (300 GB/s per direction per GPU), 4x 100G EFA", 8,
           _nvswitch_box("p4de", 8, 300 * GB, pcie=PCIE4, nics=4),
           machine=Machine("ampere", net="efa100", nics_per_node=4, source="AWS EC2 P4 instance page: 8x A100, "
                           f"600 GB/s NVSwitch, 400 Gbps EFA (4x 100 Gbps); {AWS_OFI_NCCL}; {EFA_P4_SIMPLE}",
                           protocols=("Simple",), net_latency_us=EFA_PLUGIN_LATENCY_US), gpu="a100"),
    Preset("p5", "AWS p5.48xlarge: 8x H100, NVSwitch (450 GB/s per direction per GPU), 32x 100G EFA (4 per GPU)", 8,
           _nvswitch_box("p5", 8, 450 * GB, nics=32),
           machine=Machine("hopper", net="efa100", nics_per_node=32, source="AWS EC2 P5 instance page: 8x H100, "
                           f"900 GB/s NVSwitch, 3200 Gbps EFAv2 (32x 100 Gbps); {AWS_OFI_NCCL}",
                           net_latency_us=EFA_PLUGIN_LATENCY_US), gpu="h100"),
    Preset("p6-b200", "AWS p6-b200.48xlarge: 8x B200, NVSwitch (900 GB/s per direction per GPU), 8x 400G EFA v4", 8,
           _nvswitch_box("p6-b200", 8, 900 * GB),
           machine=Machine("blackwell", net="efa400", source="AWS EC2 P6 instance page: p6-b200.48xlarge, 8x B200, "
                           "1,800 GB/s NVLink per GPU, 3,200 Gbps EFAv4 (8 network cards of 400 Gbps; stas00/"
                           f"ml-engineering network/README.md reads rate=400 Gb/sec on each rdmap device); {AWS_OFI_NCCL_P6}",
                           buffsize=8 << 20, net_latency_us=EFA_P6_PLUGIN_LATENCY_US), gpu="b200"),
    Preset("a3-mega", "GCP a3-megagpu-8g: 8x H100, NVSwitch (450 GB/s per direction per GPU), 8x 200G TCPXO NICs", 8,
           _nvswitch_box("a3-mega", 8, 450 * GB),
           machine=Machine("hopper", net="tcpxo200", source="Google Cloud GPU machine types: a3-megagpu-8g, 8x H100, "
                           "8 GPU NICs of 200 Gbps with GPUDirect-TCPXO (1,800 Gbps in total with the host NIC); NCCL "
                           "profile of the TCPXO plugin (nccl-env-profile.sh, GKE guide 'Maximize GPU network bandwidth "
                           "with GPUDirect-TCPXO'): NCCL_PROTO=Simple, NCCL_BUFFSIZE=8388608, NCCL_NVLS_ENABLE=0",
                           protocols=("Simple",), buffsize=8 << 20, nvls=False), gpu="h100"),
    Preset("pcie-8gpu", "8 GPUs on PCIe 4.0 x16 (31.5 GB/s per direction), 2 sockets joined by UPI, no NVLink", 8,
           _pcie_box, multinode=False, machine=Machine("ampere", link="pcie", nics_per_node=None,
                                                       source="PCI-SIG PCIe 4.0; Intel Xeon Scalable UPI")),
    Preset("rtx4090-pcie", "4x RTX 4090 on PCIe 4.0 x16 (31.5 GB/s per direction) to one CPU, no NVLink, no P2P", 4,
           _rtx4090, multinode=False, machine=Machine("ampere", link="pcie", nics_per_node=None,
                                                      source="PCI-SIG PCIe 4.0 x16; NVIDIA disables P2P on GeForce "
                                                             "cards, so NCCL stages through host memory (SHM "
                                                             "transport); SHM load rate FITTED on logs 12 and 13"), gpu="rtx4090"),
    Preset("mi300x", "8x MI300X, xGMI fully connected (64 GB/s per direction per GPU pair), 8x 400G NICs", 8, _mi300x, gpu="mi300x"),
    Preset("tpu-v4-4x4x4", "TPU-v4-like 4x4x4 3-D torus slice, 50 GB/s per ICI link per direction", 64, _tpu,
           multinode=False),
)}
MACHINE_PRESETS = tuple(n for n, p in PRESETS.items() if p.machine is not None)  # those NCCL's model knows (a Machine)
PRESET_GPUS = {n: p.gpu for n, p in PRESETS.items() if p.gpu}  # the GPU family of each preset with one GPU model


HOST_STAGED = ("rtx4090-pcie",)  # presets whose GPUs reach each other through host memory (shm=RATE sets the load rate)


def build_preset(name: str, nodes: int = 1, net: str | None = None, shm_Bps: float | None = None,
                 routing: str | None = None) -> Topology:
    """The preset machine, with `nodes` of them joined by network `net` (default: the machine's own).

    `shm_Bps`: the SHM load rate of a host-staged preset (HOST_STAGED; default its fitted SHM_RATE_FIT).
    `routing`: how the leaf-spine spreads traffic over its spines (simulator/topology/fabric.py ROUTINGS; default adaptive).
    """
    preset = PRESETS.get(name)
    if preset is None:
        raise CollsimError(f"topology: unknown preset {name!r}; expected one of {', '.join(PRESETS)}")
    if shm_Bps is not None and name not in HOST_STAGED:
        raise CollsimError(f"shm: preset {name} has no host-staged path; shm=RATE (the SHM load rate per GPU) applies to "
                           f"{', '.join(HOST_STAGED)}")
    if routing is not None and not (preset.multinode and preset.fabric):
        raise CollsimError(f"routing: preset {name} has no network between nodes to route; routing= applies to "
                           f"{', '.join(n for n, p in PRESETS.items() if p.multinode and p.fabric)}")
    if net is None:
        net = preset.machine.net if preset.machine else "ib400"
    if net not in NETWORKS:
        raise CollsimError(f"net: unknown network {net!r}; expected one of {', '.join(NETWORKS)}")
    if isinstance(nodes, bool) or int(nodes) != nodes or nodes < 1:
        raise CollsimError(f"nodes: {nodes!r} is not a node count; expected an integer >= 1")
    if nodes > 1 and not preset.multinode:
        raise CollsimError(f"nodes: preset {name} is a single machine; nodes={nodes} is not available for it")
    routing = check_routing(routing or "adaptive")
    topo = host_staged(preset.gpus_per_node, shm_Bps) if shm_Bps is not None else preset.build(int(nodes), net, routing)
    topo.origin = PresetBuild(preset, int(nodes), net, routing, shm_Bps)  # a declared slot (copies keep it)
    return topo
