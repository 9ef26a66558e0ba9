"""Issue 21: requests too big to run are refused before anything is expanded, each refusal fast and light.

Each case must be refused in one line within a few seconds (the harness also bounds its memory): the rank count
read from --topology when --ranks is absent, the memory of the largest schedule (check: 740 B a transfer, the
engine: 280 B, measured by benchmarks/transfer_memory.py), rank ranges and size lists counted before they are built,
and the topologies of import-msccl and run-program. Accepted inputs near the limits are tested at the end.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.topology import parse_topology
from simulator.topology.spec import spec_devices

from .harness import REPO_ROOT, Case, run_case, run_cli

DATA = Path(__file__).resolve().parents[1] / "data"
MSCCL = str(DATA / "msccl" / "ndv4_ag-1k-512k.xml")
DDP2 = str(DATA / "programs" / "ddp2.yaml")
RING = ["--op", "allreduce", "--algo", "ring"]
FAST = 5.0  # seconds: a refusal is arithmetic, this leaves room for a loaded machine


def bad(id: str, argv: list[str], field: str, value: str | None = None, accepted: str | None = None, **kw) -> Case:
    kw.setdefault("timeout_s", FAST)
    return Case(id=f"bounds-{id}", argv=argv, field=field, value=value, accepted=accepted, **kw)


CASES = [
    # check: 5000 ranks x 4 KiB are 82 MB of buffers, but the ring's 2 x 5000 x 4999 = 5e7 transfers at 740 B are 37 GB
    bad("check-ring-5000-one-size", ["check", *RING, "--ranks", "5000", "--size", "4100"], "ranks", "5000",
        "--max-memory raises it"),
    bad("check-ring-5000-one-size-memory-words", ["check", *RING, "--ranks", "5000", "--size", "4100"], "ranks",
        "transfers x 740B", "over the limit of 8GiB"),
    # no --ranks: every device of the topology, 1024 x 8 = 8192, so 2 x 8192 x 8191 = 1.3e8 transfers
    bad("simulate-cluster-8192-no-ranks", ["simulate", *RING, "--topology", "cluster:nodes=1024,gpus=8"], "topology",
        "cluster:nodes=1024,gpus=8 (8192 ranks)", "--max-transfers raises it"),
    bad("simulate-cluster-default-gpus-no-ranks", ["simulate", *RING, "--topology", "cluster:nodes=1024"], "topology",
        "(8192 ranks)", "--max-transfers raises it"),
    bad("simulate-preset-no-ranks", ["simulate", *RING, "--topology", "dgx-h100:nodes=1024"], "topology",
        "dgx-h100:nodes=1024 (8192 ranks)", "--max-transfers raises it"),
    bad("simulate-rails-no-ranks", ["simulate", *RING, "--topology", "rails:nodes=2048,gpus=4"], "topology",
        "(8192 ranks)", "--max-transfers raises it"),
    bad("simulate-torus-no-ranks", ["simulate", *RING, "--topology", "torus:64x64x2"], "topology", "(8192 ranks)",
        "--max-transfers raises it"),
    bad("sweep-cluster-no-ranks", ["sweep", *RING, "--sizes", "1KiB", "--topology", "cluster:nodes=1024,gpus=8",
                                   "--jobs", "1"], "topology", "(8192 ranks)", "--max-transfers raises it"),
    # 2 x 4096 x 4095 = 3.4e7 transfers (under 5e7) x 280 B = 9.4 GB, over 8 GiB
    bad("simulate-switch-4096", ["simulate", *RING, "--ranks", "4096", "--topology", "switch:4096"], "topology",
        "switch:4096", "--max-memory raises it"),
    bad("simulate-switch-4096-no-ranks", ["simulate", *RING, "--topology", "switch:4096"], "topology",
        "switch:4096 (4096 ranks)", "--max-memory raises it"),
    bad("sweep-switch-4096-no-ranks", ["sweep", *RING, "--sizes", "1KiB", "--topology", "switch:4096", "--jobs", "1"],
        "topology", "switch:4096 (4096 ranks)", "--max-memory raises it"),
    # two processes each hold a 3072-rank schedule: 2 x 1.9e7 x 280 B = 10.6 GB
    bad("sweep-switch-3072-two-jobs", ["sweep", *RING, "--sizes", "1KiB,2KiB", "--topology", "switch:3072", "--jobs", "2"],
        "topology", "x 2 processes", "--max-memory raises it"),
    # 128 ranks: 32512 transfers x 280 B + 1024 links x 2 KiB = 10.7 MiB
    bad("simulate-max-memory-8MiB", ["simulate", *RING, "--ranks", "128", "--topology", "switch:128", "--max-memory", "8MiB"],
        "topology", "switch:128", "over the limit of 8MiB"),
    # ranges and lists: summed over every rank count, counted before they are built
    bad("check-ring-ranks-2-1000", ["check", *RING, "--ranks", "2-1000", "--size", "4"], "ranks", "2-1000",
        "--max-transfers raises it"),  # sum of 2p(p - 1) for p = 2..1000 = 6.7e8
    bad("check-all-ranks-2-3000", ["check", "--all", "--ranks", "2-3000"], "ranks", "2-3000", "--max-transfers raises it"),
    bad("check-all-ranks-2-10000", ["check", "--all", "--ranks", "2-10000", "--size", "4"], "ranks", "2-10000",
        "--max-transfers raises it"),
    bad("check-ranks-2-100000", ["check", *RING, "--ranks", "2-100000"], "ranks", "2-100000", "at most 10000 counts"),
    bad("check-ranks-colon-range", ["check", *RING, "--ranks", "2:100000"], "ranks", "2:100000", "a range 2-17"),
    # each under 5e7 alone (3.2e7, 4.0e7), together 2 x (4000 x 3999 + 4500 x 4499) = 7.2e7
    bad("check-ranks-list-summed", ["check", *RING, "--ranks", "4000,4500", "--size", "4"], "ranks", "4000,4500",
        "--max-transfers raises it"),
    bad("check-size-100-million-points", ["check", *RING, "--ranks", "4", "--size", "1:1TiB:1.0000003"], "size",
        "1:1TiB:1.0000003", "over the limit of 10000"),
    bad("sweep-sizes-100-million-points", ["sweep", *RING, "--ranks", "4", "--sizes", "1:1TiB:1.0000003"], "sizes",
        "1:1TiB:1.0000003", "over the limit of 10000"),
    # a sweep's product: every allreduce algorithm x 41 sizes x 2048 ranks
    bad("sweep-product", ["sweep", "--op", "allreduce", "--ranks", "2048", "--sizes", "4:4TiB", "--topology", "switch:2048",
                          "--jobs", "1"], "ranks", "(41 sizes)", "--max-transfers raises it"),
    bad("verify-sizes-huge-count", ["verify", *RING, "--ranks", "2", "--sizes", "1:1TiB:1.0000003", "--no-time"], "sizes",
        "1:1TiB:1.0000003", "over the limit of 10000"),
    # topologies built by commands that had no limit: killed at 20 s and 1.1-1.7 GB before
    bad("import-msccl-switch-1e8", ["import-msccl", MSCCL, "--simulate", "--topology", "switch:100000000"], "topology",
        "switch:100000000", "--max-memory raises it"),
    bad("import-msccl-cluster-100000", ["import-msccl", MSCCL, "--simulate", "--topology", "cluster:nodes=100000"],
        "topology", "cluster:nodes=100000", "--max-memory raises it"),
    bad("run-program-switch-1e8", ["run-program", DDP2, "--topology", "switch:100000000"], "topology", "switch:100000000",
        "--max-memory raises it"),
    bad("run-program-ideal-100000", ["run-program", DDP2, "--topology", "ideal:100000"], "topology", "ideal:100000",
        "--max-memory raises it"),
    # refused before any work: a second machine's unknown name (the first was simulated, 1.1 s CPU and 129 MB), and a
    # Dask address where nothing listens (Dask's client retried for 3 s after a second of imports: 5.2 s)
    bad("whatif-second-machine-unknown", ["whatif", "ddp", "--machines", "dgx-h100,dgx-h999", "--jobs", "1"], "topology",
        "dgx-h999", "expected a preset"),
    bad("whatif-dask-refused", ["whatif", "ddp", "--machines", "dgx-h100", "--jobs", "1", "--dask", "tcp://127.0.0.1:9"],
        "dask", "tcp://127.0.0.1:9", "ConnectionRefusedError", mode="subprocess", timeout_s=4.0),
    bad("sweep-dask-refused-bare-address", ["sweep", *RING, "--ranks", "4", "--sizes", "1KiB", "--dask", "127.0.0.1:9"],
        "dask", "127.0.0.1:9", "ConnectionRefusedError", mode="subprocess", timeout_s=4.0),
    bad("run-program-max-memory-bogus", ["run-program", DDP2, "--max-memory", "lots"], "max-memory", "lots"),
    bad("import-msccl-max-memory-bogus", ["import-msccl", MSCCL, "--max-memory", "-1"], "max-memory", "-1"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_too_big_is_refused_fast(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def test_case_ids_are_unique() -> None:
    assert len({c.id for c in CASES}) == len(CASES) >= 25


@pytest.mark.parametrize("spec, devices", [
    ("switch:4096", 4096), ("ideal:8", 8), ("ring:12", 12), ("torus:4x4x4", 64), ("fat_tree:hosts=16,leaf=4", 16),
    ("cluster:nodes=4,gpus=2", 8), ("cluster:nodes=4", 32), ("rails:nodes=2,gpus=4", 8), ("dgx-h100:nodes=2", 16),
    ("dgx-h100", 8), ("gb200-nvl72", 72), ("Switch:6", 6),
])
def test_spec_devices_reads_the_numbers_as_the_builders_build_them(spec: str, devices: int) -> None:
    assert spec_devices(spec) == devices == parse_topology(spec).num_devices


@pytest.mark.parametrize("spec", ["missing.yaml", "bogus:8", "switch:abc", "switch:0", "torus:4x", "cluster:nodes=-2,gpus=-4",
                                  "switch:8,colour"])
def test_spec_devices_leaves_what_it_cannot_read_to_the_parser(spec: str) -> None:
    assert spec_devices(spec) is None


def test_the_max_memory_option_raises_the_schedule_limit(tmp_path: Path) -> None:
    """128 ranks on switch:128: 32512 transfers x 280 B + 1024 links x 2 KiB = 10.7 MiB: refused at 8MiB, run at 12MiB."""
    argv = ["simulate", *RING, "--ranks", "128", "--topology", "switch:128", "--json"]
    for limit, status in (("8MiB", 2), ("12MiB", 0)):
        work = tmp_path / limit
        work.mkdir()
        result = run_cli([*argv, "--max-memory", limit], work, timeout_s=60)
        assert result.status == status, result.stderr
    assert json.loads(result.stdout)["time_s"] > 0


def test_a_request_under_the_limits_still_runs(tmp_path: Path) -> None:
    """simulate without --ranks on a topology whose rank count is known runs on every device (switch:64: 8064 transfers)."""
    result = run_cli(["simulate", *RING, "--topology", "switch:64", "--json"], tmp_path, timeout_s=60)
    assert result.status == 0, result.stderr


def test_refusals_import_neither_torch_nor_streamlit() -> None:
    """A fresh interpreter refuses a bad option of every command that starts torch or Streamlit, and has imported neither
    (each costs half a second or more and 35+ MB)."""
    refusals = [["app", "--port", "-1"], ["app", "-x"], ["verify", *RING, "--ranks", "0"],
                ["calibrate", "--ranks", "1000"], ["compare", *RING, "--ranks", "2", "--alpha", "nope"],
                ["verify", *RING, "--ranks", "1000", "--sizes", "1KiB"]]
    code = ("import sys\nfrom app.cli import main\n"
            f"statuses = [main(argv) for argv in {refusals!r}]\n"
            "print(statuses, sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'streamlit'}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == f"{[2] * len(refusals)} []", out.stdout + out.stderr
