"""A corpus of mis-ordered and mismatched programs (tests/program_corpus.py), each named exactly by the static checker."""

import textwrap

import pytest
import yaml
from program_corpus import CORPUS

from simulator.program import check_program, program_from_dict


def prog(text: str):
    return program_from_dict(yaml.safe_load(textwrap.dedent(text)), source="corpus")


@pytest.mark.parametrize("name", list(CORPUS))
def test_checker_names_the_problem_exactly(name):
    text, expected = CORPUS[name]
    problems = [(p.kind, p.message) for p in check_program(prog(text))]
    assert problems == expected


def test_corpus_is_large_enough_and_varied():
    worlds = {prog(text).world for text, _ in CORPUS.values()}
    assert len(CORPUS) >= 10 and min(worlds) == 2 and max(worlds) == 8
    assert {k for _, exp in CORPUS.values() for k, _ in exp} == {"deadlock", "mismatch", "missing"}


def test_different_orders_that_cannot_deadlock_pass():
    """Rank 5 alone enters DP first: its DP partner, rank 1, gets there after TP, so everything completes."""
    text = CORPUS["tp-dp-8-ranks"][0].replace(
        "0: [{op: allreduce, group: dp0, size: 1MiB}, {op: allreduce, group: tp0, size: 2MiB}]",
        "0: [{op: allreduce, group: tp0, size: 2MiB}, {op: allreduce, group: dp0, size: 1MiB}]")
    assert check_program(prog(text)) == []


def test_events_that_order_streams_correctly_pass():
    text = """
        world: 2
        groups: {dp: [0, 1]}
        ranks:
          0-1:
            - {op: compute, time: 1ms, name: bwd}
            - {op: record, event: grads, stream: main}
            - {op: wait, event: grads, stream: comm}
            - {op: allreduce, group: dp, size: 1MiB, stream: comm, name: bucket}
            - {op: compute, time: 1ms, after: [bucket]}
        """
    assert check_program(prog(text)) == []


def test_the_worked_example_in_the_docs_says_what_the_checker_says():
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "programs.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", doc, re.S)
    step = yaml.safe_load(blocks[0])
    program = program_from_dict(step, source="step.yaml")
    assert check_program(program) == [] and "OK: step.yaml: 4 ranks, 4 groups, 32 operations" in doc
    moved = yaml.safe_load(blocks[1])[0]  # rank 0's edited list; rank 3 likewise with dp1 and tp1
    step["ranks"][0] = moved
    step["ranks"][3] = [dict(op, group={"dp0": "dp1", "tp0": "tp1"}.get(op.get("group"), op.get("group")))
                        if "group" in op else op for op in moved]
    problems = check_program(program_from_dict(step, source="bug.yaml"))
    assert len(problems) == 1 and f"bug.yaml: deadlock: {problems[0].message}\n" in doc
    step["ranks"][0] = yaml.safe_load(blocks[0])["ranks"][0]  # only rank 3 moved: serialised, no cycle
    assert check_program(program_from_dict(step, source="bug.yaml")) == []


@pytest.mark.parametrize("name", list(CORPUS))
def test_engine_names_the_problem_exactly(name):
    """The timed run stops on the same problems: mismatches refused up front, deadlocks and missing calls found from
    what the engine ran (ops that ended, calls entered but never started), in the checker's words."""
    from simulator.errors import CollsimError
    from simulator.program.run import ProgramDeadlock, run_program
    from simulator.topology import ideal

    text, expected = CORPUS[name]
    program = prog(text)
    mismatches = [m for kind, m in expected if kind == "mismatch"]
    if mismatches:
        with pytest.raises(CollsimError) as info:
            run_program(program, ideal(program.world, 1e-6, 10e9))
        assert not isinstance(info.value, ProgramDeadlock)
        assert str(info.value) == "program: mismatch: " + "; ".join(mismatches)
        return
    with pytest.raises(ProgramDeadlock) as info:
        run_program(program, ideal(program.world, 1e-6, 10e9))
    assert [(p.kind, p.message) for p in info.value.problems] == expected


def test_the_engine_runs_the_reordering_that_cannot_deadlock():
    from simulator.program.run import run_program
    from simulator.topology import ideal

    text = CORPUS["tp-dp-8-ranks"][0].replace(
        "0: [{op: allreduce, group: dp0, size: 1MiB}, {op: allreduce, group: tp0, size: 2MiB}]",
        "0: [{op: allreduce, group: tp0, size: 2MiB}, {op: allreduce, group: dp0, size: 1MiB}]")
    result = run_program(prog(text), ideal(8, 1e-6, 10e9))
    assert result.step_time > 0 and all(o.end == o.end for o in result.ops)  # every call ended (no NaN)
