"""The rail-optimised leaf-spine of the multi-node presets (simulator/topology/fabric.py), and properties of predict on it.

Routes are checked against the DGX SuperPOD layout written out by hand (NIC k of each node of a 32-node SU on leaf k;
NCCL's PXN relaying cross-rail pairs over NVLink). The properties compare predict with the same forced NCCL picks on
two machines, one of which is better (more NIC bandwidth, more NICs, adaptive instead of hashed or static spines):
the better one is never slower. And across node counts no time jumps more than 2x unless NCCL's pick changes.
"""

import pytest

from simulator.errors import CollsimError
from simulator.nccl.nvls import switch_view
from simulator.nccl.predict import predict
from simulator.program.whatif import scaled
from simulator.topology import PRESETS, build_preset, rail_fabric
from simulator.topology.spec import parse_topology

KiB, MiB = 1 << 10, 1 << 20
SIZES = [4 * KiB, 1 * MiB, 256 * MiB]
# Max-min sharing is not monotone in capacity: a faster link reorders when flows finish and can delay another a little
# (doubling dgx-h100:nodes=2's network links makes ring LL128 at 1 MiB 0.08% slower: 81.887 vs 81.818 us). "Never
# slower" is checked to within 0.5%; the 1% case below is a strict xfail.
SLACK = 1.005


def _hops(topo, a, b):
    return [topo.link_name(lid) for lid in topo.route(a, b)]


def test_rail_local_pairs_stay_on_their_leaf_and_cross_rail_pairs_cross_the_spines_or_go_by_pxn():
    topo = parse_topology("dgx-h100:nodes=5")  # 5 nodes: one SU, leaf k takes NIC k of every node
    assert _hops(topo, 0, 8) == ["n0g0->n0nic0", "n0nic0->su0leaf0", "su0leaf0->n1nic0", "n1nic0->n1g0"]
    assert _hops(topo, 0, 9) == ["n0g0->n0nic0", "n0nic0->su0leaf0", "su0leaf0->spines", "spines->su0leaf1",
                                 "su0leaf1->n1nic1", "n1nic1->n1g1"]
    assert _hops(parse_topology("rails:nodes=5,pxn=1"), 0, 9) == [
        "n0g0->n0nvswitch", "n0nvswitch->n0g1", "n0g1->n0nic1", "n0nic1->su0leaf1", "su0leaf1->n1nic1",
        "n1nic1->n1g1"]  # PXN: over NVLink to GPU 1, then rail 1
    assert _hops(topo, 3, 4) == ["n0g3->n0nvswitch", "n0nvswitch->n0g4"]


def test_adaptive_spines_are_one_core_link_per_leaf_carrying_every_uplink():
    topo = parse_topology("dgx-h100:nodes=33")  # node 32 opens SU 1
    hops = _hops(topo, 0, 32 * 8)
    assert hops == ["n0g0->n0nic0", "n0nic0->su0leaf0", "su0leaf0->spines", "spines->su1leaf0", "su1leaf0->n32nic0",
                    "n32nic0->n32g0"]
    core = topo.route(0, 32 * 8)[2]
    assert topo.bandwidth[core] == pytest.approx(32 * 50e9)  # 32 uplinks of 400 Gb/s (1:1 for a 32-node SU)
    assert sum(kind == "switch" for kind in topo.node_kinds) == 33 + 16 + 1  # NVSwitches, 8 leaves x 2 SUs, the core


def test_ecmp_hashes_pairs_over_spines_and_static_routes_by_destination():
    ecmp = parse_topology("dgx-h100:nodes=33,ecmp=1")
    assert ecmp.name.endswith("routing=ecmp") and ecmp.multipath
    spines = {_hops(ecmp, 8 * i, 32 * 8)[2] for i in range(32)}
    assert len(spines) > 1 and all(s.startswith("su0leaf0->spine") for s in spines)
    static = parse_topology("dgx-h100:nodes=33,routing=static")
    # destination-mod-k: node 32 is port 0 of its leaf, so every pair to it takes spine 0
    assert {_hops(static, 8 * i, 32 * 8)[2] for i in range(32)} == {"su0leaf0->spine0"}
    assert _hops(static, 32 * 8, 8 * 5)[2] == "su1leaf0->spine5"


def test_switch_view_keeps_the_presets_routes_between_gpus():
    topo = parse_topology("dgx-h100:nodes=5")
    view = switch_view(topo, 40, 1.0, group=8)  # NVLS-tree: node k's NVSwitch is device 40 + k
    for a in range(0, 40, 3):
        for b in range(1, 40, 5):
            assert view.route(a, b) == topo.route(a, b)
    assert _hops(view, 41, 10) == ["n1nvswitch->n1g2"] and _hops(view, 10, 41) == ["n1g2->n1nvswitch"]
    gb = parse_topology("gb200-nvl72:nodes=2")
    view = switch_view(gb, 144, 1.0, group=72)
    assert all("spine" not in name for name in _hops(view, 5, 72 + 5))  # rail-local across racks


def test_bad_routing_is_one_clear_line():
    with pytest.raises(CollsimError, match="routing: 'bogus'; expected one of adaptive, ecmp, static"):
        parse_topology("dgx-h100:nodes=2,routing=bogus")
    with pytest.raises(CollsimError, match="routing: preset gb200-nvl4 has no network"):
        parse_topology("gb200-nvl4:nodes=2,routing=ecmp")


def test_new_presets_carry_their_sources_and_arch():
    for name, arch, net_Bps in (("dgx-h200", "hopper", 50e9), ("hgx-b300", "blackwell", 100e9),
                                ("gb300-nvl72", "blackwell", 100e9), ("gb200-nvl72", "blackwell", 50e9)):
        machine = PRESETS[name].machine
        assert machine.arch == arch and "NVIDIA" in machine.source
        per_node = PRESETS[name].gpus_per_node
        topo = build_preset(name, 2)
        assert topo.path_cost(0, per_node)[1] == pytest.approx(net_Bps)  # one NIC port: 400 or 800 Gb/s
        assert topo.path_cost(0, 1)[1] == pytest.approx(450e9 if arch == "hopper" else 900e9)


def _times(topo, algo, proto, sizes=SIZES):
    return [r.time_s for r in predict(topo, "allreduce", sizes, algo=algo, proto=proto)]


def _not_slower(better, worse, algo, proto, sizes=SIZES):
    for size, fast, slow in zip(sizes, _times(better, algo, proto, sizes), _times(worse, algo, proto, sizes)):
        assert fast <= slow * SLACK, (algo, proto, size, fast, slow)


PICKS = [("Ring", "LL128"), ("Ring", "Simple"), ("Tree", "Simple"), ("NVLSTree", "Simple")]


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["dgx-h100:nodes=2", "hgx-b200:nodes=3"])
@pytest.mark.parametrize("algo, proto", PICKS)
def test_more_nic_bandwidth_is_never_slower(spec, algo, proto):
    topo = parse_topology(spec)
    _not_slower(scaled(topo, "nic", 2.0), topo, algo, proto)  # every network link x2, NCCL's view unchanged


@pytest.mark.parametrize("algo", ["Ring", "Tree"])
def test_more_nics_is_never_slower(algo):
    four = parse_topology("p4de:nodes=2")  # 4 x 100G EFA, GPUs 0-1 on NIC 0, ...
    eight = rail_fabric(2, 8, "switch", 0.3e-6, 300e9, 2e-6, 12.5e9, nics=8, pcie_bandwidth=31.5e9)
    assert eight.path_cost(0, 8) == four.path_cost(0, 8)  # same links, one NIC per GPU
    eight = eight.with_origin(four.origin)  # the same NCCL view (picks, channels): only the machine differs
    _not_slower(eight, four, algo, "Simple")


# two SUs (33 nodes) cross the spines; rings there take minutes to time, so the trees (at fewer sizes)
@pytest.mark.slow
@pytest.mark.parametrize("nodes, algo, proto, sizes", [(5, "Tree", "Simple", SIZES), (5, "NVLSTree", "Simple", SIZES),
                                                       (33, "Tree", "LL128", SIZES[:2]), (33, "NVLSTree", "Simple", SIZES)])
def test_adaptive_routing_is_never_slower_than_hashed_or_static(nodes, algo, proto, sizes):
    adaptive = parse_topology(f"dgx-h100:nodes={nodes}")
    for routing in ("ecmp", "static"):
        _not_slower(adaptive, parse_topology(f"dgx-h100:nodes={nodes},routing={routing}"), algo, proto, sizes)


# Max-min sharing is not monotone in capacity: without PXN, 256 MiB Ring Simple runs 1526 us with adaptive spines and
# 1511 us with hashed ones (a collision delays one ring's flow, which then shares less with the others). A property of
# the engine's fluid sharing, not of the fabric; strict, so that it shows when the engine changes.
@pytest.mark.slow
@pytest.mark.parametrize("algo, proto", [pytest.param("Ring", "Simple", marks=pytest.mark.xfail(
    strict=True, reason="max-min sharing is not monotone: adaptive 1526 us vs ecmp 1511 us at 256 MiB without PXN")),
    ("Tree", "Simple")])
def test_without_pxn_cross_rail_pairs_cross_the_spines_and_adaptive_is_still_never_slower(algo, proto):
    # rails: has the links of dgx-h100 (NVLink 4, 400G NICs, PCIe 5); without PXN the rings' cross-rail hops use spines
    # (as on the presets, which leave PXN off; docs/topologies.md)
    preset = parse_topology("dgx-h100:nodes=5").origin
    variants = {}
    for routing in ("adaptive", "ecmp", "static"):
        variants[routing] = parse_topology(f"rails:nodes=5,gpus=8,intra_bw=450GB/s,net_bw=50GB/s,routing={routing},"
                                           "pxn=0").with_origin(preset)
    assert any("spine" in name for name in _hops(variants["ecmp"], 0, 9))
    for routing in ("ecmp", "static"):
        _not_slower(variants["adaptive"], variants[routing], algo, proto)


# dgx-h100 over 1..64 nodes; hgx-b200 up to 16 (its 256 MiB ring candidates at 17-64 nodes take minutes to time)
NODES = {"dgx-h100": [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 32, 33, 64], "hgx-b200": [1, 2, 3, 4, 5, 7, 8, 9, 16]}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(NODES))
def test_no_jump_over_2x_between_neighbouring_node_counts_unless_the_pick_changes(name):
    counts = NODES[name]
    rows = {n: predict(parse_topology(f"{name}:nodes={n}"), "allreduce", SIZES) for n in counts}
    for small, large in zip(counts, counts[1:]):
        for a, b in zip(rows[small], rows[large]):
            if (a.nccl_algo, a.proto) == (b.nccl_algo, b.proto):
                assert 0.5 <= b.time_s / a.time_s <= 2.0, (name, small, large, a, b)
