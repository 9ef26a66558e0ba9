"""Several jobs on one machine (simulator/program/colocate.py, `collsim colocate`): slowdowns against hand
arithmetic on cases built for it, and exactly 0 where the jobs share no link.

Every case runs a 2-rank ring all-reduce of S = 100 MB (float32; no compute) per job. A 2-rank ring sends one message
of m = S / 2 = 50 MB each way per step, in 2 steps (reduce-scatter, then all-gather), each step after the message of
the previous one arrived. A flow waits its route's latency L, then moves its bytes at the max-min fair rate; one port
per rank each way, freed when the message arrives (docs/model.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from collsim.colocate import ColocateRequest
from simulator.errors import CollsimError
from simulator.program import Program, program_from_dict
from simulator.program.colocate import Job, colocate, merge
from simulator.topology import parse_topology

S = 100_000_000
M = S // 2
RING2 = {"world": 2, "groups": {"all": [0, 1]},
         "ranks": {"0-1": [{"op": "allreduce", "group": "all", "size": S, "dtype": "float32"}]}}


def _ring2() -> Program:
    return program_from_dict(RING2)


def _run(spec: str, *devices: tuple[int, ...]):
    program = _ring2()
    return colocate([Job(f"j{k}", program, d) for k, d in enumerate(devices)], parse_topology(spec))


def _latency(spec: str, src: int, dst: int) -> float:
    topo = parse_topology(spec)
    return sum(topo.latency[k] for k in topo.route(src, dst))


def test_two_rings_share_every_hop_each_gets_half() -> None:
    """Two nodes of two GPUs, ONE NIC per node: job a on GPU 0 of each node, job b on GPU 1. bw= and lat= set the
    GPU-NVSwitch and NIC-leaf links to 50 GB/s and 1 us; the NVSwitch-NIC (PCIe) link keeps 63 GB/s and no latency.
    A message crosses 6 links, 4 of them with latency: L = 4 us. a's and b's messages in the same direction share
    every hop from the NVSwitch on: each gets 25 GB/s on the NIC-leaf links (31.5 GB/s on PCIe is not the bottleneck).
    Alone: 2 (L + m / 50 GB/s) = 2 (4 us + 1 ms) = 2.008 ms. Together: 2 (L + m / 25 GB/s) = 2 (4 us + 2 ms) = 4.008 ms.
    Slowdown 4.008 / 2.008 - 1 = 0.99602."""
    spec = "cluster:nodes=2,gpus=2,nic=node,nics=1,bw=50GB/s,lat=1us"
    run = _run(spec, (0, 2), (1, 3))
    assert len(parse_topology(spec).route(0, 2)) == 6
    assert [r.step_time for r in run.alone] == pytest.approx([2.008e-3] * 2, rel=1e-9)
    assert run.steps_together() == pytest.approx([4.008e-3] * 2, rel=1e-9)
    links = {x["link"]: x["bytes"] for x in run.shared_links(top=100)}
    # each direction of each shared hop carries both steps' messages of each job: 2 x 50 MB = 100 MB per job
    assert links["n0nic->leaf0"] == links["leaf0->n1nic"] == links["n1nic->leaf0"] == [float(S), float(S)]
    assert not any("g0" in name or "g1" in name for name in links)  # the GPUs' own links are never shared


def test_two_rings_on_one_leaf_uplink_of_a_dgx_h100() -> None:
    """dgx-h100:nodes=4 with static routing (destination mod k): job a on devices 0, 9 and job b on 16, 10. Their
    routes meet on exactly one link, su0leaf0 -> spine1 (ib400: 50 GB/s), carrying a's 0 -> 9 and b's 16 -> 10; the
    reverse messages share nothing. With tau = m / 50 GB/s = 1 ms and L the route's latency:
    alone: 2 (L + tau). Together, step 1: the shared sends (0 -> 9, 16 -> 10) end at L + 2 tau, the others at L + tau;
    step 2's shared sends wait for their port (free at L + 2 tau) and share the link again: they end at 2 L + 4 tau,
    the others at L + 2 tau + L + tau. So together = 2 L + 4 tau, and slowdown = tau / (L + tau)."""
    spec = "dgx-h100:nodes=4,routing=static"
    run = _run(spec, (0, 9), (16, 10))
    lat, tau = _latency(spec, 0, 9), M / 50e9
    assert lat == _latency(spec, 9, 0) == _latency(spec, 16, 10) == _latency(spec, 10, 16)
    assert [r.step_time for r in run.alone] == pytest.approx([2 * lat + 2 * tau] * 2, rel=1e-9)
    assert run.steps_together() == pytest.approx([2 * lat + 4 * tau] * 2, rel=1e-9)
    shared = run.shared_links()
    assert [(x["link"], x["bandwidth_Bps"], x["bytes"]) for x in shared] == [("su0leaf0->spine1", 50e9, [S, S])]


def test_disjoint_nodes_sharing_a_leaf_slow_nothing(tmp_path: Path) -> None:
    """dgx-h100:nodes=4: jobs on nodes 0-1 and 2-3 share every rail's leaf switch, and meet only on the leaves' links to
    the spine layer (adaptive routing: one aggregated 1.6 TB/s link per leaf and direction, where a ring's hops between
    rails cross): no link they share is a bottleneck, so the slowdown is 0."""
    common = [{"op": "compute", "time": "1ms"}, {"op": "allreduce", "group": "all", "size": "64MiB"},
              {"op": "broadcast", "group": "all", "size": "4MiB", "root": 5}]
    program = {"world": 16, "groups": {"all": "0-15"},
               "ranks": {"0-1": common, 2: common + [{"op": "send", "peer": 3, "size": "8MiB"}],
                         3: common + [{"op": "recv", "peer": 2, "size": "8MiB"}], "4-15": common}}
    job = program_from_dict(program)
    run = colocate([Job("a", job, tuple(range(16))), Job("b", job, tuple(range(16, 32)))], parse_topology("dgx-h100:nodes=4"))
    alone = [r.step_time for r in run.alone]
    assert alone[0] > 1e-3 and run.steps_together() == pytest.approx(alone, rel=1e-12)  # the runs' clock ticks differ
    assert run.slowdowns() == [0.0, 0.0]
    shared = run.shared_links(top=100)
    assert shared and all("spines" in x["link"] and x["bandwidth_Bps"] == 1.6e12 for x in shared)
    # two 2-rank rings on one rail (devices 0, 8 and 16, 24): one leaf, no shared link, no slowdown
    pair = _run("dgx-h100:nodes=4", (0, 8), (16, 24))
    assert pair.slowdowns() == [0.0, 0.0] and pair.shared_links() == []


def test_merge_renames_groups_and_moves_ranks() -> None:
    program = program_from_dict({"world": 2, "groups": {"g": [0, 1]}, "ranks": {
        0: [{"op": "broadcast", "group": "g", "size": 1024, "root": 1}, {"op": "send", "peer": 1, "size": 8}],
        1: [{"op": "broadcast", "group": "g", "size": 1024, "root": 1}, {"op": "recv", "peer": 0, "size": 8}]}})
    merged, offsets = merge([Job("a", program, (0, 1)), Job("b", program, (2, 3))])
    assert offsets == [0, 2] and merged.world == 4
    assert merged.groups == {"a/g": (0, 1), "b/g": (2, 3)}
    assert [(op.group, op.root) for op in merged.ops(2)][:1] == [("b/g", 3)]
    assert merged.ops(2)[1].peer == 3 and merged.ops(3)[1].peer == 2 and merged.ops(1)[1].peer == 0


def test_request_reports_jobs_and_links(tmp_path: Path) -> None:
    import yaml

    path = tmp_path / "ring.yaml"
    path.write_text(yaml.safe_dump(RING2))
    spec = "cluster:nodes=2,gpus=2,nic=node,nics=1,bw=50GB/s,lat=1us"
    result = ColocateRequest(spec, (f"{path}@0,2", f"{path}@1,3")).run()
    rows = result.data()["jobs"]
    assert [r["slowdown"] for r in rows] == pytest.approx([4.008 / 2.008 - 1] * 2, rel=1e-9)
    with pytest.raises(CollsimError, match="device 2 is also job"):
        ColocateRequest(spec, (f"{path}@0,2", f"{path}@2,3"))
