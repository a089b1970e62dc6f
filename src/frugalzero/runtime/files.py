"""Atomic file writes: a reader (or a run resumed after ``kill -9``) sees the old file or the
whole new one, never a part. Every file we write whole goes through here."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from frugalzero.errors import file_error


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
