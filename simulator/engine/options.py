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
    """Knobs of a run: reduction cost, ports, contention, per-message header, eager sends and regimes, stragglers and
    background load."""

    gamma: float = 0.0                      # s per reduced byte
    ports: int = 1                          # sends (and receives) a rank may have in flight; 0 = unlimited
    contention: bool = True                 # share link bandwidth max-min fairly; False = every flow gets its bottleneck
    latency_weighted: bool = False          # max-min shares in inverse proportion to each flow's route latency (SimGrid
                                            # CM02's RTT unfairness); False: equal shares
    header_bytes: int = 0                   # bytes added to every network message (SMPI adds 16)
    eager_bytes: int = 0                    # sends of fewer payload bytes are eager: the sender's port frees when the
                                            # message starts (SMPI's send-is-detached-thresh, 65536); 0 = none
    start_delay: Mapping[int, float] = field(default_factory=dict)   # rank -> s it starts late
    slowdown: Mapping[int, float] = field(default_factory=dict)      # rank -> factor on its reduction time
    background: Mapping[int, float] = field(default_factory=dict)    # link id -> share (0..1) of bandwidth taken
    messages: MessageModel | None = None    # per-message latency and wire-byte factor by size (None: the links alone)

    def check(self, ranks: int, topology: Topology) -> None:
        """Raise CollsimError on values the engine cannot run with."""
        if not (self.gamma >= 0 and math.isfinite(self.gamma)):
            raise CollsimError(f"gamma: {self.gamma!r} must be a number >= 0 (s per byte)")
        _check_counts(self.ports, self.header_bytes, self.eager_bytes)
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


def _check_counts(ports: int, header_bytes: int, eager_bytes: int) -> None:
    """Raise CollsimError unless ports, header_bytes and eager_bytes are integers >= 0."""
    for name, value, accepted in (("ports", ports, "an integer >= 1, or 0 for unlimited"),
                                  ("header_bytes", header_bytes, "an integer >= 0"),
                                  ("eager_bytes", eager_bytes, "an integer >= 0 (0: every send rendezvous)")):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise CollsimError(f"{name}: {value!r}; expected {accepted}")
