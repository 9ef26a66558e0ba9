"""How fast and how light every refusal of the bad-input corpus is: each case in a fresh `python -m app.cli` process.

Every `Case` of tests/corpus/test_*_corpus.py and tests/corpus/test_corpus_*.py (each module-level list of cases, or
dict of such lists) runs as the harness's subprocess mode runs it: its own directory and files, an empty TMPDIR, a
new session, its timeout. Wall time is measured from fork to exit; CPU time (user + system) and peak resident memory
(ru_maxrss) come from os.wait4. On a shared machine the CPU time is the figure that does not move with the load. The
cases are collected in a child process, so that this process stays small (a forked child's ru_maxrss starts from its
parent's resident size). Prints the slowest and the heaviest refusals and the totals.

    python -m benchmarks.corpus_refusals                      # every case: 1167 cases, 30 minutes at load 9 on 2 cores
    python -m benchmarks.corpus_refusals --only bounds        # the cases whose id or file contains 'bounds'
    python -m benchmarks.corpus_refusals --json refusals.json --top 20
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.corpus.harness import Case, prepare, run_cli

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus"
GOAL_S = 1.0
GOAL_MB = 300.0


def corpus_modules() -> list[str]:
    """Module names of the corpus files, sorted."""
    paths = set(CORPUS.glob("test_*_corpus.py")) | set(CORPUS.glob("test_corpus_*.py"))
    return [f"tests.corpus.{p.stem}" for p in sorted(paths)]


def module_cases(module) -> list[Case]:
    """Every Case in the module's global lists and dicts of lists, each once."""
    found: dict[str, Case] = {}
    for value in vars(module).values():
        groups = value.values() if isinstance(value, dict) else [value]
        for group in groups:
            if isinstance(group, (list, tuple)):
                for case in group:
                    if isinstance(case, Case):
                        found.setdefault(case.id, case)
    return list(found.values())


def _encode(case: Case, source: str, store: Path) -> dict:
    """The case as JSON; its files are written under `store` (so that the parent never holds them)."""
    for name, data in case.files.items():
        path = store / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
    return {"source": source, "id": case.id, "argv": case.argv, "field": case.field, "store": str(store),
            "outputs": case.outputs, "preexisting": case.preexisting, "signal": case.signal, "timeout_s": case.timeout_s}


def collect(store: Path) -> None:
    """In the child: print every corpus case as JSON, its files written under STORE/NUMBER/."""
    import importlib

    rows = []
    for name in corpus_modules():
        for case in module_cases(importlib.import_module(name)):
            rows.append(_encode(case, name.rsplit(".", 1)[1], store / str(len(rows))))
    json.dump(rows, sys.stdout)


def load_cases(store: Path) -> list[dict]:
    """Every case as JSON, collected in a child process."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-m", "benchmarks.corpus_refusals", "--collect", str(store)], cwd=ROOT,
                         env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def measure(row: dict) -> dict:
    """Run one case in a fresh process; its time, peak memory and whether it was refused."""
    signal = tuple(row["signal"]) if row["signal"] else None
    case = Case(id=row["id"], argv=row["argv"], field=row["field"], outputs=row["outputs"],
                preexisting=row["preexisting"], mode="subprocess", signal=signal, timeout_s=row["timeout_s"])
    with tempfile.TemporaryDirectory(prefix="refusal-") as tmp:
        workdir, tmpdir = prepare(case, Path(tmp))
        if Path(row["store"]).exists():
            shutil.copytree(row["store"], workdir, dirs_exist_ok=True)
        result = run_cli(case.argv, workdir, tmpdir, mode="subprocess", timeout_s=case.timeout_s, signal=signal)
    return {"file": row["source"], "id": case.id, "argv": case.argv, "seconds": round(result.seconds, 3),
            "cpu_s": round(result.cpu_seconds, 3), "peak_MB": round(result.peak_rss_above_start / 1e6, 1), "status": result.status,
            "timed_out": result.timed_out, "signal": bool(signal), "refused": result.status != 0,
            "last_line": result.last_line[:200]}


def report(rows: list[dict], top: int) -> None:
    """The slowest `top` refusals, the heaviest, and the totals."""
    def line(r: dict) -> str:
        argv = " ".join(r["argv"])
        return (f"{r['seconds']:7.2f} {r['cpu_s']:6.2f} {r['peak_MB']:8.1f}  {r['file'][5:]:14s} {r['id'][:40]:40s} "
                f"{argv[:60]}")

    header = f"{'time s':>7s} {'cpu s':>6s} {'peak MB':>8s}  {'file':14s} {'case':40s} argv"
    print(f"# the {top} slowest refusals\n{header}")
    print("\n".join(line(r) for r in sorted(rows, key=lambda r: -r["seconds"])[:top]))
    print(f"# the {top} heaviest refusals\n{header}")
    print("\n".join(line(r) for r in sorted(rows, key=lambda r: -r["peak_MB"])[:top]))
    timed = [r for r in rows if not r["signal"]]  # a signalled case runs until its signal, on purpose
    slow = [r for r in timed if r["seconds"] >= GOAL_S]
    heavy = [r for r in rows if r["peak_MB"] >= GOAL_MB]
    print(f"# {len(rows)} cases ({len(rows) - len(timed)} signalled, not timed): total {sum(r['seconds'] for r in rows):.1f} s, "
          f"median {sorted(r['seconds'] for r in timed)[len(timed) // 2]:.2f} s, "
          f"max {max(r['seconds'] for r in timed):.2f} s, CPU median {sorted(r['cpu_s'] for r in timed)[len(timed) // 2]:.2f} s "
          f"max {max(r['cpu_s'] for r in timed):.2f} s, max {max(r['peak_MB'] for r in rows):.0f} MB; "
          f"{len(slow)} at {GOAL_S:g} s or more, {len(heavy)} at {GOAL_MB:g} MB or more, "
          f"{sum(not r['refused'] for r in rows)} not refused, {sum(r['timed_out'] for r in rows)} timed out")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run the cases whose id or corpus file contains this text")
    parser.add_argument("--top", type=int, default=10, help="rows of the slowest and heaviest tables (default 10)")
    parser.add_argument("--json", metavar="FILE", help="also write every case's numbers as JSON")
    parser.add_argument("--collect", metavar="STORE", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.collect:
        collect(args.collect)
        return
    start_load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="corpus-store-") as store:
        cases = [c for c in load_cases(Path(store)) if not args.only or args.only in c["id"] or args.only in c["source"]]
        rows = []
        for i, case in enumerate(cases):
            rows.append(measure(case))
            r = rows[-1]
            if r["seconds"] >= GOAL_S or r["peak_MB"] >= GOAL_MB:  # shown as they come, for a run cut short
                print(f"{i + 1}/{len(cases)} {r['seconds']:.2f} s {r['peak_MB']:.0f} MB {r['id']}", file=sys.stderr,
                      flush=True)
    end_load = os.getloadavg()
    print(f"# load average {start_load[0]:.2f} at start, {end_load[0]:.2f} at end, {os.cpu_count()} CPUs")
    report(rows, args.top)
    if args.json:
        Path(args.json).write_text(json.dumps({"load_average": {"start": start_load, "end": end_load},
                                               "cpus": os.cpu_count(), "cases": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
