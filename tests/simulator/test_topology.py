"""Topologies: routes are shortest paths, bisection bandwidths match hand counts, presets build, files are checked."""

import json

import pytest
import yaml

from simulator.errors import CollsimError
from simulator.topology import (
    PRESETS,
    build_preset,
    cluster,
    fat_tree,
    ideal,
    load_topology,
    parse_topology,
    ring,
    switch,
    topology_from_dict,
    topology_to_dict,
    torus,
)

SMALL = ["switch:5", "ring:6", "ring:5,uni", "ring:2", "torus:4x4", "torus:3x4", "torus:2x2x3", "torus:4x4x4",
         "fat_tree:hosts=12,leaf=4,oversub=2", "cluster:nodes=3,gpus=4", "cluster:nodes=2,gpus=4,intra=mesh",
         "cluster:nodes=5,gpus=2,nic=node,leaf=2", "cluster:nodes=9,gpus=4,leaf=2,oversub=2", "dgx-h100", "mi300x",
         "pcie-8gpu", "tpu-v4-4x4x4", "dgx-a100:nodes=2,net=roce200"]


@pytest.mark.parametrize("spec", SMALL)
def test_routes_are_shortest_paths_and_connected(spec):
    topo = parse_topology(spec)
    for a in range(topo.num_devices):
        for b in range(topo.num_devices):
            links = topo.route(a, b)
            assert len(links) == topo.bfs_hops(a, b)
            if links:  # consecutive links join up, from a's device to b's device
                assert topo.link(links[0]).src == topo.device_name(a) and topo.link(links[-1]).dst == topo.device_name(b)
                for x, y in zip(links, links[1:]):
                    assert topo.link(x).dst == topo.link(y).src


@pytest.mark.parametrize("spec, expected_GBps", [
    ("switch:4", 2 * 25),               # the first half's two uplinks
    ("ring:8", 2 * 25),                 # a ring cut in two crosses two cables
    ("ring:8,uni", 25),                 # one of them points the right way
    ("torus:4x4", 8 * 25),              # 4 columns, each cut twice (wrap-around)
    ("torus:4x4x4", 32 * 25),           # 16 rings of 4 along the first dimension, each cut twice
    ("fat_tree:hosts=16,leaf=4,oversub=1", 8 * 25),  # 8 hosts' worth of uplinks
    ("fat_tree:hosts=16,leaf=4,oversub=2", 4 * 25),  # half of them
    ("ideal:6", 9 * 25),                # 3 x 3 dedicated links
    ("pcie-8gpu", 62.4),                # the inter-socket link
])
def test_bisection_bandwidth_by_hand(spec, expected_GBps):
    assert parse_topology(spec).bisection_bandwidth() == pytest.approx(expected_GBps * 1e9)


def test_ring_routes_go_the_short_way_and_a_unidirectional_ring_goes_forward():
    bi, uni = ring(8), ring(8, bidirectional=False)
    assert len(bi.route(0, 7)) == 1 and len(bi.route(0, 4)) == 4 and bi.link(bi.route(0, 4)[0]).dst == "gpu1"
    assert len(uni.route(0, 7)) == 7 and len(uni.route(7, 0)) == 1


def test_torus_routes_dimension_order():
    topo = torus([4, 4])
    names = [topo.link(lid).dst for lid in topo.route(0, 5)]  # (0,0) -> (1,1): first dimension first
    assert names == ["tpu1_0", "tpu1_1"]


def test_ideal_makes_links_on_demand():
    topo = ideal(1024)
    assert topo.num_links == 1024 * 1023
    ids = {topo.route(a, b)[0] for a in range(0, 1024, 37) for b in range(0, 1024, 41) if a != b}
    assert len(ids) == len([1 for a in range(0, 1024, 37) for b in range(0, 1024, 41) if a != b])
    assert topo.link(topo.route(5, 900)[0]).src == "gpu5" and topo.link(topo.route(5, 900)[0]).dst == "gpu900"


def test_placement_permutes_ranks_onto_devices():
    topo = ring(8).with_placement([0, 4, 1, 5, 2, 6, 3, 7])
    assert len(topo.route(0, 1)) == 4 and topo.device_name(1) == "gpu4"
    with pytest.raises(CollsimError, match="placement"):
        ring(4).with_placement([0, 0, 1, 2])


def test_ecmp_spreads_pairs_over_spines_deterministically():
    topo = fat_tree(16, 4, 1).with_ecmp(True)
    spines = {topo.link(topo.route(a, b)[1]).dst for a in range(4) for b in range(4, 16)}
    assert len(spines) > 1
    again = fat_tree(16, 4, 1).with_ecmp(True)
    assert [again.route(a, 12) for a in range(4)] == [topo.route(a, 12) for a in range(4)]


def test_with_links_sets_every_link():
    topo = parse_topology("dgx-h100:nodes=2").with_links(3e-6, 10e9)
    assert topo.path_cost(0, 8) == (pytest.approx(12e-6), 10e9)  # GPU, NIC, rail leaf, NIC, GPU: 4 links
    # another rail: through the spines (GPU, NIC, leaf 0, spines, leaf 7, NIC, GPU: 6 links)
    assert topo.path_cost(0, 15) == (pytest.approx(18e-6), 10e9)
    assert ideal(4).with_links(5e-6, None).path_cost(0, 1) == (5e-6, 25e9)


def test_cluster_routes_inside_a_node_over_nvlink_and_between_nodes_over_the_nic():
    topo = parse_topology("dgx-h100:nodes=4")
    assert topo.num_devices == 32
    inside, across = topo.path_cost(0, 7), topo.path_cost(0, 8)
    assert inside[1] == 450e9 and across[1] == 50e9
    names = [topo.link(lid).dst for lid in topo.route(0, 8)]
    assert names == ["n0nic0", "su0leaf0", "n1nic0", "n1g0"]  # GPU -> its NIC (PCIe) -> its rail's leaf -> NIC -> GPU
    big = cluster(128, 8)  # builds fast, with a structural router
    assert big.num_devices == 1024 and len(big.route(0, 1023)) == 6


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_builds(name):
    topo = build_preset(name)
    assert topo.num_devices == PRESETS[name].gpus_per_node
    assert topo.unreachable() == []


def test_multinode_presets_take_nodes_and_network():
    assert build_preset("mi300x", nodes=3, net="roce200").num_devices == 24
    assert parse_topology("gb200-nvl72:nodes=2").num_devices == 144
    with pytest.raises(CollsimError, match="single machine"):
        parse_topology("pcie-8gpu:nodes=2")
    with pytest.raises(CollsimError, match="net: unknown network 'ib100'"):
        parse_topology("dgx-h100:nodes=2,net=ib100")


@pytest.mark.parametrize("spec, message", [
    ("nosuch", "unknown topology 'nosuch'"),
    ("torus:4", "2 or 3"),
    ("torus:4xq", "torus dimensions"),
    ("switch:8,colour=red", "unknown option 'colour'"),
    ("switch:0", "n=0 in .switch:0. is not a count"),
    ("ring:8,bw=0GB/s", "bw"),
    ("fat_tree:hosts=8,leaf=4,oversub=3", "oversub"),
    ("cluster:nodes=2,intra=mesh,nic=node", "nic"),
    ("cluster:gpus=8", "needs nodes=N"),
])
def test_bad_specs_are_clear_errors(spec, message):
    with pytest.raises(CollsimError, match=message):
        parse_topology(spec)


GOOD = {
    "collsim_topology": 1, "name": "two-boxes",
    "defaults": {"latency": "1us", "bandwidth": "25GB/s"},
    "nodes": [{"name": "a0", "kind": "gpu"}, {"name": "a1", "kind": "gpu"}, {"name": "b0", "kind": "gpu"},
              {"name": "swa", "kind": "switch"}, {"name": "swb", "kind": "switch"}],
    "links": [{"a": "a0", "b": "swa"}, {"a": "a1", "b": "swa"}, {"a": "b0", "b": "swb"},
              {"a": "swa", "b": "swb", "bandwidth": "12.5GB/s", "latency": "2us"}],
}


def test_a_yaml_file_loads_and_round_trips(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(GOOD))
    topo = parse_topology(str(path))
    assert topo.name == "two-boxes" and topo.num_devices == 3 and topo.num_links == 8
    assert topo.path_cost(0, 2) == (pytest.approx(4e-6), 12.5e9)
    again = tmp_path / "t.json"
    again.write_text(json.dumps(topology_to_dict(topo)))
    copy = load_topology(again)
    assert copy.num_links == 8 and copy.path_cost(0, 2) == topo.path_cost(0, 2)


def _with(**changes):
    data = json.loads(json.dumps(GOOD))
    data.update(changes)
    return data


@pytest.mark.parametrize("data, message", [
    (_with(links=GOOD["links"][:3]), "disconnected: rank 2 \\(b0\\) cannot reach rank 0 \\(a0\\)"),
    (_with(links=GOOD["links"] + [{"a": "a0", "b": "swb", "bandwidth": 0}]), "links\\[4\\] bandwidth"),
    (_with(links=GOOD["links"] + [{"a": "a0", "b": "swb", "bandwidth": "-5GB/s"}]), "links\\[4\\]"),
    (_with(links=GOOD["links"] + [{"a": "a0", "b": "swz"}]), "links\\[4\\]: unknown node 'swz' in 'b'"),
    (_with(links=GOOD["links"] + [{"a": "swa", "b": "a0"}]), "links\\[4\\]: duplicate link swa -> a0 \\(already in links\\[0\\]\\)"),
    (_with(nodes=GOOD["nodes"] + [{"name": "a0"}]), "nodes\\[5\\]: duplicate node name 'a0'"),
    (_with(nodes=GOOD["nodes"] + [{"name": "x", "kind": "router"}]), "unknown kind 'router'"),
    (_with(ranks=["a0", "zz"]), "ranks\\[1\\]: unknown node 'zz'"),
    (_with(colour="red"), "unknown key 'colour'"),
    (_with(defaults={}), "links\\[0\\] \\(a0 - swa\\): no bandwidth"),
    (_with(links=[{"a": "a0", "b": "a0"}]), "to itself"),
])
def test_bad_topology_files_name_the_file_and_the_entry(tmp_path, data, message):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(CollsimError, match=f"topology: {path}: .*{message}"):
        load_topology(path)


def test_unreadable_and_malformed_files(tmp_path):
    with pytest.raises(CollsimError, match="cannot read"):
        parse_topology(str(tmp_path / "missing.yaml"))
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(CollsimError, match="not valid JSON"):
        load_topology(bad)


def test_more_ranks_than_the_topology_has():
    with pytest.raises(CollsimError, match="16 ranks asked but topology switch:8 has only 8 devices"):
        switch(8).check_ranks(16)


def test_file_topology_routes_by_bfs_with_lowest_numbered_tie_break():
    data = {"defaults": {"bandwidth": "1GB/s"}, "nodes": ["g0", "g1", {"name": "s0", "kind": "switch"},
                                                          {"name": "s1", "kind": "switch"}],
            "links": [{"a": "g0", "b": "s0"}, {"a": "g0", "b": "s1"}, {"a": "s0", "b": "g1"}, {"a": "s1", "b": "g1"}]}
    topo = topology_from_dict(data)
    assert [topo.link(lid).dst for lid in topo.route(0, 1)] == ["s0", "g1"]
    assert topology_from_dict(data).with_ecmp(True).route(0, 1) in (topo.route(0, 1), tuple(
        lid for lid in range(topo.num_links) if topo.link_name(lid) in ("g0->s1", "s1->g1")))
