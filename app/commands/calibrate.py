"""`collsim calibrate`: ping-pong sweep and timed reductions fitted to alpha, beta, gamma; writes a link profile."""

from __future__ import annotations

import argparse

from simulator.errors import CollsimError
from simulator.fileio import say_written
from simulator.render import table
from simulator.units import format_size, parse_size_range

from ..limits import Footprint
from ..output import emit_json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "calibrate", help="measure alpha, bandwidth and gamma on a real backend and write a link profile",
        description="Ping-pong messages of growing size between rank pairs (one-way time = median round trip / 2), fit "
                    "t = alpha + n beta by least squares on relative residuals, time in-place float32 additions for "
                    "gamma, print the fit quality and write a profile that `collsim cost --profile`, `collsim compare --profile` "
                    "and `collsim simulate/sweep --profile` load (docs/model.md: how a profile reaches a machine).",
        epilog="example: collsim calibrate --ranks 2 --sizes 1B:64MiB:4 --out gloo.yaml")
    p.add_argument("--backend", default="gloo", help="gloo (CPU) or nccl (one GPU per rank) (default gloo)")
    p.add_argument("--ranks", type=int, default=2, help="processes; pairs (0,1), (2,3), ... ping-pong at the same time (default 2)")
    p.add_argument("--pattern", default="pingpong", choices=("pingpong", "ring", "executor"),
                   help="pingpong: pairs bounce a message (one-way = round trip / 2); ring: every rank sends to the next "
                        "and receives from the previous at once, like a ring step; executor: that step run by the schedule "
                        "executor, so its per-message overhead is in alpha (default pingpong)")
    p.add_argument("--segments", type=int, default=1,
                   help="cut the message sizes into up to this many ranges, each with its own alpha and bandwidth, written "
                        "as segments picked by each message's size (as `collsim fit --segments` cuts a log) (default 1)")
    p.add_argument("--piecewise", action="store_true",
                   help="shorthand for --segments 3; with --pattern executor, the model of gloo on this machine "
                        "(docs/verify.md)")
    p.add_argument("--pair-only", action="store_true", help="only ranks 0 and 1 ping-pong; the others stay idle")
    p.add_argument("--sizes", default="1B:64MiB:4", help="message sizes: START:END[:FACTOR] or a list (default 1B:64MiB:4)")
    p.add_argument("--iters", type=int, default=20, help="round trips per size, fewer for large sizes (default 20)")
    p.add_argument("--budget", type=float, default=1.0, help="seconds of round trips per size, which caps --iters (default 1)")
    p.add_argument("--no-gamma", action="store_true", help="skip timing local reductions (gamma = 0)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds any single wait may take (default 60)")
    p.add_argument("--out", "-o", metavar="PATH", help="write the profile here (.yaml, or .json)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run, _footprint=Footprint(processes=True))


def run(args: argparse.Namespace) -> int:
    sizes = tuple(parse_size_range(args.sizes, "sizes"))
    if len(set(sizes)) < 2:
        raise CollsimError(f"sizes: {args.sizes!r} gives {len(set(sizes))} size; a fit needs at least 2, e.g. 1B:64MiB:4")
    if args.ranks < 2:
        raise CollsimError(f"ranks: {args.ranks}; a ping-pong needs at least 2")
    segments = 3 if args.piecewise and args.segments == 1 else args.segments  # range checked by app.preflight
    if args.iters < 1:
        raise CollsimError(f"iters: {args.iters}; expected >= 1")
    from verify.calibrate import CalibrateRequest, combine, pingpong_job
    from verify.launch import run_local

    req = CalibrateRequest(sizes=sizes, iters=args.iters, concurrent=not args.pair_only, gamma=not args.no_gamma,
                           time_budget_s=args.budget, pattern=args.pattern)
    cal = combine(run_local(pingpong_job, args.ranks, args.backend, args.timeout, (req,)), args.backend, segments)
    profile = cal.profile()
    if args.out:
        profile.save(args.out)
    fit = cal.fit
    if args.json:
        emit_json({"profile": profile.to_dict(), "fit": fit.to_dict(), "written": args.out})
        return 0
    if args.pattern == "executor":
        print(f"# executor shift step on {args.backend}, {args.ranks} ranks: one transfer per rank to the next, run by the "
              f"schedule executor and timed as `collsim verify` times a schedule; time per message = median over iterations "
              f"of the slowest rank's step")
    elif args.pattern == "ring":
        print(f"# ring exchange on {args.backend}, {args.ranks} ranks: each rank sends to the next and receives from the "
              f"previous at once; time per message = median step time")
    else:
        print(f"# ping-pong on {args.backend}, {args.ranks} ranks, pairs {cal.pairs}; one-way time = median round trip / 2")
    print(table(["size", "bytes", "measured(us)", "fit(us)", "residual"],
                [[format_size(n), n, t * 1e6, f * 1e6, f"{r * 100:+.1f}%"]
                 for n, t, f, r in zip(fit.sizes, fit.times_s, fit.predict(fit.sizes), fit.rel_residuals)], align="lrrrr"))
    if cal.pieces:
        print("# segments by message size (each range fitted on its own):")
        print(table(["from", "to", "alpha(us)", "bandwidth(GB/s)"],
                    [[format_size(pc.lo), "-" if pc.hi is None else format_size(pc.hi), pc.alpha_s * 1e6,
                      pc.bandwidth_Bps / 1e9] for pc in cal.pieces], align="llrr"))
    print(f"alpha     {fit.alpha_s * 1e6:.2f} us")
    print(f"bandwidth {fit.bandwidth_Bps / 1e9:.3f} GB/s  (beta {fit.beta_s_per_byte:.3g} s/B)")
    print(f"R^2       {fit.r2:.4f} on times, {fit.r2_log:.4f} on log times; largest residual {fit.max_rel_residual * 100:.1f}%")
    print(f"crossover {fit.crossover_bytes:.0f} B: below it latency dominates, above it bandwidth")
    if cal.gamma_s_per_byte:
        how = "the executor's reducing step less its plain step" if cal.reduce_step_points else "in-place float32 additions"
        print(f"gamma     {cal.gamma_s_per_byte:.3g} s/B  ({1e-9 / cal.gamma_s_per_byte:.2f} GB/s of {how})")
    if args.out:
        say_written(f"wrote {args.out}")
    else:
        print("(no --out given: profile not written)")
    return 0
