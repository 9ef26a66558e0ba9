"""Training steps timed two ways: collsim's algorithms on the links (`collsim whatif`'s default) and NCCL's timing.

For DDP, FSDP and hybrid (TP 8 inside a node x DP 2) steps of Llama-2 7B on two nodes of dgx-h100, hgx-b200 and p5
(`collsim whatif` defaults: one 4096-token sequence per GPU, MFU 0.4, 25 MiB buckets, ring algorithms), each case
runs with `--timing links` (mode auto: every call expanded on the links at 16 GPUs), `--timing links --mode
isolated` (each call alone, as NCCL timing runs them), for DDP also `--algo allreduce=hierarchical` (collsim's
node-aware all-reduce), and `--timing nccl`: step time, exposed communication, tokens/s, how the calls were timed,
and the wall time of the evaluation, serially in this process, with the load average printed. For the hybrid step
on dgx-h100 the calls of rank 0 are also listed by shape, each timed both ways (links isolated, NCCL).

usage: python -m benchmarks.step_timing [--json PATH] [--out docs/whatif.md]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import textwrap
import time
from pathlib import Path

from simulator.fileio import atomic_write
from simulator.formats.nccl_tests import read_log
from simulator.nccl.channels import NVLS_STEP_FIT
from simulator.nccl.predict import predict
from simulator.program.whatif import StepCase, calls_timed, evaluate, run_step
from simulator.topology import parse_topology
from simulator.units import format_size, format_time

from .docs_block import replace_block

BLOCK = "step_timing"  # the generated block of docs/whatif.md

MACHINES = ("dgx-h100:nodes=2", "hgx-b200:nodes=2", "p5:nodes=2")
SCENARIOS = ("ddp", "fsdp", "hybrid")
WIDTH = 116  # the page's line length
BREAKDOWN = ("hybrid", "dgx-h100:nodes=2")  # the case whose calls are listed by shape, timed both ways
LOG_04 = Path(__file__).resolve().parents[1] / "tests" / "data" / "nccl-tests" / "04_h100_p5_1node_8gpu_allreduce_awsbatch.txt"
HIERARCHICAL = (("allreduce", "hierarchical"),)
VARIANTS = (("links", "auto", ()), ("links", "isolated", ()), ("links", "isolated", HIERARCHICAL), ("nccl", "auto", ()))


def cases() -> list[StepCase]:
    """Each scenario on each machine, each variant (hierarchical only for DDP, whose gradient all-reduces span nodes;
    the hybrid step's DP groups hold one GPU per node, where it is the ring)."""
    return [StepCase(scenario, machine, timing=timing, mode=mode, algorithms=algos)
            for scenario in SCENARIOS for machine in MACHINES for timing, mode, algos in VARIANTS
            if not (algos and scenario != "ddp")]


def call_shapes(scenario: str, machine: str) -> list[dict]:
    """Rank 0's collective calls of the step grouped by op, group kind (tp, dp, ...), size and stream: how many, where
    the group's members sit, and the time of one call timed on the links (isolated) and as NCCL runs it."""
    shapes: dict[tuple, dict] = {}
    for timing in ("links", "nccl"):
        spec, _, result = run_step(StepCase(scenario, machine, timing=timing, mode="isolated"))
        per_node = spec.layout.gpus_per_node
        for o in result.ops:
            op = result.program.ops(o.rank)[o.index]
            if o.rank or not op.is_collective:
                continue
            members = result.program.groups[op.group]
            nodes = len({m // per_node for m in members})
            key = (op.op, re.sub(r"\d+$", "", op.group), op.nbytes, op.stream)
            where = f"{len(members)} on one node" if nodes == 1 else f"{len(members) // nodes} on each of {nodes} nodes"
            row = shapes.setdefault(key, {"op": op.op, "group": key[1], "bytes": op.nbytes, "dtype": op.dtype,
                                          "stream": op.stream, "ranks": len(members), "nodes": nodes, "members": where,
                                          "calls": 0})
            row["calls"] += timing == "links"
            row[f"{timing}_s"] = o.end - o.start  # isolated: every call of a shape takes the same time
            row[f"{timing}_algorithm"] = o.algorithm
    return list(shapes.values())


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


def one_node_reference(shape: dict, machine: str) -> dict:
    """For a call inside one node: NCCL's own ring at its size (`collsim predict --algo Ring`) and what log 04 (one p5
    node of 8 H100, nccl-tests all-reduce, float32) measured at that size, out of place (None where it has no row)."""
    ring = predict(parse_topology(machine), shape["op"], [shape["bytes"]], ranks=shape["ranks"], algo="ring",
                   dtype=shape["dtype"])[0]
    measured = dict(read_log(LOG_04).measurements()).get(shape["bytes"]) if shape["ranks"] == 8 else None
    topology = parse_topology(machine)
    return {"nccl_ring_s": ring.time_s, "nccl_ring_proto": ring.proto, "log_04_s": measured,
            "nvlink_Bps": topology.path_cost(0, 1)[1], "nvls_fit_logs": NVLS_STEP_FIT[1].split(";")[0]}


def shapes_table(shapes: list[dict]) -> str:
    """A markdown table of call_shapes: per call both ways, and the difference times the calls."""
    lines = ["| call | group | members | size | stream | calls | links (isolated) | NCCL timing | NCCL - links, all calls |",
             "|---|---|---|---:|---|---:|---:|---:|---:|"]
    for c in shapes:
        lines.append(f"| {c['op']} | {c['group']} | {c['members']} | {format_size(c['bytes'])} | {c['stream']} | "
                     f"{c['calls']} | {c['links_s'] * 1e6:.1f} us ({c['links_algorithm']}) | {c['nccl_s'] * 1e6:.1f} us "
                     f"({c['nccl_algorithm']}) | {c['calls'] * (c['nccl_s'] - c['links_s']) * 1e3:+.3f} ms |")
    return "\n".join(lines)


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


def markdown(rows: list[dict], shapes: list[dict], reference: dict, wall: float, before: tuple, after: tuple) -> str:
    """The block of docs/whatif.md: the tables and what they show, every number from `rows`, `shapes` and
    `reference` (one_node_reference of the biggest one-node shape)."""
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

{hybrid_text(rows, shapes, reference)}

Produced by `python -m benchmarks.step_timing --out docs/whatif.md` (each case once, serially; {wall:.0f} s in all on
this machine, {os.cpu_count()} cores, load average {before[0]:.2f} {before[1]:.2f} {before[2]:.2f} before and
{after[0]:.2f} {after[1]:.2f} {after[2]:.2f} after). The wall column is one evaluation of each case: at 16 GPUs
`--mode auto` on the links expands every call (exact), which is what the DDP rows' seconds go to."""


def hybrid_text(rows: list[dict], shapes: list[dict], ref: dict) -> str:
    """What the hybrid step's shapes show: where NCCL timing's step goes past the links' isolated step."""
    scenario, machine = BREAKDOWN
    links, nccl, exact = (next(r for r in rows if (r["scenario"], r["machine"], r["timing"], r["mode"]) ==
                               (scenario, machine, timing, mode)) for timing, mode in
                          (("links", "isolated"), ("nccl", "auto"), ("links", "auto")))
    tp = max((c for c in shapes if c["nodes"] == 1), key=lambda c: c["calls"] * c["bytes"])
    dp = [c for c in shapes if c["nodes"] > 1]
    extra = sum(c["calls"] * (c["nccl_s"] - c["links_s"]) for c in dp)
    us = lambda t: f"{t * 1e6:.1f} us"  # noqa: E731
    measured = (f" nccl-tests on one p5 node of 8 H100 (log 04, float32) measured {us(ref['log_04_s'])} at that size "
                f"(not out of sample: NCCL timing's NVLS step cost was fitted on {ref['nvls_fit_logs']})."
                if ref["log_04_s"] else "")
    head = f"""The hybrid step (TP {tp['ranks']} inside a node x DP {dp[0]['ranks']}, `{machine}`) takes \
{format_time(nccl['step_s'])} timed as NCCL runs it against {format_time(links['step_s'])} on the links with each call \
timed alone ({format_time(exact['step_s'])} with `--mode auto`, where the calls share the links). Its calls by shape, \
timed both ways:"""
    tail = f"""Of the {(nccl['step_s'] - links['step_s']) * 1e3:.3f} ms, {tp['calls'] * (tp['nccl_s'] - tp['links_s']) * 1e3:.3f} ms \
is the {tp['calls']} tensor-parallel all-reduces of {format_size(tp['bytes'])} on {tp['ranks']} GPUs of a node, which \
run on the compute stream, so each call's time adds to the step: the links' ring takes {us(tp['links_s'])} (NVLink at \
its datasheet {ref['nvlink_Bps'] / 1e9:.0f} GB/s, no protocol cost), NCCL's timing {us(tp['nccl_s'])} \
({tp['nccl_algorithm']}, NCCL's pick; its ring would take {us(ref['nccl_ring_s'])} with {ref['nccl_ring_proto']}).\
{measured} The data-parallel all-reduces (one GPU on each node, a ring through one NIC either way) take \
{extra * 1e3:.3f} ms more in all, nearly all of it hidden behind backward on the comm stream (the step grows by \
{(nccl['step_s'] - links['step_s'] - tp['calls'] * (tp['nccl_s'] - tp['links_s'])) * 1e3:.3f} ms beyond the \
tensor-parallel calls' share). So the links' {format_time(links['step_s'])} is the optimistic number; nothing in NCCL \
timing was changed for it."""
    return f"{wrap(head)}\n\n{shapes_table(shapes)}\n\n{wrap(tail)}"


def wrap(text: str) -> str:
    """`text` in lines of the page's width, a number kept on the line of its unit."""
    for unit in (" ms", " us", " GB/s"):
        text = text.replace(unit, "\0" + unit[1:])
    return textwrap.fill(text, WIDTH).replace("\0", " ")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write the rows and the load average as JSON")
    parser.add_argument("--out", metavar="DOC", help=f"also rewrite the {BLOCK} block of this page (docs/whatif.md)")
    args = parser.parse_args()
    before = os.getloadavg()
    start = time.perf_counter()
    rows = run()
    wall = time.perf_counter() - start
    shapes = call_shapes(*BREAKDOWN)
    reference = one_node_reference(max((c for c in shapes if c["nodes"] == 1), key=lambda c: c["calls"] * c["bytes"]),
                                   BREAKDOWN[1])
    load = os.getloadavg()
    print(f"# Llama-2 7B steps on 2 nodes, timed on the links and as NCCL runs them; {os.cpu_count()} cores; load "
          f"average before {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}, after {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(table(rows))
    print(f"# {BREAKDOWN[0]} on {BREAKDOWN[1]}: rank 0's calls by shape; reference for the one-node call: {reference}")
    print(shapes_table(shapes))
    if args.json:
        atomic_write(args.json, json.dumps({"rows": rows, "shapes": shapes, "reference": reference, "cores": os.cpu_count(),
                                            "wall_s": wall, "loadavg_before": before, "loadavg_after": load}, indent=1))
    if args.out:
        replace_block(Path(args.out), BLOCK, markdown(rows, shapes, reference, wall, before, load))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
