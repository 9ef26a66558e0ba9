"""One module per `collsim` subcommand, each with `add_parser(subparsers)` and `run(args) -> int`."""

from . import (
    algorithms,
    app,
    calibrate,
    check,
    colocate,
    compare,
    cost,
    doctor,
    draw,
    export_chakra,
    fit,
    import_trace,
    lint_program,
    msccl,
    nccl_model,
    predict,
    run_program,
    scale,
    scenario,
    simulate,
    sweep,
    topologies,
    verify,
    whatif,
)

# In the order `collsim --help` lists them: learn, predict, programs of collectives, check against reality, then the app.
COMMANDS = [algorithms, check, draw, cost, topologies, simulate, sweep, scenario, import_trace, export_chakra, lint_program,
            run_program,
            colocate, whatif,
            scale, verify, calibrate, compare, fit, nccl_model, predict, doctor, msccl, app]
