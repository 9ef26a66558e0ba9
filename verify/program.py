"""`verify --program`: run a program's collectives and point-to-point messages on real torch.distributed groups.

Every rank creates every process group (dist.new_group, in the file's order, as torch requires),
then issues its operations the way streams would: each stream's next operation is issued
(asynchronously) once the operations it depends on have completed (stream order, `after`, events,
and the previous call on the same group); compute is skipped or, with a scale, lasts
scale x its seconds without blocking other streams. A rank that makes no progress for the
timeout stops and reports what it still waits in, so a mis-ordered program ends in one error
naming every rank's pending operation. Inputs are filled so every result is known: a tensor's
values depend on its rank and on its name (or, unnamed, its call label), so collectives swapped
between ranks that have the same shape complete, and the check reports their wrong data.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from simulator.collective import DTYPES, Collective
from simulator.errors import CollsimError
from simulator.program.graph import dependencies, labels, meetings
from simulator.program.model import COMPUTE, RECORD, SEND, WAIT, Program

from .launch import World
from .native import native_call

TORCH_DTYPES = ("float32", "float16", "bfloat16", "int32", "int64", "float64", "uint8", "int8")
_POLL_S = 0.0005
_BEAT_S = 0.5
MAX_LOCAL_RANKS = 32
# The one exception to running each collective as its spec says (simulator/ops.py): reduce_scatter runs as an
# allreduce on the same group, which keeps the ordering, and is checked as one. Older gloo had no reduce_scatter;
# torch 2.13's gloo does run reduce_scatter_tensor, so this could go, at the cost of programs' behaviour changing.
GLOO_RUNS_AS = {"reduce_scatter": "allreduce"}


def _values(torch, identity: int, rank: int, count: int, dtype, redop: str = "sum"):
    """Small integers that depend on the tensor's identity and the rank, so that results are exact in every dtype:
    0..30 (0..14 for int8) summed over up to 8 ranks; 1s and 2s for a product."""
    j = torch.arange(count, dtype=torch.int64)
    x = (identity + 1) * (j + 1) + 3 * rank
    return (x % 2 + 1 if redop == "prod" else x % (15 if dtype == torch.int8 else 31)).to(dtype)


def tensor_identities(program: Program) -> dict[tuple[int, int], int]:
    """A number per (rank, op index) naming the tensor each call moves: calls that meet share one, unless every
    member names its collective, when each name counts (so swapped same-shaped calls get different numbers)."""
    keys: dict[tuple[int, int], str] = {}
    for key, calls in meetings(program).items():
        named = key[0] == "group" and all(program.ranks[r][i].name for r, i in calls.items())
        for r, i in calls.items():
            keys[(r, i)] = f"name:{program.ranks[r][i].name}" if named else repr(key)
    number = {k: n for n, k in enumerate(sorted(set(keys.values())))}
    return {node: number[k] for node, k in keys.items()}


class _Runner:
    def __init__(self, world: World, program: Program, max_count: int, compute_scale: float):
        import torch
        import torch.distributed as dist

        self.torch, self.dist, self.world, self.program = torch, dist, world, program
        self.rank = world.rank
        self.ops = program.ops(self.rank)
        self.labels = labels(self.ops)
        self.deps = dependencies(self.ops)
        self.max_count, self.scale = max_count, compute_scale
        self.identity = tensor_identities(program)
        timeout = timedelta(seconds=world.timeout * 2 + 30)  # outlasts our own progress timeout, which names the waits
        self.groups = {name: dist.new_group(ranks=sorted(members), timeout=timeout) for name, members in program.groups.items()}
        self.everyone = dist.new_group(ranks=list(range(world.ranks)), timeout=timeout)
        self.checks: list[tuple[int, Callable[[], Any], list]] = []  # (op index, its result, expected (offset, values))

    def _count(self, index: int) -> int:
        op = self.ops[index]
        return min(op.nbytes // DTYPES[op.dtype], self.max_count)

    def issue(self, index: int):
        """Start one communication; return its Work."""
        torch, dist, op = self.torch, self.dist, self.ops[index]
        dtype = getattr(torch, op.dtype if op.dtype in TORCH_DTYPES else "float32")
        ident = self.identity[(self.rank, index)]
        n = self._count(index)
        if op.is_p2p:
            if op.op == SEND:
                return _Waiter(dist.isend(_values(torch, ident, self.rank, n, dtype), op.peer, group=self.everyone))
            out = torch.zeros(n, dtype=dtype)
            self.checks.append((index, lambda: out, [(0, _values(torch, ident, op.peer, n, dtype))]))
            return _Waiter(dist.irecv(out, op.peer, group=self.everyone))
        return self._collective(index, n, dtype, ident)

    def _collective(self, index: int, n: int, dtype, ident: int):
        """Issue a collective as its op's spec lays it out (torch call and buffers: verify/native.py); note its check,
        the spec's result (simulator/ops.py) on every rank that holds one."""
        op = self.ops[index]
        members = sorted(self.program.groups[op.group])
        me = members.index(self.rank)
        root = members.index(op.root) if op.root is not None else 0
        coll = Collective(GLOO_RUNS_AS.get(op.op, op.op), len(members), n * DTYPES[op.dtype], op.dtype, root, op.redop)
        inputs = [_values(self.torch, ident, r, coll.in_count[k], dtype, op.redop) for k, r in enumerate(members)]
        native = native_call(coll, me, inputs[me], self.groups[op.group], torch_root=op.root, async_op=True)
        if me in coll.spec.result_ranks(coll):
            self.checks.append((index, native.result, _expected(self.torch, coll, me, inputs)))
        return native.run()

    def _stuck(self, issued: dict, done: list[bool], note: str | None = None) -> dict:
        pending = [self.labels[i] for i in sorted(issued) if self.ops[i].is_collective or self.ops[i].is_p2p]
        return {"rank": self.rank, "status": "hang", "pending": pending, "completed": sum(done), "note": note}

    def run(self) -> dict:
        """Issue in stream order until every operation completed or nothing moved for the timeout."""
        n = len(self.ops)
        done = [False] * n
        issued: dict[int, object] = {}  # index -> Work, or a compute deadline (float)
        heads: dict[str, list[int]] = {}
        for i, op in enumerate(self.ops):
            heads.setdefault(op.stream, []).append(i)
        pos = {s: 0 for s in heads}
        left, last = n, time.monotonic()
        beat = last
        while left:
            moved = False
            now = time.monotonic()
            for i, work in list(issued.items()):
                finished = now >= work if isinstance(work, float) else work.is_completed()
                if finished:
                    if not isinstance(work, float):
                        try:
                            work.wait()  # raises the backend's error, if any
                        except RuntimeError as exc:  # a peer that gave up closed its connections: this rank is stuck too
                            return self._stuck(issued, done, f"{self.labels[i]} failed: {str(exc).splitlines()[0][:120]}")
                    del issued[i]
                    done[i], left, moved = True, left - 1, True
            for stream, order in heads.items():
                while pos[stream] < len(order):
                    i = order[pos[stream]]
                    if i in issued or not all(done[d] for d in self.deps[i]):
                        break
                    pos[stream] += 1
                    moved = True
                    op = self.ops[i]
                    if op.op in (RECORD, WAIT) or (op.op == COMPUTE and self.scale <= 0):
                        done[i], left = True, left - 1
                    elif op.op == COMPUTE:
                        issued[i] = now + op.seconds * self.scale
                    else:
                        issued[i] = self.issue(i)
            if moved or now - beat > _BEAT_S:  # alive: the launcher's own hang check defers to this loop's timeout
                beat = now
                self.world.board.beat(self.rank)
            if moved:
                last = now
            elif now - last > self.world.timeout:
                return self._stuck(issued, done)
            else:
                time.sleep(_POLL_S)
        wrong = []
        for index, actual, expected in self.checks:
            if not _equal(self.torch, actual(), expected):
                wrong.append(self.labels[index])
        return {"rank": self.rank, "status": "ok", "completed": n, "checked": len(self.checks), "wrong": wrong}


class _Waiter:
    """gloo completes a send or recv only inside wait(): wait in a daemon thread, so polling sees it finish."""

    def __init__(self, work):
        self.work, self.error, self.finished = work, None, threading.Event()
        threading.Thread(target=self._wait, daemon=True).start()

    def _wait(self) -> None:
        try:
            self.work.wait()
        except BaseException as exc:  # handed to the polling thread by wait()
            self.error = exc
        self.finished.set()

    def is_completed(self) -> bool:
        return self.finished.is_set()

    def wait(self) -> None:
        if self.error is not None:
            raise self.error


def _reduce(torch, inputs, redop: str):
    stack = torch.stack([x.to(torch.float64) for x in inputs])
    out = {"sum": stack.sum(0), "prod": stack.prod(0), "max": stack.max(0).values, "min": stack.min(0).values}[redop]
    return out.to(inputs[0].dtype)


def _expected(torch, coll: Collective, rank: int, inputs: list) -> list:
    """(offset, values) per region of `rank`'s result: its spec's parts (simulator/ops.py), each a copy of one input
    region or the reduction of several."""
    out = []
    for part in coll.spec.result(coll, rank):
        pieces = [inputs[s][off:off + part.count] for s, off in part.sources]
        out.append((part.off, pieces[0] if len(pieces) == 1 else _reduce(torch, pieces, coll.redop)))
    return out


def _equal(torch, actual, expected: list) -> bool:
    """Whether every expected (offset, values) region of `actual` holds exactly those values."""
    return all(torch.equal(actual[off:off + len(want)], want) for off, want in expected)


def program_job(world: World, program: Program, max_count: int, compute_scale: float) -> dict:
    """One rank's part of `verify --program` (a module-level function, so local worlds can pickle it)."""
    start = time.monotonic()
    runner = _Runner(world, program, max_count, compute_scale)
    setup = time.monotonic()
    out = runner.run()
    return {**out, "setup_s": setup - start, "run_s": time.monotonic() - setup}


def refuse_world(world: int, source: str) -> None:
    """Refuse a world too large to start one local process per rank."""
    if world > MAX_LOCAL_RANKS:
        raise CollsimError(f"{source}: world: {world} ranks would start {world} local processes; "
                           f"expected at most {MAX_LOCAL_RANKS} for verify --program (lint-program checks any size)")


def verify_program(program: Program, backend: str = "gloo", timeout: float = 30.0, max_bytes: int = 1 << 20,
                   compute_scale: float = 0.0) -> dict:
    """Run `program` on a local world of program.world ranks; a summary with every rank's outcome.

    Collective buffers are capped at `max_bytes` elements' worth (same-shaped calls stay same-shaped),
    so the check is of ordering and data, not of speed.
    """
    from .launch import run_local

    if backend != "gloo":
        raise CollsimError(f"backend: verify --program runs on gloo (CPU tensors); {backend!r} is not supported for programs yet")
    refuse_world(program.world, program.source)
    for rank, ops in program.ranks.items():
        for i, op in enumerate(ops):
            if (op.is_collective or op.is_p2p) and op.dtype not in TORCH_DTYPES:
                raise CollsimError(f"{program.source}: rank {rank} op[{i}]: dtype: {op.dtype} is not run on torch.distributed; "
                                   f"expected one of {', '.join(TORCH_DTYPES)}")
    start = time.monotonic()
    results = run_local(program_job, program.world, backend, timeout, (program, max(1, max_bytes // 8), compute_scale))
    elapsed = time.monotonic() - start
    hung = [r for r in results if r["status"] == "hang"]
    wrong = [r for r in results if r.get("wrong")]
    summary = {"world": program.world, "backend": backend, "seconds": elapsed, "ranks": results, "passed": not hung and not wrong}
    if hung:
        parts = []
        for r in results:
            if r["status"] == "hang":
                waits = ", ".join(r["pending"]) or "nothing it issued (blocked before its next call)"
                parts.append(f"rank {r['rank']} waits in {waits}" + (" (a peer left)" if r["note"] else ""))
            else:
                parts.append(f"rank {r['rank']} finished")
        why = f"no progress for {timeout:g} s" if any(r["note"] is None for r in hung) else "calls that cannot complete"
        summary["error"] = f"hang: {why}: " + "; ".join(parts)
    elif wrong:
        summary["error"] = "wrong data: " + "; ".join(f"rank {r['rank']} in {', '.join(r['wrong'])}" for r in wrong)
    return summary
