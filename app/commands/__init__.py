"""One module per `collsim` subcommand, each with `add_parser(subparsers)` and `run(args) -> int`."""

from . import algorithms, app, check, cost, draw, fit, nccl_model, simulate, sweep, topologies

COMMANDS = [algorithms, cost, check, draw, app, topologies, simulate, sweep, fit, nccl_model]
