"""Each lesson's right and wrong answer, worked out here (by hand, from a real log, or by running the engine
directly), never read back from app/lessons.py; shared by the AppTest and the Chromium walk of the lessons."""

from __future__ import annotations

from pathlib import Path

from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.engine import EngineOptions, simulate
from simulator.formats.nccl_tests import read_log
from simulator.topology import parse_topology

LOGS = Path(__file__).resolve().parent / "data" / "nccl-tests"

# (right, wrong) by hand:
# a: reduce-scatter leaves one fully summed chunk per rank;
# b: 4 KiB on 8 ranks at 2 us / 25 GB/s: ring 14 x 2 us + 1.75 x 4096 B / 25 GB/s = 28.3 us, recursive doubling
#    3 x 2 us + 3 x 4096 B / 25 GB/s = 6.5 us;
# c: recursive doubling on 8 ranks takes log2(8) = 3 steps;
# f: rank 0 waits in grads for rank 1, which waits in loss for rank 0: a cycle;
# i: NCCL runs a 64 KiB all-reduce on one 8-GPU H100 node with LL (its lowest-latency protocol; NCCL_DEBUG=TUNING
#    on such nodes shows LL up to about 1 MiB, where NVLS/Simple takes over).
BY_HAND = {"a": (1, 4), "b": ("recursive doubling", "ring"), "c": (3, 15), "f": ("no", "yes"), "i": ("LL", "Simple")}


def busbw_at(log: str, size: int) -> float:
    """The out-of-place busbw (GB/s) a real log measured at `size`."""
    return next(r.out.busbw_GBps for r in read_log(LOGS / log).rows if r.bytes == size)


def hierarchy() -> tuple[str, str]:
    """(right, wrong) for lesson d: the engine's faster of a flat ring and hierarchical (group 4), 4 KiB on 4 x 4."""
    topo = parse_topology("cluster:nodes=4,gpus=4,net_bw=12.5GB/s")
    coll = Collective("allreduce", 16, 4096, "float32")
    ring = simulate(build_schedule(coll, "ring"), topo).time
    hier = simulate(build_schedule(coll, "hierarchical", group=4), topo).time
    return ("hierarchical", "flat ring") if hier < ring else ("flat ring", "hierarchical")


def straggler_us() -> float:
    """Lesson e: how much later a 1 MiB ring all-reduce on ring:8 ends when rank 3 starts 50 us late (engine)."""
    topo = parse_topology("ring:8")
    schedule = build_schedule(Collective("allreduce", 8, 1 << 20, "float32"), "ring")
    return (simulate(schedule, topo, EngineOptions(start_delay={3: 50e-6})).time - simulate(schedule, topo).time) * 1e6


def answers() -> dict[str, tuple]:
    """(right, wrong) for every lesson."""
    # g: a real p5 node (log 04) measured 480 GB/s at 8 GiB against 450 GB/s of NVLink per GPU: above.
    nvls = "above" if busbw_at("04_h100_p5_1node_8gpu_allreduce_awsbatch.txt", 8 << 30) > 450 else "below"
    # h: 4 B200 nodes (log 17) over one (log 07) at 8 GiB: 376 / 839 = 0.45, about half.
    ratio = (busbw_at("17_b200_4node_32gpu_allreduce_torchbench.txt", 8 << 30) /
             busbw_at("07_b200_hgx_1node_8gpu_allreduce.txt", 8 << 30))
    half = "about half" if 0.35 < ratio < 0.7 else "about the same" if ratio >= 0.7 else "about a quarter"
    return {**BY_HAND, "d": hierarchy(), "e": (round(straggler_us()), 10), "g": (nvls, {"above": "below"}.get(nvls, "above")),
            "h": (half, "about the same" if half != "about the same" else "about half")}
