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
from typing import Protocol

from simulator.schedule import Schedule, Transfer

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


def slices(count: int, slice_elems: int) -> list[tuple[int, int]]:
    """(offset, count) of the messages one transfer of `count` elements is cut into (0 = never cut; at most MAX_SLICES)."""
    if not slice_elems or count <= slice_elems:
        return [(0, count)]
    size = max(slice_elems, -(-count // MAX_SLICES))
    return [(a, min(size, count - a)) for a in range(0, count, size)]


def message_tag(tid: int, j: int) -> int:
    """The tag of slice `j` of transfer `tid` (unique per message of one run)."""
    return tid * MAX_SLICES + j


@dataclass
class PostingOrder:
    """In which order a rank posts its messages: per-peer send queues and one receive list, or (ordered) one queue per peer."""

    send_queues: dict[int, deque[int]]  # peer -> my sends to it, in the shared order
    recvs: list[int]  # my receives, in the shared order
    peer_queues: dict[int, deque[int]]  # ordered mode: peer -> every message with it, sends and receives, in the shared order


def posting_order(plan: RankPlan, ordered: bool) -> PostingOrder:
    """The queues a rank walks: sends per peer plus receives, or every message per peer when `ordered`."""
    ts, me = plan.schedule.transfers, plan.rank
    if ordered:
        peers: dict[int, deque[int]] = {}
        for tid in plan.mine:
            t = ts[tid]
            if t.src != t.dst:
                peers.setdefault(t.dst if t.src == me else t.src, deque()).append(tid)
        return PostingOrder({}, [], peers)
    sends: dict[int, deque[int]] = {}
    recvs: list[int] = []
    for tid in plan.mine:
        t = ts[tid]
        if t.src == me and t.dst != me:
            sends.setdefault(t.dst, deque()).append(tid)
        elif t.dst == me and t.src != me:
            recvs.append(tid)
    return PostingOrder(sends, recvs, {})


def earliest(keys, pos: dict[int, int]) -> tuple[int, int]:
    """The pending message (transfer id, slice) earliest in the shared order: the one a rank blocks on."""
    return min(keys, key=lambda k: (pos[k[0]], k[1]))


def hang_error(rank: int, transfer: Transfer, kind: str, timeout: float, exc: BaseException) -> HangError:
    """The error for a failed wait on a message of `transfer` ('send', 'recv' or 'direct'); a cause other than a timeout is appended."""
    send = kind == "send"
    err = HangError(rank, transfer.step, transfer.id, transfer.dst if send else transfer.src,
                    "for its send to be taken by" if send else "for a message from", timeout)
    if "timed out" not in str(exc).lower():
        err.args = (f"{err.args[0]} ({str(exc).splitlines()[0][:160]})",)
    return err


class Comm(Protocol):
    """Point-to-point messaging between ranks: torch.distributed (DistComm), or anything that posts and waits alike."""

    tag_matching: bool  # receives match sends by tag (gloo), else in posting order per pair (NCCL)

    def isend(self, tensor, peer: int, tag: int): ...

    def irecv(self, tensor, peer: int, tag: int): ...


class DistComm:
    """torch.distributed P2P on a process group (the default one when `group` is None)."""

    def __init__(self, group=None):
        import torch.distributed as dist

        self.dist, self.group = dist, group
        self.tag_matching = dist.get_backend(group) == "gloo"  # NCCL ignores tags and matches in posting order

    def isend(self, tensor, peer: int, tag: int):
        return self.dist.isend(tensor, peer, group=self.group, tag=tag)

    def irecv(self, tensor, peer: int, tag: int):
        return self.dist.irecv(tensor, peer, group=self.group, tag=tag)


def execute(plan: RankPlan, bufs: dict, *, board: Board | None = None, timeout: float = 30.0,
            group=None, budget_bytes: int = DEFAULT_BUDGET, skip_send: int | None = None, trace: list | None = None,
            slice_bytes: int = DEFAULT_SLICE, ordered: bool | None = None, comm: Comm | None = None) -> dict:
    """Run this rank's part of the schedule on `bufs` ('in', 'out', 'scratch' 1-D tensors); return counters.

    Transfers above `slice_bytes` travel as several messages (0 = never cut), so a reduction
    starts on the first slice while the others arrive. `skip_send` names a transfer this rank
    silently does not send (fault injection for tests); `ordered` posts every message to or
    from one peer strictly in the shared order (default: only where matching ignores tags, i.e.
    NCCL, whose per-pair stream would otherwise serialise a receive ahead of the send it waits on);
    `trace`, when given, collects (perf_counter seconds, event, transfer id) for a timeline;
    `comm` carries the messages (default: torch.distributed on `group`).
    """
    run = RankRun(plan, bufs, comm if comm is not None else DistComm(group), board=board, timeout=timeout,
                  budget_bytes=budget_bytes, skip_send=skip_send, trace=trace, slice_bytes=slice_bytes, ordered=ordered)
    return run.run()


class RankRun:
    """One run of a rank's plan: what is ready, what is posted, what has landed; `run` is the step loop."""

    def __init__(self, plan: RankPlan, bufs: dict, comm: Comm, *, board: Board | None, timeout: float, budget_bytes: int,
                 skip_send: int | None, trace: list | None, slice_bytes: int, ordered: bool | None):
        sched = plan.schedule
        self.plan, self.bufs, self.comm, self.me, self.ts = plan, bufs, comm, plan.rank, sched.transfers
        self.board, self.timeout, self.budget, self.skip_send, self.trace = board, timeout, budget_bytes, skip_send, trace
        self.reduce_into = _reducer(sched.collective.redop)
        self.elem = sched.collective.elem_size
        self.dtype, self.device = bufs["out"].dtype, bufs["out"].device
        self.slice_elems = max(1, slice_bytes // self.elem) if slice_bytes else 0
        self.poll = not comm.tag_matching  # gloo's P2P works only learn they are complete inside wait(), so polling is for NCCL
        self.ordered = (not comm.tag_matching) if ordered is None else ordered  # NCCL matches in posting order
        order = posting_order(plan, self.ordered)
        self.send_queues, self.recvs, self.peer_queues = order.send_queues, order.recvs, order.peer_queues
        self.missing = {tid: len(plan.deps[tid]) for tid in plan.mine}
        self.ready_sends: set[int] = set()
        self.ready_locals: deque[int] = deque()
        self.ready_recvs: set[int] = set()  # receives whose local dependencies are done
        self.deferred: set[int] = set()  # in-place receives waiting for their local dependencies before being posted
        self.landed: dict[int, list[int]] = {}  # staged receive id -> slices arrived and not yet applied
        self.left: dict[int, int] = {}  # in-flight transfer id -> slices not yet done
        self.stages: dict[int, object] = {}  # staged receive id -> its staging tensor
        self.pending: dict[tuple[int, int], tuple[object, object, str]] = {}  # (id, slice) -> (work, tensor, 'send'|'recv'|'direct')
        self.staged = 0  # bytes of staging posted and not yet applied
        self.next_recv = 0
        self.finished = 0
        self.counters = {"sent": 0, "received": 0, "local": 0, "blocking_waits": 0, "messages": 0}

    # -- the step loop ------------------------------------------------------------------------------------

    def run(self) -> dict:
        """Post, apply and wait until every transfer of this rank is finished; return the counters."""
        for tid in self.plan.mine:
            if self.missing[tid] == 0:
                self.mark_ready(tid)
        total = len(self.plan.mine)
        while True:
            while self.progress_pass():
                pass
            if self.finished >= total:
                break
            if not self.pending:
                raise RuntimeError(f"executor: rank {self.me} has {total - self.finished} transfers left but nothing in flight "
                                   f"(the schedule's dependencies are inconsistent)")
            self.block_on_earliest()
        if self.board is not None:
            self.board.set(self.me, EXECUTED)
        return self.counters

    def progress_pass(self) -> bool:
        """One pass over everything that can move without blocking; True if anything did."""
        # receives first: on gloo a message that arrives before its receive is posted takes a slow path
        moved = self.post_receives()
        moved = self.drain_peer_queues() | moved
        moved = self.drain_send_queues() | moved
        moved = self.run_locals() | moved
        moved = self.apply_arrived() | moved
        if self.poll:
            moved = self.poll_completed() | moved
        return moved

    def post_receives(self) -> bool:
        """Post receives in the shared order while the staging budget and the posting cap allow (the first always)."""
        moved = False
        while self.next_recv < len(self.recvs) and (not self.staged or (self.staged < self.budget and len(self.pending) < MAX_POSTED)):
            tid = self.recvs[self.next_recv]
            self.next_recv += 1
            moved = True
            target = self.direct_target(tid)
            if target is not None:  # copies land in place: now if allowed, else once allowed
                if tid in self.ready_recvs:
                    self.ready_recvs.discard(tid)
                    self.post(tid, target, "direct")
                else:
                    self.deferred.add(tid)
                continue
            self.post_staged(tid)
        return moved

    def drain_peer_queues(self) -> bool:
        """Ordered mode: post each peer's messages in the shared order, as far as its sends are ready (no budget applies,
        so nothing later can hold a budget an earlier message needs)."""
        moved = False
        for q in self.peer_queues.values():
            while q:
                tid = q[0]
                if self.ts[tid].src == self.me:
                    if tid not in self.ready_sends:
                        break
                    self.ready_sends.discard(tid)
                    q.popleft()
                    self.send(tid)
                else:
                    q.popleft()
                    self.post_staged(tid)
                moved = True
        return moved

    def drain_send_queues(self) -> bool:
        """Post ready sends; sends to one peer leave in the shared order."""
        moved = False
        for q in self.send_queues.values():
            while q and q[0] in self.ready_sends:
                tid = q.popleft()
                self.ready_sends.discard(tid)
                moved = True
                self.send(tid)
        return moved

    def run_locals(self) -> bool:
        """Do the ready local copies and reductions (a copy onto itself is a no-op)."""
        moved = False
        while self.ready_locals:
            tid = self.ready_locals.popleft()
            t = self.ts[tid]
            if t.reduce or any(p.src_buf != p.dst_buf or p.src_off != p.dst_off for p in t.pieces):
                self.apply(tid, self.payload(tid).clone() if len(t.pieces) > 1 else None)
            self.counters["local"] += 1
            self.finish(tid)
            moved = True
        return moved

    def apply_arrived(self) -> bool:
        """Reduce or copy what has arrived of ready receives while the rest flows."""
        arrived = [tid for tid in self.landed if tid in self.ready_recvs]
        for tid in arrived:
            self.apply_landed(tid)
        return bool(arrived)

    def poll_completed(self) -> bool:
        """Complete the posted messages the backend reports done (NCCL)."""
        done = [k for k, (work, _, _) in self.pending.items() if work.is_completed()]
        for key in done:
            self.complete(key, waited=False)
        return bool(done)

    def block_on_earliest(self) -> None:
        """Wait (with the timeout) for the earliest pending message, naming it on the board; a failed wait is a HangError."""
        key = earliest(self.pending, self.plan.pos)
        work, _, kind = self.pending[key]
        tid = key[0]
        t = self.ts[tid]
        if self.board is not None:
            self.board.set(self.me, WAIT_SEND if kind == "send" else WAIT_RECV, t.step, tid, t.dst if kind == "send" else t.src)
        self.counters["blocking_waits"] += 1
        self.note(f"wait-{kind}", tid)
        try:
            work.wait(timedelta(seconds=self.timeout))
        except RuntimeError as exc:
            raise hang_error(self.me, t, kind, self.timeout, exc) from None
        if self.board is not None:
            self.board.set(self.me, 0)
        self.note(f"done-{kind}", tid)
        self.complete(key, waited=True)

    # -- transfers ------------------------------------------------------------------------------------------

    def note(self, event: str, tid: int) -> None:
        """Record a trace event when tracing."""
        if self.trace is not None:
            self.trace.append((perf_counter(), event, tid))

    def mark_ready(self, tid: int) -> None:
        """All local dependencies of `tid` are done: queue it by kind (a deferred in-place receive is posted now)."""
        t = self.ts[tid]
        if t.src == self.me and t.dst == self.me:
            self.ready_locals.append(tid)
        elif t.src == self.me:
            self.ready_sends.add(tid)
        elif tid in self.deferred:
            self.deferred.discard(tid)
            self.post(tid, self.direct_target(tid), "direct")
        else:
            self.ready_recvs.add(tid)

    def direct_target(self, tid: int):
        """The destination view when a receive can land in place (a copy of one piece), else None."""
        t = self.ts[tid]
        pieces = [p for p in t.pieces if p.count]
        if t.reduce or len(pieces) != 1 or not self.comm.tag_matching or self.ordered:
            return None
        return self.bufs[pieces[0].dst_buf].narrow(0, pieces[0].dst_off, pieces[0].count)

    def post(self, tid: int, tensor, kind: str) -> None:
        """Post one transfer's messages (one per slice), tagged (id, slice), in slice order."""
        t = self.ts[tid]
        parts = slices(tensor.numel(), self.slice_elems)
        self.left[tid] = len(parts)
        for j, (a, n) in enumerate(parts):
            piece = tensor.narrow(0, a, n)
            tag = message_tag(tid, j)
            work = self.comm.isend(piece, t.dst, tag) if kind == "send" else self.comm.irecv(piece, t.src, tag)
            self.pending[(tid, j)] = (work, piece, kind)
            self.counters["messages"] += 1
        self.note(f"post-{kind}", tid)

    def post_staged(self, tid: int) -> None:
        """Post a receive into its staging tensor, counted against the budget."""
        count = self.ts[tid].count
        self.stages[tid] = self.plan.stage(tid, count, self.dtype, self.device)
        self.post(tid, self.stages[tid], "recv")
        self.staged += count * self.elem

    def send(self, tid: int) -> None:
        """Post a ready send (or, for fault injection, finish it without sending)."""
        if tid == self.skip_send:
            self.finish(tid)
            return
        self.post(tid, self.payload(tid), "send")
        self.counters["sent"] += 1

    def finish(self, tid: int) -> None:
        """A transfer is done: its children lose a dependency and become ready at zero."""
        self.finished += 1
        self.note("finish", tid)
        for child in self.plan.children[tid]:
            self.missing[child] -= 1
            if self.missing[child] == 0:
                self.mark_ready(child)

    def apply(self, tid: int, data, lo: int = 0, hi: int | None = None) -> None:
        """Copy or reduce payload elements [lo, hi) of transfer `tid` into place (data None: read the sender's own buffer)."""
        at = 0
        t = self.ts[tid]
        hi = t.count if hi is None else hi
        bufs = self.bufs
        for piece in t.pieces:
            a, b = max(lo, at), min(hi, at + piece.count)
            if a < b:
                target = bufs[piece.dst_buf].narrow(0, piece.dst_off + a - at, b - a)
                chunk = data.narrow(0, a, b - a) if data is not None else bufs[piece.src_buf].narrow(0, piece.src_off + a - at, b - a)
                if t.reduce:
                    self.reduce_into(target, chunk)
                else:
                    target.copy_(chunk)
            at += piece.count

    def payload(self, tid: int):
        """What a transfer sends: a view of its one piece, or its pieces concatenated."""
        import torch

        pieces = [p for p in self.ts[tid].pieces if p.count]
        if len(pieces) == 1:
            p = pieces[0]
            return self.bufs[p.src_buf].narrow(0, p.src_off, p.count)
        if not pieces:
            return torch.empty(0, dtype=self.dtype, device=self.device)
        return torch.cat([self.bufs[p.src_buf].narrow(0, p.src_off, p.count) for p in pieces])

    def complete(self, key: tuple[int, int], waited: bool) -> None:
        """One message is done: a transfer finishes with its last slice; received slices wait to be applied."""
        work, _, kind = self.pending.pop(key)
        if not waited:
            work.wait()  # once only (a second wait on gloo waits for another message); on CUDA it orders the stream
        tid, j = key
        self.left[tid] -= 1
        if kind == "recv":
            self.landed.setdefault(tid, []).append(j)
        elif self.left[tid] == 0:
            del self.left[tid]
            self.finish(tid)

    def apply_landed(self, tid: int) -> None:
        """Apply the arrived slices of a staged receive; finish it after the last one."""
        stage = self.stages[tid]
        parts = slices(stage.numel(), self.slice_elems)
        for j in self.landed.pop(tid, []):
            a, n = parts[j]
            self.apply(tid, stage, a, a + n)
        if self.left[tid] == 0:
            del self.left[tid], self.stages[tid]
            self.ready_recvs.discard(tid)
            self.staged -= self.ts[tid].count * self.elem
            self.counters["received"] += 1
            self.note("applied", tid)
            self.finish(tid)
