"""The per-rank job behind `collsim verify`: run schedules and native collectives, check them, time them.

One world runs every requested (op, algorithm) x dtype x size, so process start-up is paid once.
Every rank returns the same, already combined, list of records (rank 0's is the one reported).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from simulator.algorithms import build_schedule, get
from simulator.collective import DTYPES, Collective, normalize_dtype
from simulator.errors import CollsimError
from simulator.schedule import Schedule

from .data import as_reference, check_rank, expected, float_bound_factor, fresh_buffers, rank_input, reset_output
from .executor import DEFAULT_SLICE, RankPlan, execute
from .launch import World
from .native import native_call
from .timing import time_collectively

SABOTAGE = ("drop-last", "copy-not-reduce", "wrong-offset")


@dataclass(frozen=True)
class VerifyRequest:
    """What to run: (op, algorithm, params) cases over sizes and dtypes, how to check and whether to time."""

    cases: tuple[tuple[str, str, dict], ...]
    sizes: tuple[int, ...]
    dtypes: tuple[str, ...] = ("float32",)
    mode: str = "random"
    seed: int = 0
    root: int = 0
    redop: str = "sum"
    native: bool = True
    timing: bool = False
    time_native: bool = True
    iters: int = 20
    warmup: int = 3
    time_budget_s: float = 2.0
    check_limit: int = 16 * 2**20
    slice_bytes: int = DEFAULT_SLICE
    ordered: bool | None = None  # None: the backend's default (per-peer posting order only on NCCL)
    skip_send_rank: int | None = None  # fault injection: this rank skips its first network send
    fail_rank: int | None = None  # fault injection: this rank raises before running the schedule
    sabotage: str | None = None


def sabotage(schedule: Schedule, how: str) -> Schedule:
    """A deliberately broken copy of a schedule (to show that the check catches it)."""
    ts = list(schedule.transfers)
    if how == "drop-last":  # the last transfer into a rank that did not start with the data (a root of broadcast/scatter did)
        coll = schedule.collective
        keeps = coll.root if coll.spec.senders == "root" else None
        i = max((i for i, t in enumerate(ts) if t.dst != keeps and t.count), default=len(ts) - 1)
        ts[i] = replace(ts[i], pieces=())  # ids and dependencies stay; the data is never delivered
    elif how == "copy-not-reduce":
        i = next((i for i, t in enumerate(ts) if t.reduce and not t.local), None)
        if i is None:
            return sabotage(schedule, "wrong-offset")
        ts[i] = replace(ts[i], reduce=False)
    elif how == "wrong-offset":
        i = next(i for i, t in enumerate(ts) if not t.local and t.count)
        p = ts[i].pieces[0]
        size = schedule.buffer_size(ts[i].dst, p.dst_buf)
        shifted = replace(p, dst_off=(p.dst_off + 1) % max(size - p.count + 1, 1)) if size > p.count else p
        ts[i] = replace(ts[i], pieces=(shifted,) + ts[i].pieces[1:], reduce=ts[i].reduce if size > p.count else not ts[i].reduce)
    else:
        raise CollsimError(f"sabotage: unknown {how!r}; expected one of {', '.join(SABOTAGE)}")
    return Schedule(schedule.collective, schedule.algorithm, ts, dict(schedule.params), schedule.scratch_count)


def verify_job(world: World, req: VerifyRequest) -> list[dict]:
    """Run every case of `req` on this rank; return the combined records (identical on every rank)."""
    import torch
    import torch.distributed as dist

    records = []
    for op, algo, params in req.cases:
        spec = get(op, algo)
        reason = spec.refusal(world.ranks)
        if reason:
            records.append({"op": spec.op, "algorithm": algo, "ranks": world.ranks, "status": "refused", "message": reason})
            continue
        for dtype in req.dtypes:
            for size in req.sizes:
                world.board.beat(world.rank)
                elem = DTYPES[normalize_dtype(dtype)]
                whole = size - size % elem  # like nccl-tests: count = bytes / element size
                coll = Collective(spec.op, world.ranks, whole, dtype, req.root % world.ranks, req.redop)
                records.append(_one_case(world, req, coll, algo, params, torch, dist))
    return records


def _one_case(world: World, req: VerifyRequest, coll: Collective, algo: str, params: dict, torch, dist) -> dict:
    rank, device = world.rank, world.device
    schedule = build_schedule(coll, algo, **params)
    if req.sabotage:
        schedule = sabotage(schedule, req.sabotage)
    plan = RankPlan.build(schedule, rank)
    skip = None
    if req.skip_send_rank == rank:
        skip = next((tid for tid in plan.mine if schedule.transfers[tid].src == rank and schedule.transfers[tid].dst != rank), None)
    if req.fail_rank == rank:
        raise RuntimeError(f"injected failure on rank {rank}")
    mine = rank_input(coll, rank, req.mode, req.seed)
    bufs = fresh_buffers(coll, schedule.scratch_count, rank, mine, device)
    run = lambda: execute(plan, bufs, board=world.board, timeout=world.timeout, skip_send=skip, slice_bytes=req.slice_bytes,
                          ordered=req.ordered)

    t0 = time.perf_counter()
    counters = run()
    first_run = time.perf_counter() - t0
    out = bufs["out"].clone()

    checked, wrong, max_err, first, parts = [], 0, 0.0, "", None
    if coll.nbytes <= req.check_limit:  # the numpy semantics as reference: needs every rank's input
        inputs = [mine if r == rank else rank_input(coll, r, req.mode, req.seed) for r in range(coll.ranks)]
        parts = expected(coll, inputs).parts.get(rank, [])
        outcome = check_rank(out, parts, f"{algo} {coll.describe()}", rank)
        checked.append("numpy")
        wrong, max_err, first = outcome.wrong, outcome.max_err, outcome.first
    native = native_wrong = vs_native = None
    if req.native:
        native = native_call(coll, rank, mine.to(device))
        native.run()
        theirs = native.result()
        vs_native, nfirst = _compare_native(world, coll, out, theirs, mine, torch, dist)
        if parts is not None:
            native_wrong = check_rank(theirs, parts, f"native {coll.describe()}", rank).wrong
        checked.append("native")
        first = first or nfirst
    worst = [wrong, native_wrong or 0, vs_native or 0]
    stats = torch.tensor(worst + [first_run], dtype=torch.float64, device=device)  # NCCL reduces device tensors only
    world.collective(lambda: dist.all_reduce(stats, dist.ReduceOp.SUM))
    gathered = [None] * coll.ranks
    world.collective(lambda: dist.all_gather_object(gathered, (first, max_err)))
    stats = stats.cpu()
    wrong, native_wrong_all, vs_native_all = (int(x) for x in stats[:3].tolist())
    record = {
        "op": coll.op, "algorithm": algo, "params": dict(schedule.params), "ranks": coll.ranks, "bytes": coll.nbytes,
        "count": coll.count, "dtype": coll.dtype, "redop": coll.redop if coll.spec.reduces else "none",
        "root": coll.root if coll.spec.rooted else -1,
        "mode": req.mode, "status": "ok", "checked_against": checked,
        "correct": (wrong == 0 and (vs_native_all == 0 if req.native else True)) if checked else None,
        "wrong": wrong, "max_abs_err": max(m for _, m in gathered), "bound_factor": float_bound_factor(coll),
        "first_error": next((f for f, _ in gathered if f), ""),
        "transfers": len(schedule.transfers), "slice_bytes": req.slice_bytes, "ordered": req.ordered,
        "messages_rank0": counters["messages"],
    }
    if req.native:
        record.update({"native_correct": native_wrong_all == 0 if "numpy" in checked else None,
                       "native_wrong": native_wrong_all, "wrong_vs_native": vs_native_all})
    if req.timing:
        iters = _iterations(req, float(stats[3]) / coll.ranks, torch, dist, device)
        reset = lambda: reset_output(coll, rank, bufs)
        timing = time_collectively(lambda: execute(plan, bufs, board=world.board, timeout=world.timeout, slice_bytes=req.slice_bytes,
                                                   ordered=req.ordered),
                                   reset,
                                   iters, req.warmup, device)
        record.update(_bandwidths(coll, timing, ""))
        if native is not None and req.time_native:
            ntiming = time_collectively(native.run, native.reset, iters, req.warmup, device)
            record.update(_bandwidths(coll, ntiming, "native_"))
    return record


def _iterations(req: VerifyRequest, first_run_s: float, torch, dist, device) -> int:
    """Iterations that fit the time budget (same number on every rank)."""
    est = torch.tensor([first_run_s], dtype=torch.float64, device=device)
    dist.all_reduce(est, dist.ReduceOp.MAX)
    per = max(float(est[0]), 1e-6) * 2.2  # executor and native, plus barriers
    return int(max(3, min(req.iters, req.time_budget_s / per)))


def _bandwidths(coll: Collective, timing, prefix: str) -> dict:
    t = timing.median_s
    return {f"{prefix}time_s": t, f"{prefix}algbw_GBps": coll.algbw(t) / 1e9, f"{prefix}busbw_GBps": coll.busbw(t) / 1e9,
            f"{prefix}timing": timing.to_dict()}


def _compare_native(world: World, coll: Collective, out, theirs, mine, torch, dist) -> tuple[int, str]:
    """Elements where the executor and the native collective differ by more than twice the float bound (0 for exact types)."""
    factor = float_bound_factor(coll)
    peak = torch.tensor([float(mine.abs().max()) if mine.numel() and mine.is_floating_point() else 0.0], dtype=torch.float64,
                        device=world.device)
    world.collective(lambda: dist.all_reduce(peak, dist.ReduceOp.MAX))
    differ, first = 0, ""
    ours, ref = as_reference(out), as_reference(theirs)
    for off, count in coll.spec.result_regions(coll, world.rank):
        a, b = ours[off:off + count], ref[off:off + count]
        if a.dtype.kind == "f":
            limit = 2 * factor * (coll.ranks * float(peak.cpu()[0]) if coll.redop != "prod" else np.abs(b))
            with np.errstate(invalid="ignore"):
                bad = ~(np.abs(a - b) <= limit)
        else:
            bad = a != b
        n = int(bad.sum())
        if n and not first:
            i = int(np.argmax(bad))
            first = f"{coll.describe()}: rank {world.rank} out[{off + i}] is {a[i]!r} from the schedule but {b[i]!r} from native"
        differ += n
    return differ, first
