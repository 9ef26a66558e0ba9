"""The collective specs (simulator/ops.py) and the one schedule interpreter (simulator/interpret.py).

Expected values below are derived by hand from nccl's definitions, not read from the code.
"""

import re

import numpy as np
import pytest

from simulator import interpret
from simulator.algorithms import all_specs, build_schedule
from simulator.collective import OPS, REDUCING, ROOTED, TOTAL_SIZE_OPS, Collective, busbw_factor, normalize_op
from simulator.cost import LinkModel, lower_bound
from simulator.errors import CollsimError
from simulator.interpret import Contributors, Numbers, Origins
from simulator.ops import SPECS, OpSpec, Part, lookup
from simulator.schedule import ScheduleBuilder
from simulator.semantics import check, execute, expected_outputs, make_inputs
from simulator.validate import initially_defined


def _start(coll, rank, buf):
    return [(pt.off, pt.count) for pt in coll.spec.start(coll, rank, buf)]


# ---- the specs, op by op (p = 3, count 7 unless said: blocks 3, 2, 2 at offsets 0, 3, 5) ---------

def test_allgather():
    c = Collective("allgather", 3, 7, "int8")
    assert list(c.block_counts) == [3, 2, 2] and c.in_count == [3, 2, 2] and c.out_count == 7
    assert _start(c, 1, "out") == [(3, 2)] and _start(c, 1, "in") == [(0, 2)] and _start(c, 1, "scratch") == []
    assert c.busbw_factor == pytest.approx(2 / 3)
    want = [Part(0, 3, ((0, 0),)), Part(3, 2, ((1, 0),)), Part(5, 2, ((2, 0),))]
    assert all(c.spec.result(c, r) == want for r in range(3))
    assert c.spec.result_regions(c, 2) == [(0, 7)]


def test_allreduce():
    c = Collective("allreduce", 4, 10, "int8")
    assert c.in_count == [10] * 4 and _start(c, 3, "out") == [(0, 10)]
    assert c.spec.result(c, 2) == [Part(0, 10, ((0, 0), (1, 0), (2, 0), (3, 0)))]
    assert c.busbw_factor == pytest.approx(1.5) and c.spec.bandwidth_bound(4) == pytest.approx(1.5)


def test_reduce_scatter():
    c = Collective("reduce_scatter", 3, 7, "int8")
    assert c.in_count == [7, 7, 7] and _start(c, 0, "out") == [(0, 7)]
    assert c.spec.result(c, 2) == [Part(5, 2, ((0, 5), (1, 5), (2, 5)))]
    assert c.spec.result_regions(c, 0) == [(0, 3)]
    assert c.busbw_factor == pytest.approx(2 / 3)


def test_broadcast_starts_on_the_root_only():
    c = Collective("broadcast", 4, 6, "int8", root=2)
    assert _start(c, 2, "out") == [(0, 6)] and _start(c, 0, "out") == [] and _start(c, 0, "in") == []
    assert all(c.spec.result(c, r) == [Part(0, 6, ((2, 0),))] for r in range(4))
    assert c.busbw_factor == 1.0


def test_reduce_ends_on_the_root_only():
    c = Collective("reduce", 3, 5, "int8", root=1)
    assert c.spec.result_ranks(c) == [1] and c.spec.result(c, 0) == [] and c.spec.result_regions(c, 2) == []
    assert c.spec.result(c, 1) == [Part(0, 5, ((0, 0), (1, 0), (2, 0)))]
    assert all(_start(c, r, "out") == [(0, 5)] for r in range(3))


def test_alltoall():
    c = Collective("alltoall", 3, 7, "int8")  # 7 = 3 + 2 + 2: each rank keeps 3 for itself, 2 for each other rank
    assert [c.pair_count(1, d) for d in range(3)] == [2, 3, 2]
    assert _start(c, 1, "out") == [] and _start(c, 1, "in") == [(0, 7)]
    # rank 1 receives rank 0's elements 3..4 (rank 0 keeps 0..2), its own 2..4, rank 2's 2..3
    assert c.spec.result(c, 1) == [Part(0, 2, ((0, 3),)), Part(2, 3, ((1, 2),)), Part(5, 2, ((2, 2),))]
    assert list(c.spec.input_chunks(c, 1)) == [0, 0, 1, 1, 1, 2, 2]


def test_gather():
    c = Collective("gather", 3, 7, "int8", root=0)
    assert c.in_count == [3, 2, 2] and _start(c, 1, "out") == [(3, 2)]
    assert c.spec.result(c, 1) == [] and c.spec.result(c, 0)[1] == Part(3, 2, ((1, 0),))


def test_scatter():
    c = Collective("scatter", 3, 7, "int8", root=1)
    assert _start(c, 1, "in") == [(0, 7)] and _start(c, 0, "in") == [] and _start(c, 0, "out") == []
    assert c.spec.result(c, 2) == [Part(5, 2, ((1, 5),))]


def test_classification_and_names():
    assert set(ROOTED) == {"broadcast", "reduce", "gather", "scatter"}
    assert set(REDUCING) == {"allreduce", "reduce_scatter", "reduce"}
    assert set(TOTAL_SIZE_OPS) == {"allgather", "reduce_scatter", "alltoall", "gather", "scatter"}
    assert {n: s.msccl for n, s in SPECS.items()}["reduce_scatter"] == "reducescatter"
    assert {n: s.torch for n, s in SPECS.items()} == {
        "allreduce": "all_reduce", "allgather": "all_gather_into_tensor", "reduce_scatter": "reduce_scatter_tensor",
        "broadcast": "broadcast", "reduce": "reduce", "alltoall": "all_to_all_single", "gather": "gather", "scatter": "scatter"}
    for spelling, name in (("All-Reduce", "allreduce"), ("reducescatter", "reduce_scatter"), ("bcast", "broadcast"),
                           ("all_to_all", "alltoall")):
        assert normalize_op(spelling) == name
    with pytest.raises(CollsimError, match="^op: unknown collective 'allreduc'"):
        lookup("allreduc")


def test_bandwidth_bound_reads_the_spec():
    m = LinkModel(0.0, 1.0)
    assert lower_bound("allreduce", 4, [8.0], m)[0] == pytest.approx(12.0)
    assert lower_bound("broadcast", 4, [8.0], m)[0] == pytest.approx(8.0)
    assert lower_bound("alltoall", 4, [8.0], m)[0] == pytest.approx(6.0)


def test_initially_defined_reads_the_spec():
    s = build_schedule(Collective("allgather", 3, 7, "int8"), "ring")
    assert initially_defined(s, 1, "out") == [(3, 5)] and initially_defined(s, 2, "in") == [(0, 2)]


# ---- one interpreter, three kinds of values ------------------------------------------------------

ALGOS = all_specs()


@pytest.mark.parametrize("algo", ALGOS, ids=[f"{a.op}-{a.name}" for a in ALGOS])
def test_every_value_kind_agrees_with_the_spec(algo):
    for p in range(1, 10):
        if algo.refusal(p):
            continue
        coll = Collective(algo.op, p, 3 * p + 1, "int8", root=p // 2)
        sched = build_schedule(coll, algo.name)
        assert check(sched, seed=p).ok
        masks = interpret.run(sched, Contributors(p))
        origins = interpret.run(sched, Origins(coll))
        for rank in range(p):
            for part in coll.spec.result(coll, rank):
                region = slice(part.off, part.off + part.count)
                bits = sum(1 << s for s, _ in part.sources)
                assert set(masks[rank]["out"][region].tolist()) == {bits}, (algo.name, p, rank, part)
                for e, cell in enumerate(origins[rank]["out"][region]):
                    want = {(s, int(coll.spec.input_chunks(coll, s)[off + e])) for s, off in part.sources}
                    assert cell == want, (algo.name, p, rank, part, e)


def test_contributor_expected_matches_hand_sets():
    c = Collective("reduce_scatter", 3, 7, "int8")
    want = interpret.expected(c, Contributors(3))
    assert [(pt.off, list(v)) for pt, v in want[1]] == [(3, [7, 7])]


def test_numbers_execute_equals_expected_outputs_and_garbage_is_nan_outside():
    c = Collective("reduce_scatter", 3, 28, "float32")
    inputs = make_inputs(c, seed=3)
    state = execute(build_schedule(c, "ring"), inputs)
    total = inputs[0] + inputs[1] + inputs[2]
    assert np.array_equal(state[2]["out"][5:7], total[5:7])
    assert expected_outputs(c, inputs)[2][0][0] == 5
    fresh = Numbers(inputs, np.add).empty(0, "scratch", 4)
    assert np.isnan(fresh).all()


def test_narration_of_ring_allreduce():
    """Ring allreduce, p = 3: step k of the reduce-scatter half carries chunks holding k + 1 ranks, added in;
    the allgather half carries fully reduced chunks, stored."""
    c = Collective("allreduce", 3, 3, "int8")
    told = [(t, text) for t, text in interpret.narration(build_schedule(c, "ring")) if not t.local]
    assert len(told) == 12
    for t, text in told[:3]:
        assert text.startswith(f"rank {t.src} sends chunk ") and text.endswith(
            f", holding rank {t.src}, to rank {t.dst}, which adds it in")
    assert all(re.search(r"holding ranks \d(-|, )\d, to rank \d, which adds it in$", text) for _, text in told[3:6])
    assert all(text.endswith(f"holding ranks 0-2, to rank {t.dst}, which stores it") for t, text in told[6:])
    assert interpret.ranks_text((0, 2)) == "ranks 0, 2" and interpret.ranks_text((4,)) == "rank 4"


def test_steps_follow_dependencies():
    c = Collective("allreduce", 4, 8, "int8")
    s = build_schedule(c, "ring")
    order = interpret.dependency_order(s)
    pos = {t: i for i, t in enumerate(order)}
    assert sorted(order) == list(range(len(s.transfers)))
    assert all(pos[d] < pos[t.id] for t in s.transfers for d in t.deps)
    assert [s.transfers[i].step for i in order] == sorted(t.step for t in s.transfers)


# ---- adding a collective is one entry --------------------------------------------------------

def test_every_consumer_covers_every_op():
    from app.diagram import DRAWABLE_OPS, render_svg
    from simulator.formats.msccl_xml import MSCCL_OPS
    from verify.native import NATIVE_NAMES

    assert tuple(SPECS) == OPS
    assert set(NATIVE_NAMES) == set(OPS) and set(OPS) <= set(MSCCL_OPS)
    assert set(DRAWABLE_OPS) == set(OPS) - {"alltoall"}
    for op in OPS:
        coll = Collective(op, 4, 8, "int8", root=1)
        assert busbw_factor(op, 4) > 0 and lower_bound(op, 4, [8.0], LinkModel(1.0, 1.0))[0] > 0
        assert len(coll.in_count) == 4 and expected_outputs(coll, make_inputs(coll))
        assert any(a.op == op for a in ALGOS)
        if op in DRAWABLE_OPS:
            assert "<svg" in render_svg(build_schedule(coll, next(a.name for a in ALGOS if a.op == op)))


def test_a_new_collective_is_one_entry(monkeypatch):
    """A root-less gather of blocks to every rank, declared once, works in Collective, semantics and pictures."""
    from app.diagram import render_svg

    entry = OpSpec(name="allgather_copy", send="block", recv="full", senders="all", receivers="all", reduces=False,
                   bus_factor=lambda p: (p - 1) / p, torch="all_gather_into_tensor", torch_args=lambda a: (a.recv, a.send),
                   msccl="allgather", program_default="direct")
    monkeypatch.setitem(SPECS, entry.name, entry)
    c = Collective("allgather_copy", 3, 6, "int8")
    assert c.in_count == [2, 2, 2] and c.busbw_factor == pytest.approx(2 / 3)
    b = ScheduleBuilder(c, "direct")
    for src in range(3):
        for dst in range(3):
            if src != dst:
                b.copy(src, dst, "out", 2 * src, 2)
    sched = b.build()
    assert check(sched).ok
    assert "<svg" in render_svg(sched)
    b2 = ScheduleBuilder(c, "broken")
    b2.copy(0, 1, "out", 0, 2)
    assert not check(b2.build()).ok


def test_contributors_beyond_64_ranks_use_python_ints():
    p = 66
    c = Collective("allgather", p, p, "int8")
    state = interpret.run(build_schedule(c, "ring"), Contributors(p))
    assert [int(x) for x in state[5]["out"]] == [1 << r for r in range(p)]
