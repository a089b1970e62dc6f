"""Names of the shared-memory segments this code creates, which say who owns them, so that the
segments of an owner that died without removing them (an engine killed whole, with its
resource tracker) are removed by the next process that creates one.

A name is ``fz-<pid>-<start>-<random>`` (hexadecimal): the creating process's id and its start
time (``/proc/<pid>/stat``, so that a reused pid is not taken for the dead owner), 29
characters at most (macOS allows 31). A segment whose owner is gone, or whose pid now belongs
to a process started at another time, is stale. The sweep reads ``/dev/shm`` (Linux); where
there is none, names still carry their owner and nothing is swept."""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

PREFIX = "fz-"
SHM_DIR = Path("/dev/shm")
_NAME = re.compile(r"fz-([0-9a-f]+)-([0-9a-f]+)-[0-9a-f]+")
_swept = False


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot; 0 where the system does not say), or None
    when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:  # no /proc (not Linux): alive as far as one can tell
        return 0
    # the command name (field 2) may hold spaces and parentheses: count after its last ')'
    return int(stat.rsplit(")", 1)[1].split()[19])


def segment_name() -> str:
    """A new segment's name, owned by this process; the first call in a process removes the
    stale segments first."""
    global _swept
    if not _swept:
        _swept = True
        remove_stale()
    pid = os.getpid()
    return f"{PREFIX}{pid:x}-{start_time(pid) or 0:x}-{secrets.token_hex(4)}"


def stale(name: str) -> bool:
    """Whether ``name`` is one of our segments whose owner is gone."""
    found = _NAME.fullmatch(name)
    if found is None:
        return False
    pid, started = int(found[1], 16), int(found[2], 16)
    now = start_time(pid)
    return now is None or (started != 0 and now not in (0, started))


def remove_stale(directory: Path = SHM_DIR) -> list[str]:
    """Remove the stale segments (a removed segment stays mapped where it still is); the
    names removed."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    removed = []
    for name in names:
        if stale(name):
            try:
                (directory / name).unlink()
            except OSError:  # gone meanwhile, or another user's
                continue
            removed.append(name)
    return removed
