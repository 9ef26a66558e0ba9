"""Cloud presets and multi-rail clusters: NIC counts, shared and bonded rails, defaults from each machine's documents."""

import pytest

from simulator.errors import CollsimError
from simulator.topology import PRESETS, build_preset
from simulator.topology.builders import cluster
from simulator.topology.spec import parse_topology


def _nics(topo):
    return sorted({n for n, k in zip(topo.node_names, topo.node_kinds) if k == "nic"})


def _first_hop(topo, rank, other):
    return topo.link(topo.route(rank, other)[0]).dst


def test_p4de_has_four_100g_efa_per_node_shared_by_gpu_pairs():
    topo = parse_topology("p4de:nodes=2")
    assert len(_nics(topo)) == 8  # 4 per node (AWS: 400 Gbps = 4 x 100G EFA)
    assert _first_hop(topo, 0, 8) == _first_hop(topo, 1, 8) == "n0nic0"
    # (to GPUs on the same rail of the other node)
    assert _first_hop(topo, 2, 10) == "n0nic1" and _first_hop(topo, 7, 14) == "n0nic3"
    assert topo.path_cost(0, 8)[1] == pytest.approx(100e9 / 8)  # 12.5 GB/s, the EFA port
    assert topo.path_cost(0, 1)[1] == pytest.approx(300e9)      # NVLink 3 per direction


def test_p5_bonds_four_efa_ports_per_gpu():
    topo = parse_topology("p5:nodes=2")
    assert len(_nics(topo)) == 16  # one NIC node per GPU, each 4 x 100G
    assert topo.path_cost(3, 11)[1] == pytest.approx(4 * 100e9 / 8)
    assert _first_hop(topo, 3, 11) == "n0nic3"


def test_p6_b200_has_one_400g_efa_per_gpu_and_the_plugins_profile():
    topo = parse_topology("p6-b200:nodes=2")
    assert len(_nics(topo)) == 16 and _first_hop(topo, 5, 13) == "n0nic5"  # AWS: 3200 Gbps = 8 x 400G EFA v4
    assert topo.path_cost(5, 13)[1] == pytest.approx(400e9 / 8)
    assert topo.path_cost(0, 1)[1] == pytest.approx(900e9)  # NVLink 5 per direction
    machine = PRESETS["p6-b200"].machine  # aws-ofi-nccl "p5en/p6-b200": 35 us reported, NCCL_BUFFSIZE=8388608
    assert (machine.arch, machine.net, machine.net_latency_us, machine.buffsize) == ("blackwell", "efa400", 35.0, 8 << 20)


def test_a3_mega_and_dgx_a100_default_networks():
    assert parse_topology("a3-mega:nodes=2").path_cost(0, 8)[1] == pytest.approx(25e9)   # 8 x 200G TCPXO
    assert parse_topology("dgx-a100:nodes=2").path_cost(0, 8)[1] == pytest.approx(25e9)  # 8 x 200G HDR (datasheet)
    assert parse_topology("dgx-a100:nodes=2,net=ib400").path_cost(0, 8)[1] == pytest.approx(31.5e9)  # then PCIe 4 caps


def test_gb200_trays_share_one_nvlink_domain():
    topo = parse_topology("gb200-nvl4:nodes=2")
    assert topo.num_devices == 8 and topo.path_cost(0, 7)[1] == pytest.approx(900e9)
    assert not _nics(topo)
    with pytest.raises(CollsimError, match="nodes: 19 trays"):
        parse_topology("gb200-nvl4:nodes=19")


def test_every_machine_preset_names_its_source():
    for name in ("dgx-a100", "dgx-h100", "dgx-h200", "hgx-b200", "hgx-b300", "gb200-nvl72", "gb300-nvl72", "p4de", "p5",
                 "p6-b200", "a3-mega", "gb200-nvl4", "rtx4090-pcie"):
        machine = PRESETS[name].machine
        assert machine is not None and len(machine.source) > 20
        assert build_preset(name).origin.preset.name == name


def test_cluster_nics_option():
    assert len(_nics(parse_topology("cluster:nodes=2,gpus=8,nics=2"))) == 4
    with pytest.raises(CollsimError, match="nics: 3 NICs per node with 8 GPUs"):
        cluster(2, 8, nics=3)
    with pytest.raises(CollsimError, match="nics"):
        parse_topology("cluster:nodes=2,gpus=8,nics=0")


def test_rtx4090_stages_every_transfer_in_host_memory():
    # no P2P on GeForce: NCCL's SHM transport, GPU a -> PCIe up -> host FIFO -> PCIe down -> GPU b; the receiver's
    # loads run at the SHM load rate fitted on logs 12 and 13 (2.55 GB/s, SHM_RATE_FIT), the stores at PCIe 4.0 x16
    topo = parse_topology("rtx4090-pcie")
    route = [topo.link(i) for i in topo.route(0, 3)]
    assert [(link.src, link.dst) for link in route] == [("gpu0", "cpu"), ("cpu", "gpu3")]
    assert route[0].bandwidth == pytest.approx(31.5e9) and route[1].bandwidth == pytest.approx(2.55e9)
    assert topo.path_cost(0, 3)[1] == pytest.approx(2.55e9)
    from simulator.topology.presets import host_staged
    assert host_staged(2, 40e9).path_cost(0, 1)[1] == pytest.approx(31.5e9)  # never above the PCIe link


def test_rtx4090_shm_rate_option():
    # shm=RATE replaces the fitted SHM load rate: 4 ranks, 1 GiB allreduce, ring: each GPU loads 2 (p-1)/p n = 1.5 GiB
    # through its host -> GPU link at 5 GB/s (0.322 s) plus a few hundred us of NCCL's PCIe step latencies
    from simulator.nccl.predict import predict

    topo = parse_topology("rtx4090-pcie:shm=5GB/s")
    assert topo.path_cost(0, 1)[1] == pytest.approx(5e9) and topo.origin.preset.name == "rtx4090-pcie"
    row = predict(topo, "allreduce", [1 << 30])[0]
    assert 1.5 * 2 ** 30 / 5e9 < row.time_s < 1.5 * 2 ** 30 / 5e9 + 1e-3
    with pytest.raises(CollsimError, match="shm: preset p5"):
        parse_topology("p5:shm=5GB/s")
