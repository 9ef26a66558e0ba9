"""NCCL's own (algorithm, protocol) cost model: latency + bytes / bandwidth, and which one NCCL would pick.

Transcribed from NVIDIA/nccl src/graph/tuning.cc (ncclTopoTuneModel and ncclTopoGetAlgoTime, the
2.2x line whose constants REFERENCE.md quotes for v2.30): base and per-hop latencies per
(algorithm, protocol) and link type, protocol efficiencies and per-channel caps per GPU
generation, and the bus-to-algorithm bandwidth ratios. What NCCL learns from its topology search
(channels and per-channel bandwidth of the ring/tree graphs) is an *input* here: by default the
GPU's NVLink count times NCCL's per-link constant (topo.h SMxx_NVLINK_BW), or PCI_BW for PCIe,
and for several nodes no more than the node's NICs carry. The NVLS graph on one node is derived
from that per-GPU bandwidth as search.cc does (node_nvls_graph). Treat the result as one reference model.

The one-node NVLS bandwidths follow tuning.cc v2.27.3 (lines 267-273, 324), the release line of the
other Blackwell constants here: allreduce nChannels x min(bwIntra, bwInter) x 5/6, allgather and
reduce-scatter nChannels x min(bwIntra (ppn-1)/ppn, 0.9 bwInter), not converted to an algorithm
bandwidth. On one 8-GPU node that is 267 (H100) / 533 (B200) GB/s for allreduce and 280 / 560 GB/s
for allgather and reduce-scatter, against a ring's 424 / 825 GB/s: NCCL's model never picks NVLS
for allgather or reduce-scatter there. NCCL >= 2.28 (master, tuning.cc lines 307-318) is lower still
for them: nChannels x bwIntra x nvlsEfficiency x (nChannels-1)/nChannels x (ppn-1)/ppn = 208 / 363 GB/s.

NVLS_TREE (allreduce across NVSwitch nodes of Hopper / Blackwell) follows tuning.cc as of NCCL 2.28 (NVIDIA/nccl
5067397c, v2.30.7 alike): its bandwidth from the NVLS graph across nodes (`System.nvls_graph`, transcribed from
search.cc) times NCCL's nvlsEfficiency, capped per channel. The one-node NVLS keeps the v2.27 form (x 5/6,
optional `nvls_efficiency`), so the two NVLS entries come from different NCCL releases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..collective import busbw_factor, normalize_op
from ..errors import CollsimError

ALGORITHMS = ("tree", "ring", "nvls", "nvls_tree", "pat")
PROTOCOLS = ("LL", "LL128", "Simple")
ARCHS = ("volta", "ampere", "hopper", "blackwell")
LINKS = ("nvlink", "pcie")
OPS = ("allreduce", "allgather", "reduce_scatter", "broadcast", "reduce")

# tuning.cc: latencies in us; index [algorithm][protocol].
# NVLS_TREE (tuning.cc at NVIDIA/nccl 5067397c, ncclTunerConstantsDefaults, lines 150-174): base 0, NVLink 25 us,
# network 20.9 us (Simple only; 14 us before NCCL 2.28.9).
BASE_LAT = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "nvls": (0.0, 0.0, 0.0), "nvls_tree": (0.0, 0.0, 0.0),
            "pat": (8.0, 8.0, 8.0)}
HW_LAT = {
    "nvlink": {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "nvls": (0.0, 0.0, 25.0), "nvls_tree": (0.0, 0.0, 25.0),
               "pat": (0.0, 0.0, 4.0)},
    "pcie": {"tree": (1.0, 1.9, 4.0), "ring": (1.0, 2.5, 5.7), "nvls": (0.0, 0.0, 0.0), "nvls_tree": (0.0, 0.0, 0.0),
             "pat": (0.0, 0.0, 4.0)},
    "net": {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "nvls": (0.0, 0.0, 18.0), "nvls_tree": (0.0, 0.0, 20.9),
            "pat": (0.0, 0.0, 14.0)},
}
# How older releases' tables differ (NVIDIA/nccl src/graph/tuning.cc at each tag): (first release with today's
# value, {(table, algorithm, protocol): the value before it}); table "base" is BASE_LAT, else HW_LAT's link.
LATENCY_HISTORY = (
    ((2, 21), {("nvlink", "nvls", "Simple"): 23.0, ("nvlink", "nvls_tree", "Simple"): 23.0}),  # v2.20.3: 23 us
    ((2, 23), {("base", "tree", "Simple"): 0.0, ("nvlink", "tree", "Simple"): 28.0,           # v2.19 - v2.22.3
               ("pcie", "tree", "Simple"): 28.0, ("net", "tree", "Simple"): 28.0}),
    ((2, 28, 9), {("net", "nvls_tree", "Simple"): 14.0}),                                       # v2.28.7: 14 us
)
OLDEST_VERSION = (2, 19)  # the oldest release whose tables LATENCY_HISTORY was checked against (v2.19.3)


def parse_nccl_version(text) -> tuple[int, ...] | None:
    """'2.20.3' or '2.20' -> (2, 20, 3) / (2, 20); None or 'latest': NCCL master's tables."""
    if text is None or str(text).strip().lower() in ("latest", "master"):
        return None
    parts = str(text).strip().removeprefix("v").split("-")[0].split(".")
    if not 2 <= len(parts) <= 3 or not all(part.isdigit() for part in parts):
        raise CollsimError(f"nccl-version: {text!r} is not an NCCL release; expected MAJOR.MINOR[.PATCH] such as 2.20.3, "
                           "or latest")
    version = tuple(int(part) for part in parts)
    if version < OLDEST_VERSION:
        raise CollsimError(f"nccl-version: {text!r} is older than the tables collsim knows; expected "
                           f"{'.'.join(map(str, OLDEST_VERSION))} or later, or latest")
    return version


def release_name(version: tuple[int, ...] | None) -> str | None:
    """(2, 20, 3) -> '2.20.3'; None (master) stays None."""
    return None if version is None else ".".join(map(str, version))


def latency_us(table: str, algo: str, proto: str, version: tuple[int, ...] | None = None) -> float:
    """tuning.cc's latency of (algorithm, protocol): BASE_LAT (table "base") or HW_LAT[table], in the given release."""
    key = (table, algo, proto)
    for since, older in LATENCY_HISTORY:  # oldest change first: the first one after `version` held its value
        if version is not None and version < since and key in older:
            return older[key]
    return BASE_LAT[algo][PROTOCOLS.index(proto)] if table == "base" else HW_LAT[table][algo][PROTOCOLS.index(proto)]


# Per GPU generation, per node-count class (1 node, 2 nodes, more): GB/s.
LL_MAX_BW = {"volta": (39.0, 39.0, 20.4), "ampere": (87.7, 22.5, 19.0), "hopper": (141.0, 45.0, 35.0),
             "blackwell": (282.0, 90.0, 70.0)}
LL_MAX_BW_INTEL_NET = (39.0, 39.0, 20.4)   # several nodes, Intel host CPU: tuning.cc uses row 0
# Per-channel caps (GB/s), per node-count class where NCCL has one. Blackwell's are NCCL 2.30.7's (= master 5067397c,
# tuning.cc lines 186-204): NVIDIA re-measured them in 2.28.3 (tree LL128 55.6 / 31.67 / 20.0, tree Simple 70.0 / 42.8
# / 24.0, from 2 x Hopper's 73.4 / 73.4 / 58.0 and 77.4 / 82.8 / 72.0) and 2.30 (ring LL128 40.0, from 73.4).
PER_CH_MAX_RING_LL128 = {"volta": 20.0, "ampere": 20.0, "hopper": 36.7, "blackwell": 40.0}
PER_CH_MAX_TREE_LL128 = {"volta": (20.0,) * 3, "ampere": (20.0,) * 3, "hopper": (36.7, 36.7, 29.0),
                         "blackwell": (55.6, 31.67, 20.0)}
PER_CH_MAX_TREE = {"volta": (26.5, 18.5, 10.0), "ampere": (24.0, 23.6, 17.8), "hopper": (38.7, 41.4, 36.0),
                   "blackwell": (70.0, 42.8, 24.0)}
# tuning.cc perChMaxNVLSTreeBws (lines 205-211), per node-count class (1 node, 2 nodes, more): GB/s per NVLS channel.
PER_CH_MAX_NVLS_TREE = {"volta": (26.5, 18.5, 10.0), "ampere": (24.0, 23.6, 17.8), "hopper": (0.0, 57.7, 45.5),
                        "blackwell": (0.0, 96.0, 80.0)}
# Tree bandwidth correction by log2(bytes / 64), 64 B .. 512 MiB (tuning.cc treeCorrectionFactor, allreduce only):
# the tree uses the first 23 entries, NVLS_TREE on Blackwell all 24 (ncclTopoGetAlgoTime).
TREE_CORRECTION = {
    "LL": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    "LL128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    "Simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
}
# topo.h: GB/s per NVLink lane as NCCL counts it, and NVLinks per GPU on the SXM boards.
NVLINK_BW = {"volta": 20.0, "ampere": 20.0, "hopper": 20.6, "blackwell": 40.1}
NVLINKS_PER_GPU = {"volta": 6, "ampere": 12, "hopper": 18, "blackwell": 18}
PCI_BW = 12.0
# tuning.cc, ncclTopoTuneModel: the share of the graph's bandwidth each protocol's payload gets on a ring
# (LL: a 4-byte flag with every 4 bytes of data; LL128: 120 of every 128 bytes, NCCL charges 0.92).
RING_PROTO_BW_FACTOR = {"LL": 0.5, "LL128": 0.92, "Simple": 1.0}
# tuning.cc (NCCL >= 2.28, master line 139) nvlsEfficiency, per compute capability: the share of the NVLink graph
# bandwidth NVLS reaches (NVLS needs Hopper or later; 0 elsewhere). NVLS's latency is HW_LAT["nvlink"]["nvls"]
# (25 us, Simple only), plus HW_LAT["net"]["nvls"] across nodes; BASE_LAT["nvls"] is 0.
NVLS_EFFICIENCY = {"volta": 0.0, "ampere": 0.0, "hopper": 0.85, "blackwell": 0.74}
DEFAULT_CHANNELS = {"volta": 12, "ampere": 16, "hopper": 16, "blackwell": 16}
# tuning.cc (ncclTopoTuneModel, PAT): network latency divided per log step, linear part per rank (us), bandwidth share
PAT_STEP_DIVISOR = 3.5
PAT_US_PER_RANK = 2.8
PAT_BW_FACTOR = 0.75
# search.cc: the per-channel speeds NCCL's graph search tries on one node, fastest first (sm90SpeedArrayIntra,
# sm100SpeedArrayIntra: v2.27.3 lines 907, 912; master 1057, 1063 adds 45 for Blackwell, which no NVLS graph here
# lands on).
NVLS_SPEEDS_INTRA = {"hopper": (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
                     "blackwell": (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0)}
# search.cc (lines 1051-1065) speedArrayInter / sm90SpeedArrayInter / sm100SpeedArrayInter: the per-channel
# bandwidths (GB/s) NCCL's topology search tries, highest first, on a machine with a network.
SPEEDS_INTER = {
    "volta": (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12),
    "hopper": (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
    "blackwell": (96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4,
                  1.2, 0.24, 0.12),
}
SPEEDS_INTER["ampere"] = SPEEDS_INTER["volta"]
NVLS_MAX_ARITY = 32  # device.h NCCL_MAX_NVLS_ARITY: heads of the NVLS graph at most


@dataclass(frozen=True)
class NvlsGraph:
    """What NCCL's NVLS topology search finds: channels (= nvls.nHeads) and per-channel bandwidths."""

    channels: int
    bw_intra: float
    bw_inter: float


@dataclass(frozen=True)
class System:
    """What NCCL's model needs: GPU generation, ranks per node, nodes, link type, and the graph's bandwidths."""

    arch: str = "hopper"
    gpus_per_node: int = 8
    nodes: int = 1
    link: str = "nvlink"
    bus_bw_GBps: float | None = None       # channels x per-channel bandwidth of the ring/tree graphs, per GPU
    channels: int | None = None
    nic_bw_GBps: float = 50.0              # per NIC (400 Gbit/s)
    nics_per_node: int | None = None       # default: one per GPU
    nvls: bool | None = None               # default: Hopper or newer, NVLink, one node
    nvls_efficiency: float = 1.0           # scales NVLS bandwidth (NCCL >= 2.28 has 0.85 Hopper / 0.74 Blackwell)
    net_overhead_us: float = 1.0           # tuning.cc getNetOverhead: 1 us on Intel x86, 2 on AMD
    net_latency_us: float = 0.0            # the graph's latencyInter (0 unless the network plugin reports one)
    amd_cpu: bool = False
    protocols: tuple[str, ...] | None = None  # NCCL_PROTO: the protocols NCCL may pick (None: every one it enables)
    nccl_version: tuple[int, ...] | None = None  # the release whose latency tables apply (None: master)
    buffsize: int = 4 << 20                # NCCL_BUFFSIZE (bytes): NCCL's default 4 MiB, or the machine's profile

    def __post_init__(self) -> None:
        if self.arch not in ARCHS:
            raise CollsimError(f"arch: unknown GPU generation {self.arch!r}; expected one of {', '.join(ARCHS)}")
        if self.link not in LINKS:
            raise CollsimError(f"link: unknown link {self.link!r}; expected one of {', '.join(LINKS)}")
        for name, flag in (("gpus_per_node", "gpus"), ("nodes", "nodes")):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise CollsimError(f"{flag}: {value!r} is not a count of {name.replace('_', ' ')}; expected an integer >= 1")
        if self.ranks < 2:
            raise CollsimError("gpus: one rank in total has nothing to communicate; give at least 2 GPUs")
        for name, flag in (("bus_bw_GBps", "bus-bw"), ("nic_bw_GBps", "nic-bw")):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise CollsimError(f"{flag}: {value!r} is not a bandwidth; expected GB/s > 0")
        if self.protocols is not None and (not self.protocols or not set(self.protocols) <= set(PROTOCOLS)):
            raise CollsimError(f"proto: {self.protocols!r} is not a set of protocols; expected some of {', '.join(PROTOCOLS)}")
        eff = self.nvls_efficiency
        if isinstance(eff, bool) or not isinstance(eff, (int, float)) or not 0 < eff <= 1:
            raise CollsimError(f"nvls-efficiency: {eff!r} is not a fraction; expected a number in (0, 1]")
        for name, flag in (("channels", "channels"), ("nics_per_node", "nics")):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise CollsimError(f"{flag}: {value!r} is not a count of {name.replace('_', ' ')}; expected an integer >= 1")

    @property
    def ranks(self) -> int:
        """Total rank count."""
        return self.gpus_per_node * self.nodes

    @property
    def intra_bw_GBps(self) -> float:
        """Per-GPU bandwidth of the intra-node graph (NVLink lanes x NCCL's per-lane figure, or PCI_BW)."""
        if self.bus_bw_GBps is not None:
            return float(self.bus_bw_GBps)
        if self.link == "pcie":
            return PCI_BW
        return NVLINK_BW[self.arch] * NVLINKS_PER_GPU[self.arch]

    @property
    def graph_bw_GBps(self) -> float:
        """channels x bandwidth of the ring/tree graphs: the intra-node figure, capped by the NICs across nodes."""
        if self.nodes == 1 or self.bus_bw_GBps is not None:
            return self.intra_bw_GBps
        nics = self.nics_per_node or self.gpus_per_node
        return min(self.intra_bw_GBps, nics * self.nic_bw_GBps)

    @property
    def tree_bw_GBps(self) -> float:
        """channels x bandwidth tuning.cc gives the tree: on one or two nodes the tree graph's bwIntra, else the graph's.

        tuning.cc (line 305): `bw = nNodes <= 2 ? bwIntra : bwInter`. search.cc's pass 2 ("increase bwIntra for trees
        (2 nodes or collnet)") raises a tree's bwIntra one speed at a time while it is under 2 x bwInter and the
        NVLinks carry it, so on two nodes the tree's intra-node figure is up to twice the NICs', at most the node's
        own (rings raise bwIntra and bwInter together, so theirs stays the NICs').
        """
        if self.nodes != 2 or self.bus_bw_GBps is not None:
            return self.graph_bw_GBps
        return min(self.intra_bw_GBps, 2 * self.graph_bw_GBps)

    @property
    def n_channels(self) -> int:
        """Channels of the graphs (used by the per-channel caps)."""
        if self.channels is not None:
            return self.channels
        return 2 if self.link == "pcie" else DEFAULT_CHANNELS[self.arch]

    @property
    def nvls_enabled(self) -> bool:
        """NVLS (NVLink SHARP) is available: Hopper or newer on NVLink switches, one node (no CollNet), and an NVLS
        graph fits the links (init.cc: no NVLS graph channels, no NVLS)."""
        if self.nvls is not None:
            return self.nvls
        return self.arch in ("hopper", "blackwell") and self.link == "nvlink" and self.nodes == 1 and node_nvls_graph(self) is not None

    @property
    def nvls_support(self) -> bool:
        """comm->nvlsSupport: NVLink SHARP exists (Hopper or newer on NVLink switches) unless `nvls` says otherwise.

        The NVLS algorithm needs it and one node (no CollNet: `nvls_enabled`); NVLS_TREE needs it and several.
        """
        if self.nvls is not None:
            return self.nvls
        return self.arch in ("hopper", "blackwell") and self.link == "nvlink"

    @property
    def nvls_graph(self) -> NvlsGraph:
        """NCCL's NVLS graph across nodes, as search.cc's ncclTopoCompute finds it for the NVLS pattern.

        Channel h has GPU h as its head, reached from a NIC local to it (ncclTopoSearchRecNet: one head per GPU
        with a NIC, at most NCCL_MAX_NVLS_ARITY); each channel takes bwIntra on every GPU's NVLink to the switch
        and twice that on its head's (ncclTopoSearchTryNvls), and bwInter on the head's NIC. Pass 1 goes down the
        speed array from the NIC's bandwidth until every head has its channel (or the next speed is under 0.49 of
        the best found; ncclTopoCompareGraphs keeps more channels, then more channels x bwInter); pass 2 raises
        bwInter alone while the NIC carries it and bwInter < 2 bwIntra. A GPU's NICs count as one device of
        their summed speed (aws-ofi-nccl groups a GPU's rails: nccl_ofi_rdma.cpp get_properties, port_speed x
        max_group_size). Not modelled: the PCIe path's own cap (48 GB/s on Gen5 x16, at or above these NICs').
        No channel before Hopper (search.cc: the NVLS pattern needs an NVSwitch and sm90).
        """
        nics = self.nics_per_node or self.gpus_per_node
        if NVLS_EFFICIENCY[self.arch] == 0 or self.link != "nvlink" or self.gpus_per_node < 2:
            return NvlsGraph(0, 0.0, 0.0)
        heads = min(NVLS_MAX_ARITY, self.gpus_per_node, nics)
        nic = self.nic_bw_GBps * max(1, nics // self.gpus_per_node)
        nvlink = NVLINK_BW[self.arch] * NVLINKS_PER_GPU[self.arch]
        speeds = [s for s in SPEEDS_INTER[self.arch] if s <= nic]
        best_ch, best_bw = 0, 0.0
        for s in speeds:
            if best_ch and s / best_bw <= 0.49:
                break
            ch = min(heads, int(nvlink // s) - 1)
            if ch > best_ch or ch * s > best_ch * best_bw:
                best_ch, best_bw = ch, s
            if best_ch == heads or best_ch * best_bw >= nvlink:
                break
        if best_ch == 0:
            return NvlsGraph(0, 0.0, 0.0)
        higher = [s for s in speeds if s > best_bw]
        bw_inter = best_bw
        while higher and bw_inter < 2 * best_bw:
            bw_inter = higher.pop()
        return NvlsGraph(best_ch, best_bw, bw_inter)


def node_nvls_graph(system: System) -> NvlsGraph | None:
    """NCCL's NVLS graph on one node (search.cc ncclTopoCompute, no network), None where none fits the links.

    One channel per GPU up to NCCL_MAX_NVLS_ARITY (search.cc: maxChannels = min(32, GPUs), and on one node
    minChannels = maxChannels, "pull evenly from all GPUs"). Channel c takes bwIntra on every GPU's link to and
    from the NVSwitch and twice that on its head GPU's (ncclTopoSearchTryNvls: `d0 == g ? 2 : 1`), so each link
    carries (nChannels + 1) x bwIntra: bwIntra is the fastest speed for which that fits the GPU's NVLink
    bandwidth (topo.cc: NVLink count x SMxx_NVLINK_BW). Pass 2 then raises bwInter one speed at a time while
    it is under 2 x bwIntra (search.cc v2.27.3 line 1101), which an intra-node search always accepts.
    """
    speeds = NVLS_SPEEDS_INTRA.get(system.arch)
    if speeds is None or system.link != "nvlink":
        return None
    channels = min(NVLS_MAX_ARITY, system.gpus_per_node)
    link = system.intra_bw_GBps
    fits = [i for i, s in enumerate(speeds) if (channels + 1) * s <= link + 1e-3]  # search.cc rounds to 1e-3 (SUB_ROUND)
    if not fits:
        return None
    i = fits[0]
    intra = speeds[i]
    while i > 0 and speeds[i] < 2 * intra:
        i -= 1
    return NvlsGraph(channels, intra, speeds[i])


def _nvls_bus_bw(system: System, op: str) -> float:
    """NCCL's NVLS bus bandwidth (tuning.cc v2.27.3 lines 267-275), before the allreduce's 5/6.

    Across nodes (NVLS with CollNet, only when forced on) the NVLS graph's inter-node search is not modelled: the
    ring graph's bandwidth stands in, as before.
    """
    graph = node_nvls_graph(system) if system.nodes == 1 else None
    if graph is None:
        return system.graph_bw_GBps * system.nvls_efficiency
    channels, intra, inter = graph.channels, graph.bw_intra, graph.bw_inter
    ppn = system.gpus_per_node
    bw = min(intra, inter) if op == "allreduce" else min(intra * (ppn - 1) / ppn, inter * 0.9)
    return channels * bw * system.nvls_efficiency


def _scale(system: System) -> int:
    return min(system.nodes, 3) - 1


def tune(system: System, op: str) -> dict[tuple[str, str], tuple[float, float]]:
    """(latency us, algorithm bandwidth GB/s) per enabled (algorithm, protocol), as ncclTopoTuneModel sets them."""
    op = normalize_op(op)
    if op not in OPS:
        raise CollsimError(f"op: NCCL's model covers {', '.join(OPS)}; not {op}")
    p = system.ranks
    nsteps = 2 * (p - 1) if op == "allreduce" else p - 1 if op in ("allgather", "reduce_scatter") else p
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for algo in ALGORITHMS:
        for pi, proto in enumerate(PROTOCOLS):
            if _enabled(system, op, algo, proto):
                out[(algo, proto)] = (_latency(system, op, algo, pi, nsteps), _algo_bw(system, op, algo, proto, nsteps))
    return out


def _enabled(system: System, op: str, algo: str, proto: str) -> bool:
    """Whether NCCL considers (algorithm, protocol) for this op on this system."""
    if op in ("broadcast", "reduce") and algo != "ring":
        return False
    if op in ("allgather", "reduce_scatter") and algo == "tree":
        return False
    if algo == "nvls" and (not system.nvls_enabled or op not in ("allreduce", "allgather", "reduce_scatter") or proto != "Simple"):
        return False
    if algo == "nvls_tree" and (system.nodes == 1 or op != "allreduce" or proto != "Simple" or not system.nvls_support
                                or system.nvls_graph.channels < 2):  # tuning.cc lines 301, 308, 502
        return False
    if system.protocols is not None and proto not in system.protocols:
        return False
    if algo == "pat":  # tuning.cc ncclPatEnable: one GPU per node; allgather and reduce-scatter, Simple only
        return system.gpus_per_node == 1 and op in ("allgather", "reduce_scatter") and proto == "Simple"
    return proto != "LL128" or system.link == "nvlink"  # tuning.cc enables LL128 by default only over NVLink


def _algo_bw(system: System, op: str, algo: str, proto: str, nsteps: int) -> float:
    """Algorithm bandwidth in GB/s: the graph's bus bandwidth capped per (algorithm, protocol), over the bus-to-algorithm ratio."""
    arch, nodes, nch, scale = system.arch, system.nodes, system.n_channels, _scale(system)
    if algo == "nvls_tree":
        return _nvls_tree_bw(system, nsteps)
    ll_max = LL_MAX_BW[arch][scale] if nodes == 1 else (LL_MAX_BW["ampere"] if system.amd_cpu else LL_MAX_BW_INTEL_NET)[scale]
    bus = system.tree_bw_GBps if algo == "tree" else system.graph_bw_GBps
    if algo == "ring" and proto == "LL":
        bus = min(ll_max, bus * RING_PROTO_BW_FACTOR["LL"])
    if algo == "ring" and proto == "LL128":
        bus = min(bus * RING_PROTO_BW_FACTOR["LL128"], nch * PER_CH_MAX_RING_LL128[arch])
    if algo == "tree" and op == "allreduce":
        bus = min(bus * 0.92, nch * PER_CH_MAX_TREE[arch][scale])
    if algo == "tree" and proto == "LL":
        bus = min(bus / 3.8, ll_max)
    if algo == "tree" and proto == "LL128":
        bus = min(bus * (7.0 / 9.0 if nodes == 1 else 120.0 / 128.0), nch * PER_CH_MAX_TREE_LL128[arch][scale])
    if algo == "nvls":
        bus = _nvls_bus_bw(system, op)
    if algo == "pat":
        bus *= PAT_BW_FACTOR
    if not (algo != "ring" and op in ("allgather", "reduce_scatter")):
        bus *= system.ranks / nsteps if algo == "ring" else 5.0 / 6.0 if algo == "nvls" else 0.5
    return bus


def _nvls_tree_bw(system: System, nsteps: int) -> float:
    """NVLS_TREE allreduce's algorithm bandwidth (tuning.cc lines 307-323, 379): the NVLS graph's channels x
    min(bwIntra x nvlsEfficiency x (nCh - 1) / nCh x 2, bwInter x 2 on two nodes (x 1 on more), perChMaxNVLSTreeBw),
    then x nRanks / nsteps. nvlsEfficiency is NCCL's (NVLS_EFFICIENCY), not System.nvls_efficiency, which scales
    the one-node NVLS of the older formula.
    """
    graph = system.nvls_graph
    ch = graph.channels
    intra = graph.bw_intra * NVLS_EFFICIENCY[system.arch] * (ch - 1) / ch * 2.0
    inter = graph.bw_inter * (2.0 if system.nodes <= 2 else 1.0)
    bw = min(intra, inter, PER_CH_MAX_NVLS_TREE[system.arch][_scale(system)])
    return ch * bw * system.ranks / nsteps


def _latency(system: System, op: str, algo: str, pi: int, nsteps: int) -> float:
    """Latency in us of (algorithm, protocol index): base plus intra- and inter-node hops."""
    p, nodes, proto, version = system.ranks, system.nodes, PROTOCOLS[pi], system.nccl_version
    intra_hw = "nvlink" if system.link == "nvlink" else "pcie"
    lat = latency_us("base", algo, proto, version)
    intra_lat = latency_us(intra_hw, algo, proto, version)
    inter_lat = latency_us("net", "tree" if p / nodes == 1 else algo, proto, version) + system.net_latency_us
    if PROTOCOLS[pi] == "Simple":
        inter_lat += system.net_latency_us
    if algo == "tree":
        return lat + 2 * ((p // nodes - 1) * intra_lat + _log2i(nodes) * inter_lat)
    if algo == "nvls":
        return intra_lat + (inter_lat if nodes > 1 else 0.0)
    if algo == "nvls_tree":  # tuning.cc line 428: base (0) + intraLat + 2 log2i(nNodes) interLat
        return lat + intra_lat + 2 * _log2i(nodes) * inter_lat
    if algo == "pat":  # "log latency" plus "still a linear part" (tuning.cc)
        return lat + _log2i(nodes) * (inter_lat / PAT_STEP_DIVISOR) + p * PAT_US_PER_RANK
    if op in ("broadcast", "reduce"):  # ring, NCCL's sameChannels case
        return lat + latency_us(intra_hw if nodes == 1 else "net", "ring", proto, version)
    overhead = system.net_overhead_us * (3 if PROTOCOLS[pi] == "Simple" else 1) if nodes > 1 else 0.0
    intra_lat = max(intra_lat, overhead)
    n_inter = 0 if nodes == 1 else 2 * (nodes - 1) if op == "allreduce" else nodes - 1
    return lat + ((nsteps - n_inter) * intra_lat + n_inter * inter_lat)


def _log2i(n: int) -> int:
    return int(n).bit_length() - 1


def predict_times(system: System, op: str, sizes) -> dict[tuple[str, str], np.ndarray]:
    """Seconds NCCL's model predicts for each (algorithm, protocol) at each size (nccl-tests' size meaning)."""
    op = normalize_op(op)
    table = tune(system, op)
    n = np.asarray(sizes, dtype=np.float64)
    out = {}
    log_size = np.array([_log2i(int(x) >> 6) if int(x) >> 6 > 0 else -1 for x in n])
    for (algo, proto), (lat, bw) in table.items():
        bws = np.full_like(n, bw)
        # ncclTopoGetAlgoTime (tuning.cc lines 639-646): the tree's size-binned correction, also NVLS_TREE's on
        # Blackwell x86 hosts (all of collsim's hosts are x86)
        bins = 23 if algo == "tree" else 24 if algo == "nvls_tree" and system.arch == "blackwell" else 0
        if bins and op == "allreduce":
            bws = bws * np.array([TREE_CORRECTION[proto][k] if 0 <= k < bins else 1.0 for k in log_size])
        lats = np.full_like(n, lat)
        if algo == "ring" and proto == "Simple" and system.nodes > 1 and op == "allreduce":
            plateau = n / (system.n_channels * system.ranks) >= 64
            lats = np.where(plateau, lat * (1.4 if system.arch != "volta" else 1.9), lat)
        out[(algo, proto)] = (lats + n / (1000.0 * bws)) * 1e-6
    return out


def choose(system: System, op: str, sizes) -> tuple[list[tuple[str, str]], np.ndarray, dict[tuple[str, str], np.ndarray]]:
    """NCCL's pick per size (the fastest predicted choice), its time in seconds, and every choice's times."""
    times = predict_times(system, op, sizes)
    keys = list(times)
    grid = np.vstack([times[k] for k in keys])
    best = np.argmin(grid, axis=0)
    return [keys[i] for i in best], grid[best, np.arange(grid.shape[1])], times


def compare(system: System, op: str, measurements: list[tuple[int, float]]) -> dict:
    """NCCL's pick and predicted time next to measured times, with median absolute percentage errors."""
    if not measurements:
        raise CollsimError("compare: the log has no row with a size and a time > 0 to compare with")
    sizes = [s for s, _ in measurements]
    measured = np.array([t for _, t in measurements])
    picks, best, _ = choose(system, op, sizes)
    err = (best - measured) / measured * 100.0
    factor = busbw_factor(op, system.ranks)
    rows = [{"bytes": s, "measured_s": float(m), "pick": f"{a}/{p}", "predicted_s": float(b), "error_pct": float(e),
             "measured_busbw_GBps": s / m * factor / 1e9, "predicted_busbw_GBps": s / b * factor / 1e9}
            for s, m, (a, p), b, e in zip(sizes, measured, picks, best, err)]
    big = np.array(sizes) >= 64 * 1024
    return {"rows": rows,
            "median_abs_pct_error_ge_64KiB": float(np.median(np.abs(err[big]))) if big.any() else None,
            "median_abs_pct_error_all": float(np.median(np.abs(err)))}
