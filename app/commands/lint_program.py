"""`collsim lint-program FILE`: check a program of collectives without running it."""

from __future__ import annotations

import argparse

from collsim.limits import read_limit
from collsim.program import LintRequest
from simulator.program.loader import MAX_WORK

from ..show import show

PROGRAM_HINT = "expected a smaller program (fewer ranks, groups or operations per rank)"


def add_max_work(p: argparse.ArgumentParser) -> None:
    """--max-work, for every command that reads a program."""
    p.add_argument("--max-work", metavar="N", default=str(MAX_WORK),
                   help=f"refuse up front a program with more ranks + group members + operations (counted once per rank "
                        f"that runs them) than N (default {MAX_WORK:,}: about 20 s of lint-program on 2 cores)")


def max_work(args: argparse.Namespace) -> int:
    """--max-work as a count >= 1."""
    return int(read_limit(args.max_work, "max-work", "2e6"))


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "lint-program", help="check a program of collectives for mismatched calls and ordering deadlocks",
        description="Read a program (docs/programs.md) and check, without running it, that every process group's "
                    "collectives line up across its ranks (same op, size, dtype, root, and name where both give one) and "
                    "that program order can finish: a collective starts only when every member has reached it on its "
                    "stream (NCCL/gloo semantics). Each wait-for cycle is named. Exit 0 when sound, 1 on problems.",
        epilog="examples:\n  collsim lint-program step.yaml\n"
               "  collsim scenario ddp --gpus 8 --out ddp.yaml && collsim lint-program ddp.yaml")
    p.add_argument("file", metavar="FILE", help="program file (.yaml, .yml or .json)")
    add_max_work(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run, _memory_hint=PROGRAM_HINT)


def run(args: argparse.Namespace) -> int:
    return show(LintRequest(args.file, max_work(args)).run(), args.json)
