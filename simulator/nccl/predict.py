"""What nccl-tests would print on a preset machine: NCCL's pick of algorithm, protocol and channels, timed by the engine.

For each size: NCCL's own tuning model (simulator/nccl/tuning.py) picks (algorithm, protocol) for
the machine the preset describes; the pick becomes a schedule collsim can check and time:

- ring -> `nccl_ring` with NCCL's channel count for the size (simulator/nccl/channels.py), rings in
  rail-aware orders (every NIC used);
- tree across nodes -> `nccl_tree` (simulator/algorithms/nccl_tree.py), NCCL's own tree: a chain inside each
  node, a double binary tree over the nodes, each channel headed by another GPU (so every rail carries channels),
  reduce up and broadcast down in NCCL's pipelined tree steps: its latency grows with log2(nodes);
- NVLS-tree (allreduce across NVSwitch nodes of Hopper and later) -> `simulator/nccl/nvls_tree.py`: each
  node's switch reduces and multicasts, the GPUs' double binary trees join the nodes;
- one node, NVLS (Hopper and later on an NVSwitch) -> `simulator/nccl/nvls.py`: the switch is a helper rank
  that reduces and multicasts, its links at NCCL's nvlsEfficiency; trees -> `nccl_ring`.

NVLS for allgather and reduce-scatter on one node runs only where NCCL's model picks it, as NCCL does:
enqueue.cc's topoGetAlgoInfo takes the fastest (algorithm, protocol) of tuning.cc's table, and the only
other ways NVLS is chosen for them are a tuner plugin, NCCL_ALGO, or the NCCL_CTA_POLICY_EFFICIENCY path
with user-registered buffers (ncclGetAlgoInfo), none of which nccl-tests uses by default. On one node of
8 H100 or B200 that model picks a ring at every size (simulator/nccl/tuning.py: NVLS 280 / 560 GB/s
against the ring's 424 / 825 in v2.27.3, 208 / 363 in master), so `predict` times a ring there too.

The protocol's costs (simulator/nccl/protocols.py) set the links' per-step latency and the wire-byte
factor; its base latency is added once. Rings and trees run on NVLink at NCCL's own per-lane figure
(`nccl_graph_view`: 40.1 of NVLink 5's 50 GB/s per lane, 20.6 of NVLink 4's 25). The engine runs with
unlimited ports per rank (the channels run at once) and max-min sharing on every link.

At one GPU per node (`ranks_per_node=1`, simulator/nccl/placement.py) NCCL's model also has PAT for
allgather and reduce-scatter: its pick runs the `pat` schedule with PAT's costs (simulator/nccl/pat.py).

Where two candidates are timed (ring and tree across nodes), the one whose lower bound (simulator/engine/bound.py)
cannot beat the time already found is not run (`fastest`): the same answer as running both, for less.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property, partial

import numpy as np

from ..algorithms import build_schedule
from ..algorithms.nccl_tree import STEPS as TREE_STEPS
from ..collective import Collective, normalize_op
from ..engine import EngineOptions, simulate
from ..engine.bound import PairCosts, critical_path, lower_bound, safe
from ..errors import CollsimError
from ..schedule import Schedule
from ..topology.model import Topology
from ..topology.presets import NET_STEP_FIT
from .calibration import for_protocol
from .channels import NVLS_STEP_FIT, channel_share, collective_channels, nvls_extra_steps, nvls_tree_chunk_size, tree_chunk_size
from .machine import NcclMachine, in_release, resolve
from .machine import knows as knows  # re-exported: whether NCCL's model knows a topology
from .nvls import nvls_schedule, switch_view, timing_view
from .nvls_tree import MAX_CHUNKS as NVLS_TREE_MAX_CHUNKS
from .nvls_tree import nvls_tree_allreduce, pipelined
from .pat import run_pat
from .placement import default_ranks
from .protocols import plugin_latency_s, protocol, with_step_latency
from .result import DISCARDED, Prediction
from .symmetry import MAX_GPUS as MAX_GPUS  # predict's largest machine (re-exported)
from .symmetry import (
    MAX_NVLS_TREE_TRANSFERS,
    MAX_TRANSFERS,
    PROVEN,
    OverBudget,
    Reduced,
    check_budget,
    check_gpus,
    fabric_period,
    is_preset_as_built,
    rescaled,
    ring_nodes,
    tree_nodes,
)
from .tuning import (
    LL_MAX_BW,
    NVLS_EFFICIENCY,
    PER_CH_MAX_RING_LL128,
    PROTOCOLS,
    System,
    latency_us,
    predict_times,
    tune,
)

OPS = ("allreduce", "allgather", "reduce_scatter")
PIPELINE_CHUNK = 4 << 20  # bytes per NVLS pipeline chunk (NCCL's default buffer, NCCL_BUFFSIZE = 4 MiB)
MAX_PIPELINE = 32
TREE_MAX_PIPELINE = 256  # nccl_tree's pipeline parameter's maximum
TREE_MAX_TRANSFERS = 1 << 19  # nccl_tree: transfers per size at most (chunks are merged beyond it)
# a reduced tree's chunks: those TREE_MAX_TRANSFERS allows over 8x its largest instance's ranks (keeps predict on
# 16,384 GPUs near 20 s; the largest instance's own budget took 90 s, 256 MiB on 2048 nodes 3081 us against 3752)
TREE_SPEED = 8
NVLS_TREE_MAX_PIECES = 4096  # NVLS-tree: pieces (chunks x shards x 2 trees x nodes) per size, ~25 transfers each
# NCCL_ALGO's names (src/graph/tuning.cc ncclAlgoStr) -> nccl_model's; CollNet is not timed
ALGO_NAMES = {"ring": "ring", "tree": "tree", "nvls": "nvls", "nvlstree": "nvls_tree", "nvls_tree": "nvls_tree",
              "pat": "pat"}
MAX_CHANNELS = 64  # NCCL's MAXCHANNELS (src/include/device.h)


def parse_algo(text: str | None) -> str | None:
    """An algorithm as NCCL_ALGO names it (Ring, Tree, NVLS, NVLSTree, PAT; any case), or auto / None: NCCL's pick."""
    if text is None or str(text).lower() == "auto":
        return None
    algo = ALGO_NAMES.get(str(text).lower())
    if algo is None:
        raise CollsimError(f"algo: {text!r} is not an algorithm predict times; expected auto, Ring, Tree, NVLS, "
                           "NVLSTree or PAT (NCCL_ALGO's names)")
    return algo


def check_channels(channels: int | None) -> int | None:
    """Channels forced on ring and tree (NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS), 1..MAX_CHANNELS, or None."""
    if channels is not None and (isinstance(channels, bool) or not isinstance(channels, int)
                                 or not 1 <= channels <= MAX_CHANNELS):
        raise CollsimError(f"channels: {channels!r}; expected an integer from 1 to {MAX_CHANNELS} (NCCL's MAXCHANNELS)")
    return channels


def machine_of(topology: Topology, ranks: int, ranks_per_node: int | None = None) -> tuple[System, int]:
    """NCCL's view of a preset machine (its System) and the ranks per node the rings cross nodes by: a shorthand for
    NcclMachine.system of the topology's machine (simulator/nccl/machine.py), which code resolving it once calls.

    `ranks_per_node` K: K ranks on each node (simulator/nccl/placement.py), NCCL sees K GPUs and their NICs per node.
    """
    return resolve(topology).system(ranks, ranks_per_node)


def tree_pipeline(system: System, proto: str, size: int, channels: int, ranks: int,
                  engine_channels: int) -> tuple[int, int]:
    """(chunks, chunks in flight) of a tree channel: its share of the call in NCCL's tree steps
    (channels.tree_chunk_size, with the machine's NCCL_BUFFSIZE), NCCL_STEPS of them in flight on each connection.

    At most TREE_MAX_PIPELINE chunks, and as many as keep the schedule within TREE_MAX_TRANSFERS (2 (p-1) transfers
    per chunk and channel); where a chunk carries several of NCCL's steps, fewer chunks are in flight, so that as
    many bytes are as with NCCL's 8 steps (at least one chunk)."""
    steps = -(-size // (channels * tree_chunk_size(system, proto, size, channels, system.buffsize)))
    budget = max(1, TREE_MAX_TRANSFERS // (2 * (ranks - 1) * engine_channels))
    chunks = int(np.clip(steps, 1, min(TREE_MAX_PIPELINE, budget)))
    return chunks, max(1, TREE_STEPS * chunks // steps)


def nccl_pick(system: System, op: str, size: int, proto: str | None = None,
              algos: tuple[str, ...] | None = None) -> tuple[str, str]:
    """NCCL's (algorithm, protocol) at this size: the fastest by its own model, among `proto` and `algos` if given."""
    times = predict_times(system, op, [size])
    if algos is not None:
        available = sorted({a for a, _ in times})
        times = {k: v for k, v in times.items() if k[0] in algos}
        if not times:
            raise CollsimError(f"algo: NCCL has no {'/'.join(algos)} for {op} on this machine ({system.gpus_per_node} "
                               f"GPUs per node, {system.nodes} nodes, {system.arch}); expected one of {', '.join(available)}")
    if proto is not None:
        if proto not in PROTOCOLS:
            raise CollsimError(f"proto: unknown protocol {proto!r}; expected one of {', '.join(PROTOCOLS)}")
        offered = sorted({p for _, p in times})
        times = {k: v for k, v in times.items() if k[1] == proto}
        if not times:
            what = f"{'/'.join(algos)} " if algos is not None else ""
            raise CollsimError(f"proto: NCCL does not run {what}{proto} for {op} on this machine; expected one of "
                               f"{', '.join(offered)}")
    return min(times, key=lambda k: float(times[k][0]))


def predict(machine: NcclMachine | Topology, op: str, sizes, ranks: int | None = None, proto: str | None = None,
            dtype: str = "float32", net_extra_s: float | None = None, nvls_step_s: float | None = None,
            ranks_per_node: int | None = None, algo: str | None = None, channels: int | None = None,
            nccl_version: str | tuple[int, ...] | None = None, symmetry: bool = True) -> list[Prediction]:
    """One Prediction per size (nccl-tests' size meaning); size 0 takes 0 s, as NCCL discards it (DISCARDED).

    `machine`: NCCL's machine (simulator/nccl/machine.py), or a topology a preset built, whose machine is resolved
    once here.

    `algo` forces NCCL's algorithm (as NCCL_ALGO does: its best protocol for it, or `proto`); `channels` forces the
    ring and tree channel count (as NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS would; NVLS, NVLS-tree and PAT keep
    NCCL's own). NCCL's picks are still made by its model for its default channels. `nccl_version` ('2.20.3')
    takes tuning.cc's latency tables of that release for the picks and the step costs (nccl_model.LATENCY_HISTORY;
    bandwidth formulas stay master's); default: master.

    `ranks_per_node` K puts K ranks on each node (rank r on GPU r % K of node r // K; default ranks: K per node);
    at K = 1 NCCL runs PAT for allgather and reduce-scatter where its model says so.

    `net_extra_s` is added to NCCL's per-step network latency; default: a calibrated machine's value
    (simulator/nccl/calibration.py), else the preset network's fitted value (NET_STEP_FIT, 0 for networks
    without one). A calibrated machine also adds its intra-node step latency. benchmarks/preset_accuracy.py passes
    leave-one-out values so that no log is predicted with a constant fitted to it. `nvls_step_s` is the
    cost of one NVLS pipeline step (simulator/nccl/channels.py; default NVLS_STEP_FIT), passed the same way.

    On a preset machine of many nodes a ring or `rails` pick is timed on a few nodes and scaled
    (simulator/nccl/symmetry.py; the Prediction's `reduced` says so); `symmetry=False` runs the whole machine.
    """
    op = normalize_op(op)
    if op not in OPS:
        raise CollsimError(f"op: predict covers {', '.join(OPS)}; not {op}")
    algo, channels = parse_algo(algo), check_channels(channels)
    topology = machine.topology if isinstance(machine, NcclMachine) else machine
    if isinstance(machine, NcclMachine) and ranks_per_node is None:  # a machine already placed keeps its K
        ranks_per_node = machine.ranks_per_node
    ranks = ranks or default_ranks(topology, ranks_per_node)
    if ranks < 2:
        raise CollsimError(f"ranks: {ranks} rank has nothing to communicate; expected 2 or more")
    check_gpus(ranks, f"{topology.name} ({ranks} ranks)")
    if ranks_per_node is None:  # else NcclMachine.system checks K ranks on each node, within the preset's nodes
        topology.check_ranks(ranks)
    machine = in_release(machine, nccl_version)
    system, per_node = machine.system(ranks, ranks_per_node)
    if ranks_per_node is not None:
        machine = machine.placed(ranks_per_node)
    cal = machine.calibration
    if net_extra_s is None:
        net_extra_s = (cal.net_step_s if cal is not None
                       else NET_STEP_FIT.get(machine.net, (0.0, ""))[0] if system.nodes > 1 else 0.0)
    intra_extra_s = cal.intra_step_s if cal is not None else 0.0
    nvls_step_s = NVLS_STEP_FIT[0] if nvls_step_s is None else nvls_step_s
    call = Call(machine, system, per_node, op, ranks, dtype, net_extra_s, intra_extra_s, nvls_step_s, channels,
                symmetric(machine, system, ranks) if symmetry else False)
    out = []
    for size in sizes:
        if int(size) == 0:  # NCCL discards it (DISCARDED): no algorithm, no protocol, no channel, 0 s
            out.append(Prediction(0, 0, "none", "-", DISCARDED, 0, 0.0, 0.0, 0.0))
        else:
            out.append(call.time(int(size), candidates(system, op, int(size), proto, algo)))
    return out


def symmetric(machine: NcclMachine, system: System, ranks: int) -> bool:
    """Whether the machine is one whose symmetry across nodes simulator/nccl/symmetry.py may use: a preset as built,
    every GPU a rank, NCCL seeing its nodes as nodes."""
    return (system.nodes > 1 and system.nodes == machine.nodes
            and is_preset_as_built(machine.topology, ranks, machine.ranks_per_node))


@dataclass(frozen=True)
class Call:
    """predict's call on one machine, for each size: its picks timed on the full machine or, where the symmetry across
    its nodes is proven for the pick (`symmetric`, simulator/nccl/symmetry.py), on three smaller ones and scaled."""

    machine: NcclMachine
    system: System
    per_node: int
    op: str
    ranks: int
    dtype: str
    net_extra_s: float
    intra_extra_s: float
    nvls_step_s: float
    channels: int | None
    symmetric: bool

    def time(self, size: int, picks: list[tuple[str, str]]) -> Prediction:
        """The fastest of the picks at this size: scaled from fewer nodes where that is proven, else the full run, else
        (the full run over the engine's budget) scaled from fewer nodes all the same, its Prediction saying so.

        A pick's reduction runs only where its answer can be used: where every pick's scaling can be proven
        (`provable`), or, for the full run over the budget, NCCL's own pick and the others whose scaling can be proven
        (the answer is the same as reducing every pick first: a reduction that cannot be proven is never taken while
        the full run fits)."""
        rows: dict[int, tuple[Prediction, bool] | None] = {}

        def reduced(i: int) -> tuple[Prediction, bool] | None:
            if i not in rows:
                rows[i] = self.reduced(size, *picks[i], windows=None if i == 0 else 1)
            return rows[i]
        if self.symmetric and all(self.provable(picked) for picked, _ in picks):
            if all(row is not None and row[1] for row in map(reduced, range(len(picks)))):
                return min((reduced(i)[0] for i in range(len(picks))), key=lambda r: r.time_s)
        try:
            return self.full(size, picks)
        except OverBudget:
            if not self.symmetric or reduced(0) is None:
                raise
        # NCCL's pick (first), proven or not; another candidate only where its scaling is proven
        others = [reduced(i) if self.provable(picks[i][0]) else None for i in range(1, len(picks))]
        best = min([reduced(0)[0]] + [row[0] for row in others if row is not None and row[1]], key=lambda r: r.time_s)
        dropped = [f"{picked}/{proto}" for (picked, proto), row in zip(picks[1:], others) if row is None or not row[1]]
        if dropped:
            best = replace(best, reduced=f"{best.reduced}; {', '.join(dropped)} not timed (its scaling is not proven "
                                         "and its full run is over predict's budget)")
        return best

    def provable(self, picked: str) -> bool:
        """Whether the pick's reduction can be proven on this machine (Call.reduced): a tree (NVLS-tree, or NCCL's tree
        across nodes) on a power of two of nodes with instances below it; a ring-like schedule only if its name is in
        PROVEN (`nccl_ring`, which predict's rings run, is not)."""
        nodes = self.system.nodes
        if self.tree_across(picked) or (picked == "nvls_tree" and own_schedule(self.system, self.per_node, picked)):
            return not nodes & (nodes - 1) and bool(tree_nodes(nodes, self.per_node, powers_only=False))
        return not own_schedule(self.system, self.per_node, picked) and "nccl_ring" in PROVEN

    def full(self, size: int, picks: list[tuple[str, str]]) -> Prediction:
        """The fastest of the picks, each timed on the whole machine; OverBudget before any schedule is built where
        one of them is over the engine's budget."""
        if any(own_schedule(self.system, self.per_node, picked) for picked, _ in picks):
            rows = [run_pick(self.machine.engine(proto), self.system, self.per_node, self.op, size, self.ranks,
                             picked, proto, self.dtype, self.net_extra_s, self.intra_extra_s, self.nvls_step_s,
                             self.channels, built=self.machine.topology) for picked, proto in picks]
            return min(rows, key=lambda r: r.time_s)
        for picked, proto in picks:
            name, params = ring_tree_shape(self.system, self.per_node, self.op, size, self.ranks, picked, proto,
                                           self.channels)[:2]
            check_budget(ring_tree_transfers(self.op, name, params, self.ranks), f"a {name} {self.op} over {self.ranks} ranks")
        return fastest([self.plan(self.machine.topology, size, self.ranks, picked, proto) for picked, proto in picks])

    @cached_property
    def period(self) -> int:
        """The nodes per leaf switch (simulator/nccl/symmetry.py fabric_period)."""
        return fabric_period(self.machine.topology, self.per_node, self.system.nodes)

    def plan(self, machine: Topology, size: int, ranks: int, picked: str, proto: str,
             pipeline_ranks: int | None = None) -> Plan:
        """plan_ring_tree's Plan of a pick on `machine` (the full one as built, or fewer of its nodes: NCCL's choices
        stay the full machine's, from `system`; a tree's chunks those the engine's budget allows over `pipeline_ranks`
        ranks, default the full machine's), at the calibration's efficiencies for the protocol where there is one."""
        return plan_ring_tree(for_protocol(machine, proto, self.machine.calibration), self.system, self.per_node,
                              self.op, size, ranks, picked, proto, self.dtype, self.net_extra_s, self.intra_extra_s,
                              self.channels, pipeline_ranks or self.ranks, built=machine)

    def tree_across(self, picked: str) -> bool:
        """Whether plan_ring_tree runs the pick as NCCL's tree across nodes (`nccl_tree`)."""
        return self.system.nodes > 1 and self.op == "allreduce" and picked in ("tree", "nvls", "nvls_tree")

    def reduced_tree(self, size: int, picked: str, proto: str) -> tuple[Prediction, bool] | None:
        """NCCL's tree across nodes (nccl_tree) scaled by tree_law; every instance in the chunks its largest instance
        can afford (not the few a full run of thousands of ranks could: NCCL pipelines in its steps at any size)."""
        count = Collective(self.op, self.ranks, size, self.dtype).count
        shape = tree_nodes(self.system.nodes, self.per_node, powers_only=False)
        largest = max((n for window in shape for n in window), default=self.system.nodes) * self.per_node * TREE_SPEED

        def engine_at(machine: Topology, n: int) -> tuple[float, Callable[[float], Prediction]]:
            plan = self.plan(machine, size, n * self.per_node, picked, proto, largest)
            return (simulate(plan.schedule, plan.machine, plan.options).time,
                    lambda engine_s: replace(plan.finish(engine_s), count=count))
        return self.tree_law(engine_at)

    def tree_law(self, engine_at: Callable[[Topology, int], tuple[float, Callable[[float], Prediction]]]
                 ) -> tuple[Prediction, bool] | None:
        """A tree (NVLS-tree, nccl_tree) timed by `engine_at` on 8, 16 and 32 nodes, affine in log2 nodes (each doubling
        adds a level to both trees): proven where N is a power of two and the instances agree, else marked."""
        nodes = self.system.nodes
        shape = tree_nodes(nodes, self.per_node, powers_only=False)
        if not shape:
            return None
        row, proven = Reduced(self.machine.topology, shape, engine_at, "tree").run()
        if nodes & (nodes - 1):
            row = replace(row, reduced=f"{row.reduced}; NOT PROVEN: {nodes} nodes is not a power of two (interpolated "
                                       "in log2 nodes between trees of whole levels)")
        return row, proven and not nodes & (nodes - 1)

    def fits(self, size: int, picked: str, proto: str, nodes: int) -> bool:
        """Whether a ring-like pick's instance on `nodes` nodes is within the engine's budget (MAX_TRANSFERS): a
        window of instances is tried only where its largest one is, so that no instance is refused after others ran."""
        ranks = nodes * self.per_node
        name, params = ring_tree_shape(self.system, self.per_node, self.op, size, ranks, picked, proto, self.channels)[:2]
        return ring_tree_transfers(self.op, name, params, ranks) <= MAX_TRANSFERS

    def reduced(self, size: int, picked: str, proto: str, windows: int | None = None) -> tuple[Prediction, bool] | None:
        """The pick timed on three smaller instances and scaled to the machine, and whether that is proven (Reduced.run);
        None where the symmetry does not apply (too few nodes, an NVLS-tree on a node count not a power of two). At most
        `windows` windows of instances are tried (NCCL's alternative candidate: the first only)."""
        nodes = self.system.nodes
        if own_schedule(self.system, self.per_node, picked):
            if picked != "nvls_tree":
                return None
            shape = tree_nodes(nodes, self.per_node, powers_only=False)
            largest = max((n for window in shape for n in window), default=nodes)
            return self.tree_law(partial(nvls_tree_engine, self.system, self.per_node, size, self.ranks, self.dtype,
                                         self.net_extra_s, self.intra_extra_s,
                                         chunk_ranks=largest * self.per_node))
        if self.tree_across(picked):
            return self.reduced_tree(size, picked, proto)
        shape = [w for w in ring_nodes(nodes, self.period, self.per_node) if self.fits(size, picked, proto, w[-1])]
        shape = shape[:windows]
        if not shape:
            return None
        count = Collective(self.op, self.ranks, size, self.dtype).count
        names = set()

        def engine_at(machine: Topology, n: int) -> tuple[float, Callable[[float], Prediction]]:
            plan = self.plan(machine, size, n * self.per_node, picked, proto)
            names.add(plan.schedule.algorithm)
            schedule = rescaled(plan.schedule, self.per_node, n / nodes)
            return (simulate(schedule, plan.machine, plan.options).time,
                    lambda engine_s: replace(plan.finish(engine_s), count=count))
        row, proven = Reduced(self.machine.topology, shape, engine_at, "ring").run()
        if proven and not names <= PROVEN:
            row = replace(row, reduced=f"{row.reduced}; NOT PROVEN: a ring's scaling can be off the full run with its "
                                       "instances agreeing, and the full run is over predict's budget")
        return row, proven and names <= PROVEN


def fastest(plans: list[Plan]) -> Prediction:
    """The fastest of the plans' Predictions, the first of them on a tie (as min over them all), without running a plan
    that cannot be it: plans run in order of their lower bounds (Plan.at_least), and one whose bound is above the best
    time found (or equal to it and later in the list) is skipped, since its own time is at least its bound."""
    if len(plans) == 1:
        return plans[0].run()
    floors = [plan.at_least().time_s for plan in plans]
    best: tuple[float, int] | None = None
    found: Prediction | None = None
    for i in sorted(range(len(plans)), key=lambda i: (floors[i], i)):
        if best is not None and (floors[i], i) > best:
            break  # so are all that follow: their bounds are larger still
        row = plans[i].run()
        if best is None or (row.time_s, i) < best:
            best, found = (row.time_s, i), row
    return found


def candidates(system: System, op: str, size: int, proto: str | None = None,
               algo: str | None = None) -> list[tuple[str, str]]:
    """The (algorithm, protocol) pairs predict times at this size; it keeps the fastest (`fastest`: one that cannot
    win is not run).

    NCCL's pick (among ring and NVLS on one node); across nodes, allreduce also times the other of ring
    and tree, because NCCL's model often mis-ranks those two there. An NVLS-tree pick
    is NCCL's alone: NCCL runs the argmin of its own table (enqueue.cc topoGetAlgoInfo), and nothing
    says its NVLS-tree ranking is off, so it is timed as picked and never swapped for ring or tree.
    A forced `algo` is the only candidate, with NCCL's protocol for it (or `proto`).
    """
    if algo is not None:
        return [nccl_pick(system, op, size, proto, algos=(algo,))]
    one_node = ("ring", "nvls")
    algo, proto_used = nccl_pick(system, op, size, proto, algos=None if system.nodes > 1 else one_node)
    out = [(algo, proto_used)]
    if system.nodes > 1 and op == "allreduce" and algo != "nvls_tree":
        other = "ring" if algo in ("tree", "nvls") else "tree"
        out.append((other, nccl_pick(system, op, size, proto, algos=(other,))[1]))
    return out


def run_pick(topology: Topology, system: System, per_node: int, op: str, size: int, ranks: int, algo: str, proto: str,
             dtype: str = "float32", net_extra_s: float = 0.0, intra_extra_s: float = 0.0,
             nvls_step_s: float = 0.0, channels: int | None = None, built: Topology | None = None) -> Prediction:
    """Time one (algorithm, protocol) pick with the engine; the extras are added to NCCL's per-step latencies.

    `topology`: the machine the protocol runs on (NcclMachine.engine); `built`: that machine as built, without a
    calibration (default `topology`), on which NVLS runs (at nvlsEfficiency) and NCCL's graph caps the NVLink links.

    Ring and tree run on the channels NCCL gives a call of this size (simulator/nccl/channels.py), or on
    `channels` if given; each channel carries 1/n_channels of the graph's bandwidth, so fewer channels move
    the bytes slower (more than the graph's channels are bound by the links alone).
    """
    built = topology if built is None else built
    if own_schedule(system, per_node, algo):
        if algo == "pat":  # one GPU per node (simulator/nccl/pat.py)
            return run_pat(topology, system, op, size, ranks, dtype, net_extra_s, intra_extra_s)
        if algo == "nvls":
            return run_nvls(built, system, size, ranks, dtype, intra_extra_s, nvls_step_s, op)
        return run_nvls_tree(built, system, per_node, size, ranks, dtype, net_extra_s, intra_extra_s)
    return plan_ring_tree(topology, system, per_node, op, size, ranks, algo, proto, dtype, net_extra_s, intra_extra_s,
                          channels, built=built).run()


def own_schedule(system: System, per_node: int, algo: str) -> bool:
    """Whether run_pick times `algo` with a schedule of its own (PAT; NVLS on one node; NVLS-tree where every GPU of a
    node heads a channel, else it runs as a tree), not with plan_ring_tree's ring or tree."""
    return (algo == "pat" or (algo == "nvls" and system.nodes == 1)
            or (algo == "nvls_tree" and system.nvls_graph.channels == per_node))


@dataclass(frozen=True)
class Plan:
    """A pick ready to time: its schedule on its machine with its engine options, and how the engine's time becomes a
    Prediction (`finish`, non-decreasing in the engine's seconds)."""

    schedule: Schedule
    machine: Topology
    options: EngineOptions
    finish: Callable[[float], Prediction]

    def run(self) -> Prediction:
        """The Prediction, timed by the engine."""
        return self.finish(simulate(self.schedule, self.machine, self.options).time)

    def at_least(self) -> Prediction:
        """A Prediction whose time_s run()'s cannot fall below: the engine's time at its lower bound
        (simulator/engine/bound.py: the busiest link, the ports and the longest dependency chain, less the clock's
        rounding), through `finish`, which keeps the order."""
        pairs = PairCosts(self.machine, self.options)
        bound = max(lower_bound(self.schedule, self.machine, self.options, pairs),
                    critical_path(self.schedule, self.machine, self.options, pairs))
        return self.finish(safe(bound, len(self.schedule)))


def plan_ring_tree(topology: Topology, system: System, per_node: int, op: str, size: int, ranks: int, algo: str,
                   proto: str, dtype: str = "float32", net_extra_s: float = 0.0, intra_extra_s: float = 0.0,
                   channels: int | None = None, pipeline_ranks: int | None = None, built: Topology | None = None) -> Plan:
    """run_pick's ring and tree picks (`nccl_ring`, or `nccl_tree` for a tree allreduce across nodes), ready to time.

    `pipeline_ranks`: the rank count whose transfer budget sets a tree's chunks (default `ranks`; a reduced instance of
    a larger machine keeps that machine's chunks, simulator/nccl/symmetry.py); `built`: `topology` as built, without
    a calibration (default `topology`; nccl_graph_view)."""
    multinode = system.nodes > 1
    name, params, share, channels = ring_tree_shape(system, per_node, op, size, pipeline_ranks or ranks, algo, proto,
                                                     channels)
    family = "tree" if algo in ("tree", "nvls", "nvls_tree") else "ring"
    cost = protocol(proto if algo != "nvls" else "Simple", family, system.link, multinode, system.nccl_version)
    plugin_s = plugin_latency_s(system, op, family, cost.name)
    cost = replace(cost, base_s=cost.base_s + plugin_s, net_s=cost.net_s + net_extra_s, intra_s=cost.intra_s + intra_extra_s,
                   byte_factor=cost.byte_factor * share)
    topology = nccl_graph_view(topology, system, built)
    cap = one_node_cap_GBps(system, family, cost.name, channels) if not multinode else None
    if cap is not None:  # tuning.cc's cap on the protocol's bus bandwidth (one node), on the links' rate
        cost = replace(cost, byte_factor=max(cost.byte_factor, topology.path_cost(0, 1)[1] / (cap * 1e9)))
    coll = Collective(op, ranks, size, dtype)
    check_budget(ring_tree_transfers(op, name, params, ranks), f"a {name} {op} over {ranks} ranks")
    schedule = build_schedule(coll, name, **params)
    machine = with_step_latency(topology, cost.intra_s, cost.net_s)

    def finish(engine_s: float) -> Prediction:
        return Prediction(size, coll.count, algo, cost.name, name, channels, cost.base_s + engine_s, engine_s, cost.base_s)
    return Plan(schedule, machine, EngineOptions(ports=0, messages=cost.messages()), finish)


def ring_tree_shape(system: System, per_node: int, op: str, size: int, ranks: int, algo: str, proto: str,
                    channels: int | None = None) -> tuple[str, dict, float, int]:
    """plan_ring_tree's schedule for a pick, before it is built: its name and parameters (ring_or_tree, a tree's chunks
    those the engine's budget allows over `ranks` ranks), the wire bytes per byte of a channel's share, and the
    channels NCCL runs (`channels` if forced)."""
    family = "tree" if algo in ("tree", "nvls", "nvls_tree") else "ring"
    forced = channels is not None
    channels = channels or collective_channels(system, family, proto, size)[0]
    name, params, share = ring_or_tree(system, per_node, op, size, ranks, family, proto, channels, forced)
    return name, params, share, channels


def one_node_cap_GBps(system: System, family: str, proto: str, channels: int) -> float | None:
    """The bus bandwidth tuning.cc allows a ring's protocol on one node (None: no cap): LL at llMaxBw, LL128 at
    perChMaxRingLL128Bw per channel running (NCCL 2.30: 40 GB/s on Blackwell, under the links' 0.92 x 721.8)."""
    if proto == "LL":
        return LL_MAX_BW[system.arch][0]
    if proto == "LL128" and family == "ring":
        return channels * PER_CH_MAX_RING_LL128[system.arch]
    return None


def ring_or_tree(system: System, per_node: int, op: str, size: int, ranks: int, family: str, proto: str,
                 channels: int, forced: bool) -> tuple[str, dict, float]:
    """The schedule plan_ring_tree runs (its name and parameters) and the wire bytes per byte a channel's share of
    the graph adds (channels.channel_share: n_channels / channels on one node or where the channels are forced, else 1).

    Rings: `nccl_ring`; channels beyond the GPUs of a node repeat the same orders (same links, same NICs): the engine
    runs min(C, G) rings carrying the same bytes, which times the same under max-min sharing. A ring on fewer
    channels than the graph's moves each at its channel's share on one node or where forced (channel_share).

    A tree allreduce across nodes: `nccl_tree` on min(C, 2G) channels (beyond, a (head, tree) pair repeats), in
    NCCL's tree steps (tree_pipeline), NCCL_STEPS of them in flight on each connection (so a step's latency overlaps
    the steps before it, as NCCL's FIFO slots let it).
    """
    share = channel_share(system, channels, forced)
    if system.nodes > 1 and op == "allreduce" and family == "tree":
        engine_channels = min(channels, 2 * per_node)
        pipeline, window = tree_pipeline(system, proto, size, channels, ranks, engine_channels)
        params = {"channels": engine_channels, "group": per_node, "pipeline": pipeline, "window": window}
        return "nccl_tree", params, share
    return "nccl_ring", {"channels": min(channels, per_node), "node": per_node}, share


def ring_tree_transfers(op: str, name: str, params: dict, ranks: int) -> int:
    """About how many transfers plan_ring_tree's schedule has: C rings of (2)(p - 1) steps of p transfers (nccl_ring);
    per pipeline chunk and channel, every rank sends once up and once down the tree (nccl_tree); or per pipeline
    chunk, rings of g - 1 steps in each node (twice) and of 2 (nodes - 1) steps on each rail (rails)."""
    if name == "nccl_ring":
        return params["channels"] * (2 if op == "allreduce" else 1) * (ranks - 1) * ranks
    if name == "nccl_tree":
        return params["pipeline"] * params["channels"] * 2 * ranks
    g = params["group"]
    nodes = ranks // g
    return params["pipeline"] * ranks * 2 * (g - 1 + nodes - 1)


def nccl_graph_view(topology: Topology, system: System, built: Topology | None = None) -> Topology:
    """A copy whose GPU <-> NVSwitch links carry at most what NCCL's topology search gives a GPU's rings and trees.

    NCCL's graph search (src/graph/search.cc) sizes its ring and tree channels by the NVLink lanes times its own
    per-lane figure (topo.h SM80/SM90/SM100_NVLINK_BW: 20.0, 20.6, 40.1 GB/s, nccl_model.NVLINK_BW), not the
    datasheet's 25 / 25 / 50 GB/s: 240, 370.8 and 721.8 GB/s per GPU on A100, H100 and B200 against 300, 450
    and 900. Rings and trees run at that figure; NVLS keeps the links at nvlsEfficiency (run_nvls), which is
    NCCL's separate statement of what NVLS reaches. PCIe machines are left as built. A calibrated machine's
    efficiencies apply on top (they scale the rings' figure): `built` is the machine as built (default `topology`).
    """
    if system.link != "nvlink":
        return topology
    kinds = topology.node_kinds
    src, dst = topology.link_src, topology.link_dst
    mask = np.array([{kinds[u], kinds[v]} == {"gpu", "switch"} for u, v in zip(src.tolist(), dst.tolist())])
    # scaled from the machine as built, so a calibration's efficiencies stay relative to the rings' figure
    published = (topology if built is None else built).bandwidth
    clone = topology._copy()
    clone.bandwidth = clone.bandwidth * np.where(mask, np.minimum(1.0, system.intra_bw_GBps * 1e9 / published), 1.0)
    return clone


def run_nvls(topology: Topology, system: System, size: int, ranks: int, dtype: str = "float32",
             intra_extra_s: float = 0.0, step_s: float = 0.0, op: str = "allreduce") -> Prediction:
    """Time NVLS (allreduce, allgather or reduce-scatter) on one node: the NVSwitch reduces and multicasts (simulator/nccl/nvls.py).

    The switch's links run at NCCL's nvlsEfficiency of their bandwidth; NCCL's NVLS latency (tuning.cc:
    hwLat[NVLINK][NVLS][Simple], no base), plus a calibrated intra-node step latency, is added once; the
    shards are pipelined in NCCL_BUFFSIZE pieces. NCCL runs nvlsChannels channels and cuts each channel's
    share into chunks that shrink with the size (simulator/nccl/channels.py); `step_s` is charged for each
    step a channel takes beyond those of the largest chunk, whose cost tuning.cc's nvlsEfficiency includes.
    Allgather and reduce-scatter take the allreduce's chunks, latency and step cost (NVLS_STEP_FIT was fitted
    on allreduce logs only, so for them it is an assumption, not a fit).
    """
    coll = Collective(op, ranks, size, dtype)
    chunks = int(np.clip(size // PIPELINE_CHUNK, 1, MAX_PIPELINE))
    schedule = nvls_schedule(coll, chunks=chunks, window=1)
    # `topology` is the preset as built, never its calibrated form: that has its per-step extras in the latencies (NCCL
    # charges NVLS one latency per call, tuning.cc: intraLat once, so a calibrated intra-node step latency is added
    # once below), and its protocol efficiencies in the bandwidths (ring / tree efficiencies; NVLS's is nvlsEfficiency)
    machine = switch_view(topology, ranks, NVLS_EFFICIENCY[system.arch])
    trace = simulate(timing_view(schedule), machine, EngineOptions(ports=0))
    base_s = latency_us("nvlink", "nvls", "Simple", system.nccl_version) * 1e-6 + intra_extra_s
    base_s += step_s * nvls_extra_steps(system, size)
    channels = collective_channels(system, "nvls", "Simple", size)[0]
    return Prediction(size, coll.count, "nvls", "Simple", "nvls", channels, base_s + trace.time,
                      trace.time, base_s)


def run_nvls_tree(topology: Topology, system: System, per_node: int, size: int, ranks: int, dtype: str = "float32",
                  net_extra_s: float = 0.0, intra_extra_s: float = 0.0) -> Prediction:
    """Time NVLS-tree allreduce across nodes (simulator/nccl/nvls_tree.py): every node's switch a helper device.

    As run_nvls: the switches' links at NCCL's nvlsEfficiency, the preset's own links otherwise, NCCL's
    NVLS_TREE latency (tuning.cc: 25 us + 2 log2(nodes) x (20.9 us + the network plugin's latency, twice for
    Simple)) added once, with the extras per network hop (2 log2(nodes) of them) and per call inside the node;
    that latency is each hop's whole cost, so the engine's links carry bytes only (no wire latency: it would
    count every hop twice: +8% at 2 nodes, +15..18% at 16 against NCCL's model);
    the time is at least the bytes at NCCL's NVLS_TREE bandwidth (its per-channel cap). Each half-shard goes in as many pieces as
    NCCL's loop takes steps: nBytes / (nvlsChannels x nHeads x chunk), the chunk as calcCollChunking sets
    it for NVLS_TREE (simulator/nccl/channels.py); a piece is one step of all the channels of a tree at
    once. At most 64 pieces, and fewer where nodes x GPUs x 2 x pieces would pass NVLS_TREE_MAX_PIECES; the engine's
    time with those pieces is carried to NCCL's steps by the pipeline law (nvls_tree.pipelined).
    """
    nodes = ranks // per_node
    check_budget(nodes * nvls_tree_pieces(system, per_node, size, ranks) * (3 * per_node + 2),
                 f"an NVLS-tree allreduce on {nodes} nodes", MAX_NVLS_TREE_TRANSFERS)
    seconds, finish = nvls_tree_engine(system, per_node, size, ranks, dtype, net_extra_s, intra_extra_s, topology, nodes)
    return finish(seconds)


def nvls_tree_steps(system: System, per_node: int, size: int) -> int:
    """The steps NCCL's NVLS-tree loop takes per channel at this size (at least 1): nBytes / (nvlsChannels x nHeads x
    chunk), the chunk as calcCollChunking sets it (simulator/nccl/channels.py)."""
    channels = collective_channels(system, "nvls_tree", "Simple", size)[0]
    return max(1, size // (channels * per_node * nvls_tree_chunk_size(system, size, per_node)))


def nvls_tree_pieces(system: System, per_node: int, size: int, ranks: int) -> int:
    """Pieces of run_nvls_tree's schedule per node: chunks x shards (one per GPU) x 2 trees, the chunks set for `ranks`
    (NCCL's steps, at most MAX_CHUNKS and the engine's budget of pieces per size over that many ranks)."""
    budget = max(1, NVLS_TREE_MAX_PIECES // (2 * ranks))
    return min(nvls_tree_steps(system, per_node, size), NVLS_TREE_MAX_CHUNKS, budget) * per_node * 2


def nvls_tree_engine(system: System, per_node: int, size: int, ranks: int, dtype: str, net_extra_s: float,
                     intra_extra_s: float, topology: Topology, nodes: int,
                     chunk_ranks: int | None = None) -> tuple[float, Callable[[float], Prediction]]:
    """run_nvls_tree's engine time on `nodes` nodes of `topology`, and how an engine time becomes the Prediction of the
    machine of `ranks` ranks; its chunks are those the engine's budget allows over `chunk_ranks` ranks (default
    `ranks`: the full run; a reduced instance takes its largest instance's, so that NCCL's pipelining is not cut
    to the few chunks a full run of thousands of ranks could afford), its time carried to NCCL's steps
    (nvls_tree_steps) by the pipeline law T(k) = A + B / k (nvls_tree.pipelined; A: the busiest link, lower_bound)."""
    coll = Collective("allreduce", ranks, size, dtype)
    channels = collective_channels(system, "nvls_tree", "Simple", size)[0]
    chunks = nvls_tree_pieces(system, per_node, size, chunk_ranks or ranks) // (2 * per_node)
    p = nodes * per_node
    schedule = timing_view(nvls_tree_allreduce(Collective("allreduce", p, size, dtype), per_node, chunks=chunks))
    # no wire latency on the links: NCCL's latency below charges each hop in full (hwLat is the whole hop, wire included)
    machine = with_step_latency(switch_view(topology, p, NVLS_EFFICIENCY[system.arch], group=per_node), 0.0, 0.0)
    options = EngineOptions(ports=0)
    engine_s = pipelined(simulate(schedule, machine, options).time, lower_bound(schedule, machine, options), chunks,
                         nvls_tree_steps(system, per_node, size))
    hops = 2 * (system.nodes.bit_length() - 1)
    latency_us, algbw_GBps = tune(system, "allreduce")[("nvls_tree", "Simple")]
    base_s = latency_us * 1e-6 + hops * net_extra_s + intra_extra_s

    def finish(seconds: float) -> Prediction:
        # NCCL's kernels move at most perChMaxNVLSTreeBw per channel (tuning.cc; in tune's bandwidth with the NVLS
        # graph's intra- and inter-node figures): the links alone would let the schedule go faster, so the call takes
        # the longer
        engine_s = max(seconds, size / (algbw_GBps * 1e9))
        return Prediction(size, coll.count, "nvls_tree", "Simple", "nvls_tree", channels, base_s + engine_s,
                          engine_s, base_s)
    return engine_s, finish
