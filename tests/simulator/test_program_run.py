"""Programs timed on the engine: every expected time below is worked out by hand from the program and the links."""

from __future__ import annotations

import json
import textwrap

import pytest
import yaml

from simulator.errors import CollsimError
from simulator.program import program_from_dict
from simulator.program.run import ProgramDeadlock, run_program
from simulator.topology import Topology, ideal

MS = 1e-3


def prog(text: str):
    return program_from_dict(yaml.safe_load(textwrap.dedent(text)), source="test")


def ddp_two_buckets(first_mb: int, last_mb: int, tail_ms: float) -> str:
    """Backward in two halves of 5 ms and 2 ms; a bucket after each; `tail_ms` of compute after the last; wait for grads."""
    return f"""
        world: 2
        groups: {{dp: [0, 1]}}
        ranks:
          0-1:
            - {{op: compute, time: 5ms, name: bwd_a}}
            - {{op: record, event: a}}
            - {{op: wait, event: a, stream: comm}}
            - {{op: allreduce, group: dp, size: {first_mb}MB, stream: comm, name: b1}}
            - {{op: compute, time: 2ms, name: bwd_b}}
            - {{op: record, event: b}}
            - {{op: wait, event: b, stream: comm}}
            - {{op: allreduce, group: dp, size: {last_mb}MB, stream: comm, name: b2}}
            - {{op: record, event: synced, stream: comm}}
            - {{op: compute, time: {tail_ms}ms, name: other}}
            - {{op: wait, event: synced}}
        """


# ring all-reduce of n bytes on 2 ranks, no latency, 25 GB/s links: 2 steps of n/2 bytes = n / 25e9 s
def ring2(nbytes: float) -> float:
    return nbytes / 25e9


def test_communication_behind_compute_is_not_exposed():
    # b1 (25 MB: 1 ms) runs 5..6 ms behind bwd_b (5..7 ms); b2 (25 MB: 1 ms) runs 7..8 ms behind `other` (7..10 ms)
    r = run_program(prog(ddp_two_buckets(25, 25, 3)), ideal(2, 0.0, 25e9))
    t = r.totals()
    assert t["step_s"] == pytest.approx(10 * MS, rel=1e-9)
    assert t["compute_s"] == pytest.approx(10 * MS, rel=1e-9)
    assert t["comm_s"] == pytest.approx(2 * ring2(25e6), rel=1e-9)
    assert t["exposed_s"] == pytest.approx(0.0, abs=1e-12)


def test_last_bucket_larger_than_remaining_compute_exposes_the_difference():
    # b2 = 125 MB takes 5 ms from 7 ms; only 3 ms of compute follow it: 2 ms exposed, step 12 ms
    r = run_program(prog(ddp_two_buckets(25, 125, 3)), ideal(2, 0.0, 25e9))
    t = r.totals()
    assert ring2(125e6) == pytest.approx(5 * MS)
    assert t["exposed_s"] == pytest.approx(2 * MS, rel=1e-9)
    assert t["step_s"] == pytest.approx(12 * MS, rel=1e-9)
    calls = {o["label"]: o for o in r.collectives() if o["rank"] == 0}
    assert calls['allreduce#2 (group dp, "b2")']["start"] == pytest.approx(7 * MS)
    assert calls['allreduce#2 (group dp, "b2")']["end"] == pytest.approx(12 * MS)
    path = r.critical_path()  # bwd_a, bwd_b, then the last bucket on the links between the ranks
    assert [s["what"] for s in path] == ['rank 0 compute "bwd_a"', 'rank 0 compute "bwd_b"', 'allreduce#2 (group dp, "b2")']
    assert path[-1]["links"] and path[-1]["end_s"] == pytest.approx(12 * MS)


def test_tp_allreduces_add_directly_to_the_step():
    # 4 ranks, ring all-reduce of 4 MB: 2(p-1) = 6 steps of (1 us + 1 MB / 10 GB/s) = 606 us; two of them + 2 ms compute
    text = """
        world: 4
        groups: {tp: [0, 1, 2, 3]}
        ranks:
          0-3:
            - {op: compute, time: 1ms}
            - {op: allreduce, group: tp, size: 4MB}
            - {op: compute, time: 1ms}
            - {op: allreduce, group: tp, size: 4MB}
        """
    r = run_program(prog(text), ideal(4, 1e-6, 10e9))
    ring = 6 * (1e-6 + 1e6 / 10e9)
    t = r.totals()
    assert t["step_s"] == pytest.approx(2 * MS + 2 * ring, rel=1e-9)
    assert t["exposed_s"] == pytest.approx(2 * ring, rel=1e-9)
    assert t["compute_s"] == pytest.approx(2 * MS, rel=1e-9)


def dumbbell(shared_bw: float) -> Topology:
    """gpu0, gpu1 on switch a; gpu2, gpu3 on switch b; a<->b one link of `shared_bw`; edge links 100 GB/s, no latency."""
    names = ["gpu0", "gpu1", "gpu2", "gpu3", "a", "b"]
    kinds = ["gpu"] * 4 + ["switch"] * 2
    links = []
    for g, s in ((0, 4), (1, 4), (2, 5), (3, 5)):
        links += [(g, s, 0.0, 100e9), (s, g, 0.0, 100e9)]
    links += [(4, 5, 0.0, shared_bw), (5, 4, 0.0, shared_bw)]
    return Topology("dumbbell", names, kinds, links, [0, 1, 2, 3])


def two_jobs(a_mb: int, b_mb: int, b_delay: str = "0ms") -> str:
    """Job A: rank 0 sends to rank 2; job B: rank 1 sends to rank 3 (after `b_delay` of compute). Both cross a->b."""
    return f"""
        world: 4
        groups: {{}}
        ranks:
          0: [{{op: send, peer: 2, size: {a_mb}MB}}]
          2: [{{op: recv, peer: 0, size: {a_mb}MB}}]
          1: [{{op: compute, time: {b_delay}}}, {{op: send, peer: 3, size: {b_mb}MB}}]
          3: [{{op: compute, time: {b_delay}}}, {{op: recv, peer: 1, size: {b_mb}MB}}]
        """


def test_two_programs_sharing_a_link_slow_each_other_as_max_min_predicts():
    topo = dumbbell(10e9)
    alone = run_program(prog(two_jobs(100, 0)), topo).totals()["step_s"]
    assert alone == pytest.approx(100e6 / 10e9, rel=1e-9)  # 10 ms at the shared link's 10 GB/s
    # together: 5 GB/s each; B (50 MB) ends at 10 ms, A has 50 MB left at 10 GB/s: 15 ms
    both = run_program(prog(two_jobs(100, 50)), topo)
    ends = {o.rank: o.end for o in both.ops if o.kind == "send"}
    assert ends[1] == pytest.approx(10 * MS, rel=1e-9)
    assert ends[0] == pytest.approx(15 * MS, rel=1e-9)
    # B starts 4 ms late: A alone moves 40 MB, then 5 GB/s each: B's 50 MB end at 14 ms, A's last 10 MB at 10 GB/s: 15 ms
    late = run_program(prog(two_jobs(100, 50, "4ms")), topo)
    ends = {o.rank: o.end for o in late.ops if o.kind == "send"}
    assert ends[1] == pytest.approx(14 * MS, rel=1e-9)
    assert ends[0] == pytest.approx(15 * MS, rel=1e-9)


def test_a_collective_starts_when_its_last_member_arrives():
    text = """
        world: 3
        groups: {g: [0, 1, 2]}
        ranks:
          0-1: [{op: compute, time: 1ms}, {op: allgather, group: g, size: 3MB}]
          2: [{op: compute, time: 4ms}, {op: allgather, group: g, size: 3MB}]
        """
    r = run_program(prog(text), ideal(3, 0.0, 10e9))
    calls = [o for o in r.ops if o.kind == "allgather"]
    # ring allgather on 3 ranks: 2 steps of 1 MB at 10 GB/s = 0.2 ms, from 4 ms when rank 2 arrives
    assert all(o.start == pytest.approx(4 * MS) and o.end == pytest.approx(4.2 * MS) for o in calls)
    early = next(o for o in calls if o.rank == 0)
    assert early.arrive == pytest.approx(1 * MS)
    assert r.per_rank[0]["wait_s"] == pytest.approx(3 * MS)  # 1..4 ms at the call with nothing to compute
    assert r.per_rank[2]["wait_s"] == pytest.approx(0.0, abs=1e-12)
    assert r.per_rank[0]["exposed_s"] == pytest.approx(0.2 * MS)


def test_chrome_trace_has_a_track_per_rank_per_stream(tmp_path):
    r = run_program(prog(ddp_two_buckets(25, 125, 3)), ideal(2, 0.0, 25e9))
    path = tmp_path / "step.trace.json"
    r.to_chrome(path)
    events = json.loads(path.read_text())["traceEvents"]
    threads = {(e["pid"], e["args"]["name"]) for e in events if e["name"] == "thread_name" and e["pid"] >= 10}
    assert threads == {(10, "stream main"), (10, "stream comm"), (11, "stream main"), (11, "stream comm")}
    spans = [e for e in events if e.get("ph") == "X" and e["pid"] == 10 and e["name"].startswith("allreduce#2")]
    assert len(spans) == 1 and spans[0]["ts"] == pytest.approx(7000) and spans[0]["dur"] == pytest.approx(5000)
    assert any(e.get("cat") == "flow" for e in events)  # the machine's links, from the engine's trace


def test_mismatched_calls_are_refused_before_running():
    text = """
        world: 2
        groups: {dp: [0, 1]}
        ranks:
          0: [{op: allreduce, group: dp, size: 2MiB}]
          1: [{op: allreduce, group: dp, size: 1MiB}]
        """
    with pytest.raises(CollsimError, match="group dp call #1: rank 0 calls allreduce 2MiB bfloat16 but rank 1 calls "
                       "allreduce 1MiB bfloat16 \\(size differs\\)"):
        run_program(prog(text), ideal(2, 0.0, 1e9))


def test_deadlock_names_the_cycle_and_keeps_what_ran():
    text = """
        world: 2
        groups: {dp: [0, 1], tp: [0, 1]}
        ranks:
          0: [{op: compute, time: 1ms}, {op: allreduce, group: dp, size: 1MB}, {op: allgather, group: tp, size: 1MB}]
          1: [{op: compute, time: 1ms}, {op: allgather, group: tp, size: 1MB}, {op: allreduce, group: dp, size: 1MB}]
        """
    with pytest.raises(ProgramDeadlock) as info:
        run_program(prog(text), ideal(2, 0.0, 1e9))
    assert str(info.value) == ("program: deadlock: rank 0 waits in allreduce#1 (group dp) for rank 1, "
                               "which waits in allgather#1 (group tp) for rank 0")
    ran = [o for o in info.value.result.ops if o.kind == "compute"]
    assert all(o.end == pytest.approx(1 * MS) for o in ran)


def test_topology_too_small_is_an_error():
    with pytest.raises(CollsimError, match="ranks: 4 ranks asked"):
        run_program(prog(two_jobs(1, 1)), ideal(2, 0.0, 1e9))


def test_isolated_mode_times_each_call_alone():
    # one call at a time on the links: the isolated run gives the same hand-computed 12 ms and 2 ms exposed
    r = run_program(prog(ddp_two_buckets(25, 125, 3)), ideal(2, 0.0, 25e9), mode="isolated")
    assert r.mode == "symmetric"  # both ranks run the same list: rank 0 stands for both
    assert r.totals()["step_s"] == pytest.approx(12 * MS, rel=1e-9)
    assert r.totals()["exposed_s"] == pytest.approx(2 * MS, rel=1e-9)


def test_isolated_closed_form_above_the_engine_limit():
    # 8 ranks, ring all-reduce of 8 MB on ideal links (2 us, 10 GB/s): 2 x 7 x (2 us + 1 MB / 10 GB/s) = 1.428 ms
    from simulator.engine import EngineOptions
    from simulator.program.isolated import CLOSED_FORM, ENGINE, IsolatedTimes

    text = """
        world: 8
        groups: {all: [0, 1, 2, 3, 4, 5, 6, 7]}
        ranks:
          0-7: [{op: allreduce, group: all, size: 8MB}]
        """
    program = prog(text)
    topo = ideal(8, 2e-6, 10e9)
    op = program.ops(0)[0]
    form = IsolatedTimes(topo, EngineOptions(), {}, 8, max_engine_ranks=4)
    engine = IsolatedTimes(topo, EngineOptions(), {}, 8)
    expected = 14 * (2e-6 + 1e6 / 10e9)
    assert form(op, program.groups["all"])[0] == pytest.approx(expected, rel=1e-9) and form.methods[CLOSED_FORM] == 1
    assert engine(op, program.groups["all"])[0] == pytest.approx(expected, rel=1e-9) and engine.methods[ENGINE] == 1


def test_unknown_mode_is_an_error():
    with pytest.raises(CollsimError, match="mode: 'fast'; expected one of auto, exact, isolated"):
        run_program(prog(ddp_two_buckets(25, 25, 3)), ideal(2, 0.0, 25e9), mode="fast")


def test_run_program_command(tmp_path, capsys, shared_data):
    from app.cli import main

    trace = tmp_path / "step.trace.json"
    argv = ["run-program", str(shared_data / "programs" / "ddp2.yaml"), "--alpha", "0", "--bandwidth", "25GB/s", "--json",
            "--trace", str(trace)]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["totals"]["step_s"] == pytest.approx(12 * MS) and out["totals"]["exposed_s"] == pytest.approx(2 * MS)
    assert json.loads(trace.read_text())["traceEvents"]
    assert main(argv[:6]) == 0  # the text report
    text = capsys.readouterr().out
    assert "12.000 ms" in text and "critical path" in text and 'allreduce#2 (group dp, "b2")' in text


def test_symmetric_and_asymmetric_programs_in_isolated_mode():
    # two TP pairs {0,1} and {2,3} of the same shape: 1 ms compute, then a ring all-reduce of 10 MB at 10 GB/s = 1 ms
    same = """
        world: 4
        groups: {a: [0, 1], b: [2, 3]}
        ranks:
          0-1: [{op: compute, time: 1ms}, {op: allreduce, group: a, size: 10MB}]
          2-3: [{op: compute, time: 1ms}, {op: allreduce, group: b, size: 10MB}]
        """
    r = run_program(prog(same), ideal(4, 0.0, 10e9), gpus_per_node=2, mode="isolated")
    assert r.mode == "symmetric" and r.step_time == pytest.approx(2 * MS, rel=1e-9)
    # rank 3 computes longer: no longer symmetric; its pair waits for it (ends at 3 + 1 ms), the other pair does not
    other = same.replace("2-3: [{op: compute, time: 1ms}", "2: [{op: compute, time: 1ms}, {op: allreduce, group: b, size: 10MB}]\n"
                         "          3: [{op: compute, time: 3ms}")
    r = run_program(prog(other), ideal(4, 0.0, 10e9), gpus_per_node=2, mode="isolated")
    assert r.mode == "isolated" and r.step_time == pytest.approx(4 * MS, rel=1e-9)
    assert r.per_rank[0]["end_s"] == pytest.approx(2 * MS) and r.per_rank[2]["wait_s"] == pytest.approx(2 * MS)


def test_isolated_and_symmetric_equal_exact_when_one_call_runs_at_a_time():
    """DDP on 2 nodes: one comm stream, so no two calls share links; the three modes must agree to rounding."""
    from simulator.program.scenarios import build_spec, generate
    from simulator.topology import parse_topology

    program = generate(build_spec("ddp", "llama2-7b", "h100", 16, bucket=1 << 30, seq_len=512))
    topo = parse_topology("dgx-h100:nodes=2,net=ib400")
    runs = {mode: run_program(program, topo, algorithms={"allreduce": "hierarchical"}, mode=mode) for mode in ("exact", "isolated")}
    assert runs["isolated"].mode == "symmetric"
    exact, fast = runs["exact"].totals(), runs["isolated"].totals()
    for key in ("step_s", "exposed_s", "comm_s", "max_compute_s"):
        assert fast[key] == pytest.approx(exact[key], rel=1e-9), key
