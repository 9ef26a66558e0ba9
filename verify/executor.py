"""Runs any collsim Schedule as torch.distributed point-to-point messages on real tensors.

Every rank walks the same topological order of the schedule. A rank posts a send as soon as
the transfers it depends on *on this rank* are done, and sends to one peer in topological
order; it posts receives in topological order into staging buffers (up to a byte budget) and
copies or reduces a received message into place once its own dependencies are done (on gloo,
a plain copy is received in place instead, once its dependencies allow). Local transfers
(src == dst) are copies or reductions in memory. Why it cannot deadlock: the earliest transfer
(in the shared order) that is not finished has all its dependencies done, so its sender has
posted it (all earlier sends to that peer are finished) and its receiver has posted the
receive (all earlier receives are finished, so the budget has room); a rank only ever blocks
on its earliest pending message. Messages carry the transfer id as their tag; on NCCL, which
ignores tags and runs a pair's messages in posting order, the executor posts every message
with one peer in the shared order ("ordered" mode). Because receives are posted ahead, the
reduction of one chunk overlaps the arrival of the next. See docs/verify.md.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import timedelta
from time import perf_counter

from simulator.schedule import Schedule

from .board import EXECUTED, WAIT_RECV, WAIT_SEND, Board
from .launch import HangError

TORCH_DTYPES = ("float32", "float16", "bfloat16", "int32", "int64", "float64", "int8", "uint8")
DEFAULT_BUDGET = 256 * 2**20  # bytes of receive staging a rank may hold at once
MAX_POSTED = 256  # messages a rank keeps posted at once (beyond the first receive)
# Bytes per message above which a transfer is cut into slices, so reducing one slice overlaps receiving the next.
# Off by default: on 2 shared cores with gloo, 2 MiB and 512 KiB slices made ring allreduce 10-30% slower
# (more messages, more wake-ups); worth trying where cores are not the bottleneck.
DEFAULT_SLICE = 0
MAX_SLICES = 256  # slices per transfer at most (tags are transfer id x MAX_SLICES + slice)


def torch_dtype(name: str):
    """The torch dtype of a collsim dtype name."""
    import torch

    table = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "int32": torch.int32,
             "int64": torch.int64, "float64": torch.float64, "int8": torch.int8, "uint8": torch.uint8}
    return table[name]


@dataclass
class RankPlan:
    """One rank's share of a schedule, precomputed once and reusable across iterations."""

    rank: int
    schedule: Schedule
    mine: list[int]  # my transfer ids in the shared topological order
    pos: dict[int, int]  # transfer id -> position in that order
    deps: dict[int, tuple[int, ...]]  # my transfers -> their dependencies that involve me
    children: dict[int, list[int]]  # reverse of deps, within my transfers
    staging: dict = field(default_factory=dict)  # receive id -> staging tensor, kept across iterations

    def stage(self, tid: int, count: int, dtype, device):
        """The staging tensor of a receive (allocated once: fresh large allocations cost page faults every run)."""
        import torch

        t = self.staging.get(tid)
        if t is None or t.dtype != dtype or t.device != device:
            t = self.staging[tid] = torch.empty(count, dtype=dtype, device=device)
        return t

    @classmethod
    def build(cls, schedule: Schedule, rank: int) -> RankPlan:
        """Select and index the transfers that involve `rank`."""
        ts = schedule.transfers
        order = schedule.topological_order()
        pos = {tid: i for i, tid in enumerate(order)}
        mine = [tid for tid in order if rank in (ts[tid].src, ts[tid].dst)]
        deps, children = {}, {tid: [] for tid in mine}
        for tid in mine:
            local = tuple(d for d in ts[tid].deps if rank in (ts[d].src, ts[d].dst))
            deps[tid] = local
            for d in local:
                children[d].append(tid)
        return cls(rank, schedule, mine, pos, deps, children)


def _reducer(redop: str):
    import torch

    return {"sum": lambda t, x: t.add_(x), "prod": lambda t, x: t.mul_(x),
            "max": lambda t, x: torch.maximum(t, x, out=t), "min": lambda t, x: torch.minimum(t, x, out=t)}[redop]


def execute(plan: RankPlan, bufs: dict, *, board: Board | None = None, timeout: float = 30.0,
            group=None, budget_bytes: int = DEFAULT_BUDGET, skip_send: int | None = None, trace: list | None = None,
            slice_bytes: int = DEFAULT_SLICE, ordered: bool | None = None) -> dict:
    """Run this rank's part of the schedule on `bufs` ('in', 'out', 'scratch' 1-D tensors); return counters.

    Transfers above `slice_bytes` travel as several messages (0 = never cut), so a reduction
    starts on the first slice while the others arrive. `skip_send` names a transfer this rank
    silently does not send (fault injection for tests); `ordered` posts every message to or
    from one peer strictly in the shared order (default: only where matching ignores tags, i.e.
    NCCL, whose per-pair stream would otherwise serialise a receive ahead of the send it waits on);
    `trace`, when given, collects (perf_counter seconds, event, transfer id) for a timeline.
    """
    import torch
    import torch.distributed as dist

    sched, me = plan.schedule, plan.rank
    ts = sched.transfers
    reduce_into = _reducer(sched.collective.redop)
    elem = sched.collective.elem_size
    dtype, device = bufs["out"].dtype, bufs["out"].device
    wait_for = timedelta(seconds=timeout)
    poll = dist.get_backend(group) != "gloo"

    missing = {tid: len(plan.deps[tid]) for tid in plan.mine}
    send_queues: dict[int, deque[int]] = {}
    recvs: list[int] = []
    for tid in plan.mine:
        t = ts[tid]
        if t.src == me and t.dst != me:
            send_queues.setdefault(t.dst, deque()).append(tid)
        elif t.dst == me and t.src != me:
            recvs.append(tid)
    ready_sends: set[int] = set()
    ready_locals: deque[int] = deque()
    ready_recvs: set[int] = set()  # receives whose local dependencies are done
    deferred: set[int] = set()  # in-place receives waiting for their local dependencies before being posted
    tag_matching = dist.get_backend(group) == "gloo"  # NCCL matches in posting order, so receives cannot be deferred
    ordered = (not tag_matching) if ordered is None else ordered
    peer_queues: dict[int, deque[int]] = {}  # ordered mode: every message with a peer, sends and receives, in the shared order
    if ordered:
        for tid in plan.mine:
            t = ts[tid]
            if t.src != t.dst:
                peer_queues.setdefault(t.dst if t.src == me else t.src, deque()).append(tid)
        recvs, send_queues = [], {}
    landed: dict[int, list[int]] = {}  # staged receive id -> slices arrived and not yet applied
    left: dict[int, int] = {}  # in-flight transfer id -> slices not yet done
    stages: dict[int, object] = {}  # staged receive id -> its staging tensor
    pending: dict[tuple[int, int], tuple[object, object, str]] = {}  # (id, slice) -> (work, tensor, 'send'|'recv'|'direct')
    staged = 0
    next_recv = 0
    finished = 0
    counters = {"sent": 0, "received": 0, "local": 0, "blocking_waits": 0, "messages": 0}
    slice_elems = max(1, slice_bytes // elem) if slice_bytes else 0

    def slices(count: int) -> list[tuple[int, int]]:
        """(offset, count) of the messages one transfer is cut into (at most MAX_SLICES)."""
        if not slice_elems or count <= slice_elems:
            return [(0, count)]
        size = max(slice_elems, -(-count // MAX_SLICES))
        return [(a, min(size, count - a)) for a in range(0, count, size)]

    def view(rank_bufs, buf, off, count):
        return rank_bufs[buf].narrow(0, off, count)

    def mark_ready(tid: int) -> None:
        t = ts[tid]
        if t.src == me and t.dst == me:
            ready_locals.append(tid)
        elif t.src == me:
            ready_sends.add(tid)
        elif tid in deferred:
            deferred.discard(tid)
            post(tid, direct_target(tid), "direct")
        else:
            ready_recvs.add(tid)

    def direct_target(tid: int):
        """The destination view when a receive can land in place (a copy of one piece), else None."""
        t = ts[tid]
        pieces = [p for p in t.pieces if p.count]
        if t.reduce or len(pieces) != 1 or not tag_matching or ordered:
            return None
        return view(bufs, pieces[0].dst_buf, pieces[0].dst_off, pieces[0].count)

    def post(tid: int, tensor, kind: str) -> None:
        """Post one transfer's messages (one per slice), tagged (id, slice), in slice order."""
        t = ts[tid]
        parts = slices(tensor.numel())
        left[tid] = len(parts)
        for j, (a, n) in enumerate(parts):
            piece = tensor.narrow(0, a, n)
            tag = tid * MAX_SLICES + j
            work = dist.isend(piece, t.dst, group=group, tag=tag) if kind == "send" else dist.irecv(piece, t.src, group=group, tag=tag)
            pending[(tid, j)] = (work, piece, kind)
            counters["messages"] += 1
        if trace is not None:
            trace.append((perf_counter(), f"post-{kind}", tid))

    def finish(tid: int) -> None:
        nonlocal finished
        finished += 1
        for child in plan.children[tid]:
            missing[child] -= 1
            if missing[child] == 0:
                mark_ready(child)

    def apply(tid: int, data, lo: int = 0, hi: int | None = None) -> None:
        """Copy or reduce payload elements [lo, hi) of transfer `tid` into place (data None: read the sender's own buffer)."""
        at = 0
        t = ts[tid]
        hi = t.count if hi is None else hi
        for piece in t.pieces:
            a, b = max(lo, at), min(hi, at + piece.count)
            if a < b:
                target = view(bufs, piece.dst_buf, piece.dst_off + a - at, b - a)
                chunk = data.narrow(0, a, b - a) if data is not None else view(bufs, piece.src_buf, piece.src_off + a - at, b - a)
                if t.reduce:
                    reduce_into(target, chunk)
                else:
                    target.copy_(chunk)
            at += piece.count

    def payload(tid: int):
        pieces = [p for p in ts[tid].pieces if p.count]
        if len(pieces) == 1:
            p = pieces[0]
            return view(bufs, p.src_buf, p.src_off, p.count)
        if not pieces:
            return torch.empty(0, dtype=dtype, device=device)
        return torch.cat([view(bufs, p.src_buf, p.src_off, p.count) for p in pieces])

    def complete(key: tuple[int, int], waited: bool) -> None:
        """One message is done: a transfer finishes with its last slice; received slices wait to be applied."""
        work, _, kind = pending.pop(key)
        if not waited:
            work.wait()  # once only (a second wait on gloo waits for another message); on CUDA it orders the stream
        tid, j = key
        left[tid] -= 1
        if kind == "recv":
            landed.setdefault(tid, []).append(j)
        elif left[tid] == 0:
            del left[tid]
            finish(tid)

    def apply_landed(tid: int) -> None:
        """Apply the arrived slices of a staged receive; finish it after the last one."""
        nonlocal staged
        stage = stages[tid]
        parts = slices(stage.numel())
        for j in landed.pop(tid, []):
            a, n = parts[j]
            apply(tid, stage, a, a + n)
        if left[tid] == 0:
            del left[tid], stages[tid]
            ready_recvs.discard(tid)
            staged -= ts[tid].count * elem
            counters["received"] += 1
            if trace is not None:
                trace.append((perf_counter(), "applied", tid))
            finish(tid)

    for tid in plan.mine:
        if missing[tid] == 0:
            mark_ready(tid)

    while finished < len(plan.mine):
        progressed = True
        while progressed:
            progressed = False
            # receives first: on gloo a message that arrives before its receive is posted takes a slow path
            while next_recv < len(recvs) and (not staged or (staged < budget_bytes and len(pending) < MAX_POSTED)):
                tid = recvs[next_recv]
                next_recv += 1
                progressed = True
                if direct_target(tid) is not None:  # copies land in place: now if allowed, else once allowed
                    if tid in ready_recvs:
                        ready_recvs.discard(tid)
                        post(tid, direct_target(tid), "direct")
                    else:
                        deferred.add(tid)
                    continue
                stages[tid] = plan.stage(tid, ts[tid].count, dtype, device)
                post(tid, stages[tid], "recv")
                staged += ts[tid].count * elem
            for q in peer_queues.values():  # ordered mode: no limits, so nothing later can hold a budget an earlier one needs
                while q:
                    tid = q[0]
                    if ts[tid].src == me:
                        if tid not in ready_sends:
                            break
                        ready_sends.discard(tid)
                        q.popleft()
                        if tid == skip_send:
                            finish(tid)
                        else:
                            post(tid, payload(tid), "send")
                            counters["sent"] += 1
                    else:
                        q.popleft()
                        stages[tid] = plan.stage(tid, ts[tid].count, dtype, device)
                        post(tid, stages[tid], "recv")
                        staged += ts[tid].count * elem
                    progressed = True
            for q in send_queues.values():  # sends to one peer leave in the shared order
                while q and q[0] in ready_sends:
                    tid = q.popleft()
                    ready_sends.discard(tid)
                    progressed = True
                    if tid == skip_send:
                        finish(tid)
                        continue
                    post(tid, payload(tid), "send")
                    counters["sent"] += 1
            while ready_locals:
                tid = ready_locals.popleft()
                t = ts[tid]
                if t.reduce or any(p.src_buf != p.dst_buf or p.src_off != p.dst_off for p in t.pieces):
                    apply(tid, payload(tid).clone() if len(t.pieces) > 1 else None)
                counters["local"] += 1
                finish(tid)
                progressed = True
            for tid in [t for t in landed if t in ready_recvs]:  # reduce what has arrived while the rest flows
                apply_landed(tid)
                progressed = True
            if poll:  # gloo's P2P works only learn they are complete inside wait(), so polling is for NCCL
                for key in [k for k, (work, _, _) in pending.items() if work.is_completed()]:
                    complete(key, waited=False)
                    progressed = True
        if finished >= len(plan.mine):
            break
        if not pending:
            raise RuntimeError(f"executor: rank {me} has {len(plan.mine) - finished} transfers left but nothing in flight "
                               f"(the schedule's dependencies are inconsistent)")
        key = min(pending, key=lambda k: (plan.pos[k[0]], k[1]))
        work, _, kind = pending[key]
        tid = key[0]
        t = ts[tid]
        peer = t.dst if kind == "send" else t.src
        if board is not None:
            board.set(me, WAIT_SEND if kind == "send" else WAIT_RECV, t.step, tid, peer)
        counters["blocking_waits"] += 1
        if trace is not None:
            trace.append((perf_counter(), f"wait-{kind}", tid))
        try:
            work.wait(wait_for)
        except RuntimeError as exc:
            what = "for its send to be taken by" if kind == "send" else "for a message from"
            err = HangError(me, t.step, tid, peer, what, timeout)
            if "timed out" not in str(exc).lower():
                err.args = (f"{err.args[0]} ({str(exc).splitlines()[0][:160]})",)
            raise err from None
        if board is not None:
            board.set(me, 0)
        if trace is not None:
            trace.append((perf_counter(), f"done-{kind}", tid))
        complete(key, waited=True)
    if board is not None:
        board.set(me, EXECUTED)
    return counters


