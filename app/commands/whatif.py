"""`collsim whatif SCENARIO --machines A,B,C`: one training step on several machines, side by side, with sensitivity."""

from __future__ import annotations

import argparse

from collsim.whatif import WhatifRequest, fallback_note, parse_prices, split_machines  # noqa: F401 (tests import them here)
from collsim.whatif_program import ProgramWhatifRequest
from simulator.errors import CollsimError
from simulator.program.nccl_timing import AUTO
from simulator.program.presets import GPUS, MODELS
from simulator.program.run import MODES
from simulator.program.scenarios import SCENARIOS
from simulator.program.whatif import StepCase
from simulator.units import parse_size

from ..show import show
from .run_program import add_timing_arg, parse_algos
from .scenario import add_step_layout


def add_step_args(p: argparse.ArgumentParser) -> None:
    """The scenario's options (as `collsim scenario`), the run's, and --jobs / --dask."""
    p.add_argument("scenario", metavar="SCENARIO", nargs="?", help=", ".join(SCENARIOS) + " (or --program FILE)")
    p.add_argument("--model", default="llama2-7b", help=f"model preset: {', '.join(MODELS)} (default llama2-7b)")
    p.add_argument("--gpu", help=f"GPU preset: {', '.join(GPUS)} (default: the machine preset's)")
    add_step_layout(p)
    p.add_argument("--algo", action="append", default=[], metavar="OP=NAME",
                   help="algorithm for every call of an op, e.g. allreduce=hierarchical (default ring; repeatable)")
    p.add_argument("--mode", default="auto", choices=MODES,
                   help="exact: every call expanded (calls share links); isolated: each distinct call timed alone; "
                        "auto (default): exact up to about 2M transfers")
    p.add_argument("--ports", type=int, default=1, help="messages a rank may have in flight each way (default 1; 0 = unlimited)")
    add_parallel_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")


def add_parallel_args(p: argparse.ArgumentParser) -> None:
    """--jobs and --dask, shared by sweep, whatif and scale."""
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="run cases in N processes (default: every core; 1 = serially in this process); capped, "
                        "with a note, at the cores this process may use and at the number of cases")
    p.add_argument("--dask", metavar="ADDRESS",
                   help="run cases on the Dask scheduler at ADDRESS (e.g. tcp://10.0.0.5:8786). Only a cluster you "
                        "trust: its results are unpickled here, so whoever controls it can run code as you")


def step_template(args: argparse.Namespace) -> StepCase:
    """The training step of the shared options, every machine's template (collsim/whatif.py step_request)."""
    return StepCase(scenario=args.scenario, machine="", model=args.model, gpu=args.gpu, tp=args.tp, pp=args.pp, ep=args.ep,
                    fsdp=args.fsdp, sp=args.sp, mfu=args.mfu, micro_batch=args.micro_batch, microbatches=args.microbatches,
                    seq_len=args.seq_len, bucket=parse_size(args.bucket, "bucket"),
                    algorithms=tuple(sorted(parse_algos(args.algo).items())), mode=args.mode, timing=args.timing,
                    ports=args.ports)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "whatif", help="one training step on several machines: step time, exposed communication, tokens/s, cost",
        description="Generate a training step (as `collsim scenario`) for each machine, run it on the engine and print "
                    "one table: step time, compute, exposed communication (not hidden behind compute), tokens/s, "
                    "scaling efficiency (compute-only step / step) and, with --price, dollars per million tokens. "
                    "Collectives are timed as NCCL runs them (--timing nccl) when every machine is a preset NCCL's "
                    "model knows, else with collsim's algorithms on the links (--timing links); --mode exact or "
                    "--algo for an op NCCL picks for, given without --timing, mean links; the output says which "
                    "timing ran and why. The sensitivity columns (links timing) rerun each machine with the NIC "
                    "bandwidth doubled, then NVLink doubled, and give the step time saved (docs/whatif.md).",
        epilog="examples:\n  collsim whatif ddp --machines dgx-h100:nodes=2,net=ib400,hgx-b200:nodes=2 --price 2.5\n"
               "  collsim whatif ddp --machines dgx-h100:nodes=2,p5:nodes=2 --timing links --algo allreduce=hierarchical\n"
               "  collsim whatif hybrid --tp 8 --machines dgx-h100:nodes=8 --trace-dir traces")
    add_step_args(p)
    add_timing_arg(p, AUTO)
    p.add_argument("--machines", required=True, metavar="SPEC,SPEC",
                   help="machines to compare: topology SPECs (a piece with '=' and no ':' belongs to the spec before)")
    p.add_argument("--gpus", type=int, help="GPUs of the job (default: every device of each machine)")
    p.add_argument("--price", metavar="USD", help="price per GPU-hour: one number, or MACHINE=USD;MACHINE=USD")
    p.add_argument("--no-sensitivity", action="store_true", help="skip the doubled-bandwidth reruns")
    p.add_argument("--trace-dir", metavar="DIR", help="write a Chrome trace of each machine's step (its first --trace-ranks)")
    p.add_argument("--trace-ranks", type=int, default=16, help="ranks in each trace (default 16)")
    p.add_argument("--program", metavar="FILE", help="instead of SCENARIO: a program (collsim import-trace's, or written "
                   "by hand) run on each machine, its compute spans scaled by the GPUs' FLOP-rate ratio or --compute-scale")
    p.add_argument("--from-gpu", metavar="GPU", help=f"with --program: the GPU its compute ran on ({', '.join(GPUS)}; "
                   "default: the program's gpu:)")
    p.add_argument("--compute-scale", metavar="X", help="with --program: every compute span x X on every machine "
                   "(instead of the FLOP-rate ratio)")
    p.set_defaults(func=run, _step_defaults={dest: p.get_default(dest) for dest in STEP_ONLY})


def request(args: argparse.Namespace) -> WhatifRequest:
    """The what-if request of the command line."""
    return WhatifRequest(step_template(args), tuple(split_machines(args.machines)), gpus=args.gpus, prices=args.price,
                         sensitivity=not args.no_sensitivity, trace_dir=args.trace_dir, trace_ranks=args.trace_ranks,
                         jobs=args.jobs, dask=args.dask)


# options that shape a generated training step, which a --program run does not read
STEP_ONLY = ("model", "tp", "pp", "ep", "fsdp", "sp", "mfu", "micro_batch", "microbatches", "seq_len", "bucket", "algo",
             "ports", "gpus", "no_sensitivity", "trace_ranks", "jobs", "dask")


def program_request(args: argparse.Namespace) -> ProgramWhatifRequest:
    """`whatif --program FILE`: the program on each machine (collsim/whatif_program.py)."""
    if args.scenario is not None:
        raise CollsimError(f"scenario: {args.scenario!r} with --program; expected one of them")
    for flag, value in (("price", args.price), ("trace-dir", args.trace_dir)):
        if value is not None:
            raise CollsimError(f"{flag}: {value!r} with --program; expected --{flag} only with a SCENARIO (not yet for "
                               "programs)")
    for dest, default in args._step_defaults.items():  # the step's options describe a generated step, not a program
        if getattr(args, dest) != default:
            flag = dest.replace("_", "-")
            raise CollsimError(f"{flag}: {getattr(args, dest)!r} with --program; expected --{flag} only with a SCENARIO "
                               "(a program states its own layout, batch and algorithms)")
    timing = "links" if args.timing == AUTO else args.timing
    return ProgramWhatifRequest(args.program, tuple(split_machines(args.machines)), compute_scale=args.compute_scale,
                                from_gpu=args.from_gpu, gpu=args.gpu, timing=timing, mode=args.mode)


def run(args: argparse.Namespace) -> int:
    if args.program is not None:
        return show(program_request(args).run(), args.json)
    for name in ("from_gpu", "compute_scale"):
        if getattr(args, name) is not None:
            flag = "--" + name.replace("_", "-")
            raise CollsimError(f"{flag[2:]}: {getattr(args, name)!r} without --program; expected {flag} only with "
                               "--program FILE")
    if args.scenario is None:
        raise CollsimError(f"scenario: none given; expected one of {', '.join(SCENARIOS)}, or --program FILE")
    return show(request(args).run(), args.json)
