"""`collsim import-trace FILE...`: PyTorch profiler traces (one per rank) -> a program of collectives."""

from __future__ import annotations

import argparse

from collsim.import_trace import ImportTraceRequest

from ..show import show


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import-trace", help="PyTorch profiler traces of a real run (one per rank) -> a program for run-program",
        description="Read one PyTorch profiler (Kineto) trace per rank (JSON, gzip or not, as torch.profiler's "
                    "export_chrome_trace writes them) and write the step as a program (docs/programs.md): per rank, "
                    "the host thread's compute between collective calls, and the calls with their groups, sizes, order "
                    "and measured times. Calls that cannot be mapped (barriers, coalesced, all-to-all, rooted) are "
                    "listed. Chakra execution traces (<prefix>.<rank>.et, as ASTRA-sim reads them; collsim export-chakra "
                    "writes them) are read too: compute, collectives, sends and receives with their dependencies. "
                    "docs/traces.md says what is read and how.",
        epilog="examples:\n  collsim import-trace tests/data/traces/ddp-2r/rank*.json.gz --out ddp.yaml\n"
               "  collsim run-program ddp.yaml --timing measured            # the step as it ran\n"
               "  collsim import-trace rank*.json.gz --compute-scale 0.01 --out fast.yaml\n"
               "  collsim run-program fast.yaml --topology dgx-h100 --timing nccl   # the same step on H100s\n"
               "  collsim import-trace tests/data/chakra/astra-sim-allreduce-4npus/all_reduce.*.et --out ar.yaml")
    p.add_argument("files", nargs="+", metavar="FILE", help="one trace per rank (.json or .json.gz; Chakra: .et or .et.gz)")
    p.add_argument("--out", metavar="FILE", help="write the program here (.yaml, .yml or .json)")
    p.add_argument("--step", type=int, default=0, help="which ProfilerStep span of each trace (default 0, the first)")
    p.add_argument("--compute-scale", type=float, default=1.0, metavar="F",
                   help="multiply every compute span by F (default 1: as measured), e.g. 0.01 for a GPU 100 times "
                        "faster than the traced host; calls keep their measured times")
    p.add_argument("--comm-groups", metavar="FILE", help="Chakra traces: ASTRA-sim's comm-group file ({\"1\": [0, 1], ...}), "
                                                         "the ranks of each pg_name (default: the world for 0, else the "
                                                         "ranks that call it)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    request = ImportTraceRequest(files=tuple(args.files), out=args.out, step=args.step, compute_scale=args.compute_scale,
                                 comm_groups=args.comm_groups)
    return show(request.run(), args.json)
