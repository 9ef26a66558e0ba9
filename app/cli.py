"""The `collsim` command line."""

from __future__ import annotations

import argparse
import sys

from simulator.errors import CollsimError

from .commands import COMMANDS

DESCRIPTION = """collsim: teach, predict and check collective communication between GPUs.

Every algorithm is written once as a schedule (who sends which chunk to whom, after what).
collsim proves schedules right on numpy buffers (check), draws them (draw, app), prices them
with closed forms (cost) and a discrete-event simulator on real topologies (simulate, sweep),
runs them on real torch.distributed backends (verify, calibrate, compare), and reads real
nccl-tests logs, NCCL's tuning model and MSCCL algorithm files (fit, nccl-model, import-msccl).

Sizes follow nccl-tests: the per-rank buffer for allreduce/broadcast/reduce, the total buffer
for allgather/reduce_scatter/alltoall/gather/scatter. They read 4096, 64KiB, 1MB, 2GiB or 1e6.
Run `collsim COMMAND --help` for each command; every command that prints results takes --json."""


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
