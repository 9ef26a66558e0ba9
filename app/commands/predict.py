"""`collsim predict`: what nccl-tests would print on a preset machine (NCCL's picks, timed by the engine)."""

from __future__ import annotations

import argparse

from collsim.predict import DEFAULT_SIZES, PredictRequest
from simulator.nccl.predict import MAX_CHANNELS, OPS
from simulator.nccl.tuning import PROTOCOLS
from simulator.topology.presets import MACHINE_PRESETS

from ..show import show


def add_parser(sub: argparse._SubParsersAction) -> None:
    machines = ", ".join(MACHINE_PRESETS)
    p = sub.add_parser(
        "predict", help="what nccl-tests would print on a preset machine (NCCL's picks, timed by the engine)",
        description="For each size, pick the algorithm, protocol and channels as NCCL's tuning model does for the preset "
                    "machine, build that schedule (rings in rail-aware orders over NCCL's channels, or the pipelined "
                    "per-rail tree across nodes, or NVLS with the NVSwitch reducing on one Hopper or Blackwell node, or "
                    "NVLS-tree across such nodes, or PAT at one rank per node), "
                    "time it with the engine (NCCL's protocol latencies and efficiencies, its NVLink figure for rings, "
                    "the network plugin's reported latency, max-min sharing on every link) and print an nccl-tests "
                    "table. Accuracy against real logs: docs/accuracy.md.",
        epilog="examples:\n"
               "  collsim predict --preset p5:nodes=2 --op allreduce --size 1MiB:8GiB\n"
               "  collsim predict --preset hgx-b200 --op allgather --size 64KiB:1GiB:4 --proto Simple\n"
               "  collsim predict --preset dgx-h100:nodes=2 --nccl-log h100x2.txt --json\n"
               "  collsim predict --preset dgx-h100:nodes=8 --ranks-per-node 1 --op allgather --size 64KiB:64MiB\n"
               "  collsim predict --preset p5:nodes=2 --algo Ring --channels 8 --size 1MiB:1GiB\n"
               f"machine presets: {machines}")
    p.add_argument("--preset", required=True, help="a machine preset, NAME or NAME:nodes=N[,net=NET] "
                   "(rtx4090-pcie also takes shm=RATE, its SHM load rate per GPU)")
    p.add_argument("--op", default="allreduce", help=f"{', '.join(OPS)} (default allreduce)")
    p.add_argument("--size", default=DEFAULT_SIZES,
                   help=f"sizes START:END[:FACTOR] or a list (nccl-tests meaning; default {DEFAULT_SIZES})")
    p.add_argument("--ranks", type=int, help="ranks (default: every GPU of the preset, or K per node with --ranks-per-node)")
    p.add_argument("--ranks-per-node", metavar="K", help="K ranks on each node, rank r on GPU r %% K of node r // K, each "
                   "with its own NIC (default: every GPU of a node); 1 is NCCL's PAT case for allgather and reduce-scatter")
    p.add_argument("--proto", default="auto", help=f"protocol: auto (NCCL's pick per size) or one of {', '.join(PROTOCOLS)}")
    p.add_argument("--algo", default="auto", help="algorithm: auto (NCCL's pick per size) or one of Ring, Tree, NVLS, "
                   "NVLSTree, PAT, forced as NCCL_ALGO forces it (NCCL's protocol for it unless --proto)")
    p.add_argument("--channels", metavar="N", help="ring and tree channels per call, as NCCL_MIN_NCHANNELS = "
                   f"NCCL_MAX_NCHANNELS = N set them, 1..{MAX_CHANNELS} (default: NCCL's count per size; NVLS, "
                   "NVLS-tree and PAT keep NCCL's own; NCCL's picks stay those of its default channels)")
    p.add_argument("--nccl-version", metavar="V", help="NCCL release whose tuning.cc latency tables set the picks and "
                   "step costs, e.g. 2.20.3 (2.19 or later, or latest: NCCL master; default: a calibration file's release, "
                   "else latest; bandwidth formulas stay master's)")
    p.add_argument("--nccl-log", metavar="FILE", help="also write the table to FILE (nccl-tests format, out-of-place)")
    p.add_argument("--csv", metavar="FILE", help="also write the picks as an NCCL tuner-plugin CSV (NVIDIA/nccl "
                   "ext-tuner/example/nccl_tuner.conf format), to try them on real GPUs")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    request = PredictRequest(preset=args.preset, op=args.op, sizes=args.size, ranks=args.ranks,
                             ranks_per_node=args.ranks_per_node, proto=args.proto, algo=args.algo, channels=args.channels,
                             nccl_version=args.nccl_version, nccl_log=args.nccl_log, csv=args.csv)
    return show(request.run(), args.json)
