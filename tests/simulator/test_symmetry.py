"""predict on many nodes, scaled from a few (simulator/nccl/symmetry.py): the scaled answer against the full engine run.

The reduction is used only where its three instances agree; these tests are what shows that the answer is then the
full run's. The default set is small (2 cores); COLLSIM_SYMMETRY_MATRIX=1 runs the whole matrix: every multi-node
machine preset NCCL's model knows, at node counts where the reduction applies (25, 33, 64 nodes; 64 for p4de, whose
leaves take 8 nodes; 6 and 7 racks of gb200-nvl72), allreduce, allgather and reduce_scatter at 4 KiB, 1 MiB, 64 MiB
and 1 GiB.
"""

from __future__ import annotations

import json
import os

import pytest

from app.cli import main
from simulator.errors import CollsimError
from simulator.nccl.predict import machine_of, nvls_tree_engine, nvls_tree_pieces, predict
from simulator.nccl.result import Prediction
from simulator.nccl.symmetry import (
    AGREE,
    MAX_GPUS,
    PROVEN,
    Reduced,
    check_budget,
    extrapolate,
    fabric_period,
    is_preset_as_built,
    ring_nodes,
    tree_nodes,
)
from simulator.nccl.tuning import predict_times
from simulator.topology.presets import MACHINE_PRESETS, PRESETS
from simulator.topology.spec import parse_topology

SIZES = [4096, 1 << 20, 64 << 20, 1 << 30]
OPS = ("allreduce", "allgather", "reduce_scatter")
MULTINODE = [name for name in MACHINE_PRESETS if PRESETS[name].multinode and PRESETS[name].machine.nics_per_node]
NODES = {"p4de": (64,), "gb200-nvl72": (6, 7)}  # leaves of 8 nodes; racks of 72 GPUs (one leaf each)


def compare(spec: str, op: str, sizes: list[int], algo: str | None = None) -> list[str]:
    """Every row against the full engine run: a row scaled from fewer nodes within 1%, any other one equal; the rows'
    notes ("" for a full run)."""
    topology = parse_topology(spec)
    scaled = predict(topology, op, sizes, algo=algo)
    full = predict(topology, op, sizes, symmetry=False, algo=algo)
    notes = []
    for s, f in zip(scaled, full):
        assert not f.reduced
        assert (s.bytes, s.count, s.nccl_algo, s.proto, s.algorithm, s.channels) == \
            (f.bytes, f.count, f.nccl_algo, f.proto, f.algorithm, f.channels)
        if s.reduced:
            assert "NOT PROVEN" not in s.reduced  # within the budget the full run is taken instead
            assert s.time_s == pytest.approx(f.time_s, rel=0.01), (spec, op, s.bytes, s.reduced)
        else:
            assert s.time_s == f.time_s
        notes.append(s.reduced)
    return notes


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["dgx-h100", "p5"])
def test_nccl_tree_scaled_from_fewer_nodes_matches_the_full_run(preset):
    # NCCL's tree across nodes (nccl_tree) on 64 = 2^6 nodes: timed on 8, 16 and 32 nodes with the full machine's
    # chunks, affine in log2 nodes; NCCL's tree forced (else its alternative, a ring, is timed too, and a ring is not
    # scaled within the budget: the full run is taken for both)
    assert compare(f"{preset}:nodes=64", "allreduce", [4096, 1 << 20], algo="Tree") == [
        "engine on 8/16/32 nodes, affine in log2 nodes, scaled to 64"] * 2
    # on 25 nodes no instance window fits below the machine (8, 16, 32 needs more than 32 nodes): the full run
    assert compare("dgx-h100:nodes=25", "allreduce", [4096], algo="Tree") == [""]


def test_nccl_tree_off_a_power_of_two_takes_the_full_run():
    # 1000 nodes is not a power of two, so the scaled tree is not proven; a tree's chunks keep its full run within the
    # engine's budget (TREE_MAX_TRANSFERS), so the full run is the answer
    row = predict(parse_topology("dgx-h100:nodes=1000"), "allreduce", [4096], algo="Tree")[0]
    assert (row.algorithm, row.reduced) == ("nccl_tree", "")


def test_rings_are_not_scaled_within_the_budget():
    # a ring's instances can agree and its scaled time still be off the full run (a3-mega:nodes=25, allgather of
    # 64 MiB: 2.3%; dgx-h100:nodes=25, 1 MiB, with instances agreeing within 0.5%: 1.1%): where the full run fits the
    # engine's budget, it is taken
    assert compare("dgx-h100:nodes=25", "allgather", [4096]) == [""]


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["dgx-h100", "hgx-b200", "p5"])
def test_nvls_tree_of_one_chunk_is_affine_in_log2_nodes(preset):
    # on 2048 nodes the NVLS-tree runs one chunk per half-shard (the piece budget); the engine with those pieces on 8,
    # 16, 32 nodes, extrapolated in log2 nodes, against the engine on 64 nodes with them
    topology = parse_topology(f"{preset}:nodes=2048")
    system, per_node = machine_of(topology, 16384)
    assert nvls_tree_pieces(system, per_node, 1 << 30, 16384) == 2 * per_node  # one chunk

    def engine(nodes: int) -> float:
        return nvls_tree_engine(system, per_node, 1 << 30, 16384, "float32", 0.0, 0.0,
                                parse_topology(f"{preset}:nodes={nodes}"), nodes)[0]
    times = [engine(n) for n in (8, 16, 32)]
    value, apart = extrapolate((3, 4, 5), times, 6)
    assert apart < 1e-9 and value == pytest.approx(engine(64), rel=1e-9)


@pytest.mark.slow
def test_nvls_tree_of_several_chunks_is_not_scaled():
    # on 64 nodes the NVLS-tree pipelines 4 chunks; 8, 16 and 32 nodes do not agree on a line: the full run is taken
    assert compare("hgx-b200:nodes=64", "allreduce", [1 << 30]) == [""]


def offered(preset: str, nodes: int) -> list[str]:
    """The algorithms NCCL's model offers for allreduce on the machine whose scaling Call.reduced may take (trees)."""
    topology = parse_topology(f"{preset}:nodes={nodes}")
    system = machine_of(topology, topology.num_devices)[0]
    names = {algo for algo, _ in predict_times(system, "allreduce", [1 << 20])}
    return [name for algo, name in (("tree", "Tree"), ("nvls_tree", "NVLSTree")) if algo in names]


def test_node_counts_a_reduction_is_taken_at():
    # where the full run fits (1..64 nodes) a reduction is taken only for a tree (rings: never proven) on a power of two
    # of nodes above its instances 8, 16 and 32, whose largest is within 512 ranks: 64 nodes of 8 GPUs, none of 72
    assert "nccl_ring" not in PROVEN
    for preset in MULTINODE:
        per_node = PRESETS[preset].gpus_per_node
        taken = [n for n in range(1, 65) if n & (n - 1) == 0 and tree_nodes(n, per_node, powers_only=False)]
        assert taken == ([64] if per_node == 8 else []), preset
    assert {PRESETS[p].gpus_per_node for p in MULTINODE} == {8, 72}  # a new shape of node: extend the expectation


@pytest.mark.slow
@pytest.mark.parametrize("preset", [p for p in MULTINODE if PRESETS[p].gpus_per_node * 32 <= 512])
def test_every_preset_reduced_equals_the_full_run_at_64_nodes(preset):
    # the presets from the registry, at 64 nodes: every tree NCCL's model offers, forced (NCCL's own picks reduce only
    # where they are one of these: a ring alternative is never reduced within the budget); each row scaled from 8, 16
    # and 32 nodes (compare: within 1% of the full engine run), or the full run where the instances disagree; at 4 KiB
    # the scaling is taken (one chunk: a tree's levels add the same time)
    for algo in offered(preset, 64):
        notes = compare(f"{preset}:nodes=64", "allreduce", [4096, 1 << 20], algo=algo)
        assert notes[0].startswith("engine on 8/16/32 nodes, affine in log2 nodes"), (preset, algo)


@pytest.mark.skipif(not os.environ.get("COLLSIM_SYMMETRY_MATRIX"), reason="the whole matrix takes hours on 2 cores")
@pytest.mark.parametrize("preset", MULTINODE)
@pytest.mark.parametrize("op", OPS)
def test_matrix(preset, op):
    for nodes in NODES.get(preset, (25, 33, 64)):
        compare(f"{preset}:nodes={nodes}", op, SIZES)


def test_node_counts_timed():
    # rail-optimised fabrics (simulator/topology/fabric.py): every node of a 32-node scalable unit on each rail's leaf,
    # so within a unit any node is like any other (P = 1); beyond one unit P is the unit
    assert fabric_period(parse_topology("dgx-h100:nodes=9"), 8, 9) == 1
    assert fabric_period(parse_topology("dgx-h100:nodes=40"), 8, 40) == 32
    assert fabric_period(parse_topology("gb200-nvl72:nodes=3"), 72, 3) == 1
    # n1 = 3 periods + N mod P, then + P, + 2P; later windows from the last end, spacing doubled, within 512 ranks
    assert ring_nodes(2048, 4, 8) == [(12, 16, 20), (20, 28, 36)]
    assert ring_nodes(33, 4, 8) == [(13, 17, 21)]
    assert ring_nodes(9, 1, 8) == [(3, 4, 5)]  # then 5, 7, 9 is not fewer than 9 nodes
    assert ring_nodes(2048, 32, 8) == ring_nodes(2048, 1, 8) == [(3, 4, 5), (5, 7, 9), (9, 13, 17), (17, 25, 33)]
    assert ring_nodes(20, 1, 72) == [(3, 4, 5)]  # 7 x 72 > 512
    assert ring_nodes(4, 1, 8) == []  # 3, 4, 5 is not fewer than 4 nodes
    assert tree_nodes(2048, 8) == [(8, 16, 32)]
    assert tree_nodes(2000, 8) == [] and tree_nodes(32, 8) == []
    assert tree_nodes(2000, 8, powers_only=False) == [(8, 16, 32)]


def test_extrapolate_by_hand():
    # (8, 100), (12, 140), (16, 180): both lines give 100 + 10 x (2048 - 8) = 20500 at 2048
    assert extrapolate((8, 12, 16), [100.0, 140.0, 180.0], 2048) == (pytest.approx(20500.0), pytest.approx(0.0))
    # the last pair's slope, 11 per node: 140 + 11 x 2036 = 22536; the first pair's line 20500 is 9.03% away
    value, apart = extrapolate((8, 12, 16), [100.0, 140.0, 184.0], 2048)
    assert value == pytest.approx(22536.0) and apart == pytest.approx(2036 / 22536) and apart > AGREE


def test_only_a_preset_as_built_is_reduced():
    topology = parse_topology("dgx-h100:nodes=4")
    assert is_preset_as_built(topology, 32, None)
    assert not is_preset_as_built(topology, 16, None)  # fewer ranks than GPUs
    assert not is_preset_as_built(topology, 32, 4)  # ranks_per_node
    assert not is_preset_as_built(topology.with_links(latency=2e-6), 32, None)  # links changed
    assert not is_preset_as_built(topology.with_placement(list(range(31, -1, -1))), 32, None)


def test_too_many_gpus_refused_before_building(capsys):
    assert MAX_GPUS == 16384
    assert main(["predict", "--preset", "dgx-h100:nodes=1000000000", "--size", "1MiB"]) != 0  # 8e9 GPUs: not built
    err = capsys.readouterr().err
    assert "ranks: --preset dgx-h100:nodes=1000000000 has 8,000,000,000 GPUs; predict takes at most 16,384" in err
    with pytest.raises(CollsimError, match="predict takes at most 16,384"):
        predict(parse_topology("gb200-nvl72:nodes=228"), "allreduce", [1 << 20])  # 16,416 GPUs


@pytest.mark.slow
def test_over_the_budget_off_a_power_of_two_is_scaled_and_marked():
    # 1,500 nodes is not a power of two: the NVLS-tree's scaling is not proven there, and its full run is over the
    # budget: the answer is interpolated in log2 nodes and says so
    row = predict(parse_topology("dgx-h100:nodes=1500"), "allreduce", [1 << 30])[0]
    assert row.algorithm == "nvls_tree" and "NOT PROVEN: 1500 nodes is not a power of two" in row.reduced


def test_a_full_run_over_the_budget_is_refused_in_one_line():
    # where no reduction applies, a full run over the engine's budget is refused before its schedule is built
    with pytest.raises(CollsimError, match=r"^ranks: a ring needs the full engine run .* about 5,000,000 transfers per "
                                           r"size; predict runs at most 4,186,112; expected fewer nodes$"):
        check_budget(5_000_000, "a ring")
    check_budget(4_186_112, "a ring")  # 8 channels x 2 x 511 x 512: the largest run predict made before


def test_the_output_says_when_a_time_was_scaled(capsys):
    assert main(["predict", "--preset", "dgx-h100:nodes=64", "--size", "4KiB", "--algo", "Tree", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["reduced"] == "engine on 8/16/32 nodes, affine in log2 nodes, scaled to 64"
    assert main(["predict", "--preset", "dgx-h100:nodes=2", "--size", "4KiB", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"][0]["reduced"] is None
    assert main(["predict", "--preset", "dgx-h100:nodes=64", "--size", "4KiB", "--algo", "Tree"]) == 0
    assert "# 4KiB: scaled from fewer nodes (simulator/nccl/symmetry.py): engine on 8/16/32 nodes" in capsys.readouterr().out


def test_reduced_tries_windows_until_three_instances_agree():
    # engine times by hand: 100 us per node up to 20 nodes, then a new bottleneck at 50 us per node from there on
    def engine_at(machine, nodes):
        seconds = 1e-6 * (100 * nodes if nodes <= 20 else 2000 + 50 * (nodes - 20))
        return seconds, lambda s: Prediction(1 << 20, 1, "tree", "LL128", "rails", 16, s, s, 0.0)
    topology = parse_topology("dgx-h100:nodes=2048")
    row, proven = Reduced(topology, [(12, 16, 20), (20, 28, 36), (36, 52, 68)], engine_at, "ring").run()
    # (12, 16, 20) agree (100 us per node); extrapolated: 2000 + 100 x 2028 us
    assert proven and row.time_s == pytest.approx(1e-6 * (2000 + 100 * 2028))
    assert row.reduced == "engine on 12/16/20 nodes, affine in steps of 4 nodes, scaled to 2048"
    row, proven = Reduced(topology, [(16, 20, 24), (24, 32, 40)], engine_at, "ring").run()
    # (16, 20, 24): 100 then 50 us per node, not one line; (24, 32, 40): 50 us per node: 2200 + 50 x 2024 us
    assert proven and row.time_s == pytest.approx(1e-6 * (2200 + 50 * 2024))
    row, proven = Reduced(topology, [(16, 20, 24)], engine_at, "ring").run()
    assert not proven and "NOT PROVEN" in row.reduced
