"""One module per `collsim` subcommand, each with `add_parser(subparsers)` and `run(args) -> int`."""

from . import algorithms, app, calibrate, check, compare, cost, draw, simulate, sweep, topologies, verify

COMMANDS = [algorithms, cost, check, draw, app, topologies, simulate, sweep, verify, calibrate, compare]
