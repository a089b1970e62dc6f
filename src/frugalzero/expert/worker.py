"""The process behind each pool slot: one engine, tasks from a pipe.

Messages to the pool: ``("ready", pid, name)`` once the engine runs, ``("pid", pid)`` after
every restart, ``("done", task_id, result, stats)`` per task, ``("failed", task_id, message,
stats)`` when a task cannot be done, and ``("fatal", message)`` if the engine cannot start.
The worker ignores Ctrl+C: the pool decides when it stops (``None`` or a closed pipe).
"""

from __future__ import annotations

import signal

from frugalzero.data.pgnwriter import game_text
from frugalzero.expert.engine import (
    EngineConfig,
    EngineFailed,
    EngineSession,
    EngineUnavailable,
)
from frugalzero.expert.playout import AnalyseTask, Played, PlayoutTask, analyse, playout


def worker_main(conn, config: EngineConfig, command: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    session = EngineSession(config, command, on_start=lambda pid: conn.send(("pid", pid)))
    try:
        try:
            session.start()
        except EngineFailed as exc:
            conn.send(("fatal", str(exc)))
            return
        conn.send(("ready", session.pid, session.name))
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                break
            if message is None:
                break
            task_id, task = message
            try:
                result = _run(session, task)
            except EngineUnavailable as exc:
                conn.send(("fatal", str(exc)))  # the pool redoes the task in a new worker
                return
            except (EngineFailed, ValueError) as exc:
                conn.send(("failed", task_id, str(exc), session.stats.take()))
            else:
                conn.send(("done", task_id, result, session.stats.take()))
    except (BrokenPipeError, EOFError, OSError):
        pass  # the pool went away; just stop the engine
    finally:
        session.quit()


def _run(session: EngineSession, task):
    if isinstance(task, PlayoutTask):
        record = playout(session, task)
        return Played(record, game_text(record)) if task.pgn else record
    if isinstance(task, AnalyseTask):
        return analyse(session, task)
    raise ValueError(f"unknown task {type(task).__name__}")
