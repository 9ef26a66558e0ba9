"""`collsim compare`: model predictions against measured times of the same schedule, per size, with the median error."""

from __future__ import annotations

import argparse
import csv
import io

from simulator.algorithms import get
from simulator.algorithms.registry import check_ranks, resolve_params
from simulator.collective import normalize_op
from simulator.cost import LinkModel
from simulator.errors import CollsimError
from simulator.fileio import atomic_write, say_written
from simulator.profile import LinkProfile, load_profile
from simulator.render import table
from simulator.units import parse_bandwidth, parse_gamma, parse_size, parse_size_range, parse_time

from ..args import add_algo_params, add_op, algo_params
from ..limits import Footprint
from ..output import emit_json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare", help="predicted vs measured time of an algorithm, per size",
        description="Predict the time of one (op, algorithm) with the closed form and the event engine from a "
                    "calibrated link profile, measure the same schedule on a real backend (or read a "
                    "`collsim verify --json` file), and print the error per size and the median absolute percentage error.",
        epilog="examples:\n"
               "  collsim calibrate --ranks 4 --out gloo.yaml\n"
               "  collsim compare --profile gloo.yaml --op allreduce --algo ring --ranks 4 --sizes 64KiB:64MiB:4\n"
               "  collsim compare --profile gloo.yaml --measured run.json --op allgather --algo ring --csv cmp.csv\n"
               "  collsim compare --profile gloo.yaml --op allreduce --algo ring --ranks 4 --trace steps.json")
    add_op(p)
    p.add_argument("--algo", required=True, help="algorithm name")
    p.add_argument("--ranks", type=int, help="ranks (default: the measured file's)")
    p.add_argument("--sizes", default="64KiB:64MiB:4", help="sizes to measure (default 64KiB:64MiB:4; ignored with --measured)")
    p.add_argument("--dtype", default="float32", help="element type of the measured run (default float32)")
    p.add_argument("--profile", help="link profile from `collsim calibrate` or `collsim fit` (alpha per message, bandwidth, "
                                     "gamma, per-size segments; docs/model.md)")
    p.add_argument("--alpha", help="latency per message instead of a profile, e.g. 50us")
    p.add_argument("--bandwidth", help="bandwidth instead of a profile, e.g. 3GB/s")
    p.add_argument("--gamma", default="0", help="reduction cost in s/B with --alpha/--bandwidth (default 0)")
    p.add_argument("--measured", metavar="JSON", help="use this `collsim verify --json` output instead of running")
    p.add_argument("--backend", default="gloo", help="backend to measure on (default gloo)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds any single wait may take (default 60)")
    p.add_argument("--budget", type=float, default=2.0, help="seconds of timing per size (default 2)")
    add_algo_params(p)
    p.add_argument("--csv", metavar="PATH", help="also write the plot-ready rows as CSV")
    p.add_argument("--trace", metavar="FILE", help="also write one Chrome/Perfetto trace: each rank's predicted (engine) and "
                   "measured transfer intervals side by side, for --trace-size (needs a live run, not --measured)")
    p.add_argument("--trace-size", metavar="SIZE", help="the size traced with --trace (default: the first of --sizes)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run, _footprint=Footprint(processes=True))


def _profile(args: argparse.Namespace) -> LinkProfile:
    if args.profile:
        if args.alpha or args.bandwidth:
            raise CollsimError("profile: give either --profile or --alpha/--bandwidth, not both")
        return load_profile(args.profile)
    if not (args.alpha and args.bandwidth):
        raise CollsimError("profile: give --profile FILE (from `collsim calibrate`) or both --alpha and --bandwidth")
    gamma = parse_gamma(args.gamma)
    m = LinkModel.from_bandwidth(parse_time(args.alpha), parse_bandwidth(args.bandwidth), gamma)
    return LinkProfile(m.alpha, 1 / m.beta, m.gamma, "command line")


def run(args: argparse.Namespace) -> int:
    from verify.compare import error_table, load_measured, predictions

    op = normalize_op(args.op)
    spec = get(op, args.algo)
    profile = _profile(args)
    trace_size = _trace_size(args)
    if args.measured:
        ranks, sizes, times, params = load_measured(args.measured, op, args.algo, args.ranks)
        source = args.measured
    else:
        if args.ranks is None:
            raise CollsimError("ranks: give --ranks N to measure (or --measured FILE)")
        check_ranks(spec, args.ranks)
        params = resolve_params(spec, algo_params(args, tuple(x.name for x in spec.params)))
        from collsim.verify import run_job
        from verify.runner import VerifyRequest

        req = VerifyRequest(cases=((op, args.algo, params),), sizes=tuple(parse_size_range(args.sizes, "sizes")),
                            dtypes=(args.dtype,), timing=True, native=True, time_native=False, time_budget_s=args.budget)
        records = [r for r in run_job(req, args.ranks, args.backend, args.timeout, False) if "time_s" in r]
        ranks, sizes, times = args.ranks, [r["bytes"] for r in records], [r["time_s"] for r in records]
        source = f"measured now on {args.backend}"
    predicted = predictions(op, args.algo, ranks, sizes, profile, params, args.dtype)
    if not predicted:
        raise CollsimError(f"algo: no model can predict {op}/{args.algo}")
    rows, summary = error_table(sizes, times, predicted)
    from verify.steptrace import error_terms

    terms = error_terms(op, args.algo, ranks, sizes, times, profile, params, args.dtype)
    if args.trace:
        _write_trace(args, op, ranks, params, profile, trace_size if trace_size is not None else sizes[0])
    for row in rows:
        row.update(op=op, algorithm=args.algo, ranks=ranks)
    if args.csv:
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        atomic_write(args.csv, out.getvalue())
    model = {"alpha_s": profile.alpha_s, "bandwidth_Bps": profile.bandwidth_Bps, "gamma_s_per_byte": profile.gamma_s_per_byte,
             "source": profile.source}
    if args.json:
        emit_json({"op": op, "algorithm": args.algo, "ranks": ranks, "params": params, "measured": source, "model": model,
                   "median_abs_pct_error": summary, "rows": rows, "terms": terms, "trace_written": args.trace})
        return 0
    names = list(predicted)
    print(f"# {op}/{args.algo} p={ranks}: {source}; model alpha {profile.alpha_s * 1e6:.2f} us, "
          f"bandwidth {profile.bandwidth_Bps / 1e9:.3f} GB/s, gamma {profile.gamma_s_per_byte:.3g} s/B")
    head = ["size(B)", "measured(us)"] + [h for n in names for h in (f"{n}(us)", "error")]
    body = [[r["bytes"], r["measured_s"] * 1e6] + [v for n in names for v in (r[f"{n}_s"] * 1e6, f"{r[f'{n}_err_pct']:+.1f}%")]
            for r in rows]
    print(table(head, body, align="r" * len(head)))
    for name, mdape in summary.items():
        print(f"# {name}: median absolute error {mdape:.1f}%")
    print("# the engine's prediction split into terms (us), and the factor one term alone would need to close the error:")
    us = lambda v: v * 1e6
    print(table(["size(B)", "measured", "predicted", "latency", "bandwidth", "reduction", "contention", "protocol", "error",
                 "latency x", "bandwidth x"],
                [[t["bytes"], us(t["measured_s"]), us(t["predicted_s"]), us(t["latency_s"]), us(t["bandwidth_s"]),
                  us(t["reduction_s"]), us(t["contention_s"]), us(t["protocol_s"]), f"{t['error_pct']:+.1f}%",
                  _factor(t["latency_x_to_close"]), _factor(t["bandwidth_x_to_close"])] for t in terms], align="r" * 11))
    if args.trace:
        say_written(f"# trace written: {args.trace} (open in https://ui.perfetto.dev or chrome://tracing)")
    return 0


def _trace_size(args: argparse.Namespace) -> int | None:
    """--trace-size in bytes (None: the first size), after checking --trace and --measured agree with it."""
    if args.trace is not None and args.measured:
        raise CollsimError("trace: --measured files hold no per-transfer times; expected a live run (drop --measured) "
                           "to write --trace")
    if args.trace_size is None:
        return None
    if args.trace is None:
        raise CollsimError(f"trace-size: {args.trace_size!r} without --trace; expected --trace FILE too")
    size = parse_size(args.trace_size, "trace-size")
    largest = max(parse_size_range(args.sizes, "sizes"))
    if not 1 <= size <= largest:
        raise CollsimError(f"trace-size: {args.trace_size!r}; expected a size from 1 byte to the largest of --sizes "
                           f"({largest} bytes)")
    return size


def _factor(value: float | None) -> str:
    return "-" if value is None else f"x{value:.2f}" if value > 0 else "none"


def _write_trace(args: argparse.Namespace, op: str, ranks: int, params: dict, profile: LinkProfile, size: int) -> None:
    """Measure one run of `size` with per-transfer times and write it beside the engine's run (verify/steptrace.py)."""
    from verify.steptrace import chrome_trace, engine_trace, measured_intervals, predicted_intervals, write_chrome

    predicted = engine_trace(op, args.algo, ranks, size, profile, params, args.dtype)
    measured = measured_intervals(op, args.algo, ranks, size, params, args.dtype, args.backend, args.timeout)
    title = f"{op}/{args.algo} p={ranks} {size} B: predicted vs measured on {args.backend}"
    write_chrome(args.trace, chrome_trace(predicted.schedule, predicted_intervals(predicted), measured, title))
