"""Issue 20 item 4: predict on machines too big for it is refused up front, with the estimate, before any engine run.

Beyond 16,384 GPUs the refusal is arithmetic on the preset's numbers; where no reduction applies (fewer ranks than
GPUs, --ranks-per-node) or the reduced instances themselves would be over the engine's budget (many channels of
72-GPU racks), the full run's transfers are estimated and compared with predict's budget (simulator/nccl/symmetry.py
check_budget) before a schedule is built. Estimates by hand: a ring allreduce on C rings over p ranks is
C x 2 x (p - 1) x p transfers, an allgather C x (p - 1) x p.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import app.cli  # noqa: F401  (imported once here: each forked case then times its refusal, not the imports)

from .harness import Case, run_case

FAST = 5.0  # seconds: a refusal is arithmetic (well under 1 s on an idle core); this leaves room for a loaded machine
BUDGET = "predict runs at most 4,186,112"  # 8 channels x 2 x 511 x 512 transfers: symmetry.MAX_TRANSFERS


def bad(id: str, argv: list[str], value: str, accepted: str) -> Case:
    return Case(id=f"scale-{id}", argv=["predict", *argv, "--size", "1MiB"], field="ranks", value=value,
                accepted=accepted, timeout_s=FAST)


CASES = [
    # 228 racks of 72 GPUs and 2049 nodes of 8: just past 16,384 GPUs
    bad("gb200-228-racks", ["--preset", "gb200-nvl72:nodes=228"], "16,416 GPUs", "at most 16,384"),
    bad("dgx-h100-2049-nodes", ["--preset", "dgx-h100:nodes=2049"], "16,392 GPUs", "at most 16,384"),
    bad("p5-100000-nodes", ["--preset", "p5:nodes=100000"], "800,000 GPUs", "at most 16,384"),
    # 4 ranks on each of 2048 nodes: no reduction (not every GPU a rank); NCCL's ring at 1 MiB runs 2 channels (the
    # engine runs one ring per channel, up to the node's GPUs): 2 x 2 x 8191 x 8192 = 268,402,688; at LL on one channel
    # 134,201,344
    bad("ranks-per-node-4-on-2048-nodes", ["--preset", "dgx-h100:nodes=2048", "--ranks-per-node", "4"],
        "134,201,344", BUDGET),
    # 8192 of 16,384 GPUs: fewer ranks than the machine's GPUs, the same estimate
    bad("half-the-gpus-of-2048-nodes", ["--preset", "dgx-h100:nodes=2048", "--ranks", "8192"], "134,201,344", BUDGET),
    # 64 rings (NCCL_MIN/MAX_NCHANNELS=64) of an allgather on 200 racks: 64 x 14399 x 14400 = 13,270,118,400; its
    # reduced instances (3, 4, 5 racks: 5 x 72 = 360 ranks, 64 x 359 x 360 = 8,271,360 transfers) are over the budget
    # too, so it is refused before any of them runs
    Case(id="scale-gb200-200-racks-64-channels", field="ranks", value="13,270,118,400", accepted=BUDGET, timeout_s=FAST,
         argv=["predict", "--preset", "gb200-nvl72:nodes=200", "--op", "allgather", "--channels", "64", "--size", "1GiB"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_too_big_for_predict_is_refused_fast(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def test_case_ids_are_unique() -> None:
    assert len({c.id for c in CASES}) == len(CASES)
