"""collsim predict: NCCL's protocol constants reach the engine, picks follow NCCL's model, the table reads back as a log."""

import json
from dataclasses import replace

import pytest

from app.cli import main
from simulator.errors import CollsimError
from simulator.formats.nccl_tests import read_log
from simulator.nccl.predict import candidates, machine_of, nccl_pick, predict, run_pick
from simulator.nccl.protocols import protocol, with_step_latency
from simulator.topology.spec import parse_topology


def test_protocol_constants_are_nccls():
    # NVIDIA/nccl src/graph/tuning.cc: baseLat ring {6.6, 14.0, 8.4} us; hwLat NVLink ring {0.6, 1.9, 3.4} us,
    # network ring {2.7, 4.0, 14.0}; tree base {6.8, 14.0, 8.4}; LL moves 4 data bytes per 8, LL128 charged at 0.92
    ll = protocol("LL", "ring", "nvlink")
    assert (ll.base_s, ll.intra_s, ll.net_s, ll.byte_factor) == pytest.approx((6.6e-6, 0.6e-6, 2.7e-6, 2.0))
    simple = protocol("Simple", "ring", "nvlink", multinode=True)
    assert (simple.base_s, simple.intra_s, simple.net_s, simple.byte_factor) == pytest.approx((8.4e-6, 3.4e-6, 14e-6, 1.0))
    assert protocol("LL128", "tree", "pcie").byte_factor == pytest.approx(1 / 0.92)
    assert protocol("LL", "ring", "pcie", multinode=True).intra_s == pytest.approx(1.0e-6)  # max(1.0, net overhead 1)


def test_step_latency_on_every_route():
    topo = with_step_latency(parse_topology("p4de:nodes=2"), 2e-6, 10e-6)
    assert topo.path_cost(0, 7)[0] == pytest.approx(2e-6)    # GPU -> NVSwitch -> GPU
    assert topo.path_cost(0, 15)[0] == pytest.approx(10e-6)  # GPU -> NIC -> leaf -> NIC -> GPU
    box = with_step_latency(parse_topology("pcie-8gpu"), 2e-6, 10e-6)
    assert box.path_cost(0, 7)[0] == pytest.approx(2e-6)     # across sockets too: one step inside the node


def test_one_node_simple_time_by_hand():
    # dgx-a100 (Ampere: no NVLS), 8 ranks, Simple forced, 64 MiB: 14 ring steps, each 3.4 us + n/p over the GPU's
    # switch link at NCCL's figure, 12 lanes x 20.0 GB/s = 240 GB/s (topo.h SM80_NVLINK_BW; the channels share it),
    # plus the 8.4 us base latency
    n = 64 << 20
    row = predict(parse_topology("dgx-a100"), "allreduce", [n], proto="Simple")[0]
    assert (row.proto, row.algorithm) == ("Simple", "nccl_ring")
    want = 8.4e-6 + 14 * (3.4e-6 + n / 8 / 240e9)
    assert row.time_s == pytest.approx(want, rel=1e-6)


def test_picks_follow_nccls_model():
    system, per_node = machine_of(parse_topology("p5:nodes=2"), 16)
    assert (system.arch, system.nodes, system.gpus_per_node, system.nics_per_node, per_node) == ("hopper", 2, 8, 32, 8)
    assert system.nic_bw_GBps == pytest.approx(12.5)
    assert nccl_pick(system, "allreduce", 1 << 10)[1] == "LL"
    assert nccl_pick(system, "allreduce", 1 << 10, proto="Simple")[1] == "Simple"
    trays, _ = machine_of(parse_topology("gb200-nvl4:nodes=2"), 8)
    assert (trays.nodes, trays.gpus_per_node) == (1, 8)  # one NVLink domain: NCCL sees one node (MNNVL)


def test_more_rails_more_bandwidth_across_nodes():
    big = 1 << 30
    p4de = predict(parse_topology("p4de:nodes=2"), "allreduce", [big], proto="Simple")[0]
    p5 = predict(parse_topology("p5:nodes=2"), "allreduce", [big], proto="Simple")[0]
    # p4de: 4 x 12.5 GB/s per node, p5: 8 x 50 GB/s: the inter-node part is 8x faster
    assert p4de.time_s > 4 * p5.time_s


def test_cli_writes_an_nccl_tests_log_that_reads_back(tmp_path, capsys):
    out = tmp_path / "p.txt"
    assert main(["predict", "--preset", "hgx-b200", "--op", "allgather", "--size", "1MiB:4MiB", "--nccl-log", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "nccl-tests format" in printed and "wrote nccl-tests log" in printed
    log = read_log(out)
    assert (log.op, log.ranks) == ("allgather", 8)
    assert [s for s, _ in log.measurements()] == [1 << 20, 2 << 20, 4 << 20]
    assert main(["predict", "--preset", "p5", "--size", "1KiB", "--proto", "ll128", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["rows"][0]["protocol"] == "LL128" and data["ranks"] == 8


def test_extra_network_latency_only_across_nodes():
    one = [predict(parse_topology("p5"), "allreduce", [1 << 20], net_extra_s=x)[0].time_s for x in (0.0, 1e-3)]
    assert one[0] == one[1]
    two = [predict(parse_topology("p5:nodes=2"), "allreduce", [1 << 20], net_extra_s=x)[0].time_s for x in (0.0, 1e-3)]
    assert two[1] >= two[0] + 2e-3 * (1 - 1e-9)  # at least the two steps across nodes (the tree: one up, one down)


def test_ll_is_capped_at_nccls_ll_max_bandwidth_on_one_node():
    # tuning.cc: LL's bus bandwidth is min(llMaxBw, 0.5 x graph bw); Hopper, one node: llMaxBw = 141 GB/s, so the
    # ring's 370.8 GB/s link carries LL payload at 141 GB/s (wire factor 370.8/141), not at half its rate
    n = 1 << 20
    row = predict(parse_topology("p5"), "allreduce", [n], proto="LL")[0]
    want = 6.6e-6 + 14 * (0.6e-6 + n / 8 / 141e9)
    assert row.time_s == pytest.approx(want, rel=1e-6)


def test_two_nodes_run_the_tree_above_any_rings_nic_bound():
    # p5: 8 x 50 GB/s of NICs per node; a ring pushes 2 (p-1)/p n through them, so its busbw is at most 400 GB/s.
    # NCCL's tree on two nodes moves n per node each way (each node is the root of one tree and the child in the
    # other: busbw up to 1.875 x 400 = 750 GB/s through the NICs) but each channel's chain of 8 GPUs sends 7 edges
    # up and 7 down, 14 x 16 channels x n/16 over 8 GPUs = 1.75 n through each GPU's NVLink at NCCL's 370.8 GB/s:
    # busbw <= 1.875 x 370.8 / 1.75 = 397.3 GB/s.
    n = 1 << 30
    topo = parse_topology("p5:nodes=2")
    system, per_node = machine_of(topo, 16)
    row = run_pick(topo, system, per_node, "allreduce", n, 16, "tree", "Simple")
    busbw = n / row.time_s * 2 * 15 / 16
    assert row.algorithm == "nccl_tree" and 0.9 * 397.3e9 < busbw < 397.3e9


def test_two_nvswitch_nodes_run_nvls_tree_where_nccl_picks_it():
    # NCCL's model picks NVLS_TREE for large allreduce on two Hopper NVSwitch nodes (tests/simulator/test_nccl_model.py),
    # and predict runs that schedule as picked (no ring / tree alternative). Its busbw beats the ring's NIC bound
    # (400 GB/s) and stays under NCCL's per-channel cap: the NVLS graph's 8 channels x perChMaxNVLSTreeBw 57.7 GB/s
    # (tuning.cc; under min(40 x 0.85 x 7/8 x 2, 48 x 2) per channel) = 461.6 GB/s, below the 637.5 GB/s the switch
    # links alone would allow (each GPU sends n + n/8 up a link at 0.85 x 450 GB/s: 1.875 x 382.5 / 1.125).
    n = 1 << 30
    topo = parse_topology("p5:nodes=2")
    system, _ = machine_of(topo, 16)
    assert candidates(system, "allreduce", n) == [("nvls_tree", "Simple")]
    row = predict(topo, "allreduce", [n])[0]
    busbw = n / row.time_s * 2 * 15 / 16
    assert (row.nccl_algo, row.algorithm, row.proto, row.channels) == ("nvls_tree", "nvls_tree", "Simple", 16)
    assert 400e9 < busbw <= 461.6e9
    # NCCL's NVLS_TREE latency is charged once: 25 + 2 x (20.9 + 2 x 75) us, with p5's EFA plugin latency (75 us,
    # aws-ofi-nccl) on each network hop, twice for Simple (tuning.cc)
    assert row.base_s == pytest.approx(366.8e-6)
    # below NVLS_TREE's range NCCL picks the tree, and predict still times the ring next to it
    assert [a for a, _ in candidates(system, "allreduce", 1 << 20)] == ["tree", "ring"]
    # four nodes: two network hops each way in NCCL's latency (25 + 4 x 20.9 us); 32 ranks, still 16 channels
    four = predict(parse_topology("dgx-h100:nodes=4"), "allreduce", [64 << 20])[0]
    assert (four.algorithm, four.channels) == ("nvls_tree", 16) and four.base_s == pytest.approx(108.6e-6)
    # Ampere (p4de) has no NVLS: never NVLS_TREE
    p4de, _ = machine_of(parse_topology("p4de:nodes=2"), 16)
    assert all(a != "nvls_tree" for a, _ in candidates(p4de, "allreduce", n))


def _errors(shared_data, name, spec, nvls_step_s=None):
    log = read_log(shared_data / "nccl-tests" / name)
    rows = [(s, t) for s, t in log.measurements() if s >= 1 << 20]
    preds = predict(parse_topology(spec), log.op, [s for s, _ in rows], ranks=log.ranks, nvls_step_s=nvls_step_s)
    return [(p.time_s - t) / t for (_, t), p in zip(rows, preds)]


@pytest.mark.parametrize("name, spec, nvls_step_s", [
    ("04_h100_p5_1node_8gpu_allreduce_awsbatch.txt", "p5", 1.8e-6),
    ("05_gb200_mnnvl_2node_8gpu_allreduce.txt", "gb200-nvl4:nodes=2", 1.2e-6),
    ("07_b200_hgx_1node_8gpu_allreduce.txt", "hgx-b200", 1.2e-6),
])
def test_one_node_nvls_logs_within_the_goal(shared_data, name, spec, nvls_step_s):
    # the claim of docs/accuracy.md: median <= 15%, worst <= 40%, with the NVLS step cost fitted on the *other*
    # NVLS logs (python -m benchmarks.nvls_step prints these), nothing fitted to this log
    err = sorted(abs(e) for e in _errors(shared_data, name, spec, nvls_step_s))
    assert err[len(err) // 2] <= 0.15 and err[-1] <= 0.40


@pytest.mark.slow
def test_two_node_logs_largest_size_within_15_percent(shared_data):
    # 03 (p5) runs NVLS-tree there, NCCL's pick, at NCCL's per-channel cap
    for name, spec in (("01_h100_a3mega_2node_16gpu_tcpxo_allreduce.txt", "a3-mega:nodes=2"),
                       ("02_a100_p4de_2node_16gpu_efa_allreduce.txt", "p4de:nodes=2"),
                       ("03_h100_p5_2node_16gpu_efa_allreduce.txt", "p5:nodes=2")):
        assert abs(_errors(shared_data, name, spec)[-1]) <= 0.15, name


def test_tuner_csv_merges_equal_picks_into_ranges():
    from collsim.predict import tuner_csv
    from simulator.nccl.predict import Prediction

    def row(size, algorithm, proto):
        return Prediction(size, size // 4, "x", proto, algorithm, 16, 1.0, 1.0, 0.0)

    text = tuner_csv("reduce_scatter", 16, [row(1024, "nccl_ring", "LL"), row(2048, "nccl_ring", "LL"),
                                            row(4096, "nccl_tree", "Simple")], 2)
    assert text.splitlines()[2:] == ["reducescatter,0,2048,ring,ll,16,2,16",
                                     "reducescatter,2049,4294967295,tree,simple,16,2,16"]


def test_cli_tuner_csv(tmp_path, capsys):
    out = tmp_path / "tuner.csv"
    assert main(["predict", "--preset", "p4de:nodes=2", "--size", "1MiB,1GiB", "--csv", str(out)]) == 0
    rows = [line.split(",") for line in out.read_text().splitlines() if not line.startswith("#")]
    assert rows[0][:2] == ["allreduce", "0"] and rows[-1][2] == "4294967295"
    assert all(r[6:] == ["2", "16"] and r[4] in ("ll", "ll128", "simple") for r in rows)


def test_host_staged_ring_time_by_hand():
    # rtx4090-pcie with a 3 GB/s SHM load rate, 4 ranks, Simple forced, 64 MiB: 6 ring steps, each tuning.cc's PCIe
    # ring Simple step latency (5.7 us) + n/p through the receiver's host -> GPU link (both channels share it), plus
    # the 8.4 us base latency
    from simulator.topology.presets import build_preset

    topo = build_preset("rtx4090-pcie", shm_Bps=3e9)
    n = 64 << 20
    row = predict(topo, "allreduce", [n], proto="Simple")[0]
    assert row.time_s == pytest.approx(8.4e-6 + 6 * (5.7e-6 + n / 4 / 3e9), rel=1e-6)


def test_tcpxo_profile_simple_only_8mib_buffers_no_nvls():
    # Google's TCPXO profile (nccl-env-profile.sh): NCCL_PROTO=Simple, NCCL_BUFFSIZE=8388608, NCCL_NVLS_ENABLE=0
    from simulator.nccl.predict import tree_pipeline
    from simulator.nccl.tuning import System

    mega, per_node = machine_of(parse_topology("a3-mega:nodes=2"), 16)
    assert mega.protocols == ("Simple",) and per_node == 8
    assert all(nccl_pick(mega, "allreduce", n)[1] == "Simple" for n in (1 << 10, 1 << 20, 1 << 30))
    assert nccl_pick(machine_of(parse_topology("p5:nodes=2"), 16)[0], "allreduce", 1 << 10)[1] != "Simple"
    # tree steps: 256 MiB over 16 channels in steps of 8 MiB / NCCL_STEPS = 1 MiB: 16 per channel; NCCL's default
    # 4 MiB buffer on dgx-h100: 512 KiB steps, 32
    assert tree_pipeline(mega, "Simple", 256 << 20, 16, 16, 16) == (16, 8)
    dgx, _ = machine_of(parse_topology("dgx-h100:nodes=2"), 16)
    assert tree_pipeline(dgx, "Simple", 256 << 20, 16, 16, 16) == (32, 8)
    # 64 nodes: 1 GiB would take 128 steps per channel; 2^19 transfers allow 32 chunks (2 x 511 x 16 per chunk), each
    # four of NCCL's steps, so 2 chunks in flight carry NCCL's 8 steps
    big, _ = machine_of(parse_topology("dgx-h100:nodes=64"), 512)
    assert tree_pipeline(big, "Simple", 1 << 30, 16, 512, 16) == (32, 2)
    assert predict(parse_topology("a3-mega"), "allreduce", [1 << 30])[0].nccl_algo == "ring"
    assert predict(parse_topology("p5"), "allreduce", [1 << 30])[0].nccl_algo == "nvls"
    with pytest.raises(CollsimError, match="proto: .*Bogus"):
        System(protocols=("Bogus",))


def test_p4de_runs_simple_only_as_the_efa_plugin_sets_it():
    # aws-ofi-nccl sets NCCL_PROTO=simple where the EFA endpoint cannot order 128-byte stores (p4d/p4de); p5's EFA can
    p4de, _ = machine_of(parse_topology("p4de:nodes=2"), 16)
    assert p4de.protocols == ("Simple",)
    assert {nccl_pick(p4de, "allreduce", n)[1] for n in (8, 1 << 20, 1 << 30)} == {"Simple"}
    assert {r.proto for r in predict(parse_topology("p4de:nodes=2"), "allreduce", [1 << 10, 16 << 20])} == {"Simple"}


@pytest.mark.slow
def test_p4de_log_within_the_goal(shared_data):
    # docs/accuracy.md: log 02 (2 x p4de) at median <= 15%, worst <= 40% over sizes >= 1 MiB, nothing fitted to it
    err = sorted(abs(e) for e in _errors(shared_data, "02_a100_p4de_2node_16gpu_efa_allreduce.txt", "p4de:nodes=2"))
    assert err[len(err) // 2] <= 0.15 and err[-1] <= 0.40


def test_efa_plugin_latency_is_charged_as_nccls_model_charges_it():
    # aws-ofi-nccl platform-aws.cpp reports 75 us for p4de and p5 (since May 2023); tuning.cc adds it to
    # each inter-node step of its latency formula, twice for Simple: ring allreduce on 2 nodes has 2 (N - 1) = 2 such
    # steps, the tree 2 log2(N) = 2.
    from simulator.nccl.predict import plugin_latency_s, tree_pipeline

    p5, _ = machine_of(parse_topology("p5:nodes=2"), 16)
    assert p5.net_latency_us == 75.0
    # the logs' era: NCCL's 4 MiB buffers, 512 KiB tree steps: 256 MiB on 16 channels in 32 steps each
    assert tree_pipeline(p5, "Simple", 256 << 20, 16, 16, 16) == (32, 8)
    assert plugin_latency_s(p5, "allreduce", "ring", "Simple") == pytest.approx(2 * 2 * 75e-6)
    assert plugin_latency_s(p5, "allreduce", "tree", "LL128") == pytest.approx(2 * 75e-6)
    p4de4, _ = machine_of(parse_topology("p4de:nodes=4"), 32)
    assert plugin_latency_s(p4de4, "allreduce", "ring", "Simple") == pytest.approx(2 * 2 * 3 * 75e-6)
    assert plugin_latency_s(p4de4, "allreduce", "tree", "Simple") == pytest.approx(2 * 2 * 2 * 75e-6)
    # NCCL's own InfiniBand transport reports none; nor does p5 on a network that is not its EFA, nor one node
    assert machine_of(parse_topology("dgx-h100:nodes=2"), 16)[0].net_latency_us == 0
    assert machine_of(parse_topology("p5:nodes=2,net=ib400"), 16)[0].net_latency_us == 0
    assert plugin_latency_s(machine_of(parse_topology("p5"), 8)[0], "allreduce", "ring", "LL") == 0
    # and predict pays it once per call, on top of the protocol's base latency (tree LL128: 14 us)
    row = predict(parse_topology("p5:nodes=2"), "allreduce", [1 << 20], proto="LL128")[0]
    assert (row.nccl_algo, row.algorithm) == ("tree", "nccl_tree")
    assert row.base_s == pytest.approx(14e-6 + 2 * 75e-6)


def test_rings_run_at_nccls_nvlink_figure():
    # topo.h SM100_NVLINK_BW: NCCL counts 40.1 GB/s per NVLink 5 lane, 18 lanes = 721.8 GB/s per GPU for its rings,
    # not the datasheet's 900; a ring allgather at 16 GiB on 8 B200 then reaches busbw just under 721.8 GB/s
    n = 16 << 30
    row = predict(parse_topology("hgx-b200"), "allgather", [n])[0]
    busbw = n / row.time_s * 7 / 8
    assert row.algorithm == "nccl_ring" and 0.99 * 721.8e9 < busbw < 721.8e9
    # the switch links stay as built for NVLS (nvlsEfficiency of the datasheet's 450 GB/s on H100, run_nvls), and a
    # PCIe machine is left alone
    from simulator.nccl.predict import nccl_graph_view

    topo = parse_topology("p5")
    capped = nccl_graph_view(topo, machine_of(topo, 8)[0])
    assert topo.path_cost(0, 1)[1] == pytest.approx(450e9) and capped.path_cost(0, 1)[1] == pytest.approx(20.6e9 * 18)
    box = parse_topology("rtx4090-pcie")
    assert nccl_graph_view(box, machine_of(box, 4)[0]) is box


def test_forced_algorithm_runs_alone_with_nccls_protocol_for_it():
    # NCCL_ALGO=Ring on two p5 nodes at 512 MiB: NCCL's own pick there is NVLS-tree; forced, the ring runs alone
    topo = parse_topology("p5:nodes=2")
    auto = predict(topo, "allreduce", [512 << 20])[0]
    ring = predict(topo, "allreduce", [512 << 20], algo="Ring")[0]
    assert auto.nccl_algo == "nvls_tree" and (ring.nccl_algo, ring.algorithm) == ("ring", "nccl_ring")
    system, _ = machine_of(topo, 16)
    assert ring.proto == nccl_pick(system, "allreduce", 512 << 20, algos=("ring",))[1]
    # a forced tree across nodes is not swapped for the ring even where the ring would be faster
    assert {r.nccl_algo for r in predict(topo, "allreduce", [1 << 20, 64 << 20], algo="tree")} == {"tree"}
    with pytest.raises(CollsimError, match=r"algo: NCCL has no nvls for allreduce .*ampere.*expected one of ring, tree"):
        predict(parse_topology("p4de:nodes=2"), "allreduce", [1 << 20], algo="NVLS")
    with pytest.raises(CollsimError, match=r"algo: 'collnet' .*NVLSTree"):
        predict(topo, "allreduce", [1 << 20], algo="collnet")


def test_forced_channels_scale_a_ring_by_its_share_of_the_graph():
    # one B200 node, 1 GiB ring Simple: 4 channels carry 4/16 of the graph's bandwidth, so the engine's (bandwidth-bound)
    # time is about 4x; more channels than the graph's 16 are bound by the links and time as 16
    topo = parse_topology("hgx-b200")
    run = {c: predict(topo, "allreduce", [1 << 30], proto="Simple", algo="ring", channels=c)[0] for c in (4, 16, 32)}
    assert run[4].channels == 4 and 3.6 < run[4].engine_s / run[16].engine_s <= 4.0
    assert run[32].engine_s == pytest.approx(run[16].engine_s, rel=1e-9)
    # NVLS keeps NCCL's own channels (forcing applies to ring and tree)
    nvls = predict(parse_topology("p5"), "allreduce", [1 << 30], channels=4)[0]
    assert nvls.nccl_algo == "nvls" and nvls.channels == predict(parse_topology("p5"), "allreduce", [1 << 30])[0].channels
    for bad in (0, 65, 2.5, True):
        with pytest.raises(CollsimError, match="channels: .*1 to 64"):
            predict(topo, "allreduce", [1 << 20], channels=bad)


def test_cli_forced_algo_and_channels_in_the_table_and_json(capsys):
    assert main(["predict", "--preset", "p5:nodes=2", "--size", "1MiB,64MiB", "--algo", "Ring", "--channels", "8"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# collsim predict p5:nodes=2 --algo Ring --channels 8") and "forced: --algo Ring --channels 8" in out
    assert main(["predict", "--preset", "p5:nodes=2", "--size", "1MiB,64MiB", "--algo", "Ring", "--channels", "8",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["algo"], data["channels"]) == ("ring", 8)
    assert all((r["nccl_algorithm"], r["channels"]) == ("ring", 8) for r in data["rows"])


def test_nccl_version_sets_the_step_costs_and_the_picks():
    # tuning.cc before v2.23: a tree Simple step costs 28 us (NVLink and network) and no base latency, so on two p4de
    # nodes (Simple only) NCCL v2.20.3's model ranks the ring first at 1 MiB where master's ranks the tree
    from simulator.nccl.protocols import protocol

    cost = protocol("Simple", "tree", "nvlink", True, (2, 20, 3))
    assert (cost.base_s, cost.intra_s, cost.net_s) == pytest.approx((0.0, 28e-6, 28e-6))
    topo = parse_topology("p4de:nodes=2")
    system, _ = machine_of(topo, 16)
    assert nccl_pick(system, "allreduce", 1 << 20) == ("tree", "Simple")
    assert nccl_pick(replace(system, nccl_version=(2, 20, 3)), "allreduce", 1 << 20) == ("ring", "Simple")
    # forced tree: the same schedule with 28 us steps is slower in v2.20.3
    new, old = (predict(topo, "allreduce", [1 << 20], algo="tree", nccl_version=v)[0] for v in (None, "2.20.3"))
    assert old.time_s > new.time_s
    with pytest.raises(CollsimError, match="nccl-version: '2.3'"):
        predict(topo, "allreduce", [1 << 20], nccl_version="2.3")


def test_cli_nccl_version(capsys):
    assert main(["predict", "--preset", "p4de:nodes=2", "--size", "1MiB", "--nccl-version", "2.20.3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["nccl_version"] == "2.20.3"
    assert main(["predict", "--preset", "p4de:nodes=2", "--size", "1MiB", "--nccl-version", "2.20.3"]) == 0
    assert capsys.readouterr().out.startswith("# collsim predict p4de:nodes=2 --nccl-version 2.20.3")


@pytest.mark.parametrize("spec,op,ranks,per_node", [("dgx-h100", "allreduce", 8, None), ("p5:nodes=2", "allgather", 16, 8),
                                                    ("p4de:nodes=2", "reduce_scatter", 2, 1)])
def test_an_empty_call_takes_no_time_and_leaves_the_other_sizes_alone(spec, op, ranks, per_node):
    # NCCL discards a collective of count 0 (src/enqueue.cc, taskAppend): nothing is picked, launched or timed
    topology = parse_topology(spec)
    empty, one = predict(topology, op, [0, 1 << 20], ranks=ranks, ranks_per_node=per_node)
    assert (empty.time_s, empty.engine_s, empty.base_s, empty.channels, empty.algorithm) == (0.0, 0.0, 0.0, 0, "discarded")
    assert one == predict(topology, op, [1 << 20], ranks=ranks, ranks_per_node=per_node)[0]
    assert one.time_s > 0


def test_cli_says_an_empty_call_is_discarded_and_keeps_it_out_of_the_tuner_csv(tmp_path, capsys):
    out, log = tmp_path / "tuner.csv", tmp_path / "p.txt"
    assert main(["predict", "--preset", "dgx-h100", "--size", "0,4KiB", "--csv", str(out), "--nccl-log", str(log)]) == 0
    text = capsys.readouterr().out
    assert "# 0 B: NCCL discards a collective of count 0 (src/enqueue.cc, taskAppend) and runs nothing: 0 s" in text
    zero, size = ((r.bytes, r.timing("out").time_s) for r in read_log(log).rows)
    assert zero == (0, 0.0) and size[0] == 4096 and size[1] > 0
    rows = [line.split(",") for line in out.read_text().splitlines() if not line.startswith("#")]
    assert len(rows) == 1 and rows[0][1:3] == ["0", "4294967295"] and rows[0][3] != "discarded"
    assert main(["predict", "--preset", "dgx-h100", "--size", "0", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert (row["bytes"], row["time_s"], row["schedule"]) == (0, 0.0, "discarded")


# ---- fastest: a candidate whose lower bound cannot beat the best time is not run ------------------------------------


def _plans(preset: str, size: int):
    from simulator.nccl.calibration import for_protocol
    from simulator.nccl.predict import plan_ring_tree

    topo = parse_topology(preset)
    system, per_node = machine_of(topo, topo.num_devices)
    return [plan_ring_tree(for_protocol(topo, proto), system, per_node, "allreduce", size, topo.num_devices, algo, proto)
            for algo, proto in candidates(system, "allreduce", size)]


@pytest.mark.slow
@pytest.mark.parametrize("preset, size", [("dgx-a100:nodes=4", 1 << 20), ("dgx-a100:nodes=4", 1 << 30),
                                          ("p4de:nodes=2", 4 << 20), ("a3-mega:nodes=2", 8 << 20)])
def test_fastest_is_the_min_of_running_every_candidate(preset, size, monkeypatch):
    from simulator.nccl.predict import Plan, fastest

    plans = _plans(preset, size)
    every = [plan.run() for plan in plans]
    ran = []
    monkeypatch.setattr(Plan, "run", lambda self, run=Plan.run: ran.append(self) or run(self))
    assert fastest(plans) == min(every, key=lambda r: r.time_s)
    if preset == "dgx-a100:nodes=4":  # ring and tree far apart there: the loser's bound is above the winner's time
        assert len(ran) == 1


def test_fastest_keeps_the_first_of_a_tie():
    from simulator.nccl.predict import fastest

    plan = _plans("p4de:nodes=2", 1 << 20)[0]
    named = [replace(plan, finish=lambda s, name=name: replace(plan.finish(s), algorithm=name)) for name in "ab"]
    assert fastest(named).algorithm == "a" and fastest(named[::-1]).algorithm == "b"


@pytest.mark.parametrize("preset, bus_GBps", [("hgx-b200", 16 * 40.0), ("dgx-h100", 18 * 20.6 * 0.92)],
                         ids=["b200-nccl-cap", "h100-links"])
def test_one_node_ring_ll128_runs_at_the_lower_of_nccls_cap_and_the_links(preset, bus_GBps):
    # 1 GiB forced Ring LL128 on 8 GPUs: 2 x 7/8 of the bytes at the bus rate, plus 14 steps of LL128's 1.9 us.
    # B200: tuning.cc's 16 channels x perChMaxRingLL128Bw 40 = 640 GB/s binds (the links give 0.92 x 18 x 40.1 = 664);
    # H100: the links' 0.92 x 18 x 20.6 = 341 GB/s bind (16 x 36.7 = 587 is above them)
    n = 1 << 30
    row = predict(parse_topology(preset), "allreduce", [n], algo="Ring", proto="LL128")[0]
    assert (row.proto, row.channels) == ("LL128", 16)
    assert row.engine_s == pytest.approx(1.75 * n / (bus_GBps * 1e9) + 14 * 1.9e-6, rel=1e-6)
