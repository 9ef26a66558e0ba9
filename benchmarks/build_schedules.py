"""How long building each algorithm's schedule takes, and how many transfers it has.

usage: python -m benchmarks.build_schedules [--ranks 32,128] [--big-ring 1024] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from simulator.algorithms import all_specs, build_schedule
from simulator.collective import Collective
from simulator.render import table
from simulator.units import parse_rank_range


def time_build(op: str, name: str, p: int, repeat: int) -> tuple[float, int]:
    """Best wall time of `repeat` builds (seconds) and the transfer count."""
    coll = Collective(op, p, p * 4096, "float32")
    best, count = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        schedule = build_schedule(coll, name)
        best = min(best, time.perf_counter() - start)
        count = len(schedule)
    return best, count


def write_json(path: str, data: object) -> None:
    """Write JSON through a temporary file and a rename, so no half-written file is left."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=2)
    os.replace(tmp, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="32,128", help="rank counts for every algorithm (default 32,128)")
    parser.add_argument("--big-ring", type=int, default=1024, help="also build ring allreduce at this p (0: skip)")
    parser.add_argument("--repeat", type=int, default=3, help="builds per case; the best is reported")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args()
    cases = [(s.op, s.name, p) for p in parse_rank_range(args.ranks) for s in all_specs()]
    if args.big_ring:
        cases.append(("allreduce", "ring", args.big_ring))
    rows = []
    for op, name, p in cases:
        seconds, count = time_build(op, name, p, 1 if p > 256 else args.repeat)
        rows.append({"op": op, "algorithm": name, "ranks": p, "transfers": count, "build_ms": seconds * 1e3,
                     "us_per_transfer": seconds * 1e6 / max(count, 1)})
    print(table(["op", "algorithm", "p", "transfers", "build(ms)", "us/transfer"],
                [[r["op"], r["algorithm"], r["ranks"], r["transfers"], f"{r['build_ms']:.1f}", f"{r['us_per_transfer']:.1f}"]
                 for r in rows], align="llrrrr"))
    if args.json:
        write_json(args.json, {"python": sys.version.split()[0], "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
