"""Values that were silently accepted or answered unclearly (issue 21), each refused in one line at the parser that
reads it, so that every command reading the value gets the same answer.

Silently accepted: a pipeline degree of 0 (ran as 1), a sequence of 1e12 tokens, `ecmp=maybe` in a topology spec, a
time with no unit (`--alpha 2` was 2 seconds), a B200 log calibrating an H100 preset. Answered unclearly: a negative
value (argparse took `-2us` for an option), `--gamma inf`, whatif's `--gpus` answered with `--ranks`, a repeated MSCCL
`<gpu id>` reported as a threadblock's peer, `--size 1 MiB` answered with the top-level usage, `node=2` in a spec with
no "did you mean". Accepted inputs next to each refusal are tested at the end.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.errors import CollsimError
from simulator.formats.nccl_tests import parse_log

from .harness import Case, run_case, run_cli

DATA = Path(__file__).resolve().parents[1] / "data"
LOGS = DATA / "nccl-tests"
H100_LOG = str(LOGS / "04_h100_p5_1node_8gpu_allreduce_awsbatch.txt")
B200_LOG = str(LOGS / "08_b200_hgx_1node_8gpu_allgather.txt")
XML = (DATA / "msccl" / "ndv4_ag-1k-512k.xml").read_text()

COST = ["cost", "--op", "allreduce", "--algo", "ring", "--ranks", "8"]
SIM = ["simulate", "--op", "allreduce", "--algo", "ring", "--ranks", "4", "--size", "1MiB"]
SWEEP = ["sweep", "--op", "allreduce", "--algo", "ring", "--ranks", "4", "--sizes", "1KiB:4KiB"]
PREDICT = ["predict", "--size", "1MiB"]
WHATIF = ["whatif", "ddp", "--machines", "dgx-h100", "--jobs", "1"]
RUNP = ["run-program", str(DATA / "programs" / "ddp2.yaml")]

TIME_UNIT = "expected a time with a unit such as 2us"
NEGATIVE_TIME = "expected a time >= 0"


def bad(id: str, argv: list[str], field: str, value: str | None = None, accepted: str | None = None, **kw) -> Case:
    return Case(id=id, argv=argv, field=field, value=value, accepted=accepted, **kw)


# --- silently accepted --------------------------------------------------------------------------------------------
def _degree_cases() -> list[Case]:
    """A parallel degree of 0 ran as 1 (`degree or 1`); every degree, in scenario and in whatif."""
    cases = []
    for degree, scenario, model in (("pp", "pp", "llama2-7b"), ("tp", "tp", "llama2-7b"), ("ep", "ep", "mixtral-8x7b")):
        cases.append(bad(f"scenario-{degree}-0", ["scenario", scenario, "--model", model, "--gpus", "8", f"--{degree}", "0"],
                         degree, "0", "integer >= 1"))
    cases.append(bad("whatif-pp-0", ["whatif", "pp", "--machines", "dgx-h100", "--jobs", "1", "--pp", "0"], "pp", "0",
                     "integer >= 1"))
    cases.append(bad("scenario-hybrid-pp-0", ["scenario", "hybrid", "--gpus", "16", "--pp", "0"], "pp", "0", "integer >= 1"))
    return cases


def _model_bound_cases() -> list[Case]:
    """The step's inputs beyond any training run: 1e12 tokens gave 100212429 s of compute."""
    ddp = ["scenario", "ddp", "--gpus", "8"]
    return [
        bad("scenario-seq-len-1e12", [*ddp, "--seq-len", "1000000000000"], "seq-len", "1000000000000", "1..16777216"),
        bad("scenario-seq-len-over", [*ddp, "--seq-len", str(2**24 + 1)], "seq-len", str(2**24 + 1), "1..16777216"),
        bad("scenario-seq-len-0", [*ddp, "--seq-len", "0"], "seq-len", "0", "1..16777216"),
        bad("scenario-micro-batch-huge", [*ddp, "--micro-batch", "100000"], "micro-batch", "100000", "1..65536"),
        # 4096 sequences x 8192 tokens = 2^25 tokens on one rank, twice the 2^24 bound
        bad("scenario-micro-batch-tokens", [*ddp, "--micro-batch", "4096", "--seq-len", "8192"], "micro-batch",
            "33554432", "at most 16777216"),
        bad("scenario-microbatches-0", [*ddp, "--microbatches", "0"], "microbatches", "0", "1..65536"),
        bad("scenario-gpus-per-node-huge", [*ddp, "--gpus-per-node", "5000"], "gpus-per-node", "5000", "1..1024"),
        bad("whatif-seq-len-1e12", [*WHATIF, "--seq-len", "1000000000000"], "seq-len", "1000000000000", "1..16777216"),
    ]


BOOLEAN_SPECS = [  # every builder, and a preset, with each on/off option it takes set to a word that is neither
    ("ideal", "ideal:4,ecmp=maybe", "ecmp"),
    ("switch", "switch:8,ecmp=maybe", "ecmp"),
    ("ring-ecmp", "ring:4,ecmp=maybe", "ecmp"),
    ("ring-uni", "ring:4,uni=maybe", "uni"),
    ("torus", "torus:2x2,ecmp=maybe", "ecmp"),
    ("fat-tree", "fat_tree:hosts=8,leaf=4,ecmp=maybe", "ecmp"),
    ("cluster", "cluster:nodes=2,gpus=4,ecmp=maybe", "ecmp"),
    ("rails-ecmp", "rails:nodes=2,gpus=4,ecmp=maybe", "ecmp"),
    ("rails-pxn", "rails:nodes=2,gpus=4,pxn=2", "pxn"),
    ("preset", "dgx-h100:nodes=2,ecmp=maybe", "ecmp"),
]


def _boolean_cases() -> list[Case]:
    cases = [bad(f"spec-bool-{name}", ["topology", "show", spec], f"{key}=", spec.rsplit("=", 1)[1],
                 f"expected {key}=1 or {key}=0") for name, spec, key in BOOLEAN_SPECS]
    cases.append(bad("spec-bool-predict", ["predict", "--preset", "dgx-h100:nodes=2,ecmp=maybe", "--size", "1MiB"], "ecmp=",
                     "maybe", "expected ecmp=1 or ecmp=0"))
    cases.append(bad("spec-bool-simulate", [*SIM, "--topology", "switch:4,ecmp=maybe"], "ecmp=", "maybe", "ecmp=1 or ecmp=0"))
    return cases


TOPOLOGY_BARE = """collsim_topology: 1
name: two
nodes: [{name: a, kind: gpu}, {name: b, kind: gpu}]
links: [{a: a, b: b, bandwidth: 25GB/s, latency: "2"}]
"""
PROGRAM_BARE = """world: 2
groups: {dp: [0, 1]}
ranks:
  0-1:
    - {op: compute, time: "5", name: bwd}
    - {op: allreduce, group: dp, size: 1MB}
"""


def _spec_count_cases() -> list[Case]:
    """A count in a spec: cluster's leaf=0 was read as 'not given' (one leaf); the others named the builder's own
    argument (rails_per_leaf, nodes_per_leaf), not the spec's key."""
    show = ["topology", "show"]
    return [
        bad("spec-cluster-leaf-0", [*show, "cluster:nodes=2,leaf=0"], "leaf=0", accepted="integer >= 1"),
        bad("spec-rails-leaf-rails-0", [*show, "rails:nodes=2,leaf_rails=0"], "leaf_rails=0", accepted="integer >= 1"),
        bad("spec-cluster-leaf-negative", [*show, "cluster:nodes=2,leaf=-1"], "leaf=-1", accepted="integer >= 1"),
        bad("spec-preset-nodes-0", ["predict", "--preset", "p5:nodes=0", "--size", "1MiB"], "nodes=0", accepted="integer >= 1"),
    ]


def _bare_time_cases() -> list[Case]:
    """Every time a command reads: a bare number is seconds to one reader and microseconds to another."""
    return [
        bad("cost-alpha-bare", [*COST, "--alpha", "2"], "alpha", "'2'", TIME_UNIT),
        bad("cost-alpha-bare-exp", [*COST, "--alpha", "3e-6"], "alpha", "'3e-6'", TIME_UNIT),
        bad("simulate-alpha-bare", [*SIM, "--alpha", "2"], "alpha", "'2'", TIME_UNIT),
        bad("sweep-alpha-bare", [*SWEEP, "--alpha", "2"], "alpha", "'2'", TIME_UNIT),
        bad("simulate-straggler-bare", [*SIM, "--straggler", "1:20"], "straggler", "'20'", TIME_UNIT),
        bad("run-program-alpha-bare", [*RUNP, "--alpha", "2"], "alpha", "'2'", TIME_UNIT),
        bad("spec-lat-bare", ["topology", "show", "switch:8,lat=2"], "lat", "'2'", TIME_UNIT),
        bad("topology-file-latency-bare", ["topology", "show", "t.yaml"], "latency", "'2'", TIME_UNIT,
            files={"t.yaml": TOPOLOGY_BARE}),
        bad("program-time-bare", ["run-program", "p.yaml"], "time", "'5'", TIME_UNIT, files={"p.yaml": PROGRAM_BARE}),
    ]


def _gpu_mismatch_cases() -> list[Case]:
    """A log of one GPU fitted to a preset of another: refused unless --allow-gpu-mismatch."""
    return [
        bad("fit-preset-b200-log-on-h100", ["fit", B200_LOG, "--preset", "p5"], "preset", "B200", "--allow-gpu-mismatch"),
        bad("fit-preset-h100-log-on-b200", ["fit", H100_LOG, "--preset", "hgx-b200"], "preset", "H100", "dgx-h100, p5"),
        bad("fit-bounds-b200-log-on-h100", ["fit", B200_LOG, "--bounds", "dgx-h100"], "bounds", "B200", "hgx-b200"),
    ]


# --- answered unclearly -----------------------------------------------------------------------------------------------
def _negative_cases() -> list[Case]:
    """A value starting with '-' reaches its parser instead of argparse's 'expected one argument'."""
    return [
        bad("cost-alpha-negative", [*COST, "--alpha", "-2us"], "alpha", "-2us", NEGATIVE_TIME),
        bad("cost-gamma-negative", [*COST, "--gamma", "-1e-11"], "gamma", "-1e-11", "a finite number >= 0"),
        bad("cost-gamma-minus-inf", [*COST, "--gamma", "-inf"], "gamma", "-inf", "a finite number >= 0"),
        bad("cost-bandwidth-negative", [*COST, "--bandwidth", "-1GB/s"], "bandwidth", "-1GB/s", "> 0"),
        bad("cost-size-negative", [*COST, "--size", "-1KiB"], "size", "-1KiB", "a byte count"),
        bad("simulate-alpha-negative", [*SIM, "--alpha", "-2us"], "alpha", "-2us", NEGATIVE_TIME),
        bad("simulate-straggler-negative", [*SIM, "--straggler", "1:-2us"], "straggler", "-2us", NEGATIVE_TIME),
        bad("run-program-alpha-negative", [*RUNP, "--alpha", "-0.5ms"], "alpha", "-0.5ms", NEGATIVE_TIME),
        bad("spec-lat-negative", ["topology", "show", "switch:8,lat=-1us"], "lat", "-1us", NEGATIVE_TIME),
        bad("scenario-mfu-negative", ["scenario", "ddp", "--gpus", "8", "--mfu", "-0.4"], "mfu", "-0.4", "(0, 1]"),
    ]


def _message_cases() -> list[Case]:
    dup = XML.replace('<gpu id="4"', '<gpu id="3"', 1)
    assert dup != XML
    return [
        bad("cost-gamma-inf", [*COST, "--gamma", "inf"], "gamma", "'inf'", "finite number >= 0"),
        bad("cost-gamma-nan", [*COST, "--gamma", "nan"], "gamma", "'nan'", "finite number >= 0"),
        # 64 GPUs on dgx-h100 (8 per node) need 64 / 8 = 8 nodes
        bad("whatif-gpus-over-machine", [*WHATIF, "--gpus", "64"], "gpus", "64", "--machines dgx-h100:nodes=8"),
        bad("whatif-gpus-over-builder", ["whatif", "ddp", "--machines", "switch:8", "--gpu", "h100", "--jobs", "1",
                                         "--gpus", "16"], "gpus", "16", "--gpus <= 8"),
        # run-program has no --ranks: the program's 16 ranks need dgx-h100 with 16 / 8 = 2 nodes
        bad("run-program-topology-too-small", ["run-program", "w.yaml", "--topology", "dgx-h100"], "topology", "16",
            "such as dgx-h100:nodes=2", files={"w.yaml": "world: 16\nranks:\n  0-15:\n    - {op: compute, time: 1ms}\n"}),
        bad("run-program-builder-too-small", [*RUNP, "--topology", "switch:1"], "topology", "2", "at least 2 devices"),
        bad("msccl-gpu-id-twice", ["import-msccl", "a.xml"], "gpu id=3", accepted="appears twice", files={"a.xml": dup}),
    ]


def _spaced_unit_cases() -> list[Case]:
    """`--size 1 MiB`: argparse left 'MiB' over and printed the top-level usage."""
    return [
        bad("cost-size-spaced", [*COST, "--size", "1", "MiB"], "size", "'1 MiB'", "write sizes without spaces, such as 1MiB"),
        bad("cost-size-equals-spaced", [*COST, "--size=1", "MiB"], "size", "'1 MiB'", "such as 1MiB"),
        bad("predict-size-spaced", ["predict", "--preset", "p5", "--size", "1", "MiB"], "size", "'1 MiB'", "such as 1MiB"),
        bad("sweep-sizes-spaced", [*SWEEP[:-2], "--sizes", "4", "KiB"], "sizes", "'4 KiB'", "such as 1MiB"),
        bad("cost-alpha-spaced", [*COST, "--alpha", "2", "us"], "alpha", "'2 us'", "write times without spaces, such as 2us"),
        bad("cost-bandwidth-spaced", [*COST, "--bandwidth", "25", "GB/s"], "bandwidth", "'25 GB/s'", "such as 25GB/s"),
        bad("cost-extra-word", [*COST, "banana"], "cost", "banana", "collsim cost --help"),
    ]


def _did_you_mean_cases() -> list[Case]:
    return [
        bad("predict-preset-node", ["predict", "--preset", "dgx-h100:node=2", "--size", "1MiB"], "'node'", "dgx-h100:node=2",
            "did you mean nodes="),
        bad("spec-cluster-node", ["topology", "show", "cluster:node=2,gpus=8"], "'node'", accepted="did you mean nodes="),
        bad("spec-rails-leaf-rail", ["topology", "show", "rails:nodes=2,leaf_rail=2"], "'leaf_rail'",
            accepted="did you mean leaf_rails="),
        bad("spec-fat-tree-leff", ["topology", "show", "fat_tree:hosts=8,leff=4"], "'leff'", accepted="did you mean leaf="),
        bad("spec-torus-dim", ["topology", "show", "torus:4x4,dim=3"], "'dim'", accepted="did you mean dims="),
        bad("whatif-machine-gpu", ["whatif", "ddp", "--machines", "dgx-h100:gpu=8", "--jobs", "1"], "'gpu'",
            accepted="nodes, net, shm, routing, ecmp"),
        bad("spec-switch-colour", ["topology", "show", "switch:8,colour=red"], "'colour'", accepted="n, lat, bw, ecmp"),
    ]


CASES = (_degree_cases() + _model_bound_cases() + _boolean_cases() + _spec_count_cases() + _bare_time_cases() + _gpu_mismatch_cases()
         + _negative_cases() + _message_cases() + _spaced_unit_cases() + _did_you_mean_cases())


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_value_is_refused_in_one_line(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def test_case_ids_are_unique() -> None:
    assert len({c.id for c in CASES}) == len(CASES)


# --- accepted inputs beside the refusals ------------------------------------------------------------------------------
def _ok(argv: list[str], tmp_path: Path) -> str:
    work = tmp_path / "w"
    work.mkdir(exist_ok=True)
    result = run_cli(argv, work)
    assert result.status == 0, result.stderr
    return result.stdout


def test_times_with_units_and_zero_are_read(tmp_path: Path) -> None:
    """2us is 2e-6 s and 0 needs no unit: a 1 MiB ring all-reduce on 8 ranks at 25 GB/s costs 2(p-1) alpha +
    2(p-1)/p n/B = 14 alpha + 1.75 x 2^20 / 25e9 s; alpha = 0 leaves the bandwidth term, 2us adds 28 us."""
    rows = {}
    for alpha in ("0", "2us", "0.002ms", "2e-6s"):
        out = json.loads(_ok([*COST, "--size", "1MiB", "--bandwidth", "25GB/s", f"--alpha={alpha}", "--json"], tmp_path))
        rows[alpha] = out["time_s"]
    bandwidth_term = 1.75 * 2**20 / 25e9
    assert rows["0"] == pytest.approx(bandwidth_term)
    for alpha in ("2us", "0.002ms", "2e-6s"):
        assert rows[alpha] == pytest.approx(bandwidth_term + 14 * 2e-6)


def test_a_negative_value_after_an_option_is_joined_and_other_words_are_not() -> None:
    from app.argv import join_signed_values
    from app.cli import build_parser

    parser = build_parser()
    assert join_signed_values(parser, ["cost", "--alpha", "-2us"]) == ["cost", "--alpha=-2us"]
    assert join_signed_values(parser, ["cost", "--gamma", "-inf"]) == ["cost", "--gamma=-inf"]
    for argv in (["cost", "--alpha", "--json"],  # a missing value stays argparse's "expected one argument"
                 ["cost", "--json", "-2"],  # --json takes no value
                 ["cost", "--", "--alpha", "-2us"]):  # nothing after '--' is an option
        assert join_signed_values(parser, argv) == argv


def test_on_off_words_are_read(tmp_path: Path) -> None:
    """ecmp=yes/on/true/1 spread pairs over equal-cost paths; no/off/false/0 do not; a bare `uni` is uni=1."""
    from simulator.topology.spec import parse_topology

    for word in ("1", "true", "yes", "on", "YES"):
        assert parse_topology(f"switch:8,ecmp={word}").ecmp is True
    for word in ("0", "false", "no", "off"):
        assert not parse_topology(f"switch:8,ecmp={word}").ecmp
    # a unidirectional ring of 4 has 4 links, a bidirectional one 8
    assert parse_topology("ring:4,uni").num_links == 4 == parse_topology("ring:4,uni=yes").num_links
    assert parse_topology("ring:4,uni=no").num_links == 8


def test_scenario_bounds_are_inclusive() -> None:
    """seq-len 2^24, 64Ki sequences per micro-batch and 64Ki micro-batches are the largest accepted; one more is
    refused."""
    from simulator.program.scenarios import build_spec, check_inputs

    assert build_spec("ddp", "llama2-7b", "h100", 8, seq_len=2**24).seq_len == 2**24
    assert build_spec("ddp", "llama2-7b", "h100", 8, micro_batch=2**16, seq_len=2**8).micro_batch == 2**16
    check_inputs(0.4, 2**20, microbatches=2**16)
    with pytest.raises(CollsimError, match=r"microbatches: 65537 is out of range for micro-batches per step"):
        check_inputs(0.4, 2**20, microbatches=2**16 + 1)
    with pytest.raises(CollsimError, match="seq-len: 16777217 is out of range"):
        build_spec("ddp", "llama2-7b", "h100", 8, seq_len=2**24 + 1)
    with pytest.raises(CollsimError, match=r"pp: 0; expected an integer >= 1"):
        build_spec("pp", "llama2-7b", "h100", 8, pp=0)


DEVICE_LOG = """# nThread 1 nGpus 1 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1
# note: compared with an A100 run elsewhere
#  Rank  0 Group  0 Pid   1 on host device  0 [0x1b] NVIDIA H200
#  Rank  1 Group  0 Pid   2 on host device  1 [0x1c] NVIDIA H200
#
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    10.00    0.00    0.00      0    10.00    0.00    0.00      0
         128            32     float     sum      -1    10.00    0.01    0.01      0    10.00    0.01    0.01      0
"""


def test_the_log_gpu_comes_from_the_device_list_before_a_note() -> None:
    """The device list says H200 (line 3); the note on line 2 names an A100 but is not what the log ran on."""
    def read(text: str):
        return parse_log(text, "x.txt", op="allreduce", ranks=2).gpu

    gpu = read(DEVICE_LOG)
    assert (gpu.family, gpu.line, gpu.text) == ("h200", 3, "H200")
    assert read(DEVICE_LOG.replace("H200", "Tesla")).family == "a100"  # no device line names a GPU: the first note
    assert read("\n".join(DEVICE_LOG.splitlines()[4:])) is None  # no comment names a GPU: nothing to check


def test_bundled_logs_name_their_gpu() -> None:
    """Each bundled log's GPU, as its file name (written by hand from its source) says."""
    from simulator.formats.nccl_tests import read_log

    expected = {"01_": "h100", "02_": "a100", "03_": "h100", "04_": "h100", "05_": "b200", "06_": "a100", "07_": "b200",
                "08_": "b200", "12_": "rtx4090", "13_": "rtx4090", "17_": "b200"}
    for path in sorted(LOGS.glob("*.txt")):
        assert read_log(path).gpu.family == expected[path.name[:3]], path.name


def test_a_gpu_mismatch_can_be_allowed(tmp_path: Path) -> None:
    """--allow-gpu-mismatch lets the B200 log bound an H100 preset's fit (the check is the only difference)."""
    out = _ok(["fit", B200_LOG, "--bounds", "dgx-h100", "--allow-gpu-mismatch"], tmp_path)
    assert "bounded by dgx-h100" in out


def test_commands_without_ranks_do_not_suggest_ranks(tmp_path: Path) -> None:
    """whatif (--gpus) and run-program (the program's world) have no --ranks option to suggest."""
    work = tmp_path / "w"
    work.mkdir()
    for argv in ([*WHATIF, "--gpus", "64"], [*RUNP, "--topology", "switch:1"]):
        result = run_cli(argv, work)
        assert result.status == 2 and "ranks asked" in result.stderr and "--ranks" not in result.stderr, result.stderr


def test_each_bundled_log_passes_the_gpu_check_on_its_own_preset() -> None:
    """log_presets.CASES pairs each log with the machine its source names; none is refused as a GPU mismatch."""
    from simulator.formats.nccl_tests import read_log
    from simulator.nccl.fitting import check_same_gpu
    from simulator.nccl.log_presets import case_of
    from simulator.topology.spec import parse_topology

    for path in sorted(LOGS.glob("*.txt")):
        check_same_gpu(read_log(path), parse_topology(case_of(path.name).new_spec), "preset", "--allow-gpu-mismatch")
