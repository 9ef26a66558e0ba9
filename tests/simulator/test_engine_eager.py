"""Eager sends (SMPI's detached sends) and latency-weighted sharing (SimGrid CM02), against hand arithmetic."""

import pytest

from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.engine import EngineOptions, simulate
from simulator.engine.bound import critical_path, lower_bound
from simulator.engine.maxmin import progressive_filling
from simulator.errors import CollsimError
from simulator.schedule import Piece, ScheduleBuilder, region
from simulator.topology import ring, switch

US = 1e-6


def _bcast(nbytes: int, eager: int) -> float:
    schedule = build_schedule(Collective("broadcast", 4, nbytes, "int8"), "binomial")
    return simulate(schedule, switch(4, 1 * US, 1e10), EngineOptions(header_bytes=16, eager_bytes=eager)).time


def test_eager_sends_share_the_senders_link():
    """Binomial broadcast on switch:4 (2 us a message, 10 GB/s): rendezvous, root -> 2 then root -> 1 beside 2 -> 3:
    2 x (2 us + 1040 B / 10 GB/s) = 4.208 us. Eager: root's two sends share its link (2 us + 2080 B / 10 GB/s),
    then 2 -> 3: 2.208 + 2.104 = 4.312 us."""
    assert _bcast(1024, 0) == pytest.approx(4.208 * US, rel=1e-12)
    assert _bcast(1024, 65536) == pytest.approx(4.312 * US, rel=1e-12)


def test_the_threshold_is_strict_and_on_the_payload():
    """SMPI: a send is detached when its size (without the 16-byte envelope) is below the threshold."""
    assert _bcast(1024, 1024) == _bcast(1024, 0)
    assert _bcast(1024, 1025) == _bcast(1024, 65536)


def test_an_eager_sender_goes_on_before_its_message_arrives():
    """switch:3 (1 us and 1 GB/s a link): rank 0 sends its first 1000 B to 1, overwrites them with a local copy (which
    waits for the send to have read them), then sends them to 2. Rendezvous: the send takes 2 us + 1 us, the copy
    waits for it, the second send follows: ends 3, 3 and 6 us. Eager: the first send's data was copied out when it
    started, so the copy and the second send start at 0 and the two sends share 0's link: 2 us + 2 us each."""
    b = ScheduleBuilder(Collective("broadcast", 3, 2000, "int8"), "hand")
    b.send(0, 1, region("out", 0, 1000))
    b.send(0, 0, Piece("out", 1000, "out", 0, 1000))
    b.send(0, 2, region("out", 0, 1000))
    schedule = b.build()
    topo = switch(3, 1 * US, 1e9)
    rendezvous = simulate(schedule, topo, EngineOptions())
    eager = simulate(schedule, topo, EngineOptions(eager_bytes=4096))
    assert rendezvous.end.tolist() == pytest.approx([3 * US, 3 * US, 6 * US], rel=1e-12)
    assert eager.start.tolist() == [0, 0, 0]
    assert eager.end.tolist() == pytest.approx([4 * US, 0, 4 * US], rel=1e-12)


def test_bounds_stay_below_the_run_with_eager_sends():
    for name in ("binomial", "scatter_allgather"):
        schedule = build_schedule(Collective("broadcast", 8, 65536, "float32"), name)
        options = EngineOptions(header_bytes=16, eager_bytes=65536)
        topo = ring(8, True, 1 * US, 1e10)
        time = simulate(schedule, topo, options).time
        assert lower_bound(schedule, topo, options) <= time * (1 + 1e-9)
        assert critical_path(schedule, topo, options) <= time * (1 + 1e-9)


def test_bad_eager_bytes_is_one_line():
    with pytest.raises(CollsimError, match=r"^eager_bytes: -1; expected an integer >= 0"):
        EngineOptions(eager_bytes=-1).check(2, switch(2))


def test_weighted_filling_gives_shares_in_proportion():
    """One 9 GB/s link, weights 2 and 1: 6 and 3 GB/s; a second link of 4 GB/s under the first flow alone caps it at
    4, and the other takes the remaining 5."""
    assert progressive_filling({0: [7], 1: [7]}, {7: [0, 1]}, {7: 9.0}, {0: 2.0, 1: 1.0}) == {0: 6.0, 1: 3.0}
    rates = progressive_filling({0: [7, 8], 1: [7]}, {7: [0, 1], 8: [0]}, {7: 9.0, 8: 4.0}, {0: 2.0, 1: 1.0})
    assert rates == pytest.approx({0: 4.0, 1: 5.0})


def test_latency_weighted_sharing_matches_simgrid_by_hand():
    """ring:4, 1 us and 10 GB/s a link: rank 0 sends 1 MB to 1 (1 hop) and to 2 (2 hops) at once. The first moves
    alone from 1 us to 2 us (1e4 B), then both share link 0->1 as 1/1us : 1/2us, 2/3 and 1/3: the first ends at
    2 us + 990016 B / 6.667e9 B/s = 150.5024 us, the second, having moved 495008 B, ends 505008 B / 1e10 B/s later:
    201.0032 us. SimGrid 3.32's CM02 gives exactly these (tests/data/simgrid/README.md). Equal shares: the first
    ends at 2 us + 990016 B / 5e9 B/s = 200.0032 us, the second 10000 B / 1e10 B/s later."""
    b = ScheduleBuilder(Collective("broadcast", 4, 1_000_000, "int8"), "hand")
    b.send(0, 1, region("out", 0, 1_000_000))
    b.send(0, 2, region("out", 0, 1_000_000))
    topo = ring(4, True, 1 * US, 1e10)
    weighted = simulate(b.build(), topo, EngineOptions(ports=0, header_bytes=16, latency_weighted=True))
    assert weighted.end.tolist() == pytest.approx([150.5024 * US, 201.0032 * US], rel=1e-9)
    equal = simulate(b.build(), topo, EngineOptions(ports=0, header_bytes=16))
    assert equal.end.tolist() == pytest.approx([200.0032 * US, 201.0032 * US], rel=1e-9)
