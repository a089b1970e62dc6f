"""Engines named by one string, so every strength claim says exactly what played.

Grammar: ``KIND[:PATH][?key=value&key=value...]``. The kinds:

- ``net:PATH`` (``net:default``, ``net:small`` = the shipped nets): our network with our search;
  ``nodes=1`` plays the raw policy. Other keys are search and evaluator settings
  (``precision=int8``). Under a clock (``tc``) the net plays through ``frugalzero uci``
  instead, as GUI users meet it, and its other keys are that engine's UCI options, an
  evaluator setting by the same name as under a node limit (``precision=int8`` sets
  ``Precision``: ``_net_option``).
- ``stockfish``: Debian's Stockfish 15.1; ``elo`` (1350-2850) sets UCI_LimitStrength and
  UCI_Elo, ``skill`` (0-20) the Skill Level.
- ``fairy``: Debian's Fairy-Stockfish, whose ``skill`` goes down to -20 (far below Stockfish's
  weakest setting).
- ``glaurung``: Debian's Glaurung 2.2, the calibration anchor.
- ``uci:PATH``: any UCI engine; keys other than the limits are UCI options.
- ``random``: a uniformly random legal move.

Every UCI kind takes the search limits ``nodes``, ``depth`` and ``movetime`` (milliseconds),
and ``threads`` and ``hash`` (MB; default 1 thread, 16 MB). With no limit a UCI engine gets
``movetime=100``. Instead of a per-move limit, every kind but ``random`` takes a clock,
``tc=BASE+INC`` or ``tc=MOVES/BASE+INC`` in seconds (``frugalzero.evaluate.clock``). The
canonical name (sorted keys, the clock spelled one way) is what PGN headers and ratings use,
so the same engine always has the same name.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote

from frugalzero.errors import UserError
from frugalzero.evaluate.clock import TimeControl, parse_time_control
from frugalzero.runtime.interpreter import own_code_env

KINDS = ("net", "stockfish", "fairy", "glaurung", "uci", "random")
BINARIES = {
    "stockfish": "/usr/games/stockfish",
    "fairy": "/usr/games/fairy-stockfish",
    "glaurung": "/usr/games/glaurung",
}
APT_PACKAGE = {"stockfish": "stockfish", "fairy": "fairy-stockfish", "glaurung": "glaurung"}
LIMIT_KEYS = ("nodes", "depth", "movetime")
DEFAULT_MOVETIME_MS = 100
ELO_RANGE = (1350, 2850)
SKILL_RANGE = {"stockfish": (0, 20), "fairy": (-20, 20)}


@dataclass(frozen=True)
class EngineSpec:
    """A parsed engine string: what to run, with which options, under which limit."""

    kind: str
    """One of KINDS."""
    path: str = ""
    """Executable (UCI kinds) or network file (``net``); empty for ``random``."""
    options: dict[str, str | int | bool] = field(default_factory=dict)
    """UCI options sent once after start (name -> value)."""
    nodes: int | None = None
    """Search limit: nodes per move (UCI kinds and ``net``)."""
    depth: int | None = None
    """Search limit: plies per move (UCI kinds)."""
    movetime: int | None = None
    """Search limit: milliseconds per move (UCI kinds)."""
    tc: TimeControl | None = None
    """A clock for the whole game instead of a per-move limit (every kind but ``random``)."""
    params: dict[str, str] = field(default_factory=dict)
    """Remaining keys, as written: search settings of ``net``, ``seed`` of ``random``."""
    soft_options: tuple[str, ...] = ()
    """Options we set by default (Threads, Hash, OwnBook): skipped if the engine lacks them."""
    name: str = ""
    """Canonical spec string, used as the player's name."""

    @property
    def is_uci(self) -> bool:
        """Runs as a UCI process, one per game seat: the UCI kinds, and a net under a clock
        (``frugalzero uci``)."""
        return self.kind in ("stockfish", "fairy", "glaurung", "uci") or (
            self.kind == "net" and self.tc is not None
        )

    def limit_text(self) -> str:
        """The limit as PGN headers show it (``nodes=1000``, ``movetime=100``, ``tc=10+0.1``)."""
        parts = [f"{k}={getattr(self, k)}" for k in LIMIT_KEYS if getattr(self, k) is not None]
        if self.tc is not None:
            parts.append(f"tc={self.tc.text()}")
        return " ".join(parts) or "-"


def _split(text: str) -> tuple[str, str, dict[str, str]]:
    head, _, query = text.partition("?")
    kind, _, path = head.partition(":")
    kind = kind.strip().lower()
    pairs: dict[str, str] = {}
    for item in filter(None, query.split("&")):
        key, sep, value = item.partition("=")
        key = unquote(key).strip()
        if not sep or not key:
            raise UserError(f"engine {text!r}: expected key=value, got {item!r}")
        if key in pairs:
            raise UserError(f"engine {text!r}: {key!r} given twice")
        pairs[key] = unquote(value).strip()
    return kind, path.strip(), pairs


def _int(text: str, key: str, value: str, lo: int | None = None, hi: int | None = None) -> int:
    try:
        number = int(value)
    except ValueError:
        raise UserError(f"engine {text!r}: {key} must be an integer, not {value!r}") from None
    if (lo is not None and number < lo) or (hi is not None and number > hi):
        raise UserError(f"engine {text!r}: {key}={number} is outside {lo}..{hi}")
    return number


def _option_value(value: str) -> str | int | bool:
    low = value.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(value)
    except ValueError:
        return value


def canonical(kind: str, path: str, pairs: dict[str, str]) -> str:
    """``kind[:path][?k=v...]`` with keys sorted, so equal engines get equal names."""
    head = f"{kind}:{path}" if path else kind
    if not pairs:
        return head
    query = "&".join(
        f"{quote(k, safe=' ')}={quote(v, safe=' .-+/')}" for k, v in sorted(pairs.items())
    )
    return f"{head}?{query}"


def parse_spec(text: str) -> EngineSpec:
    """Parse an engine string; any mistake is a one-line UserError naming the engine."""
    kind, path, pairs = _split(text)
    if kind not in KINDS:
        raise UserError(f"engine {text!r}: unknown kind {kind!r} (known: {', '.join(KINDS)})")
    limits: dict[str, int] = {}
    for key in LIMIT_KEYS:
        if key in pairs and kind != "random":
            limits[key] = _int(text, key, pairs[key], 1)
    tc = _time_control(text, pairs, limits) if "tc" in pairs and kind != "random" else None
    if kind == "random":
        if path:
            raise UserError(f"engine {text!r}: random takes no path")
        unknown = sorted(set(pairs) - {"seed"})
        if unknown:
            raise UserError(f"engine {text!r}: unknown key {unknown[0]!r} (random knows: seed)")
        if "seed" in pairs:
            _int(text, "seed", pairs["seed"])
        return EngineSpec("random", params=dict(pairs), name=canonical(kind, "", pairs))
    if kind == "net":
        if not path:
            raise UserError(
                f"engine {text!r}: net needs a file, e.g. net:default or net:my.safetensors"
            )
        if tc is not None:  # played by ``frugalzero uci``: the other keys are its options
            options = {_net_option(k): _option_value(v) for k, v in pairs.items() if k != "tc"}
            return EngineSpec("net", path, options, tc=tc, name=canonical(kind, path, pairs))
        extra = {k: v for k, v in pairs.items() if k != "nodes"}
        unknown = sorted(set(pairs) & {"depth", "movetime"})
        if unknown:
            raise UserError(f"engine {text!r}: net engines are limited by nodes, not {unknown[0]}")
        return EngineSpec(
            "net", path, nodes=limits.get("nodes"), params=extra, name=canonical(kind, path, pairs)
        )
    return _uci_spec(text, kind, path, pairs, limits, tc)


def _net_option(key: str) -> str:
    """A ``net:`` key under a clock as the option of ``frugalzero uci`` it sets: an evaluator
    setting by the name it has under a node limit (``precision``, ``history_fill``,
    ``cache_size``, ``threads``) becomes its UCI option (``uci.searcher.EVALUATOR_OPTIONS``:
    ``Precision``, ``HistoryFill``, ...), so one key means one thing under both; any other key
    names an option itself."""
    from frugalzero.uci.searcher import EVALUATOR_OPTIONS

    return {field: name for name, (field, _) in EVALUATOR_OPTIONS.items()}.get(key, key)


def _time_control(text: str, pairs: dict[str, str], limits: dict[str, int]) -> TimeControl:
    """The spec's clock, spelled canonically in ``pairs``; one per-move limit with it is an
    error (an engine plays under a clock or a per-move limit, never both)."""
    if limits:
        raise UserError(
            f"engine {text!r}: tc (a clock) and {next(iter(limits))} (a per-move limit) "
            "exclude each other; give one"
        )
    try:
        tc = parse_time_control(pairs["tc"])
    except ValueError as exc:
        raise UserError(f"engine {text!r}: {exc}") from None
    pairs["tc"] = tc.text()
    return tc


def _uci_spec(
    text: str,
    kind: str,
    path: str,
    pairs: dict[str, str],
    limits: dict[str, int],
    tc: TimeControl | None,
) -> EngineSpec:
    options: dict[str, str | int | bool] = {
        "Threads": _int(text, "threads", pairs.get("threads", "1"), 1),
        "Hash": _int(text, "hash", pairs.get("hash", "16"), 1),
    }
    if kind == "glaurung":  # it defaults to 2 threads and an opening book
        options["OwnBook"] = False
    known = {"threads", "hash", "tc", *LIMIT_KEYS}
    if kind == "uci":
        if not path:
            raise UserError(f"engine {text!r}: uci needs an executable, e.g. uci:/usr/bin/engine")
        for key, value in pairs.items():
            if key not in known:
                options[key] = _option_value(value)
    else:
        if kind in SKILL_RANGE:
            known |= {"skill"}
            if "skill" in pairs:
                options["Skill Level"] = _int(text, "skill", pairs["skill"], *SKILL_RANGE[kind])
        if kind == "stockfish":
            known |= {"elo"}
            if "elo" in pairs and "skill" in pairs:
                raise UserError(
                    f"engine {text!r}: elo and skill set the same strength two ways "
                    "(UCI_Elo overrides Skill Level); give one"
                )
            if "elo" in pairs:
                options["UCI_LimitStrength"] = True
                options["UCI_Elo"] = _int(text, "elo", pairs["elo"], *ELO_RANGE)
        unknown = sorted(set(pairs) - known)
        if unknown:
            raise UserError(
                f"engine {text!r}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})"
            )
        path = path or BINARIES[kind]
    if not limits and tc is None:
        limits = {"movetime": DEFAULT_MOVETIME_MS}
    name_path = "" if kind != "uci" and path == BINARIES.get(kind) else path
    soft = tuple(k for k in ("Threads", "Hash", "OwnBook") if k.lower() not in pairs)
    name = canonical(kind, name_path, pairs)
    return EngineSpec(kind, path, options, params={}, soft_options=soft, name=name, tc=tc, **limits)


def check_executable(spec: EngineSpec) -> str:
    """The engine's executable, or a UserError saying how to install it."""
    path = spec.path
    found = shutil.which(path) if not Path(path).is_absolute() else path
    if found and Path(found).is_file():
        if not os.access(found, os.X_OK):  # its keeper could only fail to start it
            raise UserError(f"engine {spec.name!r}: {found!r} is not executable (chmod +x)")
        return found
    hint = ""
    if spec.kind in APT_PACKAGE:
        hint = f" (install it: sudo apt-get install {APT_PACKAGE[spec.kind]})"
    raise UserError(f"engine {spec.name!r}: executable {path!r} not found{hint}")


def net_file(spec: EngineSpec) -> Path:
    """The network file of a ``net:`` engine, or a UserError before anything starts."""
    from frugalzero.nn.shipped import resolve_net_path

    path = resolve_net_path(spec.path)
    if not path.is_file():
        raise UserError(f"engine {spec.name!r}: network file {path} not found")
    return path


def uci_command(spec: EngineSpec) -> tuple[list[str], dict[str, str] | None]:
    """(argv, environment or None to inherit) of a UCI seat. A net under a clock runs our own
    ``frugalzero uci`` on this interpreter with this code first on its path, so it is the
    installation that is running the match; its ``Precision`` ``auto`` is what the machine's
    cache says (``nn.choice``), never timed during the match (a compile beside its games)."""
    from frugalzero.nn.shipped import SHIPPED_NETS
    from frugalzero.uci.network import INT8_TIMING

    if spec.kind != "net":
        return [check_executable(spec)], None
    net = str(net_file(spec))
    if spec.path in SHIPPED_NETS:  # by name: 'default' is the engine's choice for this machine
        net = spec.path
    argv = [sys.executable, "-m", "frugalzero", "uci", "--net", net]
    return argv, {**own_code_env(), INT8_TIMING: "off"}
