"""An engine process driven by the fuzzer: its answers judged (``oracle``), its ``readyok``s and
``bestmove``s timed, its memory read, and every failure reported with the seed and the commands
that reproduce it.

A session is one engine process: the ``uci`` handshake, the fuzzer's opening (the calm values,
``RamLimitMb`` among them), sequences, and at the end ``quit`` or the end of input. After every
sequence the driver waits for every ``bestmove`` owed, asks ``isready``, and compares the peak
RSS of the engine and its children (the inference processes), sampled four times a second,
with the limit: the RSS the session had after its opening (once it stopped growing: inference
processes may still be starting) plus ``RamLimitMb`` plus a margin.
RSS counts the pages a child shares with its parent once in each; measured against the same
session's own start, that cancels out. The margin covers what no search limit bounds: the
Python heap, the allocator's slack."""

from __future__ import annotations

import os
import queue
import select
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from frugalzero.runtime.memory import MB, resident_bytes
from frugalzero.uci.fuzz.oracle import Failure, Oracle
from frugalzero.uci.fuzz.steps import EngineOption, Sequence, Step, parse_option

SETTLE_S = 1.0
SETTLE_MB = 24.0
"""The session's starting RSS is taken once it grows by less than this in ``SETTLE_S``."""


@dataclass(frozen=True)
class Bounds:
    """How long the driver waits, and the memory it allows."""

    ready_s: float = 1.0
    """``isready`` is answered within this (the issue's second)."""
    answer_s: float = 30.0
    """A ``go`` that ends soon, or one stopped, is answered within this; so long because a
    setting that restarts the inference processes (``Threads``) lands in the next search."""
    start_s: float = 300.0
    """``uciok`` and the first ``readyok``: the network loads (a cold disk, a loaded machine)."""
    exit_s: float = 30.0
    """The engine and its children are gone within this after ``quit`` or the end of input."""
    margin_mb: float = 256.0
    """RSS beyond the session's start and ``RamLimitMb`` that is still not a failure."""


def tree_pids(pid: int) -> list[int]:
    """``pid`` and its live descendants (from /proc; empty once ``pid`` is gone)."""
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        found.append(current)
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    stack += [int(child) for child in handle.read().split()]
            except OSError:
                continue
    return found


def rss_mb(pids: list[int]) -> float:
    """Resident memory of ``pids`` together (MB, each process's RSS; one gone counts 0)."""
    total = 0
    for pid in pids:
        try:
            total += resident_bytes(pid)
        except OSError:
            continue
    return total / MB


class EngineProcess:
    """The engine: lines written with a deadline (an engine that stops reading must not hang
    the fuzzer), lines read on a thread with the time they came, stderr's tail kept, RSS
    sampled."""

    def __init__(self, command: list[str], env: dict[str, str] | None) -> None:
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: deque[str] = deque(maxlen=20)
        self.rss_peak_mb = 0.0
        self.pids: list[int] = [self.proc.pid]
        os.set_blocking(self.proc.stdin.fileno(), False)
        self._done = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()
        threading.Thread(target=self._sample, daemon=True).start()

    def _read(self) -> None:
        for raw in self.proc.stdout:
            self.lines.put(raw.decode("utf-8", "replace").rstrip("\r\n"))
        self.lines.put(None)

    def _drain(self) -> None:
        for raw in self.proc.stderr:
            self.stderr.append(raw.decode("utf-8", "replace").rstrip())

    def _sample(self) -> None:
        while not self._done.wait(0.25):
            self.sample()

    def sample(self) -> float:
        pids = tree_pids(self.proc.pid)
        if pids:
            self.pids = pids
        now = rss_mb(pids)
        self.rss_peak_mb = max(self.rss_peak_mb, now)
        return now

    def write(self, line: str | None, timeout: float) -> bool:
        """Send ``line`` (None: close the input); False if the engine would not take it."""
        stdin = self.proc.stdin
        if line is None:
            try:
                stdin.close()
            except OSError:
                pass
            return True
        data = memoryview((line + "\n").encode("utf-8", "surrogateescape"))
        end = time.monotonic() + timeout
        while data:
            try:
                written = os.write(stdin.fileno(), data)
            except BlockingIOError:
                written = 0
            except OSError:
                return False
            data = data[written:]
            if data and not select.select([], [stdin], [], max(0.0, end - time.monotonic()))[1]:
                return False
        return True

    def stderr_tail(self) -> str:
        return " | ".join(list(self.stderr)[-5:])

    def kill(self) -> None:
        """Kill the engine and every process it started (by their ids, children first)."""
        self._done.set()
        for pid in reversed(tree_pids(self.proc.pid) or self.pids):
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass

    def close(self) -> None:
        self._done.set()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                pipe.close()
            except OSError:
                pass


class SessionFailed(Exception):
    """The session cannot go on: ``failure`` says why."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.detail)
        self.failure = failure


class Session:
    """One engine process under the fuzzer."""

    def __init__(self, command: list[str], bounds: Bounds, env: dict[str, str] | None) -> None:
        self.bounds = bounds
        self.engine = EngineProcess(command, env)
        self.oracle = Oracle()
        self.options: list[EngineOption] = []
        self.commands = 0
        self.readies = 0
        self.ready_max_s = 0.0
        self.baseline_mb = 0.0
        self.limit_mb = float("inf")
        self.recent: deque[str] = deque(maxlen=12)  # the engine's last lines, for a report
        self.missing = 0  # bestmoves never given (the failure that ended the session)
        self._ended = False  # quit sent or input closed: the engine may exit
        self._last_line: str | None = ""

    # -- the session ----------------------------------------------------------------------------
    def start(self) -> list[EngineOption]:
        """``uci`` (the options it lists), then ``isready`` while the network loads."""
        self._write(Step("uci"))
        lines = self._until(lambda line: line == "uciok", self.bounds.start_s, "uciok")
        self.options = [o for o in map(parse_option, lines) if o is not None]
        self._write(Step("isready"))
        self.oracle.sent(Step("isready"))
        self._until(lambda line: line == "readyok", self.bounds.start_s, "the first readyok")
        return self.options

    def open(self, sequence: Sequence, ram_limit_mb: int | None) -> None:
        """The fuzzer's opening; the memory the session starts from is measured after it,
        once it stops growing."""
        self.run(sequence)
        self.baseline_mb = self._settled_rss()
        self.limit_mb = self.baseline_mb + (ram_limit_mb or 0) + self.bounds.margin_mb
        self.engine.rss_peak_mb = self.baseline_mb

    def run(self, sequence: Sequence) -> None:
        """Send ``sequence``, then check: every ``go`` answered, ``readyok``, memory (or, after
        ``quit`` / the end of input, the engine gone)."""
        for step in sequence.steps():
            self.send(step)
        if self._ended:
            self._finish()
            return
        self._settle()
        self.send(Step("isready"))
        peak = self.engine.rss_peak_mb
        if peak > self.limit_mb:
            raise SessionFailed(
                Failure(
                    "memory",
                    f"RSS {peak:.0f} MB over the limit {self.limit_mb:.0f} MB (the session "
                    f"began at {self.baseline_mb:.0f} MB)",
                )
            )

    def send(self, step: Step) -> None:
        if step.idle_first:
            self._settle()
        if step.pause_s:
            self._pump(lambda: False, step.pause_s)
        self._pump(lambda: False, 0.0)  # every line that came before this command is judged
        self.oracle.sent(step)
        self._write(step)
        if step.line is None or step.line.split()[:1] == ["quit"]:
            self._ended = True
        elif step.line == "isready":
            self._ready()

    def close(self) -> None:
        self.engine.kill()
        self.engine.close()

    def _settled_rss(self) -> float:
        """The RSS of the engine and its children once it grows by less than ``SETTLE_MB`` a
        ``SETTLE_S``: an engine may answer before its inference processes have started (they
        import torch in the background, hundreds of MB over seconds), which is not memory a
        search took."""
        end = time.monotonic() + self.bounds.start_s
        last = self.engine.sample()
        while time.monotonic() < end:
            self._pump(lambda: False, SETTLE_S)  # (nothing is owed: judged if anything comes)
            now = self.engine.sample()
            if now - last < SETTLE_MB:
                return now
            last = now
        return last

    # -- waiting --------------------------------------------------------------------------------
    def _ready(self) -> None:
        start = time.monotonic()
        owed = self.oracle.ready_owed - 1
        self._pump(lambda: self.oracle.ready_owed <= owed, self.bounds.answer_s)
        waited = time.monotonic() - start
        self.readies += 1
        self.ready_max_s = max(self.ready_max_s, waited)
        if self.oracle.ready_owed > owed:
            raise SessionFailed(Failure("readyok", f"no readyok within {waited:.1f} s"))
        if waited > self.bounds.ready_s:
            raise SessionFailed(
                Failure("readyok", f"readyok after {waited:.2f} s (bound {self.bounds.ready_s} s)")
            )

    def _settle(self) -> None:
        """Wait for every ``bestmove`` owed (each ``go`` sent so far has ended or been
        stopped)."""
        if self.oracle.unanswered == 0:
            return
        self._pump(lambda: self.oracle.unanswered == 0, self.bounds.answer_s)
        missing = self.oracle.unanswered
        if missing:
            self.missing = missing
            raise SessionFailed(
                Failure(
                    "missing",
                    f"{missing} of {_listed(self.oracle.window)} got no bestmove within "
                    f"{self.bounds.answer_s:g} s",
                )
            )

    def _finish(self) -> None:
        """After ``quit`` or the end of input: every ``go`` sent before is answered (a search
        still running stops and answers, as Stockfish does), then the engine exits (status
        0), its children too."""
        bounds = self.bounds
        try:
            code = self.engine.proc.wait(bounds.exit_s)
        except subprocess.TimeoutExpired:
            raise SessionFailed(
                Failure("exit", f"still running {bounds.exit_s:g} s after its input ended")
            ) from None
        self._pump(lambda: False, 1.0)  # the reader gives the last lines, then the end
        if code != 0:
            raise SessionFailed(
                Failure("exit", f"exit status {code}; stderr: {self.engine.stderr_tail()}")
            )
        if self.oracle.unanswered:
            self.missing = missing = self.oracle.unanswered
            end = "the end of its input" if self._last_line is None else "quit"
            raise SessionFailed(
                Failure(
                    "missing",
                    f"{missing} of {_listed(self.oracle.window)} got no bestmove before the "
                    f"engine exited after {end}",
                )
            )
        end = time.monotonic() + bounds.exit_s
        while (alive := [p for p in self.engine.pids if _alive(p)]) and time.monotonic() < end:
            time.sleep(0.1)
        if alive:
            raise SessionFailed(
                Failure("exit", f"processes {alive} left running {bounds.exit_s:g} s after exit")
            )

    def _pump(
        self, done: Callable[[], bool], timeout: float, keep: list[str] | None = None
    ) -> None:
        """Judge the lines that come until ``done()`` or ``timeout`` (each kept in ``keep``)."""
        end = time.monotonic() + timeout
        while not done():
            try:
                line = self.engine.lines.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                self.engine.lines.put(None)  # later waits see it too
                if self._ended:
                    break
                self.engine.proc.poll()
                raise SessionFailed(
                    Failure(
                        "exited",
                        f"the engine exited (status {self.engine.proc.returncode}) before quit "
                        f"or the end of its input; stderr: {self.engine.stderr_tail()}",
                    )
                )
            if keep is not None:
                keep.append(line)
            self.recent.append(line if len(line) <= 300 else line[:300] + "…")
            failure = self.oracle.received(line)
            if failure is not None:
                raise SessionFailed(failure)

    def _until(self, match: Callable[[str], bool], timeout: float, what: str) -> list[str]:
        """The lines read up to the first that ``match``es."""
        seen: list[str] = []
        self._pump(lambda: bool(seen) and match(seen[-1]), timeout, seen)
        if not (seen and match(seen[-1])):
            raise SessionFailed(Failure("start", f"no {what} within {timeout:g} s"))
        return seen

    def _write(self, step: Step) -> None:
        self._last_line = step.line
        if step.line is not None:
            self.commands += 1
        if not self.engine.write(step.line, self.bounds.answer_s):
            self._pump(lambda: False, 0.0)  # an engine that exited says so
            raise SessionFailed(
                Failure(
                    "stuck",
                    f"the engine took no input for {self.bounds.answer_s:g} s "
                    f"(sending {step.line[:80]!r})",
                )
            )


def _listed(gos: list[str]) -> str:
    """``gos`` (those sent since every earlier one was answered) as a failure shows them."""
    shown = ", ".join(repr(go[:120]) for go in gos[-6:])
    return f"{len(gos)} go{'s' if len(gos) > 1 else ''} ({shown})"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
