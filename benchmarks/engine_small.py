"""Small runs: the engine alone (no process start, no schedule build), this engine against the one it replaced.

The batched engine has fixed costs per run and per one-at-a-time transfer that matter when a run is a few
milliseconds (`collsim cost` simulates every algorithm without a closed form). Each case builds its schedule and
topology once, then times `simulate(...)` alone `--repeat` times and keeps the best (least disturbed by a shared
machine). The previous engine is tests/engine_ref (frozen before issue 9), given the same schedule and topology.

    python -m benchmarks.engine_small                  # the table
    python -m benchmarks.engine_small --repeat 50 --json engine_small.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZE = 1 << 20  # bytes per collective: contention-free on ideal, one flow per link on a switch

# (op, algorithm, ranks, topology kind)
CASES = [(op, algo, p, kind)
         for p in (8, 24, 64)
         for kind in ("ideal", "switch")
         for op, algo in (("allgather", "ring"), ("allgather", "bidirectional_ring"), ("allreduce", "double_binary_tree"))]


def _best(engine, schedule, topology, repeat: int) -> float:
    """The least of `repeat` wall times of engine(schedule, topology), in seconds."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        engine(schedule, topology)
        best = min(best, time.perf_counter() - t)
    return best


def measure(repeat: int) -> list[dict]:
    """One row per case: best-of-`repeat` seconds of each engine and their ratio (same makespan checked)."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    import engine_ref

    from simulator.algorithms import build_schedule
    from simulator.collective import Collective
    from simulator.engine import simulate
    from simulator.topology import ideal, switch

    rows = []
    for op, algo, p, kind in CASES:
        schedule = build_schedule(Collective(op, p, SIZE, "int8"), algo)
        topo = ideal(p, 1e-6, 25e9) if kind == "ideal" else switch(p)
        new_time, ref_time = simulate(schedule, topo).time, engine_ref.simulate(schedule, topo).time
        if abs(new_time - ref_time) > 1e-9 * max(abs(ref_time), 1e-12):
            raise SystemExit(f"{op}/{algo} p={p} {kind}: makespans differ ({new_time} vs {ref_time})")
        new = _best(simulate, schedule, topo, repeat)
        ref = _best(engine_ref.simulate, schedule, topo, repeat)
        rows.append({"case": f"{op}/{algo} p={p} {kind}:{p}", "transfers": len(schedule), "engine_ms": new * 1e3,
                     "ref_ms": ref * 1e3, "ratio": new / ref})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20, help="runs per case and engine; the best is kept (default 20)")
    ap.add_argument("--json", metavar="PATH", help="also write the rows and the load average as JSON")
    args = ap.parse_args(argv)
    load_before = os.getloadavg()
    rows = measure(args.repeat)
    load = os.getloadavg()
    print(f"{'case':<48} {'transfers':>9} {'engine ms':>10} {'ref ms':>8} {'ratio':>6}")
    for r in rows:
        print(f"{r['case']:<48} {r['transfers']:>9} {r['engine_ms']:>10.3f} {r['ref_ms']:>8.3f} {r['ratio']:>6.2f}")
    print(f"best of {args.repeat}; load average before {load_before[0]:.2f}, after {load[0]:.2f} (1 min)")
    if args.json:
        Path(args.json).write_text(json.dumps({"repeat": args.repeat, "load_before": load_before, "load_after": load,
                                               "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
