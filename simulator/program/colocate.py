"""Several programs (jobs) on one machine: each placed on its own devices, run together as ONE program so that their
collectives share the machine's links, and each run alone on the same placement (`collsim colocate`).

The merged program is the jobs' programs side by side: job j's rank r is merged rank offset_j + r, its groups are
renamed `JOB/NAME`, and ranks named in its operations (roots, peers) move by its offset. The machine's placement maps
merged rank k to the k-th device of the jobs' devices in order (the rest after them), so a job's ranks sit on its
devices in order, both together and alone."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..engine import EngineOptions
from ..errors import CollsimError
from ..topology.model import Topology
from .model import Op, Program
from .run import ProgramResult, run_program

RESOLUTION = 1e-9  # relative: the engine's clock rounds each duration to a tick (engine/clock.py), chosen per run


@dataclass(frozen=True)
class Job:
    """One program and the devices its ranks run on (rank r on devices[r])."""

    name: str
    program: Program
    devices: tuple[int, ...]


def placed(topology: Topology, devices: Sequence[int]) -> Topology:
    """The machine with rank k on device devices[k] (devices as the machine numbers them), the others after."""
    taken = set(devices)
    order = list(devices) + [d for d in range(topology.num_devices) if d not in taken]
    return topology.with_placement([topology.placement[d] for d in order])


def _moved(op: Op, name: str, offset: int) -> Op:
    """An operation of a job in the merged program: its group renamed, its global ranks moved by the job's offset."""
    changes: dict = {}
    if op.group is not None:
        changes["group"] = f"{name}/{op.group}"
    if op.root is not None:
        changes["root"] = op.root + offset
    if op.peer is not None:
        changes["peer"] = op.peer + offset
    return replace(op, **changes) if changes else op


def merge(jobs: Sequence[Job]) -> tuple[Program, list[int]]:
    """One program of every job's ranks side by side, and each job's first merged rank."""
    offsets, groups, ranks, offset = [], {}, {}, 0
    for job in jobs:
        p = job.program
        offsets.append(offset)
        groups.update({f"{job.name}/{g}": tuple(m + offset for m in members) for g, members in p.groups.items()})
        lists: dict[int, list[Op]] = {}  # ranks of one key share their list: moved once
        for r, ops in p.ranks.items():
            if id(ops) not in lists:
                lists[id(ops)] = [_moved(op, job.name, offset) for op in ops]
            ranks[r + offset] = lists[id(ops)]
        offset += p.world
    return Program(world=offset, groups=groups, ranks=ranks, source="+".join(j.name for j in jobs)), offsets


@dataclass
class Colocated:
    """The jobs run together and each alone: per-job step times and the bytes each job put on each link."""

    jobs: list[Job]
    together: ProgramResult
    alone: list[ProgramResult]
    offsets: list[int]

    def steps_together(self) -> list[float]:
        """Each job's step in the shared run: the end of the last operation of its ranks."""
        ends = [0.0] * len(self.jobs)
        for o in self.together.ops:
            if not np.isnan(o.end):
                j = self.job_of_rank(o.rank)
                ends[j] = max(ends[j], o.end)
        return ends

    def slowdowns(self) -> list[float]:
        """Each job's step together / alone - 1; 0 within the clock's resolution (the runs' ticks may differ)."""
        out = []
        for alone, together in zip((r.step_time for r in self.alone), self.steps_together()):
            ratio = together / alone - 1 if alone > 0 else 0.0
            out.append(0.0 if abs(ratio) <= RESOLUTION else ratio)
        return out

    def job_of_rank(self, rank: int) -> int:
        """The job a merged rank belongs to."""
        return int(np.searchsorted(self.offsets, rank, side="right")) - 1

    def link_bytes(self) -> tuple[np.ndarray, np.ndarray]:
        """(link ids, bytes[link, job]) over the machine's links in the shared run (compute lanes left out); a
        transfer counts for the job of its sending rank (jobs' devices are distinct, so every message is one job's)."""
        low = self.together.lowered
        src = low.schedule.arrays["src"]
        world = low.program.world
        label = np.where(src < world, np.searchsorted(self.offsets, np.minimum(src, world - 1), side="right") - 1, -1)
        links, table = self.together.trace.link_bytes_by(label, len(self.jobs))
        keep = links < low.topology.base_links
        return links[keep], table[keep]

    def shared_links(self, top: int = 8) -> list[dict]:
        """Links that carried bytes of two or more jobs, the busiest first (seconds of their bytes at the bandwidth)."""
        links, table = self.link_bytes()
        topo = self.together.lowered.topology
        shared = np.flatnonzero((table > 0).sum(axis=1) >= 2)
        rows = [{"link": topo.link_name(int(links[i])), "bandwidth_Bps": float(topo.bandwidth[int(links[i])]),
                 "bytes": [float(b) for b in table[i]],
                 "busy_s": float(table[i].sum() / topo.bandwidth[int(links[i])])} for i in shared]
        rows.sort(key=lambda r: (-r["busy_s"], r["link"]))
        return rows[:top]


def colocate(jobs: Sequence[Job], topology: Topology, options: EngineOptions | None = None,
             algorithms: dict[str, str] | None = None, gpus_per_node: int | None = None) -> Colocated:
    """Run the jobs together on `topology` (exact mode: calls of every job share links) and each alone on its devices."""
    alone = []
    for job in jobs:  # first, so that a job's mismatched calls or deadlock are named in its own ranks and groups
        try:
            alone.append(run_program(job.program, placed(topology, job.devices), options, algorithms, gpus_per_node,
                                     mode="exact"))
        except CollsimError as exc:
            raise CollsimError(f"job {job.name}: {exc}") from None
    program, offsets = merge(jobs)
    devices = [d for job in jobs for d in job.devices]
    together = run_program(program, placed(topology, devices), options, algorithms, gpus_per_node, mode="exact")
    return Colocated(list(jobs), together, alone, offsets)
