"""Closed forms live in the algorithm registry; an algorithm without one still works everywhere (engine on ideal:P)."""

import json
import math

import numpy as np
import pytest

from app.cli import main
from simulator.algorithms import REGISTRY, all_specs, build_schedule
from simulator.algorithms.bruck import alltoall_blocks
from simulator.algorithms.registry import CHUNKS, Param, register, unregister
from simulator.algorithms.ring import ring_schedule
from simulator.algorithms.tree import dtree_counts
from simulator.collective import Collective
from simulator.cost import CLOSED_FORM, CLOSED_FORMS, ENGINE, LinkModel, estimate, has_closed_form, is_exact, predict
from simulator.engine import EngineOptions, simulate
from simulator.errors import CollsimError
from simulator.fit import fit_measurements
from simulator.topology import ideal

FANOUT = Param("fanout", 2, "a made-up tunable", minimum=1, maximum=4)


@pytest.fixture
def no_form():
    """allgather/no_form and allreduce/no_form: the ring schedules, registered without a closed form, then removed."""

    @register("allgather", "no_form", "ring allgather with no closed form (test only)", (CHUNKS, FANOUT))
    def allgather_no_form(coll, chunks=1, fanout=2):
        return ring_schedule(coll, reduce_scatter=False, allgather=True, chunks=chunks)

    @register("allreduce", "no_form", "ring allreduce with no closed form (test only)")
    def allreduce_no_form(coll):
        return ring_schedule(coll, reduce_scatter=True, allgather=True)

    try:
        yield "no_form"
    finally:
        unregister("allgather", "no_form")
        unregister("allreduce", "no_form")


def _engine_on_ideal(op, name, p, nbytes, alpha, bandwidth, gamma=0.0, **params):
    schedule = build_schedule(Collective(op, p, nbytes, "int8"), name, **params)
    return simulate(schedule, ideal(p, alpha, bandwidth), EngineOptions(gamma=gamma)).time


def test_builtin_closed_forms_are_declared_in_the_registry():
    without = {(spec.op, spec.name) for spec in all_specs() if spec.cost is None}
    assert without == {("allgather", "bidirectional_ring")}  # the engine-timed showcase
    assert set(CLOSED_FORMS) == set(REGISTRY) - without
    assert has_closed_form("allreduce", "ring") and not has_closed_form("allreduce", "nope")


def test_cost_cli_falls_back_to_the_engine_and_says_so(no_form, capsys):
    p, sizes = 6, [6 * 2**10, 6 * 2**20]
    assert main(["cost", "--op", "allgather", "--ranks", str(p), "--size", ",".join(map(str, sizes)),
                 "--alpha", "3us", "--bandwidth", "20GB/s", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["results"]
    mine = [r for r in rows if r["algorithm"] == no_form]
    assert [r["method"] for r in mine] == [ENGINE, ENGINE]
    assert all(r["method"] == (CLOSED_FORM if has_closed_form("allgather", r["algorithm"]) else ENGINE) for r in rows)
    assert {r["method"] for r in rows if r["algorithm"] == "ring"} == {CLOSED_FORM}
    for row, n in zip(mine, sizes):
        assert row["time_s"] == _engine_on_ideal("allgather", no_form, p, n, 3e-6, 20e9)
        # the same schedule as ring, whose published form is (p-1) alpha + (p-1)/p n beta
        assert row["time_s"] == pytest.approx((p - 1) * 3e-6 + (p - 1) / p * n / 20e9, rel=1e-9)


def test_cost_cli_text_marks_engine_columns(no_form, capsys):
    assert main(["cost", "--op", "allgather", "--ranks", "4", "--size", "1KiB:1MiB:32"]) == 0
    out = capsys.readouterr().out
    assert "* = event engine on ideal:4" in out and f"{no_form}*" in out
    assert main(["cost", "--op", "allgather", "--algo", no_form, "--ranks", "4", "--size", "1MiB"]) == 0
    assert "engine" in capsys.readouterr().out


def test_predict_estimate_and_is_exact_for_an_algorithm_without_a_form(no_form):
    m = LinkModel(2e-6, 1 / 25e9, 1e-11)
    sizes = np.array([[0, 1000], [4096, 12345]])
    est = estimate("allreduce", no_form, 5, sizes, m)
    assert est.method == ENGINE and est.times.shape == (2, 2)
    want = [[_engine_on_ideal("allreduce", no_form, 5, int(n), m.alpha, 1 / m.beta, m.gamma) for n in row] for row in sizes]
    np.testing.assert_array_equal(est.times, want)
    np.testing.assert_array_equal(predict("allreduce", no_form, 5, sizes, m), est.times)
    assert is_exact("allreduce", no_form, 5, m)
    assert predict("allreduce", no_form, 1, [100], m)[0] == 0.0


def test_cli_flags_come_from_the_registry_params(no_form, capsys):
    assert main(["cost", "--op", "allgather", "--algo", no_form, "--ranks", "4", "--size", "4KiB",
                 "--fanout", "3", "--chunks", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"] == {"chunks": 2, "fanout": 3}
    assert main(["cost", "--op", "allgather", "--algo", no_form, "--ranks", "4", "--fanout", "9"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"collsim: error: fanout: 9 is too large for allgather/{no_form}; expected <= 4"
    with pytest.raises(SystemExit):
        main(["cost", "--help"])
    assert "--fanout N" in capsys.readouterr().out


def test_flags_of_an_unregistered_param_are_gone(capsys):
    # refused in one line (app/argv.py `unrecognized`), no longer by argparse's SystemExit
    assert main(["cost", "--op", "allgather", "--ranks", "4", "--fanout", "3"]) == 2
    assert "unrecognized arguments: --fanout 3" in capsys.readouterr().err


def test_fit_works_on_engine_times(no_form, shared_data, capsys):
    """Measurements made from the ring formula: the engine-timed copy of ring recovers alpha and bandwidth."""
    alpha, bandwidth, p = 4e-6, 40e9, 8
    sizes = [2**k for k in range(10, 27, 2)]
    data = [(n, 2 * (p - 1) * alpha + 2 * (p - 1) / p * n / bandwidth) for n in sizes]
    fit = fit_measurements("allreduce", no_form, p, data)
    assert fit.meta["method"] == ENGINE
    assert fit.alpha_s == pytest.approx(alpha, rel=1e-6) and fit.bandwidth_Bps == pytest.approx(bandwidth, rel=1e-6)
    log = shared_data / "nccl-tests" / "04_h100_p5_1node_8gpu_allreduce_awsbatch.txt"
    assert main(["fit", str(log), "--algo", f"ring,{no_form}", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    by_name = {c["algorithm"]: c for c in out["candidates"]}
    assert by_name[no_form]["alpha_s"] == pytest.approx(by_name["ring"]["alpha_s"], rel=1e-6)
    assert by_name[no_form]["bandwidth_Bps"] == pytest.approx(by_name["ring"]["bandwidth_Bps"], rel=1e-6)
    assert main(["fit", str(log), "--algo", no_form]) == 0
    assert f"{no_form} engine time on ideal:8 (no closed form) fitted" in capsys.readouterr().out


def test_app_cost_figure_labels_engine_lines(no_form):
    from app.figures import _label, cost_table

    m = LinkModel(2e-6, 1 / 25e9)
    table = cost_table("allgather", 4, [4096, 2**20], m, params={"chunks": 2})
    assert table["methods"][no_form] == ENGINE and table["methods"]["ring"] == CLOSED_FORM
    np.testing.assert_allclose(table["times"]["ring"], predict("allgather", "ring", 4, [4096, 2**20], m, chunks=2))
    assert _label(no_form, table) == f"{no_form} (engine)" and _label("ring", table) == "ring"


def test_unknown_algorithms_are_still_refused():
    with pytest.raises(CollsimError, match="unknown algorithm 'nope' for allreduce"):
        predict("allreduce", "nope", 4, [1024], LinkModel(1e-6, 1e-9))


def test_per_p_helpers_are_cached_and_right():
    dtree_counts.cache_clear()
    first = dtree_counts(48)
    assert dtree_counts(48) is first and dtree_counts.cache_info().hits >= 1
    for p in range(1, 300):
        brute = [sum(1 for i in range(1, p) if i >> k & 1) for k in range(math.ceil(math.log2(p)) if p > 1 else 0)]
        assert list(alltoall_blocks(p)) == brute, p
