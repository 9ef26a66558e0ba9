"""One module per `collsim` subcommand, each with `add_parser(subparsers)` and `run(args) -> int`."""

from . import algorithms, check, cost, fit, nccl_model

COMMANDS = [algorithms, cost, check, fit, nccl_model]
