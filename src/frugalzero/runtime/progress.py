"""Progress on stderr, so stdout stays clean for ``--json``: the console and the one builder of
rich progress bars that every command uses.

Off a terminal rich draws no live bar; a bar that is not transient still prints its final line
there once, so logs keep the outcome, and every bar prints its unfinished tasks' lines once a
minute (``LOG_EVERY_S``), so a background run's log shows progress from its first minute: a
pilot's 2,000,000-evaluation generation was 20 silent minutes."""

from __future__ import annotations

import sys
import time
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

_NAMED = {
    "count": MofNCompleteColumn,
    "bytes": DownloadColumn,
    "elapsed": TimeElapsedColumn,
    "remaining": TimeRemainingColumn,
}


LOG_EVERY_S = 60.0
"""Off a terminal, the seconds between two prints of a bar's unfinished tasks."""


class _LoggedProgress(Progress):
    """A rich Progress that, off a terminal, prints its unfinished tasks as lines (the columns
    rendered as on a terminal) at most every ``log_every`` seconds as they advance."""

    def __init__(self, *columns: Any, log_every: float = LOG_EVERY_S, **kwargs: Any) -> None:
        super().__init__(*columns, **kwargs)
        self._log_every = log_every
        self._logged = time.monotonic()

    def update(self, task_id: Any, *args: Any, **kwargs: Any) -> None:
        super().update(task_id, *args, **kwargs)
        self._log()

    def advance(self, task_id: Any, advance: float = 1) -> None:
        super().advance(task_id, advance)
        self._log()

    def _log(self) -> None:
        if self.disable or self.console.is_terminal:
            return
        now = time.monotonic()
        if now - self._logged < self._log_every:
            return
        self._logged = now
        tasks = [t for t in self.tasks if t.visible and not t.finished]
        if tasks:
            self.console.print(self.make_tasks_table(tasks))


def stderr_console() -> Console:
    """Where progress and notes go, so stdout stays clean for --json."""
    return Console(file=sys.stderr)


def progress_bar(
    label: str,
    *columns: str | ProgressColumn,
    bar_width: int | None = 40,
    transient: bool = False,
    enabled: bool = True,
    console: Console | None = None,
    log_every: float = LOG_EVERY_S,
) -> Progress:
    """A rich bar: ``label`` (a text template), the bar, then ``columns``. A column is a rich
    column, one of the standard ones by name ('count': done/total, 'bytes': bytes done/total,
    'elapsed', 'remaining'), or else a text template such as ``'{task.fields[games]} games'``.
    ``transient`` bars vanish when done; ``enabled=False`` draws nothing (quiet); off a
    terminal the unfinished tasks print every ``log_every`` seconds."""
    built = [
        (_NAMED[c]() if c in _NAMED else TextColumn(c)) if isinstance(c, str) else c
        for c in columns
    ]
    return _LoggedProgress(
        TextColumn(label),
        BarColumn(bar_width=bar_width),
        *built,
        console=console or stderr_console(),
        transient=transient,
        disable=not enabled,
        log_every=log_every,
    )
