"""What predict returns for one size."""

from __future__ import annotations

from dataclasses import dataclass

# A collective of count 0 is discarded before NCCL plans or launches anything: src/enqueue.cc, taskAppend,
# "// Empty collectives can be discarded." then "if (info->count == 0) return ncclSuccess;" (v2.28.9-1, lines
# 2554-2555; the same test opens taskAppend in v2.21.5-1). predict times such a call 0 s, its schedule DISCARDED.
DISCARDED = "discarded"


@dataclass(frozen=True)
class Prediction:
    """One size: NCCL's pick, the schedule that ran, and the predicted time."""

    bytes: int
    count: int
    nccl_algo: str
    proto: str
    algorithm: str
    channels: int
    time_s: float
    engine_s: float
    base_s: float
    reduced: str = ""  # how the engine's time was scaled from fewer nodes (simulator/nccl/symmetry.py); "" for a full run
