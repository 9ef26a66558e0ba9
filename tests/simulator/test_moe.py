"""`collsim scenario moe` (simulator/program/moe.py): all-to-all sizes from a routing distribution, and the waiting an
imbalance makes, against hand arithmetic."""

from __future__ import annotations

import json

import pytest

from simulator.errors import CollsimError
from simulator.program.matching import check_program
from simulator.program.moe import MoeSpec, generate_moe, parse_routing, token_counts
from simulator.program.presets import get_gpu, get_model
from simulator.program.run import run_program
from simulator.topology import ideal

MIXTRAL = get_model("mixtral-8x7b")  # 8 experts, top-2, hidden 4096, SwiGLU width 14336
H100 = get_gpu("h100")  # 989 TFLOP/s
PER_COPY = 2 * 3 * 4096 * 14336 / (989e12 * 0.4)  # one token copy through one expert, forward, at MFU 0.4: 890.6 ns


def _spec(ep: int, tokens: int, routing: str, layers: int = 1) -> MoeSpec:
    return MoeSpec(MIXTRAL, H100, ep, tokens, parse_routing(routing, MIXTRAL.experts, ep), layers)


def test_uniform_routing_gives_equal_messages():
    program = generate_moe(_spec(8, 4096, "uniform"))
    # 4096 tokens x top-2 over 8 ranks: 1024 copies to each, 1024 x 4096 x 2 B = 8 MiB per message
    sizes = {op.nbytes for r in range(8) for op in program.ops(r) if op.op in ("send", "recv")}
    assert sizes == {8 * 2**20}
    assert sum(op.op == "send" for op in program.ops(0)) == 4 * 7  # dispatch, combine, and their gradients: 7 peers each
    assert check_program(program) == []


def test_zipf_counts_by_hand():
    # ep 2: rank 0 holds experts 0-3, rank 1 experts 4-7; zipf s=1: P_0 = (1 + 1/2 + 1/3 + 1/4) / H_8 = (25/12) / (761/280)
    # = 7000/9132 = 0.76654; 1000 tokens x 2 = 2000 copies: 1533.07 -> 1533 to rank 0, 467 to rank 1, from each rank
    assert token_counts(_spec(2, 1000, "zipf:1")).tolist() == [[1533, 467], [1533, 467]]


def test_hot_expert_makes_the_other_rank_wait_by_its_extra_compute():
    """On links too fast to matter, both ranks end together; rank 1 idles for the experts' extra work on rank 0:
    (3066 - 934) copies x 890.6 ns forward, twice that backward: 3 x 2132 x 890.6 ns = 5.696 ms."""
    program = generate_moe(_spec(2, 1000, "zipf:1"))
    result = run_program(program, ideal(2, 0.0, 1e15), timing="links")
    compute = {r["rank"]: r["compute_s"] for r in result.per_rank}
    step = result.step_time
    assert step - compute[1] == pytest.approx(3 * (3066 - 934) * PER_COPY, abs=1e-7)
    assert step - compute[0] == pytest.approx(0.0, abs=1e-7)  # the hot rank never waits (messages take ~10 ns)


def test_uniform_routing_makes_no_rank_wait():
    program = generate_moe(_spec(4, 512, "uniform"))
    result = run_program(program, ideal(4, 0.0, 1e15), timing="links")
    assert {round(result.step_time - r["compute_s"], 7) for r in result.per_rank} == {0.0}


def test_routing_from_a_file_of_counts(tmp_path):
    path = tmp_path / "router.json"
    path.write_text(json.dumps([3, 1, 0, 0, 0, 0, 0, 0]))  # 75% of choices to expert 0 would be > 1/top_k: refused
    with pytest.raises(CollsimError, match="more than 1/top_k = 50.0%"):
        _spec(2, 100, str(path)).check()
    path.write_text(json.dumps([[1, 1, 1, 1, 1, 1, 1, 1], [2, 2, 2, 2, 0, 0, 0, 0]]))  # one list per rank
    assert token_counts(_spec(2, 100, str(path))).tolist() == [[100, 100], [200, 0]]


@pytest.mark.parametrize("routing, words", [("zipf:-1", "expected zipf:S with an exponent 0 <= S <= 10"),
                                            ("pareto", "expected uniform, zipf:S"),
                                            ("zipf:3", "more than 1/top_k")])
def test_bad_routing(routing, words):
    with pytest.raises(CollsimError, match=words):
        _spec(8, 100, routing).check()
