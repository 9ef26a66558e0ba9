"""What is asked: a collective operation over p ranks on a buffer of a given size.

Sizes follow nccl-tests: for allreduce, broadcast and reduce the size is the per-rank buffer;
for allgather, reduce_scatter, alltoall, gather and scatter it is the total buffer
(count x element size x ranks). Blocks may be uneven when the count does not divide by p.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .errors import CollsimError
from .ops import SPECS, OpSpec, lookup

# Views of the specs (simulator/ops.py), for code that asks "which ops are ...".
OPS = tuple(SPECS)
ROOTED = tuple(name for name, s in SPECS.items() if s.rooted)
REDUCING = tuple(name for name, s in SPECS.items() if s.reduces)
TOTAL_SIZE_OPS = tuple(name for name, s in SPECS.items() if s.total_size)
REDOPS = ("sum", "prod", "max", "min")

DTYPES: dict[str, int] = {
    "int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8,
    "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8,
}
DTYPE_ALIASES = {"float": "float32", "half": "float16", "double": "float64", "int": "int32", "bf16": "bfloat16",
                 "char": "int8", "fp32": "float32", "fp16": "float16"}


def normalize_op(op: str) -> str:
    """The canonical op name ('reducescatter' and 'all_reduce' are accepted spellings)."""
    return lookup(op).name


def normalize_dtype(dtype: str) -> str:
    """The canonical dtype name."""
    key = DTYPE_ALIASES.get(str(dtype).lower(), str(dtype).lower())
    if key not in DTYPES:
        raise CollsimError(f"dtype: unknown element type {dtype!r}; expected one of {', '.join(DTYPES)}")
    return key


def busbw_factor(op: str, p: int) -> float:
    """nccl-tests' factor from algorithm bandwidth to bus bandwidth."""
    return lookup(op).bus_factor(p)


def split_counts(total: int, parts: int) -> np.ndarray:
    """`parts` near-equal integer counts that add up to `total` (the larger ones first)."""
    base, extra = divmod(int(total), int(parts))
    return np.array([base + 1] * extra + [base] * (int(parts) - extra), dtype=np.int64)


def offsets_of(counts: np.ndarray) -> np.ndarray:
    """Start offsets for consecutive pieces of the given counts (length len(counts) + 1)."""
    return np.concatenate(([0], np.cumsum(counts))).astype(np.int64)


@dataclass(frozen=True)
class Collective:
    """One collective call: op, rank count, size in bytes (nccl-tests meaning), dtype, root, redop."""

    op: str
    ranks: int
    nbytes: int
    dtype: str = "float32"
    root: int = 0
    redop: str = "sum"

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", normalize_op(self.op))
        object.__setattr__(self, "dtype", normalize_dtype(self.dtype))
        if isinstance(self.ranks, bool) or not isinstance(self.ranks, (int, np.integer)) or self.ranks < 1:
            raise CollsimError(f"ranks: {self.ranks!r} is not a rank count; expected an integer >= 1")
        object.__setattr__(self, "ranks", int(self.ranks))
        if not isinstance(self.nbytes, (int, np.integer)) or self.nbytes < 0:
            raise CollsimError(f"size: {self.nbytes!r} is not a byte count; expected an integer >= 0")
        object.__setattr__(self, "nbytes", int(self.nbytes))
        if self.nbytes % self.elem_size:
            raise CollsimError(
                f"size: {self.nbytes} bytes is not a whole number of {self.dtype} elements "
                f"({self.elem_size} bytes each); use a multiple of {self.elem_size} or a 1-byte dtype such as int8")
        if not 0 <= self.root < self.ranks:
            raise CollsimError(f"root: {self.root} is not a rank of {self.ranks}; expected 0..{self.ranks - 1}")
        if self.redop not in REDOPS:
            raise CollsimError(f"redop: unknown reduction {self.redop!r}; expected one of {', '.join(REDOPS)}")

    @property
    def spec(self) -> OpSpec:
        """The op's declaration (layout, start and end state, factors, names)."""
        return SPECS[self.op]

    @property
    def elem_size(self) -> int:
        """Bytes per element."""
        return DTYPES[self.dtype]

    @property
    def count(self) -> int:
        """Elements in the size the user gave (per-rank or total buffer, as nccl-tests means it)."""
        return self.nbytes // self.elem_size

    @property
    def block_counts(self) -> np.ndarray:
        """Elements of each rank's block when the buffer is cut into p blocks (uneven allowed)."""
        return split_counts(self.count, self.ranks)

    @property
    def block_offsets(self) -> np.ndarray:
        """Start of each rank's block in the full buffer (length p + 1)."""
        return offsets_of(self.block_counts)

    def pair_count(self, src: int, dst: int) -> int:
        """Alltoall: elements rank src sends to rank dst (every rank sends and receives `count`)."""
        base, extra = divmod(self.count, self.ranks)
        return base + (1 if (dst - src) % self.ranks < extra else 0)

    def pair_offset(self, rank: int, peer: int, side: str) -> int:
        """Alltoall: where the block for `peer` sits in `rank`'s input ('in') or where `peer`'s block lands in its output ('out')."""
        if side == "in":
            return sum(self.pair_count(rank, d) for d in range(peer))
        return sum(self.pair_count(s, rank) for s in range(peer))

    @cached_property
    def in_count(self) -> list[int]:
        """Elements of each rank's input buffer."""
        return [self.spec.in_count(self, r) for r in range(self.ranks)]

    @property
    def out_count(self) -> int:
        """Elements of each rank's output buffer (the full buffer: results sit at their nccl in-place offset)."""
        return self.count

    @property
    def busbw_factor(self) -> float:
        """nccl-tests' bus bandwidth factor for this op and rank count."""
        return busbw_factor(self.op, self.ranks)

    def algbw(self, seconds: float) -> float:
        """Algorithm bandwidth in bytes/s (nccl-tests: size / time; 0 for 0 bytes, which may take 0 s)."""
        if self.nbytes == 0:
            return 0.0
        return self.nbytes / seconds if seconds > 0 else float("inf")

    def busbw(self, seconds: float) -> float:
        """Bus bandwidth in bytes/s (nccl-tests: algbw x factor)."""
        return self.algbw(seconds) * self.busbw_factor

    def describe(self) -> str:
        """A short human label."""
        root = f" root={self.root}" if self.spec.rooted else ""
        return f"{self.op} p={self.ranks} {self.nbytes}B {self.dtype}{root}"
