"""collsim's own results written as nccl-tests logs read back and fit like real ones."""

import pytest

from app.cli import main
from simulator.formats.nccl_tests import read_log


def test_sweep_log_fits_back_to_the_machine_it_simulated(tmp_path, capsys):
    log = tmp_path / "sweep.log"
    # ideal machine: a message costs alpha + n/B, exactly the closed form the fit inverts
    assert main(["sweep", "--op", "allreduce", "--algo", "ring,rabenseifner", "--ranks", "8", "--topology", "ideal:8",
                 "--alpha", "3us", "--bandwidth", "20GB/s", "--sizes", "1KiB:16MiB:4", "--nccl-log", str(log)]) == 0
    ring = tmp_path / "sweep-ring.log"
    assert ring.exists() and (tmp_path / "sweep-rabenseifner.log").exists()
    parsed = read_log(ring)
    assert parsed.op == "allreduce" and parsed.ranks == 8
    assert [r.bytes for r in parsed.rows][:2] == [1024, 4096]
    capsys.readouterr()
    assert main(["fit", str(ring), "--json"]) == 0
    import json

    fit = json.loads(capsys.readouterr().out)
    assert fit["alpha_s"] == pytest.approx(3e-6, rel=0.02)
    assert fit["bandwidth_Bps"] == pytest.approx(20e9, rel=0.02)


@pytest.mark.slow
def test_verify_log_reads_back(tmp_path, capsys):
    pytest.importorskip("torch")
    log = tmp_path / "verify.log"
    assert main(["verify", "--backend", "gloo", "--ranks", "2", "--op", "allreduce", "--algo", "ring", "--sizes", "4KiB,64KiB",
                 "--iters", "2", "--warmup", "1", "--nccl-log", str(log)]) == 0
    parsed = read_log(log)
    assert parsed.op == "allreduce" and parsed.ranks == 2
    assert [r.bytes for r in parsed.rows] == [4096, 65536]
    assert all(r.out.wrong == 0 for r in parsed.rows)
