"""CollNet (IB SHARP) allreduce (simulator/nccl/collnet.py): proven on numpy buffers; the switch carries one shard per GPU."""

import pytest

from simulator.collective import Collective
from simulator.errors import CollsimError
from simulator.nccl.collnet import collnet_allreduce
from simulator.semantics import check

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
