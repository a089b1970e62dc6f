"""Elo against compute (CPU-minutes) for every run under a directory, from their elo.csv."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(root: str, out: str) -> None:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for path in sorted(Path(root).glob("*/elo.csv")):
        with path.open() as f:
            rows = [r for r in csv.DictReader(f) if r["elo"]]
        if not rows:
            continue
        minutes = [float(r["minutes"]) for r in rows]
        elo = [float(r["elo"]) for r in rows]
        low = [e - float(r["ci95_low"]) for e, r in zip(elo, rows)]
        high = [float(r["ci95_high"]) - e for e, r in zip(elo, rows)]
        ax.errorbar(minutes, elo, yerr=[low, high], marker="o", capsize=3, label=path.parent.name)
    ax.set_xlabel("CPU wall-clock minutes (generation + training + evaluation, 2 cores)")
    ax.set_ylabel("Elo (ladder scale, random = 508), 95% interval")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
