"""The engine on `ideal` with one port per rank equals every closed form, where the closed form says it is exact."""

import math

import numpy as np
import pytest

from simulator.algorithms import REGISTRY, build_schedule
from simulator.collective import Collective
from simulator.cost import CLOSED_FORMS, LinkModel, predict
from simulator.engine import EngineOptions, simulate
from simulator.topology import ideal

ALPHA, BW = 2e-6, 25e9
PARAMS = sorted(key for key in CLOSED_FORMS if key in REGISTRY)


def exact_cases(op: str, name: str):
    """(p, nbytes, chunks, gamma) cases the closed form describes exactly (see each closed form's comment)."""
    spec = REGISTRY[(op, name)]
    has_chunks = any(param.name == "chunks" for param in spec.params)
    cases = []
    for p in (2, 3, 4, 5, 7, 8, 16):
        if spec.refusal(p):
            continue
        if p & (p - 1) and not _exact_for_any_p(op, name):
            continue
        for unit in (1, 37, 4096):
            for chunks in ((1, 2, 3) if has_chunks else (1,)):
                for gamma in ((0.0, 3e-11) if chunks == 1 else (0.0,)):
                    cases.append((p, 4 * unit * p * p * chunks * 8, chunks, gamma))
    return cases


def _exact_for_any_p(op: str, name: str) -> bool:
    return name in ("ring", "direct", "chain", "pairwise")


CASES = [(op, name, *case) for op, name in PARAMS for case in exact_cases(op, name)]


@pytest.mark.parametrize("op, name, p, nbytes, chunks, gamma", CASES,
                         ids=[f"{c[0]}-{c[1]}-p{c[2]}-n{c[3]}-k{c[4]}-g{c[5]:g}" for c in CASES])
def test_engine_equals_closed_form_on_ideal(op, name, p, nbytes, chunks, gamma):
    params = {"chunks": chunks} if any(q.name == "chunks" for q in REGISTRY[(op, name)].params) else {}
    sched = build_schedule(Collective(op, p, nbytes), name, **params)
    engine = simulate(sched, ideal(p, ALPHA, BW), EngineOptions(gamma=gamma)).time
    closed = float(predict(op, name, p, [nbytes], LinkModel.from_bandwidth(ALPHA, BW, gamma), **sched.params)[0])
    assert math.isclose(engine, closed, rel_tol=1e-9), f"engine {engine!r} vs closed form {closed!r}"


def test_the_equality_covers_every_registered_closed_form():
    assert PARAMS, "no algorithm has both a schedule and a closed form"
    covered = {(c[0], c[1]) for c in CASES}
    assert covered == set(PARAMS)


def test_engine_times_grow_with_size_and_latency():
    sched = build_schedule(Collective("allreduce", 8, 1 << 16), "ring")
    t1 = simulate(sched, ideal(8, ALPHA, BW)).time
    t2 = simulate(sched, ideal(8, 2 * ALPHA, BW)).time
    assert t2 - t1 == pytest.approx(2 * 7 * ALPHA)
    assert np.isfinite(t1) and t1 > 0
