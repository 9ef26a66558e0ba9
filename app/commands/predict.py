"""`collsim predict`: what nccl-tests would print on a preset machine (NCCL's picks, timed by the engine)."""

from __future__ import annotations

import argparse

from simulator.collective import REDUCING, TOTAL_SIZE_OPS, normalize_op
from simulator.errors import CollsimError
from simulator.fileio import atomic_write
from simulator.formats.nccl_tests import ResultRow, format_log, nccl_type_name, write_log
from simulator.nccl.machine import knows, resolve
from simulator.nccl.placement import default_ranks, parse_ranks_per_node
from simulator.nccl.predict import (
    DISCARDED,
    MAX_CHANNELS,
    OPS,
    check_channels,
    parse_algo,
    predict,
)
from simulator.nccl.symmetry import check_gpus
from simulator.nccl.tuning import PROTOCOLS, parse_nccl_version, release_name
from simulator.topology.presets import MACHINE_PRESETS
from simulator.topology.spec import parse_topology, preset_gpus
from simulator.units import format_size, parse_size_range

from ..output import emit_json, table


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
    p.add_argument("--size", default="1MiB:8GiB", help="sizes START:END[:FACTOR] or a list (nccl-tests meaning; default 1MiB:8GiB)")
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


def _channels(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise CollsimError(f"channels: {text!r} is not a channel count; expected an integer from 1 to {MAX_CHANNELS}") from None
    return check_channels(value)


def _proto(text: str) -> str | None:
    if text == "auto":
        return None
    match = {p.lower(): p for p in PROTOCOLS}.get(str(text).lower())
    if match is None:
        raise CollsimError(f"proto: {text!r} is not a protocol; expected auto, {', '.join(PROTOCOLS)}")
    return match


def run(args: argparse.Namespace) -> int:
    op = normalize_op(args.op)
    if op not in OPS:
        raise CollsimError(f"op: predict covers {', '.join(OPS)}; not {op}")
    proto, algo, channels = _proto(args.proto), parse_algo(args.algo), _channels(args.channels)
    version = parse_nccl_version(args.nccl_version)
    gpus = preset_gpus(args.preset)
    if gpus is not None:  # before building it
        check_gpus(gpus, f"--preset {args.preset}")
    topology = parse_topology(args.preset)
    per_node = parse_ranks_per_node(args.ranks_per_node)
    ranks = args.ranks or default_ranks(topology, per_node)
    # NCCL's machine, resolved once (a topology it does not know: predict says so after its own checks)
    machine = resolve(topology, version) if knows(topology) or per_node is not None else topology
    if per_node is not None:
        machine.system(ranks, per_node)  # what is wrong with K, before the rank limit
    sizes = parse_size_range(args.size, "size", multiple=4)
    rows = predict(machine, op, sizes, ranks=ranks, proto=proto, ranks_per_node=per_node, algo=algo, channels=channels)
    per = 4 * (ranks if op in TOTAL_SIZE_OPS else 1)  # nccl-tests' count: elements per rank
    results = [ResultRow(r.bytes, r.bytes // per, nccl_type_name("float32"), "sum" if op in REDUCING else "none", -1, r.time_s,
                         None, None) for r in rows]
    forced = [(flag, value) for flag, value in (("--ranks-per-node", per_node), ("--algo", args.algo if algo else None),
                                                ("--proto", proto), ("--channels", channels),
                                                ("--nccl-version", release_name(version)))
              if value is not None]
    title = f"collsim predict {args.preset}" + "".join(f" {flag} {value}" for flag, value in forced)
    if args.nccl_log:
        write_log(args.nccl_log, op, ranks, results, title=title)
    if args.csv:
        atomic_write(args.csv, tuner_csv(op, ranks, rows, machine.system(ranks, per_node)[0].nodes))
    if args.json:
        emit_json({"preset": args.preset, "op": op, "ranks": ranks, "ranks_per_node": per_node, "algo": algo,
                   "proto": proto, "channels": channels, "nccl_version": release_name(machine.nccl_version),
                   "rows": [{"bytes": r.bytes, "time_s": r.time_s, "engine_s": r.engine_s, "base_s": r.base_s,
                             "nccl_algorithm": r.nccl_algo, "protocol": r.proto, "schedule": r.algorithm,
                             "channels": r.channels, "reduced": r.reduced or None} for r in rows]})
        return 0
    print(format_log(op, ranks, results, title=title), end="")
    print("# picks (NCCL's tuning model" + (", forced: " + " ".join(f"{f} {v}" for f, v in forced) if forced else "")
          + ") and the schedule the engine ran:")
    print(table(["size", "NCCL algo", "proto", "channels", "schedule"],
                [[format_size(r.bytes), r.nccl_algo, r.proto, r.channels, r.algorithm] for r in rows], "llrrl"))
    for r in rows:
        if r.reduced:
            print(f"# {format_size(r.bytes)}: scaled from fewer nodes (simulator/nccl/symmetry.py): {r.reduced}")
    if any(r.algorithm == DISCARDED for r in rows):
        print("# 0 B: NCCL discards a collective of count 0 (src/enqueue.cc, taskAppend) and runs nothing: 0 s")
    for what, path in (("nccl-tests log", args.nccl_log), ("NCCL tuner CSV", args.csv)):
        if path:
            print(f"wrote {what}: {path}")
    return 0


TUNER_NAMES = {"allreduce": "allreduce", "allgather": "allgather", "reduce_scatter": "reducescatter"}
TUNER_ALGOS = {"nccl_ring": "ring", "nccl_tree": "tree", "nvls": "nvls", "nvls_tree": "nvls_tree"}  # plugin.c names
MAX_TUNER_BYTES = 4294967295  # the example file's open end


def tuner_csv(op: str, ranks: int, rows, nodes: int) -> str:
    """The picks as rows of NCCL's example tuner plugin: collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks.

    Sizes with the same pick are merged; a range runs from just above the previous size to this size, the
    last one to the end. The algorithm is the family the engine timed (nccl_tree -> NCCL's tree).
    """
    lines = ["# collsim predict: NCCL tuner-plugin CSV (ext-tuner/example/nccl_tuner.conf)",
             "# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks"]
    ranges: list[list] = []
    for r in rows:
        if r.algorithm == DISCARDED:  # nothing runs at count 0: no pick to give the plugin
            continue
        pick = (TUNER_ALGOS.get(r.algorithm, r.algorithm), r.proto.lower(), r.channels)  # pat: NCCL's own name
        if ranges and ranges[-1][2] == pick:
            ranges[-1][1] = r.bytes
        else:
            ranges.append([ranges[-1][1] + 1 if ranges else 0, r.bytes, pick])
    if ranges:
        ranges[-1][1] = max(ranges[-1][1], MAX_TUNER_BYTES)
    for low, high, (algo, proto, channels) in ranges:
        lines.append(f"{TUNER_NAMES[op]},{low},{high},{algo},{proto},{channels},{nodes},{ranks}")
    return "\n".join(lines) + "\n"
