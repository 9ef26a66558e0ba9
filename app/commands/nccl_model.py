"""`collsim nccl-model`: NCCL's own latency/bandwidth model per (algorithm, protocol), its pick, and logs compared."""

from __future__ import annotations

import argparse

from simulator.collective import REDUCING, ROOTED, TOTAL_SIZE_OPS
from simulator.errors import CollsimError
from simulator.formats.nccl_tests import ResultRow, read_log, write_log
from simulator.nccl.tuning import ARCHS, LINKS, System, choose, compare, parse_nccl_version, tune
from simulator.render import table
from simulator.units import format_size, parse_bandwidth, parse_size_range

from ..output import emit_json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "nccl-model", help="NCCL's own tuning model: time per algorithm/protocol and NCCL's pick",
        description="NCCL's own cost model (src/graph/tuning.cc): for each size, the time NCCL predicts for\n"
                    "every (algorithm, protocol) it would consider (Tree, Ring x LL, LL128, Simple; NVLS on one node and\n"
                    "NVLS-tree across nodes with Simple; PAT with Simple at one GPU per node) and the one it picks.\n"
                    "What NCCL's topology search finds (channels x bandwidth per GPU) is an input: by default\n"
                    "NVLink lanes x NCCL's per-lane figure, or PCI_BW for PCIe, capped by the NICs across nodes.\n"
                    "--compare LOG puts NCCL's pick next to an nccl-tests log, size by size.",
        epilog="examples: collsim nccl-model --gpus 8 --nodes 2 --arch hopper\n"
               "          collsim nccl-model --gpus 8 --arch ampere --op allgather --size 1KiB:1GiB:4\n"
               "          collsim nccl-model --gpus 8 --arch hopper --compare LOG --json")
    p.add_argument("--gpus", type=int, default=8, help="GPUs (ranks) per node (default 8)")
    p.add_argument("--nodes", type=int, default=1, help="nodes (default 1)")
    p.add_argument("--arch", default="hopper", help=f"GPU generation: {', '.join(ARCHS)} (default hopper)")
    p.add_argument("--link", default="nvlink", help=f"intra-node link: {', '.join(LINKS)} (default nvlink)")
    p.add_argument("--op", default="allreduce", help="allreduce, allgather, reduce_scatter, broadcast, reduce (default allreduce)")
    p.add_argument("--size", default="8:8GiB", help="sizes START:END[:FACTOR] or a list (nccl-tests meaning; default 8:8GiB)")
    p.add_argument("--bus-bw", help="channels x per-channel bandwidth of NCCL's graphs per GPU, e.g. 370GB/s "
                                    "(default: NVLink lanes x NCCL's per-lane figure, or 12GB/s for PCIe)")
    p.add_argument("--channels", type=int, help="channels of the graphs (default 16; 2 for PCIe)")
    p.add_argument("--nic-bw", default="400Gbit/s", help="bandwidth per NIC across nodes (default 400Gbit/s)")
    p.add_argument("--nics", type=int, help="NICs per node (default: one per GPU)")
    p.add_argument("--nvls", choices=("auto", "on", "off"), default="auto",
                   help="NVLink SHARP: auto = Hopper or newer on NVLink (NVLS on one node, NVLS-tree across nodes; default auto)")
    p.add_argument("--nvls-efficiency", type=float, default=1.0,
                   help="scale one-node NVLS bandwidth (1 = the v2.27 model; NCCL >= 2.28 has 0.85 Hopper, 0.74 "
                        "Blackwell; NVLS-tree always uses NCCL's)")
    p.add_argument("--nccl-version", metavar="V", default="latest",
                   help="NCCL release whose tuning.cc latency tables apply, e.g. 2.20.3 (2.19 or later; default latest)")
    p.add_argument("--amd-cpu", action="store_true", help="AMD host CPUs (NCCL's LL caps and network overhead differ)")
    p.add_argument("--compare", metavar="LOG", help="an nccl-tests log: measured time vs NCCL's pick at each size")
    p.add_argument("--placement", choices=("out", "in", "min"), default="out", help="which measured time to compare (default out)")
    p.add_argument("--write-log", metavar="FILE",
                   help="also write NCCL's predicted times as an nccl-tests table (float, out-of-place), to diff with a real log")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def system_from_args(args: argparse.Namespace) -> System:
    """The System the command line describes."""
    return System(arch=args.arch.lower(), gpus_per_node=args.gpus, nodes=args.nodes, link=args.link.lower(),
                  bus_bw_GBps=parse_bandwidth(args.bus_bw, "bus-bw") / 1e9 if args.bus_bw else None,
                  channels=args.channels, nic_bw_GBps=parse_bandwidth(args.nic_bw, "nic-bw") / 1e9,
                  nics_per_node=args.nics, nvls={"auto": None, "on": True, "off": False}[args.nvls],
                  nvls_efficiency=args.nvls_efficiency,
                  net_overhead_us=2.0 if args.amd_cpu else 1.0, amd_cpu=args.amd_cpu,
                  nccl_version=parse_nccl_version(args.nccl_version))


def predicted_rows(op: str, ranks: int, sizes: list[int], seconds) -> list[ResultRow]:
    """nccl-tests rows (float, as nccl-tests rounds sizes to whole elements per rank) for predicted times."""
    per = 4 * (ranks if op in TOTAL_SIZE_OPS else 1)
    return [ResultRow(size // per * per, size // per, "float", "sum" if op in REDUCING else "none",
                      0 if op in ROOTED else -1, float(t), None, None) for size, t in zip(sizes, seconds)]


def run(args: argparse.Namespace) -> int:
    system = system_from_args(args)
    if args.compare:
        log = read_log(args.compare)
        if log.ranks != system.ranks:
            raise CollsimError(f"compare: {args.compare} has {log.ranks} ranks but --gpus {args.gpus} x --nodes {args.nodes} "
                               f"= {system.ranks}")
        op = log.op
        result = compare(system, op, log.measurements(args.placement))
    else:
        op = args.op
    model = tune(system, op)
    settings = {"arch": system.arch, "gpus_per_node": system.gpus_per_node, "nodes": system.nodes, "ranks": system.ranks,
                "link": system.link, "graph_bw_GBps": system.graph_bw_GBps, "channels": system.n_channels,
                "nvls": system.nvls_enabled, "nvls_tree": any(a == "nvls_tree" for a, _ in model), "op": op}
    choices = [{"algorithm": a, "protocol": p, "latency_us": lat, "algbw_GBps": bw} for (a, p), (lat, bw) in model.items()]
    if args.compare:
        if args.json:
            emit_json({"system": settings, "choices": choices, "log": args.compare, **result})
            return 0
        _print_header(settings, choices)
        print(table(["size", "measured(us)", "NCCL pick", "predicted(us)", "err %", "busbw meas", "busbw pred"],
                    [[format_size(r["bytes"]), r["measured_s"] * 1e6, r["pick"], r["predicted_s"] * 1e6, r["error_pct"],
                      r["measured_busbw_GBps"], r["predicted_busbw_GBps"]] for r in result["rows"]], "lrlrrrr"))
        big = result["median_abs_pct_error_ge_64KiB"]
        print(f"median |error| of NCCL's pick: {'n/a' if big is None else f'{big:.1f}%'} for sizes >= 64KiB, "
              f"{result['median_abs_pct_error_all']:.1f}% for all sizes")
        return 0
    sizes = parse_size_range(args.size, "size")
    picks, best, times = choose(system, op, sizes)
    if args.write_log:
        write_log(args.write_log, op, system.ranks, predicted_rows(op, system.ranks, sizes, best),
                  title=f"collsim nccl-model ({system.arch}, {system.gpus_per_node} x {system.nodes})")
    names = [f"{a}/{p}" for a, p in times]
    rows = [{"bytes": s, "times_s": {n: float(times[k][i]) for n, k in zip(names, times)}, "pick": f"{picks[i][0]}/{picks[i][1]}",
             "time_s": float(best[i])} for i, s in enumerate(sizes)]
    if args.json:
        emit_json({"system": settings, "choices": choices, "rows": rows})
        return 0
    _print_header(settings, choices)
    print(table(["size"] + names + ["pick"],
                [[format_size(r["bytes"])] + [r["times_s"][n] * 1e6 for n in names] + [r["pick"]] for r in rows],
                "l" + "r" * len(names) + "l"))
    return 0


def _print_header(settings: dict, choices: list[dict]) -> None:
    print(f"# NCCL model: {settings['op']}, {settings['arch']}, {settings['gpus_per_node']} GPUs x {settings['nodes']} node(s) "
          f"= {settings['ranks']} ranks, {settings['link']}, graph {settings['graph_bw_GBps']:.1f} GB/s per GPU over "
          f"{settings['channels']} channels, NVLS {'on' if settings['nvls'] else 'off'}, NVLS-tree "
          f"{'on' if settings['nvls_tree'] else 'off'} (times in us)")
    print("# " + ", ".join(f"{c['algorithm']}/{c['protocol']}: {c['latency_us']:.1f} us + n / {c['algbw_GBps']:.1f} GB/s"
                           for c in choices))
