"""Training steps timed two ways: collsim's algorithms on the links (`collsim whatif`'s default) and NCCL's timing.

For DDP and FSDP steps of Llama-2 7B on two nodes of dgx-h100, hgx-b200 and p5 (`collsim whatif` defaults: one
4096-token sequence per GPU, MFU 0.4, 25 MiB buckets, ring algorithms), each case runs with `--timing links` (mode
auto: every call expanded on the links at 16 GPUs), `--timing links --mode isolated` (each call alone, as NCCL
timing runs them), for DDP also `--algo allreduce=hierarchical` (collsim's node-aware all-reduce), and `--timing
nccl`: step time, exposed communication, tokens/s, how the calls were timed, and the wall time of the evaluation,
serially in this process, with the load average printed.

usage: python -m benchmarks.step_timing [--json PATH] [--out docs/whatif.md]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from simulator.fileio import atomic_write
from simulator.program.whatif import StepCase, calls_timed, evaluate
from simulator.units import format_time

from .docs_block import replace_block

BLOCK = "step_timing"  # the generated block of docs/whatif.md

MACHINES = ("dgx-h100:nodes=2", "hgx-b200:nodes=2", "p5:nodes=2")
SCENARIOS = ("ddp", "fsdp")
HIERARCHICAL = (("allreduce", "hierarchical"),)
VARIANTS = (("links", "auto", ()), ("links", "isolated", ()), ("links", "isolated", HIERARCHICAL), ("nccl", "auto", ()))


def cases() -> list[StepCase]:
    """Each scenario on each machine, each variant (hierarchical only where there are all-reduces: DDP)."""
    return [StepCase(scenario, machine, timing=timing, mode=mode, algorithms=algos)
            for scenario in SCENARIOS for machine in MACHINES for timing, mode, algos in VARIANTS
            if not (algos and scenario == "fsdp")]


def run() -> list[dict]:
    rows = []
    for case in cases():
        start = time.perf_counter()
        row = evaluate(case)
        wall = time.perf_counter() - start
        rows.append({"scenario": case.scenario, "machine": case.machine, "timing": case.timing, "mode": case.mode,
                     "algorithms": dict(case.algorithms), "run": row["mode"], "step_s": row["step_s"], "compute_s": row["compute_s"],
                     "exposed_s": row["exposed_s"], "tokens_per_s": row["tokens_per_s"], "calls_timed": calls_timed(row),
                     "wall_s": wall})
    return rows


def table(rows: list[dict]) -> str:
    """A markdown table (as docs/whatif.md shows it)."""
    lines = ["| scenario | machine | timing | run | step | exposed comm | tokens/s | calls timed | wall |",
             "|---|---|---|---|---:|---:|---:|---|---:|"]
    for r in rows:
        timing = r["timing"] + ("" if r["mode"] == "auto" else f" --mode {r['mode']}")
        timing += "".join(f" --algo {op}={name}" for op, name in r["algorithms"].items())
        lines.append(f"| {r['scenario']} | `{r['machine']}` | {timing} | {r['run']} | {r['step_s'] * 1e3:.3f} ms | "
                     f"{r['exposed_s'] * 1e3:.3f} ms | {r['tokens_per_s']:,.0f} | {r['calls_timed']} | "
                     f"{r['wall_s']:.2f} s |")
    return "\n".join(lines)


def markdown(rows: list[dict], wall: float, before: tuple, after: tuple) -> str:
    """The block of docs/whatif.md: the table and what it shows, every number from `rows`."""
    def pick(scenario: str, machine: str, timing: str, mode: str = "auto", algos: bool = False) -> dict:
        return next(r for r in rows if (r["scenario"], r["machine"], r["timing"], r["mode"], bool(r["algorithms"]))
                    == (scenario, machine, timing, mode, algos))

    def exposed(r: dict) -> str:
        return format_time(r["exposed_s"])

    h100, b200 = "dgx-h100:nodes=2", "hgx-b200:nodes=2"
    ring, nccl, hier = pick("ddp", h100, "links"), pick("ddp", h100, "nccl"), pick("ddp", h100, "links", "isolated", True)
    hier_b, nccl_b = pick("ddp", b200, "links", "isolated", True), pick("ddp", b200, "nccl")
    fsdp_ring, fsdp_nccl = pick("fsdp", h100, "links"), pick("fsdp", h100, "nccl")
    return f"""{table(rows)}

On the links, collsim's default all-reduce is one flat ring over the 16 GPUs: it crosses each node boundary on
one NIC, so every 25 MiB bucket moves 2(p-1)/p of its bytes through one 50 GB/s hop and the DDP step exposes
{exposed(ring)} on dgx-h100. NCCL's rings and trees cross nodes on every NIC of the node, so the buckets hide behind
backward: {exposed(nccl)} exposed. FSDP's all-gathers and reduce-scatters go the same way ({exposed(fsdp_ring)} on
the links' rings, {exposed(fsdp_nccl)} timed as NCCL runs them). collsim's node-aware hierarchical all-reduce on the
plain links exposes less than NCCL's timing ({exposed(hier)} against {exposed(nccl)} on dgx-h100, {exposed(hier_b)}
against {exposed(nccl_b)} on hgx-b200): NCCL's timing carries its per-call latency floors and NCCL's own per-lane
NVLink figure (below the datasheet's), which the raw links do not charge.

Produced by `python -m benchmarks.step_timing --out docs/whatif.md` (each case once, serially; {wall:.0f} s in all on
this machine, {os.cpu_count()} cores, load average {before[0]:.2f} {before[1]:.2f} {before[2]:.2f} before and
{after[0]:.2f} {after[1]:.2f} {after[2]:.2f} after). The wall column is one evaluation of each case: at 16 GPUs
`--mode auto` on the links expands every call (exact), which is what the DDP rows' seconds go to."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write the rows and the load average as JSON")
    parser.add_argument("--out", metavar="DOC", help=f"also rewrite the {BLOCK} block of this page (docs/whatif.md)")
    args = parser.parse_args()
    before = os.getloadavg()
    start = time.perf_counter()
    rows = run()
    wall = time.perf_counter() - start
    load = os.getloadavg()
    print(f"# Llama-2 7B steps on 2 nodes, timed on the links and as NCCL runs them; {os.cpu_count()} cores; load "
          f"average before {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}, after {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(table(rows))
    if args.json:
        atomic_write(args.json, json.dumps({"rows": rows, "cores": os.cpu_count(), "wall_s": wall,
                                            "loadavg_before": before, "loadavg_after": load}, indent=1))
    if args.out:
        replace_block(Path(args.out), BLOCK, markdown(rows, wall, before, load))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
