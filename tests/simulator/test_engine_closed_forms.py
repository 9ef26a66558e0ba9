"""The engine on `ideal` with one port per rank equals every closed form, where the closed form says it is exact."""

import math
from fractions import Fraction

import pytest
from ideal_time import ideal_time

from simulator.algorithms import REGISTRY, build_schedule
from simulator.collective import Collective
from simulator.cost import CLOSED_FORMS, LinkModel, is_exact, predict
from simulator.engine import EngineOptions, simulate
from simulator.topology import ideal

ALPHA, BW = 2e-6, 25e9
PAIRS = sorted(key for key in CLOSED_FORMS if key in REGISTRY)


def param_sets(op: str, name: str, p: int) -> list[dict]:
    """The algorithm's parameter choices worth testing at p ranks."""
    names = {q.name for q in REGISTRY[(op, name)].params}
    if "chunks" in names:
        return [{"chunks": k} for k in (1, 2, 3)]
    if {"channels", "pipeline", "group"} <= names:  # nccl_tree: exact on one channel in one piece
        return [{"channels": 1, "pipeline": 1, "group": g} for g in (1, 2, 3, 4, p) if p % g == 0]
    if "group" in names:
        return [{"group": g} for g in (1, 2, 3, 4, p) if p % g == 0]
    return [{}]


def exact_cases():
    """(op, name, p, nbytes, params, gamma) wherever the closed form says it is the schedule's exact time."""
    cases = []
    for op, name in PAIRS:
        spec = REGISTRY[(op, name)]
        for p in (2, 3, 4, 5, 6, 7, 8, 12, 16):
            if spec.refusal(p):
                continue
            for params in param_sets(op, name, p):
                for gamma in (0.0, 3e-11):
                    if not is_exact(op, name, p, LinkModel.from_bandwidth(ALPHA, BW, gamma), **params):
                        continue
                    for unit in (1, 37, 4096):  # sizes that split evenly into p blocks of `chunks` pieces
                        cases.append((op, name, p, 4 * unit * p * p * 3 * 8 * 5 * 7, params, gamma))
    return cases


CASES = exact_cases()


@pytest.mark.parametrize("op, name, p, nbytes, params, gamma", CASES,
                         ids=[f"{c[0]}-{c[1]}-p{c[2]}-n{c[3]}-{c[4]}-g{c[5]:g}" for c in CASES])
def test_engine_equals_closed_form_on_ideal(op, name, p, nbytes, params, gamma):
    sched = build_schedule(Collective(op, p, nbytes), name, **params)
    engine = simulate(sched, ideal(p, ALPHA, BW), EngineOptions(gamma=gamma)).time
    closed = float(predict(op, name, p, [nbytes], LinkModel.from_bandwidth(ALPHA, BW, gamma), **sched.params)[0])
    assert math.isclose(engine, closed, rel_tol=1e-9), f"engine {engine!r} vs closed form {closed!r}"


def test_the_equality_covers_every_registered_closed_form():
    assert {(c[0], c[1]) for c in CASES} == set(PAIRS)


ANY = [(op, name, p, nbytes, gamma) for op, name in PAIRS for p in (3, 5, 8) for nbytes in (0, 4 * 1001, 4 * 65536 + 12)
       for gamma in (0.0, 1e-10) if not REGISTRY[(op, name)].refusal(p)]


@pytest.mark.parametrize("op, name, p, nbytes, gamma", ANY, ids=[f"{c[0]}-{c[1]}-p{c[2]}-n{c[3]}-g{c[4]:g}" for c in ANY])
def test_engine_equals_the_independent_single_port_model_everywhere(op, name, p, nbytes, gamma):
    # tests/ideal_time.py is a separate, minimal reading of the same execution model (written with the
    # closed forms); the engine must agree with it also where no closed form is exact (uneven blocks, gamma).
    sched = build_schedule(Collective(op, p, nbytes), name)
    engine = simulate(sched, ideal(p, ALPHA, BW), EngineOptions(gamma=gamma)).time
    # in exact arithmetic (the decimal values typed above as fractions): simultaneous events are exactly simultaneous
    # there as in the engine's integer clock, so ports go in transfer-id order, never to whichever float rounded lower
    exact = ideal_time(sched, Fraction(repr(ALPHA)), 1 / Fraction(repr(BW)), Fraction(repr(gamma)))
    assert math.isclose(engine, float(exact), rel_tol=1e-9, abs_tol=1e-15)


def test_engine_times_grow_with_latency():
    sched = build_schedule(Collective("allreduce", 8, 1 << 16), "ring")
    t1 = simulate(sched, ideal(8, ALPHA, BW)).time
    t2 = simulate(sched, ideal(8, 2 * ALPHA, BW)).time
    assert t2 - t1 == pytest.approx(2 * 7 * ALPHA)


def test_a_transfer_made_ready_at_an_instant_takes_a_freed_port_before_a_later_id():
    # a = alpha + m beta. At a, T0 (0->2) and T1 (4->3) arrive: T2 (2->3, needs T0) becomes ready and T3 (1->3,
    # waiting since 0 for rank 3's receive port) may go too; by id T2 goes first (a..2a), then T3 (2a..3a) while
    # T4 (3->0, needs T2) runs 2a..3a: 3a in all. Letting T3 in first would give 4a.
    from simulator.schedule import Schedule, Transfer, region

    coll = Collective("allreduce", 5, 4000)
    sends = [(0, 2, ()), (4, 3, ()), (2, 3, (0,)), (1, 3, ()), (3, 0, (2,))]
    sched = Schedule(coll, "hand", [Transfer(i, s, d, (region("in", 0, 1000),), False, deps)
                                    for i, (s, d, deps) in enumerate(sends)])
    a = ALPHA + 4000 / BW
    tr = simulate(sched, ideal(5, ALPHA, BW))
    assert tr.start[2] == pytest.approx(a) and tr.start[3] == pytest.approx(2 * a)
    assert tr.time == pytest.approx(3 * a)
    assert ideal_time(sched, ALPHA, 1 / BW) == pytest.approx(3 * a)
