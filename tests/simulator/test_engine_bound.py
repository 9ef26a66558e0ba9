"""Lower bounds on the engine's time (simulator/engine/bound.py): by hand on small cases, never above the engine.

`collsim predict` skips a candidate whose bound is above the best time found (simulator/nccl/predict.py `fastest`), so a
bound above the engine's time would change what predict prints: these cases hold the bounds below it, with message
models (predict's protocols) and on the schedules and machines predict runs.
"""

from __future__ import annotations

import pytest

from simulator.algorithms import build_schedule, get, names_for
from simulator.collective import Collective
from simulator.engine import EngineOptions, MessageModel, Regime, simulate
from simulator.engine.bound import critical_path, lower_bound, safe
from simulator.nccl import predict as nccl
from simulator.nccl.calibration import for_protocol
from simulator.topology import ideal, parse_topology


def test_one_message_with_a_protocol_by_hand():
    # broadcast on 2 ranks: one message of 1 MiB, alpha 3 us, 10 GB/s; the regime adds 1 us and puts 2 wire bytes per
    # payload byte (LL), the header 16 more bytes: both bounds are that message alone, which is what the engine takes
    schedule = build_schedule(Collective("broadcast", 2, 1 << 20, "int8"), "binomial")
    topo = ideal(2, 3e-6, 10e9)
    options = EngineOptions(messages=MessageModel((Regime(0, None, 1e-6, 2.0),)), header_bytes=16)
    alone = 3e-6 + 1e-6 + (2 * (1 << 20) + 16) / 10e9
    assert lower_bound(schedule, topo, options) == pytest.approx(alone, rel=1e-12)
    assert critical_path(schedule, topo, options) == pytest.approx(alone, rel=1e-12)
    assert safe(alone, 1) <= simulate(schedule, topo, options).time <= alone * (1 + 1e-12)


def test_critical_path_of_a_ring_by_hand():
    # ring allgather on 6 ranks, one block each: 5 steps, each alpha + (n / 6) / B, one after the other
    n, alpha, bandwidth = 6 * 1000, 2e-6, 5e9
    schedule = build_schedule(Collective("allgather", 6, n, "int8"), "ring")
    assert critical_path(schedule, ideal(6, alpha, bandwidth)) == pytest.approx(5 * (alpha + n / 6 / bandwidth), rel=1e-12)


def test_safe_takes_off_the_clocks_rounding_and_claims_nothing_past_an_hour():
    assert safe(1e-3, 1000) == pytest.approx(1e-3 * (1 - 1e-9) - 3 * 1000e-15, rel=1e-15)
    assert safe(4000.0, 1) == 0.0


MACHINES = ["switch:8", "ring:8", "cluster:nodes=2,gpus=4,net_bw=12GB/s", "dgx-h100"]
PROTOCOLS = [None, MessageModel.uniform(0.0, 2.0), MessageModel((Regime(0, 4096, 2e-6, 1.0), Regime(4096, None, 0.0, 1.1)))]


@pytest.mark.slow
@pytest.mark.parametrize("machine", MACHINES)
def test_bounds_never_exceed_the_engine(machine):
    topo = parse_topology(machine)
    p = topo.num_devices
    for messages in PROTOCOLS:
        for ports in (0, 1):
            options = EngineOptions(ports=ports, messages=messages)
            for op in ("allreduce", "allgather", "reduce_scatter"):
                for name in names_for(op):
                    if get(op, name).refusal(p):
                        continue
                    for n in (4096, 1 << 22):
                        schedule = build_schedule(Collective(op, p, n, "int8"), name)
                        engine = simulate(schedule, topo, options).time
                        links, chains = lower_bound(schedule, topo, options), critical_path(schedule, topo, options)
                        for bound in (links, chains):
                            assert safe(bound, len(schedule)) <= engine, (op, name, n, ports, messages)
                        if ports == 0:  # each link's bytes, with the chains before and after them: never less
                            assert chains >= links * (1 - 1e-12)


@pytest.mark.parametrize("preset", ["dgx-a100:nodes=2", "p5:nodes=2", "p4de:nodes=2"])
def test_bounds_of_predicts_ring_and_tree_plans_never_exceed_the_engine(preset):
    topo = parse_topology(preset)
    ranks = topo.num_devices
    system, per_node = nccl.machine_of(topo, ranks)
    for size in (1 << 16, 1 << 20, 16 << 20, 256 << 20):
        for algo in ("ring", "tree"):
            proto = nccl.nccl_pick(system, "allreduce", size, algos=(algo,))[1]
            plan = nccl.plan_ring_tree(for_protocol(topo, proto), system, per_node, "allreduce", size, ranks, algo, proto)
            row = plan.run()
            assert plan.at_least().time_s <= row.time_s, (preset, size, algo)
