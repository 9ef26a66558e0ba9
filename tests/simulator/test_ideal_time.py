"""The test oracle for closed forms (tests/ideal_time.py) on schedules small enough to time by hand."""

import pytest
from ideal_time import ideal_time

from simulator.collective import Collective
from simulator.schedule import Piece, ScheduleBuilder

A, B, G = 1.0, 0.01, 0.002  # alpha, beta, gamma; 100 bytes take 1 + 1 = 2, and reduce in 0.2


def _builder(p=3, n=300, op="allreduce"):
    return ScheduleBuilder(Collective(op, p, n, "int8"), "hand")


def test_one_message_and_its_reduction():
    b = _builder()
    b.copy(0, 1, "out", 0, 100)
    assert ideal_time(b.build(), A, B, G) == pytest.approx(2.0)
    b = _builder()
    b.reduce(0, 1, "out", 0, 100)
    assert ideal_time(b.build(), A, B, G) == pytest.approx(2.2)


def test_one_send_port_and_one_receive_port():
    b = _builder()  # rank 0 sends twice: one after the other
    b.copy(0, 1, "out", 0, 100)
    b.copy(0, 2, "out", 100, 100)
    assert ideal_time(b.build(), A, B, G) == pytest.approx(4.0)
    b = _builder()  # rank 2 receives twice: one after the other
    b.copy(0, 2, "out", 0, 100)
    b.copy(1, 2, "out", 100, 100)
    assert ideal_time(b.build(), A, B, G) == pytest.approx(4.0)
    b = _builder()  # full duplex: 0 -> 1 and 1 -> 0 at once
    b.copy(0, 1, "out", 0, 100)
    b.copy(1, 0, "out", 100, 100)
    assert ideal_time(b.build(), A, B, G) == pytest.approx(2.0)


def test_dependencies_and_serial_reductions():
    b = _builder()  # a chain waits for the data
    b.copy(0, 1, "out", 0, 100)
    b.copy(1, 2, "out", 0, 100)
    assert ideal_time(b.build(), A, B, G) == pytest.approx(4.0)
    b = _builder(p=3, n=300)  # two reductions into rank 2, 5 each: messages arrive at 2 and 4,
    b.reduce(0, 2, "out", 0, 100)  # the first reduction runs 2..7, the second waits for it: 7..12
    b.reduce(1, 2, "out", 0, 100)
    assert ideal_time(b.build(), A, B, 0.05) == pytest.approx(12.0)


def test_local_transfers_cost_only_their_reduction():
    b = _builder()
    b.use_scratch(100)
    b.send(0, 0, Piece("out", 0, "scratch", 0, 100))
    b.send(0, 0, Piece("scratch", 0, "out", 0, 100), reduce=True)
    assert ideal_time(b.build(), A, B, G) == pytest.approx(0.2)
