"""The schedule executor's parts without a process group: slicing, posting order, the wait it blocks on, error naming,
and the step loop itself run by threads over an in-process message layer (tag matching like gloo, or posting order
per pair like NCCL, where mismatched tags are recorded as errors).

Expected results come from verify.data (simulator.semantics' definition of each collective), never from the executor.
"""

from __future__ import annotations

import threading
from collections import deque
from datetime import timedelta

import pytest

torch = pytest.importorskip("torch")

from simulator.algorithms import all_specs, build_schedule  # noqa: E402
from simulator.collective import Collective  # noqa: E402
from simulator.schedule import Piece, Schedule, Transfer  # noqa: E402
from verify.data import check_rank, expected, fresh_buffers, rank_input  # noqa: E402
from verify.executor import (  # noqa: E402
    MAX_SLICES,
    RankPlan,
    earliest,
    execute,
    hang_error,
    message_tag,
    posting_order,
    slices,
)
from verify.launch import HangError  # noqa: E402

# ---------------------------------------------------------------------------------------------------------
# Pure parts


def test_slices_uncut_when_off_or_small():
    assert slices(10, 0) == [(0, 10)]
    assert slices(10, 10) == [(0, 10)]
    assert slices(0, 4) == [(0, 0)]


def test_slices_cut_into_slice_sized_messages():
    assert slices(10, 4) == [(0, 4), (4, 4), (8, 2)]
    assert slices(9, 3) == [(0, 3), (3, 3), (6, 3)]


def test_slices_capped_at_max_slices():
    count = MAX_SLICES * 10 + 1  # slice of 1 element would give count messages; the cap makes them ceil(count / MAX_SLICES) = 11
    parts = slices(count, 1)
    assert len(parts) <= MAX_SLICES
    assert parts[0] == (0, 11)
    assert [a for a, _ in parts] == list(range(0, count, 11))
    assert sum(n for _, n in parts) == count


def test_message_tags_are_distinct():
    tags = {message_tag(tid, j) for tid in range(20) for j in range(MAX_SLICES)}
    assert len(tags) == 20 * MAX_SLICES


def _hand_schedule() -> Schedule:
    """3 ranks: 0->1, 2->0, local 0->0, 0->1 again, 1->0, 0->2 (ids in that order; no dependencies)."""
    coll = Collective("allgather", 3, 12, "float32")
    piece = Piece("in", 0, "out", 0, 1)
    pairs = [(0, 1), (2, 0), (0, 0), (0, 1), (1, 0), (0, 2)]
    return Schedule(coll, "hand", [Transfer(i, s, d, (piece,), False, (), 0) for i, (s, d) in enumerate(pairs)])


def test_posting_order_sends_per_peer_and_receives_in_shared_order():
    plan = RankPlan.build(_hand_schedule(), 0)
    order = posting_order(plan, ordered=False)
    assert {peer: list(q) for peer, q in order.send_queues.items()} == {1: [0, 3], 2: [5]}
    assert order.recvs == [1, 4]
    assert order.peer_queues == {}


def test_posting_order_ordered_mode_puts_every_message_with_a_peer_in_one_queue():
    plan = RankPlan.build(_hand_schedule(), 0)
    order = posting_order(plan, ordered=True)
    assert {peer: list(q) for peer, q in order.peer_queues.items()} == {1: [0, 3, 4], 2: [1, 5]}
    assert order.send_queues == {} and order.recvs == []


def test_posting_order_of_a_rank_with_no_part():
    coll = Collective("allgather", 3, 12, "float32")
    sched = Schedule(coll, "hand", [Transfer(0, 0, 1, (Piece("in", 0, "out", 0, 1),), False, (), 0)])
    order = posting_order(RankPlan.build(sched, 2), ordered=False)
    assert order.send_queues == {} and order.recvs == []


def test_earliest_follows_the_shared_order_then_the_slice():
    keys = [(5, 0), (3, 1), (3, 0), (7, 2)]
    assert earliest(keys, {3: 0, 5: 1, 7: 2}) == (3, 0)
    assert earliest(keys, {7: 0, 5: 1, 3: 2}) == (7, 2)


def test_hang_error_names_rank_step_transfer_and_peer():
    t = Transfer(4, 2, 3, (), False, (), 6)
    send = hang_error(2, t, "send", 1.5, RuntimeError("Timed out waiting 1500ms for send operation to complete"))
    assert isinstance(send, HangError)
    assert str(send) == "rank 2 timed out after 1.5 s at step 6 (transfer #4) waiting for its send to be taken by rank 3"
    recv = hang_error(3, t, "direct", 2.0, RuntimeError("Connection closed by peer [127.0.0.1]:1234\nmore"))
    assert str(recv) == ("rank 3 timed out after 2 s at step 6 (transfer #4) waiting for a message from rank 2 "
                         "(Connection closed by peer [127.0.0.1]:1234)")
    assert (recv.rank, recv.peer, recv.transfer, recv.step) == (3, 2, 4, 6)


# ---------------------------------------------------------------------------------------------------------
# The step loop over an in-process message layer


class _Work:
    def __init__(self):
        self.done = threading.Event()

    def wait(self, timeout: timedelta | None = None) -> bool:
        if not self.done.wait(None if timeout is None else timeout.total_seconds()):
            raise RuntimeError("loopback: timed out")
        return True

    def is_completed(self) -> bool:
        return self.done.is_set()


class Loopback:
    """Messages between threads of one process. The payload is copied when a send meets its receive, so a sender
    that overwrites its buffer before its send completes is caught as wrong data."""

    def __init__(self, tag_matching: bool):
        self.tag_matching = tag_matching
        self.lock = threading.Lock()
        self.waiting: dict[str, dict[tuple, deque]] = {"send": {}, "recv": {}}
        self.errors: list[str] = []

    def post(self, kind: str, src: int, dst: int, tag: int, tensor) -> _Work:
        key = (src, dst, tag) if self.tag_matching else (src, dst)
        work = _Work()
        with self.lock:
            other = self.waiting["recv" if kind == "send" else "send"].get(key)
            if not other:
                self.waiting[kind].setdefault(key, deque()).append((tensor, tag, work))
                return work
            their_tensor, their_tag, their_work = other.popleft()
            if their_tag != tag:
                self.errors.append(f"{src}->{dst}: send tag {tag if kind == 'send' else their_tag} met receive tag "
                                   f"{their_tag if kind == 'send' else tag}")
            sent, into = (tensor, their_tensor) if kind == "send" else (their_tensor, tensor)
            if sent.numel() != into.numel():
                self.errors.append(f"{src}->{dst} tag {tag}: {sent.numel()} elements sent into {into.numel()}")
            else:
                into.copy_(sent)
            work.done.set()
            their_work.done.set()
        return work


class RankComm:
    """One rank's view of the loopback (the executor's Comm)."""

    def __init__(self, net: Loopback, rank: int):
        self.net, self.rank, self.tag_matching = net, rank, net.tag_matching

    def isend(self, tensor, peer: int, tag: int):
        return self.net.post("send", self.rank, peer, tag, tensor)

    def irecv(self, tensor, peer: int, tag: int):
        return self.net.post("recv", peer, self.rank, tag, tensor)


def run_threads(schedule: Schedule, tag_matching: bool = True, timeout: float = 20.0, seed: int = 1, **options):
    """Every rank of `schedule` in its own thread over one loopback; (per-rank 'out', counters, errors, loopback errors)."""
    coll = schedule.collective
    net = Loopback(tag_matching)
    inputs = [rank_input(coll, r, "exact", seed) for r in range(coll.ranks)]
    bufs = [fresh_buffers(coll, schedule.scratch_count, r, inputs[r], torch.device("cpu")) for r in range(coll.ranks)]
    counters: list = [None] * coll.ranks
    errors: list = [None] * coll.ranks

    def rank_main(r: int) -> None:
        try:
            counters[r] = execute(RankPlan.build(schedule, r), bufs[r], timeout=timeout, comm=RankComm(net, r), **options)
        except BaseException as exc:  # reported to the test
            errors[r] = exc

    threads = [threading.Thread(target=rank_main, args=(r,), daemon=True) for r in range(coll.ranks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 10.0)
    assert not any(t.is_alive() for t in threads), "a rank's thread is still running"
    return [b["out"] for b in bufs], counters, errors, net.errors, inputs


def assert_correct(schedule: Schedule, **options) -> list[dict]:
    outs, counters, errors, net_errors, inputs = run_threads(schedule, **options)
    assert errors == [None] * len(outs)
    assert net_errors == []
    coll = schedule.collective
    want = expected(coll, inputs)
    for r, out in enumerate(outs):
        outcome = check_rank(out, want.parts.get(r, []), f"{schedule.algorithm} {coll.describe()}", r)
        assert outcome.wrong == 0, outcome.first
    return counters


SPECS = all_specs()
MODES = {
    "gloo-like": {},
    "sliced": {"slice_bytes": 12},  # 3 int32 per message
    "ordered": {"ordered": True},
    "tight-budget": {"budget_bytes": 1},  # one staged receive at a time
    "nccl-like": {"tag_matching": False},  # posting order per pair: the executor must post both sides alike
    "nccl-like-sliced": {"tag_matching": False, "slice_bytes": 8},
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("spec", SPECS, ids=[f"{s.op}-{s.name}" for s in SPECS])
def test_step_loop_runs_every_algorithm_correctly(spec, mode):
    p = 4
    if spec.refusal(p):
        p = 2
    coll = Collective(spec.op, p, 4 * 4 * 7 * p, "int32", root=1 % p)  # 7 int32 per block: uneven slices
    schedule = build_schedule(coll, spec.name)
    counters = assert_correct(schedule, **MODES[mode])
    ts = schedule.transfers
    for r, c in enumerate(counters):
        sends = [t for t in ts if t.src == r and t.dst != r]
        assert c["sent"] == len(sends)
        assert c["received"] == sum(1 for t in ts if t.dst == r and t.src != r and not _lands_in_place(t, MODES[mode]))
        assert c["local"] == sum(1 for t in ts if t.src == r and t.dst == r)


def _lands_in_place(t: Transfer, options: dict) -> bool:
    """A receive the executor lands in place (a copy of one piece, tag matching, not ordered): not counted as received."""
    in_place = options.get("tag_matching", True) and not options.get("ordered", False)
    return in_place and not t.reduce and len([p for p in t.pieces if p.count]) == 1


def test_step_loop_counts_one_message_per_slice():
    coll = Collective("allgather", 2, 2 * 40, "int32")  # one 10-element block per rank
    schedule = build_schedule(coll, "ring")
    counters = assert_correct(schedule, slice_bytes=12)  # 3 elements per message: 10 -> 4 messages each way
    assert [c["messages"] for c in counters] == [8, 8]


def test_step_loop_a_missing_send_is_a_hang_naming_the_receiver_and_sender():
    coll = Collective("allgather", 2, 2 * 16, "int32")
    schedule = build_schedule(coll, "ring")
    skipped = next(t for t in schedule.transfers if t.src == 0 and t.dst == 1)
    outs, counters, errors, net_errors, _ = run_threads(schedule, timeout=0.5, skip_send=skipped.id)
    assert isinstance(errors[1], HangError)
    assert (errors[1].rank, errors[1].peer, errors[1].transfer) == (1, 0, skipped.id)
    assert "waiting for a message from rank 0" in str(errors[1])


def test_step_loop_reports_a_trace():
    coll = Collective("allgather", 2, 2 * 16, "int32")
    schedule = build_schedule(coll, "ring")
    trace: list = []
    net = Loopback(True)
    inputs = [rank_input(coll, r, "exact", 0) for r in range(2)]
    bufs = [fresh_buffers(coll, 0, r, inputs[r], torch.device("cpu")) for r in range(2)]
    other = threading.Thread(target=execute, args=(RankPlan.build(schedule, 1), bufs[1]), kwargs={"comm": RankComm(net, 1)})
    other.start()
    execute(RankPlan.build(schedule, 0), bufs[0], comm=RankComm(net, 0), trace=trace)
    other.join(10)
    events = [e for _, e, _ in trace]
    assert events[0].startswith("post-")
    assert "post-send" in events
    times = [t for t, _, _ in trace]
    assert times == sorted(times)
