"""Command output: one JSON object for machines, a short table for people; and the one JSON
float rule every report, record and log we write follows (``plain``, ``to_json``)."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from rich.console import Console
from rich.table import Table


def plain(value: Any) -> Any:
    """``value`` with NumPy scalars made Python and non-finite floats made JSON-safe: infinity
    becomes the string "inf" (or "-inf": an open end of an interval, an undefined odds ratio,
    which a reader must tell apart from a missing value) and NaN becomes null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if hasattr(value, "item"):  # NumPy scalars
        return plain(value.item())
    return value


def to_json(value: Any, **dumps: Any) -> str:
    """``value`` as strict JSON under the rule of ``plain`` (``dumps``: ``json.dumps``'s
    layout arguments, e.g. ``indent``)."""
    return json.dumps(plain(value), allow_nan=False, **dumps)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    if isinstance(value, dict | list):
        return to_json(value)
    return str(value)


def emit(result: dict[str, Any], as_json: bool, title: str = "") -> None:
    """Print ``result`` as one JSON line (stdout) or as a two-column table."""
    if as_json:
        print(to_json(result), flush=True)
        return
    table = Table(title=title or None, show_header=False)
    table.add_column(style="bold")
    table.add_column()
    for key, value in result.items():
        table.add_row(key, _fmt(value))
    Console(file=sys.stdout).print(table)
