"""NVLS-tree allreduce (simulator/nccl/nvls_tree.py): proven on numpy buffers; switches inside nodes, trees across them."""

import nvls_tree_ref
import pytest

from simulator.algorithms.tree import dtree_parents
from simulator.collective import Collective
from simulator.engine import EngineOptions, simulate
from simulator.engine.bound import lower_bound
from simulator.errors import CollsimError
from simulator.nccl.nvls import switch_view, timing_view
from simulator.nccl.nvls_tree import nvls_tree_allreduce, nvls_tree_time, pipelined
from simulator.schedule import Schedule
from simulator.semantics import check
from simulator.topology.spec import parse_topology

RANKS = list(range(1, 34)) + [64]


def _groups(p):
    divisors = [d for d in range(1, p + 1) if p % d == 0]
    return sorted({divisors[0], divisors[len(divisors) // 2], divisors[-1], max(d for d in divisors if d <= 8)})


@pytest.mark.slow
@pytest.mark.parametrize("p", RANKS)
def test_numpy_check_every_rank_count_grouping_and_odd_sizes(p):
    sizes = (0, 1, 97, 3 * p + 1) if p <= 33 else (0, 5 * p + 3)
    for group in _groups(p):
        for nbytes in sizes:
            for chunks, window in ((1, 1), (3, 2)):
                sched = nvls_tree_allreduce(Collective("allreduce", p, nbytes, "int8"), group, chunks, window)
                result = check(sched, seed=p + nbytes)
                assert result.ok, (group, nbytes, chunks, result.message)


@pytest.mark.slow
@pytest.mark.parametrize("redop", ["sum", "prod", "max", "min"])
def test_dtypes_and_reductions(redop):
    for dtype in ("int32", "float16", "bfloat16", "float64"):
        for p, group in ((4, 2), (8, 4), (6, 3), (9, 3), (16, 8), (40, 8)):
            coll = Collective("allreduce", p, 8 * 8 * 37, dtype, redop=redop)
            result = check(nvls_tree_allreduce(coll, group, chunks=4), seed=p)
            assert result.ok, (p, group, result.message)


@pytest.mark.slow
@pytest.mark.parametrize("p, group", [(2, 1), (5, 1), (8, 8), (6, 3), (16, 8), (20, 4), (24, 8), (40, 8), (64, 8), (10, 5)])
def test_the_column_build_is_the_schedule_builder_would_infer(p, group):
    # same transfers in the same order, the same dependencies as sets, as the ScheduleBuilder version (dependencies
    # inferred from the data it touches, the pipeline's window added after) kept in tests/nvls_tree_ref.py
    # every size and pipeline shape up to 24 ranks; fewer at 40 and 64 (the reference build is slow there)
    sizes = (0, 1, 97, 3 * p + 1, 4096) if p <= 24 else (97, 4096)
    shapes = ((1, 1), (3, 2), (4, 1), (7, 3), (64, 1), (64, 64)) if p <= 24 else ((1, 1), (7, 3), (64, 1))
    for nbytes in sizes:
        for chunks, window in shapes:
            coll = Collective("allreduce", p, nbytes, "int8")
            ours, ref = nvls_tree_allreduce(coll, group, chunks, window), nvls_tree_ref.builder_nvls_tree(coll, group, chunks, window)
            assert len(ours) == len(ref) and (ours.helpers, ours.scratch_count, ours.params) == (ref.helpers, ref.scratch_count, ref.params)
            for a, b in zip(ours.transfers, ref.transfers):
                assert (a.id, a.src, a.dst, a.pieces, a.reduce, a.step, set(a.deps)) == \
                       (b.id, b.src, b.dst, b.pieces, b.reduce, b.step, set(b.deps)), (p, group, nbytes, chunks, window)


def test_the_check_catches_a_missing_multicast():
    # the check can fail: drop the last switch -> GPU copy and some GPU ends without the sum
    sched = nvls_tree_allreduce(Collective("allreduce", 16, 16 * 64, "int8"), 8)
    last = max(t.id for t in sched.transfers if t.src >= 16 and t.dst < 16)
    broken = Schedule(sched.collective, sched.algorithm, [t for t in sched.transfers if t.id != last], sched.params,
                      sched.scratch_count, sched.helpers)
    assert not check(broken, seed=1).ok


def test_switches_carry_the_node_and_rails_carry_the_trees():
    # 5 nodes of 8: a GPU never talks to a GPU of its own node (its switch does that), across nodes only GPU h
    # talks to GPU h of another node (its own rail), node k's switch (rank 40 + k) only to node k's GPUs
    p, group, n = 40, 8, 8 * 1024
    nodes = p // group
    sched = nvls_tree_allreduce(Collective("allreduce", p, n, "int8"), group)
    assert sched.helpers == nodes and sched.participants == p + nodes
    for t in sched.transfers:
        if t.src < p and t.dst < p:
            assert t.src // group != t.dst // group and t.src % group == t.dst % group
        elif t.src != t.dst:
            gpu, sw = (t.src, t.dst) if t.src < p else (t.dst, t.src)
            assert sw - p == gpu // group
    # per GPU and its switch, as on one NVLS node: up n (loads) + n/g (store), down n/g (sum) + (g-1) n/g (multicast)
    for r in (0, 13, 39):
        up = sum(sched.nbytes(t) for t in sched.transfers if t.src == r and t.dst >= p)
        down = sum(sched.nbytes(t) for t in sched.transfers if t.src >= p and t.dst == r)
        assert (up, down) == (n + n // group, n // group + (group - 1) * n // group)


def test_each_shard_half_follows_its_tree():
    # across nodes, GPU h of node k sends its half-shard on tree t to GPU h of node parent_t(k) (reduce) and gets
    # it back (copy): by hand from NCCL's double binary tree over 5 nodes
    p, group, n = 20, 4, 4 * 2 * 16
    sched = nvls_tree_allreduce(Collective("allreduce", p, n, "int8"), group)
    first, second = dtree_parents(5)
    assert first == [-1, 2, 4, 2, 0] and second == [1, -1, 3, 0, 3]  # ncclGetBtree by hand; tree 2 shifted by one
    half = n // group // 2
    for h in range(group):
        for t, parent in enumerate((first, second)):
            off = h * n // group + t * half
            for k in range(5):
                ups = [x for x in sched.transfers if x.src == k * group + h and x.dst < p and x.reduce
                       and x.pieces[0].src_off == off]
                downs = [x for x in sched.transfers if x.dst == k * group + h and x.src < p and not x.reduce
                         and x.pieces[0].dst_off == off]
                want = [] if parent[k] < 0 else [parent[k] * group + h]
                assert [x.dst for x in ups] == want and [x.src for x in downs] == want


def test_one_node_never_leaves_it_and_one_gpu_per_node_is_a_tree():
    one_node = nvls_tree_allreduce(Collective("allreduce", 8, 64, "int8"), 8)
    assert all(t.src >= 8 or t.dst >= 8 for t in one_node.transfers)
    no_switch = nvls_tree_allreduce(Collective("allreduce", 6, 64, "int8"), 1)
    assert all(t.src < 6 and t.dst < 6 for t in no_switch.transfers)


def test_bad_input():
    with pytest.raises(CollsimError, match="group"):
        nvls_tree_allreduce(Collective("allreduce", 6, 64, "int8"), 4)
    with pytest.raises(CollsimError, match="group"):
        nvls_tree_allreduce(Collective("allreduce", 6, 64, "int8"), True)
    with pytest.raises(CollsimError, match="op"):
        nvls_tree_allreduce(Collective("allgather", 6, 64, "int8"), 3)
    with pytest.raises(CollsimError, match="chunks"):
        nvls_tree_allreduce(Collective("allreduce", 6, 64, "int8"), 3, chunks=0)
    with pytest.raises(CollsimError, match="window"):
        nvls_tree_allreduce(Collective("allreduce", 6, 64, "int8"), 3, window=65)


@pytest.mark.parametrize("group", [2, 3, 5, 8])
def test_closed_form_equals_engine_on_two_nodes_of_equal_links(group):
    # every link 1.5 us / 100 GB/s (NVLink, GPU-NIC, NIC-network switch), unlimited ports; small sizes take the
    # latency branch of the max, large ones the bandwidth branch
    a, bw = 1.5e-6, 100e9
    topo = parse_topology(f"cluster:nodes=2,gpus={group}").with_links(latency=a, bandwidth=bw)
    view = switch_view(topo, 2 * group, group=group)
    for n in (2 * group * 1000, 2 * group * (1 << 20)):
        sched = nvls_tree_allreduce(Collective("allreduce", 2 * group, n, "int8"), group)
        engine = simulate(timing_view(sched), view, EngineOptions(ports=0)).time
        assert engine == pytest.approx(float(nvls_tree_time(group, n, a, bw)), rel=1e-9)
    if group == 8:  # by hand, n = 16 MiB, m = 1 MiB: 9 + 167.77216 + 31.45728 + max(103.37184, 160.2864) us
        assert engine == pytest.approx(368.51584e-6, rel=1e-9)


def test_every_node_switch_is_a_device_of_the_view():
    # dgx-h100:nodes=4: node k's NVSwitch is device 32 + k, one NVLink hop from node k's GPUs, none from others
    view = switch_view(parse_topology("dgx-h100:nodes=4"), 32, group=8)
    assert view.path_cost(9, 33) == view.path_cost(0, 32) and view.path_cost(0, 32)[1] == pytest.approx(450e9)
    assert view.path_cost(0, 33)[0] > view.path_cost(0, 32)[0]
    with pytest.raises(CollsimError, match="group"):
        nvls_tree_time(1, 64, 1e-6, 1e9)


@pytest.mark.parametrize("nodes", [2, 3, 5, 8])
def test_each_rail_carries_between_one_and_two_shards(nodes):
    # per GPU across nodes: one half-shard (n/2g) up and down each tree it is not the root of, one per child
    # down and up: n/g on two nodes (each node a leaf of one tree, the root of the other), at most 2 n/g
    group, n = 4, 4 * 2 * 64
    p = nodes * group
    sched = nvls_tree_allreduce(Collective("allreduce", p, n, "int8"), group)
    for r in range(p):
        out = sum(sched.nbytes(t) for t in sched.transfers if t.src == r and t.dst < p)
        into = sum(sched.nbytes(t) for t in sched.transfers if t.dst == r and t.src < p)
        assert out == into and n // group <= out <= 2 * n // group
        if nodes == 2:
            assert out == n // group


def test_chunks_pipeline_the_stages():
    # p5, 2 nodes of 8, 1 GiB: in chunks the in-node reduce, the tree and the multicast overlap: well under the
    # unchunked time, never under what one GPU's links must carry: (1 + 1/8) n up its NVLink at nvlsEfficiency
    # 0.85 x 450 GB/s, n/8 through its 50 GB/s rail
    view = switch_view(parse_topology("p5:nodes=2"), 16, 0.85, group=8)
    n = 1 << 30

    def run(chunks):
        sched = nvls_tree_allreduce(Collective("allreduce", 16, n, "float32"), 8, chunks=chunks)
        return simulate(timing_view(sched), view, EngineOptions(ports=0)).time

    one, many = run(1), run(16)
    assert max(1.125 * n / (0.85 * 450e9), n / 8 / 50e9) < many < 0.6 * one


@pytest.mark.parametrize("nodes, few, many", [(4, 8, 64), (8, 16, 32)])
def test_more_pieces_follow_the_pipeline_law(nodes, few, many):
    # dgx-h100, 16 GiB: the busiest link is a rail (every GPU heads a shard; a node inside one tree and a leaf of the
    # other moves 2 n / g through its NIC each way): 2 x 16 GiB / 8 / 50 GB/s = 85.899 ms by hand, on any node count
    # from 4; T(few) carried to `many` pieces by the law equals the engine's run with `many` pieces within 0.6%
    p, n = 8 * nodes, 16 << 30
    view = switch_view(parse_topology(f"dgx-h100:nodes={nodes}"), p, 0.85, group=8).with_links(latency=0.0)
    options = EngineOptions(ports=0)

    def run(chunks):
        sched = timing_view(nvls_tree_allreduce(Collective("allreduce", p, n, "float32"), 8, chunks=chunks))
        return simulate(sched, view, options).time, lower_bound(sched, view, options)

    (t_few, steady), (t_many, steady_many) = run(few), run(many)
    assert steady == steady_many == pytest.approx(2 * n / 8 / 50e9, rel=1e-9)
    assert pipelined(t_few, steady, few, many) == pytest.approx(t_many, rel=0.006)
    assert t_many < t_few  # the law is not the identity here


def test_the_pipeline_law_by_hand():
    # T(k) = A + B / k: A = 10, T(4) = 14 -> B = 16 -> T(16) = 11; never below A; never more pieces than it ran
    assert pipelined(14.0, 10.0, 4, 16) == pytest.approx(11.0)
    assert pipelined(14.0, 10.0, 16, 4) == 14.0 and pipelined(9.0, 10.0, 4, 16) == 9.0
