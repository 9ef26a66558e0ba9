"""`collsim verify`, `calibrate` and `compare` from the command line: output shapes, numbers and clear errors."""

import json
import subprocess
import sys

import pytest

from app.cli import main
from simulator.profile import load_profile

# rank processes run one at a time on one xdist worker (--dist loadgroup): their timeouts and timings assume it
pytestmark = pytest.mark.xdist_group("processes")


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_help_and_simulator_do_not_import_torch():
    code = ("import sys, app.cli, simulator.cost, simulator.semantics, simulator.profile, app.commands.verify; "
            "app.cli.build_parser(); import verify.launch, verify.fit, verify.compare; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    helptext = subprocess.run([sys.executable, "-m", "app.cli", "verify", "--help"], capture_output=True, text=True, check=True).stdout
    assert "--native" in helptext and "--json" in helptext


@pytest.mark.parametrize("argv,needle", [
    (["verify", "--ranks", "2", "--op", "allreduce", "--algo", "ring", "--dtype", "float8"], "dtype: unknown element type 'float8'"),
    (["verify", "--ranks", "2", "--op", "allreduce", "--algo", "ring", "--dtype", "uint8"], "dtype: uint8 is not verified"),
    (["verify", "--ranks", "2", "--op", "allreduce", "--algo", "nope"], "algo: unknown algorithm 'nope' for allreduce"),
    (["verify", "--ranks", "0", "--op", "allreduce"], "ranks: 0"),
    (["verify", "--op", "allreduce"], "ranks: None"),
    (["verify", "--ranks", "2", "--op", "allreduce", "--sizes", "5:1"], "sizes: '5:1' needs 0 < START <= END"),
    (["verify", "--ranks", "2", "--op", "broadcast", "--root", "2"], "root: 2 is not a rank of 2"),
    (["verify", "--ranks", "2", "--op", "allreduce", "--backend", "mpi"], "backend: unknown backend 'mpi'"),
    (["verify", "--ranks", "2", "--op", "allreduce", "--redop", "avg"], "redop: unknown reduction 'avg'"),
    (["calibrate", "--sizes", "1KiB"], "sizes: '1KiB' gives 1 size"),
    (["calibrate", "--ranks", "1"], "ranks: 1; a ping-pong needs at least 2"),
    (["compare", "--op", "allreduce", "--algo", "ring", "--ranks", "2"], "profile: give --profile FILE"),
    (["compare", "--op", "allreduce", "--algo", "ring", "--profile", "/nonexistent.yaml"], "profile: cannot read /nonexistent.yaml"),
])
def test_bad_input_is_one_clear_line(capsys, argv, needle):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert err.startswith("collsim: error: ") and needle in err, err
    assert "Traceback" not in err and err.count("\n") == 1


def test_nccl_without_gpus_is_a_clear_error(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available() and torch.cuda.device_count() >= 2:
        pytest.skip("this machine has GPUs")
    code, _, err = run_cli(capsys, "verify", "--ranks", "2", "--op", "allreduce", "--algo", "ring", "--backend", "nccl")
    assert code == 2 and "nccl needs one GPU per rank; 2 ranks asked" in err


def _closed_ring_allreduce(p, n, alpha, beta):
    """Patarasuk & Yuan by hand: 2(p-1) messages of n/p bytes."""
    return 2 * (p - 1) * (alpha + n / p * beta)


def _measured_file(tmp_path, scale):
    sizes = [2**16, 2**20, 2**24]
    records = [{"op": "allreduce", "algorithm": "ring", "params": {"chunks": 1}, "ranks": 4, "bytes": n,
                "time_s": scale * _closed_ring_allreduce(4, n, 1e-4, 1 / 2e9)} for n in sizes]
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"records": records}))
    return path


@pytest.mark.parametrize("scale,mdape", [(1.0, 0.0), (1.1, 100 * (1 - 1 / 1.1))])
def test_compare_reads_measurements_and_reports_the_median_error(capsys, tmp_path, scale, mdape):
    measured = _measured_file(tmp_path, scale)
    csv_path = tmp_path / "cmp.csv"
    code, out, _ = run_cli(capsys, "compare", "--op", "allreduce", "--algo", "ring", "--alpha", "100us", "--bandwidth", "2GB/s",
                           "--measured", str(measured), "--csv", str(csv_path), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["ranks"] == 4
    assert data["median_abs_pct_error"]["closed_form"] == pytest.approx(mdape, abs=1e-9)
    assert [r["bytes"] for r in data["rows"]] == [2**16, 2**20, 2**24]
    assert csv_path.read_text().splitlines()[0].startswith("bytes,measured_s,closed_form_s,closed_form_err_pct")


def test_compare_names_what_the_file_has(capsys, tmp_path):
    measured = _measured_file(tmp_path, 1.0)
    code, _, err = run_cli(capsys, "compare", "--op", "allgather", "--algo", "ring", "--alpha", "1us", "--bandwidth", "1GB/s",
                           "--measured", str(measured))
    assert code == 2 and "has no timed allgather/ring rows; it has: allreduce/ring p=4" in err




@pytest.mark.slow
def test_verify_calibrate_compare_end_to_end(capsys, tmp_path):
    """One real gloo run of each command: verify's JSON/CSV, a profile the simulator loads, compare against both."""
    pytest.importorskip("torch")
    csv_path = tmp_path / "v.csv"
    code, out, _ = run_cli(capsys, "verify", "--ranks", "2", "--op", "allreduce", "--algo", "ring", "--sizes", "4KiB,256KiB",
                           "--native", "--iters", "5", "--json", "--csv", str(csv_path))
    assert code == 0
    run = json.loads(out)
    assert run["passed"] and run["ranks"] == 2 and run["backend"] == "gloo"
    for r in run["records"]:
        assert r["correct"] is True and r["time_s"] > 0 and r["native_time_s"] > 0
        # nccl-tests: busbw = size / time * 2(p-1)/p, in GB/s of 1e9 B
        assert r["busbw_GBps"] == pytest.approx(r["bytes"] / r["time_s"] * 2 * 1 / 2 / 1e9)
        assert r["timing"]["min_s"] <= r["time_s"] <= r["timing"]["max_s"]
    assert csv_path.read_text().count("\n") == 3
    (tmp_path / "run.json").write_text(out)

    profile_path = tmp_path / "gloo.yaml"
    code, out, _ = run_cli(capsys, "calibrate", "--ranks", "2", "--sizes", "1B:1MiB:16", "--iters", "5", "--budget", "0.2",
                           "--out", str(profile_path), "--json")
    assert code == 0
    profile = load_profile(profile_path)
    fit = json.loads(out)["fit"]
    assert profile.alpha_s == pytest.approx(fit["alpha_s"]) and profile.bandwidth_Bps > 0 and profile.gamma_s_per_byte >= 0
    assert len(fit["sizes"]) == 6 and fit["r2_log"] <= 1 and fit["r2"] <= 1  # R^2 may be negative for a bad fit

    code, out, _ = run_cli(capsys, "compare", "--op", "allreduce", "--algo", "ring", "--profile", str(profile_path),
                           "--measured", str(tmp_path / "run.json"))
    assert code == 0 and "closed_form: median absolute error" in out

    # the gloo model: executor steps cut into message-size ranges, which compare then prices per message
    pieces_path = tmp_path / "pieces.yaml"
    code, out, _ = run_cli(capsys, "calibrate", "--ranks", "2", "--pattern", "executor", "--piecewise", "--no-gamma",
                           "--sizes", "1KiB:1MiB:4", "--iters", "3", "--budget", "0.2", "--out", str(pieces_path))
    assert code == 0 and "# segments by message size" in out
    pieces = load_profile(pieces_path)
    assert pieces.segments_by == "message" and 1 <= len(pieces.segments) <= 2  # 6 sizes, at least 3 a range
    assert pieces.segments[0].min_bytes == 0 and pieces.segments[-1].max_bytes is None
    code, out, _ = run_cli(capsys, "compare", "--op", "allreduce", "--algo", "ring", "--profile", str(pieces_path),
                           "--measured", str(tmp_path / "run.json"))
    assert code == 0 and "engine: median absolute error" in out

    # the event simulator loads the calibrated profile too
    code, out, _ = run_cli(capsys, "simulate", "--op", "allreduce", "--algo", "ring", "--ranks", "2", "--size", "1MiB",
                           "--profile", str(profile_path), "--json")
    assert code == 0 and json.loads(out)

    code, out, _ = run_cli(capsys, "verify", "--ranks", "2", "--op", "allgather", "--algo", "ring", "--sizes", "4KiB", "--native",
                           "--iters", "3")
    assert code == 0
    assert "size(B)" in out and "busbw" in out and "# Avg bus bandwidth" in out and "1 of 1 cases correct" in out


def test_engine_prediction_is_used_when_installed():
    """With simulator.engine present, compare predicts with it too; on a switch, ring equals Patarasuk & Yuan by hand."""
    pytest.importorskip("simulator.engine")
    from simulator.profile import LinkProfile
    from verify.compare import predictions

    sizes = [2**16, 2**20, 2**24]
    got = predictions("allreduce", "ring", 4, sizes, LinkProfile(1e-4, 2e9), {"chunks": 1})
    assert set(got) == {"closed_form", "engine"}
    for n, t in zip(sizes, got["engine"]):
        assert t == pytest.approx(_closed_ring_allreduce(4, n, 1e-4, 1 / 2e9), rel=1e-9)


@pytest.mark.slow
def test_the_same_command_runs_under_torchrun():
    """torchrun (env:// rendezvous, --standalone picks a free port) starts the ranks; rank 0 prints the JSON."""
    pytest.importorskip("torch")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "app.cli", "verify",
           "--op", "allreduce", "--algo", "ring", "--sizes", "4KiB", "--iters", "3", "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(done.stdout)
    assert data["launcher"] == "torchrun" and data["ranks"] == 2 and data["passed"]
    assert data["records"][0]["correct"] is True and data["records"][0]["time_s"] > 0
