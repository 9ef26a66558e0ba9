"""The program format: bad input gets one line naming file, rank, op index, field, bad value and what is accepted."""

import textwrap

import pytest
import yaml

from app.cli import main
from simulator.errors import CollsimError
from simulator.program import dump_program, load_program, program_from_dict

GOOD = """
world: 4
gpu: h100
mfu: 0.5
groups: {dp: [0, 1, 2, 3], pair: "0-1"}
ranks:
  0-3:
    - {op: compute, flops: 4.945e11, name: fwd}
    - {op: compute, time: 2ms, stream: compute, after: [fwd]}
    - {op: record, event: done, stream: compute}
    - {op: wait, event: done, stream: comm}
    - {op: all_reduce, group: dp, size: 64MiB, stream: comm, name: bucket1, algorithm: ring}
    - {op: broadcast, group: dp, size: 1KiB, dtype: float32, root: 2}
"""


def load(text: str, source: str = "p.yaml"):
    return program_from_dict(yaml.safe_load(textwrap.dedent(text)), source=source)


def test_a_good_program_reads_with_units_and_defaults():
    program = load(GOOD)
    assert program.world == 4 and program.groups == {"dp": (0, 1, 2, 3), "pair": (0, 1)}
    ops = program.ops(3)
    assert [op.op for op in ops] == ["compute", "compute", "record", "wait", "allreduce", "broadcast"]
    assert ops[0].seconds == pytest.approx(4.945e11 / (989e12 * 0.5))  # 1 ms on an H100 at MFU 0.5
    assert ops[1].seconds == pytest.approx(2e-3) and ops[1].after == ("fwd",)
    assert ops[4].nbytes == 64 * 2**20 and ops[4].dtype == "bfloat16" and ops[4].stream == "comm" and ops[4].algorithm == "ring"
    assert ops[5].root == 2 and ops[5].dtype == "float32" and ops[5].stream == "main"


def test_dump_and_load_give_the_same_program(tmp_path):
    program = load(GOOD)
    for name in ("p.yaml", "p.json"):
        path = tmp_path / name
        dump_program(program, path)
        again = load_program(path)
        assert again.groups == program.groups and again.ranks == program.ranks and again.world == 4


def _one(text):
    return textwrap.dedent(f"""
        world: 2
        groups: {{dp: [0, 1], solo: [1]}}
        ranks:
          0:
            - {{op: compute, time: 1ms, name: a}}
            - {text}
        """)


@pytest.mark.parametrize("op, needle", [
    ("{op: allreduse, group: dp, size: 1MiB}",
     "p.yaml: rank 0 op[1]: op: unknown operation 'allreduse'; expected compute, send, recv, record, wait or a collective"),
    ("{op: allreduce, group: tp, size: 1MiB}", "p.yaml: rank 0 op[1]: group: 'tp' is not defined; expected one of dp, solo"),
    ("{op: allreduce, group: solo, size: 1MiB}",
     "p.yaml: rank 0 op[1]: group: rank 0 is not a member of group 'solo' [1]; expected a group that contains this rank"),
    ("{op: allreduce, group: dp, size: 64MiBB}", "p.yaml: rank 0 op[1]: size: unknown unit 'mibb' in '64MiBB'"),
    ("{op: allreduce, group: dp, size: 3B}",
     "p.yaml: rank 0 op[1]: size: '3B' is not a whole number of bfloat16 elements (2 bytes each)"),
    ("{op: allreduce, group: dp, szie: 1MiB}", "p.yaml: rank 0 op[1]: unknown field 'szie'"),
    ("{op: allreduce, group: dp}", "p.yaml: rank 0 op[1]: size: missing; allreduce needs group and size"),
    ("{op: allreduce, group: dp, size: 1MiB, root: 0}", "p.yaml: rank 0 op[1]: root: allreduce has no root"),
    ("{op: broadcast, group: dp, size: 1MiB, root: 5}", "p.yaml: rank 0 op[1]: root: 5 is not a member of group 'dp' [0, 1]"),
    ("{op: compute, time: 1ms, flops: 1e9}", "p.yaml: rank 0 op[1]: compute needs exactly one of time (e.g. 1.5ms) or flops"),
    ("{op: compute, flops: 1e9}", "p.yaml: rank 0 op[1]: gpu: missing; compute given in flops needs a gpu and an mfu"),
    ("{op: compute, flops: 1e9, gpu: v100, mfu: 0.4}",
     "p.yaml: rank 0 op[1]: gpu: unknown GPU 'v100'; expected one of a100, h100, h200, b200, b300"),
    ("{op: compute, time: -1ms}", "p.yaml: rank 0 op[1]: time: '-1ms' is negative; expected a time >= 0"),
    ("{op: send, peer: 0, size: 1KiB}", "p.yaml: rank 0 op[1]: peer: 0; expected another rank of the world, 0..1 except 0"),
    ("{op: wait, event: nope}", "p.yaml: rank 0 op[1]: event: 'nope' is never recorded on this rank"),
    ("{op: compute, time: 1ms, after: [zz]}", "p.yaml: rank 0 op[1]: after: no operation named 'zz' on this rank; expected one of a"),
    ("{op: compute, time: 1ms, name: a}", "p.yaml: rank 0 op[1]: name: 'a' is already op[0]'s"),
    ("{op: record, event: e, time: 1ms}", "p.yaml: rank 0 op[1]: time: not a field of record"),
])
def test_bad_operations_are_named(op, needle):
    with pytest.raises(CollsimError) as info:
        load(_one(op))
    assert str(info.value).startswith(needle), str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("text, needle", [
    ("world: 2\ngroups: {dp: [0, 1, 2, 3]}\nranks: {}",
     "p.yaml: groups.dp: 4 ranks in a world of 2; a group cannot be larger than the world"),
    ("world: 4\ngroups: {dp: [0, 7]}\nranks: {}", "p.yaml: groups.dp: rank 7 is not in the world; expected ranks 0..3"),
    ("world: 4\ngroups: {dp: [0, 0]}\nranks: {}", "p.yaml: groups.dp: rank 0 is listed twice"),
    ("world: 0\nranks: {}", "p.yaml: world: 0; expected the number of ranks"),
    ("world: 2\nranks: {5: []}", "p.yaml: ranks: rank 5 (key 5) is not in a world of 2; expected 0..1"),
    ("world: 2\nranks: {0-1: [], 1: []}", "p.yaml: ranks: rank 1 is listed twice"),
    ("world: 2\nwrld: 3\nranks: {}", "p.yaml: unknown field 'wrld'"),
    ("world: 2\nmfu: 1.5\nranks: {}", "p.yaml: mfu: 1.5; expected a utilisation (MFU) in (0, 1]"),
    ("[1, 2]", "p.yaml: the file holds list; expected a mapping with world, groups and ranks"),
    # a cycle through `after`: a waits for b, b for a
    ("world: 1\nranks:\n  0: [{op: compute, time: 1ms, name: a, after: [b]}, {op: compute, time: 1ms, name: b}]",
     'p.yaml: rank 0: dependency cycle: op[0] compute "a" -> op[1] compute "b" -> op[0] compute "a" (each waits for the next)'),
    # a cycle through events across two streams: each stream waits for what the other records later
    ("world: 1\nranks:\n  0: [{op: wait, event: e2, stream: a}, {op: record, event: e1, stream: a},\n"
     "      {op: wait, event: e1, stream: b}, {op: record, event: e2, stream: b}]",
     'p.yaml: rank 0: dependency cycle: op[0] wait "e2" -> op[3] record "e2" -> op[2] wait "e1" -> op[1] record "e1" -> op[0] wait "e2"'),
])
def test_bad_programs_are_named(text, needle):
    with pytest.raises(CollsimError) as info:
        load(text)
    assert str(info.value).startswith(needle), str(info.value)


def test_lint_program_cli(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("world: 2\ngroups: {dp: [0, 1]}\nranks:\n  0: [{op: allreduce, group: dp, size: 1MiB}]\n")
    assert main(["lint-program", str(bad)]) == 1
    out = capsys.readouterr().out
    assert out.strip() == (f"{bad}: missing: rank 0 waits in allreduce#1 (group dp) for rank 1, which never makes that call "
                           "(it makes 0 calls on group dp)")
    good = tmp_path / "good.yaml"
    good.write_text("world: 2\ngroups: {dp: [0, 1]}\nranks:\n  0-1: [{op: allreduce, group: dp, size: 1MiB}]\n")
    assert main(["lint-program", str(good), "--json"]) == 0
    assert '"ok": true' in capsys.readouterr().out
    assert main(["lint-program", str(tmp_path / "none.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("collsim: error: program: cannot read") and err.count("\n") == 1
    (tmp_path / "broken.yaml").write_text("world: [\n")
    assert main(["lint-program", str(tmp_path / "broken.yaml")]) == 2
    assert capsys.readouterr().err.startswith("collsim: error: broken.yaml: not valid YAML")


def test_verify_program_refuses_what_it_cannot_run(tmp_path, capsys):
    path = tmp_path / "big.yaml"
    path.write_text("world: 64\nranks: {}\n")
    assert main(["verify", "--program", str(path)]) == 2
    assert "big.yaml: world: 64 ranks would start 64 local processes; expected at most 32" in capsys.readouterr().err
    small = tmp_path / "small.yaml"  # the world is refused first; a world verify can start meets the backend check
    small.write_text("world: 2\nranks: {}\n")
    assert main(["verify", "--program", str(small), "--backend", "nccl"]) == 2
    assert "backend: verify --program runs on gloo" in capsys.readouterr().err
    assert main(["verify", "--program", str(path), "--ranks", "4"]) == 2
    assert "ranks: --ranks 4 but big.yaml has a world of 64" in capsys.readouterr().err
