"""`collsim cost`: closed-form time, algbw and busbw of one or all algorithms for an op.

An algorithm registered without a closed form is timed by the event engine on ideal:P (the same
contention-free single-port machine the closed forms describe); the output says which was used.
"""

from __future__ import annotations

import argparse

from simulator.algorithms import get, names_for
from simulator.algorithms.registry import check_ranks, resolve_params
from simulator.collective import DTYPES, Collective, normalize_dtype, normalize_op
from simulator.cost import CLOSED_FORM, ENGINE, LinkModel, estimate, has_closed_form, lower_bound
from simulator.errors import CollsimError
from simulator.render import table
from simulator.units import parse_bandwidth, parse_gamma, parse_size_range, parse_time

from ..args import add_algo_params, add_collective, add_op, algo_params
from ..limits import Footprint
from ..output import emit_json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cost", help="closed-form alpha-beta-gamma time of algorithms",
        description="Closed-form time, algorithm bandwidth and bus bandwidth (nccl-tests definitions) of one "
                    "algorithm, or of every algorithm for the op when --algo is left out, with the lower bound. "
                    "An algorithm without a closed form is simulated by the event engine on ideal:P instead "
                    "(marked 'engine').",
        epilog="example: collsim cost --op allreduce --ranks 8 --size 1KiB:1GiB:32 --alpha 2us --bandwidth 25GB/s")
    add_op(p)
    p.add_argument("--algo", help="algorithm name (default: compare all for the op)")
    p.add_argument("--ranks", type=int, required=True, help="number of ranks p")
    add_collective(p, size_default="1MiB")
    p.add_argument("--alpha", help="latency per message, with a unit: 2us, 0.5ms, 3e-6s (default 2us)")
    p.add_argument("--bandwidth", help="per-direction link bandwidth: 25GB/s, 400Gbit/s or B/s (default 25GB/s)")
    p.add_argument("--gamma", help="reduction cost in seconds per byte, e.g. 1e-11 (default 0)")
    p.add_argument("--profile", metavar="FILE", help="a link profile (collsim calibrate / fit) instead of --alpha/--bandwidth/"
                                                     "--gamma; a piecewise profile prices each size with its segment")
    add_algo_params(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run, _footprint=Footprint())


def _profile_adapter(args: argparse.Namespace):
    """The profile adapter for --profile (None without it); --profile excludes --alpha, --bandwidth and --gamma."""
    if not args.profile:
        return None
    given = [flag for flag in ("alpha", "bandwidth", "gamma") if getattr(args, flag) is not None]
    if given:
        raise CollsimError(f"profile: give either --profile or --{'/--'.join(given)}, not both")
    from simulator.profile import load_profile
    from simulator.profile_adapter import ProfileAdapter

    return ProfileAdapter(load_profile(args.profile))


def run(args: argparse.Namespace) -> int:
    op = normalize_op(args.op)
    sizes = parse_size_range(args.size, "size", multiple=DTYPES[normalize_dtype(args.dtype)])
    adapter = _profile_adapter(args)
    model = adapter.profile.model if adapter else LinkModel.from_bandwidth(
        parse_time(args.alpha or "2us", "alpha"), parse_bandwidth(args.bandwidth or "25GB/s"), parse_gamma(args.gamma or "0"))
    for size in sizes:  # validates ranks, dtype and root once per size
        Collective(op, args.ranks, size, args.dtype, args.root)
    names = [args.algo] if args.algo else names_for(op)
    results, refused = [], {}
    for name in names:
        spec = get(op, name)
        if not args.algo and spec.refusal(args.ranks):
            refused[name] = spec.refusal(args.ranks)
            continue
        check_ranks(spec, args.ranks)
        params = resolve_params(spec, algo_params(args, tuple(p.name for p in spec.params) if not args.algo else None))
        if adapter:
            method = CLOSED_FORM if has_closed_form(op, name) else ENGINE
            results.append((name, params, adapter.predict(op, name, args.ranks, sizes, **params), method))
        else:
            est = estimate(op, name, args.ranks, sizes, model, **params)
            results.append((name, params, est.times, est.method))
    bounds = adapter.lower_bound(op, args.ranks, sizes) if adapter else lower_bound(op, args.ranks, sizes, model)
    rows = []
    for name, params, times, method in results:
        for size, t, lb in zip(sizes, times, bounds):
            coll = Collective(op, args.ranks, size, args.dtype, args.root)
            rows.append({"op": op, "algorithm": name, "params": params, "ranks": args.ranks, "bytes": size,
                         "time_s": float(t), "algbw_GBps": coll.algbw(t) / 1e9, "busbw_GBps": coll.busbw(t) / 1e9,
                         "lower_bound_s": float(lb), "x_lower_bound": float(t / lb) if lb > 0 else 1.0,
                         "method": method})
    if args.json:
        emit_json(rows[0] if len(rows) == 1 else {"model": {"alpha_s": model.alpha, "bandwidth_Bps": 1 / model.beta,
                                                           "gamma_s_per_byte": model.gamma},
                                                  "results": rows, "refused": refused})
        return 0
    _print_text(args, model, sizes, results, rows, bounds)
    for name, reason in refused.items():
        print(f"# {name}: not for {args.ranks} ranks ({reason})")
    return 0


def _print_text(args: argparse.Namespace, model: LinkModel, sizes: list[int], results: list, rows: list[dict], bounds) -> None:
    """The table: one row per algorithm (one size) or one column per algorithm (several); engine times marked."""
    engine = [name for name, _, _, method in results if method != CLOSED_FORM]
    how = "closed forms" + (f"; * = event engine on ideal:{args.ranks}, no closed form" if engine else "")
    machine = (f"profile {args.profile}" if args.profile else
               f"alpha={args.alpha or '2us'}, bandwidth={args.bandwidth or '25GB/s'}, gamma={model.gamma:g} s/B")
    print(f"# {normalize_op(args.op)}, p={args.ranks}, {machine} ({how}; times in us, bandwidths in GB/s)")
    if len(sizes) == 1:
        best = min(r["time_s"] for r in rows)
        print(table(["algorithm", "time(us)", "algbw", "busbw", "x bound", "model", ""],
                    [[r["algorithm"], r["time_s"] * 1e6, r["algbw_GBps"], r["busbw_GBps"], r["x_lower_bound"], r["method"],
                      "<- best" if r["time_s"] == best and len(rows) > 1 else ""] for r in rows]))
        print(f"lower bound: {bounds[0] * 1e6:.2f} us")
        return
    names_ok = [name for name, _, _, _ in results]
    labels = [name + ("*" if name in engine else "") for name in names_ok]
    grid = []
    for i, size in enumerate(sizes):
        times = [res[2][i] for res in results]
        grid.append([size] + [t * 1e6 for t in times] + [bounds[i] * 1e6, names_ok[min(range(len(times)), key=times.__getitem__)]])
    print(table(["size(B)"] + labels + ["bound", "best"], grid))
