"""CollNet (IB SHARP) allreduce (simulator/nccl/collnet.py): proven on numpy buffers; the switch carries one shard per GPU."""

import pytest

from simulator.collective import Collective
from simulator.errors import CollsimError
from simulator.nccl.collnet import node_shards
from simulator.schedule import Piece, Schedule, ScheduleBuilder, region
from simulator.semantics import check


def _inside_nodes(b: ScheduleBuilder, nodes: int, group: int, shards, gather: bool) -> None:
    """Direct reduce-scatter (GPU g of a node ends with shard g summed over the node) or direct allgather, per node."""
    for k in range(nodes):
        for g, (off, n) in enumerate(shards):
            for h in range(group):
                if h == g:
                    continue
                if gather:
                    b.send(k * group + g, k * group + h, region("out", off, n), step=4)
                else:
                    b.reduce(k * group + h, k * group + g, "out", off, n, step=0)


def _through_switch(b: ScheduleBuilder, nodes: int, group: int, shards, count: int, sw: int) -> None:
    """GPU g of every node sends shard g to the switch (slot per node), which sums the slots and returns the sum."""
    for g, (off, n) in enumerate(shards):
        for k in range(nodes):
            b.send(k * group + g, sw, Piece("out", off, "scratch", k * count + off, n), step=1)
        for k in range(1, nodes):
            b.send(sw, sw, Piece("scratch", k * count + off, "scratch", off, n), reduce=True, step=2)
        for k in range(nodes):
            b.send(sw, k * group + g, Piece("scratch", off, "out", off, n), step=3)


def collnet_allreduce(coll: Collective, group: int) -> Schedule:
    """CollNet Direct allreduce of `coll` over nodes of `group` GPUs, the network switch as helper rank p."""
    shards = node_shards(coll, group, "CollNet")
    p, count = coll.ranks, coll.count
    nodes = p // group
    b = ScheduleBuilder(coll, "collnet", {"group": group})
    if p > 1 and count > 0:
        b.use_scratch(nodes * count)  # slot k: node k's partial sum of a shard
        _inside_nodes(b, nodes, group, shards, gather=False)
        if nodes > 1:
            _through_switch(b, nodes, group, shards, count, sw=p)
        _inside_nodes(b, nodes, group, shards, gather=True)
    schedule = b.build()
    schedule.helpers = 1
    return schedule

RANKS = list(range(1, 34)) + [64]


def _groups(p):
    divisors = [d for d in range(1, p + 1) if p % d == 0]
    return sorted({divisors[0], divisors[len(divisors) // 2], divisors[-1]})


@pytest.mark.parametrize("p", RANKS)
def test_numpy_check_every_rank_count_group_and_odd_sizes(p):
    sizes = (0, 1, 97, 3 * p + 1) if p <= 33 else (0, 5 * p + 3)
    for group in _groups(p):
        for nbytes in sizes:
            result = check(collnet_allreduce(Collective("allreduce", p, nbytes, "int8"), group), seed=p + nbytes)
            assert result.ok, result.message


@pytest.mark.parametrize("redop", ["sum", "prod", "max", "min"])
def test_dtypes_and_reductions(redop):
    for dtype in ("int32", "float16", "float64"):
        for p, group in ((4, 2), (8, 4), (6, 3), (9, 3)):
            result = check(collnet_allreduce(Collective("allreduce", p, 4 * 8 * 37, dtype, redop=redop), group), seed=p)
            assert result.ok, result.message


def test_each_gpu_sends_one_shard_to_the_switch():
    # 4 nodes of 8: GPU g hands n/8 to the switch and gets n/8 back, whatever the node count
    p, group, n = 32, 8, 8 * 1024
    sched = collnet_allreduce(Collective("allreduce", p, n, "int8"), group)
    for r in (0, 13, 31):
        assert sum(sched.nbytes(t) for t in sched.transfers if t.src == r and t.dst == p) == n // group
        assert sum(sched.nbytes(t) for t in sched.transfers if t.src == p and t.dst == r) == n // group
    # no GPU talks to a GPU of another node
    assert all(t.src // group == t.dst // group for t in sched.transfers if t.src < p and t.dst < p)


def test_bad_group():
    with pytest.raises(CollsimError, match="group"):
        collnet_allreduce(Collective("allreduce", 6, 64, "int8"), 4)
    with pytest.raises(CollsimError, match="op"):
        collnet_allreduce(Collective("broadcast", 6, 64, "int8"), 3)
