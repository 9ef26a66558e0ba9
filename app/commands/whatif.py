"""`collsim whatif SCENARIO --machines A,B,C`: one training step on several machines, side by side, with sensitivity."""

from __future__ import annotations

import argparse
import json
import math
import os

from collsim.step import StepRequest
from simulator.errors import CollsimError
from simulator.fileio import atomic_write, say_written
from simulator.parallel import check_parallel, run_cases
from simulator.program.nccl_timing import AUTO, TimingChoice, choose_timing, nccl_conflicts
from simulator.program.presets import GPUS, MODELS
from simulator.program.run import MODES
from simulator.program.scenarios import SCENARIOS
from simulator.program.whatif import (
    calls_timed,
    cost_per_million,
    evaluate,
    sensitivity_cases,
)
from simulator.render import table
from simulator.topology.spec import check_spec_name
from simulator.units import format_time, parse_size

from ..output import emit_json
from .run_program import add_timing_arg, parse_algos
from .scenario import add_step_layout


def add_step_args(p: argparse.ArgumentParser) -> None:
    """The scenario's options (as `collsim scenario`), the run's, and --jobs / --dask."""
    p.add_argument("scenario", metavar="SCENARIO", help=", ".join(SCENARIOS))
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


def step_case(args: argparse.Namespace, machine: str, **over) -> StepRequest:
    """The training-step request of the shared options on `machine` (checked as it is built)."""
    fields = dict(scenario=args.scenario, machine=machine, model=args.model, gpu=args.gpu, tp=args.tp, pp=args.pp, ep=args.ep,
                  fsdp=args.fsdp, sp=args.sp, mfu=args.mfu, micro_batch=args.micro_batch, microbatches=args.microbatches,
                  seq_len=args.seq_len, bucket=parse_size(args.bucket, "bucket"),
                  algorithms=tuple(sorted(parse_algos(args.algo).items())), mode=args.mode,
                  timing=getattr(args, "timing", "links"), ports=args.ports)
    fields.update(over)
    return StepRequest(**fields)


def resolve_timing(args: argparse.Namespace, machines: list[str], given: list[str] | None = None) -> TimingChoice:
    """The run's timing (nccl_timing.choose_timing: --timing, or for auto the shared default rule, with the options
    given that NCCL timing refuses, `given` added to --mode exact and --algo's), stored in args.timing."""
    conflicts = nccl_conflicts(args.mode, parse_algos(args.algo)) + (given or [])
    choice = choose_timing(args.timing, machines, conflicts)
    args.timing = choice.timing
    return choice


def fallback_note(row: dict) -> str | None:
    """With NCCL timing, a line for a row some of whose collective calls ran on the links instead (None if none)."""
    timed = calls_timed(row)
    if row["timing"] != "nccl" or "links" not in timed:
        return None
    return (f"calls timed {timed}: the calls NCCL's model does not cover (more members than predict simulates, other "
            "ops, irregular groups) ran on the links (docs/whatif.md)")


def split_machines(text: str) -> list[str]:
    """'dgx-h100:nodes=2,net=ib400,hgx-b200' -> two specs: a piece with '=' and no ':' continues the previous spec."""
    out: list[str] = []
    for piece in text.split(","):
        piece = piece.strip()
        if out and "=" in piece and ":" not in piece:
            out[-1] += "," + piece
        elif piece:
            out.append(piece)
    if not out:
        raise CollsimError(f"machines: {text!r} names no machine; expected SPEC[,SPEC...] such as dgx-h100,hgx-b200:nodes=2")
    return out


def parse_prices(text: str | None, machines: list[str]) -> dict[str, float]:
    """--price: one number for every machine, or MACHINE=PRICE pairs separated by ';'."""
    if text is None:
        return {}
    def number(value: str) -> float:
        try:
            price = float(value)
        except ValueError:
            price = math.nan
        if not (math.isfinite(price) and price > 0):
            raise CollsimError(f"price: {value!r} is not a price; expected dollars per GPU-hour > 0, e.g. 2.5")
        return price
    if "=" not in text:
        price = number(text.strip())
        return {m: price for m in machines}
    out = {}
    for part in text.split(";"):
        name, _, value = part.rpartition("=")
        if name.strip() not in machines:
            raise CollsimError(f"price: {name.strip()!r} is not one of the machines; expected one of {'; '.join(machines)}")
        out[name.strip()] = number(value.strip())
    return out


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
    p.set_defaults(func=run)


def _trace_dir(path: str) -> str:
    if not path or not os.path.isdir(path):
        raise CollsimError(f"trace-dir: {path!r} is not a directory; expected an existing directory")
    return path


def run(args: argparse.Namespace) -> int:
    machines = split_machines(args.machines)
    for machine in machines:
        check_spec_name(machine)  # every name before the first machine is simulated
    timing = resolve_timing(args, machines)
    prices = parse_prices(args.price, machines)
    check_parallel(args.jobs, args.dask)
    if args.trace_dir:
        _trace_dir(args.trace_dir)
    if args.trace_ranks < 1:
        raise CollsimError(f"trace-ranks: {args.trace_ranks}; expected an integer >= 1")
    cases = [step_case(args, m, gpus=args.gpus, trace_ranks=args.trace_ranks if args.trace_dir else 0, label=m)
             for m in machines]
    sensitive = not args.no_sensitivity and args.timing == "links"  # NCCL's model knows only the preset's own links
    extra = [c for case in cases for c in sensitivity_cases(case)] if sensitive else []
    results = run_cases(evaluate, cases + extra, args.jobs, args.dask, "whatif")
    rows = _annotate(results[:len(cases)], results[len(cases):], prices)
    traces = _write_traces(rows, args.trace_dir) if args.trace_dir else []
    if args.json:
        emit_json({"scenario": args.scenario, "timing": timing.timing, "timing_why": timing.why, "rows": rows,
                   "traces": traces})
        return 0
    _print(rows, args, bool(prices), bool(extra), timing)
    for path in traces:
        say_written(f"# wrote {path}")
    return 0


def _annotate(rows: list[dict], more: list[dict], prices: dict[str, float]) -> list[dict]:
    """Cost per million tokens and the step time saved by doubled bandwidths, added to each row."""
    for k, row in enumerate(rows):
        if row["label"] in prices:
            row["usd_per_million_tokens"] = cost_per_million(row, prices[row["label"]])
        if more:
            row["saved_by_2x_nic"] = 1 - more[2 * k]["step_s"] / row["step_s"]
            row["saved_by_2x_nvlink"] = 1 - more[2 * k + 1]["step_s"] / row["step_s"]
    return rows


def _write_traces(rows: list[dict], directory: str) -> list[str]:
    paths = []
    for k, row in enumerate(rows):
        name = row["machine"].replace(":", "_").replace(",", "_").replace("=", "-")
        path = os.path.join(directory, f"whatif-{k}-{name}.trace.json")
        events = row.pop("trace_events")
        atomic_write(path, json.dumps({"traceEvents": events, "displayTimeUnit": "ns", "otherData": {"collsim": dict(row)}}))
        paths.append(path)
    return paths


def _print(rows: list[dict], args: argparse.Namespace, priced: bool, sensitive: bool, timing: TimingChoice) -> None:
    print(f"# whatif {args.scenario}: {rows[0]['model']}, {f'{args.gpus} GPUs' if args.gpus else 'every GPU of each machine'}; "
          "efficiency = compute-only step / step")
    print(f"# timing: {timing.why}")
    headers = ["machine", "gpu", "gpus", "step", "compute", "exposed comm", "tokens/s", "efficiency"]
    headers += ["$/Mtok"] if priced else []
    headers += ["2x NIC saves", "2x NVLink saves"] if sensitive else []
    body = []
    for row in rows:
        line = [row["label"], row["gpu"], row["gpus"], format_time(row["step_s"]), format_time(row["compute_s"]),
                format_time(row["exposed_s"]), round(row["tokens_per_s"]), f"{row['efficiency']:.1%}"]
        if priced:
            line.append(f"{row['usd_per_million_tokens']:.3f}" if "usd_per_million_tokens" in row else "")
        if sensitive:
            line += [f"{row['saved_by_2x_nic']:.1%}", f"{row['saved_by_2x_nvlink']:.1%}"]
        body.append(line)
    print(table(headers, body))
    for row in rows if sensitive else ():
        print(f"# {row['label']}: doubling the NIC bandwidth saves {row['saved_by_2x_nic']:.1%}; "
              f"doubling NVLink saves {row['saved_by_2x_nvlink']:.1%} ({row['mode']} run)")
    if args.timing == "nccl":
        for row in rows:
            print(f"# {row['label']}: calls timed {calls_timed(row)} (NCCL: as collsim predict times them; "
                  f"{row['mode']} run)")
            note = fallback_note(row)
            if note:
                print(f"# {row['label']}: {note}")
        if not args.no_sensitivity:
            print("# no doubled-bandwidth reruns with NCCL timing: NCCL's model knows only each preset's own links "
                  "(use --timing links for them)")

