"""collsim predict at small sizes against NCCL's own model (simulator/nccl/tuning.py, tuning.cc as a model: an
independent computation) for the algorithms other than the tree (test_nccl_tree.py): the ring, PAT and NVLS-tree within
15% at 8 B, 4 KiB and 64 KiB on 2..16 nodes; and the latencies and channel charges behind that, by hand."""

import numpy as np
import pytest

from simulator.nccl.channels import channel_share
from simulator.nccl.predict import machine_of, predict
from simulator.nccl.tuning import System, predict_times
from simulator.topology.spec import parse_topology

SIZES = [8, 4096, 65536]
CASES = [("ring", "allreduce", None), ("ring", "allgather", None), ("pat", "allgather", 1),
         ("pat", "reduce_scatter", 1), ("nvls_tree", "allreduce", None)]


@pytest.mark.slow
@pytest.mark.parametrize("nodes", [2, 4, 8, 16])
def test_within_15_percent_of_nccls_model(nodes):
    # each algorithm forced as NCCL_ALGO would: predict takes NCCL's fastest protocol for it, the model's min over them
    topo = parse_topology(f"dgx-h100:nodes={nodes}")
    for algo, op, per_node in CASES:
        ranks = nodes * (per_node or 8)
        system, _ = machine_of(topo, ranks, per_node)
        model = np.min([t for (a, _), t in predict_times(system, op, SIZES).items() if a == algo], axis=0)
        ours = np.array([row.time_s for row in predict(topo, op, SIZES, ranks=ranks, algo=algo, ranks_per_node=per_node)])
        err = ours / model - 1
        assert np.all(np.abs(err) <= 0.15), (algo, op, nodes, err)


@pytest.mark.parametrize("nodes, log2", [(2, 1), (8, 3), (16, 4)])
def test_nvls_tree_charges_each_hop_once(nodes, log2):
    # tuning.cc NVLS_TREE on Hopper: intraLat 25 us + 2 log2(nodes) x interLat 20.9 us (no plugin latency on IB), the
    # engine's 8 bytes at NVLink / NIC rates adding well under 0.1 us; the links' wire latency is not charged again
    topo = parse_topology(f"dgx-h100:nodes={nodes}")
    row = predict(topo, "allreduce", [8], algo="nvls_tree", net_extra_s=0.0)[0]
    assert row.time_s == pytest.approx((25.0 + 2 * log2 * 20.9) * 1e-6, abs=0.1e-6)


def test_channel_share_by_hand():
    # 16 channels in the graph (System's Hopper default); 2 run: 16 / 2 = 8 wire bytes per byte on one node or forced,
    # none across nodes (tuning.cc's whole graph bandwidth); more than the graph's are bound by the links alone
    one, two = System(nodes=1), System(nodes=2)
    assert one.n_channels == two.n_channels == 16
    assert channel_share(one, 2) == 8.0
    assert channel_share(two, 2) == 1.0
    assert channel_share(two, 2, forced=True) == 8.0
    assert channel_share(one, 32) == channel_share(two, 32, forced=True) == 1.0


def test_forced_channels_still_slow_a_ring_across_nodes():
    # one forced channel streams at 1/16 of the graph: 16 MiB takes longer than on NCCL's own 16 channels
    topo = parse_topology("dgx-h100:nodes=2")
    own, forced = (predict(topo, "allgather", [16 << 20], algo="ring", proto="Simple", channels=c)[0] for c in (None, 1))
    assert forced.time_s > 4 * own.time_s
