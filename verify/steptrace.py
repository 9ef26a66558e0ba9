"""Predicted vs measured, step by step: each rank's transfer intervals from the engine and from a real run, as one Chrome trace.

The measured side runs the schedule once on real processes (torch.distributed, gloo by default)
with the executor's trace hook: a transfer is busy on a rank from the moment the rank posts it
(`post-send` / `post-recv`) until it finishes there (the send's last message completed; the
receive applied). Ranks share one clock (perf_counter is CLOCK_MONOTONIC, one per machine), and
time 0 is the first event of any rank (a barrier precedes the run; the executor's setup before its
first post is left out, as the engine has none). The predicted side is the
event engine with the same profile as `collsim compare` (a transfer is busy on its sender from
start to arrival, on its receiver from start to end, reduction included).

`error_terms` splits each size's prediction into latency, bandwidth, reduction, contention and
protocol (size-regime) terms and says by what factor each term alone would have to change to
close the measured error.
"""

from __future__ import annotations

import json
import time

import numpy as np

from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.cost import LinkModel
from simulator.fileio import atomic_write
from simulator.profile import LinkProfile
from simulator.profile_adapter import ProfileAdapter
from simulator.trace import Trace

from .launch import World

PREDICTED, MEASURED = "predicted", "measured"
FAST = 1e30  # B/s: a bandwidth that costs nothing, for the latency-only runs


def _collective(op: str, ranks: int, size: int, dtype: str) -> Collective:
    elem = Collective(op, 1, 0, dtype).elem_size
    return Collective(op, ranks, int(size) - int(size) % elem, dtype)


def trace_job(world: World, op: str, algo: str, params: dict, size: int, dtype: str) -> tuple[float, list]:
    """On one rank: one warm-up run, a barrier, one traced run; (clock at time 0, [(seconds, event, transfer id)])."""
    import torch.distributed as dist

    from .data import fresh_buffers, rank_input
    from .executor import RankPlan, execute

    coll = _collective(op, world.ranks, size, dtype)
    schedule = build_schedule(coll, algo, **params)
    plan = RankPlan.build(schedule, world.rank)
    mine = rank_input(coll, world.rank, "random", 0)
    bufs = fresh_buffers(coll, schedule.scratch_count, world.rank, mine, world.device)
    execute(plan, bufs, board=world.board, timeout=world.timeout)
    bufs = fresh_buffers(coll, schedule.scratch_count, world.rank, mine, world.device)
    world.collective(dist.barrier)
    t0 = time.perf_counter()
    events: list = []
    execute(plan, bufs, board=world.board, timeout=world.timeout, trace=events)
    return t0, events


def measured_intervals(op: str, algo: str, ranks: int, size: int, params: dict, dtype: str = "float32",
                       backend: str = "gloo", timeout: float = 60.0) -> dict[int, list[tuple[int, str, float, float]]]:
    """Per rank: (transfer id, 'send' or 'recv', start s, end s) of one real run, on a clock shared by the ranks."""
    from .launch import run_local

    results = run_local(trace_job, ranks, backend, timeout, args=(op, algo, params, size, dtype))
    firsts = [events[0][0] for _, events in results if events]
    zero = min(firsts) if firsts else min(t0 for t0, _ in results)
    out: dict[int, list] = {}
    for rank, (_, events) in enumerate(results):
        posted: dict[int, tuple[str, float]] = {}
        rows = []
        for stamp, event, tid in events:
            if event.startswith("post-") and tid not in posted:
                posted[tid] = ("send" if event == "post-send" else "recv", stamp - zero)
            elif event == "finish" and tid in posted:
                kind, start = posted.pop(tid)
                rows.append((tid, kind, start, stamp - zero))
        out[rank] = rows
    return out


def engine_trace(op: str, algo: str, ranks: int, size: int, profile: LinkProfile, params: dict,
                 dtype: str = "float32", model: LinkModel | None = None) -> Trace:
    """The engine's run of the schedule on one switch with the profile (as `compare`'s engine predictor), or with `model`."""
    from simulator.engine import simulate
    from simulator.topology import switch

    adapter = ProfileAdapter(profile if model is None else LinkProfile(model.alpha, _bw(model), model.gamma, "term"))
    coll = _collective(op, ranks, size, dtype)
    return simulate(build_schedule(coll, algo, **params), adapter.topology(switch(ranks)), adapter.options(coll.nbytes))


def _bw(model: LinkModel) -> float:
    return float("inf") if model.beta == 0 else 1.0 / model.beta


def predicted_intervals(trace: Trace) -> dict[int, list[tuple[int, str, float, float]]]:
    """Per rank: (transfer id, kind, start, end) of the engine's run (send: start to arrival; receive: start to end)."""
    out: dict[int, list] = {r: [] for r in range(trace.schedule.collective.ranks)}
    for t in trace.schedule.transfers:
        s, a, e = (float(x[t.id]) for x in (trace.start, trace.arrive, trace.end))
        if t.local or np.isnan(s):
            continue
        out[t.src].append((t.id, "send", s, a))
        out[t.dst].append((t.id, "recv", s, e))
    return out


def chrome_trace(schedule, predicted: dict, measured: dict, title: str) -> dict:
    """One Chrome/Perfetto trace: per rank a predicted track and a measured track, side by side (times in us)."""
    ev: list[dict] = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": title}}]
    ranks = schedule.collective.ranks
    for r in range(ranks):
        for k, side in enumerate((PREDICTED, MEASURED)):
            ev.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": 2 * r + k, "args": {"name": f"rank {r} {side}"}})
            ev.append({"name": "thread_sort_index", "ph": "M", "pid": 1, "tid": 2 * r + k, "args": {"sort_index": 2 * r + k}})
    for k, rows in enumerate((predicted, measured)):
        for r in range(ranks):
            for tid, kind, start, end in rows.get(r, []):
                t = schedule.transfers[tid]
                ev.append({"name": f"#{tid} {kind} {t.src}->{t.dst}", "cat": (PREDICTED, MEASURED)[k], "ph": "X", "pid": 1,
                           "tid": 2 * r + k, "ts": start * 1e6, "dur": max(end - start, 0.0) * 1e6,
                           "args": {"id": tid, "step": t.step, "bytes": schedule.nbytes(t), "kind": kind}})
    return {"traceEvents": ev, "displayTimeUnit": "ns"}


def write_chrome(path, data: dict) -> None:
    """Write the trace atomically."""
    atomic_write(path, json.dumps(data))


def error_terms(op: str, algo: str, ranks: int, sizes, measured, profile: LinkProfile, params: dict,
                dtype: str = "float32") -> list[dict]:
    """Per size: the engine's prediction split into terms, the error, and the factor on each term that would close it.

    latency: the run with bandwidth and reduction infinitely fast (alpha on the critical path);
    bandwidth: the closed-form-like run with alpha and reduction zero and the links uncontended
    (ideal:P, one dedicated link per pair); reduction: the gamma term (same way);
    contention: what the switch's shared links add on top (engine on the switch minus the three above,
    at the size's regime); protocol: what the size's regime (profile segment) adds over the top-level
    alpha and bandwidth.
    """
    from simulator.engine import simulate
    from simulator.topology import ideal, switch

    adapter = ProfileAdapter(profile)
    rows = []
    for size, meas in zip(sizes, measured):
        coll = _collective(op, ranks, size, dtype)
        schedule = build_schedule(coll, algo, **params)
        alpha, bandwidth_Bps = adapter.regime(coll.nbytes)
        gamma = profile.gamma_s_per_byte

        def run(a: float, bw: float, g: float, topo_fn, schedule=schedule, nbytes=coll.nbytes) -> float:
            term = ProfileAdapter(LinkProfile(a, bw, g, "term"))
            return simulate(schedule, term.topology(topo_fn(ranks)), term.options(nbytes)).time

        latency = run(alpha, FAST, 0.0, ideal)
        bandwidth = run(0.0, bandwidth_Bps, 0.0, ideal) if np.isfinite(bandwidth_Bps) else 0.0
        reduction = run(0.0, FAST, gamma, ideal) if gamma else 0.0
        full = run(alpha, bandwidth_Bps, gamma, switch)
        contention = full - run(alpha, bandwidth_Bps, gamma, ideal)
        protocol = full - run(profile.alpha_s, profile.bandwidth_Bps, gamma, switch)
        error = full - float(meas)
        rows.append({"bytes": int(size), "measured_s": float(meas), "predicted_s": full, "latency_s": latency,
                     "bandwidth_s": bandwidth, "reduction_s": reduction, "contention_s": contention, "protocol_s": protocol,
                     "error_s": error, "error_pct": error / float(meas) * 100,
                     "latency_x_to_close": (latency - error) / latency if latency > 0 else None,
                     "bandwidth_x_to_close": (bandwidth - error) / bandwidth if bandwidth > 0 else None})
    return rows
