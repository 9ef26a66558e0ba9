"""NCCL's tree across nodes (`nccl_tree`): proven on numpy, its trees as trees.cc / connect.cc wire them, its latency
growing with log2(nodes), and collsim predict within 15% of NCCL's own model (an independent computation) at small
sizes."""

import numpy as np
import pytest

from simulator.algorithms import build_schedule
from simulator.algorithms.nccl_tree import channel_parents, node_tree
from simulator.collective import Collective
from simulator.nccl.predict import machine_of, predict
from simulator.nccl.tuning import predict_times
from simulator.semantics import check
from simulator.topology.spec import parse_topology


def _ok(p, nbytes, **params):
    result = check(build_schedule(Collective("allreduce", p, nbytes, "int8"), "nccl_tree", **params), seed=p * 31 + nbytes)
    assert result.ok, f"nccl_tree p={p} n={nbytes} {params}: {result.message}"


@pytest.mark.slow
def test_semantics_every_p():
    for p in list(range(1, 34)) + [64]:
        for group in sorted({g for g in (1, 2, 8, p) if p % g == 0}):
            for channels, pipeline, window in ((1, 1, 1), (3, 3, 1), (4, 5, 2)):
                for nbytes in ((0, 9, 13 * p + 5) if p <= 33 else (17 * p + 3,)):
                    _ok(p, nbytes, group=group, channels=channels, pipeline=pipeline, window=window)


def test_node_trees_are_nccls():
    # trees.cc ncclGetBtree on 4 nodes: 1 -> 2 (first child: 1 < 2), 3 -> 2 and 2 -> 0 (second children); ncclGetDtree's
    # second tree mirrors it (v -> 3 - v) and keeps the first tree's child types
    parent, first = node_tree(4, 0)
    assert parent.tolist() == [-1, 2, 0, 2] and first.tolist() == [False, True, False, False]
    parent, first = node_tree(4, 1)
    assert parent.tolist() == [1, 3, 1, -1] and first.tolist() == [False, False, True, False]
    # 3 nodes: 1 -> 2 (up = 0 | 2 = 2 < 3, first child), 2 -> 0 (up = 4 >= 3, so 2 ^ 2 = 0; second); an odd count
    # shifts the second tree by one (v -> v - 1): 2 -> 0 (first), 0 -> 1 (second), 1 the root
    parent, first = node_tree(3, 0)
    assert parent.tolist() == [-1, 2, 0] and first.tolist() == [False, True, False]
    parent, first = node_tree(3, 1)
    assert parent.tolist() == [1, -1, 0] and first.tolist() == [False, False, True]


def test_channel_trees_by_hand():
    # 4 nodes x 2 GPUs, head 0, tree 0: each node's chain is GPU 0 -> GPU 1; node 1's top (rank 2) enters node 2 at
    # its second GPU (rank 5, first child), node 2's (rank 4) and node 3's (rank 6) enter at the first GPU
    assert channel_parents(8, 2, 0, 0).tolist() == [-1, 0, 5, 2, 0, 4, 4, 6]
    # head 1, tree 1: chains GPU 1 -> GPU 0; node 3 is the root; node 2 enters node 1 at its second GPU (rank 2)
    assert channel_parents(8, 2, 1, 1).tolist() == [1, 3, 3, 7, 5, 2, 7, -1]


def test_every_gpu_carries_channels_across_nodes():
    # 2 nodes x 8 GPUs on 16 channels (heads 0..7, both trees): every GPU sends and receives across nodes, each
    # with the same bytes (one channel up and one down per tree it heads: n / 8 each way)
    n = 16 * 8 * 64
    s = build_schedule(Collective("allreduce", 16, n, "int8"), "nccl_tree", channels=16, group=8)
    cols = s.columns
    across = (cols["src"] // 8) != (cols["dst"] // 8)
    sent = np.bincount(cols["src"][across], weights=cols["count"][across], minlength=16)
    got = np.bincount(cols["dst"][across], weights=cols["count"][across], minlength=16)
    assert np.all(sent == n / 8) and np.all(got == n / 8)


def test_small_message_latency_grows_with_log2_nodes():
    # tree LL on dgx-h100 (tuning.cc: base 6.8 us, 0.6 us per NVLink step, 5.0 us per network step; no ring net
    # overhead on trees), 8 B on one channel: the deepest GPU's path climbs its node's chain (7 NVLink steps), then
    # log2(N) network steps, and enters log2(N) - 1 of its nodes at their second GPU (first children all the way up
    # the binary tree), one NVLink step more each; the same way back down. Rails' rings grew linearly in N.
    for nodes in (2, 4, 16):
        row = predict(parse_topology(f"dgx-h100:nodes={nodes}"), "allreduce", [8])[0]
        levels = nodes.bit_length() - 1
        want = 6.8 + 2 * (7 * 0.6 + levels * 5.0 + (levels - 1) * 0.6)
        assert (row.nccl_algo, row.proto, row.algorithm) == ("tree", "LL", "nccl_tree")
        assert row.time_s == pytest.approx(want * 1e-6, abs=5e-9)  # LL's 16 wire bytes per hop: ~1 ns in all


@pytest.mark.slow
@pytest.mark.parametrize("preset, nodes", [("dgx-h100", 2), ("dgx-h100", 8), ("dgx-h100", 32), ("hgx-b200", 4),
                                           ("p5", 8)])
def test_small_sizes_within_15_percent_of_nccls_model(preset, nodes):
    # NCCL's model (simulator/nccl/tuning.py: tuning.cc's latencies and bandwidths) against the engine running the
    # tree's transfers; 64 KiB at 2 and 4 nodes is the exception docs/accuracy.md explains (NCCL's LL tree
    # bandwidth, graph / 3.8 and its fitted treeCorrectionFactor 0.6, against the links' rate), bounded at 20%
    sizes = [8, 1024, 4096, 16384, 65536]
    topo = parse_topology(f"{preset}:nodes={nodes}")
    system, _ = machine_of(topo, topo.origin.preset.gpus_per_node * nodes)
    model = np.min(np.vstack(list(predict_times(system, "allreduce", sizes).values())), axis=0)
    ours = np.array([row.time_s for row in predict(topo, "allreduce", sizes)])
    err = np.abs(ours / model - 1)
    assert np.all(err[:-1] <= 0.15) and err[-1] <= (0.20 if nodes <= 4 else 0.15), err


def test_tree_steps_by_hand():
    # enqueue.cc calcCollChunking for trees: a step is buffSize / NCCL_STEPS of the protocol's buffer. Simple: 4 MiB / 8;
    # LL: 8 lines x 512 threads x 8 steps x 16 B / 8, half of it data; LL128: 120 x 640 x 8 x 8 B / 8 = 614400 wire
    # bytes, halved while 1 MiB / (16 x chunk) < (1 + log2 2 + 0.1 x 8) x 64 / 8 = 22.4 and chunk > 128 KiB (-> 76800),
    # then while < 5.6 and chunk > 32 KiB (-> 19200), 15 of every 16 bytes data: 18000
    from simulator.nccl.channels import tree_chunk_size
    from simulator.nccl.tuning import System

    two = System(nodes=2)
    assert tree_chunk_size(two, "Simple", 1 << 20, 16) == 512 << 10
    assert tree_chunk_size(two, "Simple", 1 << 20, 16, buffsize=8 << 20) == 1 << 20
    assert tree_chunk_size(two, "LL", 1 << 20, 16) == 32 << 10
    assert tree_chunk_size(two, "LL128", 1 << 20, 16) == 18000
    assert tree_chunk_size(two, "LL128", 1 << 30, 16) == 614400 // 16 * 15  # large enough: no halving
