"""The engine at cluster scale: whole `collsim simulate` processes, this engine against the one it replaced.

Each case runs `collsim simulate ... --json` in a fresh process (so its peak resident memory is its own), timed from
the parent from start to exit (interpreter start, imports, schedule, engine, statistics, output). The previous
engine is tests/engine_ref (frozen before issue 9; float seconds, one max-min per event), run by the same command
with the same schedule builders and Trace: only the engine differs. Every case has a timeout, so one slow case
cannot hang the table; cases the previous engine cannot finish on this machine are not run with it.

    python -m benchmarks.engine_scale                 # the issue's table (about 10 minutes on 2 shared cores)
    python -m benchmarks.engine_scale --quick         # the p <= 256 cases
    python -m benchmarks.engine_scale --only 8192     # the cases whose name contains 8192
    python -m benchmarks.engine_scale --json docs/engine_scale.json
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RING_1024 = ["--op", "allreduce", "--algo", "ring", "--ranks", "1024", "--size", "64MiB"]


def _shuffled(p: int, seed: int = 7) -> str:
    order = list(range(p))
    random.Random(seed).shuffle(order)
    return ",".join(map(str, order))


# (name, collsim simulate arguments, run the previous engine too, the issue's figure for main on this machine kind)
CASES = [
    ("ring p=1024 switch, contention", [*RING_1024, "--topology", "switch:1024"], True, "27.5-32.1 s, 2.6 GiB"),
    ("ring p=1024 switch, --no-contention", [*RING_1024, "--topology", "switch:1024", "--no-contention"], True, "20.4 s"),
    ("ring p=1024 ideal", [*RING_1024, "--topology", "ideal:1024"], True, "21.5 s"),
    ("hierarchical p=1024 cluster:nodes=128,gpus=8",
     ["--op", "allreduce", "--algo", "hierarchical", "--size", "64MiB", "--topology", "cluster:nodes=128,gpus=8"], True,
     "7.6 s"),
    ("desynchronised ring p=256 (shuffled, 4:1 oversubscribed)",
     ["--op", "allreduce", "--algo", "ring", "--size", "64MiB", "--topology", "cluster:nodes=32,gpus=8,oversub=4",
      "--placement", _shuffled(256)], True, ""),
    ("direct p=256 switch", ["--op", "allreduce", "--algo", "direct", "--ranks", "256", "--size", "64MiB",
                             "--topology", "switch:256"], True, ""),
    ("direct p=1024 switch", ["--op", "allreduce", "--algo", "direct", "--ranks", "1024", "--size", "64MiB",
                              "--topology", "switch:1024"], False, "MemoryError after 3 min 54 s at 8.9 GB"),
    ("hierarchical p=8192 cluster:nodes=1024,gpus=8",
     ["--op", "allreduce", "--algo", "hierarchical", "--size", "64MiB", "--topology", "cluster:nodes=1024,gpus=8"], False,
     ""),
    ("ring p=8192 cluster:nodes=1024,gpus=8",
     ["--op", "allreduce", "--algo", "ring", "--size", "64MiB", "--topology", "cluster:nodes=1024,gpus=8"], False, ""),
]
MEMORY_CAP = 8 << 30  # bytes of address space per case process
QUICK = {"desynchronised ring p=256 (shuffled, 4:1 oversubscribed)", "direct p=256 switch"}


def child(engine: str, argv: list[str]) -> int:
    """Run `collsim simulate argv --json` in this process with the given engine; print one JSON line of results.

    The process may map at most MEMORY_CAP bytes: a case too large for the machine fails with collsim's out-of-memory
    error instead of pushing a shared machine into swap."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    sys.path.insert(0, str(ROOT))
    import collsim.simulate as request
    from app.cli import main

    if engine == "ref":
        sys.path.insert(0, str(ROOT / "tests"))
        import engine_ref

        request.run_engine = engine_ref.simulate
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["simulate", *argv, "--json"])  # collsim's own limits apply (ring on 8192 GPUs is refused)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result = {"exit": code, "peak_MiB": usage.ru_maxrss / 1024, "cpu_s": usage.ru_utime + usage.ru_stime}
    if code == 0:
        summary = json.loads(out.getvalue())
        result.update(time_s=summary["time_s"], engine_s=summary["wall_s"], transfers=summary["transfers"],
                      events=summary["events"])
    print(json.dumps(result))
    return 0


def run_case(engine: str, argv: list[str], timeout: float) -> dict:
    """One whole process: wall seconds from start to exit, and what the child reported."""
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "benchmarks.engine_scale", "--child", engine, "--", *argv],
                              capture_output=True, text=True, cwd=ROOT, timeout=timeout,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:
        return {"skipped": f"over {timeout:g} s (stopped)"}
    wall = time.perf_counter() - start
    lines = proc.stdout.strip().splitlines()
    if proc.returncode or not lines:
        tail = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        return {"skipped": tail[:80]}
    result = json.loads(lines[-1])
    if result["exit"]:
        return {"skipped": f"collsim exited {result['exit']}: {proc.stderr.strip()[-80:]}"}
    return {"wall_s": wall, **result}


def _fmt(row: dict, key: str, digits: int = 2) -> str:
    value = row.get(key)
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="only the p <= 256 cases")
    parser.add_argument("--only", metavar="TEXT", help="only the cases whose name contains TEXT (e.g. 8192)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--timeout", type=float, default=300, help="seconds allowed per process (default 300)")
    parser.add_argument("--no-ref", action="store_true", help="do not run the previous engine")
    parser.add_argument("--child", choices=["new", "ref"], help=argparse.SUPPRESS)
    parser.add_argument("argv", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.argv)
    from simulator.render import table

    load_before = os.getloadavg()
    rows = []
    for name, argv, ref_ok, issue in CASES:
        if (args.quick and name not in QUICK) or (args.only and args.only not in name):
            continue
        row = {"case": name, "argv": argv, "issue_main": issue, "new": run_case("new", argv, args.timeout)}
        if ref_ok and not args.no_ref:
            row["ref"] = run_case("ref", argv, args.timeout)
        rows.append(row)
        print(f"  done: {name}", file=sys.stderr, flush=True)
    load_after = os.getloadavg()
    headers = ["case", "transfers", "wall s", "cpu s", "engine s", "peak MiB", "prev wall s", "prev cpu s",
               "prev peak MiB", "prev/now", "same time", "issue: main"]
    body = []
    for r in rows:
        new, ref = r["new"], r.get("ref", {})
        ratio = f"{ref['wall_s'] / new['wall_s']:.1f}x" if "wall_s" in new and "wall_s" in ref else "-"
        same = "-"
        if "time_s" in new and "time_s" in ref:
            same = "yes" if abs(new["time_s"] - ref["time_s"]) <= 1e-9 * ref["time_s"] else (
                f"{abs(new['time_s'] / ref['time_s'] - 1):.1e} rel")
        prev = ref.get("skipped", "not run") if "wall_s" not in ref else _fmt(ref, "wall_s")
        body.append([r["case"], new.get("transfers", "-"), new.get("skipped", _fmt(new, "wall_s"))[:40],
                     _fmt(new, "cpu_s"), _fmt(new, "engine_s"), _fmt(new, "peak_MiB", 0), prev[:40], _fmt(ref, "cpu_s"),
                     _fmt(ref, "peak_MiB", 0), ratio, same, r["issue_main"]])
    print(f"# whole `collsim simulate` processes, one at a time; load average {load_before[0]:.2f} at the start, "
          f"{load_after[0]:.2f} at the end ({os.cpu_count()} CPUs)")
    print(table(headers, body, align="lrrrrrrrrrll"))
    print("# prev = the engine before issue 9 (tests/engine_ref) behind the same command; same time = makespans agree to"
          " 1e-9 (else their relative difference: float near-ties in the previous engine); cpu s = user + system"
          " seconds of the process (less sensitive than wall time to other jobs on a shared machine).")
    if args.json:
        from simulator.fileio import atomic_write

        atomic_write(args.json, json.dumps({"load_average": {"start": load_before, "end": load_after},
                                            "cpus": os.cpu_count(), "cases": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
