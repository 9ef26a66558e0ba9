"""`collsim export-chakra PROGRAM --out-dir DIR`: a program as Chakra execution traces (one per rank) for ASTRA-sim."""

from __future__ import annotations

import argparse

from collsim.chakra import ExportChakraRequest

from ..show import show
from .lint_program import PROGRAM_HINT, add_max_work, max_work


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export-chakra", help="a program -> Chakra execution traces (one per rank) for ASTRA-sim; import-trace reads "
                              "them back",
        description="Write a program (docs/programs.md) as one Chakra execution trace per rank (<prefix>.<rank>.et, "
                    "the workload format of ASTRA-sim) and ASTRA-sim's comm-group file (comm_group.json). Each "
                    "operation is a node: compute, collectives (comm_type, comm_size, pg_name), sends and receives; "
                    "stream order, after and events become data_deps. collsim import-trace reads the traces back into "
                    "the same program (docs/traces.md).",
        epilog="examples:\n  collsim export-chakra step.yaml --out-dir et/            # et/step.0.et ... and "
               "et/comm_group.json\n  collsim import-trace et/step.*.et --out back.yaml")
    p.add_argument("file", metavar="PROGRAM", help="program file (.yaml, .yml or .json)")
    p.add_argument("--out-dir", required=True, metavar="DIR", help="directory for the traces (made when missing)")
    p.add_argument("--prefix", metavar="NAME", help="the traces' name: NAME.<rank>.et (default: the program's file name)")
    add_max_work(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run, _memory_hint=PROGRAM_HINT)


def run(args: argparse.Namespace) -> int:
    request = ExportChakraRequest(args.file, args.out_dir, args.prefix, max_work(args))
    return show(request.run(), args.json)
