"""One declaration per collective: everything collsim knows about an op, stated once.

Like nccl-tests, each op is one small entry. Its layout words say where data sits:

- `send`: a rank's input buffer (nccl's sendbuff) is the 'full' buffer (count elements), its own
  'block' of the full buffer (block r of p near-equal blocks; it sits at that block's offset in
  nccl's in-place layout), or 'pairs' (one block per destination peer, alltoall).
- `recv`: what a rank's result is: the 'full' buffer, or its own 'block' of it.
- `senders` / `receivers`: 'all' ranks, or only the 'root'.
- `reduces`: results combine every sender's data with the redop (else each element has one source).

From these the spec derives, for any Collective: input counts, the in-place offset, the start state
(collsim's 'out' starts as nccl's in-place view of the input on every sender, except a 'pairs'
layout, whose output starts empty), the expected end state as `Part`s (which inputs each result
region combines), result regions, and whether the size is per rank or total (nccl-tests' meaning).
It also holds the numbers and names other code needs: the busbw factor, the bandwidth lower bound,
the torch.distributed call, the MSCCL name and the algorithm a program runs by default. Adding a
collective is one entry in `SPECS`, written with keywords (the fields are keyword-only), plus its
algorithms in simulator/algorithms/.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import CollsimError

if TYPE_CHECKING:
    from .collective import Collective

LAYOUTS = ("full", "block", "pairs")
WHO = ("all", "root")


@dataclass(frozen=True)
class Part:
    """`count` elements at `off` in a buffer, made of the inputs in `sources`: (rank, offset in its input) each.

    With one source the region is a copy of that input region; with several it is their reduction,
    combined in the order given.
    """

    off: int
    count: int
    sources: tuple[tuple[int, int], ...]


@dataclass(frozen=True, kw_only=True)
class OpSpec:
    """Everything about one collective; see the module docstring for the layout words."""

    name: str
    send: str
    recv: str
    senders: str
    receivers: str
    reduces: bool
    bus_factor: Callable[[int], float]  # nccl-tests: busbw = algbw x factor(p)
    torch: str  # torch.distributed function
    torch_args: Callable[[Any], tuple]  # its positional arguments from verify.native's NativeArgs (group= is added)
    msccl: str  # MSCCL's <algo coll=...>
    program_default: str  # the algorithm a program's call runs unless it or the run names one (simulator/algorithms)
    msccl_per_rank: bool = False  # MSCCL's nchunksperloop counts one rank's block (executor sizeMultiplier 1)
    aliases: tuple[str, ...] = ()
    bound: Callable[[int], float] | None = None  # bytes some port must carry, x n; None: the bus factor

    def __post_init__(self) -> None:
        if self.send not in LAYOUTS or self.recv not in ("full", "block"):
            raise ValueError(f"{self.name}: send must be one of {LAYOUTS} and recv full or block")
        if self.senders not in WHO or self.receivers not in WHO:
            raise ValueError(f"{self.name}: senders and receivers must be one of {WHO}")

    # ---- classification -----------------------------------------------------------------------
    @property
    def rooted(self) -> bool:
        """True when a root rank is the only sender or the only receiver."""
        return "root" in (self.senders, self.receivers)

    @property
    def total_size(self) -> bool:
        """True when nccl-tests' size is the total buffer (count x ranks), not the per-rank buffer."""
        return (self.send, self.recv) != ("full", "full")

    @property
    def in_place(self) -> bool:
        """True when 'out' starts as nccl's in-place view of the input (False: it starts empty)."""
        return self.send != "pairs"

    def bandwidth_bound(self, p: int) -> float:
        """Bytes, as a multiple of n, that must cross some rank's single port (Thakur et al. 2005)."""
        return (self.bound or self.bus_factor)(p)

    # ---- layout -------------------------------------------------------------------------------
    def in_count(self, coll: Collective, rank: int) -> int:
        """Elements of `rank`'s input buffer."""
        return int(coll.block_counts[rank]) if self.send == "block" else coll.count

    def in_place_offset(self, coll: Collective, rank: int) -> int:
        """Where `rank`'s input sits in the full buffer (nccl's in-place layout)."""
        return int(coll.block_offsets[rank]) if self.send == "block" else 0

    def owned_block(self, coll: Collective, rank: int) -> tuple[int, int]:
        """(offset, count) of the block of the full buffer that `rank` owns."""
        offs = coll.block_offsets
        return int(offs[rank]), int(offs[rank + 1] - offs[rank])

    def holds_input(self, coll: Collective, rank: int) -> bool:
        """True when `rank`'s input is part of the collective (every rank, or the root only)."""
        return self.senders == "all" or rank == coll.root

    def input_chunks(self, coll: Collective, rank: int) -> np.ndarray:
        """Per element of `rank`'s input, the block it belongs to (block index, or destination peer for 'pairs')."""
        n = self.in_count(coll, rank)
        if self.send == "block":
            return np.full(n, rank, dtype=np.int64)
        if self.send == "pairs":
            sizes = [coll.pair_count(rank, d) for d in range(coll.ranks)]
        else:
            sizes = coll.block_counts
        return np.repeat(np.arange(coll.ranks, dtype=np.int64), sizes)

    # ---- start and end state ------------------------------------------------------------------
    def start(self, coll: Collective, rank: int, buf: str) -> list[Part]:
        """What a buffer of `rank` holds before the schedule runs (everything else holds nothing)."""
        if buf == "scratch" or not self.holds_input(coll, rank):
            return []
        n = self.in_count(coll, rank)
        if buf == "in":
            return [Part(0, n, ((rank, 0),))]
        if buf == "out":
            return [Part(self.in_place_offset(coll, rank), n, ((rank, 0),))] if self.in_place else []
        raise CollsimError(f"buffer: unknown buffer {buf!r}; expected one of in, out, scratch")

    def result_ranks(self, coll: Collective) -> list[int]:
        """Ranks that must hold a result."""
        return list(range(coll.ranks)) if self.receivers == "all" else [coll.root]

    def result_regions(self, coll: Collective, rank: int) -> list[tuple[int, int]]:
        """(offset, count) of the parts of 'out' that hold `rank`'s result (empty when it holds none)."""
        if rank not in self.result_ranks(coll):
            return []
        return [self.owned_block(coll, rank)] if self.recv == "block" else [(0, coll.count)]

    def result(self, coll: Collective, rank: int) -> list[Part]:
        """What `rank`'s 'out' must hold after the collective, region by region (empty parts left out)."""
        senders = range(coll.ranks) if self.senders == "all" else [coll.root]
        parts: list[Part] = []
        for lo, n in self.result_regions(coll, rank):
            hi = lo + n
            if self.send == "full":
                parts.append(Part(lo, n, tuple((s, lo) for s in senders)))
                continue
            for s in senders:  # each sender's data lands in one place of the full buffer
                if self.send == "block":
                    at, src_off, cnt = self.in_place_offset(coll, s), 0, self.in_count(coll, s)
                else:
                    at, src_off, cnt = coll.pair_offset(rank, s, "out"), coll.pair_offset(s, rank, "in"), coll.pair_count(s, rank)
                a, b = max(lo, at), min(hi, at + cnt)
                if b > a:
                    parts.append(Part(a, b - a, ((s, src_off + a - at),)))
        out = [pt for pt in parts if pt.count > 0]
        if not self.reduces and any(len(pt.sources) > 1 for pt in out):
            raise ValueError(f"{self.name}: a result region has several sources but the op does not reduce")
        return out


def _ring(p: int) -> float:
    return (p - 1) / p


SPECS: dict[str, OpSpec] = {s.name: s for s in (
    OpSpec(name="allreduce", send="full", recv="full", senders="all", receivers="all", reduces=True,
           bus_factor=lambda p: 2 * (p - 1) / p, torch="all_reduce", torch_args=lambda a: (a.recv, a.op),
           msccl="allreduce", program_default="ring", aliases=("all_reduce",)),
    OpSpec(name="allgather", send="block", recv="full", senders="all", receivers="all", reduces=False,
           bus_factor=_ring, torch="all_gather_into_tensor", torch_args=lambda a: (a.recv, a.send),
           msccl="allgather", program_default="ring", aliases=("all_gather",)),
    OpSpec(name="reduce_scatter", send="full", recv="block", senders="all", receivers="all", reduces=True,
           bus_factor=_ring, torch="reduce_scatter_tensor", torch_args=lambda a: (a.recv, a.send, a.op),
           msccl="reducescatter", program_default="ring", aliases=("reducescatter",)),
    OpSpec(name="broadcast", send="full", recv="full", senders="root", receivers="all", reduces=False,
           bus_factor=lambda p: 1.0, torch="broadcast", torch_args=lambda a: (a.recv, a.root),
           msccl="broadcast", program_default="pipelined_chain", aliases=("bcast",)),
    OpSpec(name="reduce", send="full", recv="full", senders="all", receivers="root", reduces=True,
           bus_factor=lambda p: 1.0, torch="reduce", torch_args=lambda a: (a.recv, a.root, a.op),
           msccl="reduce", program_default="binomial"),
    OpSpec(name="alltoall", send="pairs", recv="full", senders="all", receivers="all", reduces=False,
           bus_factor=_ring, torch="all_to_all_single", torch_args=lambda a: (a.recv, a.send, a.recv_splits, a.send_splits),
           msccl="alltoall", program_default="direct", aliases=("all_to_all",)),
    OpSpec(name="gather", send="block", recv="full", senders="all", receivers="root", reduces=False,
           bus_factor=_ring, torch="gather", torch_args=lambda a: (a.send, a.blocks, a.root),
           msccl="gather", msccl_per_rank=True, program_default="direct"),
    OpSpec(name="scatter", send="full", recv="block", senders="root", receivers="all", reduces=False,
           bus_factor=_ring, torch="scatter", torch_args=lambda a: (a.recv, a.blocks, a.root),
           msccl="scatter", msccl_per_rank=True, program_default="direct"),
)}

ALIASES: dict[str, str] = {alias: s.name for s in SPECS.values() for alias in s.aliases}


def lookup(op: str) -> OpSpec:
    """The spec of an op by canonical name or accepted spelling ('all-reduce', 'reducescatter', ...)."""
    key = str(op).strip().lower().replace("-", "_")
    spec = SPECS.get(ALIASES.get(key, key))
    if spec is None:
        raise CollsimError(f"op: unknown collective {op!r}; expected one of {', '.join(SPECS)}")
    return spec
