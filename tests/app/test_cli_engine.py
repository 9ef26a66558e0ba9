"""The engine's subcommands: topologies, topology show, simulate, sweep (JSON, tables, errors)."""

import json

import pytest

from app.cli import main


def run_json(capsys, *argv):
    assert main(list(argv) + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_topologies_lists_presets_and_builders(capsys):
    data = run_json(capsys, "topologies")
    assert {"dgx-h100", "gb200-nvl72", "mi300x", "pcie-8gpu", "tpu-v4-4x4x4"} <= {p["name"] for p in data["presets"]}
    assert {"ring", "switch", "torus", "cluster", "fat_tree", "rails", "ideal"} == {b["name"] for b in data["builders"]}
    assert main(["topologies"]) == 0 and "dgx-a100" in capsys.readouterr().out


def test_topology_show_reports_ranks_links_and_bisection(capsys):
    data = run_json(capsys, "topology", "show", "torus:4x4")
    assert data["devices"] == 16 and data["links"] == 64 and data["bisection_Bps"] == pytest.approx(200e9)
    assert main(["topology", "show", "cluster:nodes=4,gpus=8"]) == 0
    assert "bisection" in capsys.readouterr().out


def test_simulate_json_has_time_bandwidths_and_the_busiest_link(capsys):
    data = run_json(capsys, "simulate", "--op", "allreduce", "--algo", "ring", "--ranks", "4", "--size", "1MiB",
                    "--topology", "switch:4", "--alpha", "1us", "--bandwidth", "25GB/s")
    n = 1 << 20
    expected = 6 * (2e-6 + n / 4 / 25e9)  # 2(p-1) steps of 2 alpha + n/p / B
    assert data["time_s"] == pytest.approx(expected)
    assert data["algbw_GBps"] == pytest.approx(n / expected / 1e9)
    assert data["busbw_GBps"] == pytest.approx(n / expected / 1e9 * 1.5)
    assert data["busiest_link"]["utilisation"] == pytest.approx(6 * n / 4 / 25e9 / expected)


def test_simulate_with_profile_straggler_and_trace(capsys, tmp_path):
    from simulator.profile import LinkProfile

    prof = tmp_path / "p.yaml"
    LinkProfile(1e-6, 10e9, 0.0, "test").save(prof)
    trace = tmp_path / "r.trace.json"
    data = run_json(capsys, "simulate", "--op", "allreduce", "--algo", "ring", "--ranks", "4", "--size", "64KiB",
                    "--topology", "ideal:4", "--profile", str(prof), "--straggler", "2:30us", "--trace", str(trace))
    base = 6 * (1e-6 + 65536 / 4 / 10e9)
    assert base + 30e-6 - 1e-12 <= data["time_s"] <= base + 30e-6 + 1e-6 + 65536 / 4 / 10e9
    assert json.loads(trace.read_text())["traceEvents"]


def test_sweep_prints_an_nccl_tests_like_table(capsys, tmp_path):
    out = tmp_path / "s.csv"
    assert main(["sweep", "--op", "allgather", "--algo", "ring", "--sizes", "1KiB:64KiB:8", "--topology", "ring:4",
                 "--csv", str(out)]) == 0
    text = capsys.readouterr().out
    assert "size" in text and "busbw" in text and "# algorithm: ring" in text and "Avg bus bandwidth" in text
    assert len(out.read_text().strip().splitlines()) == 1 + 3
    data = run_json(capsys, "sweep", "--op", "allgather", "--algo", "ring", "--sizes", "1KiB,2KiB", "--topology", "ring:4")
    assert [r["size"] for r in data["rows"]] == [1024, 2048] and data["rows"][0]["root"] == -1


@pytest.mark.parametrize("argv, message", [
    (["simulate", "--op", "allreduce", "--algo", "ring", "--topology", "nosuch"], "unknown topology 'nosuch'"),
    (["simulate", "--op", "allreduce", "--algo", "ring", "--ranks", "9", "--topology", "switch:8"], "9 ranks asked"),
    (["simulate", "--op", "allreduce", "--algo", "ring", "--straggler", "3"], "straggler: cannot read '3'"),
    (["simulate", "--op", "allreduce", "--algo", "ring", "--ranks", "4", "--straggler", "7:1us"], "straggler: rank 7"),
    (["simulate", "--op", "allreduce", "--algo", "ring", "--ranks", "4", "--congestion", "x->y:0.5"], "no link named"),
    (["simulate", "--op", "allreduce", "--algo", "ring", "--ranks", "4", "--gamma", "fast"], "gamma: cannot read"),
    (["simulate", "--op", "allreduce", "--algo", "ring", "--ranks", "4", "--ports", "-1"], "ports"),
    (["sweep", "--op", "allreduce", "--algo", "nosuch", "--topology", "switch:4"], "unknown algorithm 'nosuch'"),
    (["topology", "show", "torus:4x"], "torus"),
])
def test_bad_requests_print_one_error_line_and_exit_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("collsim: error: ") and message in err and "Traceback" not in err


def test_simulate_without_a_topology_agrees_with_cost(capsys):
    sim = run_json(capsys, "simulate", "--op", "allgather", "--algo", "ring", "--ranks", "6", "--size", "6MiB")
    cost = run_json(capsys, "cost", "--op", "allgather", "--algo", "ring", "--ranks", "6", "--size", "6MiB")
    assert sim["time_s"] == pytest.approx(cost["time_s"], rel=1e-9)


def test_a_scattered_placement_slows_a_ring_on_a_ring(capsys):
    # placed in order, every message is one hop: 14 steps of 1us + (1MiB / 8) / 25GB/s
    args = ["simulate", "--op", "allreduce", "--algo", "ring", "--ranks", "8", "--size", "1MiB", "--topology", "ring:8"]
    good = run_json(capsys, *args)
    assert good["time_s"] == pytest.approx(14 * (1e-6 + 131072 / 25e9))
    bad = run_json(capsys, *args, "--placement", "0,4,1,5,2,6,3,7")
    assert bad["time_s"] > 2 * good["time_s"]


def test_simulate_on_ideal_reports_the_closed_form_and_whether_it_agrees(capsys):
    data = run_json(capsys, "simulate", "--op", "allreduce", "--algo", "ring", "--ranks", "8", "--size", "1MiB")
    assert data["closed_form"] == {"time_s": pytest.approx(data["time_s"]), "exact": True, "agrees_with_engine": True}
    on_switch = run_json(capsys, "simulate", "--op", "allreduce", "--algo", "ring", "--ranks", "8", "--size", "1MiB",
                         "--topology", "switch:8")
    assert "closed_form" not in on_switch
