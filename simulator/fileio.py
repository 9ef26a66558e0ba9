"""Writing output files: paths checked before any work, each file whole, all of a run's files or none, the user's umask.

`check_outputs` refuses a path that cannot be written (missing or unwritable directory, a directory, '', /proc or /sys,
a name whose extension is not the format written) before a command starts its work. `atomic_write` writes a file so
that readers see the old file or the whole new one; a symlink is written through (its target is replaced, the link
stays). Inside `all_or_nothing()` (the CLI runs every command in one) writes are held until the block ends without an
error, then written together: a run that fails half-way writes no file. Lines given to `say_written` are printed only
once the files are in place. An output checked at the start that another process changes before the end is refused,
not overwritten (the check and the replace hold a lock on the file's directory, so two runs cannot interleave them).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from .errors import CollsimError

_SYSTEM_TREES = ("/proc", "/sys", "/dev")
Fingerprint = tuple[int, int, int, int] | None  # (device, inode, size, mtime in ns) of a file, None when absent


@dataclass
class _Run:
    """What one all_or_nothing block holds back: files, 'wrote' lines, and the outputs' state when it started."""

    files: dict[Path, str | bytes] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    started: dict[Path, tuple[str, str, Fingerprint]] = field(default_factory=dict)  # target -> (field, given, state)


_RUN: ContextVar[_Run | None] = ContextVar("collsim_pending_writes", default=None)


def check_outputs(paths: Mapping[str, str | os.PathLike | None],
                  formats: Mapping[str, tuple[str, tuple[str, ...]]] | None = None) -> None:
    """Refuse, naming the field, any output path (field -> path; None = not asked for) that could not be written, or
    whose extension is not one of its format's (field -> (format, extensions)). Inside all_or_nothing() the state of
    each output is recorded, so that one another process changes meanwhile is not overwritten at the end."""
    seen: dict[Path, str] = {}
    run = _RUN.get()
    for name, raw in paths.items():
        if raw is None:
            continue
        text = os.fspath(raw)
        accepted = "expected a file path in an existing, writable directory"
        path = Path(text).expanduser() if text.strip() else None
        reason = _unwritable(path) if path is not None else "it is not a file path"
        if reason:
            raise CollsimError(f"{name}: cannot write {text!r}: {reason}; {accepted}")
        if formats and name in formats:
            _check_extension(name, text, *formats[name])
        resolved = path.resolve()
        if resolved in seen:
            raise CollsimError(f"{name}: {text!r} is also given for {seen[resolved]}; expected a different file for each output")
        seen[resolved] = name
        if run is not None:
            run.started[resolved] = (name, text, _fingerprint(resolved))


def _check_extension(name: str, text: str, what: str, extensions: tuple[str, ...]) -> None:
    """Refuse a file name whose extension is not one of `extensions` (a name with no extension is taken as it is)."""
    suffix = Path(text).suffix.lower()
    if suffix and suffix not in extensions:
        raise CollsimError(f"{name}: {text!r} ends in {suffix}, but the file written is {what}; expected a name ending "
                           f"in {', '.join(extensions)}")


def _fingerprint(path: Path) -> Fingerprint:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _unwritable(path: Path) -> str | None:
    """Why a file could not be written at `path`, or None."""
    resolved = path.resolve()
    if any(resolved == Path(tree) or Path(tree) in resolved.parents for tree in _SYSTEM_TREES):
        return f"it is under {'/'.join(resolved.parts[:2]).replace('//', '/')}, which is not a place for files"
    if resolved.is_dir():
        return "it is a directory"
    parent = resolved.parent
    if not parent.exists():
        return f"its directory {str(path.parent)!r} does not exist"
    if not parent.is_dir():
        return f"{str(path.parent)!r} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"its directory {str(path.parent)!r} is not writable"
    if resolved.exists() and not resolved.is_file():
        return "it exists and is not a regular file"
    return None


def atomic_write(path: str | os.PathLike, text: str | bytes) -> None:
    """Write a text (or bytes) file whole (readers see the old or the new file), with the user's umask, through a symlink to its
    target; held inside all_or_nothing()."""
    path = Path(path)
    run = _RUN.get()
    if run is not None:
        run.files[path] = text
        return
    _commit(_Run(files={path: text}))


def say_written(line: str) -> None:
    """Print `line` (e.g. 'wrote x.csv') to stdout once the run's files are in place: at the end of all_or_nothing(),
    and not at all if they could not be written; at once outside such a block."""
    run = _RUN.get()
    if run is None:
        print(line)
    else:
        run.notes.append(line)


@contextmanager
def all_or_nothing() -> Iterator[None]:
    """Hold every atomic_write until the block ends; then write them all, or none if the block or any write fails."""
    run = _Run()
    token = _RUN.set(run)
    try:
        yield
    finally:
        _RUN.reset(token)
    _commit(run)


def _commit(run: _Run) -> None:
    """Write the run's files (stdout flushed first, so that a full disk there leaves no file), then its 'wrote' lines."""
    if run.files:
        sys.stdout.flush()
        staged = _stage(run.files)
        _replace_all(staged, run.started)
    for line in run.notes:
        print(line)
    if run.notes:
        sys.stdout.flush()  # a full disk under stdout shows here, in the run, not at exit


def _file_mode(path: Path) -> int:
    """An existing file keeps its mode; a new one gets 0666 less the umask, as open() would give it."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _cannot(path: Path, exc: OSError) -> CollsimError:
    return CollsimError(f"output: cannot write {str(path)!r}: {exc.strerror or exc}; expected a writable file path with "
                        "room for it")


def _stage(files: Mapping[Path, str | bytes]) -> list[tuple[str, Path]]:
    """Each text in a temporary file beside its target (a symlink's target); on any error none is left."""
    staged: list[tuple[str, Path]] = []
    path = None
    try:
        for path, text in files.items():
            target = Path(os.path.realpath(path))
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
            staged.append((tmp, target))
            with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, _file_mode(target))
    except OSError as exc:
        _discard(staged)
        raise _cannot(path, exc) from None
    except BaseException:
        _discard(staged)
        raise
    return staged


def _replace_all(staged: list[tuple[str, Path]], started: Mapping[Path, tuple[str, str, Fingerprint]]) -> None:
    """Move every staged file onto its target, under a lock on each target's directory, unless a target checked at the
    start has changed since (another run wrote it): then none is moved and the error names it."""
    path = None
    try:
        with ExitStack() as locks:
            for directory in sorted({target.parent for _, target in staged}):
                locks.enter_context(_locked(directory))
            _refuse_changed(staged, started)
            for tmp, path in staged:
                os.replace(tmp, path)
    except OSError as exc:
        _discard(staged)
        raise _cannot(path, exc) from None
    except BaseException:
        _discard(staged)
        raise


def _refuse_changed(staged: list[tuple[str, Path]], started: Mapping[Path, tuple[str, str, Fingerprint]]) -> None:
    for _, target in staged:
        if target in started and _fingerprint(target) != started[target][2]:
            name, given, _ = started[target]
            raise CollsimError(f"{name}: {given!r} was changed by another process while this run worked; not overwritten "
                               "and no output file written; expected an output file no other run writes meanwhile "
                               "(run again, or give another path)")


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """An exclusive lock on `directory` (flock on the directory itself: no lock file is left behind)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: the change check still runs, without the lock
        yield
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _discard(staged: list[tuple[str, Path]]) -> None:
    for tmp, _ in staged:
        Path(tmp).unlink(missing_ok=True)
