"""Each rank's static dependencies (stream order, `after`, events, group order) and the labels that name operations."""

from __future__ import annotations

from .model import RECORD, SEND, WAIT, Op, Program


def dependencies(ops: list[Op]) -> list[list[int]]:
    """For each operation, the earlier-or-later operations of the same rank it must wait for.

    The previous operation on its stream, each `after` name, the record of a waited event, and the
    previous collective on the same group (a communicator runs its calls in issue order). Names and
    events are assumed resolved (the loader checks them).
    """
    names = {op.name: i for i, op in enumerate(ops) if op.name}
    records = {op.event: i for i, op in enumerate(ops) if op.op == RECORD}
    last_on_stream: dict[str, int] = {}
    last_on_group: dict[str, int] = {}
    deps: list[list[int]] = []
    for i, op in enumerate(ops):
        prev = last_on_stream.get(op.stream)
        mine = [] if prev is None else [prev]
        last_on_stream[op.stream] = i
        if op.after:
            mine.extend(names[n] for n in op.after)
        if op.event is not None and op.op == WAIT:
            mine.append(records[op.event])
        if op.group is not None:  # a collective
            prev = last_on_group.get(op.group)
            if prev is not None:
                mine.append(prev)
            last_on_group[op.group] = i
        deps.append(list(dict.fromkeys(mine)) if len(mine) > 1 else mine)
    return deps


def find_cycle(deps: list[list[int]]) -> list[int] | None:
    """A dependency cycle as operation indices (each waits for the next), or None when the graph is acyclic."""
    state = [0] * len(deps)  # 0 new, 1 on the DFS path, 2 done
    for start in range(len(deps)):
        if state[start]:
            continue
        path, stack = [start], [iter(deps[start])]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state[nxt] == 1:
                return path[path.index(nxt):]
            elif state[nxt] == 0:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(deps[nxt]))
    return None


def labels(ops: list[Op]) -> list[str]:
    """How messages name each operation: 'allreduce#2 (group dp)', 'send#1 to rank 3', 'compute "fwd3"', 'wait "e1"'.

    The number counts the rank's calls on that group (or sends to / receives from that peer) from 1,
    so matching calls carry the same label on every rank.
    """
    counts: dict[tuple, int] = {}
    out = []
    for i, op in enumerate(ops):
        tag = f' "{op.name}"' if op.name else ""
        if op.is_collective:
            key: tuple = ("group", op.group)
            counts[key] = counts.get(key, 0) + 1
            out.append(f"{op.op}#{counts[key]} (group {op.group}{',' + tag if tag else ''})")
        elif op.is_p2p:
            key = (op.op, op.peer)
            counts[key] = counts.get(key, 0) + 1
            out.append(f"{op.op}#{counts[key]} {'to' if op.op == 'send' else 'from'} rank {op.peer}{tag}")
        elif op.op in (RECORD, WAIT):
            out.append(f'{op.op} "{op.event}"')
        else:
            out.append(f"{op.op}{tag or f' op[{i}]'}")
    return out


def meetings(program: Program) -> dict[tuple, dict[int, int]]:
    """Which calls meet: ('group', name, k) -> {rank: op index} for the k-th call of each member on a group,
    ('p2p', src, dst, k) -> {src: send index, dst: recv index} for the k-th message of an ordered pair."""
    out: dict[tuple, dict[int, int]] = {}
    for rank, ops in program.ranks.items():
        count: dict[tuple, int] = {}
        for i, op in enumerate(ops):
            if op.is_collective:
                base: tuple = ("group", op.group)
            elif op.is_p2p:
                base = ("p2p", rank, op.peer) if op.op == SEND else ("p2p", op.peer, rank)
            else:
                continue
            count[base] = count.get(base, 0) + 1
            out.setdefault(base + (count[base],), {})[rank] = i
    return out


def program_dependencies(program: Program, rank: int) -> list[list[int]]:
    """dependencies of rank `rank`'s operations in `program`, computed once per distinct list (ranks of one key share
    it; the cache is the program's)."""
    ops = program.ops(rank)
    held = program._deps.get(id(ops))
    if held is None or held[0] is not ops or len(held[1]) != len(ops):
        held = program._deps[id(ops)] = (ops, dependencies(ops))
    return held[1]
