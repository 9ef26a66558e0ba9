"""`collsim scale SCENARIO --gpus 8:4096`: step time and efficiency as the data-parallel degree grows, per algorithm."""

from __future__ import annotations

import argparse

from collsim.scale import DEFAULT_ALGOS, ScaleRequest, gpu_counts, machine_spec  # noqa: F401 (tests import them here)
from simulator.program.nccl_timing import AUTO
from simulator.topology.presets import NETWORKS, PRESETS

from ..show import show
from .run_program import add_timing_arg
from .whatif import add_step_args, step_template


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "scale", help="step time and scaling efficiency as the GPU count grows: flat ring vs hierarchical vs tree",
        description="Generate the scenario at each GPU count (powers of two from START to END) on a preset machine of "
                    "that many GPUs, run it and print step time, exposed communication and scaling efficiency "
                    "(compute-only step / step). On a preset NCCL's model knows the collectives are timed as NCCL "
                    "runs them (one 'nccl' row per count; as `collsim whatif`'s default); with --timing links, or "
                    "--algos, --algo for an op NCCL picks for or --mode exact given without --timing, each all-reduce "
                    "algorithm of --algos runs on the links instead: where each algorithm stops scaling. The output "
                    "says which timing ran and why. --html writes a plotly chart.",
        epilog="examples:\n  collsim scale ddp --gpus 8:512 --preset dgx-h100 --net ib400 --html scale.html\n"
               "  collsim scale ddp --gpus 8:512 --algos ring,hierarchical   # collsim's algorithms on the links")
    add_step_args(p)
    add_timing_arg(p, AUTO)
    p.add_argument("--gpus", default="8:512", metavar="START:END", help="GPU counts: powers of two from START to END (default 8:512)")
    p.add_argument("--preset", default="dgx-h100", help=f"machine preset, as many nodes as needed: {', '.join(PRESETS)} (default dgx-h100)")
    p.add_argument("--net", default="ib400", help=f"network between nodes: {', '.join(NETWORKS)} (default ib400)")
    p.add_argument("--algos", help=f"all-reduce algorithms to compare on the links (links timing; default {DEFAULT_ALGOS})")
    p.add_argument("--html", metavar="FILE", help="write an interactive plotly chart (efficiency and step time vs GPUs; "
                   "plotly.js is loaded from its CDN)")
    p.set_defaults(func=run)


def request(args: argparse.Namespace) -> ScaleRequest:
    """The scale request of the command line."""
    return ScaleRequest(step_template(args), gpus=args.gpus, preset=args.preset, net=args.net, algos=args.algos,
                        html=args.html, jobs=args.jobs, dask=args.dask)


def run(args: argparse.Namespace) -> int:
    return show(request(args).run(), args.json)
