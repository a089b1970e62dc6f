"""How much memory this machine (or its container) has, and how much a process holds: what the
UCI engine's ``RamLimitMb`` default is taken from, and what tests of that limit measure."""

from __future__ import annotations

import os
from pathlib import Path

MB = 1 << 20


def machine_memory() -> int:
    """Bytes of physical memory this process may use: the machine's, or less where a cgroup
    (a container) caps it."""
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    for limit_file in (
        "/sys/fs/cgroup/memory.max",  # cgroup v2
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",  # cgroup v1 ("no limit" is a huge number)
    ):
        try:
            text = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def resident_bytes(pid: int | None = None) -> int:
    """Bytes of ``pid`` (this process by default) in physical memory: its RSS, as Linux
    counts it (``/proc/PID/statm``)."""
    fields = Path(f"/proc/{pid or os.getpid()}/statm").read_text().split()
    return int(fields[1]) * os.sysconf("SC_PAGE_SIZE")
