"""Speedup of running what-if cases in 2 processes (--jobs 2) and on a 2-worker Dask LocalCluster, against serial.

Each run computes the same cases (training steps on 8 and 16 H100s, several all-reduce algorithms and buckets);
the results must be identical to the serial ones. Wall times are from one run each, on this machine, with the load
average printed next to them (other work on a shared machine slows the parallel runs first).

usage: python -m benchmarks.sweep_scale [--cases 8] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from simulator.parallel import run_cases
from simulator.program.whatif import StepCase, evaluate


def make_cases(n: int) -> list[StepCase]:
    algos = ("ring", "hierarchical", "double_binary_tree", "recursive_doubling")
    out = []
    for k in range(n):
        machine = "dgx-h100" if k % 2 == 0 else "dgx-h100:nodes=2,net=ib400"
        out.append(StepCase("ddp", machine, algorithms=(("allreduce", algos[(k // 2) % len(algos)]),),
                            bucket=(64 << 20) * (1 + k // 8), label=f"case{k}"))
    return out


def timed(fn) -> tuple[float, list]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=8, help="cases per run (default 8)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    cases = make_cases(args.cases)
    rows = []
    serial_s, serial = timed(lambda: run_cases(evaluate, cases, jobs=1))
    rows.append({"run": "serial (--jobs 1)", "wall_s": serial_s, "speedup": 1.0, "identical": True,
                 "load": os.getloadavg()[0]})
    pool_s, pooled = timed(lambda: run_cases(evaluate, cases, jobs=2))
    rows.append({"run": "--jobs 2 (process pool)", "wall_s": pool_s, "speedup": serial_s / pool_s, "identical": pooled == serial,
                 "load": os.getloadavg()[0]})
    try:
        from distributed import LocalCluster
    except ImportError:
        LocalCluster = None
    if LocalCluster is not None:
        start = time.perf_counter()
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
            startup = time.perf_counter() - start
            dask_s, on_dask = timed(lambda: run_cases(evaluate, cases, dask=cluster.scheduler_address))
            rows.append({"run": f"--dask, 2-worker LocalCluster (startup {startup:.1f} s not counted)", "wall_s": dask_s,
                         "speedup": serial_s / dask_s, "identical": on_dask == serial, "load": os.getloadavg()[0]})
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"cases": len(cases), "cores": os.cpu_count(), "rows": rows, "loadavg": load}, indent=1))
    else:
        print(f"# {len(cases)} what-if cases (DDP steps on 8 and 16 H100s), {os.cpu_count()} cores; "
              f"load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        print(f"{'run':64s} {'wall':>8s} {'speedup':>8s} {'identical':>9s} {'load':>6s}")
        for r in rows:
            print(f"{r['run']:64s} {r['wall_s']:7.1f}s {r['speedup']:7.2f}x {str(r['identical']):>9s} {r['load']:6.2f}")
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
