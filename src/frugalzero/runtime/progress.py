"""Progress on stderr, so stdout stays clean for ``--json``: the console and the one builder of
rich progress bars that every command uses.

Off a terminal rich draws no live bar; a bar that is not transient still prints its final line
there once, so logs keep the outcome."""

from __future__ import annotations

import sys

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
) -> Progress:
    """A rich bar: ``label`` (a text template), the bar, then ``columns``. A column is a rich
    column, one of the standard ones by name ('count': done/total, 'bytes': bytes done/total,
    'elapsed', 'remaining'), or else a text template such as ``'{task.fields[games]} games'``.
    ``transient`` bars vanish when done; ``enabled=False`` draws nothing (quiet)."""
    built = [
        (_NAMED[c]() if c in _NAMED else TextColumn(c)) if isinstance(c, str) else c
        for c in columns
    ]
    return Progress(
        TextColumn(label),
        BarColumn(bar_width=bar_width),
        *built,
        console=console or stderr_console(),
        transient=transient,
        disable=not enabled,
    )
