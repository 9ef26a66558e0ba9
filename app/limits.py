"""--max-transfers and --max-memory: the options of the commands whose requests bound themselves (collsim/limits.py),
passed through to the request as its `Limits`."""

from __future__ import annotations

import argparse

from collsim.limits import DEFAULT_MAX_MEMORY, DEFAULT_MAX_TRANSFERS, Limits


def add_limit_args(parser: argparse.ArgumentParser) -> None:
    """--max-transfers and --max-memory, documented in the command's --help."""
    parser.add_argument("--max-transfers", default=DEFAULT_MAX_TRANSFERS, metavar="N",
                        help=f"refuse up front a request whose schedules would have more transfers than N, all sizes and "
                             f"algorithms together (default {DEFAULT_MAX_TRANSFERS})")
    parser.add_argument("--max-memory", default=DEFAULT_MAX_MEMORY, metavar="SIZE",
                        help=f"refuse up front a request estimated to need more memory than SIZE (default {DEFAULT_MAX_MEMORY})")


def limits(args: argparse.Namespace) -> Limits:
    """The limits the command line gives its request."""
    return Limits(args.max_transfers, args.max_memory)
