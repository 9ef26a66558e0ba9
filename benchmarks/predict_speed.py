"""Wall time of `collsim predict --json` on fixed cases, and whether its output matches a baseline's, number for number.

    python -m benchmarks.predict_speed [--baseline SRC] [--record DIR] [--check DIR] [--json PATH] [--only NAME,...]
                                       [--big]

Each case runs `python -m app.cli predict ... --json` in a fresh process (imports included, as a user sees it),
from this tree, and from `--baseline SRC` if given (another revision's source, e.g. `git archive main`), in
the same run, so the two times share the machine's load. `--record DIR` writes this tree's JSON per case;
`--check DIR` compares with JSON recorded before: every number must be equal (the largest relative
difference is printed otherwise), as must every string. The table quotes the load average, and each case's CPU
seconds and peak RSS (of its process: the wall time on a shared machine depends on the load). `--big` adds the
machines of issue 20 (1,440 and 16,384 GPUs, 1 MiB to 8 GiB: the goal is under 30 s and 2 GiB each).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.build_schedules import write_json
from simulator.render import table

ROOT = Path(__file__).resolve().parents[1]
# (name, preset, op, sizes)
CASES = [
    ("p5x2-allreduce", "p5:nodes=2", "allreduce", "1MiB:16GiB"),
    ("dgx-a100x4-allreduce", "dgx-a100:nodes=4", "allreduce", "1MiB:8GiB"),
    ("p4dex2-allreduce", "p4de:nodes=2", "allreduce", "1MiB:2GiB"),
    ("a3-megax2-allreduce", "a3-mega:nodes=2", "allreduce", "1MiB:8GiB"),
    ("dgx-h100-allreduce", "dgx-h100", "allreduce", "64KiB:4GiB"),
    ("dgx-h100-allgather", "dgx-h100", "allgather", "64KiB:4GiB"),
    ("hgx-b200x2-allreduce", "hgx-b200:nodes=2", "allreduce", "64KiB:1GiB"),
    ("gb200-nvl4x2-allreduce", "gb200-nvl4:nodes=2", "allreduce", "1MiB:4GiB"),
    ("rtx4090-pcie-allreduce", "rtx4090-pcie", "allreduce", "1MiB:2GiB"),
]
BIG = [  # --big: predict at the scale people buy (issue 20)
    ("gb200-nvl72x20-allreduce", "gb200-nvl72:nodes=20", "allreduce", "1MiB:8GiB"),
    ("dgx-h100x2048-allreduce", "dgx-h100:nodes=2048", "allreduce", "1MiB:8GiB"),
]


def run_case(tree: Path, preset: str, op: str, sizes: str) -> tuple[float, dict, float, float]:
    """Wall seconds, parsed JSON, CPU seconds and peak RSS (GiB) of one `collsim predict` from the source tree `tree`."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "app.cli", "predict", "--preset", preset, "--op", op, "--size", sizes, "--json"]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(cmd, cwd=tree, env=env, stdout=out, stderr=err)
        status, usage = os.wait4(child.pid, 0)[1:]
        seconds = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode:
            raise SystemExit(f"predict failed in {tree} for {preset} {op} {sizes}:\n{err.read().decode()}")
        return seconds, json.loads(out.read()), usage.ru_utime + usage.ru_stime, usage.ru_maxrss / (1 << 20)


def largest_difference(a, b) -> float:
    """0.0 if `a` and `b` are equal; else the largest relative difference of two numbers (inf if anything else differs)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return math.inf
        return max((largest_difference(a[k], b[k]) for k in a), default=0.0)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return math.inf
        return max((largest_difference(x, y) for x, y in zip(a, b)), default=0.0)
    if isinstance(a, float) and isinstance(b, float):
        return 0.0 if a == b else abs(a - b) / max(abs(a), abs(b))
    return 0.0 if a == b and type(a) is type(b) else math.inf


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another revision's source tree, timed and compared in the same run")
    parser.add_argument("--record", type=Path, metavar="DIR", help="write this tree's JSON per case to DIR")
    parser.add_argument("--check", type=Path, metavar="DIR", help="compare this tree's JSON with DIR's")
    parser.add_argument("--only", help="comma-separated case names (default: all)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    parser.add_argument("--big", action="store_true", help="also the machines of 1,440 and 16,384 GPUs (minutes)")
    args = parser.parse_args(argv)
    cases = [c for c in CASES + (BIG if args.big else []) if not args.only or c[0] in args.only.split(",")]
    load = os.getloadavg()
    rows, mismatched = [], []
    for name, preset, op, sizes in cases:
        row: dict = {"case": name}
        if args.baseline is not None:
            row["baseline (s)"], before = run_case(args.baseline, preset, op, sizes)[:2]
        row["now (s)"], now, row["CPU (s)"], row["peak RSS (GiB)"] = run_case(ROOT, preset, op, sizes)
        if args.record is not None:
            args.record.mkdir(parents=True, exist_ok=True)
            (args.record / f"{name}.json").write_text(json.dumps(now, indent=2) + "\n")
        if args.baseline is not None:
            row["speed-up"] = row["baseline (s)"] / row["now (s)"]
            row["vs baseline"] = largest_difference(before, now)
        if args.check is not None:
            row["vs recorded"] = largest_difference(json.loads((args.check / f"{name}.json").read_text()), now)
        if any(row.get(k, 0.0) for k in ("vs baseline", "vs recorded")):
            mismatched.append(name)
        rows.append(row)
    print(f"# collsim predict --json, one process per case; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
          f"{os.cpu_count()} cores" + (f"; baseline {args.baseline}" if args.baseline else ""))
    headers = list(rows[0])
    print(table(headers, [[r[h] if h == "case" else f"{r[h]:.3g}" for h in headers] for r in rows]))
    if "now (s)" in headers:
        total = sum(r["now (s)"] for r in rows)
        base = sum(r.get("baseline (s)", 0.0) for r in rows)
        print(f"total: {total:.2f} s" + (f" (baseline {base:.2f} s, x{base / total:.2f})" if base else ""))
    if args.baseline is not None or args.check is not None:
        print("every output identical" if not mismatched else "outputs differ: " + ", ".join(mismatched))
    if args.json:
        write_json(args.json, {"load_average": list(load), "rows": rows, "mismatched": mismatched})
    return 1 if mismatched else 0


if __name__ == "__main__":
    sys.exit(main())
