"""Calibrated presets (simulator/nccl/calibration.py): bounds, recovery of planted parameters, files, held-out errors."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from app.cli import main
from simulator.errors import CollsimError
from simulator.formats.nccl_tests import read_log
from simulator.nccl.calibration import Calibration, apply, calibration_from_dict, link_classes
from simulator.nccl.fitting import _box_lstsq, fit_calibration
from simulator.nccl.predict import predict
from simulator.readfile import read_data
from simulator.topology.presets import build_preset
from simulator.topology.spec import parse_topology


def load_calibration(path: str | Path) -> Calibration:
    """Read a calibration file (YAML, or JSON for a .json name)."""
    return calibration_from_dict(read_data(path, "calibration"), str(path))

DATA = Path(__file__).resolve().parents[1] / "data" / "nccl-tests"
LOG04 = DATA / "04_h100_p5_1node_8gpu_allreduce_awsbatch.txt"
LOG02 = DATA / "02_a100_p4de_2node_16gpu_efa_allreduce.txt"
SIZES = np.array([1 << k for k in (10, 14, 18, 20, 22, 24, 26, 28)], dtype=float)


def _times(topology, sizes, ranks):
    return np.array([r.time_s for r in predict(topology, "allreduce", sizes.astype(int), ranks=ranks)])


def test_apply_scales_each_link_class_and_adds_step_latency_per_route():
    base = build_preset("p5", 2)
    cal = Calibration("p5", 2, "efa100", intra_efficiency=(1.0, 1.0, 0.5), net_efficiency=(1.0, 1.0, 0.25),
                      intra_step_s=3e-6, net_step_s=40e-6)
    out = apply(base, cal)
    intra, net = link_classes(base)
    assert intra.any() and net.any() and not (intra & net).any()
    # by hand: NVLink is 450 GB/s per direction on p5; each GPU's NIC link bonds 4 EFA ports of 100 Gbit/s = 50 GB/s
    assert np.allclose(out.bandwidth[intra & (base.bandwidth == 450e9)], 225e9)
    assert np.allclose(out.bandwidth[net], 4 * 12.5e9 * 0.25)
    assert np.array_equal(out.bandwidth[~intra & ~net], base.bandwidth[~intra & ~net])  # PCIe to the NICs untouched
    # a route inside a node gains one intra step, a route across nodes one network step
    assert out.path_cost(0, 1)[0] - base.path_cost(0, 1)[0] == pytest.approx(3e-6)
    assert out.path_cost(0, 8)[0] - base.path_cost(0, 8)[0] == pytest.approx(40e-6)
    # LL128 has its own (neutral) efficiency: the NVLink links keep 450 GB/s
    assert np.allclose(apply(base, cal, "LL128").bandwidth[intra], base.bandwidth[intra])


def test_box_lstsq_matches_a_brute_force_search():
    rng = np.random.default_rng(7)
    a = rng.normal(size=(12, 3))
    y = rng.normal(size=12) * 3
    lo, hi = np.array([0.0, -1.0, 0.5]), np.array([1.0, 1.0, 2.0])
    x = _box_lstsq(a, y, lo, hi)
    assert np.all(x >= lo - 1e-12) and np.all(x <= hi + 1e-12)
    grid = [np.linspace(lo[i], hi[i], 41) for i in range(3)]
    brute = min(float(np.sum((a @ np.array(p) - y) ** 2)) for p in itertools.product(*grid))
    assert float(np.sum((a @ x - y) ** 2)) <= brute + 1e-9


def test_fit_recovers_planted_parameters_on_one_node():
    """Times made by a calibrated dgx-a100 with known parameters: the fit finds them again (LL128 and Simple both
    run here; on a Hopper box NVLS takes LL128's sizes)."""
    planted = Calibration("dgx-a100", 1, "hdr200", intra_efficiency=(1.0, 0.7, 0.8), intra_step_s=2e-6)
    measured = _times(apply(build_preset("dgx-a100"), planted), SIZES, 8)
    report = fit_calibration(build_preset("dgx-a100"), "allreduce", 8, SIZES, measured, np.ones(len(SIZES), bool))
    got = report.calibration
    assert got.intra_efficiency[2] == pytest.approx(0.8, rel=0.03)
    assert got.intra_efficiency[1] == pytest.approx(0.7, rel=0.05)
    assert got.intra_step_s == pytest.approx(2e-6, abs=0.5e-6)
    assert report.median_abs_pct(True) < 1.0
    assert "net_step_s" not in got.identified and got.net_step_s == 0.0  # one node: the network is not seen
    assert got.net_efficiency == (1.0, 1.0, 1.0)


@pytest.mark.slow
def test_fit_never_exceeds_the_links_or_goes_below_nccls_latency():
    """Measured times twice as fast as the preset allows: the bounds hold (efficiency 1, no negative latency)."""
    preset_times = _times(build_preset("p5"), SIZES, 8)
    report = fit_calibration(build_preset("p5"), "allreduce", 8, SIZES, preset_times / 2, np.ones(len(SIZES), bool))
    cal = report.calibration
    assert all(e == 1.0 for e in cal.intra_efficiency + cal.net_efficiency)
    assert cal.intra_step_s == 0.0 and cal.net_step_s == 0.0
    assert np.allclose(report.predicted, preset_times)


def test_a_protocol_the_training_sizes_never_ran_keeps_its_links():
    """Trained on LL/LL128 sizes only (<= 16 MiB on dgx-a100; on p5 NVLS runs from 2 MiB), Simple's
    efficiency stays 1 whatever the times say."""
    small = SIZES[SIZES <= 16 << 20]
    measured = _times(build_preset("dgx-a100"), small, 8) * 1.5
    cal = fit_calibration(build_preset("dgx-a100"), "allreduce", 8, small, measured, np.ones(len(small), bool)).calibration
    assert cal.intra_efficiency[2] == 1.0 and "intra_efficiency.Simple" not in cal.identified


def test_calibration_file_round_trip_and_node_count(tmp_path):
    cal = Calibration("p5", 1, "efa100", intra_efficiency=(0.9, 0.8, 0.95), net_efficiency=(1.0, 0.5, 0.6),
                      intra_step_s=1.5e-6, net_step_s=30e-6, identified=("intra_step_s",), fitted_to="x")
    for name in ("c.yaml", "c.json"):
        cal.save(tmp_path / name)
        back = load_calibration(tmp_path / name)
        assert back.intra_efficiency == cal.intra_efficiency and back.net_efficiency == cal.net_efficiency
        assert back.intra_step_s == pytest.approx(1.5e-6) and back.net_step_s == pytest.approx(30e-6)
        two = parse_topology(f"{tmp_path / name}:nodes=2")
        assert two.num_devices == 16 and two.origin.calibration == back
    # predict on the file's machine equals predict on the preset with the same calibration applied
    two = parse_topology(f"{tmp_path / 'c.yaml'}:nodes=2")
    by_hand = apply(build_preset("p5", 2), load_calibration(tmp_path / "c.yaml"))
    sizes = [1 << 20, 1 << 26]
    assert [r.time_s for r in predict(two, "allreduce", sizes)] == [r.time_s for r in predict(by_hand, "allreduce", sizes)]


def test_calibrated_latency_and_efficiency_slow_predict_down():
    # dgx-a100: rings at every size (on p5 NVLS runs from 2 MiB, at NCCL's nvlsEfficiency, not a ring's calibrated one)
    slow = Calibration("dgx-a100", 1, "hdr200", intra_efficiency=(0.5, 0.5, 0.5), intra_step_s=5e-6)
    plain = _times(build_preset("dgx-a100"), SIZES, 8)
    calibrated = _times(apply(build_preset("dgx-a100"), slow), SIZES, 8)
    assert np.all(calibrated > plain)
    # at 256 MiB (Simple, bandwidth-bound) half the bandwidth is close to twice the time
    assert calibrated[-1] / plain[-1] == pytest.approx(2.0, rel=0.05)


@pytest.mark.parametrize("data, field", [
    ({"collsim_calibration": 1, "preset": "p5", "parameters": {"intra_efficiency": {"Simple": 1.2}}}, "intra_efficiency"),
    ({"collsim_calibration": 1, "preset": "p5", "parameters": {"net_step_us": -1}}, "net_step_us"),
    ({"collsim_calibration": 1, "preset": "mi300x", "parameters": {}}, "preset"),
    ({"collsim_calibration": 1, "preset": "p5", "nodes": 0, "parameters": {}}, "nodes"),
])
def test_bad_calibration_data_names_the_field(data, field):
    with pytest.raises(CollsimError, match=field):
        calibration_from_dict(data, "c.yaml")


def _cli_json(argv, capsys) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_holdout_errors_are_only_on_sizes_the_fit_did_not_see(capsys):
    out = _cli_json(["fit", str(LOG04), "--train-sizes", "1KiB:16MiB", "--json"], capsys)
    rows = out["per_size"]
    assert all(r["train"] == (1024 <= r["bytes"] <= 16 << 20) for r in rows)
    held = [abs(r["predicted_s"] - r["time_s"]) / r["time_s"] * 100 for r in rows if not r["train"]]
    assert out["holdout_median_abs_pct"] == pytest.approx(float(np.median(held)))
    # --holdout names the held-out sizes; the rest is fitted
    again = _cli_json(["fit", str(LOG04), "--holdout", "32MiB:", "--json"], capsys)
    assert all(r["train"] == (r["bytes"] < 32 << 20) for r in again["per_size"])


@pytest.mark.slow
def test_cli_preset_calibration_writes_a_file_predict_takes(tmp_path, capsys):
    out_file = tmp_path / "my-p5.yaml"
    out = _cli_json(["fit", str(LOG04), "--preset", "p5", "--train-sizes", "1MiB:16MiB", "--out", str(out_file), "--json"],
                    capsys)
    rows = out["per_size"]
    held = [abs(r["calibrated_s"] - r["time_s"]) / r["time_s"] * 100 for r in rows if not r["train"]]
    assert out["holdout_median_abs_pct"] == pytest.approx(float(np.median(held)))
    assert sum(r["train"] for r in rows) == 5  # 1, 2, 4, 8, 16 MiB
    pred = _cli_json(["predict", "--preset", f"{out_file}:nodes=2", "--size", "1MiB:4MiB", "--json"], capsys)
    assert pred["ranks"] == 16 and len(pred["rows"]) == 3


@pytest.mark.slow
def test_a_calibration_keeps_the_nccl_release_it_was_fitted_with(tmp_path):
    # a log from NCCL 2.20.3 is fitted with that release's latency tables (tree Simple 28 us per step); the file keeps
    # the release and predict on it uses those tables unless told otherwise
    from simulator.nccl.tuning import parse_nccl_version

    log = read_log(LOG02)
    sizes, times = zip(*log.measurements())
    train = np.array(sizes) <= 16 << 20
    topo = parse_topology("p4de:nodes=2")
    report = fit_calibration(topo, log.op, log.ranks, sizes, times, train, "02", nccl_version="2.20.3")
    cal = report.calibration
    assert cal.nccl_version == "2.20.3"
    cal.save(tmp_path / "c.yaml")
    assert load_calibration(tmp_path / "c.yaml").nccl_version == "2.20.3"
    fitted = parse_topology(str(tmp_path / "c.yaml"))
    sizes = [1 << 20, 64 << 20]
    own = [r.time_s for r in predict(fitted, "allreduce", sizes)]
    assert own == [r.time_s for r in predict(fitted, "allreduce", sizes, nccl_version="2.20.3")]
    assert own != [r.time_s for r in predict(fitted, "allreduce", sizes, nccl_version="latest")]
    # the fit's own predictions ran with that release: it reproduces them
    assert np.allclose(own, report.predicted[[list(report.sizes).index(s) for s in sizes]], rtol=1e-9)
    assert parse_nccl_version(cal.nccl_version) == (2, 20, 3)
