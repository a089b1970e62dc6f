"""The table an experiment ends with: every arm-unit's spend, its final net's rating and, for an
arm other than the baseline, its head-to-head score against the baseline's final net."""

from __future__ import annotations

from rich.table import Table

from frugalzero.experiment.results import ExperimentResult, UnitResult


def final_elo(unit: UnitResult, checkpoint: float) -> str:
    """``612 [540, 684]`` of the net at the final checkpoint; "-" until it is rated."""
    net = unit.final(checkpoint)
    if net is None or net.elo is None:
        return "-"
    if not net.ci95:
        return f"{net.elo:.0f}"
    low, high = net.ci95[:2]
    return f"{net.elo:.0f} [{low:.0f}, {high:.0f}]"


def head_to_head_score(unit: UnitResult, confidence: float = 0.95) -> str:
    """``62% of 8 (+85)``: the arm's score against the baseline's final net of the same unit
    and its head-to-head Elo; "-" until they have played."""
    match = unit.head_to_head_match(confidence)
    if match is None:
        return "-"
    return f"{100 * match.score:.0f}% of {2 * match.pairs} ({match.elo:+.0f})"


def summary_table(results: ExperimentResult) -> Table:
    table = Table(title=f"frugalzero experiment: {results.name}")
    final = results.budget.checkpoints[-1] if results.budget.checkpoints else None
    verdict = results.verdict
    baseline = verdict.baseline if verdict else ""
    confidence = verdict.confidence if verdict else 0.95
    columns = ("arm", "unit", "iterations", "evaluations spent", "games", "positions")
    columns += ("wall min", "CPU min")
    for column in columns:
        table.add_column(column, justify="left" if column in ("arm", "unit") else "right")
    table.add_column("final Elo [95%]", justify="right")
    table.add_column(f"vs {baseline or 'baseline'} (head-to-head)", justify="right")
    table.add_column("done", justify="right")
    for arm in results.arms:
        for unit in arm.seeds:
            table.add_row(
                arm.name,
                unit.label,
                str(unit.iterations),
                f"{unit.evaluations:,}",
                f"{unit.games:,}",
                f"{unit.positions:,}",
                f"{unit.wall_s / 60:.1f}",
                f"{unit.cpu_s / 60:.1f}",
                final_elo(unit, final) if final is not None else "-",
                "baseline" if arm.name == baseline else head_to_head_score(unit, confidence),
                "yes" if unit.finished else "no",
            )
    return table
