"""Arguments that several subcommands share, parsed the same way everywhere."""

from __future__ import annotations

import argparse

from simulator.algorithms.registry import all_params
from simulator.collective import DTYPES, OPS
from simulator.units import SIZE_HELP

SIZE_MEANING = ("SIZE follows nccl-tests: the per-rank buffer for allreduce, broadcast and reduce; "
                "the total buffer (count x element size x ranks) for allgather, reduce_scatter, alltoall, "
                "gather and scatter.")


def add_op(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument("--op", required=required, metavar="OP", help=f"collective: {', '.join(OPS)}")


def add_algo_params(parser: argparse.ArgumentParser) -> None:
    """One `--NAME N` flag per algorithm parameter in the registry, described by its Param."""
    for name, (param, users) in all_params().items():
        algos = ", ".join(dict.fromkeys(u.split("/")[1] for u in users))
        default = f"; default {param.default}" if param.default is not None else ""  # else its help says who picks
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, type=int, metavar="N",
                            help=f"{param.help}; {param.accepted()}{default} (algorithms: {algos})")


def add_collective(parser: argparse.ArgumentParser, size_default: str | None = None, dtype_default: str = "float32") -> None:
    parser.add_argument("--size", default=size_default, metavar="SIZE",
                        help=f"{SIZE_HELP}; a range START:END[:FACTOR] or a list A,B,C where accepted. {SIZE_MEANING}")
    parser.add_argument("--dtype", default=dtype_default, help=f"element type: {', '.join(DTYPES)} (default {dtype_default})")
    parser.add_argument("--root", type=int, default=0, help="root rank for broadcast, reduce, gather, scatter (default 0)")


def algo_params(args: argparse.Namespace, accepted: tuple[str, ...] | None = None) -> dict:
    """The algorithm parameters given on the command line (only those `accepted`, if named)."""
    params = {name: getattr(args, name, None) for name in all_params()}
    params = {k: v for k, v in params.items() if v is not None}
    if accepted is not None:
        params = {k: v for k, v in params.items() if k in accepted}
    return params
