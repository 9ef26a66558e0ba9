"""`collsim scenario NAME`: generate a training step (DDP, FSDP, TP, PP, EP, hybrid) as an editable program file."""

from __future__ import annotations

import argparse

from collsim.scenario import ScenarioRequest
from simulator.program.presets import GPUS, MODELS
from simulator.program.scenarios import DDP_BUCKET, SCENARIOS
from simulator.units import format_size

from ..show import show
from .scenario_moe import HELP as MOE_HELP
from .scenario_moe import add_moe_options, run_moe


def add_step_layout(p: argparse.ArgumentParser) -> None:
    """The training step's parallel layout and batch options, shared by `scenario` and `whatif`."""
    p.add_argument("--tp", type=int, help="tensor-parallel degree (inside a node)")
    p.add_argument("--pp", type=int, help="pipeline stages")
    p.add_argument("--ep", type=int, help="expert-parallel degree (MoE models)")
    p.add_argument("--fsdp", action="store_true", help="shard data parallelism (FSDP / ZeRO-3) instead of DDP")
    p.add_argument("--sp", action="store_true", help="sequence parallelism with TP (all-gather / reduce-scatter)")
    p.add_argument("--mfu", type=float, default=0.4, help="achieved fraction of the GPU's peak (default 0.4)")
    p.add_argument("--micro-batch", type=int, default=1, help="sequences per micro-batch per data-parallel rank, 1..65536, at most 2^24 "
                   "tokens with --seq-len (default 1)")
    p.add_argument("--microbatches", type=int, help="micro-batches per step, 1..65536 (default 2 x pp with pipelines, else 1)")
    p.add_argument("--seq-len", type=int, help="tokens per sequence, 1..16777216 (default the model's)")
    p.add_argument("--bucket", default=format_size(DDP_BUCKET), help="DDP gradient bucket size (default 25MiB, torch's bucket_cap_mb=25)")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "scenario", help="generate a training step as a program of collectives (DDP, FSDP, TP, PP, EP, hybrid)",
        description="Generate one training step of a model preset on --gpus GPUs as a program (docs/programs.md): "
                    "compute per layer from FLOPs (6 x params x tokens, forward:backward 1:2) at the GPU's peak x --mfu, "
                    "and the collectives of each kind of parallelism on their process groups (ranks = nodes x GPUs per "
                    "node; TP inside a node, then data parallel, then pipeline stages). Scenarios: "
                    + "; ".join(f"{k}: {v}" for k, v in SCENARIOS.items()) + f"; {MOE_HELP}.",
        epilog="examples:\n"
               "  collsim scenario ddp --model llama2-7b --gpus 8 --out ddp.yaml\n"
               "  collsim scenario hybrid --model llama2-70b --gpus 64 --tp 8 --pp 2 --out 3d.yaml && collsim lint-program 3d.yaml")
    p.add_argument("scenario", metavar="SCENARIO", help=", ".join([*SCENARIOS, "moe"]))
    p.add_argument("--model", default="llama2-7b", help=f"model preset: {', '.join(MODELS)} (default llama2-7b)")
    p.add_argument("--gpu", default="h100", help=f"GPU preset: {', '.join(GPUS)} (default h100)")
    p.add_argument("--gpus", type=int, required=True, help="GPUs in the job (ranks)")
    p.add_argument("--gpus-per-node", type=int, default=8, help="GPUs per node (default 8)")
    add_step_layout(p)
    add_moe_options(p)
    p.add_argument("--out", metavar="PATH", help="write the program as YAML, or JSON for a .json path (faster to read back when large)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.scenario == "moe":
        return run_moe(args)
    return show(ScenarioRequest(args.scenario, args.gpus, args.model, args.gpu, args.gpus_per_node, args.tp, args.pp, args.ep,
                                args.fsdp, args.sp, args.mfu, args.micro_batch, args.microbatches, args.seq_len, args.bucket,
                                args.out).run(), args.json)
