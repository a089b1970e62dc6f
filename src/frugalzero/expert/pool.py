"""A pool of Stockfish processes that never loses a label.

Each slot is a worker process (``frugalzero.expert.worker``) owning one engine: the Python
around an engine move (reading its answer, the rules, the label) costs ~0.27 ms, half of
Stockfish's search at 400 nodes, so the drivers run in parallel processes rather than
threads of one. The engine inside a worker is restarted when it crashes or hangs and the
move is retried there; if a whole worker dies, the pool starts a new one and hands its unfinished
tasks to the next free slot. A dispatcher thread moves tasks and results; callers get
``concurrent.futures.Future``s and bound their own number of tasks in flight.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import socket
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from multiprocessing.connection import wait as wait_objects
from time import monotonic

import chess

from frugalzero.errors import UserError
from frugalzero.expert.engine import EngineConfig, resolve_command
from frugalzero.expert.playout import AnalyseTask, Label
from frugalzero.expert.worker import worker_main
from frugalzero.runtime.cores import available_cores

PREFETCH = 2  # tasks a worker holds: it never waits for its next one
START_GRACE_S = 30.0  # spawning a worker process and importing python-chess


class LabelError(RuntimeError):
    """A task that could not be done (bad input, or an engine that failed every retry)."""


class PoolBroken(UserError):
    """The engines cannot be (re)started any more: nothing queued can be done."""


@dataclass
class _Job:
    task_id: int
    task: object
    future: Future
    deaths: int = 0  # workers that died while holding it
    started: bool = False


@dataclass
class _Worker:
    process: mp.process.BaseProcess
    conn: object
    jobs: dict[int, _Job] = field(default_factory=dict)
    ready: bool = False
    failed_starts: int = 0
    pid: int = 0  # the engine's
    name: str = ""


class StockfishPool:
    """``size`` engines (default: one per core) with ``config``'s limit and options."""

    def __init__(self, config: EngineConfig | None = None, size: int = 0) -> None:
        self.config = config = config or EngineConfig()
        self.command = resolve_command(config.command)
        self.size = size or available_cores()
        self._ctx = mp.get_context("spawn")  # forking a process with threads can deadlock
        self._lock = threading.Lock()
        self._pending: deque[_Job] = deque()
        self._ids = itertools.count()
        self._closing = False
        self._broken = ""
        self.counters = {
            "moves": 0,
            "restarts": 0,
            "crashes": 0,
            "timeouts": 0,
            "worker_deaths": 0,
            "failed_tasks": 0,
        }
        self._wake_r, self._wake_w = socket.socketpair()
        self._workers = [self._spawn() for _ in range(self.size)]
        try:
            self._await_ready()
        except BaseException:
            self._shutdown_workers()
            raise
        self._thread = threading.Thread(target=self._loop, name="stockfish-pool", daemon=True)
        self._thread.start()

    # -- public API ---------------------------------------------------------------------------
    def __enter__(self) -> StockfishPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def engine_name(self) -> str:
        return self._workers[0].name

    def engine_pids(self) -> list[int]:
        """Process ids of the engines now running (they change when an engine is restarted)."""
        return [w.pid for w in self._workers]

    def driver_pids(self) -> list[int]:
        """Process ids of the worker processes that drive the engines (the Python side)."""
        return [w.process.pid for w in self._workers if w.process.pid is not None]

    def submit(self, task: object) -> Future:
        """Queue a task (``AnalyseTask`` or ``PlayoutTask``); its future gets the result."""
        future: Future = Future()
        with self._lock:
            if self._broken:
                future.set_exception(PoolBroken(self._broken))
                return future
            if self._closing:
                raise RuntimeError("pool is closed")
            self._pending.append(_Job(next(self._ids), task, future))
        self._wake()
        return future

    def map_unordered(
        self, tasks: Iterable[object], max_pending: int = 0
    ) -> Iterator[tuple[object, Future]]:
        """(task, finished future) pairs in completion order, drawing ``tasks`` lazily so at
        most ``max_pending`` (default: 4 per engine) are queued or running at once."""
        limit = max_pending or 4 * self.size
        source = iter(tasks)
        running: dict[Future, object] = {}
        exhausted = False
        while True:
            while not exhausted and len(running) < limit:
                task = next(source, None)
                if task is None:
                    exhausted = True
                    break
                running[self.submit(task)] = task
            if not running:
                return
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                yield running.pop(future), future

    def analyse(
        self, positions: Sequence[chess.Board | str | tuple[str, Sequence[str]]]
    ) -> list[Label]:
        """Best move and score of each position: a board (its move stack is the history), a
        FEN, or (FEN, UCI moves). Raises LabelError if one cannot be labelled."""
        futures = [self.submit(_analyse_task(p)) for p in positions]
        return [future.result() for future in futures]

    def stats(self) -> dict[str, int]:
        with self._lock:
            return dict(self.counters)

    def close(self) -> None:
        with self._lock:
            if self._closing:
                return
            self._closing = True
        self._wake()
        self._thread.join()

    # -- workers ------------------------------------------------------------------------------
    def _spawn(self) -> _Worker:
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(
            target=worker_main,
            args=(child, self.config, self.command),
            name="frugalzero-stockfish",
            daemon=True,
        )
        process.start()
        child.close()
        return _Worker(process, parent)

    def _await_ready(self) -> None:
        deadline = monotonic() + START_GRACE_S + self.config.timeout_s
        while not all(w.ready for w in self._workers):
            waiting = [w for w in self._workers if not w.ready]
            left = deadline - monotonic()
            if left <= 0:
                raise UserError(
                    f"engine {self.command}: no answer within {self.config.timeout_s} s"
                )
            ready = wait_objects(
                [w.conn for w in waiting] + [w.process.sentinel for w in waiting], left
            )
            for worker in waiting:
                if worker.conn in ready:
                    try:
                        message = worker.conn.recv()
                    except (EOFError, OSError):
                        message = ("fatal", "worker process died while starting its engine")
                    if message[0] == "fatal":
                        raise UserError(message[1])
                    self._handle(worker, message)
                elif worker.process.sentinel in ready:
                    raise UserError(f"engine {self.command}: worker process died at start")

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    def _loop(self) -> None:
        """Dispatcher: hand tasks to free workers, collect answers, replace dead workers."""
        try:
            while True:
                with self._lock:
                    if self._closing or self._broken:
                        break
                    self._dispatch()
                objects = [self._wake_r]
                for worker in self._workers:
                    objects += [worker.conn, worker.process.sentinel]
                ready = wait_objects(objects, timeout=1.0)
                if self._wake_r in ready:
                    self._wake_r.recv(4096)
                for index, worker in enumerate(self._workers):
                    if worker.conn in ready or worker.process.sentinel in ready:
                        self._service(index, worker)
        except Exception as exc:  # a bug here must not leave callers waiting forever
            with self._lock:
                self._broken = f"Stockfish pool failed: {exc!r}"
        finally:
            self._shutdown_workers()
            with self._lock:
                jobs = list(self._pending) + [j for w in self._workers for j in w.jobs.values()]
                self._pending.clear()
                reason = self._broken
            for job in jobs:
                if not job.future.cancel() and not job.future.done():
                    job.future.set_exception(
                        PoolBroken(reason) if reason else RuntimeError("pool closed")
                    )

    def _service(self, index: int, worker: _Worker) -> None:
        closed = False
        try:
            while worker.conn.poll():
                self._handle(worker, worker.conn.recv())
        except (EOFError, OSError):
            closed = True
        if closed or not worker.process.is_alive():
            worker.process.join(timeout=5)
            if worker.process.is_alive():
                worker.process.kill()
            self._replace(index, worker, "worker process died")

    def _handle(self, worker: _Worker, message: tuple) -> None:
        kind = message[0]
        if kind == "ready":
            worker.ready, worker.pid, worker.name = True, message[1], message[2]
            worker.failed_starts = 0
        elif kind == "pid":
            worker.pid = message[1]
        elif kind in ("done", "failed"):
            job = worker.jobs.pop(message[1], None)
            with self._lock:
                for key, value in message[3].items():
                    self.counters[key] = self.counters.get(key, 0) + value
                if kind == "failed":
                    self.counters["failed_tasks"] += 1
            if job is not None:
                if kind == "done":
                    job.future.set_result(message[2])
                else:
                    job.future.set_exception(LabelError(message[2]))
        elif kind == "fatal":  # its engine will not start: counted when the worker exits
            worker.ready = False

    def _replace(self, index: int, worker: _Worker, why: str) -> None:
        worker.process.join(timeout=5)
        with self._lock:
            self.counters["worker_deaths"] += 1
            for job in sorted(worker.jobs.values(), key=lambda j: j.task_id, reverse=True):
                job.deaths += 1
                if job.deaths > self.config.retries:
                    self.counters["failed_tasks"] += 1
                    job.future.set_exception(
                        LabelError(f"{why} {job.deaths} times while working on this task")
                    )
                else:
                    self._pending.appendleft(job)
            worker.jobs.clear()
            failed_starts = worker.failed_starts + (not worker.ready)
            if failed_starts > self.config.retries:
                self._broken = f"engine {self.command} cannot be restarted ({why})"
                jobs = list(self._pending)
                self._pending.clear()
                for job in jobs:
                    job.future.set_exception(PoolBroken(self._broken))
            if self._broken:
                return
        worker.conn.close()
        replacement = self._spawn()
        replacement.failed_starts = failed_starts
        self._workers[index] = replacement

    def _dispatch(self) -> None:
        """Called with the lock held."""
        for worker in self._workers:
            while worker.ready and len(worker.jobs) < PREFETCH and self._pending:
                job = self._pending.popleft()
                if not job.started:
                    if not job.future.set_running_or_notify_cancel():
                        continue  # cancelled while queued
                    job.started = True
                worker.jobs[job.task_id] = job
                try:
                    worker.conn.send((job.task_id, job.task))
                except OSError:
                    break  # it died: _service will requeue the job

    def _shutdown_workers(self) -> None:
        """Idle workers quit their engines; busy ones are stopped at once (their engines see
        their input close and exit after the current search)."""
        for worker in self._workers:
            if worker.jobs:
                worker.process.terminate()
            else:
                try:
                    worker.conn.send(None)
                except OSError:
                    pass
        for worker in self._workers:
            worker.process.join(timeout=5)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(timeout=5)
            worker.conn.close()


def _analyse_task(position: chess.Board | str | tuple[str, Sequence[str]]) -> AnalyseTask:
    if isinstance(position, chess.Board):
        root = position.root()
        return AnalyseTask(root.fen(), tuple(m.uci() for m in position.move_stack))
    if isinstance(position, str):
        return AnalyseTask(position)
    fen, moves = position
    return AnalyseTask(fen, tuple(moves))
