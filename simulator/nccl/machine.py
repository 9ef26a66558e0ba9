"""NCCL's machine: one resolved, immutable description of a preset machine as NCCL runs on it.

`NcclMachine` holds what was built (simulator/topology/presets.py PresetBuild: the preset, its nodes, network and
routing, the SHM rate of a host-staged preset, the calibration), the preset's Machine record (GPU generation, link,
NICs, NCCL profile), the NCCL release whose tables apply (parsed once) and the ranks on each node. Everything NCCL's
model and the engine need is derived from it, never attached to a Topology after the fact:

- `system(ranks)`: NCCL's System (simulator/nccl/tuning.py) for a call over `ranks` ranks, and the ranks per node
  the rings cross nodes by;
- `topology`: the engine's machine as built, ranks placed, without the calibration; `engine(proto)`: the machine a
  protocol runs on (the calibration's efficiencies for that protocol applied, simulator/nccl/calibration.py).

It is resolved once, from a preset SPEC (`parse_machine`) or from a Topology a preset built (`resolve`: its
`origin`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..errors import CollsimError
from ..topology.model import Topology
from ..topology.presets import MACHINE_PRESETS, NETWORKS, Machine, Preset, PresetBuild
from ..topology.spec import parse_topology
from .calibration import Calibration, for_protocol
from .placement import check_ranks_per_node, nics_used, place_per_node
from .tuning import System, parse_nccl_version


@dataclass(frozen=True)
class NcclMachine:
    """A preset machine as NCCL runs on it (see the module docstring); make one with `resolve` or `parse_machine`."""

    build: PresetBuild
    topology: Topology = field(compare=False, repr=False)  # as built, ranks placed, without the calibration
    nccl_version: tuple[int, ...] | None = None  # the release whose latency tables apply (None: master)
    ranks_per_node: int | None = None  # K ranks on GPUs 0..K-1 of every node (None: every GPU)

    @property
    def preset(self) -> Preset:
        """The preset."""
        return self.build.preset

    @property
    def spec(self) -> Machine:
        """What NCCL's tuning model knows of the preset: GPU generation, link, NICs, its NCCL profile."""
        return self.build.preset.machine

    @property
    def nodes(self) -> int:
        """The nodes built."""
        return self.build.nodes

    @property
    def net(self) -> str:
        """The network between nodes (simulator/topology/presets.py NETWORKS)."""
        return self.build.net

    @property
    def routing(self) -> str:
        """How the leaf-spine between nodes spreads traffic over its spines (simulator/topology/fabric.py ROUTINGS)."""
        return self.build.routing

    @property
    def calibration(self) -> Calibration | None:
        """The calibration the machine's links carry (None: the published links)."""
        return self.build.calibration

    def system(self, ranks: int, ranks_per_node: int | None = None) -> tuple[System, int]:
        """NCCL's System for a call over `ranks` ranks, and the ranks per node the rings cross nodes by.

        `ranks_per_node` K (default the machine's): K ranks on each node, NCCL sees K GPUs and their NICs per node.
        """
        preset, m, nodes = self.preset, self.spec, self.nodes
        k = self.ranks_per_node if ranks_per_node is None else ranks_per_node
        per_node, nics = preset.gpus_per_node, m.nics_per_node
        if k is not None:
            check_ranks_per_node(k, per_node, ranks, nodes, preset.name)
            per_node, nics = k, nics and nics_used(nics, per_node, k)
        if nics is None or ranks <= per_node:  # one NVLink domain (MNNVL trays) or one node: NCCL sees one node
            per_node, nodes = ranks, 1
        elif ranks % per_node:
            raise CollsimError(f"ranks: {ranks} ranks on {nodes} nodes of {per_node} GPUs; expected a multiple of "
                               f"{per_node}")
        else:
            nodes = ranks // per_node
        system = System(m.arch, per_node, nodes, m.link, nic_bw_GBps=NETWORKS[self.net][0] / 1e9, nics_per_node=nics,
                        protocols=m.protocols, nvls=m.nvls, net_latency_us=m.net_latency_us if self.net == m.net else 0.0,
                        nccl_version=self.nccl_version, buffsize=m.buffsize)
        return system, per_node

    def placed(self, k: int) -> NcclMachine:
        """The machine with K ranks on each node (rank r on GPU r % K of node r // K, simulator/nccl/placement.py)."""
        return replace(self, topology=place_per_node(self.topology, k, self.preset.gpus_per_node), ranks_per_node=k)

    def engine(self, proto: str) -> Topology:
        """The machine protocol `proto` runs on: its calibration's efficiencies for it applied, else as built."""
        return for_protocol(self.topology, proto, self.calibration)


def knows(topology: Topology) -> bool:
    """Whether NCCL's model knows the machine: a preset with a Machine record (not a builder, not mi300x or a TPU)."""
    return topology.origin is not None and topology.origin.preset.machine is not None


def resolve(topology: Topology, nccl_version: str | tuple[int, ...] | None = None) -> NcclMachine:
    """NCCL's machine of a topology a preset built (its `origin`), in release `nccl_version` ('2.20.3'; default the
    release a calibration was fitted with, else master). A calibrated topology's machine is rebuilt as built, with the
    topology's placement and ECMP, so that each protocol runs at its own efficiencies (NcclMachine.engine)."""
    if not knows(topology):
        raise CollsimError(f"preset: {topology.name} is not a preset machine NCCL's model knows; expected one of "
                           f"{', '.join(MACHINE_PRESETS)}")
    build = topology.origin
    if nccl_version is None and build.calibration is not None:  # the release the calibration was fitted with
        nccl_version = build.calibration.nccl_version
    return NcclMachine(build, _as_built(topology), _release(nccl_version))


def in_release(machine: NcclMachine | Topology, nccl_version: str | tuple[int, ...] | None = None) -> NcclMachine:
    """NCCL's machine (resolved once from a topology a preset built), in release `nccl_version` where one is given."""
    if not isinstance(machine, NcclMachine):
        return resolve(machine, nccl_version)
    return machine if nccl_version is None else replace(machine, nccl_version=_release(nccl_version))


def _release(nccl_version: str | tuple[int, ...] | None) -> tuple[int, ...] | None:
    return nccl_version if isinstance(nccl_version, tuple) else parse_nccl_version(nccl_version)


def _as_built(topology: Topology) -> Topology:
    """The topology without its calibration: itself where it has none."""
    if topology.origin.calibration is None:
        return topology
    built = replace(topology.origin, calibration=None).build()
    if topology.placement != built.placement:
        built = built.with_placement(topology.placement)
    return built.with_ecmp(True) if topology.ecmp else built


def parse_machine(spec: str, nccl_version: str | tuple[int, ...] | None = None) -> NcclMachine:
    """NCCL's machine of a preset SPEC (NAME[:nodes=N,net=NET,routing=R] or a calibration file), resolved once."""
    return resolve(parse_topology(spec), nccl_version)
