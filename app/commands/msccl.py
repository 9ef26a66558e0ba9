"""`collsim import-msccl` and `collsim export-msccl`: MSCCL algorithm XML in and out."""

from __future__ import annotations

import argparse
import sys

from collsim.msccl import PLACEMENT_CHOICES, MscclExportRequest, MscclImportRequest
from simulator.collective import DTYPES
from simulator.units import SIZE_HELP

from ..args import SIZE_MEANING, add_algo_params, add_op, algo_params
from ..limits import add_limit_args, limits
from ..show import show


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import-msccl", help="read an MSCCL algorithm XML file as a collsim schedule",
        description="Read an MSCCL algorithm (<algo>/<gpu>/<tb>/<step> XML, as msccl-tools writes and MSCCL's executor "
                    "runs) into a collsim schedule: sends are matched with receives per connection and channel, "
                    "threadblock order and depid/deps become dependencies. Prints what the file does; --check proves "
                    "every placement the file declares right on numpy buffers; --simulate runs it on a topology.",
        epilog="examples: collsim import-msccl allreduce.xml --check\n"
               "          collsim import-msccl allgather.xml --size 1MiB --simulate --topology switch:8")
    p.add_argument("file", metavar="FILE", help="MSCCL XML file")
    p.add_argument("--size", metavar="SIZE", help=f"{SIZE_HELP}; must cut into the file's chunks (default: the smallest such "
                                                  f"size at or above the file's minBytes, up to 1MiB). {SIZE_MEANING}")
    p.add_argument("--dtype", default="float32", help=f"element type: {', '.join(DTYPES)} (default float32)")
    p.add_argument("--placement", choices=PLACEMENT_CHOICES, default="auto",
                   help="in-place or out-of-place (default auto: out-of-place if the file allows it; --check checks every "
                        "placement the file declares)")
    p.add_argument("--check", action="store_true", help="execute on random data and check every rank's result (exit 1 on failure)")
    p.add_argument("--simulate", action="store_true", help="run the schedule on the event engine (needs --topology)")
    p.add_argument("--topology", metavar="SPEC", help="topology for --simulate, e.g. switch:8, ring:4 or a .yaml file")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_limit_args(p)
    p.set_defaults(func=run_import)

    e = sub.add_parser(
        "export-msccl", help="write a collsim algorithm as MSCCL algorithm XML",
        description="Write any registered algorithm as MSCCL algorithm XML. The chunk is the largest piece that divides "
                    "every transfer at SIZE, so the file runs at any multiple of nchunksperloop chunks. Before writing, "
                    "the file is imported again and must give back exactly the schedule's transfers.",
        epilog="example: collsim export-msccl --op allreduce --algo ring --ranks 8 -o ring8.xml")
    add_op(e)
    e.add_argument("--algo", required=True, help="algorithm name (see collsim algorithms)")
    e.add_argument("--ranks", type=int, required=True, help="number of ranks (gpus in the file)")
    e.add_argument("--size", metavar="SIZE", help=f"{SIZE_HELP}; the schedule is built at this size and its pieces set the "
                                                  f"chunk (default: 24 x ranks^2 x chunks elements, which cuts evenly). {SIZE_MEANING}")
    e.add_argument("--dtype", default="float32", help=f"element type: {', '.join(DTYPES)} (default float32)")
    e.add_argument("--root", type=int, default=0, help="root rank for broadcast, reduce, gather, scatter (default 0)")
    add_algo_params(e)
    e.add_argument("--placement", choices=PLACEMENT_CHOICES, default="auto",
                   help="in-place or out-of-place file (default auto: in-place unless the schedule reads 'in'; alltoall out-of-place)")
    e.add_argument("--proto", default="Simple", choices=("Simple", "LL", "LL128"), help="protocol attribute (default Simple)")
    e.add_argument("--name", help="algorithm name in the file (default: the collsim algorithm name)")
    e.add_argument("-o", "--output", metavar="FILE", help="write the XML here (default: print it)")
    e.add_argument("--json", action="store_true", help="print a JSON summary (with the XML when there is no -o)")
    add_limit_args(e)
    e.set_defaults(func=run_export)


def run_import(args: argparse.Namespace) -> int:
    return show(MscclImportRequest(args.file, args.size, args.dtype, args.placement, args.check, args.simulate,
                                   args.topology, limits(args)).run(), args.json)


def run_export(args: argparse.Namespace) -> int:
    result = MscclExportRequest(args.op, args.algo, args.ranks, args.size, args.dtype, args.root,
                                tuple(algo_params(args).items()), args.placement, args.proto, args.name, args.output,
                                limits(args)).run()
    status = show(result, args.json)
    if not args.output and not args.json:  # beside the XML on stdout, what was exported goes to stderr
        for line in result.lines():
            print(line, file=sys.stderr)
    return status
