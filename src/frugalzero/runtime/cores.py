"""How many cores this process may use: the default size of every pool of workers and threads."""

from __future__ import annotations

import os


def available_cores() -> int:
    """Cores this process may run on (its affinity mask, which containers and ``taskset``
    narrow), not the machine's count; at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
