"""EngineOptions: the knobs of one run, and their checks."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import CollsimError
from ..topology.model import Topology
from .messages import MessageModel


@dataclass(frozen=True)
class EngineOptions:
    """Knobs of a run: reduction cost, ports, contention, per-message header and regimes, stragglers and background load."""

    gamma: float = 0.0                      # s per reduced byte
    ports: int = 1                          # sends (and receives) a rank may have in flight; 0 = unlimited
    contention: bool = True                 # share link bandwidth max-min fairly; False = every flow gets its bottleneck
    header_bytes: int = 0                   # bytes added to every network message (SMPI adds 16)
    start_delay: Mapping[int, float] = field(default_factory=dict)   # rank -> s it starts late
    slowdown: Mapping[int, float] = field(default_factory=dict)      # rank -> factor on its reduction time
    background: Mapping[int, float] = field(default_factory=dict)    # link id -> share (0..1) of bandwidth taken
    messages: MessageModel | None = None    # per-message latency and wire-byte factor by size (None: the links alone)

    def check(self, ranks: int, topology: Topology) -> None:
        """Raise CollsimError on values the engine cannot run with."""
        if not (self.gamma >= 0 and math.isfinite(self.gamma)):
            raise CollsimError(f"gamma: {self.gamma!r} must be a number >= 0 (s per byte)")
        if isinstance(self.ports, bool) or not isinstance(self.ports, int) or self.ports < 0:
            raise CollsimError(f"ports: {self.ports!r}; expected an integer >= 1, or 0 for unlimited")
        if isinstance(self.header_bytes, bool) or not isinstance(self.header_bytes, int) or self.header_bytes < 0:
            raise CollsimError(f"header_bytes: {self.header_bytes!r}; expected an integer >= 0")
        if self.messages is not None and not isinstance(self.messages, MessageModel):
            raise CollsimError(f"messages: {self.messages!r}; expected a MessageModel or None")
        for what, table, ok, accepted in (("straggler", self.start_delay, lambda v: v >= 0, "a delay >= 0"),
                                          ("slowdown", self.slowdown, lambda v: v > 0, "a factor > 0")):
            for rank, value in table.items():
                if not 0 <= rank < ranks:
                    raise CollsimError(f"{what}: rank {rank} is not one of 0..{ranks - 1}")
                if not (math.isfinite(value) and ok(value)):
                    raise CollsimError(f"{what}: rank {rank} has {value!r}; expected {accepted}")
        for link, share in self.background.items():
            if not 0 <= link < topology.num_links:
                raise CollsimError(f"congestion: link {link} does not exist; {topology.name} has links 0..{topology.num_links - 1}")
            if not 0 <= share < 1:
                raise CollsimError(f"congestion: share {share!r} on link {link}; expected 0 <= share < 1")
