"""The safe input reader: size caps, UTF-8, YAML/JSON nesting and alias limits, with the line where it can be known."""

import os
from pathlib import Path

import pytest

from simulator.errors import CollsimError
from simulator.readfile import MAX_DATA_BYTES, MAX_DEPTH, read_bytes, read_data, read_text


def _write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


@pytest.mark.parametrize("name", ["d.yaml", "d.json"])
def test_nesting_up_to_the_limit_is_read_and_one_more_is_refused(tmp_path, name):
    ok = _write(tmp_path, name, "[" * MAX_DEPTH + "]" * MAX_DEPTH)
    data = read_data(ok, "test")
    for _ in range(MAX_DEPTH - 1):
        data = data[0]
    assert data == []
    deep = _write(tmp_path, name, "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    with pytest.raises(CollsimError, match=f"line 1: nested more than {MAX_DEPTH} levels deep"):
        read_data(deep, "test")


def test_json_brackets_inside_strings_do_not_count(tmp_path):
    path = _write(tmp_path, "s.json", '{"a": "' + "[" * 500 + '\\"{"}')
    assert read_data(path, "test") == {"a": "[" * 500 + '"{'}


def test_yaml_aliases_are_expanded_only_up_to_the_limit(tmp_path):
    small = _write(tmp_path, "ok.yaml", "d: &d {latency: 1us}\nlinks: [*d, *d, *d]\n")
    assert read_data(small, "test")["links"] == [{"latency": "1us"}] * 3
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(6))
    with pytest.raises(CollsimError, match="more than 1,000,000 values once YAML aliases"):
        read_data(_write(tmp_path, "bomb.yaml", bomb), "test")


def test_utf8_errors_name_the_line_and_byte_and_a_bom_is_fine(tmp_path):
    with pytest.raises(CollsimError, match=r"test: .*l1\.yaml line 3: byte 0xe9 at offset 13 is not UTF-8; expected UTF-8 text"):
        read_text(_write(tmp_path, "l1.yaml", "a: 1\nb: 2\ncaf\xe9: 3\n".encode("latin-1")), "test")
    assert read_data(_write(tmp_path, "bom.yaml", b"\xef\xbb\xbfa: 1\n"), "test") == {"a": 1}


def test_size_caps_and_the_environment_override(tmp_path, monkeypatch):
    path = _write(tmp_path, "big.yaml", "a: 1\n" + " " * MAX_DATA_BYTES)
    with pytest.raises(CollsimError, match="over the limit of 2 MiB for input files; set COLLSIM_MAX_INPUT_BYTES"):
        read_data(path, "test")
    assert len(read_bytes(path, "test")) == MAX_DATA_BYTES + 5  # text files have the larger cap
    monkeypatch.setenv("COLLSIM_MAX_INPUT_BYTES", str(4 * 2**20))
    assert read_data(path, "test") == {"a": 1}
    monkeypatch.setenv("COLLSIM_MAX_INPUT_BYTES", "lots")
    with pytest.raises(CollsimError, match="COLLSIM_MAX_INPUT_BYTES: 'lots' is not a byte count"):
        read_data(path, "test")


def test_yaml_errors_are_one_line_with_the_line_number(tmp_path):
    with pytest.raises(CollsimError) as info:
        read_data(_write(tmp_path, "bad.yaml", "a: 1\nb: [1, 2\nc: }\n"), "test")
    assert "\n" not in str(info.value) and "not valid YAML" in str(info.value) and " line " in str(info.value)


def test_devices_and_pipes_are_refused_without_waiting(tmp_path):
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)  # no writer: a plain open() would wait forever
    for path in (fifo, Path("/dev/zero")):
        with pytest.raises(CollsimError, match="is not a regular file"):
            read_data(path, "test")
