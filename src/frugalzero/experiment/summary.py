"""The table an experiment ends with: every arm-seed's spend and final rating."""

from __future__ import annotations

from typing import Any

from rich.table import Table


def _elo(kept: list[dict[str, Any]]) -> str:
    rated = [k for k in kept if k.get("elo") is not None]
    if not rated:
        return "-"
    last = rated[-1]
    low, high = last["ci95"]
    return f"{last['elo']:.0f} [{low:.0f}, {high:.0f}]"


def summary_table(results: dict[str, Any]) -> Table:
    table = Table(title=f"frugalzero experiment: {results['name']}")
    for column in ("arm", "seed", "iterations", "evaluations", "games", "positions"):
        table.add_column(column, justify="left" if column == "arm" else "right")
    for column in ("wall min", "CPU min", "last Elo [95%]", "done"):
        table.add_column(column, justify="right")
    for arm in results["arms"]:
        for seed in arm["seeds"]:
            table.add_row(
                arm["name"],
                str(seed["seed"]),
                str(seed["iterations"]),
                f"{seed['evaluations']:,}",
                f"{seed['games']:,}",
                f"{seed['positions']:,}",
                f"{seed['wall_s'] / 60:.1f}",
                f"{seed['cpu_s'] / 60:.1f}",
                _elo(seed["kept"]),
                "yes" if seed["finished"] else "no",
            )
    return table
