"""What plays under a clock on this machine: the shipped net, and the precision, that are
stronger here, not those that are stronger at equal nodes. Both are measured once per machine
(the networks' own positions/s, as the engine runs them) and kept in a cache file.

**The net.**
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

**The precision** (``Precision`` ``auto`` in the engine). int8 (``nn.quantize``) runs the net
faster on CPUs with int8 dot products and plays about as well at equal nodes; by the same
worth of a doubling, int8 is the stronger player where its positions/s are at least
2^(``INT8_EQUAL_NODES_ELO``/206) of the float net's (bf16 or fp32, what ``auto`` is otherwise).
Timing int8 needs its package compiled (16-85 s of a core, once per machine and net), so the
engine plays the float net until a niced process of its own (``probe_precision``) has
compiled and timed both, then switches between searches; later starts read the cache.
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
INT8_EQUAL_NODES_ELO = 8.7
"""The float net's edge over int8 at 400 nodes a move: ``small`` bf16 against int8, 200 games,
+81 =43 −76, 8.7 Elo [−29, +47] (benchmarks/results/int8/match-small-400.*), the larger of the
two shipped nets' (``medium``'s int8 won, +70 =69 −61); under 5+0.05 on one core each, int8 won
+200 [+159, +248] with 1.58x the nodes. The bar is then 1.03x."""
INT8_THRESHOLD = 2.0 ** (INT8_EQUAL_NODES_ELO / ELO_PER_DOUBLING)
PRECISION_CACHE_FILE = "precision-speed.json"
PRECISION_ROUNDS = 3  # int8 and the float net timed in turn, each round's best kept


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
    """The net choice's entries (``_read_speeds``)."""
    return _read_speeds(path, ("medium", "small"))


def _read_speeds(path: Path, names: tuple[str, str]) -> dict[str, dict[str, float]]:
    """A cache file's entries: key -> positions/s of each of ``names``. An unreadable or
    damaged file, or an entry without two positive speeds, counts as none (it is only a cache,
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
            speeds = {k: value.get(k) for k in names}
            if all(isinstance(v, int | float) and v > 0 for v in speeds.values()):
                entries[key] = {k: float(v) for k, v in speeds.items()}
    return entries


def _write_speeds(path: Path, entries: dict[str, dict[str, float]]) -> None:
    """The cache file, whole or not at all; a home that cannot be written still plays (it
    measures again next time)."""
    from frugalzero.runtime.files import atomic_write_text

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(entries, indent=1) + "\n")
    except OSError:
        pass


def clock_net(device: str, threads: int, batch: int, config) -> Choice:
    """The shipped net to play under a clock here, from the cache or measured now (and then
    cached). ``config`` is the engine's ``EvaluatorConfig``: the nets are timed as it runs them."""
    key = machine_key(device, threads, batch)
    path = cache_dir() / CACHE_FILE
    entries = read_cache(path)
    if key in entries:
        return _choice(entries[key], cached=True)
    speeds = {net: _positions_per_s(net, config, threads, batch) for net in ("medium", "small")}
    entries[key] = speeds
    _write_speeds(path, entries)
    return _choice(speeds, cached=False)


def _choice(speeds: dict[str, float], cached: bool) -> Choice:
    medium, small = speeds["medium"], speeds["small"]
    return Choice(pick(medium, small), medium, small, cached)


def _positions_per_s(net_name: str, config, threads: int, batch: int) -> float:
    from frugalzero.nn.checkpoint import load_net
    from frugalzero.nn.throughput import BareNet

    net, _ = load_net(resolve_net_path(net_name))
    return BareNet(net, config, threads, batch, compiled=False).positions_per_s()


@dataclass(frozen=True)
class PrecisionChoice:
    """The precision to play under a clock and why: int8's and the float net's positions/s."""

    precision: str  # "int8", or the float precision ``auto`` means here ("bf16", "fp32")
    int8_per_s: float
    float_per_s: float
    float_precision: str
    cached: bool

    @property
    def ratio(self) -> float:
        return self.int8_per_s / self.float_per_s if self.float_per_s > 0 else 0.0

    def describe(self) -> str:
        source = "measured once on this machine" if self.cached else "measured now"
        return (
            f"precision {self.precision}: int8 runs {self.ratio:.2f}x {self.float_precision}'s "
            f"positions/s here ({source}); int8 plays under a clock from {INT8_THRESHOLD:.2f}x "
            "(Precision overrides)"
        )


def pick_precision(int8_per_s: float, float_per_s: float, float_precision: str) -> str:
    """The rule: int8 where it runs at least ``INT8_THRESHOLD`` times the float net's speed."""
    return "int8" if int8_per_s >= INT8_THRESHOLD * float_per_s else float_precision


def precision_key(net_path: Path, threads: int, batch: int) -> str:
    """What a precision measurement holds for: the CPU (model and instruction sets), the
    engine's layout, the net file, and the torch and torchao that quantize and run it."""
    import torch

    from frugalzero.nn.int8_backend import torchao_version
    from frugalzero.nn.int8_cache import cpu_kind

    stat = net_path.stat()
    return (
        f"{cpu_kind()} x{os.cpu_count()}|threads {threads}|batch {batch}|torch "
        f"{torch.__version__}|torchao {torchao_version()}|{net_path.name}:{stat.st_size}:"
        f"{stat.st_mtime_ns}"
    )


def cached_precision(net_path: Path, threads: int, batch: int) -> PrecisionChoice | None:
    """The precision to play ``net_path`` with here, if it was measured before."""
    from frugalzero.runtime.device import resolve_precision

    entry = _precision_entries().get(precision_key(net_path, threads, batch))
    if entry is None:
        return None
    float_precision, _ = resolve_precision("auto", _cpu())
    return _precision_choice(entry, float_precision, cached=True)


def _precision_choice(
    entry: dict[str, float], float_precision: str, cached: bool
) -> PrecisionChoice:
    int8, other = entry["int8"], entry["float"]
    return PrecisionChoice(
        pick_precision(int8, other, float_precision), int8, other, float_precision, cached
    )


def _precision_entries() -> dict[str, dict[str, float]]:
    return _read_speeds(cache_dir() / PRECISION_CACHE_FILE, ("int8", "float"))


def measure_precision(net_path: Path, threads: int, batch: int) -> PrecisionChoice:
    """Time int8 (its package compiled now if the machine has none) against the float net
    ``auto`` means here, in turn, as the engine runs them; cache the figures and say which
    plays. Needs torchao the first time a net is quantized (a package cached before loads
    without it)."""
    from frugalzero.nn.checkpoint import load_net
    from frugalzero.nn.evaluator import EvaluatorConfig
    from frugalzero.nn.throughput import BareNet
    from frugalzero.runtime.device import resolve_precision

    float_precision, _ = resolve_precision("auto", _cpu())
    net, _ = load_net(net_path)
    runs = {
        name: BareNet(
            net,
            EvaluatorConfig(precision=name, compile="on" if compiled else "off"),
            threads,
            batch,
            compiled,
        )
        for name, compiled in (("int8", True), (float_precision, False))
    }
    best = dict.fromkeys(runs, 0.0)
    for _ in range(PRECISION_ROUNDS):
        for name, run in runs.items():
            best[name] = max(best[name], run.positions_per_s())
    entry = {"int8": best["int8"], "float": best[float_precision]}
    entries = _precision_entries()
    entries[precision_key(net_path, threads, batch)] = entry
    _write_speeds(cache_dir() / PRECISION_CACHE_FILE, entries)
    return _precision_choice(entry, float_precision, cached=False)


def probe_precision(net_path: Path, threads: int, batch: int):
    """``measure_precision`` in a process of its own at the lowest priority, so that neither
    the compile nor the timing slows the engine's searches (nor holds its interpreter): the
    started ``subprocess.Popen``; it prints the choice's line and caches the figures."""
    import subprocess
    import sys

    command = [
        sys.executable,
        "-m",
        "frugalzero.nn.choice",
        str(net_path),
        str(threads),
        str(batch),
    ]
    return subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _cpu():
    import torch

    return torch.device("cpu")


if __name__ == "__main__":  # probe_precision's process: niced first (no preexec_fn: threads)
    import sys

    os.nice(19)
    _path, _threads, _batch = sys.argv[1:4]
    print(measure_precision(Path(_path), int(_threads), int(_batch)).describe(), flush=True)
