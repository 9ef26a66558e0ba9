"""Speed of the MSCCL importer and exporter: the shared XML files, and export -> import of ring at growing p.

    python -m benchmarks.msccl [--repeat 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.formats.msccl import check_msccl, export_msccl, import_msccl, read_msccl, roundtrip
from simulator.profile import atomic_write
from simulator.render import table

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "msccl"


def best(repeat: int, fn, *args) -> tuple[float, object]:
    """Fastest of `repeat` runs of fn(*args) (seconds) and the last result."""
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the fastest is reported (default 3)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args()
    rows = []
    for path in sorted(DATA.glob("*.xml")):
        algo = read_msccl(path)
        t_import, imp = best(args.repeat, lambda path: import_msccl(read_msccl(path)), path)
        t_check, result = best(args.repeat, check_msccl, imp)
        rows.append({"case": path.name, "steps": algo.step_count(), "transfers": len(imp.schedule.transfers),
                     "import_ms": t_import * 1e3, "check_ms": t_check * 1e3, "export_ms": None, "ok": result.ok})
    for p in (8, 32, 64):
        coll = Collective("allreduce", p, 4 * p * 64, "float32")
        schedule = build_schedule(coll, "ring")
        t_export, exported = best(args.repeat, export_msccl, schedule)
        t_import, imp = best(args.repeat, roundtrip, schedule, exported)
        rows.append({"case": f"ring allreduce p={p} (export, re-import)", "steps": exported.steps,
                     "transfers": len(imp.schedule.transfers), "import_ms": t_import * 1e3, "check_ms": None,
                     "export_ms": t_export * 1e3, "ok": True})
    print(table(["case", "steps", "transfers", "import(ms)", "check(ms)", "export(ms)", "ok"],
                [[r["case"], r["steps"], r["transfers"], r["import_ms"], r["check_ms"] if r["check_ms"] is not None else "-",
                  r["export_ms"] if r["export_ms"] is not None else "-", r["ok"]] for r in rows], align="lrrrrrl"))
    if args.json:
        atomic_write(args.json, json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
