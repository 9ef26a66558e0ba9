"""The engine against cases computed by hand: single messages, ports, gamma, max-min sharing, oversubscription, stragglers, deadlock."""

import time

import pytest

from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.engine import DeadlockError, EngineOptions, simulate
from simulator.schedule import Piece, Schedule, ScheduleBuilder, Transfer, region
from simulator.topology import fat_tree, ideal, ring, switch, topology_from_dict

A, B = 2e-6, 25e9  # latency (s) and bandwidth (B/s) used by the hand computations below


def hand_schedule(p: int, elems: int, sends: list[tuple[int, int]], reduce: bool = False, deps=None) -> Schedule:
    """Transfers src->dst of `elems` float32 each, with the given explicit dependencies (none by default)."""
    coll = Collective("allreduce", p, 4 * elems)
    deps = deps or {}
    ts = [Transfer(i, s, d, (region("in", 0, elems),), reduce, tuple(deps.get(i, ()))) for i, (s, d) in enumerate(sends)]
    return Schedule(coll, "hand", ts)


def test_one_message_on_ideal_takes_alpha_plus_m_beta():
    tr = simulate(hand_schedule(2, 1000, [(0, 1)]), ideal(2, A, B))
    assert tr.time == pytest.approx(A + 4000 / B, rel=1e-12)


def test_one_message_on_switch_crosses_two_links():
    tr = simulate(hand_schedule(4, 1000, [(0, 3)]), switch(4, 1e-6, B))
    assert tr.time == pytest.approx(2e-6 + 4000 / B, rel=1e-12)


def test_header_bytes_are_added_to_every_message():
    tr = simulate(hand_schedule(2, 1000, [(0, 1)]), ideal(2, A, B), EngineOptions(header_bytes=16))
    assert tr.time == pytest.approx(A + 4016 / B, rel=1e-12)


def test_single_port_serialises_a_ranks_sends_and_unlimited_ports_do_not():
    sched = hand_schedule(3, 1000, [(0, 1), (0, 2)])
    one = simulate(sched, ideal(3, A, B))
    many = simulate(sched, ideal(3, A, B), EngineOptions(ports=0))
    assert one.time == pytest.approx(2 * (A + 4000 / B), rel=1e-12)
    assert many.time == pytest.approx(A + 4000 / B, rel=1e-12)
    assert list(one.start) == [0.0, pytest.approx(A + 4000 / B)]  # transfer-id order


def test_send_and_receive_overlap_full_duplex():
    tr = simulate(hand_schedule(2, 1000, [(0, 1), (1, 0)]), ideal(2, A, B))
    assert tr.time == pytest.approx(A + 4000 / B, rel=1e-12)


def test_reduction_costs_gamma_after_arrival_and_frees_the_port_at_arrival():
    # ranks 0 and 2 both send a reducing message to rank 1. The second message starts when the first has
    # arrived (one receive port, freed at arrival, not after the reduction) and arrives at 2(A + m/B).
    m = 4000
    first = A + m / B
    sched = hand_schedule(3, 1000, [(0, 1), (2, 1)], reduce=True)
    g = 1e-10  # the first reduction (0.4 us) ends before the second message lands
    tr = simulate(sched, ideal(3, A, B), EngineOptions(gamma=g))
    assert tr.arrive[0] == pytest.approx(first) and tr.end[0] == pytest.approx(first + g * m)
    assert tr.start[1] == pytest.approx(first)
    assert tr.end[1] == pytest.approx(2 * first + g * m)
    g = 1e-9  # now the first reduction (4 us) is still running when the second lands: it waits for the reducer
    tr = simulate(sched, ideal(3, A, B), EngineOptions(gamma=g))
    assert tr.start[1] == pytest.approx(first)
    assert tr.end[1] == pytest.approx(first + 2 * g * m)


def test_one_reduction_at_a_time_per_rank():
    # two reducing messages arrive together (unlimited ports); the rank reduces them one after the other
    m, g = 4000, 1e-8
    tr = simulate(hand_schedule(3, 1000, [(0, 1), (2, 1)], reduce=True), ideal(3, A, B), EngineOptions(gamma=g, ports=0))
    assert sorted(tr.end) == [pytest.approx(A + m / B + g * m), pytest.approx(A + m / B + 2 * g * m)]


def test_dataflow_starts_a_transfer_when_its_dependency_ends():
    tr = simulate(hand_schedule(3, 1000, [(0, 1), (1, 2)], deps={1: (0,)}), ideal(3, A, B))
    assert tr.start[1] == pytest.approx(A + 4000 / B)
    assert tr.time == pytest.approx(2 * (A + 4000 / B))


def test_two_flows_sharing_a_link_each_get_half():
    # 0->2 and 1->2 on a switch share the switch->gpu2 link: 2 latencies, then 2m bytes at B
    m = 4000
    tr = simulate(hand_schedule(3, 1000, [(0, 2), (1, 2)]), switch(3, 1e-6, B), EngineOptions(ports=0))
    assert list(tr.arrive) == [pytest.approx(2e-6 + 2 * m / B)] * 2
    busiest = tr.busiest_link()
    assert busiest["name"] == "switch->gpu2" and busiest["peak_flows"] == 2


def test_rates_are_recomputed_when_a_flow_ends():
    # flows of m and 3m bytes share one link: both at B/2 until the short one ends at 2m/B; the long one then
    # has 2m left at B: it ends at 4m/B (no latency)
    coll = Collective("allreduce", 3, 4 * 3000)
    ts = [Transfer(0, 0, 2, (region("in", 0, 1000),), False, ()), Transfer(1, 1, 2, (region("in", 0, 3000),), False, ())]
    tr = simulate(Schedule(coll, "hand", ts), switch(3, 0.0, B), EngineOptions(ports=0))
    assert tr.arrive[0] == pytest.approx(2 * 4000 / B) and tr.arrive[1] == pytest.approx(4 * 4000 / B)


THREE_FLOWS = {
    "name": "three-flows",
    "defaults": {"latency": 0, "bandwidth": "100GB/s"},
    "nodes": ["g0", "g1", "g2", "g3", "g4", {"name": "s1", "kind": "switch"}, {"name": "s2", "kind": "switch"}],
    "links": [{"a": "g0", "b": "s1"}, {"a": "g1", "b": "s1"}, {"a": "s1", "b": "s2", "bandwidth": "10GB/s"},
              {"a": "s2", "b": "g3", "bandwidth": "20GB/s"}, {"a": "s2", "b": "g2"}, {"a": "g4", "b": "s2"}],
}


def test_three_flows_two_links_max_min():
    # A: g0->g3 crosses L1 (s1->s2, 10 GB/s) and L2 (s2->g3, 20 GB/s); B: g1->g2 crosses L1; C: g4->g3 crosses L2.
    # Progressive filling: L1 is the tightest (10/2 = 5 each), so A = B = 5 GB/s; C gets L2's rest: 20 - 5 = 15 GB/s.
    topo = topology_from_dict(THREE_FLOWS)
    m = 3e6
    tr = simulate(hand_schedule(5, int(m / 4), [(0, 3), (1, 2), (4, 3)]), topo, EngineOptions(ports=0))
    assert tr.arrive[2] == pytest.approx(m / 15e9, rel=1e-9)
    assert tr.arrive[0] == pytest.approx(m / 5e9, rel=1e-9)  # C leaving does not help A: L1 still binds
    assert tr.arrive[1] == pytest.approx(m / 5e9, rel=1e-9)


@pytest.mark.parametrize("p", [2, 3, 5, 8])
@pytest.mark.parametrize("nbytes", [4096, 1 << 20])
def test_ring_allreduce_on_a_nonblocking_switch_equals_ideal(p, nbytes):
    sched = build_schedule(Collective("allreduce", p, nbytes * p), "ring")
    on_switch = simulate(sched, switch(p, 1e-6, B))
    on_ideal = simulate(sched, ideal(p, 2e-6, B))
    assert on_switch.time == pytest.approx(on_ideal.time, rel=1e-9)


def pairwise_alltoall(p: int, elems: int) -> Schedule:
    """Step s = 1..p-1: rank i sends its block for i+s to i+s (the pairwise exchange)."""
    coll = Collective("alltoall", p, 4 * elems * p * p)
    b = ScheduleBuilder(coll, "pairwise")
    for s in range(1, p):
        for i in range(p):
            j = (i + s) % p
            b.send(i, j, Piece("in", j * elems, "out", i * elems, elems), step=s)
    return b.build()


@pytest.mark.parametrize("p", [3, 4, 6])
def test_pairwise_alltoall_on_a_unidirectional_ring_is_slower_by_p_over_2(p):
    # step s sends every message s hops forward, so every link carries s flows: s m / B for the step.
    # Summed: p(p-1)/2 m/B against (p-1) m/B on a non-blocking switch (no latency): a factor p/2.
    m_elems = 25000
    sched = pairwise_alltoall(p, m_elems)
    uni = simulate(sched, ring(p, bidirectional=False, latency=0.0, bandwidth=B))
    flat = simulate(sched, switch(p, 0.0, B))
    m = 4 * m_elems
    assert flat.time == pytest.approx((p - 1) * m / B, rel=1e-9)
    assert uni.time == pytest.approx(p * (p - 1) / 2 * m / B, rel=1e-9)
    assert uni.time / flat.time == pytest.approx(p / 2, rel=1e-9)


def test_two_to_one_oversubscribed_fat_tree_halves_cross_pod_bandwidth():
    # 8 hosts, 4 per leaf: host i sends to i+4 (all cross the spine layer). Non-blocking: 4 uplinks, m/B.
    # 2:1: 2 uplinks carry 4 flows, B/2 each: 2 m/B. Inside a leaf nothing changes.
    m = 400000
    cross = hand_schedule(8, m // 4, [(i, i + 4) for i in range(4)])
    full = simulate(cross, fat_tree(8, 4, 1, latency=0.0, bandwidth=B))
    half = simulate(cross, fat_tree(8, 4, 2, latency=0.0, bandwidth=B))
    assert full.time == pytest.approx(m / B, rel=1e-9)
    assert half.time == pytest.approx(2 * m / B, rel=1e-9)
    local = hand_schedule(8, m // 4, [(0, 1), (2, 3)])
    assert simulate(local, fat_tree(8, 4, 2, latency=0.0, bandwidth=B)).time == pytest.approx(m / B, rel=1e-9)


def test_without_contention_every_flow_gets_its_bottleneck():
    sched = hand_schedule(3, 1000, [(0, 2), (1, 2)])
    tr = simulate(sched, switch(3, 1e-6, B), EngineOptions(ports=0, contention=False))
    assert tr.time == pytest.approx(2e-6 + 4000 / B)


def test_background_load_takes_its_share_of_a_link():
    topo = switch(2, 0.0, B)
    up = next(lid for lid in range(topo.num_links) if topo.link_name(lid) == "gpu0->switch")
    tr = simulate(hand_schedule(2, 1000, [(0, 1)]), topo, EngineOptions(background={up: 0.75}))
    assert tr.time == pytest.approx(4000 / (0.25 * B))


@pytest.mark.parametrize("delay", [5e-6, 50e-6])
def test_a_late_rank_delays_ring_allreduce_by_about_its_delay(delay):
    p, n = 8, 1 << 20
    sched = build_schedule(Collective("allreduce", p, n), "ring")
    base = simulate(sched, ideal(p, A, B)).time
    late = simulate(sched, ideal(p, A, B), EngineOptions(start_delay={3: delay})).time
    step = A + n / p / B
    assert delay - 1e-12 <= late - base <= delay + step


def test_a_slow_rank_slows_its_reductions():
    m, g = 4000, 1e-9
    sched = hand_schedule(2, 1000, [(0, 1)], reduce=True)
    tr = simulate(sched, ideal(2, A, B), EngineOptions(gamma=g, slowdown={1: 3.0}))
    assert tr.time == pytest.approx(A + m / B + 3 * g * m)


def test_two_ranks_waiting_to_receive_before_sending_is_a_deadlock_naming_both():
    sched = hand_schedule(2, 1000, [(0, 1), (1, 0)], deps={0: (1,), 1: (0,)})
    t0 = time.perf_counter()
    with pytest.raises(DeadlockError) as err:
        simulate(sched, ideal(2, A, B))
    assert time.perf_counter() - t0 < 1.0
    message = str(err.value)
    assert "deadlock" in message and "rank 0" in message and "rank 1" in message
    assert {r["src"] for r in err.value.report} == {0, 1}
    assert err.value.report[0]["waits_for"] == [1]


def test_deadlock_report_without_raising_keeps_the_partial_trace():
    sched = hand_schedule(3, 1000, [(2, 0), (0, 1), (1, 0)], deps={1: (2,), 2: (1,)})
    tr = simulate(sched, ideal(3, A, B), raise_on_deadlock=False)
    assert tr.stuck.tolist() == [1, 2] and tr.end[0] == pytest.approx(A + 4000 / B)
    assert tr.deadlock and tr.deadlock[0]["transfer"] == 1


def test_more_ranks_than_devices_is_a_clear_error():
    sched = build_schedule(Collective("allreduce", 8, 4096), "ring")
    with pytest.raises(Exception, match="8 ranks asked but topology switch:4 has only 4 devices"):
        simulate(sched, switch(4))


@pytest.mark.parametrize("options, field", [
    (EngineOptions(gamma=-1.0), "gamma"), (EngineOptions(ports=-2), "ports"),
    (EngineOptions(start_delay={9: 1e-6}), "straggler"), (EngineOptions(slowdown={0: 0.0}), "slowdown"),
    (EngineOptions(background={999: 0.5}), "congestion"), (EngineOptions(background={0: 1.0}), "congestion"),
    (EngineOptions(header_bytes=-1), "header_bytes"),
])
def test_bad_engine_options_name_the_field(options, field):
    with pytest.raises(Exception, match=f"^{field}:"):
        simulate(hand_schedule(2, 10, [(0, 1)]), switch(2), options)


def test_local_transfers_use_no_network_and_reducing_ones_cost_gamma():
    sched = hand_schedule(2, 1000, [(0, 0), (1, 1)], reduce=True)
    assert simulate(sched, ideal(2, A, B)).time == 0.0
    assert simulate(sched, ideal(2, A, B), EngineOptions(gamma=1e-9)).time == pytest.approx(4000e-9)


def test_a_pipelined_tree_absorbs_a_short_straggler_that_a_ring_cannot():
    # docs/model.md section 9: the double binary tree leaves ranks idle, and that slack hides a 10 us delay
    p, n, d = 8, 1 << 20, 10e-6
    times = {}
    for algo in ("ring", "double_binary_tree"):
        sched = build_schedule(Collective("allreduce", p, n), algo)
        base = simulate(sched, ideal(p, A, B)).time
        times[algo] = simulate(sched, ideal(p, A, B), EngineOptions(start_delay={3: d})).time - base
    assert times["ring"] == pytest.approx(d)
    assert 0 <= times["double_binary_tree"] < d / 100
