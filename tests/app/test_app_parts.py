"""The app's parts without Streamlit: symbolic cells, phases, layouts per builder, topology inputs, the explorer."""

import math

import numpy as np
import pytest

from app.explorer import engine_sizes, explore
from app.stepper import build_stepper, cell_label, cell_tooltip, grid_html, picture_collective, rank_letter
from app.topofig import layout
from app.ui.inputs import link_model, topology_input
from simulator.algorithms import build_schedule
from simulator.errors import CollsimError
from simulator.topology import parse_topology


def test_cell_labels():
    assert cell_label(frozenset()) == ""
    assert cell_label(frozenset({(0, 2)})) == "A2"
    assert cell_label(frozenset({(0, 1), (2, 1), (1, 1)})) == "A1+B1+C1"
    assert cell_label(frozenset({(r, 0) for r in range(4)})) == "Σ0..3"
    assert cell_label(frozenset({(r, 0) for r in (0, 1, 2, 3, 6)})) == "Σ0..3,6"
    assert cell_tooltip(frozenset({(r, 0) for r in range(4)})) == "chunk 0 from ranks 0-3"
    assert [rank_letter(r) for r in (0, 25, 26, 31)] == ["A", "Z", "a", "f"]


def test_ring_allreduce_phases_and_final_state():
    p = 5
    stepper = build_stepper(build_schedule(picture_collective("allreduce", p), "ring"))
    assert stepper.num_steps == 2 * (p - 1)
    assert stepper.phases[1:] == ["reduce-scatter"] * (p - 1) + ["all-gather"] * (p - 1)
    assert (stepper.counts(stepper.num_steps) == p).all()
    assert (stepper.counts(0) == 1).all()  # every rank starts with its own data in every column
    assert all(len(m) == p for m in stepper.moves[1:])  # one message per rank per step


def test_chunks_widen_the_grid_and_alltoall_moves_each_block_to_its_owner():
    stepper = build_stepper(build_schedule(picture_collective("allgather", 4, chunks=3), "ring", chunks=3))
    assert stepper.states[0].shape == (4, 12)
    a2a = build_stepper(build_schedule(picture_collective("alltoall", 4), "direct"))
    final = a2a.states[-1]
    for r in range(4):
        for c in range(4):
            assert final[r, c] == frozenset({(c, r)})  # rank r's block c comes from rank c (its block for r)


def test_picture_bounds_are_stated():
    with pytest.raises(CollsimError, match="1..32"):
        picture_collective("allreduce", 33)
    with pytest.raises(CollsimError, match="limit of 256"):
        picture_collective("allreduce", 32, chunks=9)


def test_layouts_follow_the_builder():
    ring = layout(parse_topology("ring:8"))
    radii = {round(math.hypot(*xy), 9) for xy in ring.values()}
    assert radii == {1.0}  # on a circle
    torus = parse_topology("torus:2x3")
    pos = layout(torus)
    assert sorted({pos[i] for i in range(6)}) == sorted((float(b), float(-a)) for a in range(2) for b in range(3))
    sw = parse_topology("switch:6")
    assert layout(sw)[sw.node_names.index("switch")] == (0.0, 0.0)  # the hub in the middle
    cl = parse_topology("cluster:nodes=2,gpus=4")
    pos = layout(cl)
    node0 = np.array([pos[cl.node_names.index(f"n0g{g}")] for g in range(4)])
    node1 = np.array([pos[cl.node_names.index(f"n1g{g}")] for g in range(4)])
    assert np.linalg.norm(node0.mean(0) - node1.mean(0)) > 2 * np.abs(node0 - node0.mean(0)).max()  # grouped apart


def test_topology_input():
    assert topology_input("ring", 6).name == "ring:6"
    assert topology_input("torus", 6).num_devices == 6
    assert topology_input("dgx-h100", 8).num_devices == 8
    with pytest.raises(CollsimError, match="fewer than the 9 ranks"):
        topology_input("dgx-h100", 9)
    with pytest.raises(CollsimError, match="not a topology the app builds"):
        topology_input("some/file.yaml", 4)


def test_explorer_regimes_and_engine_sizes():
    model = link_model("2us", "25GB/s")
    ex = explore("allreduce", 8, [1024, 1 << 30], model)
    assert ex.latency_bound == [True, False]
    assert engine_sizes(list(range(100)), 6) == [0, 20, 40, 59, 79, 99]


def test_leaf_spine_is_drawn_in_rows_and_node_nics_do_not_hide_the_switch():
    ft = parse_topology("fat_tree:hosts=8,leaf=4")
    pos = layout(ft)
    rows = {kind: {pos[i][1] for i, n in enumerate(ft.node_names) if n.startswith(kind)} for kind in ("gpu", "leaf", "spine")}
    assert rows == {"gpu": {0.0}, "leaf": {1.5}, "spine": {3.0}}
    cl = parse_topology("cluster:nodes=3,gpus=2,nic=node")
    assert len(set(layout(cl).values())) == cl.num_nodes  # no two nodes drawn on top of each other


def test_sentences_name_what_moves_and_what_the_receiver_does():
    ring = build_stepper(build_schedule(picture_collective("allreduce", 4), "ring"))
    # step 2 of a ring reduce-scatter: rank 1 forwards chunk 3, which holds ranks 0 and 1, to rank 2 (worked by hand)
    assert "rank 1 sends chunk 3, holding ranks 0-1, to rank 2, which adds it in" in [m.sentence for m in ring.moves[2]]
    assert ring.moves[5][0].sentence.endswith("which stores it")  # all-gather: copies
    broadcast = build_stepper(build_schedule(picture_collective("broadcast", 8), "scatter_allgather"))
    assert broadcast.phases[1:] == ["scatter"] * 3 + ["all-gather"] * 7


# ---- what-if: the engine lower bound that lets the page skip algorithms that cannot win -------------------------

BOUND_MACHINES = ["switch:8", "ring:8", "torus:2x4", "cluster:nodes=2,gpus=4,net_bw=12GB/s", "dgx-h100"]


def test_lower_bound_of_one_message_is_its_latency_plus_bytes_over_bandwidth():
    from simulator.collective import Collective
    from simulator.engine.bound import lower_bound
    from simulator.topology import ideal

    # broadcast on 2 ranks: one message of 1 MiB from the root, alpha 3 us, 10 GB/s
    schedule = build_schedule(Collective("broadcast", 2, 1 << 20, "int8"), "binomial")
    assert lower_bound(schedule, ideal(2, 3e-6, 10e9)) == pytest.approx(3e-6 + (1 << 20) / 10e9, rel=1e-12)


@pytest.mark.parametrize("machine", BOUND_MACHINES)
def test_lower_bound_never_exceeds_the_engine(machine):
    from simulator.algorithms import get, names_for
    from simulator.collective import OPS, Collective
    from simulator.engine import EngineOptions, simulate
    from simulator.engine.bound import lower_bound

    topo = parse_topology(machine)
    p = topo.num_devices
    for options in (EngineOptions(), EngineOptions(ports=2, gamma=1e-10, background={0: 0.5}), EngineOptions(ports=0)):
        for op in OPS:
            for name in names_for(op):
                if get(op, name).refusal(p):
                    continue
                for n in (4096, 1 << 22):
                    schedule = build_schedule(Collective(op, p, n, "int8"), name)
                    bound = lower_bound(schedule, topo, options)
                    assert 0 < bound <= simulate(schedule, topo, options).time * (1 + 1e-9), (op, name, n, options)


@pytest.mark.parametrize("machine", BOUND_MACHINES)
def test_whatif_best_time_is_the_fastest_of_every_algorithm_run(machine):
    from app.ui.whatif_model import best_time
    from simulator.algorithms import get, names_for
    from simulator.collective import OPS, Collective
    from simulator.engine import simulate

    topo = parse_topology(machine)
    p = topo.num_devices
    for op in OPS:
        for n in (1024, 1 << 20, 1 << 28):
            every = [(simulate(build_schedule(Collective(op, p, n, "int8"), a), topo).time, a)
                     for a in names_for(op) if not get(op, a).refusal(p)]
            assert best_time(machine, op, n) == min(every), (op, n)


@pytest.mark.parametrize("machine, ops", [("dgx-h100", ["allreduce", "reduce_scatter"]), ("hgx-b200:nodes=2", ["allgather"])])
def test_whatif_nccl_rows_are_what_predict_says(machine, ops):
    from app.ui.whatif_model import nccl_rows
    from simulator.nccl.predict import predict

    sizes = [64 << 10, 16 << 20]
    rows = nccl_rows(machine, ops, sizes)
    assert [(r["op"], r["bytes"]) for r in rows] == [(op, n) for op in ops for n in sizes]
    topo = parse_topology(machine)
    p = topo.num_devices
    for op in ops:
        for row, want in zip([r for r in rows if r["op"] == op], predict(topo, op, sizes)):
            assert row["machine"] == machine and row["ranks"] == p
            assert row["time (us)"] == pytest.approx(want.time_s * 1e6, rel=1e-12)
            assert (row["NCCL algorithm"], row["protocol"], row["channels"], row["best algorithm"]) == (
                want.nccl_algo, want.proto, want.channels, want.algorithm)
            factor = 2 * (p - 1) / p if op == "allreduce" else (p - 1) / p  # nccl-tests' busbw factors
            assert row["busbw (GB/s)"] == pytest.approx(want.bytes / want.time_s * factor / 1e9, rel=1e-12)


@pytest.mark.parametrize("machine, ops, sizes, field, quoted", [
    ("dgx-h100", ["allreduce", "alltoall"], [4096], "collectives", "'alltoall' is not timed as NCCL runs it"),
    ("cluster:nodes=2,gpus=8", ["allreduce"], [4096], "machine", "'cluster:nodes=2,gpus=8'"),
    ("mi300x", ["allgather"], [4096], "machine", "'mi300x'"),
    ("dgx-h100", ["allreduce"], [1001], "sizes", "1001 bytes"),
])
def test_whatif_nccl_rows_refuse_what_predict_does_not_time(machine, ops, sizes, field, quoted):
    from app.ui.whatif_model import nccl_rows

    with pytest.raises(CollsimError) as err:
        nccl_rows(machine, ops, sizes)
    text = str(err.value)
    assert text.startswith(f"{field}: ") and quoted in text
    if field != "sizes":  # names what is accepted, and the other way to time it
        assert ("allreduce, allgather, reduce_scatter" if field == "collectives" else "dgx-h100") in text
        assert "best collsim algorithm" in text


def test_bruck_alltoall_scratch_shows_the_blocks_in_transit():
    p = 8
    stepper = build_stepper(build_schedule(picture_collective("alltoall", p), "bruck"))
    assert stepper.num_steps == 3 and stepper.scratch[0].shape == (p, 2 * p)

    def held(i, r):
        return {pair for cell in stepper.scratch[i][r] for pair in cell}

    for r in range(p):
        # by hand (block (o, d) goes from rank o to rank d): after step 1 rank r holds what rank r-1 sent 3, 5 and 7
        # ranks forward; after step 2, the blocks that still need the 4-rank hop to r+4, from r-1, r-2 and r-3
        assert held(1, r) == {((r - 1) % p, (r + 2) % p), ((r - 1) % p, (r + 4) % p), ((r - 1) % p, (r + 6) % p)}
        assert held(2, r) == {((r - k) % p, (r + 4) % p) for k in (1, 2, 3)}
        assert held(3, r) == set()
    # the output grid is half empty in the middle, which is why the scratch is shown
    assert sum(bool(c) for c in stepper.states[2].flat) == 4 * p
    assert grid_html(stepper, 2, buffer="scratch").count('class="cell k') == p * 2 * p
    # schedules without scratch have none to show
    assert build_stepper(build_schedule(picture_collective("allreduce", 4), "ring")).scratch == []
