"""How `collsim lint-program` scales with the size of a program file: seconds and peak memory per operation count.

Each program is a synthetic TP x DP step written out rank by rank, as `collsim scenario hybrid --out` writes one
(every rank calls its own tensor-parallel group, so no two ranks share a key): 64 ranks (8 nodes of 8), groups
tp0..tp7 (a node each) and dp0..dp7 (one GPU of every node), and per layer and rank a forward compute, a TP
all-reduce, a backward compute, a TP all-reduce, a record on the main stream, a wait and a DP all-reduce on the
comm stream (7 operations). The largest, 768k operations, is a 43 MB YAML file.

Each lint runs as its own `python -m app.cli lint-program FILE --json` process; the table gives its wall seconds
and its peak resident memory (ru_maxrss of the child).

    python -m benchmarks.program_scale                 # 10k, 100k, 384k, 768k operations
    python -m benchmarks.program_scale --ops 10000,50000 --json
    python -m benchmarks.program_scale --unique-names  # no line repeats: the YAML reader's worst case
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORLD, NODE = 64, 8
OPS_PER_LAYER = 7
DEFAULT_OPS = (10_000, 100_000, 384_000, 768_000)
REPO = Path(__file__).resolve().parents[1]


def program_text(ops: int, world: int = WORLD, node: int = NODE, unique: bool = False) -> str:
    """A TP x DP program of about `ops` operations in all (whole layers, at least one), one operation per line;
    `unique` pads each rank's mappings with its own number of spaces (`{   op: ...`: the same data), so that no two
    lines are equal (the YAML reader's worst case)."""
    layers = max(1, round(ops / (world * OPS_PER_LAYER)))
    nodes = world // node
    lines = [f"# {layers} layers x {OPS_PER_LAYER} operations x {world} ranks (benchmarks/program_scale.py)",
             f"world: {world}", "groups:"]
    lines += [f"  tp{n}: \"{n * node}-{n * node + node - 1}\"" for n in range(nodes)]
    lines += [f"  dp{g}: [{', '.join(str(g + node * n) for n in range(nodes))}]" for g in range(node)]
    lines.append("ranks:")
    for rank in range(world):
        tp, dp = f"tp{rank // node}", f"dp{rank % node}"
        lines.append(f"  {rank}:")
        pad = " " * rank if unique else ""
        for layer in range(layers):
            lines += [f"    - {{{pad}op: compute, time: 1.2ms, name: f{layer}}}",
                      f"    - {{{pad}op: allreduce, group: {tp}, size: 16MiB, name: tf{layer}}}",
                      f"    - {{{pad}op: compute, time: 2.4ms, name: b{layer}}}",
                      f"    - {{{pad}op: allreduce, group: {tp}, size: 16MiB, name: tb{layer}}}",
                      f"    - {{{pad}op: record, event: g{layer}}}",
                      f"    - {{{pad}op: wait, event: g{layer}, stream: comm}}",
                      f"    - {{{pad}op: allreduce, group: {dp}, size: 25MiB, stream: comm, name: d{layer}}}"]
    return "\n".join(lines) + "\n"


def write_program(path: str | Path, ops: int, unique: bool = False) -> int:
    """Write the program of about `ops` operations to `path`; return its exact operation count."""
    text = program_text(ops, unique=unique)
    Path(path).write_text(text)
    layers = max(1, round(ops / (WORLD * OPS_PER_LAYER)))
    return layers * OPS_PER_LAYER * WORLD


def lint(path: Path, timeout: float) -> dict:
    """Lint one file in a child process: wall seconds, the child's own peak RSS (wait4), exit status, summary."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "app.cli", "lint-program", str(path), "--json"], env=env,
                                stdout=out, stderr=err)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > timeout:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.01)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    row = {"status": proc.returncode, "seconds": round(seconds, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
           "peak_mb": round(usage.ru_maxrss / 1024)}
    if proc.returncode in (0, 1):
        row["operations"] = json.loads(stdout)["operations"]
    else:
        row["error"] = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit {proc.returncode}"
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", default=",".join(map(str, DEFAULT_OPS)), help="operation counts, comma-separated")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per lint before it is killed")
    parser.add_argument("--unique-names", action="store_true", help="no two operation lines equal (the reader's worst case)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for ops in sorted(int(float(x)) for x in args.ops.split(",")):
            path = Path(tmp) / f"p{ops}.yaml"
            exact = write_program(path, ops, args.unique_names)
            rows.append({"ops": exact, "bytes": path.stat().st_size, **lint(path, args.timeout)})
            path.unlink()
    if args.json:
        print(json.dumps({"world": WORLD, "unique_names": args.unique_names, "load": os.getloadavg(), "rows": rows}, indent=1))
        return 0
    names = ", every line distinct" if args.unique_names else ""
    print(f"# lint-program on a {WORLD}-rank TP x DP program{names} (load average {os.getloadavg()[0]:.2f})")
    print(f"{'ops':>9} {'bytes':>12} {'lint s':>8} {'CPU s':>7} {'peak MB':>8}  status")
    for r in rows:
        print(f"{r['ops']:>9,} {r['bytes']:>12,} {r['seconds']:>8.2f} {r['cpu_s']:>7.2f} {r['peak_mb']:>8}  {r['status']} "
              f"{r.get('error', '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
