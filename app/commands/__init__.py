"""One module per `collsim` subcommand, each with `add_parser(subparsers)` and `run(args) -> int`."""

from . import (
    algorithms,
    app,
    calibrate,
    check,
    compare,
    cost,
    draw,
    fit,
    lint_program,
    msccl,
    nccl_model,
    scenario,
    simulate,
    sweep,
    topologies,
    verify,
)

# In the order `collsim --help` lists them: learn, predict, check against reality, then the app.
COMMANDS = [algorithms, check, draw, cost, topologies, simulate, sweep, scenario, lint_program,
            verify, calibrate, compare, fit, nccl_model, msccl, app]
