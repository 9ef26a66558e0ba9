"""The command line and the app ask the same questions through the same requests (collsim/), with the same defaults,
and so print the same numbers: what-if, predict, fit, step-through, cost, doctor and contention, for the cases below."""

from __future__ import annotations

import json

import pytest

from app.cli import build_parser, main

LOG = "04_h100_p5_1node_8gpu_allreduce_awsbatch.txt"


def cli_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_whatif_page_builds_the_request_the_command_line_builds(capsys):
    from app.commands.whatif import request
    from app.ui.whatif_model import step_case_for, step_row, step_whatif

    argv = ["whatif", "ddp", "--machines", "dgx-h100", "--mode", "isolated", "--timing", "links", "--no-sensitivity",
            "--jobs", "1"]
    cli_request = request(build_parser().parse_args(argv))
    assert step_whatif("dgx-h100", "ddp", "llama2-7b", mode="isolated", timing="links") == cli_request
    assert step_case_for("dgx-h100", "ddp", "llama2-7b", mode="isolated", timing="links") == cli_request.cases[0]
    row = cli_json(capsys, *argv)["rows"][0]
    page = step_row("dgx-h100", "ddp", "llama2-7b", mode="isolated", timing="links")
    assert page["step_s"] == row["step_s"] and page["exposed_s"] == row["exposed_s"] and page["tokens"] == row["tokens"]


def test_whatif_page_times_nccl_calls_as_predict_does(capsys):
    from app.ui.whatif_model import nccl_rows

    sizes = [1 << 20, 64 << 20]
    printed = cli_json(capsys, "predict", "--preset", "p5", "--size", "1MiB,64MiB")["rows"]
    page = nccl_rows("p5", ["allreduce"], sizes)
    assert [r["time (us)"] for r in page] == [r["time_s"] * 1e6 for r in printed]
    assert [r["NCCL algorithm"] for r in page] == [r["nccl_algorithm"] for r in printed]


def test_reality_page_predicts_a_log_as_predict_does(capsys):
    from app.ui.reality_model import predict_log, read_bundled

    measured = read_bundled(LOG)
    sizes = sorted({n for n, _ in measured.measurements})[-4:]  # the largest four: enough to cover two picks
    measured = type(measured)(measured.source, measured.op, measured.ranks,
                              tuple((n, t) for n, t in measured.measurements if n in sizes))
    page = predict_log(measured, "p5")
    printed = cli_json(capsys, "predict", "--preset", "p5", "--ranks", str(measured.ranks),
                       "--size", ",".join(map(str, sizes)))["rows"]
    assert [(p.bytes, p.time_s) for p in page] == [(r["bytes"], r["time_s"]) for r in printed]


@pytest.mark.parametrize("algo", ["ring", "recursive_doubling"])
def test_reality_page_fits_as_fit_does(capsys, algo):
    from app.ui.reality_model import LOGS, fit_log, read_bundled

    page = fit_log(read_bundled(LOG), algo)
    printed = cli_json(capsys, "fit", str(LOGS / LOG), "--algo", algo)
    assert (page.alpha_s, page.bandwidth_Bps) == (printed["alpha_s"], printed["bandwidth_Bps"])
    assert page.params == printed["params"]


def test_step_page_times_a_schedule_as_simulate_does(capsys):
    from app.ui.step_model import build_step_model

    page = build_step_model("allreduce", "ring", 8, {}, 0, "dgx-h100", "1MiB")
    printed = cli_json(capsys, "simulate", "--op", "allreduce", "--algo", "ring", "--ranks", "8", "--size", "1MiB",
                       "--topology", "dgx-h100", "--dtype", "float32")
    assert page.trace.time == printed["time_s"]


COST_ARGV = ["cost", "--op", "allreduce", "--ranks", "8", "--size", "1KiB:1GiB:4", "--alpha", "5us", "--bandwidth",
             "50GB/s", "--gamma", "1e-11", "--chunks", "2"]


def test_cost_page_builds_the_request_cost_builds():
    """The cost explorer's choice (op, ranks, sizes, alpha, bandwidth, gamma, chunks) is `collsim cost`'s request."""
    from app.commands.cost import request
    from app.explorer import cost_request

    cli_request = request(build_parser().parse_args(COST_ARGV))
    assert cost_request("allreduce", 8, "1KiB:1GiB:4", "5us", "50GB/s", 1e-11, {"chunks": 2}) == cli_request
    # gamma 0 on the page is the command's default (no --gamma)
    assert cost_request("allreduce", 8, "1MiB", "5us", "50GB/s", 0.0) == request(build_parser().parse_args(
        ["cost", "--op", "allreduce", "--ranks", "8", "--alpha", "5us", "--bandwidth", "50GB/s"]))


def test_cost_page_starts_on_the_link_cost_defaults_to():
    """The page's alpha and bandwidth sliders start where `collsim cost` without --alpha/--bandwidth prices."""
    from app.commands.cost import request
    from app.explorer import cost_request
    from collsim.cost import DEFAULT_ALPHA, DEFAULT_BANDWIDTH

    cli_request = request(build_parser().parse_args(["cost", "--op", "allgather", "--ranks", "16"]))
    page = cost_request("allgather", 16, "1MiB", DEFAULT_ALPHA, DEFAULT_BANDWIDTH)
    model = cli_request.model
    assert page.model == model and (model.alpha, model.beta, model.gamma) == (2e-6, 1 / 25e9, 0.0)  # 2 us, 25 GB/s


def test_cost_page_prices_as_cost_prints(capsys):
    """The explorer's lines, best algorithm and lower bound are the numbers `collsim cost --json` prints."""
    from app.explorer import cost_request, explore_request

    printed = cli_json(capsys, *COST_ARGV)["results"]
    ex = explore_request(cost_request("allreduce", 8, "1KiB:1GiB:4", "5us", "50GB/s", 1e-11, {"chunks": 2}))
    assert set(ex.table["times"]) == {r["algorithm"] for r in printed}
    for name, times in ex.table["times"].items():
        assert [r["time_s"] for r in printed if r["algorithm"] == name] == [float(t) for t in times]
    first = [r for r in printed if r["algorithm"] == printed[0]["algorithm"]]
    assert [r["lower_bound_s"] for r in first] == [float(b) for b in ex.table["bound"]]
    sizes = [r["bytes"] for r in first]
    best = [min((r for r in printed if r["bytes"] == n), key=lambda r: r["time_s"])["algorithm"] for n in sizes]
    assert ex.best() == best


@pytest.mark.parametrize("preset", ["", "p5"])
def test_doctor_page_diagnoses_as_doctor_does(capsys, preset):
    """The Doctor page's request for a bundled log is `collsim doctor LOG [--preset SPEC]`'s, and answers the same."""
    from app.commands.doctor import request
    from app.ui.doctor_model import LOGS
    from app.ui.doctor_model import request as page_request
    from simulator.render import json_text

    argv = ["doctor", str(LOGS / LOG)] + (["--preset", preset] if preset else [])
    cli_request = request(build_parser().parse_args(argv))
    page = page_request(LOG, None, preset)
    assert page == cli_request
    assert json.loads(json_text(page.run().data())) == cli_json(capsys, *argv)


CONTENTION = ["simulate", "--op", "allreduce", "--algo", "ring", "--ranks", "8", "--size", "1MiB", "--dtype", "float32"]


def test_contention_page_times_its_run_as_simulate_does(capsys):
    """The Contention page's run as chosen, then with a late rank and with a share of its busiest link taken, are
    `collsim simulate`'s runs with --straggler RANK:DELAY and --congestion LINK:SHARE (the link by its id)."""
    from app.ui.contention_model import run_contention

    plain = run_contention("dgx-h100", "allreduce", "ring", 8, "1MiB", {}, gamma=1e-11)
    cli = [*CONTENTION, "--topology", "dgx-h100", "--gamma", "1e-11"]
    assert plain.before.time == cli_json(capsys, *cli)["time_s"]
    late = run_contention("dgx-h100", "allreduce", "ring", 8, "1MiB", {}, late_rank=3, delay_us=20.0, gamma=1e-11)
    assert late.after.time == cli_json(capsys, *cli, "--straggler", "3:20us")["time_s"]
    link = plain.before.busiest_link()["link"]
    loaded = run_contention("dgx-h100", "allreduce", "ring", 8, "1MiB", {}, load=0.5, gamma=1e-11)
    assert loaded.after.time == cli_json(capsys, *cli, "--congestion", f"{link}:0.5")["time_s"]
    assert loaded.after.time > plain.before.time  # the disturbance is there to see, on both faces


def test_contention_page_slows_a_rank_as_simulate_does_on_an_ideal_machine(capsys):
    """A slow rank on the page also divides its links' bandwidth, which `collsim simulate --slow` (reductions only)
    cannot: that part has no command-line twin. On ideal:P, whose links the page leaves as they are, the two agree."""
    from app.ui.contention_model import run_contention

    page = run_contention("ideal", "allreduce", "ring", 8, "1MiB", {}, slow_rank=5, slow_factor=4.0, gamma=1e-11)
    cli = cli_json(capsys, *CONTENTION, "--topology", "ideal:8", "--gamma", "1e-11", "--slow", "5:4")
    assert page.after.time == cli["time_s"] and page.after.time > page.before.time


def test_whatif_several_jobs_builds_the_request_colocate_builds(capsys, tmp_path):
    """The What-if page's several-jobs view writes each job's program and asks the ColocateRequest that `collsim
    colocate --topology M FILE@DEVICES ...` asks with the same files; the program it writes is the one a student would
    write by hand, and the page's rows are what the command line prints."""
    from dataclasses import replace

    import yaml

    from app.commands.colocate import request
    from app.ui.colocate_model import colocate_request, job_rows
    from simulator.program import load_program

    machine, devices = "cluster:nodes=4,gpus=8,nic=node,nics=1", ("0-3,8-11", "4-7,12-15")
    page = colocate_request(machine, [("allgather", "8MiB", devices[0]), ("allgather", "8MiB", devices[1])], tmp_path)
    written = page.jobs[0].rpartition("@")[0]
    assert page.jobs == tuple(f"{written}@{d}" for d in devices)
    by_hand = tmp_path / "by_hand.yaml"
    by_hand.write_text(yaml.safe_dump({"world": 8, "groups": {"all": list(range(8))},
                                       "ranks": {"0-7": [{"op": "allgather", "group": "all", "size": 8 << 20}]}}))
    assert replace(load_program(written), source="") == replace(load_program(str(by_hand)), source="")
    argv = ["colocate", "--topology", machine, *page.jobs]
    assert request(build_parser().parse_args(argv)) == page
    printed = cli_json(capsys, *argv)["jobs"]
    assert [(r["alone (ms)"], r["together (ms)"], r["slowdown (%)"]) for r in job_rows(page.run().data())] == \
        [(r["alone_s"] * 1e3, r["together_s"] * 1e3, 100 * r["slowdown"]) for r in printed]
