"""Predict at scale: accuracy on every bundled log, predict against NCCL's own tuning model from 2 to 1024 nodes, and
predict's run time.

    python -m benchmarks.scale_accuracy [--max-nodes 16] [--json] [--out docs/accuracy.md]

(a) Every bundled log with a preset (simulator/nccl/log_presets.py; tests/data/nccl-tests): `collsim predict` against
    the measured out-of-place time, median and worst |error| over sizes >= 1 MiB, busbw at the largest size, as
    benchmarks/preset_accuracy.py computes them (its `accuracy_results`: every constant fitted on the *other* logs
    where one is fitted; its `simulate` column is left out here).
(b) dgx-h100 at 2, 4, 8, ... nodes of 8 GPUs, all-reduce of 8 B .. 16 GiB (powers of 4, then 16 GiB): predict's time
    and NCCL's tuning model's (simulator/nccl/tuning.py `choose`: the time of NCCL's own pick by `predict_times`) on
    the System predict builds for that machine (NcclMachine.system, simulator/nccl/machine.py), and their ratio. A GPU count over the ranks
    predict simulates (predict.MAX_RANKS, read when the script runs) is recorded as refused: when that cap is lifted
    the same command times those counts too.
(c) predict's run time per case, CPU seconds of this process and wall seconds: per log (its sizes >= 1 MiB in
    one call) and per node count (all sizes in one call).

The default run stops at 16 nodes (about a minute of CPU); `--max-nodes 1024` is the full table (predict's time
grows about as p^1.5-2 in the GPU count). `--jobs N` runs the log table and the node counts in N processes (each
case's CPU time is its own process's). `--out` rewrites the `scale_accuracy` block of the page with the load
average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from simulator.errors import CollsimError
from simulator.nccl import predict as nccl
from simulator.nccl.machine import resolve
from simulator.nccl.tuning import choose
from simulator.render import table
from simulator.topology.spec import parse_topology
from simulator.units import format_size

from .docs_block import replace_block
from .preset_accuracy import ROOT, accuracy_results

BLOCK = "scale_accuracy"
PRESET = "dgx-h100"
SIZES = [8 << (2 * k) for k in range(16)] + [16 << 30]  # 8 B, 32 B, ... 8 GiB (powers of 4), 16 GiB
MAX_NODES = 1024


def node_counts(max_nodes: int) -> list[int]:
    """2, 4, 8, ... up to max_nodes (a power of two from 2 to MAX_NODES)."""
    if not 2 <= max_nodes <= MAX_NODES or max_nodes & (max_nodes - 1):
        raise CollsimError(f"max-nodes: {max_nodes}; expected a power of two from 2 to {MAX_NODES}")
    return [1 << k for k in range(1, max_nodes.bit_length())]


def cap() -> int | None:
    """The most ranks predict simulates today (None once the cap is gone)."""
    return getattr(nccl, "MAX_RANKS", None)


def log_rows(data: Path) -> list[dict]:
    """(a) and (c) per log: predict against the measured times, and predict's wall time."""
    results, _, _ = accuracy_results(data, with_simulate=False)
    rows = []
    for r in results:
        pred = r["predict"]
        held = r.get("predict_loo") if r["fitted_on_this_log"] else None  # a constant fitted on this log: held out
        rows.append({"log": r["log"], "machine": r["machine"], "preset": pred["spec"], "op": r["op"], "ranks": r["ranks"],
                     "median_abs_pct": pred["median_abs_pct"], "worst_abs_pct": pred["worst_abs_pct"],
                     "held_out": None if held is None else {k: held[k] for k in ("median_abs_pct", "worst_abs_pct")},
                     "measured_busbw_GBps": r["measured_busbw_GBps"], "predicted_busbw_GBps": pred["busbw_GBps"],
                     "predict_wall_s": pred["wall_s"], "predict_cpu_s": pred["cpu_s"]})
    return rows


def scale_case(nodes: int, sizes: list[int]) -> dict:
    """(b) and (c) at one node count: predict and NCCL's model per size, or refused over predict's cap."""
    topology = parse_topology(f"{PRESET}:nodes={nodes}")
    ranks = topology.num_devices
    limit = cap()
    if limit is not None and ranks > limit:
        return {"nodes": nodes, "ranks": ranks, "refused": f"predict simulates at most {limit} ranks"}
    machine = resolve(topology)  # master's tables, as predict
    system, _ = machine.system(ranks)
    picks, model_s, _ = choose(system, "allreduce", sizes)
    start, cpu = time.perf_counter(), time.process_time()
    rows = nccl.predict(machine, "allreduce", sizes, ranks=ranks)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"nodes": nodes, "ranks": ranks, "refused": None, "predict_wall_s": wall, "predict_cpu_s": cpu,
            "sizes": [{"bytes": n, "predict_s": r.time_s, "predict_pick": f"{r.nccl_algo}/{r.proto}",
                       "model_s": float(m), "model_pick": f"{a}/{p}", "ratio": r.time_s / float(m)}
                      for n, r, m, (a, p) in zip(sizes, rows, model_s, picks)]}


def _log_table(rows: list[dict]) -> tuple[list[str], list[list]]:
    head = ["log", "machine", "preset", "p", "median", "worst", "busbw measured", "busbw predicted", "predict CPU (wall)"]
    body = []
    for r in rows:
        cells = [f"{r['median_abs_pct']:.1f}%", f"{r['worst_abs_pct']:.0f}%"]
        if r["held_out"] is not None:  # in-sample: in parentheses, then the held-out value
            held = r["held_out"]
            cells = [f"({cells[0]}) {held['median_abs_pct']:.1f}%", f"({cells[1]}) {held['worst_abs_pct']:.0f}%"]
        body.append([r["log"][:2], r["machine"], f"`{r['preset']}`", r["ranks"], *cells,
                     f"{r['measured_busbw_GBps']:.1f}", f"{r['predicted_busbw_GBps']:.1f}", _run_time(r)])
    return head, body


def _scale_table(cases: list[dict]) -> tuple[list[str], list[list]]:
    head = ["size"] + [f"{c['nodes']} nodes ({c['ranks']} GPUs)" for c in cases]
    body = []
    for k, n in enumerate(SIZES):
        line = [format_size(n)]
        for c in cases:
            if c["refused"]:
                line.append("refused")
                continue
            s = c["sizes"][k]
            same = s["predict_pick"] == s["model_pick"]
            line.append(f"{s['ratio']:.2f}" + ("" if same else f" ({s['predict_pick']}; model {s['model_pick']})"))
        body.append(line)
    body.append(["predict CPU (wall)"] + ["-" if c["refused"] else _run_time(c) for c in cases])
    return head, body


def _run_time(row: dict) -> str:
    return f"{row['predict_cpu_s']:.2f} s ({row['predict_wall_s']:.2f} s)"


def markdown(head: list[str], body: list[list]) -> str:
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                     + ["| " + " | ".join(str(x) for x in line) + " |" for line in body])


def page_block(logs: list[dict], cases: list[dict], loads: tuple[str, str], wall: float, argv: str) -> str:
    """The docs block: the log table, the ratio table, and how they were made."""
    limit = cap()
    return "\n".join([
        "Predict against every bundled log with a preset: median and worst |error| of the out-of-place time over sizes "
        ">= 1 MiB, busbw at the largest size (GB/s), and predict's CPU time (wall time in parentheses: other jobs "
        "share the 2 cores) for the log's sizes. In parentheses in the error columns: "
        "with a constant fitted on this log too (the SHM load rate on 12 and 13), followed by the value fitted on the "
        "other log (benchmarks/preset_accuracy.py's leave-one-out).", "",
        markdown(*_log_table(logs)), "",
        f"`{PRESET}` all-reduce at each node count: predict's time / NCCL's tuning model's time for NCCL's own pick "
        "(tuning.py `predict_times` on the System predict builds); where predict runs another algorithm or protocol "
        "than the model's pick (it also times the other of ring and tree across nodes), both are named. The last row "
        "is predict's CPU (wall) time for all sizes in one call. "
        + (f"Refused: over the {limit} ranks predict simulates today." if limit is not None else ""), "",
        markdown(*_scale_table(cases)), "",
        "Largest ratio at each node count: " + "; ".join(_largest(c) for c in cases if not c["refused"]) + ".", "",
        f"Made by `python -m benchmarks.scale_accuracy {argv}` in {wall:.0f} s on this machine (2 cores shared with "
        f"other jobs; load average {loads[0]} before, {loads[1]} after).",
    ])


def _largest(case: dict) -> str:
    top = max(case["sizes"], key=lambda s: s["ratio"])
    return f"{case['nodes']} nodes {top['ratio']:.2f} at {format_size(top['bytes'])} ({top['predict_pick']})"


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_all(data: Path, counts: list[int], jobs: int = 1) -> tuple[list[dict], list[dict]]:
    """(a) and (b), in `jobs` processes (the largest node counts first, so that they do not start last)."""
    def done(case: dict) -> dict:
        print(f"# {case['nodes']} nodes: " + (case["refused"] or _run_time(case)), file=sys.stderr)
        return case
    if jobs == 1:
        return log_rows(data), [done(scale_case(nodes, SIZES)) for nodes in counts]
    with ProcessPoolExecutor(jobs) as pool:
        logs = pool.submit(log_rows, data)
        futures = {nodes: pool.submit(scale_case, nodes, SIZES) for nodes in sorted(counts, reverse=True)}
        return logs.result(), [done(futures[nodes].result()) for nodes in counts]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT / "tests" / "data" / "nccl-tests"), help="the bundled logs")
    parser.add_argument("--max-nodes", type=int, default=16, help=f"largest node count of (b) (default 16; {MAX_NODES}: "
                        "the full table, long)")
    parser.add_argument("--jobs", type=int, default=1, help="processes for the log table and the node counts (default 1)")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON instead of tables")
    parser.add_argument("--out", metavar="PAGE", help="rewrite the scale_accuracy block of PAGE (docs/accuracy.md)")
    args = parser.parse_args(argv)
    try:
        counts = node_counts(args.max_nodes)
    except CollsimError as exc:
        parser.error(str(exc))
    if args.jobs < 1:
        parser.error(f"jobs: {args.jobs}; expected a process count >= 1")
    before, start = _load(), time.perf_counter()
    logs, cases = run_all(Path(args.data), counts, args.jobs)
    wall, after = time.perf_counter() - start, _load()
    if args.json:
        print(json.dumps({"logs": logs, "scale": cases, "wall_s": wall, "load_average": [before, after]}, indent=1))
    else:
        print(table(*_log_table(logs)))
        print()
        print(table(*_scale_table(cases)))
        print(f"# {wall:.0f} s; load average {before} before, {after} after")
    if args.out:
        shown = f"--max-nodes {args.max_nodes}" + (f" --jobs {args.jobs}" if args.jobs > 1 else "") + f" --out {args.out}"
        replace_block(Path(args.out), BLOCK, page_block(logs, cases, (before, after), wall, shown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
