"""One module per `collsim` subcommand, each with `add_parser(subparsers)` and `run(args) -> int`."""

from . import algorithms, app, check, cost, draw, fit, nccl_model

COMMANDS = [algorithms, cost, check, draw, app, fit, nccl_model]
