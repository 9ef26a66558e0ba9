"""Rank traces -> a program (docs/programs.md): each rank's step as compute on `main` and its calls on `comm`.

Per rank, from its own clock only (kineto.py):

- a call is issued at its c10d operator's start: `main` records `i<k>` there, and `comm` waits for it, then calls;
- the step thread waited for call k when its busy time (cpu_op events) has a gap around the call's end, idle for at
  least MIN_WAIT_S before that end: `comm` records `d<k>` after the call and `main` waits for it there;
- compute: the step thread's wall time between these points (its operators and the Python between them), less the
  waits (from the gap's start to the call's end). Compute and waits add up to the step span exactly.

A call's measured `time` (for `run-program --timing measured`) is its exclusive time on the rank where it was
shortest: from the latest of its issue, its run's start and the end of the rank's previous call to its run's end.
The rank that arrived last waited least, so the shortest is the call itself; a call that overlapped an earlier one
(gloo runs two at once on its two threads) is charged only past that one's end. A call issued by every rank but
whose time cannot be measured on any has none.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any

from ..errors import CollsimError
from ..units import format_size
from .kineto import Call, RankTrace

MIN_WAIT_S = 100e-6  # the step thread idle at least this long before a call's end: it waited for that call


@dataclass
class Imported:
    """The program (as the file's mapping) and what the import could and could not map."""

    program: dict[str, Any]
    calls: list[dict]                      # per call of the first rank: op, group, bytes, time_s, its span there, ran
    measured_step_s: dict[int, float]      # each rank's step span, on its own clock
    step_s: float                          # the step from the first rank's start to the last rank's end (aligned clocks)
    skew_s: dict[int, float]               # how late each rank began its step (aligned clocks)
    unmapped: list[dict] = field(default_factory=list)   # per rank and name: count, why
    notes: list[str] = field(default_factory=list)


def check_ranks(traces: list[RankTrace], partial: bool = False) -> list[int]:
    """One trace per rank of one world, every rank present (`partial`: some may be missing; they are returned); else
    one line naming what is wrong."""
    world = traces[0].world
    for t in traces:
        if t.world != world:
            raise CollsimError(f"trace: {t.path}: world_size {t.world}, but {traces[0].path} says {world}; expected "
                               "the traces of one run")
    seen: dict[int, str] = {}
    for t in traces:
        if t.rank in seen:
            raise CollsimError(f"trace: {t.path}: rank {t.rank} again (also {seen[t.rank]}); expected one trace per rank")
        seen[t.rank] = t.path
    missing = [r for r in range(world) if r not in seen]
    if missing and not partial:
        shown = ", ".join(map(str, missing[:8])) + (", ..." if len(missing) > 8 else "")
        raise CollsimError(f"ranks: {len(seen)} trace(s) of a world of {world}; missing rank(s) {shown}; expected one "
                           "trace file per rank (without --out, the ranks given are listed: what maps and what not)")
    return missing


@dataclass
class Survey:
    """What the given ranks' steps hold when the world is incomplete (no program: a call needs all its members)."""

    world: int
    missing: list[int]
    calls: list[dict]        # per rank, in issue order: the calls that map (op, members, bytes, dtype)
    unmapped: list[dict]     # per rank and name: count, why (as Imported.unmapped)
    notes: list[str]


def survey(traces: list[RankTrace]) -> Survey:
    """The calls each given rank's step issued, mapped or not, without building a program."""
    missing = check_ranks(traces, partial=True)
    traces = sorted(traces, key=lambda t: t.rank)
    in_step = {t.rank: [c for c in t.calls if t.start <= c.issue <= t.end] for t in traces}
    calls = [{"rank": r, "index": k, "op": c.op, "members": list(c.members or ()), "bytes": c.nbytes, "dtype": c.dtype,
              "issued": c.name} for r, cs in in_step.items() for k, c in enumerate(c for c in cs if c.op is not None)]
    notes = sorted({n for t in traces for n in t.notes}) + [f"rank {t.rank}: step {t.step}, "
                                                            f"{(t.end - t.start) * 1e3:.3f} ms" for t in traces]
    return Survey(traces[0].world, missing, calls, _unmapped(in_step), notes)


def build(traces: list[RankTrace], compute_scale: float = 1.0) -> Imported:
    """The program of these traces (checked by check_ranks first); compute spans are multiplied by compute_scale."""
    check_ranks(traces)
    traces = sorted(traces, key=lambda t: t.rank)
    in_step = {t.rank: [c for c in t.calls if t.start <= c.issue <= t.end] for t in traces}
    mapped = {r: [c for c in calls if c.op is not None] for r, calls in in_step.items()}
    groups = _groups(mapped, traces[0].world)
    _check_same_calls(mapped, groups, traces)
    offsets, how, aligned = _offsets(traces)
    times, ends = _call_times(mapped, offsets) if aligned else (_shortest_times(mapped), {})
    first_start = min(t.start - offsets[t.rank] for t in traces)
    skew = {t.rank: t.start - offsets[t.rank] - first_start for t in traces}
    ranks = {t.rank: _rank_ops(t, mapped[t.rank], groups, times, compute_scale, skew[t.rank],
                               {k: e + offsets[t.rank] for k, e in ends.items()}) for t in traces}
    program = {"world": traces[0].world, "description": "imported by collsim import-trace from "
               + ", ".join(t.path.rsplit("/", 1)[-1] for t in traces),
               "groups": {name: list(m) for m, name in groups.items()}, "ranks": ranks}
    first = mapped[traces[0].rank]
    calls = [{"index": k, "op": c.op, "group": groups[c.members], "bytes": c.nbytes, "dtype": c.dtype,
              "time_s": times.get(key), "span_s": c.end - c.issue if c.end is not None else None, "ran": c.ran,
              "issued": c.name} for k, (c, key) in enumerate(zip(first, _keys(first)))]
    unmapped = _unmapped(in_step)
    notes = sorted({n for t in traces for n in t.notes}) + [how]
    if compute_scale != 1.0:
        notes.append(f"host spans (compute and late starts) multiplied by {compute_scale:g} (--compute-scale); calls keep "
                     "their measured time")
    step = max(t.end - offsets[t.rank] for t in traces) - first_start
    return Imported(program, calls, {t.rank: t.end - t.start for t in traces}, step, skew, unmapped, notes)


def _offsets(traces: list[RankTrace]) -> tuple[dict[int, float], str, bool]:
    """Each rank's clock minus rank 0's, and how it was found: the median difference of the ends of the calls of the
    whole world that both ran (the members of a collective leave it together, to within a message's latency)."""
    world = tuple(range(traces[0].world))
    ends = {t.rank: [c.end for c in t.calls if c.end is not None and c.members == world] for t in traces}
    ref = ends[traces[0].rank]
    offsets, shared = {}, min(len(e) for e in ends.values())
    for t in traces:
        diffs = sorted(a - b for a, b in zip(ends[t.rank], ref))
        offsets[t.rank] = diffs[len(diffs) // 2] if diffs else 0.0
    if not shared or len(traces) == 1:
        return offsets, ("ranks' clocks not aligned (no call of the whole world ran on every rank): every rank starts "
                         "its step at 0, and a call takes its shortest time on one rank"), False
    return offsets, (f"ranks' clocks aligned on the ends of {shared} call(s) of the whole world (median difference); a "
                     "rank that began its step late starts with a 'late_start' span of that delay"), True


def _groups(mapped: dict[int, list[Call]], world: int) -> dict[tuple[int, ...], str]:
    """A name per distinct member set: 'world', else g<first>_<second>_..."""
    sets = dict.fromkeys(c.members for calls in mapped.values() for c in calls)
    return {m: "world" if m == tuple(range(world)) else "g" + "_".join(map(str, m)) for m in sets}


def _check_same_calls(mapped: dict[int, list[Call]], groups: dict, traces: list[RankTrace]) -> None:
    """Every member of a group makes the same calls on it in the same order (else the traces are of different steps)."""
    for members in groups:
        seqs = {r: [(c.op, c.nbytes, c.dtype) for c in mapped[r] if c.members == members] for r in members}
        first = members[0]
        for r in members[1:]:
            if seqs[r] != seqs[first]:
                k = next((i for i, (a, b) in enumerate(zip(seqs[first], seqs[r])) if a != b), min(len(seqs[r]), len(seqs[first])))
                a = _show(seqs[first][k]) if k < len(seqs[first]) else "nothing"
                b = _show(seqs[r][k]) if k < len(seqs[r]) else "nothing"
                raise CollsimError(f"trace: {traces[r].path}: call #{k + 1} on ranks {list(members)} is {b} on rank {r} "
                                   f"but {a} on rank {first}; expected every rank's trace of the same step "
                                   "(--step picks the ProfilerStep span)")


def _show(call: tuple) -> str:
    return f"{call[0]} {format_size(call[1])} {call[2]}"


def _keys(calls: list[Call]) -> list[tuple]:
    """Each call's (members, position among this rank's calls on that group): the same call on every member."""
    seen: dict[tuple, int] = {}
    out = []
    for c in calls:
        seen[c.members] = seen.get(c.members, -1) + 1
        out.append((c.members, seen[c.members]))
    return out


def _call_times(mapped: dict[int, list[Call]], offsets: dict[int, float]) -> tuple[dict[tuple, float], dict[tuple, float]]:
    """On aligned clocks, per call (members, position): its time, from the last member's issue (not before the group's
    previous call ended; the backend's delay in starting it is part of the call as it ran) to the call's end, the
    first of its members' ends (a member that saw it end later was late itself: its process waited for a core); and that end
    (rank 0's clock)."""
    begins: dict[tuple, list[float]] = {}
    finishes: dict[tuple, list[float]] = {}
    for r, calls in mapped.items():
        for key, c in zip(_keys(calls), calls):
            if c.start is not None and c.end is not None:
                begins.setdefault(key, []).append(c.issue - offsets[r])
                finishes.setdefault(key, []).append(c.end - offsets[r])
    times, ends, previous = {}, {}, {}
    for key in sorted(finishes, key=lambda k: (k[0], k[1])):
        end = min(finishes[key])
        begin = max(max(begins[key]), previous.get(key[0], -math.inf))
        times[key], ends[key], previous[key[0]] = max(0.0, end - begin), end, end
    return times, ends


def _shortest_times(mapped: dict[int, list[Call]]) -> dict[tuple, float]:
    """Without aligned clocks, per call (members, position): its shortest exclusive time over the members that ran it
    (the member that arrived last waited least)."""
    best: dict[tuple, float] = {}
    for calls in mapped.values():
        for key, t in zip(_keys(calls), _exclusive(calls)):
            if t is not None and (key not in best or t < best[key]):
                best[key] = t
    return best


def _exclusive(calls: list[Call]) -> list[float | None]:
    """Each call's time on this rank from the latest of its issue, its start and the previous call's end, to its end."""
    out, last = [], None
    for c in calls:
        if c.start is None or c.end is None:
            out.append(None)
            continue
        begin = max(c.issue, c.start, last if last is not None else c.start)
        out.append(max(0.0, c.end - begin))
        last = c.end if last is None else max(last, c.end)
    return out


def _rank_ops(t: RankTrace, calls: list[Call], groups: dict, times: dict[tuple, float], scale: float,
              skew: float, ends: dict[tuple, float]) -> list[dict]:
    """This rank's operations: a late start when it began after the first rank, then compute on main between issue and
    wait points, the calls on comm. A wait lasts until the call's end (`ends`, on this rank's clock, when the clocks are
    aligned; else this rank's own end of it): what this rank took beyond it is its own host time."""
    keys = _keys(calls)
    marks: list[tuple[float, int, str, int]] = [(c.issue, 0, "issue", k) for k, c in enumerate(calls)]
    marks += [(w, 1, "wait", k) for k, w in _waits(t, calls).items()]
    waited = {k for _, _, kind, k in marks if kind == "wait"}
    ops: list[dict] = [{"op": "compute", "time": _us(skew * scale), "name": "late_start"}] if skew > 0 else []
    cursor, n = t.start, 0
    for at, _, kind, k in sorted(marks):
        n = _compute(ops, at - cursor, n, scale)
        c = calls[k]
        if kind == "issue":
            ops += [{"op": "record", "event": f"i{k}"}, {"op": "wait", "event": f"i{k}", "stream": "comm"}]
            call = {"op": c.op, "group": groups[c.members], "size": c.nbytes, "dtype": c.dtype, "stream": "comm",
                    "name": f"{groups[c.members]}_{keys[k][1]}"}
            if keys[k] in times:
                call["time"] = _us(times[keys[k]])
            ops.append(call)
            if k in waited:
                ops.append({"op": "record", "event": f"d{k}", "stream": "comm"})
            cursor = at
        else:
            ops.append({"op": "wait", "event": f"d{k}"})
            cursor = max(at, ends.get(keys[k], c.end or at))
    _compute(ops, t.end - cursor, n, scale)
    return ops


def _compute(ops: list[dict], seconds: float, n: int, scale: float) -> int:
    """Append a compute span of `seconds` x scale (when positive); the next span's number."""
    if seconds <= 0:
        return n
    ops.append({"op": "compute", "time": _us(seconds * scale), "name": f"host{n}"})
    return n + 1


def _us(seconds: float) -> str:
    """A time as the program file writes it, to the nanosecond."""
    return f"{seconds * 1e6:.3f}us"


def _waits(t: RankTrace, calls: list[Call]) -> dict[int, float]:
    """{call k: the instant the step thread began to wait for it}: calls whose end falls in a gap of the thread's busy
    time, idle at least MIN_WAIT_S before that end; of several ending in one gap, the last."""
    starts = [a for a, _ in t.busy]
    by_gap: dict[float, tuple[float, int]] = {}
    for k, c in enumerate(calls):
        if c.end is None or not t.start < c.end < t.end:
            continue
        i = bisect_left(starts, c.end) - 1  # the last busy interval that began before the end
        if i >= 0 and t.busy[i][1] > c.end:
            continue  # busy at the call's end: it did not wait for it
        gap_start = max(t.busy[i][1] if i >= 0 else t.start, c.issue)
        if c.end - gap_start >= MIN_WAIT_S and (gap_start not in by_gap or by_gap[gap_start][0] < c.end):
            by_gap[gap_start] = (c.end, k)
    return {k: start for start, (_, k) in by_gap.items()}


def _unmapped(in_step: dict[int, list[Call]]) -> list[dict]:
    """The calls of each rank's step that are not in the program: per rank, name and reason, with their count."""
    rows: dict[tuple, int] = {}
    for r, calls in in_step.items():
        for c in calls:
            if c.op is None:
                rows[(r, c.name, c.why)] = rows.get((r, c.name, c.why), 0) + 1
    return [{"rank": r, "name": name, "count": n, "why": why} for (r, name, why), n in sorted(rows.items())]
