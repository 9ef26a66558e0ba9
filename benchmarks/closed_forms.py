"""Closed-form evaluations per second: a mixed sweep over every algorithm that has one, many p, sizes as one array.

usage: python -m benchmarks.closed_forms [--ranks LIST] [--sizes 64] [--repeat 3] [--json PATH]

One pass evaluates, for each p in turn, every (op, algorithm) with a closed form that accepts p,
through the public API (`simulator.cost.predict`) with the sizes as one numpy array (1 B .. 8 GiB,
log-spaced): p outer, algorithms inner, so consecutive calls change algorithm (a mixed sweep). An
evaluation is one (op, algorithm, p, size) value. The cold pass starts with every per-p cache of
the algorithm library emptied (`functools.lru_cache`s in simulator/algorithms); a warm pass reuses
them. The fastest of `--repeat` cold passes and of as many warm ones is reported. Rates are
wall-clock; the load average is printed because the machine is shared.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import sys
import time
from collections import defaultdict

import numpy as np

import simulator.algorithms
from simulator.algorithms import all_specs
from simulator.cost import LinkModel, predict
from simulator.fileio import atomic_write
from simulator.render import table
from simulator.units import parse_rank_range

# powers of two to 1024 and non-powers of two (odd, even, primes, one below and above a power)
DEFAULT_RANKS = "2,3,4,5,6,7,8,12,13,16,24,31,32,48,63,64,96,100,127,128,129,192,255,256,384,500,511,512,768,1000,1023,1024"
GOAL = 1e6  # issue 9: at least 1e6 evaluations per second


def clear_caches() -> int:
    """Empty every lru_cache in the algorithm library's modules; returns how many were cleared."""
    cleared = 0
    for info in pkgutil.iter_modules(simulator.algorithms.__path__):
        module = importlib.import_module(f"simulator.algorithms.{info.name}")
        for value in vars(module).values():
            if callable(getattr(value, "cache_clear", None)) and getattr(value, "__module__", None) == module.__name__:
                value.cache_clear()
                cleared += 1
    return cleared


def one_pass(ranks: list[int], sizes: np.ndarray, model: LinkModel) -> tuple[float, dict]:
    """The mixed sweep once: its wall seconds and, per (op, algorithm), [calls, seconds, slowest call s, its p]."""
    specs = [s for s in all_specs() if s.cost is not None]
    per: dict[tuple[str, str], list] = defaultdict(lambda: [0, 0.0, 0.0, 0])
    clock = time.perf_counter
    start = clock()
    for p in ranks:
        for spec in specs:
            if spec.refusal(p):
                continue
            t0 = clock()
            predict(spec.op, spec.name, p, sizes, model)
            dt = clock() - t0
            row = per[(spec.op, spec.name)]
            row[0] += 1
            row[1] += dt
            if dt > row[2]:
                row[2], row[3] = dt, p
    return clock() - start, dict(per)


def _cold_pass(ranks: list[int], sizes: np.ndarray, model: LinkModel) -> tuple[float, dict]:
    clear_caches()
    return one_pass(ranks, sizes, model)


def measure(ranks: list[int], sizes: np.ndarray, repeat: int) -> dict:
    """`repeat` cold passes and `repeat` warm ones (the fastest of each kept): totals and per-algorithm rates."""
    model = LinkModel(2e-6, 1 / 25e9, 1e-11)
    load_before = os.getloadavg()
    cold_s, cold = min((_cold_pass(ranks, sizes, model) for _ in range(repeat)), key=lambda r: r[0])
    warm_s, best = min((one_pass(ranks, sizes, model) for _ in range(repeat)), key=lambda r: r[0])
    load_after = os.getloadavg()
    n = sizes.size
    calls = sum(row[0] for row in cold.values())
    rows = []
    for (op, name), (k, secs, slow, slow_p) in cold.items():
        warm_secs = best[(op, name)][1]
        rows.append({"op": op, "algorithm": name, "calls": k, "evaluations": k * n,
                     "cold_per_s": k * n / secs, "warm_per_s": k * n / warm_secs,
                     "cold_slowest_call_us": slow * 1e6, "cold_slowest_p": slow_p,
                     "warm_call_us": warm_secs / k * 1e6})
    return {"ranks": ranks, "sizes": n, "size_range_bytes": [float(sizes[0]), float(sizes[-1])],
            "algorithms": len(rows), "calls": calls, "evaluations": calls * n,
            "cold_s": cold_s, "warm_s": warm_s, "cold_per_s": calls * n / cold_s, "warm_per_s": calls * n / warm_s,
            "goal_per_s": GOAL, "repeat": repeat, "load_average_before": list(load_before), "load_average_after": list(load_after),
            "cpus": os.cpu_count(), "rows": rows}


def report(result: dict) -> str:
    """The table and the summary lines."""
    lines = [f"# load average {result['load_average_before'][0]:.2f} at the start, "
             f"{result['load_average_after'][0]:.2f} at the end ({result['cpus']} CPUs)",
             f"# {result['algorithms']} (op, algorithm) with a closed form x {len(result['ranks'])} rank counts "
             f"({min(result['ranks'])}..{max(result['ranks'])}) x {result['sizes']} sizes (numpy array, "
             f"{result['size_range_bytes'][0]:.0f} B .. {result['size_range_bytes'][1] / 2**30:.0f} GiB)"]
    body = [[r["op"], r["algorithm"], r["calls"], f"{r['cold_per_s']:,.0f}", f"{r['warm_per_s']:,.0f}",
             f"{r['warm_call_us']:.1f}", f"{r['cold_slowest_call_us']:.0f} (p={r['cold_slowest_p']})"]
            for r in result["rows"]]
    lines.append(table(["op", "algorithm", "calls", "cold eval/s", "warm eval/s", "warm us/call", "slowest cold call us"],
                       body, align="llrrrrr"))
    for kind in ("cold", "warm"):
        rate = result[f"{kind}_per_s"]
        verdict = "met" if rate >= result["goal_per_s"] else "NOT met"
        lines.append(f"overall {kind}: {result['evaluations']:,} evaluations in {result[kind + '_s']:.3f} s: "
                     f"{rate:,.0f} per second (goal {result['goal_per_s']:,.0f}: {verdict})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default=DEFAULT_RANKS, help="rank counts, a list or ranges (default: 32 values, 2..1024)")
    parser.add_argument("--sizes", type=int, default=64, help="sizes per call, log-spaced 1 B .. 8 GiB (default 64)")
    parser.add_argument("--repeat", type=int, default=3, help="cold and warm passes each; the fastest is reported (default 3)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    for name in ("sizes", "repeat"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: {getattr(args, name)} is too small; expected an integer >= 1")
    result = measure(parse_rank_range(args.ranks), np.geomspace(1, 8 * 2**30, args.sizes), args.repeat)
    print(report(result))
    if args.json:
        atomic_write(args.json, json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
