"""One module per `collsim` subcommand, each with `add_parser(subparsers)` and `run(args) -> int`."""

from . import algorithms, app, calibrate, check, compare, cost, draw, fit, msccl, nccl_model, simulate, sweep, topologies, verify

# In the order `collsim --help` lists them: learn, predict, check against reality, then the app.
COMMANDS = [algorithms, check, draw, cost, topologies, simulate, sweep, verify, calibrate, compare, fit, nccl_model, msccl, app]

# Programs of collectives, listed after sweep.
from . import lint_program, scenario  # noqa: E402

COMMANDS[COMMANDS.index(verify):COMMANDS.index(verify)] = [scenario, lint_program]

# Timed programs: run-program after lint-program.
from . import run_program  # noqa: E402

COMMANDS.insert(COMMANDS.index(lint_program) + 1, run_program)

# What-if and scaling studies of training steps, after run-program.
from . import scale, whatif  # noqa: E402

COMMANDS.insert(COMMANDS.index(run_program) + 1, whatif)
COMMANDS.insert(COMMANDS.index(whatif) + 1, scale)
