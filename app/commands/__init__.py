"""One module per `collsim` subcommand, each with `add_parser(subparsers)` and `run(args) -> int`."""

from . import algorithms, calibrate, check, compare, cost, verify

COMMANDS = [algorithms, cost, check, verify, calibrate, compare]
