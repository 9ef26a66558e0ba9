"""Why the gloo model over-predicts p = 4 ring allgather at 64 KiB - 1 MiB: where a step's time goes.

Part 1 (one world): the first K steps of a ring allgather (a chain of K one-step shifts; K = 1 is exactly the
executor calibration's step), K = 1 .. p-1, per message size, timed as `collsim verify` times a schedule (barrier,
then the slowest rank), with every rank's barrier exit and end on the shared monotonic clock. Per (size, K): the
median and quartiles of the per-iteration samples, the barrier-exit skew, the time from the last rank's exit to
the end, and the share of "stalled" iterations (sample above twice the 10th percentile).

Part 2 (per round: a calibration world, then a fresh compared world, as benchmarks.gloo_model does): the one-step
shift's median and lower quartile per message size, and ring allgather timed as verify times it; predictions from
the raw points (no fit): 'per step' = (p-1) x the step's median (what the calibrated model charges), 'per call' =
the step's median once plus (p-2) x its lower quartile (a stall paid once per call, the other steps stall-free).

    python -m benchmarks.gloo_steps                  # p = 4, messages 16 KiB .. 1 MiB (part 1), 3 rounds (part 2)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.schedule import Schedule
from simulator.units import format_size, parse_size_range
from verify.calibrate import CalibrateRequest, _time_step, shift_schedule
from verify.launch import World, run_local
from verify.runner import VerifyRequest, verify_job


def chain(ranks: int, nbytes: int, steps: int) -> Schedule:
    """The first `steps` steps (1 .. ranks-1) of a float32 ring allgather whose messages are `nbytes`."""
    coll = Collective("allgather", ranks, nbytes * ranks, "float32")
    transfers = [t for t in build_schedule(coll, "ring", chunks=1).transfers if t.step < steps]
    if [t.id for t in transfers] != list(range(len(transfers))):
        raise RuntimeError("ring allgather ids are not step by step")
    return Schedule(coll, f"ring allgather, first {steps} steps", transfers)


def stamps_job(world: World, sizes: tuple[int, ...], iters: int) -> dict:
    """Per (size, K): this rank's (barrier exit, end) per iteration, 'out' reset before each as verify does."""
    import torch
    import torch.distributed as dist

    from verify.data import fresh_buffers, reset_output
    from verify.executor import RankPlan, execute

    out = {}
    for m in sizes:
        for k in range(1, world.ranks):
            sched = chain(world.ranks, m, k)
            coll, plan = sched.collective, RankPlan.build(sched, world.rank)
            bufs = fresh_buffers(coll, 0, world.rank, torch.ones(coll.in_count[world.rank]), world.device)
            rows = []
            for i in range(iters + 3):  # 3 warm-up runs
                world.board.beat(world.rank)
                reset_output(coll, world.rank, bufs)
                dist.barrier()
                t0 = time.perf_counter()
                execute(plan, bufs, board=world.board, timeout=world.timeout)
                if i >= 3:
                    rows.append((t0, time.perf_counter()))
            out[(m, k)] = rows
    return out


def calibrate_job(world: World, sizes: tuple[int, ...]) -> dict:
    """The executor calibration's one-step shift per message size: (median, lower quartile) seconds."""
    req = CalibrateRequest(iters=20, time_budget_s=1.0)
    return {m: (t.median_s, t.p25_s) for m in sizes for t in [_time_step(world, req, shift_schedule(world.ranks, m))]}


def part1(p: int, sizes: tuple[int, ...], iters: int) -> None:
    print(f"# part 1: p={p}, load {os.getloadavg()[0]:.2f}", flush=True)
    res = run_local(stamps_job, p, "gloo", 300.0, (sizes, iters))
    print(f"# load after {os.getloadavg()[0]:.2f}")
    print("size   K  median  p25   p75  | skew  last exit->end | stalled  (ms)")
    for m in sizes:
        medians = []
        for k in range(1, p):
            a = np.array([r[(m, k)] for r in res])  # rank, iteration, (exit, end)
            sample = (a[:, :, 1] - a[:, :, 0]).max(0)  # what verify.timing reports per iteration
            skew = a[:, :, 0].max(0) - a[:, :, 0].min(0)
            span = a[:, :, 1].max(0) - a[:, :, 0].max(0)
            q = np.percentile(sample, [25, 50, 75]) * 1e3
            medians.append(q[1])
            print(f"{format_size(m):>6} {k}  {q[1]:5.2f} {q[0]:5.2f} {q[2]:5.2f} | {np.median(skew) * 1e3:4.2f}  "
                  f"{np.median(span) * 1e3:5.2f}          | {np.mean(sample > 2 * np.percentile(sample, 10)):.2f}")
        if p > 2:
            slope, const = np.polyfit(np.arange(1, p), medians, 1)
            print(f"{'':>6}    median = {const:.2f} + K x {slope:.2f} ms")


def part2(p: int, rounds: int) -> None:
    totals = (2**16, 2**18, 2**20, 2**22, 2**24)
    msgs = tuple(n // p for n in totals)
    for r in range(rounds):
        load = os.getloadavg()[0]
        cal = run_local(calibrate_job, p, "gloo", 120.0, (msgs,))[0]
        vreq = VerifyRequest(cases=(("allgather", "ring", {"chunks": 1}),), sizes=totals, timing=True, native=False,
                             time_native=False, time_budget_s=1.0, iters=20, check_limit=4 * 2**20)
        measured = [x["time_s"] for x in run_local(verify_job, p, "gloo", 120.0, (vreq,))[0]]
        print(f"# part 2, round {r + 1}, p={p}, load {load:.2f} -> {os.getloadavg()[0]:.2f}")
        errs = {"per step": [], "per call": []}
        for n, m, t in zip(totals, msgs, measured):
            med, low = cal[m]
            preds = {"per step": (p - 1) * med, "per call": med + (p - 2) * low}
            for name, v in preds.items():
                errs[name].append(100 * (v - t) / t)
            print(f"  {format_size(n):>7} measured {t * 1e3:6.2f} ms | step median {med * 1e3:5.2f} p25 {low * 1e3:5.2f} | "
                  + "  ".join(f"{name} {v * 1e3:6.2f} ({errs[name][-1]:+.0f}%)" for name, v in preds.items()))
        print("  median |error| 64 KiB-16 MiB: " + ", ".join(f"{k} {np.median(np.abs(v)):.0f}%" for k, v in errs.items())
              + "; 64 KiB-1 MiB: " + ", ".join(f"{k} {np.median(np.abs(v[:3])):.0f}%" for k, v in errs.items()), flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=4, help="rank count (default 4)")
    ap.add_argument("--sizes", default="16KiB:1MiB:4", help="message sizes of part 1 (default 16KiB:1MiB:4)")
    ap.add_argument("--iters", type=int, default=60, help="timed iterations per (size, K) in part 1 (default 60)")
    ap.add_argument("--rounds", type=int, default=3, help="calibrate-then-compare rounds of part 2 (default 3)")
    args = ap.parse_args(argv)
    part1(args.ranks, tuple(parse_size_range(args.sizes)), args.iters)
    part2(args.ranks, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
