"""NCCL's PAT in `collsim predict`: the registered `pat` schedule (simulator/algorithms/pat.py) timed by the engine.

NCCL runs PAT for allgather and reduce-scatter at one GPU per node only, with Simple (tuning.cc
ncclPatEnable; `collsim predict --ranks-per-node 1`). tuning.cc's PAT latency is

    baseLat 8 us + log2(nNodes) x interLat / 3.5 + 2.8 us x nRanks

("log latency" plus "still a linear part"), interLat being the network's tree latency at one GPU per
node (hwLat[NET][TREE][Simple] = 14 us, plus twice the network plugin's reported latency), and its
bandwidth 0.75 of the graph's. They reach the engine the way the ring's costs do (simulator/nccl/protocols.py):

- each PAT message crosses the network at interLat / 3.5 without the plugin's figure (4 us): the links'
  step latency. The schedule sends a whole step per message, ceil(lg p) messages per rank, so at a power
  of two the engine charges NCCL's log2(nNodes) x 14 / 3.5 us;
- 8 us + 2.8 us x ranks once per call (`base_s`), plus the plugin's latency as NCCL's model charges it
  (predict.plugin_latency_s, as for ring and tree);
- the 0.75 as 1 / 0.75 wire bytes per payload byte, at the graph's whole bandwidth whatever channels NCCL sheds
  on a small call, as tuning.cc charges it and as for the ring across nodes (simulator/nccl/channels.py
  channel_share: PAT always spans nodes).
"""

from __future__ import annotations

from dataclasses import replace

from ..algorithms import build_schedule
from ..collective import Collective
from ..engine import EngineOptions, simulate
from ..topology.model import Topology
from .channels import channel_share, collective_channels
from .protocols import plugin_latency_s, protocol, with_step_latency
from .result import Prediction
from .tuning import PAT_BW_FACTOR, PAT_STEP_DIVISOR, PAT_US_PER_RANK, System


def run_pat(topology: Topology, system: System, op: str, size: int, ranks: int, dtype: str = "float32",
            net_extra_s: float = 0.0, intra_extra_s: float = 0.0) -> Prediction:
    """Time NCCL's PAT pick (allgather or reduce-scatter, Simple) with the `pat` schedule, a whole step per message.

    The extras (calibrated or fitted per-step latencies) are added to the per-step latencies, as for the ring.
    """
    multinode = system.nodes > 1
    channels = collective_channels(system, "pat", "Simple", size)[0]
    cost = protocol("Simple", "pat", system.link, multinode, system.nccl_version)
    # tuning.cc at one GPU per node: interLat is the network's tree latency, divided over PAT's log steps
    step_s = protocol("Simple", "tree", system.link, multinode, system.nccl_version).net_s / PAT_STEP_DIVISOR
    cost = replace(cost, base_s=cost.base_s + PAT_US_PER_RANK * 1e-6 * ranks + plugin_latency_s(system, op, "pat", "Simple"),
                   net_s=step_s + net_extra_s, intra_s=cost.intra_s + intra_extra_s,
                   byte_factor=cost.byte_factor / PAT_BW_FACTOR * channel_share(system, channels))
    coll = Collective(op, ranks, size, dtype)
    schedule = build_schedule(coll, "pat")
    machine = with_step_latency(topology, cost.intra_s, cost.net_s)
    trace = simulate(schedule, machine, EngineOptions(ports=0, messages=cost.messages()))
    return Prediction(size, coll.count, "pat", "Simple", "pat", channels, cost.base_s + trace.time,
                      trace.time, cost.base_s)
