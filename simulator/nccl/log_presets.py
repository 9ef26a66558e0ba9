"""The machine each bundled nccl-tests log (tests/data/nccl-tests) came from, as collsim presets.

Read off each log's first line and the folder's README. benchmarks/preset_accuracy.py and the app's
Model vs reality page both take the mapping from here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    """One shared log and the machine it came from."""

    prefix: str
    machine: str
    old_spec: str    # the preset this log's machine mapped to before machine presets existed
    new_spec: str    # the machine's own preset (simulator/topology/presets.py)


CASES = (
    Case("01_", "GCP A3 Mega, 2 x 8 H100, TCPXO 8 x 200G", "dgx-h100:nodes=2", "a3-mega:nodes=2"),
    Case("02_", "AWS p4de, 2 x 8 A100, EFA 4 x 100G", "dgx-a100:nodes=2", "p4de:nodes=2"),
    Case("03_", "AWS p5, 2 x 8 H100, EFA 32 x 100G", "dgx-h100:nodes=2", "p5:nodes=2"),
    Case("04_", "AWS p5, 1 x 8 H100", "dgx-h100", "p5"),
    Case("05_", "OCI GB200 NVL, 2 x 4 GPUs, one NVLink domain", "gb200-nvl72", "gb200-nvl4:nodes=2"),
    Case("06_", "CoreWeave A100, 4 x 8, IB 8 x 200G + SHARP", "dgx-a100:nodes=4", "dgx-a100:nodes=4"),
    Case("07_", "Vultr HGX B200, 1 x 8", "hgx-b200", "hgx-b200"),
    Case("08_", "Vultr HGX B200, 1 x 8 (allgather)", "hgx-b200", "hgx-b200"),
    Case("12_", "2 x RTX 4090, PCIe, no P2P", "pcie-8gpu", "rtx4090-pcie"),
    Case("13_", "4 x RTX 4090, PCIe, no P2P", "pcie-8gpu", "rtx4090-pcie"),
    Case("17_", "AWS p6-b200, 4 x 8 B200, EFA v4 8 x 400G", "hgx-b200:nodes=4", "p6-b200:nodes=4"),
)


# The NCCL release each log ran, where its source names one (predict --nccl-version: that release's latency tables):
# 01: the log's repository lists the TCPXO plugin's libnccl.so.2.21.5; 02, 03: the awsome-distributed-training README
# that added them (88c2e71b) builds NCCL_VERSION=2.20.3; 05: the job's image nccl-tests:pytorch-25.03-nccl-2.26.6-1;
# 17: stas00/ml-engineering network/README.md (commit 0cc3de5), "Inter-node speed depends on intra-node speed": the
# same table "on 1x and 4x P6-B200 nodes ... torch=2.14.0+cu130, cuda=13.0, nccl=2.30.7" with AWS's ofi tuner plugin.
LOG_NCCL = {"01_": "2.21.5", "02_": "2.20.3", "03_": "2.20.3", "05_": "2.26.6", "17_": "2.30.7"}


def case_of(log_name: str) -> Case | None:
    """The case of a bundled log by its file name (None for a name no case's prefix starts)."""
    return next((case for case in CASES if log_name.startswith(case.prefix)), None)


def preset_of(log_name: str) -> str:
    """The preset spec of the machine a bundled log came from, '' if it is not one of them."""
    case = case_of(log_name)
    return case.new_spec if case is not None else ""
