"""NCCL's machine description (simulator/nccl/machine.py): resolved once from a preset SPEC, immutable, NCCL's System
derived from it as the preset tables say; and no Topology takes an attribute after it is built."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from simulator.errors import CollsimError
from simulator.nccl.calibration import Calibration
from simulator.nccl.machine import NcclMachine, parse_machine, resolve
from simulator.nccl.predict import predict
from simulator.nccl.tuning import System
from simulator.program.lower import Augmented
from simulator.topology import ideal, parse_topology
from simulator.topology.model import Topology
from simulator.topology.presets import PRESETS, PresetBuild, build_preset

# ---- nothing is attached to a Topology after the fact --------------------------------------------------------------


def _topology_classes() -> list[type]:
    classes, todo = [], [Topology]
    while todo:
        cls = todo.pop()
        if cls.__module__.startswith("simulator."):
            classes.append(cls)
        todo += cls.__subclasses__()
    return classes


def test_every_topology_class_declares_its_attributes():
    classes = _topology_classes()
    assert {c.__name__ for c in classes} >= {"Topology", "IdealTopology", "Augmented"}
    for cls in classes:  # a subclass without __slots__ would give its instances a __dict__ to attach things to
        assert "__slots__" in cls.__dict__, cls


@pytest.mark.parametrize("make", [lambda: build_preset("dgx-h100", 2), lambda: ideal(4, 1e-6, 1e9),
                                  lambda: parse_topology("ring:4"), lambda: Augmented(build_preset("hgx-b200"), 8, ["c"]),
                                  lambda: Calibration("p5", 2).topology()])
def test_a_topology_takes_no_attribute_after_it_is_built(make):
    topology = make()
    assert not hasattr(topology, "__dict__")
    for name in ("calibration", "uncalibrated", "preset"):
        with pytest.raises(AttributeError):
            setattr(topology, name, None)


def test_a_presets_topology_carries_its_build_and_copies_keep_it():
    topology = parse_topology("p5:nodes=2,routing=static")
    expected = PresetBuild(PRESETS["p5"], 2, "efa100", "static", None, None)
    assert topology.origin == expected
    assert topology.with_placement(list(range(15, -1, -1))).origin == expected
    assert topology.with_ecmp().origin == expected and topology.with_links(latency=1e-6).origin == expected
    assert parse_topology("rails:nodes=2,gpus=8").origin is None and ideal(4, 1e-6, 1e9).origin is None


# ---- resolution from a SPEC, immutability ---------------------------------------------------------------------------


def test_resolved_from_a_spec():
    machine = parse_machine("dgx-h100:nodes=3,net=roce200,routing=static", "2.20.3")
    assert (machine.preset.name, machine.nodes, machine.net, machine.routing) == ("dgx-h100", 3, "roce200", "static")
    assert machine.nccl_version == (2, 20, 3) and machine.calibration is None and machine.ranks_per_node is None
    assert machine.spec.arch == "hopper" and machine.topology.num_devices == 24
    assert parse_machine("p5").nccl_version is None  # master's tables
    assert parse_machine("p5:nodes=2") == resolve(build_preset("p5", 2))  # the same description either way


@pytest.mark.parametrize("spec, words", [("ring:8", "preset: ring:8 is not a preset machine NCCL's model knows"),
                                         ("mi300x", "preset: mi300x is not a preset machine NCCL's model knows")])
def test_a_machine_nccls_model_does_not_know_is_refused_in_one_line(spec, words):
    with pytest.raises(CollsimError, match=words):
        parse_machine(spec)


def test_a_bad_release_is_refused_in_one_line():
    with pytest.raises(CollsimError, match="nccl-version: '2.x' is not an NCCL release"):
        parse_machine("p5", "2.x")


def test_immutable():
    machine = parse_machine("p5:nodes=2")
    with pytest.raises(dataclasses.FrozenInstanceError):
        machine.nccl_version = (2, 20)
    with pytest.raises(dataclasses.FrozenInstanceError):
        machine.build.nodes = 4
    placed = machine.placed(2)  # a new description; the first stays as it was
    assert machine.ranks_per_node is None and machine.topology.placement[:4] == [0, 1, 2, 3]
    assert placed.ranks_per_node == 2 and placed.topology.placement[:4] == [0, 1, 8, 9]


# ---- NCCL's System, derived: expected values from the preset tables (simulator/topology/presets.py) ----------------


GB = 1e9
CASES = [
    # p5: H100 (hopper), 32 x 100 Gbit/s EFA per node (12.5 GB/s each), the EFA plugin's 75 us, NCCL's 4 MiB buffers
    ("p5:nodes=2", 16, None, System("hopper", 8, 2, "nvlink", nic_bw_GBps=12.5, nics_per_node=32, net_latency_us=75.0)),
    # p5 on InfiniBand: 50 GB/s NICs; the plugin's latency belongs to EFA only
    ("p5:nodes=2,net=ib400", 16, None, System("hopper", 8, 2, "nvlink", nic_bw_GBps=50.0, nics_per_node=32)),
    # a3-mega: 8 x 200 Gbit/s TCPXO (25 GB/s); TCPXO profile: Simple only, 8 MiB buffers, no NVLS
    ("a3-mega:nodes=2", 16, None, System("hopper", 8, 2, "nvlink", nic_bw_GBps=25.0, nics_per_node=8,
                                          protocols=("Simple",), nvls=False, buffsize=8 << 20)),
    # p4de, 2 ranks per node on 4 nodes: A100 (ampere), GPUs 0 and 1 share NIC 0 (4 NICs for 8 GPUs): 1 NIC per node
    ("p4de:nodes=4", 8, 2, System("ampere", 2, 4, "nvlink", nic_bw_GBps=12.5, nics_per_node=1, protocols=("Simple",),
                                  net_latency_us=75.0)),
    # gb200-nvl4 trays share one NVLink domain: NCCL sees one node of 8 GPUs
    ("gb200-nvl4:nodes=2", 8, None, System("blackwell", 8, 1, "nvlink", nic_bw_GBps=50.0, nics_per_node=None)),
    # hgx-b300: 8 x 800 Gbit/s ConnectX-8 (100 GB/s)
    ("hgx-b300:nodes=2", 16, None, System("blackwell", 8, 2, "nvlink", nic_bw_GBps=100.0, nics_per_node=8)),
]


@pytest.mark.parametrize("spec, ranks, per_node, expected", CASES)
def test_system_as_the_preset_tables_say(spec, ranks, per_node, expected):
    system, _ = parse_machine(spec).system(ranks, per_node)
    assert system == expected


def test_system_carries_the_release():
    system, per_node = parse_machine("dgx-h100:nodes=2", "2.20.3").system(16)
    assert system.nccl_version == (2, 20, 3) and per_node == 8


# ---- a calibrated machine ---------------------------------------------------------------------------------------------


def test_a_calibrated_machine_keeps_its_links_as_built_and_each_protocol_its_efficiency():
    cal = Calibration("dgx-h100", 1, intra_efficiency=(0.5, 0.8, 0.9), nccl_version="2.21.5")
    machine = resolve(cal.topology())
    assert machine.calibration == cal and machine.nccl_version == (2, 21, 5)
    assert np.array_equal(machine.topology.bandwidth, build_preset("dgx-h100").bandwidth)  # as built
    # GPU -> NVSwitch -> GPU: 450 GB/s per direction (NVLink 4) at each protocol's intra-node efficiency
    assert machine.engine("LL").path_cost(0, 1)[1] == pytest.approx(0.5 * 450 * GB)
    assert machine.engine("Simple").path_cost(0, 1)[1] == pytest.approx(0.9 * 450 * GB)
    assert machine.engine("Simple").origin.calibration == cal


def test_predict_takes_the_machine_or_the_topology_alike():
    topology = parse_topology("hgx-b200")
    sizes = [4096, 1 << 20]
    assert predict(resolve(topology), "allreduce", sizes) == predict(topology, "allreduce", sizes)
    assert isinstance(resolve(topology), NcclMachine)


def test_a_placed_machine_predicts_as_ranks_per_node_does():
    machine = parse_machine("dgx-h100:nodes=2")
    assert (predict(machine.placed(1), "allgather", [1 << 20])
            == predict(machine, "allgather", [1 << 20], ranks_per_node=1))  # 2 ranks, one per node: PAT's domain
