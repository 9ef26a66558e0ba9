"""`collsim cost`: closed-form time, algbw and busbw of one or all algorithms for an op."""

from __future__ import annotations

import argparse

from simulator.algorithms import get, names_for
from simulator.algorithms.registry import check_ranks, resolve_params
from simulator.collective import DTYPES, Collective, normalize_dtype, normalize_op
from simulator.cost import LinkModel, lower_bound, predict
from simulator.errors import CollsimError
from simulator.units import parse_bandwidth, parse_size_range, parse_time

from ..args import add_algo_params, add_collective, add_op, algo_params
from ..output import emit_json, table


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cost", help="closed-form alpha-beta-gamma time of algorithms",
        description="Closed-form time, algorithm bandwidth and bus bandwidth (nccl-tests definitions) of one "
                    "algorithm, or of every algorithm for the op when --algo is left out, with the lower bound.",
        epilog="example: collsim cost --op allreduce --ranks 8 --size 1KiB:1GiB:32 --alpha 2us --bandwidth 25GB/s")
    add_op(p)
    p.add_argument("--algo", help="algorithm name (default: compare all for the op)")
    p.add_argument("--ranks", type=int, required=True, help="number of ranks p")
    add_collective(p, size_default="1MiB")
    p.add_argument("--alpha", default="2us", help="latency per message: 2us, 0.5ms or seconds (default 2us)")
    p.add_argument("--bandwidth", default="25GB/s", help="per-direction link bandwidth: 25GB/s, 400Gbit/s or B/s (default 25GB/s)")
    p.add_argument("--gamma", default="0", help="reduction cost in seconds per byte, e.g. 1e-11 (default 0)")
    add_algo_params(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def _gamma(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise CollsimError(f"gamma: cannot read {text!r}; expected seconds per byte such as 1e-11") from None
    if value < 0:
        raise CollsimError(f"gamma: {text!r} is negative; expected seconds per byte >= 0")
    return value


def run(args: argparse.Namespace) -> int:
    op = normalize_op(args.op)
    sizes = parse_size_range(args.size, "size", multiple=DTYPES[normalize_dtype(args.dtype)])
    model = LinkModel.from_bandwidth(parse_time(args.alpha, "alpha"), parse_bandwidth(args.bandwidth), _gamma(args.gamma))
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
        times = predict(op, name, args.ranks, sizes, model, **params)
        results.append((name, params, times))
    bounds = lower_bound(op, args.ranks, sizes, model)
    rows = []
    for name, params, times in results:
        for size, t, lb in zip(sizes, times, bounds):
            coll = Collective(op, args.ranks, size, args.dtype, args.root)
            rows.append({"op": op, "algorithm": name, "params": params, "ranks": args.ranks, "bytes": size,
                         "time_s": float(t), "algbw_GBps": coll.algbw(t) / 1e9, "busbw_GBps": coll.busbw(t) / 1e9,
                         "lower_bound_s": float(lb), "x_lower_bound": float(t / lb) if lb > 0 else 1.0})
    if args.json:
        emit_json(rows[0] if len(rows) == 1 else {"model": {"alpha_s": model.alpha, "bandwidth_Bps": 1 / model.beta,
                                                           "gamma_s_per_byte": model.gamma},
                                                  "results": rows, "refused": refused})
        return 0
    print(f"# {op}, p={args.ranks}, alpha={args.alpha}, bandwidth={args.bandwidth}, gamma={model.gamma:g} s/B "
          f"(closed forms; times in us, bandwidths in GB/s)")
    if len(sizes) == 1:
        best = min(r["time_s"] for r in rows)
        print(table(["algorithm", "time(us)", "algbw", "busbw", "x bound", ""],
                    [[r["algorithm"], r["time_s"] * 1e6, r["algbw_GBps"], r["busbw_GBps"], r["x_lower_bound"],
                      "<- best" if r["time_s"] == best and len(rows) > 1 else ""] for r in rows]))
        print(f"lower bound: {bounds[0] * 1e6:.2f} us")
    else:
        names_ok = [name for name, _, _ in results]
        grid = []
        for i, size in enumerate(sizes):
            times = [res[2][i] for res in results]
            grid.append([size] + [t * 1e6 for t in times] + [bounds[i] * 1e6, names_ok[min(range(len(times)), key=times.__getitem__)]])
        print(table(["size(B)"] + names_ok + ["bound", "best"], grid))
    for name, reason in refused.items():
        print(f"# {name}: not for {args.ranks} ranks ({reason})")
    return 0
