"""Measured vs replayed step time of real traces: DDP and FSDP on gloo, 2 and 4 ranks (the table of docs/traces.md).

Per run (default 3): benchmarks.make_traces makes fresh traces (one world per kind and rank count), `collsim
import-trace` turns each set into a program, and `collsim run-program --timing measured` replays it (every call at
its measured time, every host span as it ran). Per configuration: the measured step (first rank's start to the last
rank's end, clocks aligned as import-trace aligns them) and the replayed step, median over the runs, with the load
average; and, for the median run, each call's measured time beside its span in the trace on rank 0 (issue to end:
waiting for the other ranks included) and in the replay on rank 0 (arrival to end).

    python -m benchmarks.trace_replay                  # 3 runs, writes the table into docs/traces.md
    python -m benchmarks.trace_replay --runs 1 --ranks 2 --kinds ddp --no-write
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from benchmarks.docs_block import replace_block
from benchmarks.make_traces import KINDS, make
from collsim.import_trace import ImportTraceRequest
from simulator.program.loader import program_from_dict
from simulator.program.run import run_program
from simulator.topology import ideal
from simulator.units import format_size

DOC = Path("docs/traces.md")


def table(headers: list[str], rows: list[list], align: str) -> str:
    """A markdown table ('l'/'r' per column)."""
    rule = ["---:" if a == "r" else "---" for a in align]
    return "\n".join("| " + " | ".join(map(str, r)) + " |" for r in [headers, rule, *rows])


def replay(folder: Path) -> dict:
    """Import one world's traces and replay them with measured timing: steps, and per call the three times."""
    files = tuple(str(p) for p in sorted(folder.glob("rank*.json.gz")))
    imported = ImportTraceRequest(files=files).run().imported
    program = program_from_dict(imported.program, source=folder.name)
    result = run_program(program, ideal(program.world, 2e-6, 25e9), timing="measured")
    calls = [o for o in result.collectives() if o["rank"] == 0]
    rows = [{"op": c["op"], "bytes": c["bytes"], "measured_s": c["time_s"], "trace_span_s": c["span_s"],
             "replay_span_s": o["end"] - o["arrive"]} for c, o in zip(imported.calls, calls)]
    return {"measured_s": imported.step_s, "replayed_s": result.step_time, "calls": rows}


def ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.3f}"


def render(results: dict[tuple[str, int], list[dict]], loads: list[tuple[float, float, float]]) -> str:
    rows = []
    for (kind, ranks), runs in results.items():
        measured = statistics.median(r["measured_s"] for r in runs)
        replayed = statistics.median(r["replayed_s"] for r in runs)
        rows.append([kind, ranks, ms(measured), ms(replayed), f"{(replayed / measured - 1) * 100:+.1f}%",
                     " / ".join(f"{ms(r['measured_s'])} vs {ms(r['replayed_s'])}" for r in runs)])
    out = [f"{len(next(iter(results.values())))} runs; load average (1, 5, 15 min) before each run: "
           + "; ".join(f"{a:.2f} {b:.2f} {c:.2f}" for a, b, c in loads) + " (2 shared cores).", "",
           table(["kind", "ranks", "measured ms (median)", "replayed ms (median)", "replay error", "each run: measured vs replayed"],
                 rows, "lrrrrl")]
    for (kind, ranks), runs in results.items():
        run = sorted(runs, key=lambda r: r["measured_s"])[len(runs) // 2]
        out += ["", f"{kind}, {ranks} ranks (the median run): each call's measured time, and its span on rank 0 in "
                "the trace (issue to end) and in the replay (arrival to end), ms", "",
                table(["call", "op", "size", "measured", "trace span", "replay span"],
                      [[k, c["op"], format_size(c["bytes"]), ms(c["measured_s"]), ms(c["trace_span_s"]),
                        ms(c["replay_span_s"])] for k, c in enumerate(run["calls"])], "rllrrr")]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="fresh trace sets per configuration (default 3)")
    ap.add_argument("--ranks", default="2,4", help="world sizes (default 2,4)")
    ap.add_argument("--kinds", default=",".join(KINDS), help="ddp, fsdp or both (default both)")
    ap.add_argument("--no-write", action="store_true", help="print the table only (default: also into docs/traces.md)")
    args = ap.parse_args(argv)
    configs = [(k, int(p)) for k in args.kinds.split(",") for p in args.ranks.split(",")]
    results: dict[tuple[str, int], list[dict]] = {c: [] for c in configs}
    loads = []
    with tempfile.TemporaryDirectory(prefix="collsim-replay-") as tmp:
        for run in range(args.runs):
            loads.append(os.getloadavg())
            for kind, ranks in configs:
                make(kind, ranks, Path(tmp) / str(run))
                results[(kind, ranks)].append(replay(Path(tmp) / str(run) / f"{kind}-{ranks}r"))
    text = render(results, loads)
    print(text)
    if not args.no_write:
        replace_block(DOC, "trace_replay", text)


if __name__ == "__main__":
    main()
