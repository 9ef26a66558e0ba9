"""NCCL's tuning model: latencies and bandwidths worked out by hand from REFERENCE.md's constants, and its picks."""

import json
from dataclasses import replace

import pytest

from app.cli import main
from simulator.errors import CollsimError
from simulator.formats.nccl_tests import read_log
from simulator.nccl.tuning import NvlsGraph, System, choose, node_nvls_graph, predict_times, tune

NODE = System("hopper", 8, 1, nvls=False)


def test_single_node_nvlink_latencies_from_the_published_constants():
    # Ring: base + nsteps x per-hop NVLink latency, nsteps = 2(p-1) = 14 for allreduce on 8 GPUs.
    # Tree on one node: base + 2 (p - 1) x per-hop latency.
    lat = {k: v[0] for k, v in tune(NODE, "allreduce").items()}
    assert lat[("ring", "LL")] == pytest.approx(6.6 + 14 * 0.6)        # 15.0 us
    assert lat[("ring", "LL128")] == pytest.approx(14.0 + 14 * 1.9)    # 40.6
    assert lat[("ring", "Simple")] == pytest.approx(8.4 + 14 * 3.4)    # 56.0
    assert lat[("tree", "LL")] == pytest.approx(6.8 + 2 * 7 * 0.6)     # 15.2
    assert lat[("tree", "LL128")] == pytest.approx(14.0 + 2 * 7 * 1.25)  # 31.5
    assert lat[("tree", "Simple")] == pytest.approx(8.4 + 2 * 7 * 4.0)   # 64.4
    ag = {k: v[0] for k, v in tune(NODE, "allgather").items()}
    assert set(ag) == {("ring", "LL"), ("ring", "LL128"), ("ring", "Simple")}  # no tree for allgather
    assert ag[("ring", "LL")] == pytest.approx(6.6 + 7 * 0.6)


def test_pcie_and_two_node_latencies():
    pcie = {k: v[0] for k, v in tune(System("ampere", 4, 1, link="pcie"), "allreduce").items()}
    assert ("ring", "LL128") not in pcie  # LL128 only over NVLink
    assert pcie[("ring", "LL")] == pytest.approx(6.6 + 6 * 1.0)
    assert pcie[("ring", "Simple")] == pytest.approx(8.4 + 6 * 5.7)
    two = {k: v[0] for k, v in tune(System("hopper", 8, 2), "allreduce").items()}
    # 2 x 8 ranks: nsteps 30, 2 of them cross the network; intra hops cost max(NVLink, net overhead 1 us, x3 for Simple)
    assert two[("ring", "LL")] == pytest.approx(6.6 + 28 * 1.0 + 2 * 2.7)      # 40.0
    assert two[("ring", "Simple")] == pytest.approx(8.4 + 28 * 3.4 + 2 * 14.0)  # 131.6
    assert two[("tree", "LL")] == pytest.approx(6.8 + 2 * (7 * 0.6 + 1 * 5.0))  # 25.2


def test_bandwidths_follow_the_protocol_efficiencies():
    bw = {k: v[1] for k, v in tune(NODE, "allreduce").items()}
    bus = 18 * 20.6  # H100: 18 NVLinks x NCCL's 20.6 GB/s per link = 370.8 GB/s
    assert bw[("ring", "Simple")] == pytest.approx(bus * 8 / 14)             # ring: bus x p / nsteps
    assert bw[("ring", "LL")] == pytest.approx(min(141.0, bus * 0.5) * 8 / 14)  # LL carries 4 of 8 bytes, capped
    assert bw[("ring", "LL128")] == pytest.approx(bus * 0.92 * 8 / 14)       # LL128: 120 of 128 bytes (NCCL: 0.92)
    assert bw[("tree", "Simple")] == pytest.approx(bus * 0.92 * 0.5)         # tree: busbw x 0.5
    t = predict_times(NODE, "allreduce", [2 ** 30])
    assert t[("ring", "Simple")][0] == pytest.approx((56.0 + 2 ** 30 / (1000 * bus * 8 / 14)) * 1e-6)
    # Tree bandwidth is corrected at mid sizes: 128 KiB -> log2(128Ki / 64) = 11 -> LL factor 0.5
    lat, tree_ll = tune(NODE, "allreduce")[("tree", "LL")]
    n = 128 * 1024
    assert predict_times(NODE, "allreduce", [n])[("tree", "LL")][0] == pytest.approx((lat + n / (1000 * tree_ll * 0.5)) * 1e-6)


@pytest.mark.parametrize("system", [System("ampere", 8, 1), System("hopper", 8, 1, nvls=False), System("blackwell", 8, 1, nvls=False)],
                         ids=["ampere", "hopper-no-nvls", "blackwell-no-nvls"])
def test_picks_ll_or_tree_small_and_ring_simple_large_on_an_8_gpu_node(system):
    sizes = [8, 1024, 65536, 2 ** 30, 2 ** 33]
    picks, _, _ = choose(system, "allreduce", sizes)
    for (algo, proto), size in zip(picks, sizes):
        if size <= 65536:
            assert proto == "LL" or algo == "tree", (size, algo, proto)
        else:
            assert (algo, proto) == ("ring", "Simple"), (size, algo, proto)


def test_multi_node_small_sizes_pick_tree_and_nvls_wins_large_on_one_hopper_node():
    picks, _, _ = choose(System("hopper", 8, 2), "allreduce", [8, 4096])
    assert [a for a, _ in picks] == ["tree", "tree"]
    picks, _, _ = choose(System("hopper", 8, 1), "allreduce", [2 ** 30])
    assert picks == [("nvls", "Simple")]


def test_one_node_nvls_graph_as_search_cc_builds_it():
    # one channel per GPU; each GPU's NVSwitch link carries (8 + 1) x bwIntra (its own channel twice):
    # H100 18 x 20.6 = 370.8 GB/s fits 9 x 40 (not 9 x 50) from sm90's speeds; B200 18 x 40.1 = 721.8 fits 9 x 80
    # (not 9 x 90); pass 2 raises bwInter while under 2 x bwIntra: 40 -> 50 -> 60 (the top), 80 -> 90 (the top)
    assert node_nvls_graph(System("hopper", 8, 1)) == NvlsGraph(8, 40.0, 60.0)
    assert node_nvls_graph(System("blackwell", 8, 1)) == NvlsGraph(8, 80.0, 90.0)
    assert node_nvls_graph(System("blackwell", 2, 1)) == NvlsGraph(2, 90.0, 90.0)  # 3 x 90 fits
    assert node_nvls_graph(System("ampere", 8, 1)) is None
    slow = System("hopper", 8, 1, bus_bw_GBps=20.0)  # 9 x 3 GB/s (sm90's slowest speed) does not fit: no NVLS graph
    assert node_nvls_graph(slow) is None and not any(a == "nvls" for a, _ in tune(slow, "allreduce"))


def test_nvls_latency_and_bandwidth():
    lat, bw = tune(System("hopper", 8, 1), "allreduce")[("nvls", "Simple")]
    # tuning.cc v2.27.3: NVLink NVLS hop; nChannels x min(bwIntra, bwInter) x 5/6 = 8 x 40 x 5/6
    assert (lat, bw) == (pytest.approx(25.0), pytest.approx(8 * 40 * 5 / 6))
    _, scaled = tune(System("hopper", 8, 1, nvls_efficiency=0.85), "allreduce")[("nvls", "Simple")]
    assert scaled == pytest.approx(bw * 0.85)
    assert ("nvls", "Simple") not in tune(System("hopper", 8, 2), "allreduce")  # no NVLS across nodes (no CollNet)


@pytest.mark.parametrize("arch, intra, inter, ring_bus", [("hopper", 40, 60, 18 * 20.6), ("blackwell", 80, 90, 18 * 40.1)])
def test_nccl_runs_a_ring_not_nvls_for_allgather_and_reduce_scatter_on_one_node(arch, intra, inter, ring_bus):
    # tuning.cc v2.27.3 lines 271-273: nChannels x min(bwIntra (ppn-1)/ppn, 0.9 bwInter), not converted to an
    # algorithm bandwidth (line 321): 8 x 35 = 280 (H100), 8 x 70 = 560 (B200) GB/s against the ring's
    # bus x 8/7 = 424 / 825 GB/s, so NCCL's model picks a ring (LL, LL128, Simple) at every size
    system = System(arch, 8, 1)
    sizes = [2 ** k for k in range(3, 35)]
    for op in ("allgather", "reduce_scatter"):
        lat, bw = tune(system, op)[("nvls", "Simple")]
        assert (lat, bw) == (pytest.approx(25.0), pytest.approx(8 * min(intra * 7 / 8, 0.9 * inter)))
        assert tune(system, op)[("ring", "Simple")][1] == pytest.approx(ring_bus * 8 / 7)
        picks, _, _ = choose(system, op, sizes)
        assert {a for a, _ in picks} == {"ring"}, picks


def test_bad_systems_are_clear():
    with pytest.raises(CollsimError, match="arch: unknown GPU generation 'pascal'"):
        System("pascal")
    with pytest.raises(CollsimError, match="gpus: 0 is not a count of gpus per node"):
        System("hopper", 0)
    with pytest.raises(CollsimError, match="op: NCCL's model covers"):
        tune(NODE, "alltoall")
    with pytest.raises(CollsimError, match="nvls-efficiency"):
        System("hopper", nvls_efficiency=1.5)
    with pytest.raises(CollsimError, match="at least 2 GPUs"):
        System("hopper", 1, 1)


def test_cli_nccl_model(capsys, shared_data):
    assert main(["nccl-model", "--gpus", "8", "--nodes", "2", "--arch", "hopper", "--size", "8,1GiB", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["system"]["ranks"] == 16
    # 1 GiB: NVLS_TREE 66.8 us + 2^30 B / 246.2 GB/s = 4428 us beats ring Simple 1.4 x 131.6 us + 2^30 B / 197.8 GB/s
    # = 5614 us (tuning.cc; the numbers are worked out in test_nvls_tree_latency_and_bandwidth_by_hand)
    assert [r["pick"] for r in data["rows"]] == ["tree/LL", "nvls_tree/Simple"]
    assert main(["nccl-model", "--gpus", "8", "--arch", "hopper"]) == 0
    assert "ring/Simple" in capsys.readouterr().out
    log = next((shared_data / "nccl-tests").glob("04_*.txt"))
    assert main(["nccl-model", "--gpus", "8", "--arch", "hopper", "--compare", str(log), "--json"]) == 0
    cmp = json.loads(capsys.readouterr().out)
    assert len(cmp["rows"]) == 32 and cmp["median_abs_pct_error_ge_64KiB"] > 0
    assert main(["nccl-model", "--gpus", "4", "--arch", "hopper", "--compare", str(log)]) == 2
    assert "has 8 ranks" in capsys.readouterr().err
    assert main(["nccl-model", "--arch", "kepler"]) == 2


def test_cli_writes_predictions_as_an_nccl_tests_log(tmp_path, capsys):
    out = tmp_path / "model.txt"
    assert main(["nccl-model", "--gpus", "8", "--arch", "ampere", "--op", "allgather", "--size", "1MiB,1GiB",
                 "--write-log", str(out)]) == 0
    capsys.readouterr()
    log = read_log(out)
    assert (log.op, log.ranks, [r.bytes for r in log.rows]) == ("allgather", 8, [2 ** 20, 2 ** 30])
    assert log.rows[1].count == 2 ** 30 // 4 // 8  # nccl-tests prints the per-rank count for allgather
    # ring/Simple: 8.4 + 7 x 3.4 us + 1 GiB / (1000 x 240 GB/s x 8/7)
    expected_us = 8.4 + 7 * 3.4 + 2 ** 30 / (1000 * 240 * 8 / 7)
    assert log.rows[1].out.time_s == pytest.approx(expected_us * 1e-6, abs=0.05e-6)


def test_pat_only_at_one_gpu_per_node_for_allgather_and_reduce_scatter():
    # tuning.cc: PAT base 8 us; with one GPU per node its inter-node latency is the tree's network
    # latency (14 us, Simple), a third and a half of it per doubling of nodes, plus 2.8 us per rank;
    # its bus bandwidth is 0.75 of the graph's, not converted for allgather / reduce-scatter.
    flat = System("hopper", 1, 16)
    for op in ("allgather", "reduce_scatter"):
        table = tune(flat, op)
        assert {k for k in table if k[0] == "pat"} == {("pat", "Simple")}
        lat, bw = table[("pat", "Simple")]
        assert lat == pytest.approx(8.0 + 4 * 14.0 / 3.5 + 16 * 2.8)  # 68.8 us
        assert bw == pytest.approx(0.75 * flat.graph_bw_GBps)
        assert table[("ring", "Simple")][0] == pytest.approx(8.4 + 15 * 14.0)  # 218.4: PAT's latency is lower
        picks, _, _ = choose(flat, op, [1 << 10, 1 << 30])
        assert picks == [("pat", "Simple"), ("ring", "Simple")]  # log latency small, the ring's bandwidth large
    assert not any(k[0] == "pat" for k in tune(flat, "allreduce"))  # never for allreduce
    assert not any(k[0] == "pat" for k in tune(System("hopper", 8, 16), "allgather"))  # nor at 8 GPUs per node


def test_nvls_tree_latency_and_bandwidth_by_hand():
    # tuning.cc (NCCL 2.28+): latency = base 0 + hwLat[NVLink][NVLS_TREE][Simple] 25 us + 2 log2(nNodes) x
    # hwLat[net][NVLS_TREE][Simple] 20.9 us; bandwidth = nCh x min(bwIntra x nvlsEfficiency x (nCh-1)/nCh x 2,
    # bwInter x 2 (two nodes) or x 1, perChMaxNVLSTreeBw) x nRanks / nsteps. The NVLS graph of an H100 node with one
    # 400G NIC per GPU, from search.cc: 8 heads; 48 GB/s per channel fits 6 (7 x 48 + 48 > 18 x 20.6), 45 and 42
    # fit 7, 40 fits all 8 (9 x 40 <= 370.8); then bwInter rises to 48 (the NIC's 50 GB/s carries it).
    two = System("hopper", 8, 2)
    assert (two.nvls_graph.channels, two.nvls_graph.bw_intra, two.nvls_graph.bw_inter) == (8, 40.0, 48.0)
    lat, bw = tune(two, "allreduce")[("nvls_tree", "Simple")]
    assert lat == pytest.approx(25.0 + 2 * 1 * 20.9)                                    # 66.8 us
    assert bw == pytest.approx(8 * min(40 * 0.85 * 7 / 8 * 2, 48 * 2, 57.7) * 16 / 30)  # 246.2 GB/s (the 57.7 cap)
    lat4, bw4 = tune(System("hopper", 8, 4), "allreduce")[("nvls_tree", "Simple")]
    assert lat4 == pytest.approx(25.0 + 2 * 2 * 20.9)                                   # 108.6 us
    assert bw4 == pytest.approx(8 * min(59.5, 48.0, 45.5) * 32 / 62)
    # the network plugin's latency counts twice per network hop with Simple (tuning.cc: "flush extra latency")
    lat_net, _ = tune(System("hopper", 8, 2, net_latency_us=3.0), "allreduce")[("nvls_tree", "Simple")]
    assert lat_net == pytest.approx(25.0 + 2 * (20.9 + 3.0 + 3.0))
    # B200: 48 GB/s fits all 8 channels (9 x 48 <= 18 x 40.1), the NIC stops bwInter at 48; intra-bound
    b = System("blackwell", 8, 2)
    assert (b.nvls_graph.channels, b.nvls_graph.bw_intra, b.nvls_graph.bw_inter) == (8, 48.0, 48.0)
    _, bw_b = tune(b, "allreduce")[("nvls_tree", "Simple")]
    assert bw_b == pytest.approx(8 * 48 * 0.74 * 7 / 8 * 2 * 16 / 30)
    # ... and on Blackwell (x86 hosts) NCCL applies the tree's size correction to NVLS_TREE: 1 MiB -> bin 14 -> 0.5
    n = 1 << 20
    lat_b = tune(b, "allreduce")[("nvls_tree", "Simple")][0]
    assert predict_times(b, "allreduce", [n])[("nvls_tree", "Simple")][0] == pytest.approx((lat_b + n / (1000 * bw_b * 0.5)) * 1e-6)
    assert predict_times(two, "allreduce", [n])[("nvls_tree", "Simple")][0] == pytest.approx((lat + n / (1000 * bw)) * 1e-6)


def test_nvls_graph_follows_the_nics():
    # 200G NICs (25 GB/s): the search starts at 24 GB/s, where all 8 channels fit; no higher speed fits the NIC
    g = System("hopper", 8, 2, nic_bw_GBps=25.0).nvls_graph
    assert (g.channels, g.bw_intra, g.bw_inter) == (8, 24.0, 24.0)
    # four NICs for eight GPUs: four heads, so four channels (one per GPU with a NIC); 48 GB/s fits them
    g = System("hopper", 8, 2, nics_per_node=4).nvls_graph
    assert (g.channels, g.bw_intra, g.bw_inter) == (4, 48.0, 48.0)
    # p5: 32 x 100G EFA, four per GPU, grouped by aws-ofi-nccl into one 400G device per GPU
    g = System("hopper", 8, 2, nic_bw_GBps=12.5, nics_per_node=32).nvls_graph
    assert (g.channels, g.bw_intra, g.bw_inter) == (8, 40.0, 48.0)


@pytest.mark.parametrize("system, op", [
    (System("hopper", 8, 1), "allreduce"),               # tuning.cc: disabled on a single node
    (System("ampere", 8, 2), "allreduce"),               # no NVLS graph before Hopper
    (System("ampere", 8, 2, nvls=True), "allreduce"),    # ... even if asked for
    (System("hopper", 8, 2, nvls=False), "allreduce"),   # NCCL_NVLS_ENABLE=0 (a3-mega's TCPXO profile)
    (System("hopper", 8, 2, link="pcie"), "allreduce"),  # no NVSwitch
    (System("hopper", 8, 2), "allgather"),               # allreduce only
    (System("hopper", 8, 2), "reduce_scatter"),
    (System("hopper", 8, 2, protocols=("LL", "LL128")), "allreduce"),  # Simple only
])
def test_nvls_tree_absent_where_nccl_leaves_it_out(system, op):
    assert not any(a == "nvls_tree" for a, _ in tune(system, op))


def test_nvls_tree_only_with_simple():
    assert [k for k in tune(System("blackwell", 8, 2), "allreduce") if k[0] == "nvls_tree"] == [("nvls_tree", "Simple")]


def test_cli_nccl_model_shows_the_nvls_tree_column(capsys):
    assert main(["nccl-model", "--gpus", "8", "--nodes", "2", "--arch", "hopper", "--size", "1GiB"]) == 0
    out = capsys.readouterr().out
    assert "nvls_tree/Simple: 66.8 us + n / 246.2 GB/s" in out
    assert out.rstrip().endswith("nvls_tree/Simple")


def test_latency_tables_of_older_releases_as_tuning_cc_had_them():
    # NVIDIA/nccl src/graph/tuning.cc: v2.19.3 - v2.22.3 charge a tree Simple step 28 us on NVLink, PCIe and the
    # network, with no base latency; v2.23.4 on 4.0 / 4.0 / 14 and 8.4 us base. NVLS (NVLink) 23 us in v2.20.3, 25 since
    # v2.21.5; NVLS_TREE's network step 14 us up to v2.28.7, 20.9 in v2.28.9 and master.
    from simulator.nccl.tuning import latency_us, parse_nccl_version

    v220, v223 = parse_nccl_version("2.20.3"), parse_nccl_version("2.23")
    assert [latency_us(t, "tree", "Simple", v220) for t in ("base", "nvlink", "pcie", "net")] == [0.0, 28.0, 28.0, 28.0]
    assert [latency_us(t, "tree", "Simple", v223) for t in ("base", "nvlink", "pcie", "net")] == [8.4, 4.0, 4.0, 14.0]
    assert [latency_us(t, "tree", "Simple") for t in ("base", "nvlink", "pcie", "net")] == [8.4, 4.0, 4.0, 14.0]
    assert latency_us("nvlink", "tree", "LL128", v220) == 1.25 and latency_us("net", "ring", "Simple", v220) == 14.0
    assert latency_us("nvlink", "nvls", "Simple", v220) == 23.0
    assert latency_us("nvlink", "nvls", "Simple", parse_nccl_version("2.21.5")) == 25.0
    assert latency_us("net", "nvls_tree", "Simple", parse_nccl_version("2.28.7")) == 14.0
    assert latency_us("net", "nvls_tree", "Simple", parse_nccl_version("2.28.9")) == 20.9
    # the model's latency follows: a 2-node tree Simple allreduce on 16 H100s, 8.4 + 2 (7 x 4 + 14) = 92.4 us in master,
    # 0 + 2 (7 x 28 + 28) = 448 us in v2.20.3
    master = System("hopper", 8, 2)
    assert tune(master, "allreduce")[("tree", "Simple")][0] == pytest.approx(92.4)
    assert tune(replace(master, nccl_version=v220), "allreduce")[("tree", "Simple")][0] == pytest.approx(448.0)


@pytest.mark.parametrize("text, expected", [("2.20.3", (2, 20, 3)), ("2.21", (2, 21)), ("v2.20.3-1", (2, 20, 3)),
                                            ("latest", None), (None, None), ("master", None)])
def test_nccl_version_parsing(text, expected):
    from simulator.nccl.tuning import parse_nccl_version

    assert parse_nccl_version(text) == expected


@pytest.mark.parametrize("text, match", [("2.3", "older than"), ("2.18.1", "older than"), ("two", "MAJOR.MINOR"),
                                         ("2", "MAJOR.MINOR"), ("2.20.3.1", "MAJOR.MINOR"), ("", "MAJOR.MINOR")])
def test_nccl_version_refused(text, match):
    from simulator.nccl.tuning import parse_nccl_version

    with pytest.raises(CollsimError, match=f"nccl-version: .*{match}"):
        parse_nccl_version(text)


def test_cli_nccl_model_takes_a_release(capsys):
    # v2.20.3: tree Simple on 2 nodes of 8 H100 is 0 + 2 (7 x 28 + 28) = 448 us of latency (92.4 in master)
    assert main(["nccl-model", "--gpus", "8", "--nodes", "2", "--size", "1MiB", "--nccl-version", "2.20.3"]) == 0
    assert "tree/Simple: 448.0 us" in capsys.readouterr().out
    assert main(["nccl-model", "--gpus", "8", "--nodes", "2", "--size", "1MiB"]) == 0
    assert "tree/Simple: 92.4 us" in capsys.readouterr().out


def test_two_node_tree_takes_the_tree_graphs_bw_intra_on_blackwell():
    # tuning.cc: nNodes <= 2 -> bwIntra, which search.cc raises up to 2 x bwInter: min(18 x 40.1, 2 x 8 x 50) = 721.8
    two, four = System("blackwell", 8, 2), System("blackwell", 8, 4)
    assert two.tree_bw_GBps == pytest.approx(721.8) and four.tree_bw_GBps == pytest.approx(400.0)
    # tree Simple: min(bus x 0.92, 16 ch x perChMaxTreeBw (42.8 on 2 nodes, 24.0 on more)) x 0.5
    assert tune(two, "allreduce")[("tree", "Simple")][1] == pytest.approx(min(721.8 * 0.92, 16 * 42.8) * 0.5)  # 332.0
    assert tune(four, "allreduce")[("tree", "Simple")][1] == pytest.approx(min(400 * 0.92, 16 * 24.0) * 0.5)   # 184.0
    # so at 1 GiB NCCL's model runs the tree on two nodes (332 GB/s against NVLS_TREE's 265.2), NVLS-tree on four
    assert choose(two, "allreduce", [1 << 30])[0] == [("tree", "Simple")]
    assert choose(four, "allreduce", [1 << 30])[0] == [("nvls_tree", "Simple")]


def test_blackwell_ll128_caps_are_nccl_2_30s():
    # ring LL128: min(721.8 x 0.92, 16 x 40.0) = 640 bus -> x 8 / 14; tree LL128 on 4 nodes: min(400 x 120/128, 16 x 20)
    one = System("blackwell", 8, 1, nvls=False)
    assert tune(one, "allreduce")[("ring", "LL128")][1] == pytest.approx(640.0 * 8 / 14)
    assert tune(System("blackwell", 8, 4), "allreduce")[("tree", "LL128")][1] == pytest.approx(320.0 * 0.5)
