"""The report's charts, drawn by matplotlib as SVG text to inline in the page (nothing fetched
when it is viewed). Each function takes the runs to overlay and returns one ``<svg>``."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

from frugalzero.report.runs import RunData

PHASES = (("generate_s", "generation", "#4c72b0"), ("train_s", "training", "#dd8452"))
PHASES += (("evaluate_s", "evaluation", "#55a868"),)
WIDTH = 7.5  # inches; the page scales the SVG to its column


def new_figure(rows: int = 1, height: float = 3.0):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "svg.fonttype": "none"})  # text stays text
    fig, axes = plt.subplots(rows, 1, figsize=(WIDTH, height * rows), squeeze=False)
    return fig, [row[0] for row in axes]


def svg_text(fig) -> str:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # the XML prolog and doctype do not belong inline


def mark_empty(ax, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what} yet", ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def timeline(runs: Sequence[RunData]) -> str:
    """Where the time went: generation, training and matches per iteration, stacked."""
    fig, axes = new_figure(len(runs), 2.4)
    for ax, run in zip(axes, runs):
        if not run.iterations:
            mark_empty(ax, "finished iteration")
            continue
        iterations = [r["iteration"] for r in run.iterations]
        bottom = [0.0] * len(iterations)
        for key, label, colour in PHASES:
            minutes = [r.get(key, 0.0) / 60 for r in run.iterations]
            ax.bar(iterations, minutes, bottom=bottom, label=label, color=colour)
            bottom = [b + m for b, m in zip(bottom, minutes)]
        ax.set_title(f"{run.name}: minutes per iteration", loc="left")
        ax.set_xlabel("iteration")
        ax.set_ylabel("minutes")
        ax.set_xticks(iterations)
        ax.set_ylim(0, max(bottom) * 1.3)  # room for the legend above the bars
        ax.legend(loc="upper left", ncol=3, frameon=False)
    return svg_text(fig)


def elo(runs: Sequence[RunData]) -> str:
    """Elo of each iteration's net with its 95% interval, against the run's minutes; a ladder
    rating (the final net on the calibrated ladder) as a band at the end."""
    fig, (ax,) = new_figure(1, 3.2)
    drawn = False
    for index, run in enumerate(runs):
        rated = [(m, r) for m, r in zip(run.minutes(), run.iterations) if _finite(r.get("elo"))]
        colour = f"C{index}"
        if rated:
            xs = [m for m, _ in rated]
            ys = [r["elo"] for _, r in rated]
            bounds = [_interval(r) for _, r in rated]
            low = [y - lo for y, (lo, _) in zip(ys, bounds)]
            high = [hi - y for y, (_, hi) in zip(ys, bounds)]
            ax.errorbar(xs, ys, [low, high], marker="o", capsize=3, color=colour, label=run.name)
            drawn = True
        ladder = run.ladder
        if ladder and _finite(ladder.get("elo")):
            lo, hi = _interval(ladder)
            ax.axhspan(lo, hi, color=colour, alpha=0.12)
            ax.axhline(ladder["elo"], color=colour, linestyle="--", linewidth=1)
            ax.annotate(f"ladder {ladder['elo']:.0f}", (0, ladder["elo"]), color=colour)
            drawn = True
    if not drawn:
        mark_empty(ax, "rating")
    else:
        ax.set_xlabel("minutes of the run")
        ax.set_ylabel("Elo (95% interval)")
        ax.legend(loc="lower right", frameon=False)
    ax.set_title("Strength", loc="left")
    return svg_text(fig)


def losses(runs: Sequence[RunData]) -> str:
    """Training losses by optimiser step (lines) and the held-out validation losses of each
    iteration's net (markers), policy and value apart."""
    fig, axes = new_figure(2, 2.6)
    for ax, key, title in zip(axes, ("policy_loss", "value_loss"), ("policy loss", "value loss")):
        drawn = False
        for index, run in enumerate(runs):
            colour = f"C{index}"
            steps = [r["step"] for r in run.training if _finite(r.get(key))]
            values = [r[key] for r in run.training if _finite(r.get(key))]
            if steps:
                ax.plot(steps, values, color=colour, linewidth=1, label=f"{run.name} training")
                drawn = True
            held = [_validation(r, key) for r in run.iterations]
            where = _iteration_steps(run) if steps else [r["iteration"] for r in run.iterations]
            points = [(x, v) for x, v in zip(where, held) if _finite(x) and _finite(v)]
            if points:
                ax.plot(*zip(*points), "D", color=colour, label=f"{run.name} validation")
                drawn = True
        if drawn:
            trained = any(run.training for run in runs)
            ax.set_xlabel("optimiser step" if trained else "iteration (no training log kept)")
            ax.legend(loc="upper right", frameon=False, fontsize=7)
        else:
            mark_empty(ax, "training")
        ax.set_title(title, loc="left")
    return svg_text(fig)


def data(runs: Sequence[RunData]) -> str:
    """Training positions generated by each iteration, and in all."""
    fig, (ax,) = new_figure(1, 2.6)
    width = 0.8 / max(1, len(runs))
    drawn = False
    for index, run in enumerate(runs):
        if not run.iterations:
            continue
        iterations = [r["iteration"] + index * width for r in run.iterations]
        positions = [r.get("positions", 0) for r in run.iterations]
        label = f"{run.name} ({sum(positions):,} in all)"
        ax.bar(iterations, positions, width=width, color=f"C{index}", label=label)
        drawn = True
    if drawn:
        ax.set_xlabel("iteration")
        ax.set_ylabel("positions")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.25)
        ax.legend(loc="upper left", ncol=2, frameon=False)
    else:
        mark_empty(ax, "data")
    ax.set_title("Training positions per iteration", loc="left")
    return svg_text(fig)


def _finite(value) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def _interval(record: dict) -> tuple[float, float]:
    """The 95% interval of an Elo; an open end (JSON "inf") is drawn at the Elo itself."""
    elo = record["elo"]
    low, high = record.get("elo_ci95") or (elo, elo)
    return (low if _finite(low) else elo), (high if _finite(high) else elo)


def _validation(record: dict, key: str) -> float | None:
    return record.get("validation", {}).get("traversing", {}).get(key)


def _iteration_steps(run: RunData) -> list[float]:
    """The optimiser step at the end of each iteration (from the training records), so the
    validation markers sit where their net stopped training."""
    last: dict[int, float] = {}
    for record in run.training:
        last[record.get("iteration", 0)] = record["step"]
    return [last.get(r["iteration"], math.nan) for r in run.iterations]
