"""`collsim scenario moe`: an expert-parallel MoE step whose all-to-all sizes come from a routing distribution
(collsim/scenario_moe.py). The parser gains --routing and --layers; `scenario moe` comes here."""

from __future__ import annotations

import argparse

from collsim.scenario_moe import MoeRequest

from ..show import show

HELP = ("moe: expert parallel over all --gpus (--ep, default all), all-to-all-v dispatch and combine sized by --routing "
        "(uniform, zipf:S, or a JSON file of token counts per expert), so an imbalance shows as waiting")


def add_moe_options(p: argparse.ArgumentParser) -> None:
    """The options only `scenario moe` reads."""
    p.add_argument("--routing", default="uniform", metavar="DIST",
                   help="moe: where tokens go: uniform, zipf:S (expert 0 hottest, e.g. zipf:1.2), or a .json file of "
                        "counts per expert (or one list per rank)")
    p.add_argument("--layers", type=int, help="moe: MoE layers in the step (default all of the model's)")


def run_moe(args: argparse.Namespace) -> int:
    return show(MoeRequest(args.gpus, args.model, args.gpu, args.ep, args.mfu, args.micro_batch, args.seq_len,
                           args.routing, args.layers, args.out).run(), args.json)
