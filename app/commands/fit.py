"""`collsim fit LOG`: fit an algorithm's alpha-beta model to an nccl-tests log, cross-validated."""

from __future__ import annotations

import argparse

from collsim.fit import PLACEMENTS, CalibrateRequest, FitRequest, Measured
from simulator.errors import CollsimError

from ..show import show


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "fit", help="fit the alpha-beta model of an algorithm to an nccl-tests log",
        description="Read an nccl-tests log as found in the wild and fit the closed form of an algorithm\n"
                    "(alpha per message, link bandwidth) by least squares in relative error; an algorithm without\n"
                    "a closed form is timed by the event engine on ideal:P instead. Cross-validation\n"
                    "fits on every other size and predicts the sizes in between (and the other way round);\n"
                    "the per-size error and the median absolute percentage error for sizes >= 64 KiB and for\n"
                    "all sizes are printed. --piecewise fits separate size ranges (NCCL's LL -> LL128 ->\n"
                    "Simple protocol regimes). --out writes the fit as a link profile file (YAML/JSON).",
        epilog="examples: collsim fit tests/data/nccl-tests/04_h100_p5_1node_8gpu_allreduce_awsbatch.txt\n"
               "          collsim fit LOG --piecewise --out h100.yaml\n"
               "          collsim fit LOG --algo best --json\n"
               "          collsim fit LOG --preset p5 --train-sizes :16MiB --out my-p5.yaml\n"
               "          collsim predict --preset my-p5.yaml:nodes=2 --size 1MiB:8GiB")
    p.add_argument("log", metavar="LOG", help="an nccl-tests output file (prefixes, NCCL INFO noise and the old format are fine)")
    p.add_argument("--op", help="the collective, when the log cannot tell (e.g. allgather vs alltoall)")
    p.add_argument("--ranks", type=int, help="rank count, when the log cannot tell (e.g. broadcast)")
    p.add_argument("--algo", default="ring",
                   help="algorithm whose closed form (or engine time) is fitted (default ring); a comma list, or 'best' "
                        "for every algorithm of the op: the lowest cross-validated error wins")
    p.add_argument("--segments", type=int, default=1, help="fit up to this many size ranges separately (default 1)")
    p.add_argument("--piecewise", action="store_true", help="shorthand for --segments 3 (LL, LL128, Simple regimes)")
    p.add_argument("--placement", choices=PLACEMENTS, default="out",
                   help="which time to fit: out-of-place (default), in-place, or the faster of the two")
    p.add_argument("--out", metavar="FILE", help="write the fit as a link profile (simulator/profile.py; YAML, or JSON for a .json "
                   "name); with --preset, the calibrated preset, a file predict and simulate take as --preset/--topology FILE[:nodes=N]")
    p.add_argument("--preset", metavar="SPEC", help="calibrate this machine preset (e.g. p5, dgx-h100:nodes=2) to the log: fit its "
                   "link efficiency per class and protocol (<= 1) and its extra latency per step (>= 0, on top of NCCL's)")
    p.add_argument("--nccl-version", metavar="V", help="with --preset: the NCCL release the log ran (e.g. 2.20.3), whose "
                   "tuning.cc latency tables set NCCL's picks and step costs; kept in the calibration (default: latest)")
    p.add_argument("--allow-gpu-mismatch", action="store_true", help="with --preset or --bounds: fit a preset whose GPU "
                   "is not the one the log names (in its device list or header), which is otherwise refused")
    p.add_argument("--train-sizes", metavar="A:B", help="fit only the sizes in [A, B] (either end may be left open, e.g. :16MiB); "
                   "the error on the other sizes is reported as a prediction")
    p.add_argument("--bounds", metavar="SPEC", help="bound the alpha-beta fit by a machine preset: bandwidth at most what its "
                   "links allow, alpha at least NCCL's latency floor, one size regime per NCCL protocol (simulator/nccl/fit_bounds.py)")
    p.add_argument("--holdout", metavar="A:B", help="hold the sizes in [A, B] out of the fit and report the error on them")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.nccl_version is not None and args.preset is None:
        raise CollsimError(f"nccl-version: {args.nccl_version!r} sets the latency tables of a preset's calibration; "
                           "expected it with --preset SPEC")
    measured = Measured.read(args.log, op=args.op, ranks=args.ranks, placement=args.placement)
    if args.preset is not None:
        if args.algo != "ring" or args.segments != 1 or args.piecewise:
            raise CollsimError("preset: --algo, --segments and --piecewise shape the alpha-beta fit; with --preset the "
                               "algorithm and protocol per size are NCCL's picks for the machine; expected neither")
        request = CalibrateRequest(measured, args.preset, nccl_version=args.nccl_version, train_sizes=args.train_sizes,
                                   holdout=args.holdout, out=args.out, allow_gpu_mismatch=args.allow_gpu_mismatch)
        return show(request.run(), args.json)
    if args.bounds is not None and (args.segments != 1 or args.piecewise):
        raise CollsimError("bounds: the regimes are NCCL's protocols on the machine; expected no --segments/--piecewise")
    segments = 3 if args.piecewise and args.segments == 1 else args.segments
    request = FitRequest(measured, algo=args.algo, segments=segments, train_sizes=args.train_sizes, holdout=args.holdout,
                         bounds=args.bounds, out=args.out, allow_gpu_mismatch=args.allow_gpu_mismatch)
    return show(request.run(), args.json)
