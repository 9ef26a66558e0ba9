"""`collsim nccl-model`: NCCL's own latency/bandwidth model per (algorithm, protocol), its pick, and logs compared."""

from __future__ import annotations

import argparse

from collsim.nccl_model import NVLS_SETTINGS, NcclModelRequest
from simulator.nccl.tuning import ARCHS, LINKS

from ..show import show


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
    p.add_argument("--nvls", choices=tuple(NVLS_SETTINGS), default="auto",
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


def run(args: argparse.Namespace) -> int:
    return show(NcclModelRequest(args.gpus, args.nodes, args.arch, args.link, args.op, args.size, args.bus_bw, args.channels,
                                 args.nic_bw, args.nics, args.nvls, args.nvls_efficiency, args.nccl_version, args.amd_cpu,
                                 args.compare, args.placement, args.write_log).run(), args.json)
