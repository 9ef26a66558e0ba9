"""Channels and rails: every channelled schedule is proven on numpy buffers; rail-aware orders use every NIC."""

import math

import pytest

from simulator.algorithms import build_schedule
from simulator.algorithms.channels import rail_orders, split_seg
from simulator.collective import Collective
from simulator.engine import EngineOptions, simulate
from simulator.semantics import check
from simulator.topology import ideal
from simulator.topology.spec import parse_topology

RANKS = list(range(1, 34)) + [64]


def _ok(op, name, p, nbytes, **params):
    result = check(build_schedule(Collective(op, p, nbytes, "int8"), name, **params), seed=p * 31 + nbytes)
    assert result.ok, f"{op}/{name} p={p} n={nbytes} {params}: {result.message}"


@pytest.mark.slow
@pytest.mark.parametrize("op", ["allreduce", "allgather", "reduce_scatter"])
def test_nccl_ring_semantics_every_p(op):
    for p in RANKS:
        for channels, node in ((1, None), (3, None), (8, 8), (4, 3)):
            for nbytes in ((0, 5, 7 * p + 3) if p <= 33 else (11 * p + 1,)):
                _ok(op, "nccl_ring", p, nbytes, channels=channels, node=node)


@pytest.mark.slow
def test_rails_semantics_every_p():
    for p in RANKS:
        groups = sorted({g for g in (1, 2, 4, 8, p) if p % g == 0})
        for group in groups:
            for pipeline in (1, 3):
                for nbytes in ((0, 9, 13 * p + 5) if p <= 33 else (17 * p + 3,)):
                    _ok("allreduce", "rails", p, nbytes, group=group, pipeline=pipeline)


def test_rail_orders_are_permutations_and_cross_through_every_rank():
    for p, node, channels in ((16, 8, 8), (32, 8, 16), (12, 4, 4), (10, 4, 3)):
        orders = rail_orders(p, node, channels)
        assert all(sorted(o) == list(range(p)) for o in orders)
    # 2 nodes x 8 GPUs, 8 channels: node 0 -> node 1 leaves through 8 different GPUs into 8 different GPUs
    orders = rail_orders(16, 8, 8)
    edges = [(o[i], o[(i + 1) % 16]) for o in orders for i in range(16)]
    out = [a for a, b in edges if a < 8 <= b]
    into = [b for a, b in edges if a < 8 <= b]
    assert sorted(out) == list(range(8)) and sorted(into) == list(range(8, 16))
    assert orders[1][:8] == [1, 2, 3, 4, 5, 6, 7, 0]


def test_split_seg_keeps_empty_pieces():
    assert split_seg((10, 5), 3) == [(10, 2), (12, 2), (14, 1)]
    assert split_seg((4, 1), 3) == [(4, 1), (5, 0), (5, 0)]


def test_one_node_channels_time_by_hand():
    # one port per rank, one node: C channels of n/(pC) each, 2(p-1)C messages per rank back to back
    p, n, alpha, bw = 4, 4 * 4 * 6 * 1000, 1e-6, 1e9
    for channels in (1, 2, 3):
        sched = build_schedule(Collective("allreduce", p, n, "float32"), "nccl_ring", channels=channels)
        want = 2 * (p - 1) * channels * (alpha + n / (p * channels) / bw)
        assert math.isclose(simulate(sched, ideal(p, alpha, bw)).time, want, rel_tol=1e-12)


def test_channels_use_every_nic_between_nodes():
    # 2 nodes x 4 GPUs, NVLink-like inside, 10 GB/s NICs: one ring squeezes the inter-node traffic through one
    # NIC each way; four channels through four. Bytes over a NIC: 2 (p-1)/p n / channels.
    topo = parse_topology("cluster:nodes=2,gpus=4,intra_bw=1000GB/s,net_bw=10GB/s,lat=0")
    n = 8 * 4 * 1 << 20
    times = {}
    for channels in (1, 4):
        sched = build_schedule(Collective("allreduce", 8, n, "float32"), "nccl_ring", channels=channels, node=4)
        times[channels] = simulate(sched, topo, EngineOptions(ports=0)).time
    nic_bound = 2 * 7 / 8 * n / 10e9
    assert times[1] == pytest.approx(nic_bound, rel=0.02)
    assert times[4] == pytest.approx(nic_bound / 4, rel=0.05)


def test_rails_pipeline_overlaps_the_phases():
    # 2 nodes x 4 GPUs; inside 40 GB/s, NIC 10 GB/s per GPU. Per GPU: 2 (G-1)/G n over its switch link
    # (RS + AG) and n/G each way over its NIC. Unpipelined the phases add; pipelined the slower one sets the pace.
    topo = parse_topology("cluster:nodes=2,gpus=4,intra_bw=40GB/s,net_bw=10GB/s,lat=0")
    n = 64 << 20
    intra, inter = 2 * 3 / 4 * n / 40e9, n / 4 / 10e9
    one = simulate(build_schedule(Collective("allreduce", 8, n, "float32"), "rails", group=4), topo,
                   EngineOptions(ports=0)).time
    deep = simulate(build_schedule(Collective("allreduce", 8, n, "float32"), "rails", group=4, pipeline=32), topo,
                    EngineOptions(ports=0)).time
    assert one == pytest.approx(intra + inter, rel=0.02)
    assert max(intra, inter) <= deep <= 1.15 * max(intra, inter)


def _rails_by_builder(coll, group, pipeline):
    """rails as it was built before its column form: every chunk through one ScheduleBuilder, then transfer i of chunk
    j+1 also waits for transfer i of chunk j (same sender and receiver)."""
    from simulator.algorithms.channels import _rails_chunk
    from simulator.algorithms.hierarchical import resolve_group
    from simulator.algorithms.phases import block_segs
    from simulator.collective import offsets_of, split_counts
    from simulator.schedule import ScheduleBuilder, new_transfer

    g = resolve_group(coll.ranks, group)
    b = ScheduleBuilder(coll, "rails", {"group": g, "pipeline": pipeline})
    chunks = [_rails_chunk(b, coll.ranks, g, seg) for seg in block_segs(offsets_of(split_counts(coll.count, pipeline)))]
    out = list(b.build().transfers)
    for prev, cur in zip(chunks, chunks[1:]):
        for a, t_id in zip(prev, cur):
            t = out[t_id]
            if (t.src, t.dst) == (out[a].src, out[a].dst):
                out[t_id] = new_transfer(t.id, t.src, t.dst, t.pieces, t.reduce, tuple(sorted(set(t.deps) | {a})), t.step)
    return out


@pytest.mark.parametrize("p, group", [(2, 1), (4, 2), (6, 3), (8, 4), (16, 8), (12, 4), (9, 3)])
def test_rails_columns_are_the_builders_transfer_for_transfer(p, group):
    for nbytes in (0, 5, 97, 8 * p * 32 + 3, 1 << 14):
        for pipeline in (1, 2, 3, 32):
            coll = Collective("allreduce", p, nbytes, "int8")
            ours, ref = build_schedule(coll, "rails", group=group, pipeline=pipeline).transfers, _rails_by_builder(coll, group, pipeline)
            assert len(ours) == len(ref), (p, group, nbytes, pipeline)
            for a, b in zip(ours, ref):
                assert (a.id, a.src, a.dst, a.pieces, a.reduce, a.step, set(a.deps)) == \
                       (b.id, b.src, b.dst, b.pieces, b.reduce, b.step, set(b.deps)), (p, group, nbytes, pipeline)
