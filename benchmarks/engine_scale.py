"""How the engine scales: wall time, events per second and peak memory for big collectives, next to raw simpy.

Each case runs in its own process (so its peak resident memory is its own): schedule build time,
engine time, simpy events, events per second. The raw simpy event rate (a process yielding
timeouts, and bare timeouts with a callback) is measured in the same run on the same machine, so
the ratio "engine events/s / raw simpy events/s" is meaningful even on a busy machine.

    python -m benchmarks.engine_scale                  # the full table (several minutes on 2 cores)
    python -m benchmarks.engine_scale --quick          # p = 64 and 256 only
    python -m benchmarks.engine_scale --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES = [
    ("allreduce", "ring", 64, "ideal:64"),
    ("allreduce", "ring", 256, "ideal:256"),
    ("allreduce", "ring", 1024, "ideal:1024"),
    ("allreduce", "ring", 64, "switch:64"),
    ("allreduce", "ring", 256, "switch:256"),
    ("allreduce", "ring", 1024, "switch:1024"),
    ("allreduce", "hierarchical", 1024, "cluster:nodes=128,gpus=8"),
    ("allreduce", "hierarchical", 4096, "cluster:nodes=512,gpus=8"),
]
QUICK = [c for c in CASES if c[2] <= 256]


def raw_simpy_rates(n: int = 300_000) -> dict[str, float]:
    """Events per second of plain simpy: a process yielding timeouts, and timeouts with a callback."""
    import simpy

    env = simpy.Environment()

    def proc(env):
        for _ in range(n):
            yield env.timeout(1)

    env.process(proc(env))
    t = time.perf_counter()
    env.run()
    process_rate = n / (time.perf_counter() - t)
    env = simpy.Environment()
    count = [0]

    def callback(event):
        count[0] += 1
        if count[0] < n:
            env.timeout(1).callbacks.append(callback)

    for _ in range(64):
        env.timeout(1).callbacks.append(callback)
    t = time.perf_counter()
    env.run()
    callback_rate = count[0] / (time.perf_counter() - t)
    return {"process": process_rate, "callback": callback_rate}


def run_case(op: str, algo: str, ranks: int, spec: str) -> dict:
    """Build and simulate one case in this process; return its measurements."""
    import gc

    from simulator.algorithms import REGISTRY, build_schedule
    from simulator.collective import Collective
    from simulator.engine import simulate
    from simulator.topology import parse_topology

    if (op, algo) not in REGISTRY:
        return {"skipped": f"{op}/{algo} is not registered"}
    coll = Collective(op, ranks, 4 * ranks * 1024)
    gc.collect()
    t = time.perf_counter()
    sched = build_schedule(coll, algo)
    _ = sched.arrays
    build = time.perf_counter() - t
    topo = parse_topology(spec)
    before = raw_simpy_rates(200_000)
    t = time.perf_counter()
    trace = simulate(sched, topo)
    engine = time.perf_counter() - t
    after = raw_simpy_rates(200_000)
    raw = {k: (before[k] + after[k]) / 2 for k in before}
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"transfers": len(sched), "build_s": build, "engine_s": engine, "total_s": build + engine,
            "events": trace.events, "events_per_s": trace.events / trace.wall_s, "simulated_s": trace.time,
            "peak_MiB": peak_kib / 1024, "raw_simpy_events_per_s": raw["process"],
            "raw_simpy_callback_events_per_s": raw["callback"], "x_raw": trace.events / trace.wall_s / raw["process"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="only the p <= 256 cases")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--timeout", type=float, default=900, help="seconds allowed per case (default 900)")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        op, algo, ranks, spec = args.case.split("|")
        print(json.dumps(run_case(op, algo, int(ranks), spec)))
        return 0
    from app.output import table

    before = raw_simpy_rates()
    rows = []
    for op, algo, ranks, spec in (QUICK if args.quick else CASES):
        try:
            case = f"{op}|{algo}|{ranks}|{spec}"
            out = subprocess.run([sys.executable, "-m", "benchmarks.engine_scale", "--case", case], capture_output=True,
                                 text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            rows.append({"op": op, "algorithm": algo, "ranks": ranks, "topology": spec,
                         "skipped": f"over {args.timeout:g} s (stopped)"})
            continue
        if out.returncode:
            result = {"skipped": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"}
        else:
            result = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append({"op": op, "algorithm": algo, "ranks": ranks, "topology": spec, **result})
        print(f"  done: {algo} p={ranks} on {spec}", file=sys.stderr, flush=True)
    after = raw_simpy_rates()
    raw = {k: (before[k] + after[k]) / 2 for k in before}
    print(f"# raw simpy on this machine, start and end of the run: {raw['process']:,.0f} events/s (process yielding "
          f"timeouts), {raw['callback']:,.0f} events/s (timeouts with a callback); load average {os.getloadavg()[0]:.1f}")
    headers = ["algorithm", "p", "topology", "transfers", "build(s)", "engine(s)", "total(s)", "events", "events/s",
               "raw simpy/s", "x raw", "peak MiB"]
    body = []
    for r in rows:
        if "skipped" in r:
            body.append([r["algorithm"], r["ranks"], r["topology"], "-", "-", "-", "-", "-", "-", "-", "-", r["skipped"][:40]])
            continue
        body.append([r["algorithm"], r["ranks"], r["topology"], r["transfers"], r["build_s"], r["engine_s"], r["total_s"],
                     r["events"], int(r["events_per_s"]), int(r["raw_simpy_events_per_s"]), r["x_raw"], int(r["peak_MiB"])])
    print(table(headers, body, align="lrlrrrrrrrrr"))
    print("# raw simpy/s: a simpy process yielding timeouts, measured in the same process just before and after the case;")
    print("# x raw = engine events/s / raw simpy/s. build = algorithm's schedule (ScheduleBuilder) + its arrays.")
    if args.json:
        from simulator.profile import atomic_write

        atomic_write(args.json, json.dumps({"raw_simpy_events_per_s": raw, "cases": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
