"""A fuzz run: sessions of an engine under the fuzzer until enough commands are sent; each
failure with its seed and the commands that reproduce it on a fresh engine, shrunk to the
fewest that still fail (``FuzzSettings.shrink_tries``)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from frugalzero.uci.fuzz.commands import CALM, Fuzzer
from frugalzero.uci.fuzz.driver import Bounds, Session, SessionFailed
from frugalzero.uci.fuzz.oracle import Failure
from frugalzero.uci.fuzz.steps import Action, EngineOption, Sequence


@dataclass(frozen=True)
class FuzzSettings:
    command: list[str]
    """The engine (``frugalzero uci --net small`` for the real one)."""
    seed: int
    commands: int
    """Commands to send in all (the run ends with the session that reaches them)."""
    session_commands: int = 5_000
    """Commands per engine process before its ``quit`` or end of input (then a fresh one)."""
    ram_limit_mb: int = 512
    """``RamLimitMb`` set on the engine where it lists it; the RSS limit builds on it."""
    bounds: Bounds = Bounds()
    max_failures: int = 1
    """Failures before the run stops (each costs its engine; the next session is fresh)."""
    shrink_tries: int = 0
    """Fresh engines a failure's commands may be replayed on to shrink them."""
    env: dict[str, str] | None = None


@dataclass
class FuzzReport:
    """A fuzz run's figures and failures."""

    seed: int
    commands: int = 0
    sequences: int = 0
    sessions: int = 0
    gos: int = 0
    bestmoves: int = 0
    missing: int = 0
    extra: int = 0
    isready: int = 0
    readyok_max_s: float = 0.0
    ram_limit_mb: int | None = None
    """``RamLimitMb`` as set (None: the engine lists no such option)."""
    rss_baseline_mb: float = 0.0
    rss_peak_mb: float = 0.0
    rss_limit_mb: float = 0.0
    seconds: float = 0.0
    failures: list[dict] = field(default_factory=list)

    def add(self, session: Session) -> None:
        """Count a finished (or failed) session in; the memory figures are those of the
        session that came nearest its limit."""
        oracle = session.oracle
        self.sessions += 1
        self.commands += session.commands
        self.gos += oracle.gos
        self.bestmoves += oracle.bestmoves
        self.missing += session.missing
        self.extra += oracle.extra
        self.isready += session.readies
        self.readyok_max_s = max(self.readyok_max_s, session.ready_max_s)
        peak, limit = session.engine.rss_peak_mb, session.limit_mb
        if limit != float("inf") and peak / limit >= self.rss_peak_mb / max(self.rss_limit_mb, 1):
            self.rss_peak_mb, self.rss_limit_mb = peak, limit
            self.rss_baseline_mb = session.baseline_mb

    def as_dict(self) -> dict:
        out = asdict(self)
        for key in ("rss_baseline_mb", "rss_peak_mb", "rss_limit_mb", "seconds"):
            out[key] = round(out[key], 1)
        out["readyok_max_s"] = round(out["readyok_max_s"], 3)
        return out


def fuzz(settings: FuzzSettings, progress: Callable[[int], None] | None = None) -> FuzzReport:
    """Run the fuzzer; ``progress`` gets the commands sent so far after every sequence."""
    report = FuzzReport(settings.seed)
    started = time.monotonic()
    number = 0
    while report.commands < settings.commands and len(report.failures) < settings.max_failures:
        failed = _session(settings, f"{settings.seed}.{number}", report, progress)
        number += 1
        if failed is not None:  # its engine is gone: shrinking starts fresh ones
            report.failures.append(_failure(settings, failed))
    report.seconds = time.monotonic() - started
    return report


@dataclass
class _Failed:
    """A failed session: the failure, and what the fuzzer had sent (to replay it)."""

    failure: Failure
    seed: str
    fuzzer: Fuzzer | None
    prefix: Sequence | None
    sequence: Sequence | None
    engine_said: list[str]


def _session(
    settings: FuzzSettings, seed: str, report: FuzzReport, progress: Callable[[int], None] | None
) -> _Failed | None:
    """One engine process from ``uci`` to its end, counted into ``report``."""
    session = Session(settings.command, settings.bounds, settings.env)
    fuzzer: Fuzzer | None = None
    prefix = sequence = None
    try:
        options = session.start()
        fuzzer = Fuzzer(seed, options, _calm(options, settings.ram_limit_mb))
        limit = settings.ram_limit_mb if _ram_option(options) else None
        report.ram_limit_mb = limit
        session.open(fuzzer.opening(), limit)
        budget = min(settings.session_commands, settings.commands - report.commands)
        while session.commands < budget:
            prefix, sequence = fuzzer.replay(), fuzzer.sequence()
            session.run(sequence)
            report.sequences += 1
            if progress is not None:
                progress(report.commands + session.commands)
        prefix, sequence = fuzzer.replay(), fuzzer.ending()
        session.run(sequence)
    except SessionFailed as failed:
        return _Failed(failed.failure, seed, fuzzer, prefix, sequence, list(session.recent))
    finally:
        session.close()
        report.add(session)
    return None


def _ram_option(options: list[EngineOption]) -> EngineOption | None:
    return next((o for o in options if o.name.lower() == "ramlimitmb"), None)


def _calm(options: list[EngineOption], ram_limit_mb: int) -> dict[str, str]:
    return {**CALM, "ramlimitmb": str(ram_limit_mb)} if _ram_option(options) else dict(CALM)


def _failure(settings: FuzzSettings, failed: _Failed) -> dict:
    """A failure as reported: what, the seed and sequence number, the commands that lead to
    it from a fresh engine (after ``uci`` and ``isready``), those shrunk, and the engine's
    last lines."""
    failure = failed.failure
    out: dict = {"kind": failure.kind, "detail": failure.detail, "seed": failed.seed}
    fuzzer, sequence = failed.fuzzer, failed.sequence
    if fuzzer is not None and sequence is not None:
        opening = Fuzzer(failed.seed, fuzzer.options, fuzzer.calm).opening()
        actions = (failed.prefix.actions if failed.prefix else []) + sequence.actions
        out["sequence"] = sequence.number
        out["commands"] = ["uci", "isready", *opening.lines(), *Sequence(-1, actions).lines()]
        if settings.shrink_tries > 0:
            shrunk, reproduced = shrink(settings, opening, actions, failure.kind)
            out["reproduced"] = reproduced
            if reproduced:
                out["shrunk"] = ["uci", "isready", *opening.lines(), *Sequence(-1, shrunk).lines()]
    out["engine_said"] = failed.engine_said
    return out


def shrink(
    settings: FuzzSettings, opening: Sequence, actions: list[Action], kind: str
) -> tuple[list[Action], bool]:
    """The fewest of ``actions`` that still fail the same way (``kind``) on a fresh engine,
    and whether they failed at all when replayed. A failed ``bestmove``'s legality is judged
    on the whole replay only: leaving a position out changes what is legal."""

    def fails(candidate: list[Action]) -> bool:
        if kind != "illegal":
            candidate = [
                tuple(dataclasses.replace(s, moves=None) for s in action) for action in candidate
            ]
        session = Session(settings.command, settings.bounds, settings.env)
        try:
            options = session.start()
            session.open(opening, settings.ram_limit_mb if _ram_option(options) else None)
            session.run(Sequence(-1, candidate))
        except SessionFailed as failed:
            return failed.failure.kind == kind
        finally:
            session.close()
        return False

    if not fails(actions):
        return actions, False
    if kind == "illegal":
        return actions, True
    return smallest(actions, fails, settings.shrink_tries - 1), True


def smallest(items: list, fails: Callable[[list], bool], tries: int) -> list:
    """The fewest of ``items`` for which ``fails`` still holds (it holds for all of them),
    asking it at most ``tries`` times: chunks left out, the biggest first (delta debugging
    without its complements)."""
    chunk = max(1, len(items) // 2)
    while chunk >= 1 and tries > 0:
        start = 0
        while start < len(items) and tries > 0:
            candidate = items[:start] + items[start + chunk :]
            tries -= 1
            if candidate and fails(candidate):
                items = candidate
            else:
                start += chunk
        chunk //= 2
    return items
