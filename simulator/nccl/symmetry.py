"""Predict's time on many identical nodes from engine runs on a few: the symmetry of NCCL's schedules across nodes.

A preset machine of N nodes is N copies of one node on a leaf-spine network whose leaves each take P nodes
(`fabric_period`): shifting every rank by P nodes maps the machine, and NCCL's rings, onto themselves. Two families:

- ring-like (`nccl_ring`, and `rails`, whose rail rings cross the nodes): at fixed bytes per transfer, each further P
  nodes add the same ring positions, hops (one more leaf crossing) and steps, so the engine's time is affine in
  node-periods once past the schedule's start-up and tail: T(N) = T(n1) + (N - n1) / P x (T(n1 + P) - T(n1)),
  n1 = N (mod P) plus MIN_PERIODS leaves;
- tree-like (`nvls_tree`, and `nccl_tree`: NCCL's double binary tree over the nodes, pieces of fixed bytes): each
  doubling of the nodes adds one level to both trees, so on N = 2^k nodes the time is affine in k (on other N,
  interpolated in log2 N and marked NOT PROVEN).

The reduced instance keeps the full one's bytes per transfer: the same pick (algorithm, protocol, channels,
pipeline chunks: NCCL's choices for the full machine and size) built on n nodes. For the ring family the transfers
that carry a 1/nodes share of a buffer (SCALED: every ring transfer of `nccl_ring`, the rail rings' transfers
across nodes of `rails`) are set to their mean times n / N, so that the reduced schedule is as uniform as the full
one (a ring's pieces differ by one element where its share is not a whole number of elements; the uniform schedule
moves their mean). An NVLS-tree's pieces do not depend on the node count; it keeps the full run's chunk count.

Affine is not assumed: `extrapolate` times three instances and takes the law as proven only when both pairs predict
the same time for N (within AGREE) and the schedule is in PROVEN. The engine's max-min sharing does not always give a
ring a constant cost per node-period: where a node's channels share NVLink at about the NIC's rate, a ring's steps
take irregular times, and a ring's instances can agree while its scaled time is off the full run (a3-mega:nodes=25,
allgather 64 MiB: 2.3%), so `nccl_ring` is not in PROVEN; `rails` changes its bottleneck stage with the node count
(its instances then disagree; later windows of instances are tried, `ring_nodes`). Unproven, predict runs the full
machine; where that exceeds the engine's budget (`check_budget`) NCCL's pick is answered scaled, marked NOT PROVEN.
tests/simulator/test_symmetry.py compares the reduced answer with the full engine run over the machine presets
NCCL's model knows, node counts, sizes and ops. Not reduced: a calibrated or modified topology, ranks_per_node, fewer
ranks than the machine has, PAT, NVLS on one node, an NVLS-tree on a node count that is not a power of two.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from ..errors import CollsimError
from ..schedule import Schedule
from ..topology.model import Topology
from ..topology.presets import PresetBuild
from .result import Prediction

MAX_GPUS = 16384  # the largest machine predict takes
MIN_PERIODS = 3  # the smallest ring-like instance spans at least this many leaves
MIN_TREE_NODES = 8  # the smallest tree-like instance (three levels of the double binary tree)
AGREE = 0.001  # the two extrapolations of three instances agree within this fraction of the time
SCALED = {"nccl_ring": "all", "rails": "across"}  # ring-like schedules -> transfers that carry 1/nodes of a buffer
# those whose scaling, once three instances agree, has matched the full run in every case tested: not `nccl_ring`
# (a3-mega:nodes=25 allgather 64 MiB: its instances agreed within 0.1% and the scaled time was 2.3% off the full run)
PROVEN = {"rails", "nvls_tree"}
# the engine's budget for one size of a full run, in transfers: the largest predict ran before this reduction existed
# (512 ranks): a ring of 8 channels over 512 ranks, 8 x 2 x 511 x 512; an NVLS-tree on 64 nodes of 8 GPUs, 64 pieces
# per node of 3 x 8 + 2 transfers (its transfers cost the engine more: each crosses a node's switch device)
MAX_TRANSFERS = 8 * 2 * 511 * 512
MAX_NVLS_TREE_TRANSFERS = 64 * 64 * 26
MAX_REDUCED_RANKS = 512  # the largest instance a pick is timed on in place of the machine (predict's old limit)


class OverBudget(CollsimError):
    """A full engine run larger than MAX_TRANSFERS."""


def check_gpus(gpus: int, what: str) -> None:
    """Refuse a machine of more than MAX_GPUS GPUs in one line, before anything is built."""
    if gpus > MAX_GPUS:
        raise CollsimError(f"ranks: {what} has {gpus:,} GPUs; predict takes at most {MAX_GPUS:,}; expected fewer nodes")


def check_budget(transfers: int, what: str, budget: int = MAX_TRANSFERS) -> None:
    """Refuse a full engine run of more than `budget` transfers (one size) before its schedule is built."""
    if transfers > budget:
        raise OverBudget(f"ranks: {what} needs the full engine run (no proven reduction here, "
                           f"simulator/nccl/symmetry.py) of about {transfers:,} transfers per size; predict runs at most "
                           f"{budget:,}; expected fewer nodes")


def fabric_period(topology: Topology, per_node: int, nodes: int) -> int:
    """P: shifting every rank by P nodes maps the network, and NCCL's rail-aware rings, onto themselves.

    On a rail-optimised fabric (simulator/topology/fabric.py) NIC k of every node of a scalable unit is on rail k's
    leaf: where every node shares node 0's leaf (one unit, or one leaf), any node is like any other, P = 1; else P is
    the nodes on node 0's leaf (a unit; a leaf of a leaf-spine built by `cluster`); N where the nodes share no NIC
    (one NVLink domain)."""
    def leaf(j: int) -> int | None:
        for link in topology.route(j * per_node, (j + 1) % nodes * per_node):
            if topology.node_kinds[topology.link_src[link]] == "nic":
                return int(topology.link_dst[link])
        return None
    first = leaf(0)
    if first is None:
        return nodes
    same = sum(leaf(j) == first for j in range(nodes))
    return 1 if same == nodes else same


def is_preset_as_built(topology: Topology, ranks: int, ranks_per_node: int | None) -> bool:
    """Whether the machine is a preset exactly as built on several nodes (every GPU a rank, identity placement, no
    calibration, no changed links): the machine whose symmetry the reduction relies on."""
    origin = topology.origin
    if origin is None or ranks_per_node is not None or origin.calibration is not None:
        return False
    if origin.nodes < 2 or ranks != topology.num_devices or topology.placement != list(range(ranks)) or topology.ecmp:
        return False
    built = origin.build()
    return all(np.array_equal(getattr(built, a), getattr(topology, a)) for a in ("latency", "bandwidth", "link_src", "link_dst"))


def ring_nodes(nodes: int, period: int, per_node: int) -> list[tuple[int, int, int]]:
    """The node counts a ring-like pick may be timed on for N nodes, as windows of three equally spaced ones: first
    n1 = N (mod P) with at least MIN_PERIODS leaves, then + P, + 2P; each further window starts at the last one's end
    with twice its spacing (past a change of bottleneck, the law is affine again). Only instances of fewer than N nodes
    and at most MAX_REDUCED_RANKS ranks; where none fits with P > 1, those of P = 1; [] when not even those fit."""
    n1 = MIN_PERIODS * period + nodes % period
    windows, step = [], period
    while n1 + 2 * step < nodes and (n1 + 2 * step) * per_node <= MAX_REDUCED_RANKS:
        windows.append((n1, n1 + step, n1 + 2 * step))
        n1, step = n1 + 2 * step, 2 * step
    if not windows and period > 1:  # a unit too large to repeat within the instances: windows of single nodes, whose
        return ring_nodes(nodes, 1, per_node)  # law leaves out the units' crossings (a ring's scaling is never proven)
    return windows


def tree_nodes(nodes: int, per_node: int, powers_only: bool = True) -> list[tuple[int, int, int]]:
    """The node counts a tree is timed on for N nodes: (8, 16, 32), then windows doubling on from the last one's end
    while their ranks stay within MAX_REDUCED_RANKS; [] for N not above them, or (`powers_only`, the NVLS-tree) N not
    a power of two."""
    windows, n1 = [], MIN_TREE_NODES
    while (not powers_only or not nodes & (nodes - 1)) and 4 * n1 < nodes and 4 * n1 * per_node <= MAX_REDUCED_RANKS:
        windows.append((n1, 2 * n1, 4 * n1))
        n1 *= 4
    return windows


def rescaled(schedule: Schedule, per_node: int, factor: float) -> Schedule:
    """The ring-like schedule with its SCALED transfers all carrying their mean bytes times `factor`."""
    arrays = dict(schedule.arrays)
    nbytes = arrays["bytes"].astype(np.float64)
    if SCALED[schedule.algorithm] == "all":
        scaled = np.ones(nbytes.size, dtype=bool)
    else:
        scaled = arrays["src"] // per_node != arrays["dst"] // per_node
    nbytes[scaled] = nbytes[scaled].mean() * factor
    clone = copy.copy(schedule)  # an ArraySchedule: `arrays` is a cached property, which the copy's own value hides
    clone.__dict__["arrays"] = {**arrays, "bytes": nbytes}
    return clone


@lru_cache(maxsize=8)
def instance(origin: PresetBuild, nodes: int) -> Topology:
    """The preset as built on `nodes` nodes, once per process: every size and pick of a call is timed on the same few
    instances (the views the engine runs on are copies; nothing changes a topology once built)."""
    return replace(origin, nodes=nodes).build()


def extrapolate(xs: tuple[float, float, float], times: list[float], x: float) -> tuple[float, float]:
    """The time at x by the line through the last two points (the furthest from the schedule's start-up), and how far
    the line through the first two points is from it there (a fraction of it: within AGREE, the affine law holds)."""
    (x1, x2, x3), (t1, t2, t3) = xs, times
    first = t1 + (x - x1) * (t2 - t1) / (x2 - x1)
    second = t2 + (x - x2) * (t3 - t2) / (x3 - x2)
    return second, abs(first - second) / max(abs(second), 1e-12)


@dataclass(frozen=True)
class Reduced:
    """A pick timed on smaller instances of the machine and scaled to it; `run()` gives the full machine's Prediction
    and whether three instances agree on it (within AGREE; else the affine law is not shown to hold and the answer is
    the last window's, marked NOT PROVEN).

    `windows`: the instances' node counts, three at a time (ring_nodes, tree_nodes), tried in turn until one agrees;
    `engine_at(machine, nodes)` -> (the engine's seconds on that machine, how an engine time becomes the full machine's
    Prediction); `family`: "ring" (x = nodes) or "tree" (x = log2 nodes)."""

    topology: Topology
    windows: list[tuple[int, int, int]]
    engine_at: Callable[[Topology, int], tuple[float, Callable[[float], Prediction]]]
    family: str

    def run(self) -> tuple[Prediction, bool]:
        origin = self.topology.origin
        full = origin.nodes
        timed: dict[int, tuple[float, Callable[[float], Prediction]]] = {}
        x = np.log2 if self.family == "tree" else float
        for nodes in self.windows:
            for n in nodes:
                if n not in timed:
                    timed[n] = self.engine_at(instance(origin, n), n)
            engine_s, apart = extrapolate(tuple(x(n) for n in nodes), [timed[n][0] for n in nodes], x(full))
            if apart <= AGREE:
                break
        how = "affine in log2 nodes" if self.family == "tree" else f"affine in steps of {nodes[1] - nodes[0]} nodes"
        note = f"engine on {'/'.join(map(str, nodes))} nodes, {how}, scaled to {full}"
        if apart > AGREE:
            note += (f"; NOT PROVEN: the instances' lines differ by {apart:.1%} at {full} nodes and the full run is over "
                     "predict's budget")
        return replace(timed[nodes[-1]][1](engine_s), reduced=note), apart <= AGREE
