"""One module per `collsim` subcommand, each with `add_parser(subparsers)` and `run(args) -> int`."""

from . import algorithms, check, cost, fit

COMMANDS = [algorithms, cost, check, fit]
