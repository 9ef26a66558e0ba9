"""NCCL's PAT allgather and reduce-scatter: proven on numpy buffers, peers at +-2^d, message counts, closed form vs engine."""

import math

import pytest

from simulator.algorithms import build_schedule
from simulator.algorithms.pat import message_count
from simulator.collective import Collective
from simulator.cost import LinkModel, engine_times, is_exact, predict
from simulator.semantics import check

OPS = ("allgather", "reduce_scatter")
RANKS = list(range(1, 34)) + [64]


@pytest.mark.slow
@pytest.mark.parametrize("op", OPS)
def test_numpy_check_every_rank_count_and_aggregation(op):
    for p in RANKS:
        for aggregate in (None, 1, 2, 3, 7):
            for nbytes in (0, 1, 97, 3 * p + 1, 40 * p):
                coll = Collective(op, p, nbytes, "int8")
                result = check(build_schedule(coll, "pat", aggregate=aggregate), seed=p * 131 + nbytes)
                assert result.ok, (p, aggregate, nbytes, result.message)


@pytest.mark.parametrize("op", OPS)
def test_peers_are_at_powers_of_two_and_farthest_first_for_allgather(op):
    for p in (5, 8, 13, 16):
        schedule = build_schedule(Collective(op, p, 64 * p, "int8"), "pat")
        sign = -1 if op == "allgather" else 1  # NCCL: allgather sends to r - 2^d, reduce-scatter to r + 2^d
        dims = []
        for t in schedule.transfers:
            dist = (sign * (t.dst - t.src)) % p
            assert dist & (dist - 1) == 0, (p, t)
            dims.append(dist)
        steps = [d for i, d in enumerate(dims) if i == 0 or d != dims[i - 1]]
        assert steps == sorted(set(dims), reverse=op == "allgather")  # one run per dimension, in order
        # every rank sends ceil(lg p) messages and (p-1) blocks' bytes, like Bruck
        assert (schedule.sends_per_rank() == math.ceil(math.log2(p))).all()
        assert (schedule.bytes_sent_per_rank() == (p - 1) * 64).all()


def test_message_counts():
    # c_d = #{i : 2^d (2i+1) < p}; p = 6: dimension 2 carries 1 block, 1 carries 1, 0 carries 3
    assert [message_count(6, a) for a in (None, 1, 2, 3)] == [3, 5, 4, 3]
    for p in (2, 7, 16, 33, 100, 1024):
        assert message_count(p) == math.ceil(math.log2(p)) and message_count(p, 1) == p - 1
    for p in (12, 64):
        schedule = build_schedule(Collective("allgather", p, 8 * p, "int8"), "pat", aggregate=2)
        assert (schedule.sends_per_rank() == message_count(p, 2)).all()


@pytest.mark.parametrize("op", OPS)
def test_closed_form_equals_the_engine_on_ideal_where_exact(op):
    exact = 0
    for p in (2, 3, 4, 5, 6, 7, 8, 12, 13, 16, 24, 32):
        for aggregate in (None, 1, 2, 3):
            for gamma in (0.0, 3e-11):
                model = LinkModel.from_bandwidth(2e-6, 25e9, gamma)
                sizes = [4 * p * 840 * k for k in (1, 37)]  # even splits
                engine = engine_times(op, "pat", p, sizes, model, aggregate=aggregate)
                form = predict(op, "pat", p, sizes, model, aggregate=aggregate)
                if is_exact(op, "pat", p, model, aggregate=aggregate):
                    exact += 1
                    assert form == pytest.approx(engine, rel=1e-9), (p, aggregate, gamma)
                else:  # an upper bound, not far above
                    assert all(e <= f * (1 + 1e-9) and f <= 1.6 * e for e, f in zip(engine, form)), (p, aggregate)
    assert exact >= 50


def test_latency_is_logarithmic_and_bandwidth_is_the_rings():
    m = LinkModel.from_bandwidth(2e-6, 25e9)
    p = 1024
    for op in OPS:
        small = float(predict(op, "pat", p, [1024], m)[0])
        assert small == pytest.approx(10 * 2e-6 + 1023 / 1024 * 1024 / 25e9)
        assert small < float(predict(op, "ring", p, [1024], m)[0]) / 50
        big = 2.0**33  # the same bytes as the ring; only p - 1 - lg p fewer latencies
        ring = float(predict(op, "ring", p, [big], m)[0])
        assert float(predict(op, "pat", p, [big], m)[0]) == pytest.approx(ring - (p - 1 - 10) * 2e-6, rel=1e-12)


def test_message_count_formula_equals_the_schedule_layout():
    from simulator.algorithms.pat import _messages, step_blocks

    for p in range(1, 300):
        for aggregate in (None, 1, 2, 3, 5, 64):
            assert message_count(p, aggregate) == sum(len(m) for _, m in _messages(p, aggregate)), (p, aggregate)
        assert sum(len(step_blocks(p, d)) for d in range(max(p - 1, 1).bit_length())) == p - 1
