"""`collsim lint-program FILE`: check a program of collectives without running it."""

from __future__ import annotations

import argparse

from simulator.program import check_program, load_program

from ..output import emit_json

PROGRAM_HINT = "expected a smaller program (fewer ranks, groups or operations per rank)"


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
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run, _memory_hint=PROGRAM_HINT)


def run(args: argparse.Namespace) -> int:
    program = load_program(args.file)
    problems = check_program(program)
    summary = {"file": args.file, "world": program.world, "groups": len(program.groups),
               "operations": sum(len(ops) for ops in program.ranks.values()), "ok": not problems}
    if args.json:
        emit_json({**summary, "problems": [p.to_dict() for p in problems]})
    elif not problems:
        print(f"OK: {args.file}: {summary['world']} ranks, {summary['groups']} groups, {summary['operations']} operations; "
              "every group's calls match and program order finishes")
    else:
        for problem in problems:
            print(f"{args.file}: {problem.kind}: {problem.message}")
    return 1 if problems else 0
