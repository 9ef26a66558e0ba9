"""A shared status board: what each rank of a local world is doing, for diagnosing hangs from outside."""

from __future__ import annotations

from dataclasses import dataclass

# Per rank: state, step, transfer id, peer, heartbeat.
FIELDS = 5
IDLE, WAIT_RECV, WAIT_SEND, COLLECTIVE, EXECUTED, FINISHED = range(6)
STATE_NAMES = {IDLE: "running", WAIT_RECV: "waiting to receive", WAIT_SEND: "waiting for a send to complete",
               COLLECTIVE: "in a collective", EXECUTED: "past the schedule", FINISHED: "finished"}


@dataclass
class RankStatus:
    """One rank's last reported state."""

    rank: int
    state: int
    step: int
    transfer: int
    peer: int
    beats: int


class Board:
    """Per-rank status in shared memory (a multiprocessing Array), or a private list under torchrun."""

    def __init__(self, ranks: int, array=None):
        self.ranks = ranks
        self.array = array if array is not None else [0] * (ranks * FIELDS)

    def set(self, rank: int, state: int, step: int = -1, transfer: int = -1, peer: int = -1) -> None:
        """Record what `rank` is doing now and count a heartbeat."""
        base = rank * FIELDS
        a = self.array
        a[base], a[base + 1], a[base + 2], a[base + 3] = state, step, transfer, peer
        a[base + 4] += 1

    def beat(self, rank: int) -> None:
        """Count progress without changing the state."""
        self.array[rank * FIELDS + 4] += 1

    def status(self, rank: int) -> RankStatus:
        """The last state `rank` reported."""
        base = rank * FIELDS
        return RankStatus(rank, *(int(v) for v in self.array[base:base + FIELDS]))

    def beats(self) -> tuple[int, ...]:
        """Heartbeat counters of all ranks (a change means someone made progress)."""
        return tuple(int(self.array[r * FIELDS + 4]) for r in range(self.ranks))


def blame(board: Board) -> str | None:
    """Name the root of a hang: the blocked rank waiting for the earliest transfer (ids follow a dependency order)."""
    statuses = [board.status(r) for r in range(board.ranks)]
    waiting = {s.rank: s for s in statuses if s.state in (WAIT_RECV, WAIT_SEND)}
    if not waiting:
        return None
    cur = min(waiting.values(), key=lambda s: (s.transfer, s.rank))
    peer = statuses[cur.peer] if 0 <= cur.peer < board.ranks else None
    verb = "a message from" if cur.state == WAIT_RECV else "its send to be taken by"
    text = f"rank {cur.rank} is stuck at step {cur.step} (transfer #{cur.transfer}) waiting for {verb} rank {cur.peer}"
    if peer is None:
        return text
    if peer.state in (WAIT_RECV, WAIT_SEND):
        if peer.transfer > cur.transfer:
            return (text + f"; rank {peer.rank} went past that transfer without doing its part "
                    f"(it now waits at step {peer.step}, transfer #{peer.transfer}, for rank {peer.peer})")
        return text + f"; rank {peer.rank} waits at step {peer.step} (transfer #{peer.transfer}) for rank {peer.peer}"
    return text + f"; rank {peer.rank} is {STATE_NAMES.get(peer.state, 'in an unknown state')}"
