"""The event-stream YAML reader of program files gives exactly what yaml.safe_load gives, shortcut or not."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from benchmarks.program_scale import program_text
from simulator.program import yamlstream

DATA = Path(__file__).resolve().parents[1] / "data" / "programs"
LOADERS = [yaml.SafeLoader] + ([yaml.CSafeLoader] if hasattr(yaml, "CSafeLoader") else [])
OPS = "    - {op: compute, time: 1ms, name: f}\n" * 3

DOCUMENTS = {
    "ddp2": (DATA / "ddp2.yaml").read_text(),
    "swapped": (DATA / "swapped.yaml").read_text(),
    "generated": program_text(2000),
    # an operation line inside a block scalar must stay text, even where the same line is an operation elsewhere
    "block-scalar": "description: |\n" + OPS + "ranks:\n  0:\n" + OPS + "  1:\n" + OPS,
    "folded-scalar": "description: >\n" + OPS + "ranks:\n  0:\n" + OPS,
    "quoted-multiline": "ranks:\n  0:\n" + OPS + "    - \"a quoted scalar\n" + OPS + "      ends here\"\n" + OPS,
    "single-quoted-multiline": "d: 'text\n" + OPS + "  more'\nranks:\n  0:\n" + OPS,
    "anchors": "ranks:\n  0: &ops\n" + OPS + "  1: *ops\n  2: [*ops, &one {op: wait, event: e}, *one]\n",
    "merge-key": "base: &b {op: compute, time: 1ms}\nranks:\n  0:\n    - {<<: *b, name: x}\n" + OPS,
    "tags": "ranks:\n  0:\n    - {op: !!str 5, time: !!float 1}\n" + OPS + "x: !!binary aGVsbG8=\n",
    "set-tag": "x: !!set {a, b}\nranks:\n  0:\n" + OPS,
    "quotes-comments": "ranks:\n  0:\n" + OPS + "    - {op: 'compute', time: \"1ms\"}  # quoted\n" + OPS + "# end\n",
    "after-lists": "ranks:\n  0:\n" + "    - {op: compute, time: 1ms, after: [a, b]}\n" * 4,
    "scalars": "ranks:\n  0:\n" + "    - {op: compute, time: 1:30, n: ~, m: , y: yes, o: 0o17, h: 0x1F, f: .inf, d: 2001-12-14}\n" * 3,
    "duplicate-keys": "ranks:\n  0:\n" + "    - {op: compute, op: wait}\n" * 3,
    "crlf": ("ranks:\n  0:\n" + OPS).replace("\n", "\r\n"),
    "nonce-in-text": "note: collsim0op collsim1op\nranks:\n  0:\n" + OPS,
    "token-as-value": "ranks:\n  0:\n" + OPS + "    - collsim0op0\n",
    "empty": "",
    "comment-only": "# nothing\n",
    "scalar-document": "42\n",
    "unicode": "ranks:\n  0:\n" + "    - {op: compute, name: \u00e9t\u00e9}\n" * 3,
}


@pytest.mark.parametrize("loader", LOADERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_same_data_as_safe_load(name, loader):
    text = DOCUMENTS[name]
    expected = yaml.load(text, Loader=loader)
    try:
        got = yamlstream.load(text, loader)
    except yamlstream.Unsupported:  # what the loader then hands to yaml.load
        assert name in ("merge-key", "set-tag"), name
        return
    assert got == expected
    assert repr(got) == repr(expected)  # the same types too (1 and 1.0 and True compare equal)


@pytest.mark.parametrize("text", ["ranks: [unclosed\n", "a: b\n---\nc: d\n", "a: *missing\n", "a:\n  - {op: x\n" + OPS])
def test_bad_yaml_is_an_error_not_data(text):
    with pytest.raises((yaml.YAMLError, yamlstream.Unsupported)):
        yamlstream.load(text, LOADERS[-1])
    with pytest.raises(yaml.YAMLError):
        yaml.load(text, Loader=LOADERS[-1])


def test_repeated_operation_lines_are_read_once_and_shared():
    text = program_text(2000)
    short = yamlstream._shorthand(text, LOADERS[-1], 32)
    assert short is not None
    lines, tokens, _ = short
    assert len(tokens) == 28 * 4  # 4 layers: 2 computes, 2 x 8 TP calls, a record, a wait and 8 DP calls per layer
    data = yamlstream.load(text, LOADERS[-1])
    assert data["ranks"][0][0] is data["ranks"][1][0]  # rank 0's and rank 1's first compute: one dict


def test_nesting_is_bounded():
    text = "a: " + "[" * 40 + "]" * 40 + "\n"
    with pytest.raises(yaml.YAMLError, match="nested more than 32"):
        yamlstream.load(text, LOADERS[-1], max_depth=32)
