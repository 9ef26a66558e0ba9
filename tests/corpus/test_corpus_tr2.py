"""Bad input to `collsim whatif --program FILE` (issue 24): scale factors, GPUs, and options of the other form."""

from __future__ import annotations

import pytest

import app.cli  # noqa: F401  (imported once here, so each forked case starts warm)

from .harness import Case, run_case

PROGRAM = """world: 2
groups: {world: [0, 1]}
ranks:
  0: [{op: compute, time: 1ms}, {op: allreduce, group: world, size: 1MiB}]
  1: [{op: compute, time: 1ms}, {op: allreduce, group: world, size: 1MiB}]
"""
WITH_GPU = "gpu: h100\n" + PROGRAM
BASE = ["whatif", "--program", "p.yaml", "--machines", "dgx-h100,hgx-b200"]


def _case(tag: str, extra: list[str], field: str, value: str | None, accepted: str, program: str = WITH_GPU,
          argv: list[str] | None = None) -> Case:
    return Case(f"whatif-program-{tag}", argv or [*BASE, *extra], field, value, accepted, {"p.yaml": program})


SCALE_ACCEPTED = "expected a factor > 0 for every compute span"
CASES = [
    _case("scale-zero", ["--compute-scale", "0"], "compute-scale", "'0'", SCALE_ACCEPTED),
    _case("scale-negative", ["--compute-scale=-2"], "compute-scale", "'-2'", SCALE_ACCEPTED),
    _case("scale-text", ["--compute-scale", "fast"], "compute-scale", "'fast'", SCALE_ACCEPTED),
    _case("scale-nan", ["--compute-scale", "nan"], "compute-scale", "'nan'", SCALE_ACCEPTED),
    _case("scale-inf", ["--compute-scale", "inf"], "compute-scale", "'inf'", SCALE_ACCEPTED),
    _case("from-gpu-unknown", ["--from-gpu", "h900"], "gpu", "'h900'", "expected one of a100, h100"),
    _case("no-gpu-anywhere", [], "from-gpu", "p.yaml names no gpu", "expected --from-gpu", program=PROGRAM),
    _case("scenario-and-program", [], "scenario", "'ddp'", "expected one of them", argv=["whatif", "ddp", *BASE[1:]]),
    _case("scale-without-program", [], "compute-scale", "'2'", "only with --program FILE",
          argv=["whatif", "ddp", "--machines", "dgx-h100", "--compute-scale", "2"]),
    _case("nothing-to-run", [], "scenario", None, "or --program FILE", argv=["whatif", "--machines", "dgx-h100"]),
    _case("price-with-program", ["--price", "2.5"], "price", "'2.5'", "only with a SCENARIO"),
    *[_case(f"step-option-{flag[2:]}", [flag, *value], flag[2:], shown, "only with a SCENARIO")
      for flag, value, shown in (("--tp", ["8"], "8"), ("--model", ["llama2-70b"], "'llama2-70b'"), ("--fsdp", [], "True"),
                                 ("--micro-batch", ["4"], "4"), ("--algo", ["allreduce=direct"], "['allreduce=direct']"),
                                 ("--gpus", ["16"], "16"))],
    _case("timing-unknown", ["--timing", "fast"], "timing", "'fast'", "choose from"),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_whatif_program(case, tmp_path):
    assert run_case(case, tmp_path).status != 0


def test_case_ids_are_unique():
    assert len({case.id for case in CASES}) == len(CASES)
