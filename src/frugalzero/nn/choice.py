"""Which shipped net plays under a clock on this machine: the one that is stronger here, not the
one that is stronger at equal nodes.

``medium`` (``net:default``'s first file; the file shipped now rates within its noise) is the
stronger net at equal nodes: 2703 on the ladder at 400 nodes a move against ``small``'s 2539,
164 Elo. A node of it costs more, how much more depends on
the machine: on the 2-core CPU the UCI engine searched 1,540 nodes/s with ``medium`` and 3,972 with
``small`` (0.39 of them), and under 10+0.1 ``small`` won the head-to-head by +117 Elo (40 games,
[32, 219]). So 2.58 times the nodes were worth 164 + 117 = 281 Elo, 206 Elo per doubling of the
nodes at these node counts, and ``medium`` is the stronger player under a clock where its nodes
per second are at least 2^(-164/206) = 0.58 of ``small``'s. The engine measures that ratio once
per machine (the bare nets at the engine's batch and threads, ~2 s) and keeps it in a cache file.
The rule stands on one clocked head-to-head; ``--net`` overrides it.
"""

from __future__ import annotations

import json
import os
import platform
from dataclasses import dataclass
from pathlib import Path

from frugalzero.nn.shipped import resolve_net_path

EQUAL_NODES_ELO = 164.0  # medium over small, ladder ratings at 400 nodes a move
ELO_PER_DOUBLING = 206.0  # nodes' worth at 10+0.1 on the 2-core CPU (see the module docstring)
THRESHOLD = 2.0 ** (-EQUAL_NODES_ELO / ELO_PER_DOUBLING)  # 0.576
CACHE_FILE = "net-speed.json"


@dataclass(frozen=True)
class Choice:
    """The net to play under a clock and why: both nets' positions/s on this machine."""

    net: str  # "medium" or "small"
    medium_per_s: float
    small_per_s: float
    cached: bool  # read from the cache file, not measured now

    @property
    def ratio(self) -> float:
        return self.medium_per_s / self.small_per_s if self.small_per_s > 0 else 0.0

    def describe(self) -> str:
        source = "measured once on this machine" if self.cached else "measured now"
        return (
            f"net {self.net}: medium runs {self.ratio:.2f} of small's positions/s here "
            f"({source}); medium plays under a clock from {THRESHOLD:.2f} (--net overrides)"
        )


def pick(medium_per_s: float, small_per_s: float) -> str:
    """The rule: ``medium`` where its speed is at least ``THRESHOLD`` of ``small``'s."""
    return "medium" if medium_per_s >= THRESHOLD * small_per_s else "small"


def cache_dir() -> Path:
    """``$FRUGALZERO_CACHE``, else ``$XDG_CACHE_HOME/frugalzero``, else ~/.cache/frugalzero."""
    explicit = os.environ.get("FRUGALZERO_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "frugalzero"


def machine_key(device: str, threads: int, batch: int) -> str:
    """What a measurement holds for: the device, the engine's layout and the two net files."""
    import torch

    if device.startswith("cuda"):
        name = torch.cuda.get_device_name(torch.device(device))
    else:
        name = _cpu_name()
    files = []
    for net in ("medium", "small"):
        stat = resolve_net_path(net).stat()
        files.append(f"{stat.st_size}:{stat.st_mtime_ns}")
    return f"{name}|{device}|threads {threads}|batch {batch}|torch {torch.__version__}|" + ",".join(
        files
    )


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return f"{line.split(':', 1)[1].strip()} x{os.cpu_count()}"
    except OSError:
        pass
    return f"{platform.machine()} {platform.processor()} x{os.cpu_count()}".strip()


def read_cache(path: Path) -> dict[str, dict[str, float]]:
    """The cache's entries; an unreadable or damaged file counts as empty (it is only a cache,
    rewritten after the next measurement)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    entries = {}
    for key, value in data.items():
        if isinstance(value, dict):
            speeds = {k: value.get(k) for k in ("medium", "small")}
            if all(isinstance(v, int | float) and v > 0 for v in speeds.values()):
                entries[key] = {k: float(v) for k, v in speeds.items()}
    return entries


def clock_net(device: str, threads: int, batch: int, config) -> Choice:
    """The shipped net to play under a clock here, from the cache or measured now (and then
    cached). ``config`` is the engine's ``EvaluatorConfig``: the nets are timed as it runs them."""
    from frugalzero.runtime.files import atomic_write_text

    key = machine_key(device, threads, batch)
    path = cache_dir() / CACHE_FILE
    entries = read_cache(path)
    if key in entries:
        return _choice(entries[key], cached=True)
    speeds = {net: _positions_per_s(net, config, threads, batch) for net in ("medium", "small")}
    entries[key] = speeds
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(entries, indent=1) + "\n")
    except OSError:  # a read-only home still plays; it measures again next time
        pass
    return _choice(speeds, cached=False)


def _choice(speeds: dict[str, float], cached: bool) -> Choice:
    medium, small = speeds["medium"], speeds["small"]
    return Choice(pick(medium, small), medium, small, cached)


def _positions_per_s(net_name: str, config, threads: int, batch: int) -> float:
    from frugalzero.nn.checkpoint import load_net
    from frugalzero.nn.throughput import BareNet

    net, _ = load_net(resolve_net_path(net_name))
    return BareNet(net, config, threads, batch, compiled=False).positions_per_s()
