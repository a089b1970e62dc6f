"""One writer per directory: every command that writes into a directory holds an ``flock`` on
a lock file there, so a second writer is refused at once, with the holder's pid, instead of
both finishing with interleaved metrics, matches played twice and configs overwritten.

The lock is the kernel's: it ends with the process that holds it (``kill -9`` included), so a
stale lock file never blocks anyone; the file itself stays, holding the last holder's pid.
"""

from __future__ import annotations

import fcntl
import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from frugalzero.errors import UserError
from frugalzero.layout import LOCK as LOCK_FILE
from frugalzero.layout import refuse_run_files


class DirectoryLock:
    """``with DirectoryLock(path):`` holds ``path``'s lock (creating the directory) or raises
    a UserError naming the process that holds it (or the run whose own folder ``path`` is:
    ``layout.refuse_run_files``)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.path = self.directory / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> DirectoryLock:
        refuse_run_files(self.directory)  # a writer into a run's own folder (its data/, nets/)
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            who = f"pid {holder}" if holder else "another process"
            raise UserError(
                f"{self.directory}: in use by another frugalzero command ({who}); wait for it "
                "to end, or write somewhere else"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = None

    def __enter__(self) -> DirectoryLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


_HELD: list[DirectoryLock] = []


def hold(directory: str | Path) -> Path:
    """Take ``directory``'s lock (creating it) for the rest of the command: a handler marked
    ``@holds_locks`` calls this where it starts writing, after checking its input, so a
    refused command leaves no directory behind."""
    _HELD.append(DirectoryLock(directory).acquire())
    return Path(directory)


def holds_locks(handler: Callable[[Any], int]) -> Callable[[Any], int]:
    """A command handler whose ``hold`` locks are released when it returns or raises."""

    @functools.wraps(handler)
    def run(args: Any) -> int:
        depth = len(_HELD)
        try:
            return handler(args)
        finally:
            while len(_HELD) > depth:
                _HELD.pop().release()

    return run


def _read_pid(fd: int) -> str:
    try:
        return os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
