"""The command line and the app ask the same questions through the same requests (collsim/), with the same defaults,
and so print the same numbers: what-if, predict, fit and step-through, for the cases below."""

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
