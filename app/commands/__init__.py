"""One module per `collsim` subcommand, each with `add_parser(subparsers)` and `run(args) -> int`."""

from . import algorithms, check, cost, simulate, sweep, topologies

COMMANDS = [algorithms, cost, check, topologies, simulate, sweep]
