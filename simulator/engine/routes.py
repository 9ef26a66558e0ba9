"""Every transfer's route, stored once per distinct (src, dst) pair: a table of pairs and each transfer's pair.

A schedule of millions of transfers crosses only thousands of distinct pairs (8192 GPUs in rings: 16.9 M transfers,
about 16 K pairs), so the links are kept per pair (CSR: starts, flat) and per pair as a tuple (for the one-at-a-time
paths); a transfer's links are its pair's. Local transfers (src == dst) have the last pair, which has no links.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .csr import gather


class Routes:
    """pair_of[t]: transfer t's pair; the links of pair k are flat[starts[k]:starts[k + 1]], and tuples[k]."""

    def __init__(self, pair_of: np.ndarray, tuples: Sequence[tuple[int, ...]]):
        self.tuples = list(tuples)
        self.pair_lengths = np.fromiter((len(r) for r in self.tuples), np.int64, len(self.tuples))
        self.starts = np.concatenate(([0], np.cumsum(self.pair_lengths))).astype(np.int64)
        self.flat = np.fromiter((link for r in self.tuples for link in r), np.int64, int(self.starts[-1]))
        self.pair_of = pair_of
        self.index = pair_of.tolist() if pair_of.size <= 1 << 20 else pair_of  # pair_of, as a list when it fits

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[int]]) -> Routes:
        """Routes with one pair per transfer: transfer i crosses rows[i]."""
        return cls(np.arange(len(rows), dtype=np.int64), [tuple(r) for r in rows])

    def __len__(self) -> int:
        return self.pair_of.size

    def of(self, t: int) -> tuple[int, ...]:
        """The links of transfer t."""
        return self.tuples[self.index[t]]

    def one_sided(self, pair_src: np.ndarray, pair_dst: np.ndarray, num_links: int) -> np.ndarray:
        """Per link: True if every pair crossing it has the same sender, or every one the same receiver (pair k runs
        from pair_src[k] to pair_dst[k]). With one port per rank such a link never carries two messages at once."""
        owner = np.repeat(np.arange(len(self.tuples)), self.pair_lengths)
        out = np.zeros(num_links, dtype=bool)
        for ends in (pair_src, pair_dst):
            lo = np.full(num_links, np.iinfo(np.int64).max)
            hi = np.full(num_links, -1)
            np.minimum.at(lo, self.flat, ends[owner])
            np.maximum.at(hi, self.flat, ends[owner])
            out |= lo == hi
        return out

    def lengths(self, ids: np.ndarray | None = None) -> np.ndarray:
        """How many links each transfer of `ids` (default: every transfer) crosses."""
        return self.pair_lengths[self.pair_of if ids is None else self.pair_of[ids]]

    def rows(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The links of every transfer of `ids`, concatenated, and for each the position in `ids` it came from."""
        return gather(self.starts, self.flat, self.pair_of[ids])

    def per_pair(self, values: np.ndarray, reduce: np.ufunc) -> np.ndarray:
        """`reduce` (np.add, np.minimum) of values[link] over each pair's links; pairs without links get nan."""
        out = np.full(len(self.tuples), np.nan)
        has = self.pair_lengths > 0
        if has.any():
            out[has] = reduce.reduceat(np.asarray(values, dtype=np.float64)[self.flat], self.starts[:-1][has])
        return out
