"""Calibration: ping-pong between rank pairs for alpha and beta, timed local reductions for gamma.

The result is a simulator LinkProfile (YAML or JSON) that `collsim cost`, `compare` and the
simulator load.
"""

from __future__ import annotations

import platform
import time
from dataclasses import dataclass

import numpy as np

from simulator.profile import LinkProfile, Segment

from .fit import LineFit, fit_alpha_beta, fit_rate
from .launch import World

DEFAULT_SIZES = tuple(2**k for k in range(0, 27, 2))  # 1 B .. 64 MiB, every factor of 4
GAMMA_SIZES = tuple(2**k for k in range(20, 25))  # 1 .. 16 MiB of float32 reduced in place


@dataclass(frozen=True)
class CalibrateRequest:
    """Sizes, iterations and the pattern; `synthetic` adds a known delay (alpha_s, beta) to every message.

    Patterns: 'pingpong' (pairs (0,1), (2,3), ... bounce a message; one-way = round trip / 2),
    'ring' (every rank sends to the next and receives from the previous at once, as one step of a
    ring collective does; one-way = the step's time) and 'executor' (the same one-step shift,
    but as a one-transfer-per-rank Schedule run by the schedule executor, so its per-message
    overhead is part of alpha). Ping-pong is the textbook measurement; the other two measure a
    message under the same concurrency (and, for 'executor', the same code) as the timed schedules.
    """

    sizes: tuple[int, ...] = DEFAULT_SIZES
    iters: int = 20
    warmup: int = 3
    concurrent: bool = True
    pattern: str = "pingpong"
    gamma: bool = True
    synthetic: tuple[float, float] | None = None
    time_budget_s: float = 1.0


def pingpong_job(world: World, req: CalibrateRequest) -> dict:
    """Every rank: one-way times per size (median of round trips / 2) for its pair, and its local reduction rate."""
    import torch
    import torch.distributed as dist

    rank, p = world.rank, world.ranks
    if req.pattern == "executor":
        return _executor_job(world, req)
    if req.pattern == "ring":
        pairs = [(r, (r + 1) % p) for r in range(p)]
        mine = ("ring", (rank + 1) % p, (rank - 1) % p)
    else:
        pairs = [(a, a + 1) for a in range(0, p - 1, 2)] if req.concurrent else [(0, 1)]
        mine = next(((a, b) for a, b in pairs if rank in (a, b)), None)
    one_way: dict[int, float] = {}
    for size in req.sizes:
        world.board.beat(rank)
        buf = torch.zeros(size, dtype=torch.uint8, device=world.device)
        rbuf = torch.zeros_like(buf)
        warm = [_round_trip(buf, rank, mine, req.synthetic, rbuf) for _ in range(max(req.warmup, 1))]
        est = torch.tensor([warm[-1]], dtype=torch.float64, device=world.device)  # NCCL reduces device tensors only
        dist.all_reduce(est, dist.ReduceOp.MAX)  # every rank runs the same number of rounds
        iters = int(max(3, min(req.iters, req.time_budget_s / max(float(est[0]), 1e-6))))
        per_message = 1.0 if req.pattern == "ring" else 0.5  # a ring step is one message each way; a round trip two
        samples = [_round_trip(buf, rank, mine, req.synthetic, rbuf) * per_message for _ in range(iters)]
        if mine is not None:
            one_way[size] = float(np.median(samples))
    result = {"rank": rank, "pair": (rank, (rank + 1) % p) if req.pattern == "ring" else mine, "one_way_s": one_way,
              "pattern": req.pattern}
    if req.gamma:
        result["gamma_points"] = _reduction_times(world.device)
    return result


def shift_schedule(ranks: int, nbytes: int, reduce: bool = False):
    """One ring step as a Schedule, as a ring allgather's first step runs it: every rank sends its own block of
    `nbytes` ('out' holds it, float32 where `nbytes` allows) into the same block of the next rank's 'out'.

    With `reduce`, a ring reduce-scatter's step instead: the block is added into the next rank's (the executor receives
    it into a staging buffer and adds it in place), so its time less the plain step's is the reduction as the
    executor does it.
    """
    from simulator.collective import Collective
    from simulator.schedule import Piece, Schedule, Transfer

    dtype = "float32" if nbytes % 4 == 0 or reduce else "uint8"
    count = nbytes // 4 if dtype == "float32" else nbytes
    coll = Collective("reduce_scatter" if reduce else "allgather", ranks, count * ranks * (4 if dtype == "float32" else 1), dtype)
    ts = [Transfer(r, r, (r + 1) % ranks, (Piece("out", count * r, "out", count * r, count),), reduce, (), 0) for r in range(ranks)]
    return Schedule(coll, "shift-reduce" if reduce else "shift", ts)


def _executor_job(world: World, req: CalibrateRequest) -> dict:
    """Per size: one shift step (every rank sends and receives once) run by the executor, timed as `collsim verify`
    times a schedule (barrier, then per iteration the slowest rank); with gamma, also the reducing step at 1..16 MiB."""
    rank, p = world.rank, world.ranks
    one_way: dict[int, float] = {}
    for size in req.sizes:
        timing = _time_step(world, req, shift_schedule(p, size))
        one_way[size] = timing.median_s
    result = {"rank": rank, "pair": (rank, (rank + 1) % p), "one_way_s": one_way, "pattern": req.pattern}
    if req.gamma:
        result["gamma_points"] = _reduction_times(world.device)
        reduce_step = {n: _time_step(world, req, shift_schedule(p, n, reduce=True)).median_s for n in GAMMA_SIZES}
        plain = {n: _time_step(world, req, shift_schedule(p, n)).median_s for n in GAMMA_SIZES}
        result["reduce_step_points"] = [(n, reduce_step[n] - plain[n]) for n in GAMMA_SIZES]
    return result


def _time_step(world: World, req: CalibrateRequest, schedule):
    """The executor's run of `schedule` on this rank, timed on every rank together as `collsim verify` times a schedule
    (verify.timing; 'out' reset to its starting state before every iteration)."""
    import torch
    import torch.distributed as dist

    from .data import fresh_buffers, reset_output
    from .executor import RankPlan, execute
    from .timing import time_collectively

    world.board.beat(world.rank)
    coll = schedule.collective
    plan = RankPlan.build(schedule, world.rank)
    dtype = torch.float32 if coll.dtype == "float32" else torch.uint8
    bufs = fresh_buffers(coll, 0, world.rank, torch.ones(coll.in_count[world.rank], dtype=dtype), world.device)
    run = lambda: execute(plan, bufs, board=world.board, timeout=world.timeout)
    t0 = time.perf_counter()
    run()
    est = torch.tensor([time.perf_counter() - t0], dtype=torch.float64, device=world.device)
    dist.all_reduce(est, dist.ReduceOp.MAX)  # every rank runs the same number of iterations
    iters = int(max(3, min(req.iters, req.time_budget_s / max(float(est[0]), 1e-6))))
    reset = lambda: reset_output(coll, world.rank, bufs)  # as verify does: writing 'out' first slows a large step
    return time_collectively(run, reset, iters, max(req.warmup - 1, 0), world.device)


def _round_trip(buf, rank: int, pair, synthetic, rbuf=None) -> float:
    """One barrier-aligned round trip between the pair (0 on ranks outside it); seconds."""
    import torch.distributed as dist

    dist.barrier()
    if pair is None:
        return 0.0
    if pair[0] == "ring":  # receive first: on gloo a message that arrives before its receive is posted is slower
        _, nxt, prv = pair
        t0 = time.perf_counter()
        recv = dist.irecv(buf, prv)  # into `buf` while `rbuf` (same size) goes out
        if synthetic is not None:
            time.sleep(synthetic[0] + buf.numel() * synthetic[1])
        send = dist.isend(rbuf, nxt)
        recv.wait()
        send.wait()
        return time.perf_counter() - t0
    a, b = pair
    peer = b if rank == a else a
    t0 = time.perf_counter()
    if rank == a:
        _send(buf, peer, synthetic)
        dist.recv(buf, peer)
    else:
        dist.recv(buf, peer)
        _send(buf, peer, synthetic)
    return time.perf_counter() - t0


def _send(buf, peer: int, synthetic: tuple[float, float] | None) -> None:
    import torch.distributed as dist

    if synthetic is not None:
        time.sleep(synthetic[0] + buf.numel() * synthetic[1])
    dist.send(buf, peer)


def _reduction_times(device) -> list[tuple[int, float]]:
    """(bytes reduced, seconds) for in-place float32 additions of several sizes (median of 5)."""
    import torch

    points = []
    for nbytes in GAMMA_SIZES:
        a = torch.ones(nbytes // 4, device=device)
        b = torch.ones(nbytes // 4, device=device)
        times = []
        for _ in range(6):
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            t0 = time.perf_counter()
            a.add_(b)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            times.append(time.perf_counter() - t0)
        points.append((nbytes, float(np.median(times[1:]))))
    return points


@dataclass(frozen=True)
class Calibration:
    """The fitted link, gamma and the raw points."""

    fit: LineFit
    gamma_s_per_byte: float
    backend: str
    ranks: int
    pairs: list
    gamma_points: list
    pattern: str = "pingpong"
    pieces: tuple = ()  # simulator.fit.Piece per message-size range: a piecewise profile (see combine)
    reduce_step_points: tuple = ()  # (bytes, reducing step less plain step, s): gamma as the executor reduces

    def segments(self) -> tuple[Segment, ...]:
        """The piecewise profile's segments, by message size (empty for a single line)."""
        return tuple(Segment(pc.lo, pc.hi, pc.alpha_s, pc.bandwidth_Bps) for pc in self.pieces)

    def profile(self) -> LinkProfile:
        """The simulator's link profile for this calibration (segments by message size when piecewise)."""
        meta = {"backend": self.backend, "ranks": self.ranks, "pattern": self.pattern, "pairs": self.pairs, "host": platform.node(),
                "fit": {"r2": self.fit.r2, "r2_log": self.fit.r2_log, "crossover_bytes": self.fit.crossover_bytes,
                        "max_rel_residual": self.fit.max_rel_residual,
                        "sizes": list(self.fit.sizes), "one_way_s": list(self.fit.times_s)},
                "gamma_points": [list(p) for p in self.gamma_points],
                "reduce_step_points": [list(p) for p in self.reduce_step_points],
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        how = {"ring": "ring exchange", "executor": "executor shift step"}.get(self.pattern, "ping-pong")
        piecewise = f", {len(self.pieces)} segments by message size" if self.pieces else ""
        return LinkProfile(self.fit.alpha_s, self.fit.bandwidth_Bps, self.gamma_s_per_byte,
                           f"collsim calibrate: {how} on {self.backend}, {self.ranks} ranks{piecewise}", self.segments(), meta,
                           "message" if self.pieces else "call")


def combine(results: list[dict], backend: str, segments: int = 1) -> Calibration:
    """Fit alpha and beta to the median over pairs of each size's time, gamma to the reduction times (the executor's
    reducing step where measured); with `segments` > 1, also the best cut of the sizes into at most that many ranges,
    each with its own alpha and bandwidth (simulator.fit.fit_pieces, as `collsim fit --segments` cuts a log)."""
    from simulator.fit import fit_pieces

    sizes = sorted({s for r in results for s in r["one_way_s"]})
    times = [float(np.median([r["one_way_s"][s] for r in results if s in r["one_way_s"]])) for s in sizes]
    fit = fit_alpha_beta(sizes, times)
    points = [pt for r in results for pt in r.get("gamma_points", [])]
    gamma = fit_rate([p[0] for p in points], [p[1] for p in points]) if points else 0.0
    steps = results[0].get("reduce_step_points")  # the executor's own reduction, the same on every rank
    if steps:
        gamma = fit_rate([p[0] for p in steps], [p[1] for p in steps], differences=True)
    pairs = sorted({tuple(r["pair"]) for r in results if r["pair"]})
    n, t = np.asarray(sizes, dtype=np.float64), np.asarray(times, dtype=np.float64)
    pieces = fit_pieces(np.ones_like(n), n, n, t, segments) if segments > 1 else ()
    return Calibration(fit, gamma, backend, len(results), [list(p) for p in pairs], points, results[0].get("pattern", "pingpong"),
                       pieces, tuple(tuple(p) for p in steps or ()))
