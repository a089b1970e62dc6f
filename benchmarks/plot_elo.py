"""Elo against compute (CPU-minutes) for every run under a directory, from their elo.csv;
beside it, where a run directory holds a ``ladder.json`` (``frugalzero ladder … --json``), the
final net's rating on the calibrated ladder (a directory with only a ``ladder.json`` appears in
that panel alone). The two are different scales: each run's own curve comes from short matches
among its nets and ``random`` at the run's node count, so only the ladder panel compares
methods."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# one colour per method, whichever runs a directory holds so far
COLOURS = {
    "sfgames": "C0",
    "eps-explore": "C1",
    "selfplay": "C2",
    "contempt": "C3",
    "gumbel": "C4",
    "cpu-1h": "C5",
}


def colour(name: str) -> str | None:
    """A run's method colour; a second run of a method (``sfgames-first``) shares it."""
    if name in COLOURS:
        return COLOURS[name]
    return next((c for method, c in COLOURS.items() if name.startswith(method + "-")), None)


def read_curve(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return [r for r in csv.DictReader(f) if r["elo"]]


def main(root: str, out: str) -> None:
    runs = sorted(
        {p.parent for pattern in ("*/elo.csv", "*/ladder.json") for p in Path(root).glob(pattern)}
    )
    ladders = {
        run.name: json.loads(p.read_text()) for run in runs if (p := run / "ladder.json").is_file()
    }
    panels = 2 if ladders else 1
    fig, axes = plt.subplots(
        1,
        panels,
        figsize=(7 + 4 * (panels - 1), 5),
        squeeze=False,
        gridspec_kw={"width_ratios": [7, 4][:panels]},
    )
    curve, ladder = axes[0][0], axes[0][-1]
    for run in runs:
        rows = read_curve(run / "elo.csv") if (run / "elo.csv").is_file() else []
        if not rows:
            continue
        minutes = [float(r["minutes"]) for r in rows]
        elo = [float(r["elo"]) for r in rows]
        low = [e - float(r["ci95_low"]) for e, r in zip(elo, rows)]
        high = [float(r["ci95_high"]) - e for e, r in zip(elo, rows)]
        curve.errorbar(
            minutes,
            elo,
            yerr=[low, high],
            marker="o",
            capsize=3,
            label=run.name,
            color=colour(run.name),
        )
    curve.set_xlabel("CPU wall-clock minutes (generation + training + evaluation, 2 cores)")
    curve.set_ylabel("Elo, 95% interval (random = 508)")
    curve.set_title(
        "each run's own matches (its nets and random): compare runs on the ladder", fontsize=9
    )
    curve.legend()
    curve.grid(alpha=0.3)
    if ladders:
        for x, (name, rating) in enumerate(ladders.items()):
            elo, (low, high) = rating["elo"], rating["elo_ci95"]
            ladder.errorbar(
                [x],
                [elo],
                yerr=[[elo - low], [high - elo]],
                marker="*",
                markersize=12,
                capsize=4,
                color=colour(name),
            )
        ladder.set_xticks(range(len(ladders)), list(ladders), rotation=45, ha="right")
        ladder.set_xlim(-0.5, len(ladders) - 0.5)
        ladder.set_ylabel("Elo, 95% interval")
        ladder.set_title("final net on the ladder (400 nodes)", fontsize=9)
        ladder.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
