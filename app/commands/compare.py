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
from simulator.fileio import atomic_write
from simulator.profile import LinkProfile, load_profile
from simulator.units import parse_bandwidth, parse_gamma, parse_size_range, parse_time

from ..args import add_algo_params, add_op, algo_params
from ..output import emit_json, table


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare", help="predicted vs measured time of an algorithm, per size",
        description="Predict the time of one (op, algorithm) with the closed form and the event engine from a "
                    "calibrated link profile, measure the same schedule on a real backend (or read a "
                    "`collsim verify --json` file), and print the error per size and the median absolute percentage error.",
        epilog="examples:\n"
               "  collsim calibrate --ranks 4 --out gloo.yaml\n"
               "  collsim compare --profile gloo.yaml --op allreduce --algo ring --ranks 4 --sizes 64KiB:64MiB:4\n"
               "  collsim compare --profile gloo.yaml --measured run.json --op allgather --algo ring --csv cmp.csv")
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
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


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
    if args.measured:
        ranks, sizes, times, params = load_measured(args.measured, op, args.algo, args.ranks)
        source = args.measured
    else:
        if args.ranks is None:
            raise CollsimError("ranks: give --ranks N to measure (or --measured FILE)")
        check_ranks(spec, args.ranks)
        params = resolve_params(spec, algo_params(args, tuple(x.name for x in spec.params)))
        from verify.runner import VerifyRequest

        from .verify import run_request

        req = VerifyRequest(cases=((op, args.algo, params),), sizes=tuple(parse_size_range(args.sizes, "sizes")),
                            dtypes=(args.dtype,), timing=True, native=True, time_native=False, time_budget_s=args.budget)
        records = [r for r in run_request(req, args.ranks, args.backend, args.timeout, False) if "time_s" in r]
        ranks, sizes, times = args.ranks, [r["bytes"] for r in records], [r["time_s"] for r in records]
        source = f"measured now on {args.backend}"
    predicted = predictions(op, args.algo, ranks, sizes, profile, params, args.dtype)
    if not predicted:
        raise CollsimError(f"algo: no model can predict {op}/{args.algo}")
    rows, summary = error_table(sizes, times, predicted)
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
                   "median_abs_pct_error": summary, "rows": rows})
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
    return 0
