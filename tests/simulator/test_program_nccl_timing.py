"""Program calls timed as NCCL runs them (timing='nccl'): each expected time is a direct `predict` call made here."""

from __future__ import annotations

from collections import Counter

import pytest

from simulator.engine import EngineOptions
from simulator.errors import CollsimError
from simulator.nccl.predict import predict
from simulator.program import program_from_dict
from simulator.program.isolated import ENGINE, NCCL, IsolatedTimes
from simulator.program.model import Op
from simulator.program.nccl_timing import check_timing, nccl_machine, placement
from simulator.program.run import run_program
from simulator.topology import ideal, parse_topology
from simulator.topology.presets import NETWORKS

MiB = 1 << 20


def times(spec: str, timing: str = "nccl") -> IsolatedTimes:
    return IsolatedTimes(parse_topology(spec), EngineOptions(), {}, 8, timing=timing)


def direct(spec: str, op: str, nbytes: int, ranks: int, per_node: int | None = None, dtype: str = "bfloat16") -> float:
    return predict(parse_topology(spec), op, [nbytes], ranks=ranks, ranks_per_node=per_node, dtype=dtype)[0].time_s


def test_a_call_across_nodes_takes_predicts_time():
    t = times("dgx-h100:nodes=2")
    seconds, name = t(Op("allreduce", nbytes=25 * MiB, group="dp"), tuple(range(16)))
    assert seconds == direct("dgx-h100:nodes=2", "allreduce", 25 * MiB, 16, 8)
    assert name.startswith("nccl ") and t.methods[NCCL] == 1 and t.calls == {NCCL: 1, ENGINE: 0, "closed form": 0}


@pytest.mark.parametrize("op", ["allgather", "reduce_scatter"])
def test_allgather_and_reduce_scatter_pass_the_whole_buffer(op):
    # a program's size and predict's are both nccl-tests' (the whole buffer for these ops): passed unchanged. The
    # per-rank shard or 16 x the buffer would be another time, so the test tells them apart.
    whole = 64 * MiB
    seconds, _ = times("dgx-h100:nodes=2")(Op(op, nbytes=whole, group="dp"), tuple(range(16)))
    assert seconds == direct("dgx-h100:nodes=2", op, whole, 16, 8)
    assert seconds != direct("dgx-h100:nodes=2", op, whole // 16, 16, 8)
    assert seconds != direct("dgx-h100:nodes=2", op, whole * 16, 16, 8)


def test_one_node_members_anywhere_on_the_node_take_predicts_time_on_that_many_gpus():
    t = times("dgx-h100:nodes=2")
    op = Op("allreduce", nbytes=32 * MiB, group="tp")
    expected = direct("dgx-h100:nodes=2", "allreduce", 32 * MiB, 4)
    for members in [(0, 1, 2, 3), (4, 5, 6, 7), (9, 11, 13, 15)]:  # NVSwitch: any four GPUs of a node alike
        assert t(op, members)[0] == expected
    assert t.methods[NCCL] == 1 and t.calls[NCCL] == 3  # one shape, timed once


def test_one_gpu_per_node_is_ranks_per_node_one():
    seconds, _ = times("dgx-h100:nodes=2")(Op("allreduce", nbytes=8 * MiB, group="dp"), (3, 11))
    assert seconds == direct("dgx-h100:nodes=2", "allreduce", 8 * MiB, 2, 1)


def test_gpus_sharing_nics_count_only_when_they_spread_over_the_nics_as_gpus_0_to_k():
    # p4de: two GPUs per NIC. GPUs 0..3 of each node use NICs 0 and 1 (two GPUs each); so do 4..7 (NICs 2, 3), and
    # 1, 0, 3, 2. GPUs 0, 2, 4, 6 use four NICs, one GPU each: not what predict places, so timed on the links.
    t = times("p4de:nodes=2")
    op = Op("allgather", nbytes=64 * MiB, group="g")
    expected = direct("p4de:nodes=2", "allgather", 64 * MiB, 8, 4)
    assert t(op, (0, 1, 2, 3, 8, 9, 10, 11))[0] == expected
    assert t(op, (4, 5, 6, 7, 12, 13, 14, 15))[0] == expected
    assert t(op, (1, 0, 3, 2, 9, 8, 11, 10))[0] == expected
    spread, name = t(op, (0, 2, 4, 6, 8, 10, 12, 14))
    assert not name.startswith("nccl") and spread != expected
    assert t.calls == {NCCL: 3, ENGINE: 1, "closed form": 0}


def test_without_an_nvswitch_only_the_gpus_predict_places_on_count():
    t = times("pcie-8gpu")
    op = Op("allreduce", nbytes=4 * MiB, group="g", dtype="float32")
    assert t(op, (0, 1))[0] == direct("pcie-8gpu", "allreduce", 4 * MiB, 2, dtype="float32")
    assert not t(op, (2, 3))[1].startswith("nccl")  # behind another PCIe switch: timed on the links
    assert t.calls[NCCL] == 1 and t.calls[ENGINE] == 1


def test_what_predict_does_not_cover_is_timed_on_the_links():
    links = times("dgx-h100:nodes=2", "links")
    t = times("dgx-h100:nodes=2")
    cases = [
        (Op("alltoall", nbytes=16 * MiB, group="ep"), tuple(range(16))),      # an op NCCL's model has no table for
        (Op("broadcast", nbytes=16 * MiB, group="g", root=0), (0, 1, 2, 3)),
        (Op("allreduce", nbytes=16 * MiB, group="odd"), (0, 1, 2, 8)),         # 3 members on one node, 1 on the other
    ]
    for op, members in cases:
        assert t(op, members) == links(op, members)
    assert t.calls == {NCCL: 0, ENGINE: 3, "closed form": 0} and t.methods[NCCL] == 0
    machine = IsolatedTimes(ideal(8, 1e-6, 10e9), EngineOptions(), {}, 8, timing="nccl")  # not a preset NCCL knows
    assert machine(Op("allreduce", nbytes=MiB, group="g"), tuple(range(8)))[1] == "ring"
    assert machine.calls[ENGINE] == 1


def prog(world: int, groups: dict, ops: list[dict]):
    return program_from_dict({"world": world, "groups": groups, "ranks": {f"0-{world - 1}": ops}}, source="test")


def test_run_program_counts_the_calls_each_way_and_auto_runs_isolated():
    program = prog(16, {"all": list(range(16))}, [
        {"op": "compute", "time": "1ms"},
        *[{"op": "allreduce", "group": "all", "size": "4MiB"}] * 3,
        {"op": "alltoall", "group": "all", "size": "4MiB"},
    ])
    topo = parse_topology("dgx-h100:nodes=2")
    r = run_program(program, topo, timing="nccl")
    assert r.mode == "symmetric" and r.timing == "nccl"
    assert r.totals()["timed"] == {NCCL: 3, ENGINE: 1, "closed form": 0}
    one = direct("dgx-h100:nodes=2", "allreduce", 4 * MiB, 16, 8)
    alltoall = IsolatedTimes(topo, EngineOptions(), {}, 8)(program.ops(0)[-1], tuple(range(16)))[0]
    assert r.step_time == pytest.approx(1e-3 + 3 * one + alltoall, abs=4e-12)  # each call rounded to 1 ps
    assert run_program(program, topo).totals()["timed"] == {}  # links, auto: exact here, no call timed alone


def test_timing_values_and_modes():
    with pytest.raises(CollsimError, match=r"^timing: 'fast'; expected one of links, nccl, measured$"):
        check_timing("fast")
    with pytest.raises(CollsimError, match=r"^mode: 'exact' with timing 'nccl'"):
        run_program(prog(2, {"g": [0, 1]}, [{"op": "allreduce", "group": "g", "size": "1MiB"}]),
                    parse_topology("dgx-h100"), mode="exact", timing="nccl")
    assert check_timing("nccl", "auto") == "isolated" and check_timing("links", "auto") == "auto"
    with pytest.raises(CollsimError, match=r"^algo: allreduce=hierarchical with timing 'nccl': NCCL picks"):
        run_program(prog(2, {"g": [0, 1]}, [{"op": "allreduce", "group": "g", "size": "1MiB"}]),
                    parse_topology("dgx-h100"), algorithms={"allreduce": "hierarchical"}, timing="nccl")
    # ops NCCL's model does not time keep their forced algorithm; links timing takes any
    assert check_timing("nccl", "isolated", {"broadcast": "binomial"}) == "isolated"
    assert check_timing("links", "auto", {"allreduce": "hierarchical"}) == "auto"


def test_ddp_step_on_two_h100_nodes_nccl_against_the_links():
    """DDP llama2-7b on dgx-h100:nodes=2: NCCL's rings use every NIC, the links' flat ring one NIC per node boundary."""
    from simulator.program.scenarios import build_spec, generate

    program = generate(build_spec("ddp", "llama2-7b", "h100", 16))
    topo = parse_topology("dgx-h100:nodes=2")
    nccl, links = (run_program(program, topo, timing=t, mode="isolated").totals() for t in ("nccl", "links"))
    buckets = [op for op in program.ops(0) if op.is_collective]
    assert {op.op for op in buckets} == {"allreduce"} and nccl["timed"] == {NCCL: len(buckets), ENGINE: 0, "closed form": 0}
    # one comm stream: the calls run one after another, so communication is the sum of predict's times
    sizes = Counter(op.nbytes for op in buckets)  # 25 MiB buckets and the last, partly filled one
    expected = sum(n * direct("dgx-h100:nodes=2", "allreduce", size, 16, 8) for size, n in sizes.items())
    assert nccl["comm_s"] == pytest.approx(expected, abs=len(buckets) * 1e-12)  # each call rounded to 1 ps
    # the flat ring crosses each node boundary on one 400G NIC: every bucket moves 2(p-1)/p of its bytes through it,
    # a floor above NCCL's time for the bucket, so the links expose more
    nic = NETWORKS["ib400"][0]
    floor = sum(2 * 15 / 16 * op.nbytes / nic for op in buckets)
    assert links["comm_s"] >= floor > nccl["comm_s"]
    assert links["exposed_s"] > nccl["exposed_s"] > 0
    assert nccl["max_compute_s"] == links["max_compute_s"]


def test_an_empty_call_costs_nothing_under_nccl_timing():
    # NCCL discards a collective of count 0 (src/enqueue.cc, taskAppend: "Empty collectives can be discarded."):
    # predict's latency floor (microseconds) would be charged for a call NCCL never launches
    t, links = times("dgx-h100:nodes=2"), times("dgx-h100:nodes=2", "links")
    for op, members in [("allreduce", tuple(range(16))), ("allgather", (0, 1, 2, 3)), ("reduce_scatter", (2, 10))]:
        call = Op(op, nbytes=0, group="g")
        assert t(call, members) == (0.0, "nccl discarded")
        assert links(call, members)[0] > 0  # the links' algorithms still take their steps' latencies
    assert t.calls[NCCL] == 3
    program = prog(16, {"all": list(range(16))}, [
        {"op": "compute", "time": "1ms"}, {"op": "allreduce", "group": "all", "size": 0},
        {"op": "allreduce", "group": "all", "size": "1MiB"}])
    r = run_program(program, parse_topology("dgx-h100:nodes=2"), timing="nccl")
    one = direct("dgx-h100:nodes=2", "allreduce", MiB, 16, 8)
    assert r.step_time == pytest.approx(1e-3 + one, abs=2e-12)


def test_hybrid_step_call_shapes_as_the_whatif_page_lists_them():
    """benchmarks/step_timing.py's hybrid breakdown (docs/whatif.md): TP 8 x DP 2 on dgx-h100:nodes=2."""
    from benchmarks.step_timing import call_shapes

    shapes = {(c["group"], c["bytes"]): c for c in call_shapes("hybrid", "dgx-h100:nodes=2")}
    tp = shapes[("tp", 32 * MiB)]  # one per attention and MLP block, forward and backward: 4 x 32 layers
    assert (tp["calls"], tp["ranks"], tp["nodes"], tp["stream"]) == (128, 8, 1, "compute")
    assert tp["nccl_s"] == pytest.approx(direct("dgx-h100:nodes=2", "allreduce", 32 * MiB, 8), abs=2e-12)
    # the links' ring of 8 moves 2(p-1)/p of the bytes through each GPU's 450 GB/s NVLink, no protocol cost
    assert 2 * 7 / 8 * 32 * MiB / 450e9 < tp["links_s"] < tp["nccl_s"]
    dp = shapes[("dp", 25 * MiB)]
    assert (dp["ranks"], dp["nodes"], dp["stream"]) == (2, 2, "comm")
    assert dp["nccl_s"] == pytest.approx(direct("dgx-h100:nodes=2", "allreduce", 25 * MiB, 2, 1), abs=2e-12)
    assert 25 * MiB / NETWORKS["ib400"][0] < dp["links_s"]  # a ring of 2 through one 400G NIC: n / B at least


def test_default_timing_rule():
    """nccl exactly when NCCL's model knows every machine and no option it refuses was given; an asked-for timing
    is kept; the why names the machine or the option that decided."""
    from simulator.program.nccl_timing import AUTO, choose_timing, default_timing, nccl_conflicts

    assert default_timing(["dgx-h100:nodes=8,net=ib400", "p5:nodes=2", "hgx-b200"]).timing == "nccl"
    links = default_timing(["dgx-h100", "switch:8"])
    assert links.timing == "links" and "'switch:8' is not a preset NCCL's model knows" in links.why
    assert default_timing(["dgx-h100", "moon:3"]).timing == "links"  # unparseable: the run reports it
    assert default_timing([]).timing == "links"
    assert nccl_conflicts("exact", {"allreduce": "ring", "broadcast": "binomial", "alltoall": "pairwise"}) == [
        "--mode exact", "--algo allreduce=ring"]
    assert nccl_conflicts("auto", {"broadcast": "binomial"}) == []
    given = default_timing(["dgx-h100"], ["--mode exact"])
    assert given.timing == "links" and given.why.startswith("links: --mode exact given")
    assert choose_timing("links", ["dgx-h100"]).timing == "links"
    assert choose_timing("nccl", ["switch:8"], ["--mode exact"]).timing == "nccl"  # check_timing refuses it later
    assert choose_timing(AUTO, ["dgx-h100"]).timing == "nccl"
    with pytest.raises(CollsimError, match=r"^timing: 'fast'; expected one of auto, links, nccl$"):
        choose_timing("fast", ["dgx-h100"])


def test_whole_nodes_are_placed_as_predict_places_them():
    # every GPU of each node: predict's default placement (no ranks_per_node), the one on which a whole machine may be
    # timed on a few nodes and scaled (simulator/nccl/symmetry.py); same times as K = 8 per node (the test above)
    machine = nccl_machine(parse_topology("dgx-h100:nodes=4"))
    op = Op("allreduce", nbytes=MiB, group="dp")
    assert placement(machine, op, tuple(range(32))) == (32, None)
    assert placement(machine, op, tuple(range(8, 24))) == (16, None)
    assert placement(machine, op, (0, 1, 2, 3, 8, 9, 10, 11)) == (8, 4)
    assert placement(machine, op, (0, 1, 2, 3)) == (4, None)  # one node
