"""NCCL's protocols (LL, LL128, Simple) as engine costs: per-step latency, payload efficiency, base latency.

The constants are NCCL's, defined once in simulator/nccl/tuning.py (transcribed from NVIDIA/nccl
src/graph/tuning.cc, ncclTopoTuneModel): `BASE_LAT` (per algorithm and protocol, paid once per
call: kernel launch and setup), `HW_LAT` (per step, by link: NVLink, PCIe, network) and
`RING_PROTO_BW_FACTOR` (the share of the link bandwidth the protocol's payload gets). They reach
the engine without touching it:

- the per-step latency becomes the links' latency (`with_step_latency`): a GPU-to-GPU step inside
  a node costs the intra-node figure, a step across nodes the network figure, on every route;
- the payload efficiency becomes the message model's wire-byte factor (LL: 2 wire bytes per
  payload byte, LL128: 1 / 0.92);
- the base latency is added once to the engine's time (`Protocol.base_s`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..engine.messages import MessageModel
from ..errors import CollsimError
from ..topology.model import Topology
from .tuning import PROTOCOLS, RING_PROTO_BW_FACTOR, System, latency_us, tune

NET_OVERHEAD_US = 1.0  # tuning.cc getNetOverhead on Intel hosts: per step across nodes, x3 for Simple


@dataclass(frozen=True)
class Protocol:
    """One protocol's costs for one algorithm family on one machine."""

    name: str
    algo: str            # NCCL's algorithm whose latencies apply: ring or tree
    base_s: float        # once per call
    intra_s: float       # per step between GPUs of a node
    net_s: float         # per step between nodes
    byte_factor: float   # wire bytes per payload byte

    def messages(self) -> MessageModel:
        """The engine's message model: every message carries byte_factor wire bytes per byte."""
        return MessageModel.uniform(0.0, self.byte_factor)


def protocol(name: str, algo: str = "ring", link: str = "nvlink", multinode: bool = False,
             version: tuple[int, ...] | None = None) -> Protocol:
    """NCCL's costs of protocol `name` for `algo` (ring or tree) with intra-node `link` (nvlink or pcie), in NCCL
    release `version` (None: master)."""
    if name not in PROTOCOLS:
        raise CollsimError(f"proto: unknown protocol {name!r}; expected one of {', '.join(PROTOCOLS)}")
    intra = latency_us(link, algo, name, version)
    if multinode and algo == "ring":  # tuning.cc: a step of a ring that crosses nodes costs at least the network
        intra = max(intra, NET_OVERHEAD_US * (3 if name == "Simple" else 1))  # overhead (rings only: not trees)
    return Protocol(name, algo, latency_us("base", algo, name, version) * 1e-6, intra * 1e-6,
                    latency_us("net", algo, name, version) * 1e-6, 1.0 / RING_PROTO_BW_FACTOR[name])


def with_step_latency(topology: Topology, intra_s: float, net_s: float) -> Topology:
    """A copy whose link latencies make every GPU-to-GPU route cost intra_s inside a node and net_s across nodes.

    Links into a node's switch or CPU carry intra_s / 2 (a route crosses two), a direct GPU-GPU
    link intra_s, a NIC's link into the network net_s / 2 (out of one NIC, into another); PCIe
    links to NICs and switch-to-switch links 0. A network switch is a switch with no GPU on it.
    """
    kinds = topology.node_kinds
    n = topology.num_nodes
    touches_gpu = np.zeros(n, dtype=bool)
    for u, v in zip(topology.link_src.tolist(), topology.link_dst.tolist()):
        if kinds[v] == "gpu":
            touches_gpu[u] = True
    latency = np.zeros(topology.num_links)
    for lid, (u, v) in enumerate(zip(topology.link_src.tolist(), topology.link_dst.tolist())):
        ku, kv = kinds[u], kinds[v]
        pair = {ku, kv}
        if pair == {"gpu"}:
            latency[lid] = intra_s
        elif "gpu" in pair and pair & {"switch", "cpu"}:
            latency[lid] = intra_s / 2
        elif "nic" in pair and "switch" in pair and not touches_gpu[u if ku == "switch" else v]:
            latency[lid] = net_s / 2
    clone = topology._copy()
    clone.latency = latency
    return clone


def plugin_latency_s(system: System, op: str, algo: str, proto: str) -> float:
    """The network plugin's reported latency as NCCL's model charges it for one call (0 on one node).

    tuning.cc adds graph->latencyInter to every inter-node step of its latency formula (twice for Simple:
    the flush), i.e. once per call for each of the ring's 2(N-1) or the tree's 2 log2(N) network steps. It is
    charged here the same way, once per call, not on every pipelined chunk: NCCL keeps NCCL_STEPS slots of
    its buffer in flight, so the plugin's figure is paid along the call's critical path, not per chunk.
    """
    if system.nodes == 1 or system.net_latency_us == 0:
        return 0.0
    with_plugin = tune(system, op)[(algo, proto)][0]
    without = tune(replace(system, net_latency_us=0.0), op)[(algo, proto)][0]
    return (with_plugin - without) * 1e-6
