"""Model vs reality: `collsim predict` on the log's machine preset (app/ui/reality_model.py), without Streamlit.

Expected values come from the simulator (simulator.nccl.predict.predict) or from benchmarks/preset_accuracy.py's own
computation, never from the page's helpers.
"""

from pathlib import Path

import pytest

from app.ui.reality_model import (
    Measured,
    bundled_logs,
    default_preset,
    fit_log,
    held_out_nvls_step,
    predict_accuracy,
    predict_log,
    predict_summary,
    read_bundled,
    rows,
)
from simulator.errors import CollsimError
from simulator.formats.nccl_tests import read_log
from simulator.nccl.predict import predict
from simulator.topology.spec import parse_topology

LOGS = Path(__file__).resolve().parents[1] / "data" / "nccl-tests"


def test_every_bundled_log_defaults_to_a_machine_with_room_for_its_ranks():
    assert len(bundled_logs()) >= 10
    for name in bundled_logs():
        spec = default_preset(name)
        log = read_log(LOGS / name)
        topology = parse_topology(spec)
        assert topology.origin is not None and topology.origin.preset.machine is not None, (name, spec)
        assert topology.num_devices >= log.ranks, (name, spec)
    assert default_preset("03_mine.txt") == ""  # an upload with a bundled log's prefix is still not that machine's
    assert default_preset(None) == ""


@pytest.mark.slow
def test_the_page_statistic_is_the_benchmark_predict_column():
    """Log 03: the page's median / worst |error| over sizes >= 1 MiB equal benchmarks/preset_accuracy.py's."""
    from benchmarks.preset_accuracy import CASES, evaluate

    name = "03_h100_p5_2node_16gpu_efa_allreduce.txt"
    case = next(c for c in CASES if name.startswith(c.prefix))
    bench = evaluate(LOGS / name, case)["predict"]
    log = read_bundled(name)
    median, worst = predict_accuracy(log, predict_log(log, default_preset(name)))
    assert median == pytest.approx(bench["median_abs_pct"], rel=1e-12)
    assert worst == pytest.approx(bench["worst_abs_pct"], rel=1e-12)
    assert bench["spec"] == default_preset(name) == "p5:nodes=2"


@pytest.mark.slow
def test_a_log_the_nvls_step_was_fitted_on_is_predicted_as_the_benchmark_holds_it_out():
    """Log 04 (one p5 node, NVLS): the page fits the NVLS step cost on the other NVLS logs, as the benchmark does."""
    from benchmarks.preset_accuracy import CASES, evaluate
    from simulator.nccl.nvls_fit import leave_one_out

    found = [(c, sorted(LOGS.glob(c.prefix + "*.txt"))[0]) for c in CASES]
    held_out, _ = leave_one_out([(c.prefix, c.new_spec, path) for c, path in found])  # as preset_accuracy.main
    name = "04_h100_p5_1node_8gpu_allreduce_awsbatch.txt"
    case = next(c for c in CASES if name.startswith(c.prefix))
    bench = evaluate(LOGS / name, case, nvls_step_s=held_out[case.prefix])["predict"]
    log = read_bundled(name)
    step = held_out_nvls_step(name)
    assert step == held_out[case.prefix]
    predictions = predict_log(log, default_preset(name), step)
    assert predict_accuracy(log, predictions) == pytest.approx((bench["median_abs_pct"], bench["worst_abs_pct"]), rel=1e-12)
    label, caption = predict_summary(log, "p5", predictions, step)
    assert label == "collsim predict on p5 (nothing fitted)" and "other NVLS logs (05, 07), not this one" in caption
    # with the shipped value (fitted on 04 too) the page says so
    label, caption = predict_summary(log, "p5", predict_log(log, "p5"))
    assert "a constant fitted on this log" in label and "NVLS_STEP_FIT" in caption
    assert held_out_nvls_step("03_h100_p5_2node_16gpu_efa_allreduce.txt") is None and held_out_nvls_step(None) is None


def test_rows_carry_predict_time_error_and_nccl_choice_per_size():
    name = "12_rtx4090_pcie_1node_2gpu_allreduce.txt"
    log = read_bundled(name)
    direct = {p.bytes: p for p in predict(parse_topology("rtx4090-pcie"), "allreduce",
                                          sorted({n for n, _ in log.measurements}), ranks=2)}
    table = rows(fit_log(log, "ring"), log, "ampere", 1, predict_log(log, "rtx4090-pcie"))
    assert [r["bytes"] for r in table] == sorted(direct)
    for r in table:
        p = direct[r["bytes"]]
        assert r["predict (us)"] == pytest.approx(p.time_s * 1e6, rel=1e-12)
        assert r["predict error (%)"] == pytest.approx((p.time_s * 1e6 / r["measured (us)"] - 1) * 100, rel=1e-9)
        assert (r["predict: NCCL algorithm/protocol"], r["predict channels"]) == (f"{p.nccl_algo}/{p.proto}", p.channels)
    assert "predict (us)" not in rows(fit_log(log, "ring"), log, "ampere", 1)[0]  # no preset, no predict columns


def test_accuracy_is_over_sizes_of_one_mib_and_more_only():
    class P:  # a Prediction's two fields the statistic reads
        def __init__(self, n, t):
            self.bytes, self.time_s = n, t

    log = Measured("hand", "allreduce", 8, ((1 << 19, 1.0), (1 << 20, 1.0), (1 << 21, 2.0), (1 << 22, 4.0)))
    # errors: 512 KiB +900% (left out), 1 MiB +10%, 2 MiB -25%, 4 MiB +50%
    preds = [P(1 << 19, 10.0), P(1 << 20, 1.1), P(1 << 21, 1.5), P(1 << 22, 6.0)]
    median, worst = predict_accuracy(log, preds)
    assert median == pytest.approx(25.0) and worst == pytest.approx(50.0)
    assert predict_accuracy(Measured("hand", "allreduce", 8, ((1024, 1.0),)), [P(1024, 2.0)]) is None


@pytest.mark.slow
def test_the_label_says_when_a_preset_constant_was_fitted_on_this_log():
    log = read_bundled("12_rtx4090_pcie_1node_2gpu_allreduce.txt")
    label, caption = predict_summary(log, "rtx4090-pcie", predict_log(log, "rtx4090-pcie"))
    assert "a constant fitted on this log" in label and "SHM_RATE_FIT" in caption and "12" in caption
    log = read_bundled("03_h100_p5_2node_16gpu_efa_allreduce.txt")
    label, caption = predict_summary(log, "p5:nodes=2", predict_log(log, "p5:nodes=2"))
    assert label == "collsim predict on p5:nodes=2 (nothing fitted)" and "FIT" not in caption
    assert "median |error|" in caption and "over sizes >= 1 MiB" in caption


@pytest.mark.parametrize("op, ranks, spec, starts, quoted", [
    ("alltoall", 8, "hgx-b200", "op:", "alltoall"),
    ("allreduce", 8, "ring:8", "preset:", "'ring:8'"),
    ("allreduce", 8, "mi300x", "preset:", "'mi300x'"),
    ("allreduce", 8, "/etc/passwd", "preset:", "'/etc/passwd'"),
    ("allreduce", 16, "p5", "preset:", "fewer than the 16 ranks"),
    ("allreduce", 12, "p5:nodes=2", "ranks:", "expected a multiple of 8"),
    ("allreduce", 64, "dgx-a100:nodes=8", "ranks:", "limit of 32"),
    ("allreduce", 8, "dgx-h100:nodes=99999", "preset:", "too large"),
])
def test_a_preset_predict_cannot_run_is_one_clear_error(op, ranks, spec, starts, quoted):
    log = Measured("hand", op, ranks, ((1 << 20, 1e-3),))
    with pytest.raises(CollsimError) as err:
        predict_log(log, spec)
    assert str(err.value).startswith(starts) and quoted in str(err.value), str(err.value)
    if starts == "preset:" and quoted.startswith("'"):
        assert "expected one of" in str(err.value) and "p5" in str(err.value)


def test_a_size_predict_refuses_names_the_size():
    with pytest.raises(CollsimError, match=r"^size: 6 bytes .*multiple of 4"):
        predict_log(Measured("hand", "allreduce", 8, ((6, 1e-5), (1 << 20, 1e-3))), "hgx-b200")
