"""Writing output files: paths checked before any work, each file whole, all of a run's files or none, the user's umask.

`check_outputs` refuses a path that cannot be written (missing or unwritable directory, a directory, '', /proc or /sys)
before a command starts its work. `atomic_write` writes a file so that readers see the old file or the whole new one.
Inside `all_or_nothing()` (the CLI runs every command in one) writes are held until the block ends without an error,
then written together: a run that fails half-way writes no file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from .errors import CollsimError

_PENDING: ContextVar[dict[Path, str] | None] = ContextVar("collsim_pending_writes", default=None)
_SYSTEM_TREES = ("/proc", "/sys", "/dev")


def check_outputs(paths: Mapping[str, str | os.PathLike | None]) -> None:
    """Refuse, naming the field, any output path (field -> path; None = not asked for) that could not be written."""
    seen: dict[Path, str] = {}
    for field, raw in paths.items():
        if raw is None:
            continue
        text = os.fspath(raw)
        accepted = "expected a file path in an existing, writable directory"
        if not text.strip():
            raise CollsimError(f"{field}: {text!r} is not a file path; {accepted}")
        path = Path(text).expanduser()
        resolved = path.resolve()
        if any(resolved == Path(tree) or Path(tree) in resolved.parents for tree in _SYSTEM_TREES):
            raise CollsimError(f"{field}: {text!r} is under {resolved.parts[0]}{resolved.parts[1]}, not a place for files; {accepted}")
        if resolved.is_dir():
            raise CollsimError(f"{field}: {text!r} is a directory; {accepted}")
        parent = resolved.parent
        if not parent.exists():
            raise CollsimError(f"{field}: the directory of {text!r} does not exist; {accepted}")
        if not parent.is_dir():
            raise CollsimError(f"{field}: {str(path.parent)!r} in {text!r} is not a directory; {accepted}")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise CollsimError(f"{field}: the directory of {text!r} is not writable; {accepted}")
        if resolved.exists() and not resolved.is_file():
            raise CollsimError(f"{field}: {text!r} exists and is not a regular file; {accepted}")
        if resolved in seen:
            raise CollsimError(f"{field}: {text!r} is also given for {seen[resolved]}; expected a different file for each output")
        seen[resolved] = field


def atomic_write(path: str | os.PathLike, text: str) -> None:
    """Write a text file whole (readers see the old or the new file), with the user's umask; held inside all_or_nothing()."""
    path = Path(path)
    pending = _PENDING.get()
    if pending is not None:
        pending[path] = text
        return
    _replace_all(_stage({path: text}))


@contextmanager
def all_or_nothing() -> Iterator[None]:
    """Hold every atomic_write until the block ends; then write them all, or none if the block or any write fails."""
    pending: dict[Path, str] = {}
    token = _PENDING.set(pending)
    try:
        yield
    finally:
        _PENDING.reset(token)
    if pending:
        _replace_all(_stage(pending))


def _file_mode(path: Path) -> int:
    """An existing file keeps its mode; a new one gets 0666 less the umask, as open() would give it."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _stage(files: Mapping[Path, str]) -> list[tuple[str, Path]]:
    """Each text in a temporary file beside its target; on any error none is left."""
    staged: list[tuple[str, Path]] = []
    try:
        for path, text in files.items():
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            staged.append((tmp, path))
            with os.fdopen(fd, "w") as handle:
                handle.write(text)
            os.chmod(tmp, _file_mode(path))
    except OSError as exc:
        _discard(staged)
        raise CollsimError(f"output: cannot write {str(path)!r}: {exc.strerror or exc}; expected a writable file path") from None
    except BaseException:
        _discard(staged)
        raise
    return staged


def _replace_all(staged: list[tuple[str, Path]]) -> None:
    try:
        for tmp, path in staged:
            os.replace(tmp, path)
    except OSError as exc:
        _discard(staged)
        raise CollsimError(f"output: cannot write {str(path)!r}: {exc.strerror or exc}; expected a writable file path") from None


def _discard(staged: list[tuple[str, Path]]) -> None:
    for tmp, _ in staged:
        Path(tmp).unlink(missing_ok=True)
