"""`collsim scenario moe`: an expert-parallel MoE step whose all-to-all sizes come from a routing distribution
(simulator/program/moe.py). Kept apart from scenario.py's generator: the parser gains --routing and --layers, and
`scenario moe` comes here."""

from __future__ import annotations

import argparse
from collections import Counter

from simulator.errors import CollsimError
from simulator.fileio import say_written
from simulator.program.moe import MoeSpec, generate_moe, parse_routing, token_counts
from simulator.program.presets import get_gpu, get_model
from simulator.render import table
from simulator.units import format_time

from ..output import emit_json

HELP = ("moe: expert parallel over all --gpus (--ep, default all), all-to-all-v dispatch and combine sized by --routing "
        "(uniform, zipf:S, or a JSON file of token counts per expert), so an imbalance shows as waiting")


def add_moe_options(p: argparse.ArgumentParser) -> None:
    """The options only `scenario moe` reads."""
    p.add_argument("--routing", default="uniform", metavar="DIST",
                   help="moe: where tokens go: uniform, zipf:S (expert 0 hottest, e.g. zipf:1.2), or a .json file of "
                        "counts per expert (or one list per rank)")
    p.add_argument("--layers", type=int, help="moe: MoE layers in the step (default all of the model's)")


def run_moe(args: argparse.Namespace) -> int:
    model = get_model(args.model)
    ep = args.ep or args.gpus
    if ep != args.gpus:
        raise CollsimError(f"ep: {ep}; scenario moe runs expert parallel over all {args.gpus} GPUs, expected --ep "
                           f"{args.gpus} or none")
    tokens = args.micro_batch * (args.seq_len or model.seq_len)
    spec = MoeSpec(model, get_gpu(args.gpu), ep, tokens, parse_routing(args.routing, model.experts, ep),
                   args.layers or model.layers, args.mfu)
    spec.check()
    program = generate_moe(spec)
    if args.out:
        from simulator.program import dump_program

        if not args.out.lower().endswith((".yaml", ".yml", ".json")):
            raise CollsimError(f"out: {args.out!r}; expected a .yaml, .yml or .json path")
        dump_program(program, args.out)
    received = token_counts(spec).sum(axis=0)
    expert_s = [sum(op.seconds for op in program.ops(r) if op.name and op.name.startswith("experts")) for r in range(ep)]
    summary = {"scenario": "moe", "model": model.name, "gpu": spec.gpu.name, "ep": ep, "tokens": tokens,
               "layers": spec.layers, "routing": spec.routing.name, "tokens_to_rank": [int(x) for x in received],
               "expert_compute_s": expert_s, "wait_s": [max(expert_s) - s for s in expert_s], "out": args.out,
               "rank0_ops": dict(Counter(op.op for op in program.ops(0)))}
    if args.json:
        emit_json(summary)
        return 0
    print(f"# moe: {model.name} on {ep} x {spec.gpu.name}, expert parallel {ep} ({model.experts // ep} expert(s) per "
          f"rank, top-{model.top_k}), {tokens} tokens per rank, {spec.layers} layer(s), routing {spec.routing.name}")
    print(table(["rank", "token copies in", "expert compute", "waits for the busiest"],
                [[r, int(received[r]), format_time(expert_s[r]), format_time(max(expert_s) - expert_s[r])]
                 for r in range(ep)], "rrrr"))
    print("# waits: the busiest rank's expert compute less this rank's (forward and backward), before communication")
    if args.out:
        say_written(f"# wrote {args.out}; run it with: collsim run-program {args.out} --topology SPEC")
    return 0
