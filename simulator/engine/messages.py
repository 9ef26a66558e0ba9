"""Per-message regimes: a latency and a wire-byte factor that depend on a message's size (protocols, fitted segments)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import CollsimError


@dataclass(frozen=True)
class Regime:
    """Messages of [min_bytes, max_bytes) bytes wait `latency_s` more and put `byte_factor` wire bytes per payload byte.

    byte_factor > 1 models protocol overhead (NCCL's LL sends a flag with every 4 bytes: about 2;
    LL128: 128/120); < 1 a regime faster than the links' bandwidth; 0 a latency-only regime.
    """

    min_bytes: int = 0
    max_bytes: int | None = None
    latency_s: float = 0.0
    byte_factor: float = 1.0

    def covers(self, nbytes: int) -> bool:
        return self.min_bytes <= nbytes and (self.max_bytes is None or nbytes < self.max_bytes)


@dataclass(frozen=True)
class MessageModel:
    """Regimes by message size; a size no regime covers gets (0 s, factor 1): the links alone."""

    regimes: tuple[Regime, ...] = ()

    def __post_init__(self) -> None:
        for r in self.regimes:
            if not (math.isfinite(r.latency_s) and r.latency_s >= 0):
                raise CollsimError(f"message model: latency {r.latency_s!r}; expected seconds >= 0")
            if not (math.isfinite(r.byte_factor) and r.byte_factor >= 0):
                raise CollsimError(f"message model: byte factor {r.byte_factor!r}; expected a number >= 0")
            if r.min_bytes < 0 or (r.max_bytes is not None and r.max_bytes <= r.min_bytes):
                raise CollsimError(f"message model: size range [{r.min_bytes}, {r.max_bytes}) is empty or negative")

    @classmethod
    def uniform(cls, latency_s: float = 0.0, byte_factor: float = 1.0) -> MessageModel:
        """One regime for every size."""
        return cls((Regime(0, None, latency_s, byte_factor),))

    def at(self, nbytes: int) -> tuple[float, float]:
        """(extra latency in s, wire bytes per payload byte) of one message of `nbytes`."""
        for r in self.regimes:
            if r.covers(nbytes):
                return r.latency_s, r.byte_factor
        return 0.0, 1.0

    def table(self, payload: Sequence[int]) -> tuple[list[float], list[float]]:
        """Extra latency and byte factor of every message size in `payload` (one lookup per distinct size)."""
        seen = {n: self.at(n) for n in set(payload)}
        return [seen[n][0] for n in payload], [seen[n][1] for n in payload]
