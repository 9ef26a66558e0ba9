"""One module per `collsim` subcommand, each with `add_parser(subparsers)` and `run(args) -> int`."""

from . import algorithms, app, calibrate, check, compare, cost, draw, fit, msccl, nccl_model, simulate, sweep, topologies, verify

# In the order `collsim --help` lists them: learn, predict, check against reality, then the app.
COMMANDS = [algorithms, check, draw, cost, topologies, simulate, sweep, verify, calibrate, compare, fit, nccl_model, msccl, app]

# Programs of collectives, listed after sweep.
from . import lint_program, scenario  # noqa: E402

COMMANDS[COMMANDS.index(verify):COMMANDS.index(verify)] = [scenario, lint_program]

# NCCL-style prediction on machine presets, listed after nccl-model.
from . import predict  # noqa: E402

COMMANDS.insert(COMMANDS.index(nccl_model) + 1, predict)
