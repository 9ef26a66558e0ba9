"""Speedup of running what-if cases in 2 processes (--jobs 2) and on a 2-worker Dask LocalCluster, against serial.

Each run computes the same cases (training steps on 8 and 16 H100s, several all-reduce algorithms and buckets);
the results must be identical to the serial ones. Wall times are from one run each, on this machine, with the load
average printed next to them (other work on a shared machine slows the parallel runs first).

usage: python -m benchmarks.sweep_scale [--cases 8] [--json] [--out docs/sweep_scale.md]
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
    """DDP steps of a 7B model on 2 nodes of 8 H100s, one all-reduce algorithm and bucket size each (a few seconds each)."""
    algos = ("ring", "hierarchical", "double_binary_tree", "recursive_doubling")
    return [StepCase("ddp", "dgx-h100:nodes=2,net=ib400", algorithms=(("allreduce", algos[k % len(algos)]),),
                     bucket=(25 << 20) * (1 + k // len(algos)), label=f"case{k}") for k in range(n)]


def timed(fn) -> tuple[float, list]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=8, help="cases per run (default 8)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--out", help="also write the table as a markdown page")
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
            warm = [StepCase("ddp", "dgx-h100", gpus=2, bucket=1 << 30, seq_len=256)] * 2  # workers import collsim
            run_cases(evaluate, warm, dask=cluster.scheduler_address)
            startup = time.perf_counter() - start
            dask_s, on_dask = timed(lambda: run_cases(evaluate, cases, dask=cluster.scheduler_address))
            rows.append({"run": f"--dask, 2-worker LocalCluster (start and imports, {startup:.1f} s, not counted)", "wall_s": dask_s,
                         "speedup": serial_s / dask_s, "identical": on_dask == serial, "load": os.getloadavg()[0]})
    load = os.getloadavg()
    if args.out:
        from simulator.fileio import atomic_write

        atomic_write(args.out, page(rows, len(cases), load))
    if args.json:
        print(json.dumps({"cases": len(cases), "cores": os.cpu_count(), "rows": rows, "loadavg": load}, indent=1))
    else:
        print(f"# {len(cases)} what-if cases (7B DDP steps on 2 x 8 H100), {os.cpu_count()} cores; "
              f"load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        print(f"{'run':64s} {'wall':>8s} {'speedup':>8s} {'identical':>9s} {'load':>6s}")
        for r in rows:
            print(f"{r['run']:64s} {r['wall_s']:7.1f}s {r['speedup']:7.2f}x {str(r['identical']):>9s} {r['load']:6.2f}")
    return 0 if all(r["identical"] for r in rows) else 1


FAULTS = [  # the page's fixed section (docs/sweep_scale.md): what --dask trusts, how --jobs is capped, how runs fail
    "## Trust, limits and faults", "",
    "- `--dask` must point at a cluster you trust: results come back from the workers pickled and are unpickled in the "
    "collsim process, so whoever controls the scheduler or a worker can run code as you. Use a scheduler on your own "
    "machines, on a private network (or TLS), never one shared with people you would not give a shell.",
    "- `--jobs N` is capped at the cores this process may use and at the number of cases (more processes than cores "
    "only cost memory: each is a copy of collsim), with one `collsim: note: jobs: N capped at M (...)` line on stderr.",
    "- A malformed or unreachable `--dask` address, a scheduler lost mid-run or silent for 20 s (`ANSWER_S`), or a "
    "cluster left without a worker for 30 s (`NO_WORKERS_S` in `simulator/parallel.py`) ends the run in one "
    "`collsim: error: dask: ...` line, exit status 2, and no output file.",
    "- SIGTERM and SIGINT stop a sweep within a second: the pool's workers are terminated (with `--dask` the client "
    "disconnects and the scheduler drops the run's tasks); exit status 143 or 130, no output file, no process left.",
    "- Output files are written at the end of a run, all or none; `wrote FILE` is printed only once they are in "
    "place. A run refuses to overwrite an output that another process changed while it worked (two sweeps on one "
    "`--csv`: the later one to finish says so and leaves the other's file).",
    "",
]


def page(rows: list[dict], cases: int, load: tuple) -> str:
    lines = ["# Parallel sweeps: `--jobs` and `--dask`", "",
             "`collsim sweep`, `whatif` and `scale` run their cases through `simulator/parallel.py`: serially "
             "(`--jobs 1`), in a pool of processes (`--jobs N`, default every core) or on a Dask scheduler "
             "(`--dask ADDRESS`). Results come back in case order and equal the serial ones exactly "
             "(`tests/simulator/test_parallel.py` checks a real `LocalCluster`).", "",
             f"{cases} what-if cases (7B DDP steps on 2 x 8 H100 over 400G IB, four all-reduce algorithms, several bucket "
             f"sizes), one run each, on this machine ({os.cpu_count()} cores, shared with other work):", "",
             "| run | wall | speedup | identical to serial | load average (1 min) |", "|---|---:|---:|---|---:|"]
    for r in rows:
        lines.append(f"| {r['run']} | {r['wall_s']:.1f} s | {r['speedup']:.2f}x | {r['identical']} | {r['load']:.2f} |")
    lines += ["", f"Load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}. With a load above the core count the "
              "extra process has no idle core to use, and the speedup falls toward 1 (or below, by the workers' start and "
              "the pickling of results); on an idle machine the cases are independent and CPU-bound.", "",
              *FAULTS, "Produced by `python -m benchmarks.sweep_scale --out docs/sweep_scale.md`.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
