"""Timing done the nccl-tests way: warm-up, many iterations, a barrier before each, the slowest rank per iteration."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Timing:
    """Per-iteration times (max over ranks) summarised: median, spread and the raw samples, in seconds."""

    median_s: float
    min_s: float
    max_s: float
    p25_s: float
    p75_s: float
    iters: int
    samples: tuple[float, ...]

    @classmethod
    def of(cls, samples) -> Timing:
        """Summary of per-iteration samples."""
        a = np.asarray(samples, dtype=np.float64)
        return cls(float(np.median(a)), float(a.min()), float(a.max()), float(np.percentile(a, 25)),
                   float(np.percentile(a, 75)), int(a.size), tuple(float(x) for x in a))

    @property
    def spread(self) -> float:
        """Interquartile range over the median (0 = perfectly steady)."""
        return (self.p75_s - self.p25_s) / self.median_s if self.median_s > 0 else 0.0

    def to_dict(self, samples: bool = False) -> dict:
        """Plain data (without the raw samples unless asked)."""
        d = asdict(self)
        d["spread"] = self.spread
        if not samples:
            d.pop("samples")
        return d


def time_collectively(fn: Callable[[], None], reset: Callable[[], None], iters: int, warmup: int,
                      device=None, group=None) -> Timing:
    """Time `fn` on every rank (call on all ranks together); each sample is the slowest rank's time for that iteration.

    `reset` runs before every iteration, outside the timed region. On CUDA the region is timed
    with CUDA events; on CPU with perf_counter.
    """
    import time

    import torch
    import torch.distributed as dist

    cuda = device is not None and getattr(device, "type", "cpu") == "cuda"
    for _ in range(warmup):
        reset()
        fn()
    local = []
    for _ in range(iters):
        reset()
        if cuda:
            torch.cuda.synchronize(device)
        dist.barrier(group=group)
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            local.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            local.append(time.perf_counter() - t0)
    times = torch.tensor(local, dtype=torch.float64, device=device if cuda else "cpu")
    dist.all_reduce(times, dist.ReduceOp.MAX, group=group)
    return Timing.of(times.cpu().tolist())
