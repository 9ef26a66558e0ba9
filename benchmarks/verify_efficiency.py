"""How close the schedule executor gets to the native gloo collectives, and how well the calibrated model predicts it.

For each P: calibrate three ways (ping-pong of concurrent pairs; a ring exchange where every
rank sends and receives at once; that exchange run as a one-step schedule by the executor; all
with gamma), then time ring
allreduce, allgather and reduce-scatter as P2P schedules and as native collectives in another.
Prints one row per (P, op, size): executor and native busbw, their ratio, the closed form's
prediction from each calibrated profile and its error; then the summary against the goals
(executor >= 0.5x native busbw at >= 16 MiB; model within 25% median).

    python -m benchmarks.verify_efficiency                 # p = 2 and 4, 64 KiB .. 64 MiB
    python -m benchmarks.verify_efficiency --ranks 2 --sizes 64KiB:4MiB:4 --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from simulator.profile import atomic_write
from simulator.render import table
from simulator.units import parse_rank_range, parse_size_range
from verify.calibrate import CalibrateRequest, combine, pingpong_job
from verify.compare import error_table, predictions
from verify.launch import run_local
from verify.runner import VerifyRequest, verify_job

OPS = ("allreduce", "allgather", "reduce_scatter")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="2,4", help="rank counts (default 2,4)")
    ap.add_argument("--sizes", default="64KiB:64MiB:4", help="sizes (default 64KiB:64MiB:4)")
    ap.add_argument("--chunks", type=int, default=1, help="ring pipelining: pieces per block (default 1)")
    ap.add_argument("--budget", type=float, default=2.0, help="seconds of timing per size and side (default 2)")
    ap.add_argument("--json", metavar="PATH", help="also write the rows and the summary as JSON")
    args = ap.parse_args(argv)
    sizes = tuple(parse_size_range(args.sizes))
    rows, summary = [], []
    started = time.time()
    for p in parse_rank_range(args.ranks):
        profiles = {}
        for pattern in ("pingpong", "ring", "executor"):
            cal = combine(run_local(pingpong_job, p, "gloo", 120.0, (CalibrateRequest(pattern=pattern),)), "gloo")
            profiles[pattern] = cal.profile()
            print(f"# p={p} {pattern}: alpha {cal.fit.alpha_s * 1e6:.1f} us, bandwidth {cal.fit.bandwidth_Bps / 1e9:.3f} GB/s, "
                  f"gamma {cal.gamma_s_per_byte:.3g} s/B, R^2 {cal.fit.r2:.3f} (log {cal.fit.r2_log:.3f})", flush=True)
        req = VerifyRequest(cases=tuple((op, "ring", {"chunks": args.chunks}) for op in OPS), sizes=sizes, timing=True,
                            native=True, time_budget_s=args.budget, check_limit=4 * 2**20)
        records = run_local(verify_job, p, "gloo", 120.0, (req,))[0]
        for op in OPS:
            recs = [r for r in records if r["op"] == op]
            sizes_op, times = [r["bytes"] for r in recs], [r["time_s"] for r in recs]
            fits = {pat: error_table(sizes_op, times, predictions(op, "ring", p, sizes_op, prof, {"chunks": args.chunks}))
                    for pat, prof in profiles.items()}
            for i, r in enumerate(recs):
                e, e2, e3 = fits["pingpong"][0][i], fits["ring"][0][i], fits["executor"][0][i]
                rows.append({"ranks": p, "op": op, "bytes": r["bytes"], "correct": r["correct"],
                             "exec_busbw_GBps": r["busbw_GBps"], "native_busbw_GBps": r["native_busbw_GBps"],
                             "ratio": r["busbw_GBps"] / r["native_busbw_GBps"], "exec_time_s": r["time_s"],
                             "exec_spread": r["timing"]["spread"], "predicted_s": e["closed_form_s"],
                             "model_err_pct": e["closed_form_err_pct"], "predicted_ring_s": e2["closed_form_s"],
                             "model_ring_err_pct": e2["closed_form_err_pct"], "predicted_exec_s": e3["closed_form_s"],
                             "model_exec_err_pct": e3["closed_form_err_pct"]})
            big = [x["ratio"] for x in rows if x["ranks"] == p and x["op"] == op and x["bytes"] >= 16 * 2**20]
            summary.append({"ranks": p, "op": op, "min_ratio_ge_16MiB": min(big) if big else None,
                            "median_ratio_ge_16MiB": float(np.median(big)) if big else None,
                            "model_mdape_pct": fits["pingpong"][1]["closed_form"],
                            "model_ring_mdape_pct": fits["ring"][1]["closed_form"],
                            "model_exec_mdape_pct": fits["executor"][1]["closed_form"],
                            "profiles": {k: v.to_dict() for k, v in profiles.items()}})
    print(table(["p", "op", "size(B)", "ok", "exec busbw", "native busbw", "x native", "exec(us)", "spread",
                 "model pp(us)", "err", "model ring(us)", "err", "model exec(us)", "err"],
                [[r["ranks"], r["op"], r["bytes"], r["correct"], r["exec_busbw_GBps"], r["native_busbw_GBps"], r["ratio"],
                  r["exec_time_s"] * 1e6, r["exec_spread"], r["predicted_s"] * 1e6, f"{r['model_err_pct']:+.0f}%",
                  r["predicted_ring_s"] * 1e6, f"{r['model_ring_err_pct']:+.0f}%",
                  r["predicted_exec_s"] * 1e6, f"{r['model_exec_err_pct']:+.0f}%"] for r in rows]))
    print()
    print(table(["p", "op", "min x native >=16MiB", "median x native >=16MiB", "model |err| (ping-pong)", "(ring)", "(executor)"],
                [[s["ranks"], s["op"], _num(s["min_ratio_ge_16MiB"]), _num(s["median_ratio_ge_16MiB"]),
                  f"{s['model_mdape_pct']:.1f}%", f"{s['model_ring_mdape_pct']:.1f}%", f"{s['model_exec_mdape_pct']:.1f}%"]
                 for s in summary]))
    print(f"# goals: executor >= 0.5x native busbw at >= 16 MiB; model within 25% median. Took {time.time() - started:.0f} s.")
    if args.json:
        atomic_write(args.json, json.dumps({"rows": rows, "summary": summary}, indent=2))
    return 0


def _num(x):
    return "-" if x is None else float(x)


if __name__ == "__main__":
    sys.exit(main())
