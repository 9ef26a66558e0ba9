"""The `collsim` command line."""

from __future__ import annotations

import argparse
import sys

from simulator.errors import CollsimError

from .commands import COMMANDS

DESCRIPTION = """collsim: teach, predict and check collective communication between GPUs.

Algorithms are written once as schedules (who sends which chunk to whom); collsim proves them
right on numpy buffers, prices them with closed-form alpha-beta-gamma models, and compares them.
Sizes follow nccl-tests: per-rank buffer for allreduce/broadcast/reduce, total buffer for
allgather/reduce_scatter/alltoall/gather/scatter. Sizes read 4096, 64KiB, 1MB, 2GiB or 1e6."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="collsim", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for module in COMMANDS:
        module.add_parser(sub)
    for choice in sub.choices.values():
        choice.formatter_class = argparse.RawDescriptionHelpFormatter
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except CollsimError as exc:
        print(f"collsim: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
