"""`collsim calibrate`: ping-pong sweep and timed reductions fitted to alpha, beta, gamma; writes a link profile."""

from __future__ import annotations

import argparse

from collsim.calibrate import PATTERNS, LinkCalibrationRequest

from ..limits import add_limit_args, limits
from ..show import show


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
    p.add_argument("--pattern", default="pingpong", choices=PATTERNS,
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
    add_limit_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return show(LinkCalibrationRequest(args.backend, args.ranks, args.pattern, args.segments, args.piecewise, args.pair_only,
                                       args.sizes, args.iters, args.budget, not args.no_gamma, args.timeout, args.out,
                                       limits(args)).run(),
                args.json)
