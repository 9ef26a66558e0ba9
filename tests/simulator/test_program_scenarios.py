"""Training-step generators: counts and sizes computed by hand from the published shapes; every program lints clean."""

import math
from collections import Counter

import pytest

from app.cli import main
from simulator.errors import CollsimError
from simulator.program import check_program, load_program
from simulator.program.presets import MODELS, get_model
from simulator.program.scenarios import SCENARIOS, build_spec, generate


def ops_of(program, rank, kind):
    return [op for op in program.ops(rank) if op.op == kind]


def test_model_presets_match_published_parameter_counts():
    # Llama 2 released checkpoints (config.json shapes): 6,738,415,616 and 68,976,648,192 parameters
    assert get_model("llama2-7b").params == 6_738_415_616
    assert get_model("llama2-70b").params == 68_976_648_192
    # Mixtral paper: 46.7B parameters, 12.9B active per token
    mix = get_model("mixtral-8x7b")
    assert round(mix.params / 1e9, 1) == 46.7
    active = mix.layers * mix.active_layer_params + 2 * mix.embedding_params + mix.hidden
    assert round(active / 1e9, 1) == 12.9


def test_ddp_buckets_cover_every_gradient_once():
    program = generate(build_spec("ddp", "llama2-7b", "h100", 8, bucket=25_000_000))
    for rank in (0, 7):
        buckets = ops_of(program, rank, "allreduce")
        assert len(buckets) == math.ceil(6_738_415_616 * 2 / 25e6) == 540
        assert sum(op.nbytes for op in buckets) == 6_738_415_616 * 2
        assert all(op.group == "dp0" and op.stream == "comm" for op in buckets)
    assert program.groups == {"dp0": tuple(range(8))}
    # torch's default bucket_cap_mb=25 is 25 MiB
    default = generate(build_spec("ddp", "llama2-7b", "h100", 8))
    assert len(ops_of(default, 0, "allreduce")) == math.ceil(6_738_415_616 * 2 / (25 * 2**20)) == 515


def test_ddp_compute_follows_six_n_d():
    """Forward 2ND and backward 4ND over the layers and the output head (no FLOPs for the embedding lookup)."""
    program = generate(build_spec("ddp", "llama2-7b", "h100", 8, mfu=0.4))
    flops = sum(op.flops for op in ops_of(program, 0, "compute"))
    n = 32 * 202_383_360 + 32_000 * 4096  # layers (attention 4 x 4096^2, SwiGLU 3 x 4096 x 11008, two norms) + head
    assert flops == pytest.approx(6 * n * 4096)
    seconds = sum(op.seconds for op in ops_of(program, 0, "compute"))
    assert seconds == pytest.approx(6 * n * 4096 / (989e12 * 0.4)) and 0.41 < seconds < 0.411


def test_fsdp_gathers_each_layer_forward_and_backward_and_reduce_scatters_its_gradients():
    program = generate(build_spec("fsdp", "llama2-7b", "a100", 8))
    gathers = ops_of(program, 3, "allgather")
    scatters = ops_of(program, 3, "reduce_scatter")
    assert len(gathers) == 2 * 32 + 1  # every layer twice, the root unit (embedding, head, norm) once
    assert len(scatters) == 32 + 2  # every layer, the head and the embedding
    assert sum(op.nbytes for op in scatters) == 6_738_415_616 * 2
    assert {op.nbytes for op in gathers[1:]} == {202_383_360 * 2}
    # prefetch: layer 1's all-gather is issued before layer 0's forward compute
    ops = program.ops(3)
    first_compute = next(i for i, op in enumerate(ops) if op.op == "compute")
    assert [op.name for op in ops[:first_compute] if op.op == "allgather"] == ["ag_root", "ag_f0.0", "ag_f0.1"]


@pytest.mark.parametrize("scenario, kinds", [("tp", {"allreduce": 4 * 32}),
                                              ("tp-sp", {"allgather": 4 * 32, "reduce_scatter": 4 * 32})])
def test_tensor_parallel_collectives_sit_on_the_compute_stream(scenario, kinds):
    program = generate(build_spec(scenario, "llama2-7b", "h100", 8))
    counts = Counter(op.op for op in program.ops(5) if op.is_collective)
    assert dict(counts) == kinds
    assert all(op.stream == "compute" and op.nbytes == 4096 * 4096 * 2 for op in program.ops(5) if op.is_collective)
    ddp = generate(build_spec("ddp", "llama2-7b", "h100", 8))
    assert sum(op.flops for op in ops_of(program, 5, "compute")) == pytest.approx(sum(op.flops for op in ops_of(ddp, 0, "compute")) / 8)


def test_pipeline_1f1b_sends_and_receives_between_stages():
    program = generate(build_spec("pp", "llama2-7b", "h100", 4, microbatches=8))
    act = 4096 * 4096 * 2
    first, middle, last = program.ops(0), program.ops(1), program.ops(3)
    assert Counter(op.op for op in first if op.is_p2p) == {"send": 8, "recv": 8}
    assert Counter(op.op for op in middle if op.is_p2p) == {"send": 16, "recv": 16}
    assert Counter((op.op, op.peer) for op in last if op.is_p2p) == {("recv", 2): 8, ("send", 2): 8}
    assert all(op.nbytes == act for op in first if op.is_p2p)
    # 1F1B (Megatron): stage 0 warms up with pp - 1 = 3 forwards, then its steady state starts with a forward
    order = [op.name for op in first if op.is_p2p]
    assert order[:6] == ["act0_send", "act1_send", "act2_send", "act3_send", "grad0_recv", "act4_send"]
    # the last stage has no warm-up: forward, backward, forward, ...
    assert [op.name for op in last if op.is_p2p][:4] == ["act0_recv", "grad0_send", "act1_recv", "grad1_send"]
    assert len(ops_of(program, 0, "compute")) == 8 * (8 * 2 * 2)  # 8 micro-batches x 8 layers x (attn, mlp) x (fwd, bwd)


def test_expert_parallel_all_to_alls():
    program = generate(build_spec("ep", "mixtral-8x7b", "h100", 8))
    a2a = ops_of(program, 2, "alltoall")
    assert len(a2a) == 4 * 32  # dispatch and combine, forward and backward, every layer
    assert {op.nbytes for op in a2a} == {4096 * 2 * 4096 * 2}  # tokens x top-2 x hidden x bf16
    assert program.groups["ep0"] == tuple(range(8))


def test_expert_gradients_are_reduced_over_the_ranks_holding_the_same_experts():
    program = generate(build_spec("ep", "mixtral-8x7b", "h100", 16, ep=8))  # dp 16: two copies of each expert
    assert program.groups["edp3"] == (3, 11) and program.groups["ep1"] == tuple(range(8, 16))
    experts = [op for op in ops_of(program, 3, "allreduce") if op.group == "edp3"]
    assert len(experts) == 32 and {op.nbytes for op in experts} == {3 * 4096 * 14336 * 2}  # one expert per rank, bf16
    dense = sum(op.nbytes for op in ops_of(program, 3, "allreduce") if op.group == "dp0")
    # attention (2 x 4096^2 + 2 x 4096 x 1024), router (4096 x 8), two norms per layer; embedding, head, final norm
    assert dense == (32 * (41_943_040 + 32_768 + 8_192) + 2 * 32_000 * 4096 + 4096) * 2


def test_hybrid_layout_is_nodes_by_gpus():
    spec = build_spec("hybrid", "llama2-70b", "h100", 32, tp=8, pp=2)
    program = generate(spec)
    assert (spec.layout.tp, spec.layout.pp, spec.layout.dp) == (8, 2, 2)
    assert program.groups["tp0"] == tuple(range(8))  # TP inside node 0
    assert program.groups["dp0"] == (0, 8)  # DP across nodes 0 and 1
    assert {op.peer for op in program.ops(0) if op.is_p2p} == {16}  # stage 1 is nodes 2 and 3
    assert {op.peer for op in program.ops(21) if op.is_p2p} == {5}


@pytest.mark.slow
@pytest.mark.parametrize("scenario, gpus, extra", [("ddp", 4, {}), ("fsdp", 4, {}), ("tp", 4, {}), ("tp-sp", 2, {}),
                                                   ("pp", 4, {}), ("ep", 4, {"model": "mixtral-8x7b"}),
                                                   ("hybrid", 16, {"tp": 4, "pp": 2, "gpus_per_node": 4}),
                                                   ("hybrid", 16, {"tp": 4, "gpus_per_node": 4, "fsdp": True}),
                                                   ("ep", 8, {"model": "mixtral-8x7b", "ep": 4, "tp": 2})])
def test_every_scenario_lints_clean_and_survives_a_file(tmp_path, scenario, gpus, extra):
    args = {"model": "llama2-7b", **extra}
    program = generate(build_spec(scenario, gpu="h100", gpus=gpus, **args))
    assert check_program(program) == []
    path = tmp_path / "step.yaml"
    from simulator.program import dump_program

    dump_program(program, path)
    assert load_program(path).ranks == program.ranks


@pytest.mark.parametrize("kwargs, needle", [
    ({"scenario": "ddp", "model": "gpt-5", "gpus": 8}, "model: unknown model 'gpt-5'; expected one of " + ", ".join(MODELS)),
    ({"scenario": "zero", "model": "llama2-7b", "gpus": 8}, "scenario: unknown scenario 'zero'; expected one of " + ", ".join(SCENARIOS)),
    ({"scenario": "hybrid", "model": "llama2-7b", "gpus": 64, "pp": 3}, "layout: tp 8 x pp 3 = 24 does not divide 64 GPUs"),
    ({"scenario": "tp", "model": "llama2-7b", "gpus": 8, "tp": 16}, "tp: a group of 16 is larger than the machine's 8 GPUs"),
    ({"scenario": "hybrid", "model": "llama2-7b", "gpus": 16, "tp": 16, "gpus_per_node": 8},
     "tp: 16 does not fit inside a node of 8 GPUs"),
    ({"scenario": "ddp", "model": "llama2-7b", "gpus": 12}, "gpus: 12 GPUs do not fill whole nodes of 8"),
    ({"scenario": "pp", "model": "llama2-7b", "gpus": 6, "gpus_per_node": 6},
     "pp: 32 layers of Llama-2 7B do not split into 6 equal stages"),
    ({"scenario": "ep", "model": "llama2-7b", "gpus": 8}, "model: llama2-7b has no experts"),
    ({"scenario": "ep", "model": "mixtral-8x7b", "gpus": 8, "ep": 3}, "ep: 3 does not divide the data-parallel degree 8"),
    ({"scenario": "ddp", "model": "llama2-7b", "gpus": 8, "mfu": 1.5}, "mfu: 1.5; expected a utilisation in (0, 1]"),
    ({"scenario": "ddp", "model": "llama2-70b", "gpus": 4096, "microbatches": 64}, "gpus: this program would hold about"),
])
def test_bad_scenarios_are_named(kwargs, needle):
    kwargs = {"gpu": "h100", **kwargs}
    with pytest.raises(CollsimError) as info:
        build_spec(**kwargs)
    assert str(info.value).startswith(needle), str(info.value)


def test_scenario_cli_writes_a_file_lint_accepts(tmp_path, capsys):
    out = tmp_path / "ddp.yaml"
    assert main(["scenario", "ddp", "--gpus", "2", "--bucket", "1GB", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "ddp: Llama-2 7B (6.74B params) on 2 x H100 SXM" in text and "allreduce" in text
    assert main(["lint-program", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"OK: {out}: 2 ranks, 1 groups")
    assert main(["scenario", "ddp", "--gpus", "8", "--model", "llama3"]) == 2
    assert capsys.readouterr().err.startswith("collsim: error: model: unknown model 'llama3'")
    assert main(["scenario", "ddp", "--gpus", "2", "--out", str(tmp_path / "x.txt")]) == 2
