"""The run's time across kills: what ``budget.minutes`` fits iterations on, and each
iteration's generate/train/evaluate seconds.

``state.json`` is written when a step finishes, so the time of a step cut by ``kill -9`` would
be lost with it (an iteration's ``generate_s`` read 1.3 s for games that took 36 s). A thread
writes ``clock.json`` every few seconds instead: the run's elapsed seconds and the seconds of
the step under way. A resume whose state is still at that step takes them over, so at most
one tick of a killed session goes uncounted.

The clock counts from its making until ``stop()``, and again from each ``start()``: a run that
is kept and resumed an iteration at a time (``frugalzero experiment`` interleaves its arms so)
is not charged the time its process spent on the other arms in between.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from frugalzero.layout import RunLayout
from frugalzero.pipeline.state import RunState
from frugalzero.runtime.files import atomic_write_text

TICK_S = 2.0


def step_key(step: str) -> str:
    """The key of a step's seconds in ``RunState.current``."""
    return f"{step}_s"


class RunClock:
    """Elapsed seconds of the run and of its current step, ticking into ``clock.json``."""

    def __init__(
        self,
        layout: RunLayout,
        state: RunState,
        now: Callable[[], float] = time.monotonic,
        tick_s: float = TICK_S,
    ) -> None:
        self.layout = layout
        self.now = now
        self.tick_s = tick_s
        self._recover(state)
        self._base = state.elapsed_s
        self._start = now()
        self._step = (state.iteration, state.step)
        self._step_base = float(state.current.get(step_key(state.step), 0.0))
        self._step_start = self._start
        self._running = True  # counting; paused by stop(), resumed by start()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _recover(self, state: RunState) -> None:
        """Take over the seconds a killed session spent after its last saved state. A finished
        run's state has its final times (the clock ticked on while its report was written):
        reopening it must not change them."""
        if state.finished:
            return
        try:
            data = json.loads(self.layout.clock.read_text(encoding="utf-8"))
            same = (data["iteration"], data["step"]) == (state.iteration, state.step)
            elapsed, step_s = float(data["elapsed_s"]), float(data["step_s"])
        except (OSError, ValueError, KeyError, TypeError):
            return  # no clock yet, or a torn one: the state's own times stand
        if same and elapsed > state.elapsed_s:
            state.elapsed_s = round(elapsed, 2)
            key = step_key(state.step)
            state.current[key] = max(step_s, float(state.current.get(key, 0.0)))

    def elapsed(self) -> float:
        return self._base + (self.now() - self._start if self._running else 0.0)

    def begin(self, iteration: int, step: str, spent: float) -> None:
        """Step ``step`` of iteration ``iteration`` + 1 starts (or goes on, ``spent`` seconds
        in)."""
        with self._lock:
            self._step = (iteration, step)
            self._step_base = spent
            self._step_start = self.now()

    def step_seconds(self) -> float:
        return self._step_base + (self.now() - self._step_start if self._running else 0.0)

    def tick(self) -> None:
        """Write down the time so far (atomically; a failed write only loses a tick)."""
        with self._lock:
            (iteration, step), step_s = self._step, self.step_seconds()
            data: dict[str, Any] = {
                "iteration": iteration,
                "step": step,
                "elapsed_s": round(self.elapsed(), 2),
                "step_s": round(step_s, 2),
            }
        try:
            atomic_write_text(self.layout.clock, json.dumps(data))
        except OSError:
            pass

    def start(self) -> None:
        """Count (again, after a ``stop()``) and tick."""
        with self._lock:
            if not self._running:
                self._start = self._step_start = self.now()
                self._running = True
        if self._thread is None:
            self._stop = threading.Event()
            self._thread = threading.Thread(
                target=self._run, args=(self._stop,), name="run-clock", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        """Stop ticking and counting: the times so far are kept for the next ``start()``."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            if self._running:
                self._base, self._step_base = self.elapsed(), self.step_seconds()
                self._running = False

    def _run(self, stop: threading.Event) -> None:
        while not stop.wait(self.tick_s):
            self.tick()
