"""Atomic file writes: a reader (or a run resumed after ``kill -9``) sees the old file or the
whole new one, never a part. Every file we write whole goes through here."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from frugalzero.errors import file_error
from frugalzero.layout import refuse_run_files


def atomic_write_bytes(path: str | Path, data: bytes, *, replace: bool = True) -> Path:
    """Write ``data`` to a hidden temp file beside ``path``, fsync it, then give it its name.

    ``replace=False`` claims the name with a hard link instead of a rename, so an existing file
    is never overwritten (FileExistsError): writers that race for the same name lose nothing.
    Any other OSError (no space, read-only, no permission) is marked as writing ``path``.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except FileExistsError as exc:  # a file where a directory should be
        raise file_error(exc, "create the directory", path.parent) from None
    except OSError as exc:
        raise file_error(exc, "write", path) from None
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide shared files from other users
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            _link_new(tmp, path)
    except FileExistsError:
        Path(tmp).unlink(missing_ok=True)
        raise
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise file_error(exc, "write", path) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | Path, text: str, *, replace: bool = True) -> Path:
    """``atomic_write_bytes`` of ``text`` as UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8"), replace=replace)


def _link_new(tmp: str, path: Path) -> None:
    """Name the written temp file ``path`` only if that name is free, then drop the temp name."""
    try:
        os.link(tmp, path)
    except (PermissionError, NotImplementedError):  # file systems without hard links
        if path.exists():
            raise FileExistsError(path) from None
        os.replace(tmp, path)
        return
    Path(tmp).unlink()


def check_destination(path: str | Path) -> Path:
    """``path``, a file a command writes when its work is done, checked before the work (an
    export or a match that runs for minutes, then cannot write, has wasted them): not a run's
    own file (``layout.refuse_run_files``), not a directory, and in a directory that exists or
    can be made and takes a new file (a probe file, removed at once). A refusal is the
    OSError ``atomic_write_bytes`` would raise, marked the same way."""
    path = Path(path)
    refuse_run_files(path)
    if path.is_dir():
        raise file_error(_os_error(errno.EISDIR, path), "write", path)
    folder = path.parent
    while not folder.exists() and folder != folder.parent:  # made when the file is written
        folder = folder.parent
    if not folder.is_dir():
        raise file_error(_os_error(errno.ENOTDIR, folder), "create the directory", path.parent)
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise file_error(exc, "write", path) from None
    os.close(fd)
    os.unlink(probe)
    return path


def _os_error(code: int, path: Path) -> OSError:
    return OSError(code, os.strerror(code), str(path))
