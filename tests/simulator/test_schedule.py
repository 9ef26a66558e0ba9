"""The IR and its validator: dependencies are inferred from data, and ill-formed schedules are refused."""

import dataclasses

import pytest

from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.errors import CollsimError
from simulator.schedule import Schedule, ScheduleBuilder, Transfer, region
from simulator.semantics import check


def _ring(p=4, n=64):
    return build_schedule(Collective("allreduce", p, n, "int32"), "ring")


def test_builder_infers_read_after_write():
    coll = Collective("broadcast", 3, 12, "int32")
    b = ScheduleBuilder(coll, "chain")
    first = b.copy(0, 1, "out", 0, 3)
    second = b.copy(1, 2, "out", 0, 3)
    s = b.build()
    assert s.transfers[first].deps == ()
    assert s.transfers[second].deps == (first,)
    assert check(s).ok


def test_builder_infers_write_after_read():
    coll = Collective("allreduce", 2, 8, "int32")
    b = ScheduleBuilder(coll, "x")
    send = b.copy(0, 1, "out", 0, 2)           # rank 0 reads out[0:2]
    overwrite = b.copy(1, 0, "out", 0, 2)      # ... which rank 1 then overwrites on rank 0
    assert overwrite in [t.id for t in b.build().transfers] and send in b.build().transfers[overwrite].deps


def test_reductions_into_one_place_do_not_wait_for_each_other():
    coll = Collective("reduce", 4, 16, "int32")
    b = ScheduleBuilder(coll, "flat")
    ids = [b.reduce(r, 0, "out", 0, 4) for r in (1, 2, 3)]
    s = b.build()
    assert all(s.transfers[i].deps == () for i in ids)
    assert check(s).ok


def test_transfer_counts_of_ring_allreduce():
    s = _ring(p=6, n=6 * 4 * 10)
    assert list(s.sends_per_rank()) == [2 * 5] * 6
    assert set(s.bytes_sent_per_rank()) == {2 * 5 * 40}


def test_validator_refuses_unknown_rank():
    s = _ring()
    t = s.transfers[0]
    s.transfers[0] = dataclasses.replace(t, dst=9)
    with pytest.raises(CollsimError, match="receiver rank 9"):
        s.validate()


def test_validator_refuses_cycle():
    s = _ring()
    t0 = s.transfers[0]
    child = next(t for t in s.transfers if t0.id in t.deps)
    s.transfers[0] = dataclasses.replace(t0, deps=(child.id,))
    with pytest.raises(CollsimError, match="cycle"):
        s.validate()


def test_validator_refuses_sending_data_not_yet_held():
    coll = Collective("broadcast", 3, 12, "int32")
    b = ScheduleBuilder(coll, "bad")
    b.copy(1, 2, "out", 0, 3)  # rank 1 has nothing yet
    b.copy(0, 1, "out", 0, 3)
    with pytest.raises(CollsimError, match="does not hold yet"):
        b.build().validate()


def test_validator_refuses_a_missing_dependency():
    coll = Collective("broadcast", 3, 12, "int32")
    ts = [Transfer(0, 0, 1, (region("out", 0, 3),), False, ()),
          Transfer(1, 1, 2, (region("out", 0, 3),), False, ())]  # forgets to wait for #0
    with pytest.raises(CollsimError, match="does not wait for it"):
        Schedule(coll, "bad", ts).validate()


def test_validator_refuses_out_of_bounds():
    coll = Collective("allreduce", 2, 8, "int32")
    ts = [Transfer(0, 0, 1, (region("out", 1, 5),), False, ())]
    with pytest.raises(CollsimError, match="outside its 2 elements"):
        Schedule(coll, "bad", ts).validate()


def test_check_catches_a_dropped_transfer():
    s = _ring(p=4, n=4 * 4 * 3)
    last = s.transfers.pop()
    assert last.id == len(s.transfers)
    result = check(s)
    assert not result.ok and "rank" in result.message


def test_check_catches_copy_instead_of_reduce():
    s = _ring(p=3, n=3 * 4 * 5)
    i = next(t.id for t in s.transfers if t.reduce)
    s.transfers[i] = dataclasses.replace(s.transfers[i], reduce=False)
    assert not check(s, validate=False).ok
