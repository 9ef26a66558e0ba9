"""The Program model: process groups, and per rank an ordered list of operations on named streams.

Program order is the order of a rank's list (the order its host thread issues work). Each operation
runs on a stream; operations on one stream run one after another, different streams run
concurrently, joined by `after` dependencies and record/wait events (like CUDA events).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..collective import OPS

COMPUTE, SEND, RECV, RECORD, WAIT = "compute", "send", "recv", "record", "wait"
KINDS = (COMPUTE, SEND, RECV, RECORD, WAIT) + OPS
DEFAULT_STREAM = "main"


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while a large program is built or checked: they make millions of objects and no
    cycles, and each collection walks them all (a quarter of lint-program's CPU time at 768k operations)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass(frozen=True, slots=True)
class Op:
    """One operation of one rank. `op` is compute, send, recv, record, wait or a collective name."""

    op: str
    stream: str = DEFAULT_STREAM
    name: str | None = None
    after: tuple[str, ...] = ()
    seconds: float | None = None  # compute: duration (given, or flops / (peak * mfu))
    flops: float | None = None  # compute: work, when given as FLOPs
    gpu: str | None = None  # compute with flops: GPU preset (default: the program's)
    mfu: float | None = None  # compute with flops: achieved fraction of peak (default: the program's)
    group: str | None = None  # collective
    nbytes: int | None = None  # collective, send, recv (collectives: nccl-tests meaning of size)
    dtype: str = "bfloat16"
    root: int | None = None  # rooted collectives: a global rank, member of the group
    redop: str = "sum"
    algorithm: str | None = None
    peer: int | None = None  # send: destination, recv: source (global ranks)
    event: str | None = None  # record, wait

    @property
    def is_collective(self) -> bool:
        """True for the eight collectives."""
        return self.op in OPS

    @property
    def is_p2p(self) -> bool:
        """True for send and recv."""
        return self.op in (SEND, RECV)


@dataclass
class Program:
    """A world of ranks, named process groups (global ranks) and each rank's operations in program order."""

    world: int
    groups: dict[str, tuple[int, ...]]
    ranks: dict[int, list[Op]]
    source: str = "program"
    gpu: str | None = None
    mfu: float | None = None
    meta: dict = field(default_factory=dict)
    _deps: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def ops(self, rank: int) -> list[Op]:
        """Rank `rank`'s operations (empty when it has none)."""
        return self.ranks.get(rank, [])

    def streams(self, rank: int) -> list[str]:
        """The streams rank `rank` uses, in order of first use."""
        return list(dict.fromkeys(op.stream for op in self.ops(rank)))

    def count(self, kind: str) -> int:
        """How many operations of one kind the whole program has (over all ranks)."""
        return sum(op.op == kind for ops in self.ranks.values() for op in ops)
