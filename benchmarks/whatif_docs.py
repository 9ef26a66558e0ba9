"""The tables of docs/whatif.md: a 7B model's training step with DDP, FSDP and TP=8 x DP on 8, 64 and 512 H100s,
flat ring vs hierarchical all-reduce, and the Megatron 22B anchor (Korthikanti et al. 2022, as Calculon validates).

usage: python -m benchmarks.whatif_docs [--jobs 2] [--out docs/whatif.md] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from app.commands.scale import machine_spec
from simulator.fileio import atomic_write
from simulator.nccl.predict import MAX_GPUS as MAX_RANKS
from simulator.parallel import run_cases
from simulator.program.whatif import StepCase, evaluate
from simulator.units import format_time

from .docs_block import current_block

MACHINES = {8: "dgx-h100", 64: "dgx-h100:nodes=8,net=ib400", 512: "dgx-h100:nodes=64,net=ib400"}
RING, HIER = (("allreduce", "ring"),), (("allreduce", "hierarchical"),)
NCCL = "NCCL timing (default)"  # the row `collsim whatif` gives without options (nccl_timing.default_timing)
# Korthikanti et al., arXiv:2205.05198, 22B GPT on 8 A100 (TP 8, batch 4 x 2048): measured seconds per iteration,
# with full recomputation and with sequence parallelism + selective recomputation (Calculon's megatron/validation.py)
ANCHOR = {"full": 1.42, "seqsel": 1.10}


def cases() -> dict[str, list[StepCase]]:
    out: dict[str, list[StepCase]] = {"ddp": [], "fsdp": [], "hybrid": []}
    for gpus, machine in MACHINES.items():
        out["ddp"].append(StepCase("ddp", machine, gpus=gpus, timing="nccl", label=NCCL))
        for name, algos in (("flat ring", RING), ("hierarchical", HIER)):
            out["ddp"].append(StepCase("ddp", machine, gpus=gpus, algorithms=algos, label=f"links: {name}"))
        out["fsdp"].append(StepCase("fsdp", machine, gpus=gpus, label="ring"))
        if gpus > 8:
            out["hybrid"].append(StepCase("hybrid", machine, gpus=gpus, tp=8, algorithms=RING, label="flat ring"))
    out["anchor"] = [StepCase("tp-sp", "dgx-a100", model="megatron-22b", gpu="a100", micro_batch=4, label="tp 8 + sp")]
    out["scale"] = [StepCase("ddp", machine_spec("dgx-h100", "ib400", g), gpus=g, algorithms=(("allreduce", algo),), label=algo)
                    for g in SCALE for algo in SCALE_ALGOS]
    # NCCL timing where predict simulates the whole group (beyond it `collsim scale` falls back to the links' ring)
    out["scale"] += [StepCase("ddp", machine_spec("dgx-h100", "ib400", g), gpus=g, timing="nccl", label="nccl")
                     for g in SCALE if g <= MAX_RANKS]
    return out


SCALE = [8 << k for k in range(10)]  # 8 .. 4096 GPUs
SCALE_ALGOS = ("ring", "hierarchical", "double_binary_tree")


def scale_table(rows: list[dict]) -> str:
    kinds = ("nccl", *SCALE_ALGOS)
    lines = ["| GPUs | " + " | ".join(f"{a}: step | {a}: efficiency" for a in kinds) + " |",
             "|---:|" + "---:|---:|" * len(kinds)]
    refused = f"not timed (predict: at most {MAX_RANKS} ranks) | "
    for g in SCALE:
        mine = {r["label"]: r for r in rows if r["gpus"] == g}
        lines.append(f"| {g} | " + " | ".join(f"{format_time(mine[a]['step_s'])} | {mine[a]['efficiency']:.1%}"
                                                if a in mine else refused for a in kinds) + " |")
    return "\n".join(lines)


def table(rows: list[dict], first: str = "algorithm") -> str:
    lines = [f"| GPUs | machine | {first} | step | compute | exposed comm | tokens/s | efficiency | run |",
             "|---:|---|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['gpus']} | `{r['machine']}` | {r['label']} | {format_time(r['step_s'])} | {format_time(r['compute_s'])} | "
                     f"{format_time(r['exposed_s'])} | {r['tokens_per_s']:,.0f} | {r['efficiency']:.1%} | {r['mode']} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--out", default="docs/whatif.md", help="markdown file to write (default docs/whatif.md)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of writing the page")
    args = parser.parse_args()
    groups = cases()
    flat = [c for cs in groups.values() for c in cs]
    start = time.perf_counter()
    rows = run_cases(evaluate, flat, args.jobs, desc="whatif docs")
    wall = time.perf_counter() - start
    load = os.getloadavg()
    by_group, k = {}, 0
    for name, cs in groups.items():
        by_group[name] = rows[k:k + len(cs)]
        k += len(cs)
    if args.json:
        print(json.dumps({"rows": by_group, "wall_s": wall, "loadavg": load}, indent=1))
        return 0
    timing_block = current_block(Path(args.out), "step_timing",
                                 "(filled by `python -m benchmarks.step_timing --out docs/whatif.md`)")
    atomic_write(args.out, page(by_group, wall, load, args.jobs, timing_block))
    print(f"wrote {args.out} ({len(flat)} cases in {wall:.0f} s, load average {load[0]:.2f})", file=sys.stderr)
    return 0


def page(g: dict[str, list[dict]], wall: float, load: tuple, jobs: int, timing_block: str) -> str:
    """The page; `timing_block` is the step_timing block (benchmarks/step_timing.py), kept as it is."""
    ddp = {(r["gpus"], r["label"]): r for r in g["ddp"]}
    anchor = g["anchor"][0]
    flat64, hier64, nccl64 = ddp[(64, "links: flat ring")], ddp[(64, "links: hierarchical")], ddp[(64, NCCL)]
    flat512, hier512, nccl512 = ddp[(512, "links: flat ring")], ddp[(512, "links: hierarchical")], ddp[(512, NCCL)]
    delta = anchor["step_s"] / ANCHOR["seqsel"] - 1
    nccl_eff = {r["gpus"]: r["efficiency"] for r in g["scale"] if r["label"] == "nccl"}
    return f"""# What if: training steps on different machines (`collsim whatif`, `collsim scale`)

`collsim whatif SCENARIO --machines A,B,C` generates one training step (as `collsim scenario`, docs/programs.md) for
each machine, runs it on the engine (`simulator/program/run.py`) and prints step time, compute, exposed communication
(communication that no compute on the same GPU overlaps), tokens/s, scaling efficiency, cost per million tokens with
`--price`, and (links timing) the step time saved by doubling the NIC bandwidth or NVLink. `collsim scale SCENARIO
--gpus 8:4096` does the same as the GPU count grows, with an HTML chart (`--html`). Both take `--jobs N`
(processes; default every core, capped at the cores) and `--dask ADDRESS` (a Dask scheduler you trust: results
are unpickled; docs/sweep_scale.md), and give the serial numbers exactly.

**Which timing.** Without `--timing`, both time the step's all-reduces, all-gathers and reduce-scatters as NCCL runs
them (`--timing nccl`, last section) when every machine is a preset NCCL's model knows (those of `collsim predict
--preset`), as the What-if page's step view does: one rule decides all three (`default_timing` in
`simulator/program/nccl_timing.py`). Otherwise, and when an option NCCL timing refuses is given without `--timing`
(`--mode exact`, `--algo` for one of those three ops, scale's `--algos`), they use collsim's algorithms on the
machine's links (`--timing links`): the explicit option wins and the run says so. `--timing nccl` with such an
option is refused with one line. Every run prints which timing it used and why (`# timing: ...`; `timing` and
`timing_why` in `--json`). `collsim scale` with NCCL timing gives one `nccl` row per GPU count; with links timing one
row per all-reduce algorithm of `--algos` (default ring, hierarchical, double_binary_tree). The tables below name
their timing in each row: most compare collsim's algorithms on the links, the question they were made for.

```
collsim whatif ddp --machines dgx-h100:nodes=2,hgx-b200:nodes=2,p5:nodes=2           # NCCL timing (the default here)
collsim whatif ddp --machines dgx-h100:nodes=2,net=ib400,hgx-b200:nodes=2 --timing links --price 2.5 --trace-dir traces
collsim scale ddp --gpus 8:512                                                          # NCCL timing, one row per count
collsim scale ddp --gpus 8:512 --algos ring,hierarchical,double_binary_tree --html scale.html   # links, per algorithm
```

**Definitions.** Tokens per step = data-parallel degree x micro-batch x micro-batches x sequence length. Scaling
efficiency = the compute-only step (the busiest GPU's compute) / the simulated step: 100% when all communication
hides behind compute, which is perfect linear scaling at a fixed batch per GPU. Cost per million tokens = price per
GPU-hour x GPUs x step / 3600 / tokens x 10^6. Compute is 6 x parameters x tokens FLOPs at the GPU's dense BF16
peak x MFU (0.4 unless `--mfu`), split 1:2 between forward and backward (docs/programs.md); attention's O(s^2)
term and recomputation are left out.

**How a step runs.** The whole program is lowered into one schedule (`simulator/program/lower.py`): every collective
expands to its algorithm's schedule on its group's ranks, all sharing the machine's links and ports; compute is a
transfer on a private link per GPU and stream that takes exactly the compute time; a collective starts when every
member has reached it (NCCL semantics). Above about 2M transfers (`--mode auto`), each distinct collective is timed
alone on its ranks of the machine and then runs as one step of that duration (`--mode isolated`,
`simulator/program/isolated.py`; above 128 members the algorithm's closed form with the slowest hop between
members is used, two-level for hierarchical). The isolated mode is exact when one collective at a time uses a
stretch of links (DDP's single comm stream) and optimistic where collectives overlap on the same links (FSDP's
all-gather and reduce-scatter streams; TP and DP traffic on NVLink). When every GPU runs the same operations on
groups of the same shape, called at the same positions (DDP, FSDP), one GPU stands for all in isolated mode
(`symmetric`, `simulator/program/symmetry.py`): it gives the isolated numbers exactly, in a fraction of the time.
The "run" column says which was used. With NCCL timing (the default on presets NCCL's model knows) the
all-reduces, all-gathers and reduce-scatters are timed as NCCL runs them instead, each alone (last section).

## 7B with DDP: 8 GPUs in one node, then 64 and 512 over 400G InfiniBand

Llama-2 7B (6.74B parameters), one sequence of 4096 tokens per GPU, gradients in 25 MiB buckets all-reduced on a
comm stream as backward produces them (torch DDP's default), `dgx-h100` nodes (NVSwitch at 450 GB/s per GPU, one
400 Gbit/s NIC per GPU behind PCIe Gen5).

{table(g["ddp"], "timing")}

Inside one node both algorithms hide nearly all of the 13.5 GB of gradients behind backward: NVSwitch moves a
25 MiB bucket in well under a layer's backward. Across nodes they differ because of what crosses the NICs: the
flat ring puts every GPU in one ring whose node-crossing hops run at the NIC's 50 GB/s, so each bucket moves
2(p-1)/p of its bytes at the slowest hop's rate and pays 2(p-1) hop latencies (at 512 GPUs, 1022 hops per bucket):
exposed communication grows from {format_time(flat64['exposed_s'])} at 64 GPUs to {format_time(flat512['exposed_s'])} at 512.
Hierarchical reduce-scatters inside each node over NVSwitch, all-reduces only 1/8 of the bucket across nodes (eight
rings at once, one per NIC) and all-gathers inside the node: each NIC carries 1/8 of the bytes, so the step stays
near compute ({format_time(hier64['step_s'])} at 64, {format_time(hier512['step_s'])} at 512 GPUs; exposed
{format_time(hier64['exposed_s'])} and {format_time(hier512['exposed_s'])}), which is why NCCL builds its rings and
trees node-aware. `collsim whatif ddp --machines dgx-h100:nodes=8,net=ib400` without options gives the NCCL timing
row: {format_time(nccl64['exposed_s'])} exposed at 64 GPUs ({format_time(nccl512['exposed_s'])} at 512), NCCL's own
rings and trees crossing nodes on every NIC, with its per-call latencies and protocol costs, which the links'
algorithms do not charge.

## 7B with FSDP (ZeRO-3)

Parameters sharded over all GPUs; each layer's parameters all-gathered one layer ahead (forward and backward), its
gradients reduce-scattered after backward, ring algorithms.

{table(g["fsdp"])}

FSDP moves 1.5x DDP's bytes (two all-gathers and one reduce-scatter of the parameters versus one all-reduce = one
reduce-scatter + one all-gather), in per-layer pieces that must arrive before the layer computes. Inside a node this
hides behind compute; across nodes the rings' NIC hops dominate as for DDP. At 512 GPUs FSDP exposes less than
DDP's flat ring ({format_time(g['fsdp'][-1]['exposed_s'])} against {format_time(flat512['exposed_s'])}) although it
moves more bytes: it makes about 100 calls per step instead of about 540 buckets, and a ring of 512 pays 2(p-1)
hop latencies per call, so at this scale the flat ring is latency-bound.

## 7B with TP = 8 inside a node x data parallel across nodes

Tensor parallel (two activation all-reduces per layer forward and two backward, on the critical path) over the 8 GPUs
of a node, DDP buckets over the data-parallel groups, one GPU per node each.

{table(g["hybrid"])}

TP all-reduces of 32 MiB activations over NVSwitch add directly to the step (they sit between the layer's
matrix multiplications). The data-parallel groups hold one GPU per node, so their rings cross a NIC at every hop
(hierarchical has nothing to group: one member per node); each GPU synchronises 1/8 of the gradients, so DP costs
less than in pure DDP. Most of the exposed time is TP's, which does not depend on the GPU count; the growth from 64
to 512 GPUs is the data-parallel rings'.

## Where each all-reduce stops scaling (`collsim scale ddp --gpus 8:4096`)

The same 7B DDP step from 8 to 4096 H100s (one to 512 nodes over 400G InfiniBand): NCCL timing (`collsim scale`'s
default, up to the {MAX_RANKS} ranks `collsim predict` simulates; past them `collsim scale` times the calls on the
links and flags the row), then each all-reduce algorithm on the links (`--algos`; the registry's, `chunks` 1: the
double binary tree is not pipelined here, so it moves each bucket whole down and up the trees):

{scale_table(g["scale"])}

The flat ring stops scaling at the first NIC (16 GPUs): every bucket crosses its slowest hop 2(p-1) times. The
hierarchical all-reduce holds near compute while 1/8 of each bucket across nodes fits behind backward, and falls
off when its ring across nodes grows long enough that 2(N-1) hop latencies per bucket (N nodes, about 540 buckets
per step) no longer hide. Beyond 128 members the numbers come from closed forms (isolated mode), not the engine.
With NCCL timing the step stays near compute up to 128 GPUs ({nccl_eff[128]:.1%}) and falls off beyond
({nccl_eff[256]:.1%} at 256, {nccl_eff[512]:.1%} at 512 GPUs), below the links' hierarchical all-reduce there:
predict's all-reduce of a 25 MiB bucket across 32 and 64 nodes takes longer than the links' two-level ring. The
scale_accuracy block of docs/accuracy.md holds predict against NCCL's own tuning model at these node counts.

## Anchor: Megatron 22B on 8 A100 (Korthikanti et al. 2022, Calculon's validation table)

Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models" (arXiv:2205.05198) measured a
22B GPT (hidden 6144, 48 layers, 64 heads, sequence 2048) with tensor parallelism 8 on one DGX A100, batch 4:
{ANCHOR['full']} s per iteration with full recomputation, {ANCHOR['seqsel']} s with sequence parallelism and selective
recomputation; Calculon (Isaev et al., SC'23) uses these as its Megatron validation (`calculon/megatron/validation.py`).
collsim's `tp-sp` scenario on `dgx-a100` with `--model megatron-22b --gpu a100 --micro-batch 4` at the default MFU 0.4:

| | step | compute | exposed comm (TP all-gather / reduce-scatter) |
|---|---:|---:|---:|
| measured, SP + selective recompute | {ANCHOR['seqsel']} s | | |
| collsim (MFU 0.4, not fitted) | {anchor['step_s']:.2f} s | {anchor['compute_s']:.2f} s | {anchor['exposed_s']:.3f} s |

collsim is {abs(delta):.0%} {'slower' if delta > 0 else 'faster'} than the measured step. A total cannot say
which part is off. collsim's compute alone ({anchor['compute_s']:.2f} s) rests on an assumed MFU of 0.4 applied to
6N FLOPs per token; the paper's run also computes attention's O(s^2) term and recomputes attention, which collsim
leaves out, so its real utilisation on 6N FLOPs is higher than its hardware utilisation. The communication part is
the machine model's alone: {format_time(anchor['exposed_s'])} of TP all-gathers and reduce-scatters on the critical
path, {anchor['exposed_s'] / anchor['step_s']:.0%} of the step; the paper does not publish a breakdown, so only
the total is compared. No constant was tuned to this number.

Produced by `python -m benchmarks.whatif_docs --jobs {jobs}` ({wall:.0f} s on this machine, 2 cores, load average
{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}).

## Collectives timed as NCCL runs them (`--timing nccl`)

`collsim whatif --timing nccl` times each all-reduce, all-gather and reduce-scatter call of the step as
`collsim predict` times it on the machine preset: NCCL's own algorithm, protocol and channels for the call's size,
rings and trees that cross nodes on every NIC, NVLS and NVLS-tree where NCCL picks them, and NCCL's latency floors
(`simulator/program/nccl_timing.py`). That is the model docs/accuracy.md holds against real nccl-tests logs (5-15%
median error on most of them, where collsim's plain algorithms on the raw links are 10-485% off). It is the
default of `collsim whatif` and `collsim scale` when NCCL's model knows every machine (first section);
`--timing links` keeps collsim's algorithms on the machine's links (`--algo`, `--mode`). The What-if page's step
view offers the same choice and starts on the same default, by the same function; its caption gives the command
with `--timing`. `collsim run-program FILE --timing nccl` times a program file's calls the same way, under the same
rules (docs/programs.md; run-program's default stays `links`: its default machine is ideal links).

A call is timed by NCCL's model when the machine is a preset it knows (those of `collsim predict --preset`) and the
call's members fit one of predict's placements: all on one node (predict on that many GPUs), or the same number K on
each of N nodes (`--ranks-per-node K`: GPUs 0..K-1 of each node). The members' own GPUs are taken as equivalent by
the node's symmetry: on an NVSwitch any K GPUs of a node reach each other alike, but across nodes they must also
spread over the NICs as GPUs 0..K-1 do. On p4de (two GPUs per NIC) a group on GPUs {{0, 2, 4, 6}} of each node uses
four NICs where predict's GPUs 0..3 use two, so that group stays on the links; on the PCIe presets only GPUs 0..K-1
themselves qualify. Sizes pass unchanged: a program's call and predict both take nccl-tests' meaning (the whole
buffer for all-gather and reduce-scatter); a 0-byte call takes 0 s, as NCCL discards a collective of count 0
(src/enqueue.cc, taskAppend: "Empty collectives can be discarded"; it still meets its members in the program's
order, which a discarded NCCL call does not). Everything else (all-to-all, broadcast, pipeline sends and receives,
irregular groups, more than 512 members, a machine NCCL's model does not know, a size predict refuses) is timed on
the links as before, and the output counts the collective calls timed each way ("calls timed": `515 NCCL`, or `N
NCCL, M links`; a call of each group, those of the GPU that stands for all in a symmetric run; sends and receives
are not counted).

NCCL timing implies isolated calls: `--mode auto` runs isolated (symmetric where one GPU stands for all) and
`--mode exact` is refused. So are `--algo` for the three ops (NCCL picks) and the doubled-bandwidth reruns, which
`whatif` skips under NCCL timing and says so: NCCL's model knows each preset's own links only. What it still leaves out
of a step: calls are timed alone, so calls that run at once (FSDP's all-gather and reduce-scatter streams, TP and DP
traffic on the same NVLink, two comm streams on the same NICs) do not slow each other; NCCL's kernels do not compete
with compute for SMs or memory bandwidth, and NCCL picks channels as for an nccl-tests run, not for the SMs a
training job leaves it; no launch or queueing gap is added between consecutive calls beyond NCCL's own latencies;
and docs/accuracy.md's errors are for nccl-tests runs, not for calls inside a step.

<!-- step_timing:begin -->
{timing_block}
<!-- step_timing:end -->
"""


if __name__ == "__main__":
    sys.exit(main())
