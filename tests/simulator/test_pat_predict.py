"""collsim predict with K ranks per node: NCCL's view of the machine, the placement, and PAT at one GPU per node."""

import json
import math

import pytest

from app.cli import main
from simulator.errors import CollsimError
from simulator.nccl.calibration import Calibration
from simulator.nccl.placement import parse_ranks_per_node, place_per_node
from simulator.nccl.predict import machine_of, predict
from simulator.nccl.tuning import tune
from simulator.topology.spec import parse_topology


def test_nccl_sees_k_gpus_and_their_nics_per_node():
    system, per_node = machine_of(parse_topology("dgx-h100:nodes=8"), 8, 1)
    assert (system.gpus_per_node, system.nodes, system.nics_per_node, per_node) == (1, 8, 1, 1)
    assert system.graph_bw_GBps == pytest.approx(50.0)  # one 400 Gbit/s NIC per GPU
    p4de, _ = machine_of(parse_topology("p4de:nodes=4"), 8, 2)  # GPUs 0 and 1 share NIC 0
    assert (p4de.gpus_per_node, p4de.nodes, p4de.nics_per_node) == (2, 4, 1)
    p5, _ = machine_of(parse_topology("p5:nodes=4"), 4, 1)  # 4 x 100G EFA per GPU
    assert (p5.nics_per_node, p5.graph_bw_GBps) == (4, pytest.approx(50.0))
    whole, _ = machine_of(parse_topology("dgx-h100:nodes=2"), 16, 8)
    assert whole == machine_of(parse_topology("dgx-h100:nodes=2"), 16)[0]


def test_rank_r_runs_on_gpu_r_mod_k_of_node_r_div_k_with_its_own_nic():
    topo = place_per_node(parse_topology("dgx-h100:nodes=4"), 2, 8)
    assert [topo.device_name(r) for r in range(8)] == ["n0g0", "n0g1", "n1g0", "n1g1", "n2g0", "n2g1", "n3g0", "n3g1"]
    nics = [{topo.link_name(lid).split("->")[0] for lid in topo.route(r, (r + 2) % 8)} & {f"n{r // 2}nic{r % 2}"}
            for r in range(8)]
    assert all(len(n) == 1 for n in nics)  # rank r leaves its node through its own GPU's NIC


def test_k_equal_to_the_node_changes_nothing():
    topo = parse_topology("p5:nodes=2")
    assert predict(topo, "allreduce", [1 << 20], ranks_per_node=8) == predict(topo, "allreduce", [1 << 20])


def test_one_gpu_per_node_runs_pat_where_nccl_picks_it():
    topo = parse_topology("dgx-h100:nodes=8")
    for op in ("allgather", "reduce_scatter"):
        small, big = predict(topo, op, [256 << 10, 1 << 30], ranks_per_node=1)
        assert (small.nccl_algo, small.proto, small.algorithm) == ("pat", "Simple", "pat")
        assert (big.nccl_algo, big.algorithm) == ("ring", "nccl_ring")
    # 8 GPUs per node: never PAT (tuning.cc ncclPatEnable)
    assert predict(topo, "allgather", [256 << 10])[0].nccl_algo != "pat"


def test_pat_time_is_the_engine_plus_nccls_pat_base():
    # tuning.cc: PAT baseLat 8 us, plus the linear part 2.8 us x nRanks, once per call; dgx-h100 (InfiniBand) has no
    # plugin latency. The log part (interLat / 3.5 per step, interLat = hwLat[NET][TREE][Simple] = 14 us) is the
    # links' step latency: 3 steps of 4 us at 8 ranks. Bandwidth: 0.75 of the GPU's one 50 GB/s NIC; at 1 MiB NCCL
    # keeps all 16 channels (1 MiB >= 16 x 640 threads x 64 B), so no channel share; each rank sends 7/8 of n.
    n = 1 << 20
    row = predict(parse_topology("dgx-h100:nodes=8"), "allgather", [n], ranks_per_node=1)[0]
    assert row.algorithm == "pat" and row.channels == 16
    base = 8e-6 + 2.8e-6 * 8
    assert row.base_s == pytest.approx(base, rel=1e-12)
    assert row.time_s == pytest.approx(row.engine_s + base, rel=1e-12)
    assert row.engine_s == pytest.approx(3 * 4e-6 + 7 / 8 * n / (0.75 * 50e9), rel=1e-6)
    # the same latency NCCL's model states: 8 + 3 x 14 / 3.5 + 2.8 x 8 = 42.4 us
    system, _ = machine_of(parse_topology("dgx-h100:nodes=8"), 8, 1)
    assert tune(system, "allgather")[("pat", "Simple")][0] == pytest.approx(42.4)


def test_pat_base_carries_the_efa_plugin_latency():
    # p5: aws-ofi-nccl reports 75 us; tuning.cc adds it twice (Simple) to interLat, which PAT divides by 3.5 per
    # log2(nodes) step; predict charges it once per call: 8 + 2.8 x 8 + 3 x 150 / 3.5 us
    row = predict(parse_topology("p5:nodes=8"), "allgather", [256 << 10], ranks_per_node=1)[0]
    assert row.algorithm == "pat"
    assert row.base_s == pytest.approx((8 + 2.8 * 8 + 3 * 150 / 3.5) * 1e-6, rel=1e-9)


@pytest.mark.parametrize("text, k", [("1", 1), (" 4 ", 4), (None, None)])
def test_parse_accepts_counts(text, k):
    assert parse_ranks_per_node(text) == k


@pytest.mark.parametrize("kwargs, words", [
    ({"ranks_per_node": 0}, ("ranks-per-node", "0", ">= 1")),
    ({"ranks_per_node": True}, ("ranks-per-node", "True", ">= 1")),
    ({"ranks_per_node": 9}, ("ranks-per-node", "9", "1 to 8")),
    ({"ranks_per_node": 3, "ranks": 8}, ("ranks-per-node", "3", "1, 2, 4, 8")),
    ({"ranks_per_node": 1, "ranks": 16}, ("ranks-per-node", "16 ranks", "--ranks <= 8")),
])
def test_bad_ranks_per_node_is_refused(kwargs, words):
    with pytest.raises(CollsimError) as info:
        predict(parse_topology("dgx-h100:nodes=8"), "allgather", [1 << 20], **kwargs)
    assert all(w in str(info.value) for w in words), str(info.value)


def test_parse_refuses_what_is_not_a_whole_count():
    for text in ("x", "1.5", "-1", "0"):
        with pytest.raises(CollsimError, match="ranks-per-node"):
            parse_ranks_per_node(text)


def test_cli_one_rank_per_node(capsys, tmp_path):
    csv = tmp_path / "tuner.csv"
    argv = ["predict", "--preset", "dgx-h100:nodes=8", "--ranks-per-node", "1", "--op", "allgather",
            "--size", "256KiB,1GiB", "--json", "--csv", str(csv)]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["ranks"], data["ranks_per_node"]) == (8, 1)
    assert [r["schedule"] for r in data["rows"]] == ["pat", "nccl_ring"]
    assert all(math.isfinite(r["time_s"]) for r in data["rows"])
    # NCCL's example tuner plugin names PAT "pat"; NCCL sees 8 nodes of one rank
    rows = [line.split(",") for line in csv.read_text().splitlines() if not line.startswith("#")]
    assert [(r[3], r[4], r[6], r[7]) for r in rows] == [("pat", "simple", "8", "8"), ("ring", "simple", "8", "8")]


def test_a_calibrated_preset_keeps_one_rank_per_node():
    # the calibration halves Simple's network bandwidth and adds 1 us per network step: PAT's 3 messages per rank
    # cost 4 + 1 us each and its NIC carries 0.75 x 25 GB/s. Were the ranks back on one node's NVLink, it would be
    # far faster.
    cal = Calibration("dgx-h100", 8, "ib400", net_efficiency=(1.0, 1.0, 0.5), net_step_s=1e-6)
    n = 1 << 20
    row = predict(cal.topology(), "allgather", [n], ranks_per_node=1)[0]
    assert row.algorithm == "pat"
    assert row.engine_s == pytest.approx(3 * 5e-6 + 7 / 8 * n / (0.75 * 25e9), rel=1e-6)
