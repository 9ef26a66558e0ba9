"""Symmetric programs in isolated mode: when every rank runs the same operations on groups of the same shape, one
rank stands for all.

In isolated mode each call takes the time of its shape (op, size, algorithm, members' positions: isolated.py), so
ranks whose operation lists are equal up to which same-shaped group they call start and end every operation at the
same instants, provided every member of a group calls it at the same positions of its list (checked): then gating
never waits and nothing can deadlock. DDP, FSDP and TP x DP steps are such programs (pipelines and expert routing,
with their point-to-point messages, are not). Running rank 0 alone gives the step of every rank.
"""

from __future__ import annotations

from dataclasses import replace

from .model import Program


def shape(program: Program, group: str, gpus_per_node: int) -> tuple:
    """What the isolated time of a call depends on besides the call itself: the members' layout on the machine."""
    members = program.groups[group]
    return (members[0] % gpus_per_node, tuple(m - members[0] for m in members))


def representative(program: Program, gpus_per_node: int) -> Program | None:
    """Rank 0's program alone (its groups reduced to rank 0), or None when some rank runs something else."""
    ops0 = program.ops(0)
    if program.world < 2 or any(op.is_p2p for op in ops0):
        return None
    shapes = {g: shape(program, g, gpus_per_node) for g in program.groups}
    for r in range(1, program.world):
        ops = program.ops(r)
        if ops is ops0 or ops == ops0:
            continue
        if len(ops) != len(ops0):
            return None
        for a, b in zip(ops0, ops):
            if a == b:
                continue
            if not (a.is_collective and b.is_collective and shapes[a.group] == shapes[b.group]):
                return None
            root = (program.groups[b.group].index(b.root) if b.root is not None else None)
            if replace(b, group=a.group, root=None) != replace(a, root=None) or \
                    root != (program.groups[a.group].index(a.root) if a.root is not None else None):
                return None
    if not _aligned(program):
        return None
    used = {op.group for op in ops0 if op.is_collective}
    meta = dict(program.meta, represents=program.world)
    return Program(world=1, groups={g: (0,) for g in used}, ranks={0: ops0}, source=program.source, gpu=program.gpu,
                   mfu=program.mfu, meta=meta)


def _aligned(program: Program) -> bool:
    """Every member of every group calls it at the same positions of its operation list."""
    where: dict[str, list[int]] = {}
    for r in range(program.world):
        mine: dict[str, list[int]] = {}
        for i, op in enumerate(program.ops(r)):
            if op.is_collective:
                mine.setdefault(op.group, []).append(i)
        for g, positions in mine.items():
            if r not in program.groups[g] or where.setdefault(g, positions) != positions:
                return False
    return all(g in where for g in program.groups if any(program.ops(m) for m in program.groups[g]))
