"""The app's parts without Streamlit: symbolic cells, phases, layouts per builder, topology inputs, the explorer."""

import math

import numpy as np
import pytest

from app.explorer import engine_sizes, explore
from app.stepper import build_stepper, cell_label, cell_tooltip, picture_collective, rank_letter
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
