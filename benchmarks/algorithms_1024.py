"""Every registered algorithm at p = 1024: one whole `collsim simulate` process per (op, algorithm).

Each case is `collsim simulate --op OP --algo ALGO --ranks 1024 --size 64MiB --topology switch:1024 --json`, run in
a fresh process by benchmarks.engine_scale's `run_case` (wall time from start to exit, the child's peak resident
memory, an 8 GiB address-space cap and a timeout per case). Parameters are the algorithms' own defaults (builders
pick `group`, `node`, `aggregate` when not given). A case the registry refuses at p = 1024 is not run, with its reason.

    python -m benchmarks.algorithms_1024                        # every case (up to 120 s each)
    python -m benchmarks.algorithms_1024 --only allreduce/ring,alltoall/bruck --timeout 60
    python -m benchmarks.algorithms_1024 --json docs/algorithms_1024.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from benchmarks.engine_scale import _fmt, run_case
from simulator.algorithms import all_specs
from simulator.render import table

RANKS = 1024
SIZE = "64MiB"


def case_argv(op: str, algo: str) -> list[str]:
    """The `collsim simulate` arguments of one case."""
    return ["--op", op, "--algo", algo, "--ranks", str(RANKS), "--size", SIZE, "--topology", f"switch:{RANKS}"]


def run_all(only: set[str] | None, timeout: float) -> list[dict]:
    """One row per registered (op, algorithm) picked by `only` (names 'op/algo'; None: all), run one at a time."""
    rows = []
    for spec in all_specs():
        name = f"{spec.op}/{spec.name}"
        if only is not None and name not in only:
            continue
        refusal = spec.refusal(RANKS)
        result = {"skipped": f"refused up front: {refusal}"} if refusal else run_case("new", case_argv(spec.op, spec.name),
                                                                                      timeout)
        rows.append({"case": name, **result})
        print(f"  done: {name} ({result.get('skipped') or _fmt(result, 'wall_s') + ' s'})", file=sys.stderr, flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated op/algo names (default: every registered algorithm)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds allowed per process (default 120)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args()
    known = {f"{s.op}/{s.name}" for s in all_specs()}
    only = None
    if args.only:
        only = {x.strip() for x in args.only.split(",") if x.strip()}
        bad = sorted(only - known)
        if bad:
            parser.error(f"--only: unknown case {bad[0]!r}; expected op/algo, one of {', '.join(sorted(known))}")
    load_before = os.getloadavg()
    rows = run_all(only, args.timeout)
    load_after = os.getloadavg()
    body = [[r["case"], r.get("transfers", "-"), r.get("skipped", _fmt(r, "wall_s"))[:60], _fmt(r, "engine_s"),
             _fmt(r, "peak_MiB", 0)] for r in rows]
    print(f"# p = {RANKS}, {SIZE}, switch:{RANKS}, whole `collsim simulate` processes one at a time, timeout "
          f"{args.timeout:g} s; load average {load_before[0]:.2f} at the start, {load_after[0]:.2f} at the end "
          f"({os.cpu_count()} CPUs)")
    print(table(["op/algorithm", "transfers", "wall s", "engine s", "peak MiB"], body, align="lrlrr"))
    if args.json:
        from simulator.fileio import atomic_write

        atomic_write(args.json, json.dumps({"ranks": RANKS, "size": SIZE, "timeout_s": args.timeout,
                                            "load_average": {"start": load_before, "end": load_after},
                                            "cpus": os.cpu_count(), "cases": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
