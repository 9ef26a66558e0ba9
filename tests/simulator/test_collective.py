import numpy as np
import pytest

from simulator.collective import Collective, busbw_factor, split_counts
from simulator.errors import CollsimError


def test_blocks_are_near_equal_and_cover_the_buffer():
    c = Collective("allgather", 4, 4 * 10, "int32")  # 10 elements, 4 ranks -> 3,3,2,2
    assert list(c.block_counts) == [3, 3, 2, 2]
    assert list(c.block_offsets) == [0, 3, 6, 8, 10]
    assert c.in_count == [3, 3, 2, 2]


def test_alltoall_pairs_send_and_receive_the_whole_size():
    c = Collective("alltoall", 5, 23, "int8")
    for r in range(5):
        assert sum(c.pair_count(r, d) for d in range(5)) == 23
        assert sum(c.pair_count(s, r) for s in range(5)) == 23


@pytest.mark.parametrize("kwargs,field", [
    (dict(op="allreduc", ranks=2, nbytes=4), "op"),
    (dict(op="allreduce", ranks=0, nbytes=4), "ranks"),
    (dict(op="allreduce", ranks=-3, nbytes=4), "ranks"),
    (dict(op="allreduce", ranks=2, nbytes=6, dtype="float32"), "size"),
    (dict(op="allreduce", ranks=2, nbytes=4, dtype="float128"), "dtype"),
    (dict(op="broadcast", ranks=2, nbytes=4, root=2), "root"),
    (dict(op="allreduce", ranks=2, nbytes=4, redop="avg"), "redop"),
])
def test_bad_collectives_name_the_field(kwargs, field):
    with pytest.raises(CollsimError, match=f"^{field}:"):
        Collective(**kwargs)


def test_busbw_factors_are_nccl_tests():
    assert busbw_factor("allreduce", 8) == pytest.approx(14 / 8)
    assert busbw_factor("allgather", 8) == pytest.approx(7 / 8)
    assert busbw_factor("broadcast", 8) == 1.0
    c = Collective("allreduce", 8, 10**9)
    assert c.busbw(1.0) == pytest.approx(1.75e9)


def test_split_counts_sums():
    for total in (0, 1, 7, 100):
        for parts in (1, 3, 8):
            counts = split_counts(total, parts)
            assert counts.sum() == total and counts.max() - counts.min() <= 1
            assert np.all(np.diff(counts) <= 0)
