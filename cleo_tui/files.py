"""Writing files the user names (exports): never over a brain, a device or a directory.

Every file cleo-tui writes at a path the user typed goes through
`write_export_atomically`: the target is checked first (`check_export_target`),
the text is written beside it and renamed into place, so a failed write never
leaves half a file. A symlink is written through (its target is replaced, the
link stays) and an existing file keeps its mode.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TypeVar

from cleo_tui.brain.errors import BrainError
from cleo_tui.safe_text import one_line

T = TypeVar("T")
SQLITE_MAGIC = b"SQLite format 3\x00"
SIDE_SUFFIXES = ("", "-wal", "-shm", "-journal")


class ExportRefused(BrainError):
    """The export target is a brain, a SQLite file, a device, a directory ..."""


class ExportExists(ExportRefused):
    """The target is an ordinary file and replacing it was not confirmed (`--force`)."""


@dataclass(frozen=True)
class ExportTarget:
    """Where the bytes will land: `real` is `path` with symlinks followed."""

    path: Path
    real: Path
    exists: bool
    mode: int | None  # the existing file's permission bits, kept on replace


def _shown(path: Path | str) -> str:
    return one_line(str(path), 200)


def _real(path: Path) -> Path:
    """`path` with every symlink followed; a loop or an unreadable link is refused."""
    try:
        return Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        return Path(os.path.realpath(path))  # a new file (or a dangling link's target)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ExportRefused(f"{_shown(path)} is a symlink loop; choose another file name.") from None
        raise ExportRefused(f"{_shown(path)} cannot be used ({exc.strerror or exc}); choose another "
                            "file name.") from None


def _brain_files(brain_path: Path | str | None) -> set[str]:
    if brain_path is None:
        return set()
    real = os.path.realpath(brain_path)
    return {real + suffix for suffix in SIDE_SUFFIXES}


def check_export_target(path: Path | str, brain_path: Path | str | None = None,
                        force: bool = False) -> ExportTarget:
    """Refuse a target that must never be overwritten; refuse an existing file unless `force`.

    Refused always: the open brain and its -wal/-shm/-journal, any SQLite
    database, and anything that is not a regular file (directory, device, FIFO,
    socket). An existing regular file needs `force` (the CLI's --force, the
    TUI's confirmation).
    """
    target = Path(path).expanduser()
    real = _real(target)
    if str(real) in _brain_files(brain_path):
        raise ExportRefused(f"{_shown(target)} is the open brain (or one of its -wal/-shm files); "
                            "nothing was written. Choose another file name.")
    try:
        info = os.stat(real)
    except FileNotFoundError:
        if not real.parent.is_dir():
            raise ExportRefused(f"Cannot write {_shown(target)}: its folder does not exist, so the file "
                                 "could not be written. Choose another place.") from None
        return ExportTarget(target, real, False, None)
    except OSError as exc:
        raise ExportRefused(f"{_shown(target)} cannot be used ({exc.strerror or exc}); nothing was written.") from None
    if stat.S_ISDIR(info.st_mode):
        raise ExportRefused(f"{_shown(target)} is a directory; give the name of a file in it.")
    if not stat.S_ISREG(info.st_mode):
        raise ExportRefused(f"{_shown(target)} is not a regular file (a device, FIFO or socket); "
                            "nothing was written. Choose another file name.")
    if _is_sqlite(real):
        raise ExportRefused(f"{_shown(target)} is a SQLite database (a brain?); cleo-tui never "
                            "overwrites one. Choose another file name.")
    if not force:
        raise ExportExists(f"{_shown(target)} already exists; nothing was written. Pass --force to "
                           "replace it, or choose another file name.")
    return ExportTarget(target, real, True, stat.S_IMODE(info.st_mode))


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_export_atomically(path: Path | str, write: Callable[[IO[str]], T],
                            brain_path: Path | str | None = None, force: bool = False) -> T:
    """Check the target, let `write` fill a temporary file beside it, rename it into place.

    Returns what `write` returned. Raises ExportRefused / ExportExists before
    anything is written, or BrainError when the folder cannot take the file.
    """
    target = check_export_target(path, brain_path, force)
    try:
        handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=target.real.parent,
                                             prefix=f".{target.real.name}.", suffix=".tmp", delete=False)
    except OSError as exc:
        raise BrainError(f"Cannot write {_shown(target.path)}: {exc.strerror or exc}. Choose another place.") from None
    try:
        with handle:
            result = write(handle)
        os.chmod(handle.name, target.mode if target.mode is not None else _default_mode())
        check_export_target(target.real, brain_path, force=True)  # still not a brain or a device
        os.replace(handle.name, target.real)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
    return result
