"""One module per `collsim` subcommand, each with `add_parser(subparsers)` and `run(args) -> int`."""

from . import algorithms, app, check, cost, draw, fit, msccl, nccl_model, simulate, sweep, topologies

# In the order `collsim --help` lists them: learn, predict, check against reality, then the app.
COMMANDS = [algorithms, check, draw, cost, topologies, simulate, sweep, fit, nccl_model, msccl, app]
