"""simulator/fileio.py: output paths checked before work, whole files with the umask, all of a run's files or none."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from simulator.errors import CollsimError
from simulator.fileio import all_or_nothing, atomic_write, check_outputs


@pytest.fixture
def umask():
    """Set a umask for one test and restore the old one."""
    old = os.umask(0o022)
    os.umask(old)
    yield lambda mask: os.umask(mask)
    os.umask(old)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_new_file_gets_0666_less_the_umask(tmp_path, umask, mask, mode):
    umask(mask)
    atomic_write(tmp_path / "a.txt", "hello")
    assert (tmp_path / "a.txt").read_text() == "hello"
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == mode


def test_existing_file_keeps_its_mode_and_no_temporary_is_left(tmp_path, umask):
    umask(0o022)
    target = tmp_path / "a.txt"
    target.write_text("old")
    target.chmod(0o640)
    atomic_write(target, "new")
    assert target.read_text() == "new" and target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_writers_do_not_depend_on_the_cost_model():
    """trace and the nccl-tests writer need atomic_write only: they must not import the link profile."""
    import ast

    root = Path(__file__).resolve().parents[2] / "simulator"
    for module in ("trace.py", "formats/nccl_tests.py"):
        tree = ast.parse((root / module).read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        assert not any(name.endswith("profile") for name in imported), (module, imported)


def test_all_or_nothing_writes_every_file_at_the_end(tmp_path):
    with all_or_nothing():
        atomic_write(tmp_path / "a", "1")
        atomic_write(tmp_path / "b", "2")
        assert not (tmp_path / "a").exists()  # held until the block ends
    assert (tmp_path / "a").read_text() == "1" and (tmp_path / "b").read_text() == "2"


def test_all_or_nothing_writes_nothing_when_the_run_fails(tmp_path):
    with pytest.raises(RuntimeError), all_or_nothing():
        atomic_write(tmp_path / "a", "1")
        raise RuntimeError("the run failed after its first output")
    assert list(tmp_path.iterdir()) == []


def test_all_or_nothing_writes_nothing_when_one_file_cannot_be_written(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    with pytest.raises(CollsimError, match="output: cannot write"), all_or_nothing():
        atomic_write(tmp_path / "a", "1")
        atomic_write(gone / "b", "2")
        gone.rmdir()  # the second file's directory disappears before the writes
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("path, reason", [
    ("missing/x.csv", "does not exist"), ("", "not a file path"), ("/proc/x", "/proc"), ("/sys/x", "/sys"),
    ("/dev/null", "/dev"), (".", "is a directory"),
])
def test_check_outputs_refuses_with_the_field_and_the_reason(tmp_path, monkeypatch, path, reason):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CollsimError) as err:
        check_outputs({"trace": "ok.json", "export": path})
    message = str(err.value)
    assert message.startswith(f"export: cannot write {path!r}: ") and reason in message
    assert "expected a file path in an existing, writable directory" in message


def test_check_outputs_refuses_a_file_as_directory_and_the_same_file_twice(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(CollsimError, match="is not a directory"):
        check_outputs({"csv": str(tmp_path / "f" / "x.csv")})
    with pytest.raises(CollsimError, match="also given for trace"):
        check_outputs({"trace": str(tmp_path / "same"), "export": str(tmp_path / "same")})


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into any directory")
def test_check_outputs_refuses_an_unwritable_directory(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(CollsimError, match="not writable"):
        check_outputs({"out": str(locked / "p.yaml")})


def test_check_outputs_accepts_new_and_existing_files_and_ignores_options_not_given(tmp_path):
    (tmp_path / "old.csv").write_text("x")
    check_outputs({"csv": str(tmp_path / "old.csv"), "trace": str(tmp_path / "new.json"), "export": None})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.csv"]


def test_say_written_prints_only_once_the_files_are_in_place(tmp_path, capsys):
    from simulator.fileio import say_written

    with all_or_nothing():
        atomic_write(tmp_path / "a.csv", "1")
        say_written("wrote a.csv")
        assert capsys.readouterr().out == ""  # held with the file
    assert capsys.readouterr().out == "wrote a.csv\n" and (tmp_path / "a.csv").read_text() == "1"
    gone = tmp_path / "gone"
    gone.mkdir()
    with pytest.raises(CollsimError, match="output: cannot write"), all_or_nothing():
        atomic_write(gone / "b.csv", "2")
        say_written("wrote b.csv")
        gone.rmdir()
    assert capsys.readouterr().out == ""  # the write failed: never claimed


def test_an_output_changed_during_the_run_is_refused_and_kept(tmp_path):
    """Another writer (here this process, bypassing the run) replaces the file between the check and the end."""
    target = tmp_path / "out.csv"
    target.write_text("before")
    with pytest.raises(CollsimError, match=r"csv: .*out.csv' was changed by another process"), all_or_nothing():
        check_outputs({"csv": str(target)})
        atomic_write(target, "mine")
        target.write_text("theirs, written meanwhile")
    assert target.read_text() == "theirs, written meanwhile" and sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]
    with all_or_nothing():  # unchanged since the check: replaced as before
        check_outputs({"csv": str(target)})
        atomic_write(target, "mine")
    assert target.read_text() == "mine"


def test_a_symlink_is_written_through_to_its_target(tmp_path):
    (tmp_path / "real.txt").write_text("old")
    (tmp_path / "link.txt").symlink_to("real.txt")
    atomic_write(tmp_path / "link.txt", "new")
    assert (tmp_path / "link.txt").is_symlink() and (tmp_path / "real.txt").read_text() == "new"


@pytest.mark.parametrize("path, ok", [("a.csv", True), ("A.CSV", True), ("a", True), ("a.txt", False), ("a.csv.bak", False)])
def test_check_outputs_refuses_an_extension_of_another_format(tmp_path, path, ok):
    formats = {"csv": ("CSV", (".csv",))}
    if ok:
        check_outputs({"csv": str(tmp_path / path)}, formats)
    else:
        with pytest.raises(CollsimError, match=r"csv: '.*' ends in \.\w+, but the file written is CSV; expected a name "
                                               r"ending in \.csv$"):
            check_outputs({"csv": str(tmp_path / path)}, formats)
