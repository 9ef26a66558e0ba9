"""`collsim doctor LOG`: what an nccl-tests log says about its machine (measured vs what NCCL should reach there)."""

from __future__ import annotations

import argparse
import textwrap

from collsim.charts import standalone_html
from collsim.doctor import DoctorRequest
from simulator.fileio import atomic_write, say_written

from ..show import show


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "doctor", help="read an nccl-tests log: measured vs what NCCL should reach on that machine, and why it falls short",
        description=textwrap.fill("Read an nccl-tests log (any op predict covers, any node count, prefixes and NCCL INFO noise fine), "
                    "find the machine it ran on (the GPU its device list or header names, a machine its comments name, "
                    "the node count from its hosts or ranks; --preset overrides), predict what NCCL should reach there "
                    "at the log's sizes >= 64 MiB and a few small ones, and say where it falls short (latency-bound "
                    "small sizes, bandwidth-bound large ones, the link class), the likely causes ranked with the "
                    "numbers behind each (busbw at one NIC's rate, half the expected rate: GPUDirect RDMA or P2P off, "
                    "small sizes far above NCCL's LL/LL128 latency, every size slow alike), and what to try. A gap within "
                    "the model's own measured error on that machine class is not called a fault (docs/doctor.md).", 100),
        epilog="examples:\n"
               "  collsim doctor tests/data/nccl-tests/03_h100_p5_2node_16gpu_efa_allreduce.txt\n"
               "  collsim doctor my_run.log --preset p5:nodes=2 --html doctor.html\n"
               "  collsim doctor my_run.log --json")
    p.add_argument("log", metavar="LOG", help="an nccl-tests output file")
    p.add_argument("--preset", metavar="SPEC", help="the machine, e.g. p5:nodes=2 (`collsim topologies`; default: "
                   "inferred from the log)")
    p.add_argument("--html", metavar="FILE", help="also write the figure: measured against expected busbw per size "
                   "(an interactive plotly chart, as the app's Doctor page draws it)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def request(args: argparse.Namespace) -> DoctorRequest:
    """The doctor request of the command line."""
    return DoctorRequest(args.log, preset=args.preset)


def run(args: argparse.Namespace) -> int:
    result = request(args).run()
    if args.html:  # the figure is the app's (plotly, imported only here), so the command writes it, not the request
        from ..ui.doctor_model import figure

        atomic_write(args.html, standalone_html(figure(result)))
    status = show(result, args.json)
    if args.html:
        say_written(f"wrote the figure (HTML): {args.html}")
    return status
