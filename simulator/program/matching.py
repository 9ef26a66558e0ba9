"""The static checker: do every group's collectives line up across ranks, and can program order finish?

Semantics (those of NCCL and gloo): the k-th call a rank makes on a group meets the k-th call of
every other member; it starts only when every member has reached its own k-th call in program
order on its stream. A send meets the receiver's matching recv (per pair, in order) and both block
until both are posted (NCCL's rendezvous; gloo may let a small send through, so a program that
passes here is safe on both). The checker runs program order without time: streams advance while
their next operation can, a meeting completes once all its parties have arrived. When nothing can
advance and some rank is unfinished, it names each wait-for cycle, or the call a rank never makes.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from dataclasses import dataclass

from ..collective import REDUCING
from ..units import format_size
from .graph import labels, meetings, program_dependencies
from .model import Op, Program, paused_gc


@dataclass(frozen=True)
class Problem:
    """One finding: kind is 'mismatch', 'deadlock' or 'missing'."""

    kind: str
    message: str

    def to_dict(self) -> dict:
        """JSON form."""
        return {"kind": self.kind, "message": self.message}


def _shape(op: Op) -> dict:
    shape = {"op": op.op, "size": format_size(op.nbytes or 0), "dtype": op.dtype}
    if op.root is not None:
        shape["root"] = op.root
    if op.is_collective and op.op in REDUCING:
        shape["redop"] = op.redop
    if op.name:
        shape["name"] = op.name
    return shape


def _describe(shape: dict) -> str:
    text = f"{shape['op']} {shape['size']} {shape['dtype']}"
    text += f" root={shape['root']}" if "root" in shape else ""
    text += f" redop={shape['redop']}" if "redop" in shape and shape["redop"] != "sum" else ""
    return text + (f' "{shape["name"]}"' if "name" in shape else "")


def _differs(a: dict, b: dict) -> list[str]:
    fields = [k for k in ("op", "size", "dtype") if a.get(k) != b.get(k)]
    fields += [k for k in ("root", "redop") if k in a and k in b and a[k] != b[k]]  # only where both ops have one
    if not fields and "name" in a and "name" in b and a["name"] != b["name"]:
        fields.append("name")  # same shape, different tensors: runs, and silently mixes data up
    return fields


class _Done:
    """Which operations finished, over flat node numbers: `(rank, index) in done`, and len(done) = how many."""

    def __init__(self, flags: list[bool], base: dict[int, int]):
        self.flags, self.base, self.count = flags, base, sum(flags)

    def __contains__(self, node: tuple[int, int]) -> bool:
        b = self.base.get(node[0])
        return b is not None and self.flags[b + node[1]]

    def __len__(self) -> int:
        return self.count


class _Checker:
    def __init__(self, program: Program):
        self.p = program
        self.ops = dict(program.ranks)
        self._labels: dict[int, list[str]] = {}
        self.deps = {r: program_dependencies(program, r) for r in self.ops}
        self.meetings = meetings(program)  # meeting key -> {rank: op index}
        self.base: dict[int, int] = {}  # operations are numbered rank by rank: node = base[rank] + index
        total = 0
        for r, ops in self.ops.items():
            self.base[r] = total
            total += len(ops)
        self.total = total
        self.keys: list[tuple | None] = [None] * total  # node -> its meeting key
        for key, calls in self.meetings.items():
            for r, i in calls.items():
                self.keys[self.base[r] + i] = key

    @property
    def labels(self) -> _Labels:
        """labels(ops) per rank, computed for the ranks a message names."""
        return _Labels(self)

    def key_of(self, node: tuple[int, int]) -> tuple | None:
        return self.keys[self.base[node[0]] + node[1]]

    def parties(self, key: tuple) -> tuple[int, ...]:
        return self.p.groups[key[1]] if key[0] == "group" else (key[1], key[2])

    def mismatches(self) -> list[Problem]:
        out = []
        for key, calls in self.meetings.items():
            parties = self.parties(key)
            present = [r for r in parties if r in calls]
            if len(present) < 2:
                continue
            ref = present[0]
            ref_op = self.ops[ref][calls[ref]]
            ref_shape = None
            for r in present[1:]:
                op = self.ops[r][calls[r]]
                if op is ref_op:  # equal operations are one object (loader.py)
                    continue
                ref_shape = ref_shape or _shape(ref_op)
                if key[0] == "p2p":  # a send and a recv: compare what travels
                    a, b = dict(ref_shape, op="p2p"), dict(_shape(op), op="p2p")
                    a.pop("name", None)
                    b.pop("name", None)
                else:
                    a, b = ref_shape, _shape(op)
                fields = _differs(a, b)
                if fields:
                    where = f"group {key[1]} call #{key[2]}" if key[0] == "group" else f"rank {key[1]} -> rank {key[2]} message #{key[3]}"
                    verb = "differs" if len(fields) == 1 else "differ"
                    out.append(Problem("mismatch", f"{where}: rank {ref} calls {_describe(ref_shape)} but rank {r} calls "
                                                   f"{_describe(_shape(op))} ({', '.join(fields)} {verb})"))
        return out

    def _dependents(self) -> list[list[int]]:
        """node -> the nodes that wait for it."""
        out: list[list[int]] = [[] for _ in range(self.total)]
        for r, deps in self.deps.items():
            b = self.base[r]
            for i, d in enumerate(deps):
                for j in d:
                    out[b + j].append(b + i)
        return out

    def run(self) -> tuple[_Done, set[tuple[int, int]]]:
        """Advance program order; return which operations completed and which arrived at a meeting that never completed."""
        base, keys, total = self.base, self.keys, self.total
        pending = [0] * total
        for r, deps in self.deps.items():
            b = base[r]
            pending[b:b + len(deps)] = map(len, deps)
        dependents = self._dependents()
        done = [False] * total
        arrived: dict[tuple, list[int]] = {}
        ready = deque(node for node in range(total) if pending[node] == 0)
        while ready:
            node = ready.popleft()
            key = keys[node]
            finished = (node,)
            if key is not None:
                here = arrived.setdefault(key, [])
                here.append(node)
                parties = self.parties(key)
                if len(here) < len(parties):  # arrivals are distinct members
                    continue
                calls = self.meetings[key]
                finished = tuple(base[p] + calls[p] for p in parties)
            for n in finished:
                done[n] = True
                for nxt in dependents[n]:
                    pending[nxt] -= 1
                    if pending[nxt] == 0:
                        ready.append(nxt)
        flags = _Done(done, base)
        rank_of = sorted((b, r) for r, b in base.items())
        stuck = {_node(rank_of, n) for nodes in arrived.values() for n in nodes if not done[n]}
        return flags, stuck

    def blocker(self, rank: int, index: int, done: dict, stuck: set) -> tuple[int, int]:
        """The arrived-but-waiting communication that keeps `rank` from reaching operation `index`."""
        while (rank, index) not in stuck:
            index = next(j for j in self.deps[rank][index] if (rank, j) not in done)
        return rank, index

    def deadlocks(self, done: dict, stuck: set) -> list[Problem]:
        edges: dict[tuple[int, int], list[tuple[int, int]]] = {}
        missing: dict[tuple, list[int]] = {}
        for node in sorted(stuck):
            key = self.key_of(node)
            calls = self.meetings[key]
            for p in self.parties(key):
                if p == node[0] or (p in calls and (p, calls[p]) in stuck):
                    continue  # this rank, or a party already waiting here too
                if p not in calls:
                    absent = missing.setdefault(key, [])
                    if p not in absent:
                        absent.append(p)
                    continue
                edges.setdefault(node, []).append(self.blocker(p, calls[p], done, stuck))
        out = [Problem("deadlock", self._cycle_text(c)) for c in _cycles(edges)]
        for key, absent in missing.items():
            calls = self.meetings[key]
            waiting = sorted(r for r in calls if (r, calls[r]) in stuck)
            if not waiting:
                continue
            first = waiting[0]
            what = self.labels[first][calls[first]]
            who = f"rank {waiting[0]} waits" if len(waiting) == 1 else f"ranks {', '.join(map(str, waiting))} wait"
            for p in absent:
                out.append(Problem("missing", f"{who} in {what} for rank {p}, which never makes that call "
                                              f"(it makes {self._count(p, key)})"))
        return out

    def _count(self, rank: int, key: tuple) -> str:
        n = sum(1 for k, calls in self.meetings.items() if k[:-1] == key[:-1] and rank in calls)
        if key[0] == "group":
            return f"{n} call{'s' if n != 1 else ''} on group {key[1]}"
        verb = "send" if rank == key[1] else "recv"
        peer = key[2] if rank == key[1] else key[1]
        return f"{n} {verb}{'s' if n != 1 else ''} {'to' if verb == 'send' else 'from'} rank {peer}"

    def _cycle_text(self, cycle: list[tuple[int, int]]) -> str:
        parts = []
        for pos, (r, i) in enumerate(cycle):
            nxt = cycle[(pos + 1) % len(cycle)][0]
            lead = f"rank {r} waits" if pos == 0 else "which waits"
            parts.append(f"{lead} in {self.labels[r][i]} for rank {nxt}")
        return ", ".join(parts)


class _Labels:
    """checker.labels[rank][index]: graph.labels of a rank, computed when a message first names it."""

    def __init__(self, checker: _Checker):
        self.checker = checker

    def __getitem__(self, rank: int) -> list[str]:
        held = self.checker._labels
        if rank not in held:
            held[rank] = labels(self.checker.ops[rank])
        return held[rank]


def _node(rank_of: list[tuple[int, int]], n: int) -> tuple[int, int]:
    """(rank, index) of flat node n, from (base, rank) sorted by base."""
    b, r = rank_of[bisect_right(rank_of, (n, float("inf"))) - 1]
    return r, n - b


def _cycles(edges: dict[tuple[int, int], list[tuple[int, int]]]) -> list[list[tuple[int, int]]]:
    """One shortest cycle through the smallest node of each strongly connected part of the wait-for graph."""
    import networkx as nx

    graph = nx.DiGraph()
    for a, bs in edges.items():
        graph.add_edges_from((a, b) for b in bs)
    out = []
    for comp in sorted((sorted(c) for c in nx.strongly_connected_components(graph)), key=lambda c: c[0]):
        if len(comp) < 2:
            continue
        start = comp[0]
        sub = graph.subgraph(comp)
        best = None
        for succ in sorted(sub.successors(start)):
            path = nx.shortest_path(sub, succ, start)
            if best is None or len(path) < len(best):
                best = path
        out.append([start] + best[:-1])
    return out


def check_program(program: Program) -> list[Problem]:
    """Every mismatch between ranks' calls, then every deadlock or call never made; empty when the program is sound."""
    with paused_gc():
        checker = _Checker(program)
        problems = checker.mismatches()
        done, stuck = checker.run()
    total = checker.total
    if len(done) < total:
        found = checker.deadlocks(done, stuck)
        problems.extend(found or [Problem("deadlock", f"{total - len(done)} operations can never run")])
    return problems
