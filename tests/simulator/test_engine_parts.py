"""The engine's parts on their own: max-min rates by hand, flows, ports, the event loop, options, message regimes."""

import itertools
import random
from pathlib import Path

import numpy as np
import pytest

from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.cost import LinkModel, predict
from simulator.engine import EngineOptions, MessageModel, Regime, max_min_rates, simulate
from simulator.engine.clock import TICKS_PER_S
from simulator.engine.csr import scalar_backed, scalar_filled
from simulator.engine.flows import Flows
from simulator.engine.loop import ARRIVE, DONE, Agenda
from simulator.engine.ports import Ports
from simulator.engine.routes import Routes
from simulator.errors import CollsimError
from simulator.topology import ideal, switch

# ---- max-min, computed by hand --------------------------------------------------------------------------------


def test_maxmin_flows_of_different_hop_counts():
    # link A (0) cap 10: f1 (A only) and f2 (A, B); link B (1) cap 4: f2 and f3 (B only).
    # B is the tighter: 4/2 = 2 each for f2 and f3; A has 10 - 2 = 8 left for f1 alone.
    assert max_min_rates([(0,), (0, 1), (1,)], {0: 10.0, 1: 4.0}) == pytest.approx([8.0, 2.0, 2.0], rel=1e-15)


def test_maxmin_equal_share_on_one_link_and_a_list_of_capacities():
    assert max_min_rates([(0,), (0,), (0,)], [9.0]) == pytest.approx([3.0, 3.0, 3.0])


def test_maxmin_long_flow_across_two_links_gets_the_same_share_as_the_short_ones():
    # the textbook "parking lot": a 2-hop flow and one 1-hop flow per link, capacity 1 each: 1/2 for everyone
    assert max_min_rates([(0, 1), (0,), (1,)], {0: 1.0, 1: 1.0}) == pytest.approx([0.5, 0.5, 0.5])


def test_maxmin_three_levels():
    # link 0 cap 1: f0, f1; link 1 cap 10: f1, f2; link 2 cap 100: f2, f3.
    # f0 = f1 = 0.5 (link 0); then link 1 has 9.5 for f2 alone... but link 2 offers 50 each: f2 = 9.5, f3 = 90.5
    rates = max_min_rates([(0,), (0, 1), (1, 2), (2,)], {0: 1.0, 1: 10.0, 2: 100.0})
    assert rates == pytest.approx([0.5, 0.5, 9.5, 90.5])


def test_maxmin_flow_without_links_is_unconstrained_and_no_flows_is_fine():
    assert max_min_rates([(), (0,)], {0: 2.0}) == [float("inf"), 2.0]
    assert max_min_rates([], {}) == []


@pytest.mark.parametrize("seed", range(20))
def test_maxmin_is_feasible_and_every_flow_has_a_bottleneck(seed):
    """The definition: no link over capacity, and each flow crosses a saturated link on which no flow gets more."""
    rng = random.Random(seed)
    links = 6
    cap = {k: rng.choice([1.0, 2.5, 4.0, 10.0]) for k in range(links)}
    flows = [tuple(rng.sample(range(links), rng.randint(1, 3))) for _ in range(rng.randint(1, 12))]
    rate = max_min_rates(flows, cap)
    load = {k: sum(r for r, ls in zip(rate, flows) if k in ls) for k in range(links)}
    assert all(load[k] <= cap[k] * (1 + 1e-9) for k in range(links))
    for f, ls in enumerate(flows):
        assert any(load[k] >= cap[k] * (1 - 1e-9) and all(rate[g] <= rate[f] * (1 + 1e-9) for g, gl in enumerate(flows) if k in gl)
                   for k in ls), (f, flows, rate)


# ---- flows -------------------------------------------------------------------------------------------------------


def _flows(links: list[tuple[int, ...]], capacity: list[float], wire: list[float], due: list):
    bottleneck = np.array([min(capacity[k] for k in r) for r in links])
    return Flows(Routes.from_rows(links), np.array(capacity), bottleneck, np.array(wire), float(TICKS_PER_S),
                 lambda when, ids, versions: due.extend(zip(when.tolist(), ids.tolist(), versions.tolist())),
                 lambda when, t, version: due.append((int(when), t, version)))


def test_flows_reshare_when_a_second_flow_joins_and_drop_superseded_completions():
    due = []
    T = TICKS_PER_S                                   # instants are integer ticks (femtoseconds)
    flows = _flows([(0,), (0,)], [10.0], [100.0, 100.0], due)
    flows.begin(np.array([0]), now=0)
    assert due == [(10 * T, 0, 1)]                    # alone: 100 B at 10 B/s, no max-min needed
    flows.begin(np.array([1]), now=5 * T)             # 50 B left for flow 0; both at 5 B/s now
    flows.reshare(now=5 * T)
    assert sorted(due[1:]) == [(15 * T, 0, 2), (25 * T, 1, 1)]
    assert flows.done(np.array([0]), np.array([1])).size == 0    # the old completion of flow 0 was superseded
    assert flows.done(np.array([0]), np.array([2])).tolist() == [0]
    flows.reshare(now=15 * T)
    assert due[-1] == (20 * T, 1, 2)                  # flow 1: 100 - 5 * 10 = 50 B left at 10 B/s from 15 s


def test_links_only_one_rank_sends_or_receives_on_are_one_sided():
    # pairs 0 -> 1 over links (0, 1), 0 -> 2 over (0, 2), 5 -> 1 over (3, 1), 4 -> 7 over (0, 3); link 4 unused
    routes = Routes.from_rows([(0, 1), (0, 2), (3, 1), (0, 3)])
    one_sided = routes.one_sided(np.array([0, 0, 5, 4]), np.array([1, 2, 1, 7]), 5)
    # link 0: senders 0 and 4, receivers 1, 2, 7; link 1: receiver 1 only; link 2: one pair; link 3: senders 5 and 4,
    # receivers 1 and 7
    assert one_sided.tolist() == [False, True, True, False, False]


def test_flows_that_start_together_are_shared_once_per_instant():
    # three flows start at once on link 0 (9 B/s); flow 2 also crosses link 1 (1 B/s): it gets 1, the others 4 each
    due = []
    flows = _flows([(0,), (0,), (0, 1)], [9.0, 1.0], [8.0, 8.0, 1.0], due)
    flows.begin(np.array([0, 1, 2]), now=0)
    flows.reshare(now=0)
    valid = sorted((when, f) for when, f, v in due if flows.is_due(f, v))  # later versions supersede earlier ones
    assert valid == [(TICKS_PER_S, 2), (2 * TICKS_PER_S, 0), (2 * TICKS_PER_S, 1)]


# ---- ports -------------------------------------------------------------------------------------------------------


def _ports(src, dst, ranks, ports, closed=()):
    return Ports(np.array(src), np.array(dst), ranks, ports, closed)


def _match(ports, ids) -> list[int]:
    return ports.match(np.array(ids, dtype=np.int64)).tolist()


def test_one_port_serialises_sends_of_a_rank_and_receives_of_a_rank():
    ports = _ports([0, 0, 1], [1, 2, 2], 3, 1)
    assert _match(ports, [2, 1, 0]) == [0, 2]          # id order; 1 waits for rank 0's send port
    assert _match(ports, []) == []
    ports.release(np.array([0]))
    assert _match(ports, []) == []                     # rank 0 can send again, but rank 2 still receives transfer 2
    ports.release(np.array([2]))
    assert _match(ports, []) == [1]


def test_unlimited_ports_and_local_transfers_take_no_port():
    assert _match(_ports([0, 0, 0], [1, 2, 3], 4, 0), [0, 1, 2]) == [0, 1, 2]
    assert _match(_ports([0, 0], [1, 0], 2, 1), [0, 1]) == [0, 1]  # transfer 1 is local (0 -> 0)


def test_a_closed_rank_starts_nothing_until_it_opens():
    ports = _ports([0], [1], 2, 1, closed=[1])
    assert _match(ports, [0]) == []
    ports.open(np.array([1]))
    assert _match(ports, []) == [0]
    assert _match(ports, []) == []                     # started once only


@pytest.mark.parametrize("ports_per_rank", [1, 2, 3, 0])
def test_the_batched_matching_equals_the_one_by_one_greedy(ports_per_rank):
    # many candidates take the numpy path; the greedy below is the rule written out one transfer at a time
    rng = random.Random(ports_per_rank)
    ranks, n = 9, 300
    src = [rng.randrange(ranks) for _ in range(n)]
    dst = [rng.randrange(ranks) for _ in range(n)]
    ports = _ports(src, dst, ranks, ports_per_rank, closed=[4])
    cap = ports_per_rank or n + 1
    send, recv, want = [cap] * ranks, [cap] * ranks, []
    for t in range(n):
        s, d = src[t], dst[t]
        if 4 not in (s, d) and (s == d or (send[s] > 0 and recv[d] > 0)):
            want.append(t)
            if s != d:
                send[s] -= 1
                recv[d] -= 1
    assert _match(ports, list(range(n))[::-1]) == want


def _greedy_rounds(src, dst, ranks, ports_per_rank, closed, rounds):
    """The matching rule written out: each round, ports of the released transfers free up, then every waiting or newly
    ready transfer is looked at in id order and starts if its ranks are open and have a free port."""
    cap = ports_per_rank or len(src) + 1
    send, recv, waiting, shut, out = [cap] * ranks, [cap] * ranks, set(), set(closed), []
    for released, opened, ready in rounds:
        for t in released:
            send[src[t]] += 1
            recv[dst[t]] += 1
        shut -= set(opened)
        go = []
        for t in sorted(waiting | set(ready)):
            s, d = src[t], dst[t]
            if s not in shut and d not in shut and (s == d or (send[s] > 0 and recv[d] > 0)):
                go.append(t)
                waiting.discard(t)
                if s != d:
                    send[s] -= 1
                    recv[d] -= 1
            else:
                waiting.add(t)
        out.append(go)
    return out


@pytest.mark.parametrize("ports_per_rank,ranks,per_round,trickle", [
    (1, 80, 60, None), (2, 64, 90, None), (1, 40, 6, None), (0, 50, 40, None), (1, 300, 200, 3),
    (1, 24, 20, None), (2, 16, 12, None), (1, 30, 25, 3), (0, 12, 10, None)])  # up to 32 ranks: ports kept as lists
def test_matching_over_many_rounds_with_ports_freeing_equals_the_rule(ports_per_rank, ranks, per_round, trickle):
    # many ranks freeing ports at once switch the waiting transfers to one array (the pool), few back to per-rank
    # queues (trickle: from that round on, at most two messages arrive per round); every form must match the rule,
    # round after round, with transfers left waiting from earlier rounds
    rng = random.Random(ranks * 10 + ports_per_rank)
    n = per_round * 25
    src = [rng.randrange(ranks) for _ in range(n)]
    dst = [rng.randrange(ranks) if rng.random() < 0.9 else src[t] for t in range(n)]
    ports = _ports(src, dst, ranks, ports_per_rank, closed=[3, 7])
    running, rounds, got, ids = [], [], [], list(range(n))
    rng.shuffle(ids)
    for k in range(0, n + 80 * per_round, per_round):
        released = [t for t in running if rng.random() < 0.7 and src[t] != dst[t]]
        if trickle is not None and trickle * per_round <= k < n:
            released = released[:2]
        running = [t for t in running if t not in set(released)]
        opened = [3] if k == 4 * per_round else [7] if k == 9 * per_round else []
        ready = sorted(ids[k:k + per_round])
        rounds.append((released, opened, ready))
        if released:
            ports.release(np.array(released, dtype=np.int64))
        if opened:
            ports.open(np.array(opened, dtype=np.int64))
        go = _match(ports, ready)
        got.append(go)
        running += go
    assert got == _greedy_rounds(src, dst, ranks, ports_per_rank, [3, 7], rounds)
    assert sum(map(len, got)) == n


def test_scalar_backed_columns_share_memory_with_their_arrays():
    # the one-at-a-time paths write the array.array, the batched ones the numpy view: each must see the other's writes
    for values in (np.array([5, -1, 7], dtype=np.int64), np.array([0.5, 2.0, -3.25])):
        buf, view = scalar_backed(values)
        assert view.dtype == values.dtype and view.tolist() == values.tolist()
        buf[1] += 3
        view[[0, 2]] += 1
        assert list(buf) == view.tolist() == [values[0] + 1, values[1] + 3, values[2] + 1]
        values[0] = 100                                  # a copy: the input stays apart
        assert buf[0] != 100
    assert scalar_backed(np.zeros(0, dtype=np.int64))[1].size == 0
    buf, view = scalar_filled(4, -1)
    buf[2] = 5
    assert view.dtype == np.int64 and view.tolist() == [-1, -1, 5, -1]
    buf, view = scalar_filled(2, 0.0, np.float64)
    view[1] = 0.25
    assert view.dtype == np.float64 and list(buf) == [0.0, 0.25]


# ---- event loop --------------------------------------------------------------------------------------------------


def test_agenda_hands_over_an_instant_at_once_and_same_instant_posts_in_a_second_round():
    log = []

    def handle(now, due):
        log.append((now, [list(c) for c in due[ARRIVE]]))
        if now == 1 and len(log) == 1:
            agenda.post(1, ARRIVE, [9])               # for now: a second round of instant 1, no new simpy event

    agenda = Agenda(handle)
    agenda.post(1, ARRIVE, [0])
    agenda.post(2, ARRIVE, [1])
    agenda.post_many(np.array([1, 2, 3]), ARRIVE, np.array([5, 6, 7]))
    agenda.run()
    assert log == [(1, [[0], [5]]), (1, [[9]]), (2, [[1], [6]]), (3, [[7]])]
    assert agenda.events == 3 and agenda.rounds == 4


def test_agenda_drops_an_instant_once_every_id_posted_for_it_is_forgotten():
    log = []
    agenda = Agenda(lambda now, due: log.append((now, [list(c[0]) for c in due[DONE]])))
    agenda.post(2, DONE, ([4, 5], [1, 1]))   # two completions at tick 2, one chunk
    agenda.post(3, DONE, ([6], [1]))
    agenda.post(4, DONE, ([7], [2]))
    agenda.forget(2)                          # one of the two at tick 2 superseded: the instant stays
    agenda.forget(3)                          # the only one at tick 3: dropped, its event calls nobody
    agenda.run()
    assert log == [(2, [[4, 5]]), (4, [[7]])]
    assert agenda.events == 2


def test_agenda_post_done_merges_a_burst_for_one_tick_into_one_chunk_in_order():
    agenda = Agenda(lambda now, due: None)
    agenda.post_done(5, 1, 1)
    agenda.post_done(5, 2, 1)                 # joins the chunk above
    agenda.post(5, DONE, ([3], [1]))          # another poster's chunk ends the burst
    agenda.post_done(5, 4, 2)
    agenda.post_done(6, 8, 1)
    chunks = agenda._at[5][DONE]
    assert [list(c[0]) for c in chunks] == [[1, 2], [3], [4]] and [list(c[1]) for c in chunks] == [[1, 1], [1], [2]]
    assert [list(c[0]) for c in agenda._at[6][DONE]] == [[8]]


def test_engine_uses_only_simpys_public_api():
    source = "".join(p.read_text() for p in (Path(__file__).parents[2] / "simulator" / "engine").glob("*.py"))
    for private in ("env._", "._queue", "._eid", "._now", "._value", "._ok", "_Event"):
        assert private not in source, private


# ---- options -----------------------------------------------------------------------------------------------------

BAD_OPTIONS = [
    ({"gamma": -1.0}, "gamma"), ({"gamma": float("nan")}, "gamma"), ({"ports": -1}, "ports"), ({"ports": True}, "ports"),
    ({"ports": 1.5}, "ports"), ({"header_bytes": -16}, "header_bytes"), ({"start_delay": {9: 1e-6}}, "straggler"),
    ({"start_delay": {0: -1.0}}, "straggler"), ({"slowdown": {1: 0.0}}, "slowdown"), ({"slowdown": {0: float("inf")}}, "slowdown"),
    ({"background": {999: 0.5}}, "congestion"), ({"background": {0: 1.0}}, "congestion"), ({"messages": "LL"}, "messages"),
]


@pytest.mark.parametrize(("kwargs", "field"), BAD_OPTIONS, ids=[f for _, f in BAD_OPTIONS])
def test_options_refuse_bad_values_naming_the_field(kwargs, field):
    with pytest.raises(CollsimError, match=f"^{field}"):
        EngineOptions(**kwargs).check(4, switch(4))


@pytest.mark.parametrize("regime", [Regime(0, None, -1e-6, 1.0), Regime(0, None, 0.0, float("nan")), Regime(10, 5, 0.0, 1.0)])
def test_message_model_refuses_bad_regimes(regime):
    with pytest.raises(CollsimError, match="^message model"):
        MessageModel((regime,))


# ---- message regimes in the engine -------------------------------------------------------------------------------


def test_message_regimes_pick_by_message_size():
    model = MessageModel((Regime(0, 1024, 5e-6, 2.0), Regime(1024, None, 1e-6, 1.0)))
    assert model.at(0) == (5e-6, 2.0) and model.at(1023) == (5e-6, 2.0) and model.at(1024) == (1e-6, 1.0)
    assert MessageModel((Regime(8, 16, 1.0, 3.0),)).at(4) == (0.0, 1.0)   # uncovered: the links alone


@pytest.mark.parametrize("topo", [ideal(2, 2e-6, 25e9), switch(2, 1e-6, 25e9)], ids=["ideal", "switch"])
def test_one_message_pays_its_regimes_latency_and_wire_bytes(topo):
    coll = Collective("allgather", 2, 8000)                     # each rank sends its 4000 B once
    opts = EngineOptions(messages=MessageModel((Regime(0, 1000, 9.0, 9.0), Regime(1000, None, 3e-6, 2.0))))
    got = simulate(build_schedule(coll, "ring"), topo, opts).time
    assert got == pytest.approx(2e-6 + 3e-6 + 2 * 4000 / 25e9, rel=1e-12)


@pytest.mark.parametrize(("p", "nbytes"), list(itertools.product([3, 8], [12 * 1024, 3 << 20])))
def test_ring_allreduce_with_a_uniform_regime_equals_its_closed_form_with_alpha_and_beta_adjusted(p, nbytes):
    extra, factor = 7e-6, 1.25
    coll = Collective("allreduce", p, nbytes)
    opts = EngineOptions(messages=MessageModel.uniform(extra, factor))
    for topo, hops in ((ideal(p, 2e-6, 25e9), 1), (switch(p, 1e-6, 25e9), 2)):
        got = simulate(build_schedule(coll, "ring"), topo, opts).time
        want = predict("allreduce", "ring", p, [nbytes], LinkModel(hops * (2e-6 / hops) + extra, factor / 25e9))[0]
        assert got == pytest.approx(want, rel=1e-12)
