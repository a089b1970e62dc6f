"""An experiment's results (``results.ExperimentResult``) as one self-contained HTML page.

The page answers the experiment's question first (the verdict, with the comparisons it rests
on and the minimum detectable effect stated before the runs), then shows its evidence: each
unit's difference between an arm and the baseline with its error, and their mean with its
interval; every unit's Elo against the network evaluations it spent, each net with its own
interval, the arms' means with theirs; what the training games looked like; and the spec that
was run. It is drawn as the experiment goes (after a step, once a minute at most), so it reads
a half-finished experiment too: a net not rated yet (``elo`` None), a unit still running, no
verdict, an arm whose method records no self-play statistics. An axis fits the points and
their error bars: an interval far wider (two units' Student's t) is drawn clipped and named
under the chart, rather than squeezing the data into a line. The charts are matplotlib SVG
inlined as in the run report (``frugalzero.report``), so the file opens offline.
"""

from __future__ import annotations

import html
import math
import re
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path

from frugalzero.experiment.results import (
    ArmResult,
    Comparison,
    ExperimentResult,
    KeptNet,
    MeanPoint,
    UnitResult,
    Verdict,
)
from frugalzero.output import to_json
from frugalzero.report.charts import mark_empty, new_figure, svg_text
from frugalzero.report.page import STYLE as REPORT_STYLE
from frugalzero.runtime.files import atomic_write_text

STYLE = (
    REPORT_STYLE
    + """
.verdict { font-size: 1.1em; background: #f3f7ff; border-left: 4px solid #4c72b0;
  padding: 0.6em 0.9em; } .note { color: #555; font-size: 0.9em; }
.better { color: #2a7a2a; font-weight: bold; } .worse { color: #b03030; font-weight: bold; }
.inconclusive { color: #8a6d00; font-weight: bold; }
table.seeds { font-size: 0.9em; } .seeds td { white-space: nowrap; }
.seeds td:last-child, .seeds th:last-child { text-align: left; white-space: normal; }
tr.mean td { border-top: 1px solid #999; font-weight: bold; }
"""
)

# Counts the charts that have a size and drawn paths, as the run report does, so a browser
# test can read from the DOM that they rendered.
SCRIPT = """
const drawn = [...document.querySelectorAll(".chart svg")]
  .filter(svg => svg.getBoundingClientRect().width > 0 && svg.querySelector("path"));
document.body.dataset.charts = drawn.length;
"""

# The self-play statistics charted, in order, with their axis titles; a key no arm recorded is
# left out rather than drawn empty.
SELFPLAY_KEYS = (
    ("w_plus_l_over_d", "(W+L)/D: decisive over drawn"),
    ("distinct_positions_per_1000", "distinct positions per 1000"),
    ("root_kl", "root KL (search vs prior)"),
    ("decisive_targets", "decisive value targets"),
    ("mean_length", "mean game length (plies)"),
    ("distinct_opening_share", "distinct openings (share of games)"),
    ("nscl", "N_scl"),
)

PAD = 0.06
"""Of an axis fitted to its data, the margin either side (at least ``MIN_PAD`` Elo)."""
MIN_PAD = 10.0


def write_page(experiment: ExperimentResult, path: Path) -> Path:
    """Write the page of ``experiment`` to ``path`` atomically, so a reader never sees half a
    page, and return ``path``."""
    atomic_write_text(Path(path), build_page(experiment))
    return Path(path)


def build_page(experiment: ExperimentResult) -> str:
    """The page's HTML text; a pure function of the experiment so it can be tested without
    files."""
    title = f"frugalzero experiment: {experiment.name or 'experiment'}"
    arms = experiment.arms
    elo_svg, elo_notes = elo_chart(experiment)
    pairs_svg, pairs_notes = pairs_chart(experiment)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_esc(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{_esc(title)}</h1>",
        _intro(experiment),
        "<h2>Verdict</h2>",
        _verdict(experiment.verdict, _kind(experiment)),
        "<h2>The evidence: each pair's difference</h2>",
        _chart(pairs_svg),
        _notes(pairs_notes),
        _pair_tables(experiment),
        "<h2>Strength against the budget spent</h2>",
        _chart(elo_svg),
        _notes(elo_notes),
        _arm_means(experiment),
        "<h2>The training games</h2>",
        _chart(selfplay_chart(arms)),
        _without_stats(arms),
        "<h2>Arms and units</h2>",
        _seed_table(experiment),
        "<h2>Spec</h2>",
        f"<p class=note>SHA-256 {_esc(experiment.spec_sha256 or '-')}</p>",
        f"<pre>{_esc(to_json(experiment.spec, indent=2))}</pre>",
        f"<script>{SCRIPT}</script></body></html>",
    ]
    return "\n".join(parts)


# -- the charts ---------------------------------------------------------------------------------
def elo_chart(experiment: ExperimentResult) -> tuple[str, list[str]]:
    """Elo of every kept net against the budget spent to make it (network evaluations, or CPU
    seconds for a budget in CPU seconds), each with its 95% interval: one colour an arm, each
    unit a thin line (the units' spread is what the verdict has to beat), the arm's mean thick
    with its 95% interval shaded; the anchors' ladder Elo as dotted lines. The y axis fits the
    nets, the means and the nets' intervals; a mean's band wider than that is clipped, and the
    returned notes say where it reaches (and which anchors lie off the axis)."""
    spent, mean_x, label = _budget_axis(experiment)
    arms = experiment.arms
    fig, (ax,) = new_figure(1, 3.8)
    points = [
        (x, k)
        for arm in arms
        for unit in arm.seeds
        for k in unit.kept
        if _finite(x := getattr(k, spent), k.elo)
    ]
    means = [m for arm in arms for m in arm.mean if _finite(getattr(m, mean_x), m.elo)]
    if not points and not means:
        mark_empty(ax, "rating")
        ax.set_title("Elo of the kept nets", loc="left")
        return svg_text(fig), []
    ys = [k.elo for _, k in points] + [m.elo for m in means]
    bars = [_ends(k.ci95) for _, k in points]
    low, high = _fit(ys, bars)
    xs = [x for x, _ in points] + [getattr(m, mean_x) for m in means]
    left, right = _budget_span(experiment, xs)
    dodge = (right - left) * 0.006 if len(arms) > 1 else 0.0
    notes = []
    for index, arm in enumerate(arms):
        colour = f"C{index}"
        shift = dodge * (index - (len(arms) - 1) / 2)
        labelled = False
        for unit in arm.seeds:
            kept = [(getattr(k, spent), k) for k in unit.kept if _finite(getattr(k, spent), k.elo)]
            if not kept:
                continue
            x = [v + shift for v, _ in kept]
            y = [k.elo for _, k in kept]
            ax.plot(
                x,
                y,
                marker="o",
                markersize=3,
                linewidth=0.8,
                alpha=0.6,
                color=colour,
                label=None if labelled else f"{arm.name} units",
                gid=_gid("elo-unit", f"{arm.name}-{unit.label}"),
            )
            labelled = True
            below, above = zip(*(_error_bar(k, low, high) for _, k in kept))
            ax.errorbar(
                x,
                y,
                yerr=[below, above],
                fmt="none",
                ecolor=colour,
                elinewidth=0.7,
                capsize=2,
                alpha=0.45,
                gid=_gid("elo-errors", f"{arm.name}-{unit.label}"),
            )
        mean = [m for m in arm.mean if _finite(getattr(m, mean_x), m.elo)]
        if mean:
            x = [getattr(m, mean_x) + shift for m in mean]
            bounds = [_bounds(m) for m in mean]
            ax.fill_between(
                x,
                [max(b[0], low) for b in bounds],
                [min(b[1], high) for b in bounds],
                color=colour,
                alpha=0.15,
                linewidth=0,
                gid=_gid("elo-band", arm.name),
            )
            ax.plot(
                x,
                [m.elo for m in mean],
                linewidth=2.6,
                color=colour,
                gid=_gid("elo-mean", arm.name),
                label=arm.name,
            )
            notes += _clipped_band(arm, mean, low, high, experiment)
    for anchor, elo in experiment.rating.anchors.items():
        if not _finite(elo):
            continue
        if low <= elo <= high:
            ax.axhline(elo, color="#888", linestyle=":", linewidth=1)
            ax.annotate(
                f"{anchor} {elo:.0f}",
                (0, elo),
                color="#666",
                fontsize=7,
                xytext=(2, 2),
                textcoords="offset points",
                xycoords=("axes fraction", "data"),
            )
        else:
            side = "above" if elo > high else "below"
            notes.append(f"The anchor {anchor} ({elo:.0f}) lies {side} the axis.")
    ax.set_ylim(low, high)
    ax.set_xlim(left, right)
    _thousands(ax)
    ax.set_xlabel(label)
    ax.set_ylabel("Elo (ladder scale)")
    # beside the axes: inside, it hid the anchors' labels and the bands
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8)
    ax.set_title("Elo of the kept nets (95% intervals): units thin, arm means thick", loc="left")
    return svg_text(fig), notes


def pairs_chart(experiment: ExperimentResult) -> tuple[str, list[str]]:
    """The verdict's evidence, one panel an arm against the baseline: each unit's difference
    (circle: its nets played each other; square: two ratings against the anchors) with its
    95% interval, and below them their mean with the rule's interval (a diamond). The axis
    fits the differences, their intervals and 0; a mean's interval wider than that is clipped
    and the returned notes say where it reaches."""
    verdict = experiment.verdict
    comparisons = [c for c in verdict.comparisons if c.differences] if verdict else []
    if not comparisons:
        fig, (ax,) = new_figure(1, 1.6)
        mark_empty(ax, "paired difference")
        return svg_text(fig), []
    z = _z(verdict.confidence if verdict else 0.95)
    heights = [len(c.differences) + 1 for c in comparisons]
    fig, _ = new_figure(1, sum(0.3 * h + 0.9 for h in heights))
    fig.clear()  # the report's figure (its size and text settings), one panel a comparison
    axes = fig.subplots(len(comparisons), 1, squeeze=False, height_ratios=heights)[:, 0]
    colours = {a.name: f"C{i}" for i, a in enumerate(experiment.arms)}
    notes = []
    for ax, c in zip(axes, comparisons):
        colour = colours.get(c.arm, "C1")
        rows = c.pair_rows()
        ys = list(range(len(rows), 0, -1))
        bars = [_pair_interval(d, e, z) for _, d, e, _ in rows]
        low, high = _fit([d for _, d, _, _ in rows] + [0.0, c.difference], bars)
        for y, (unit, d, _, measure), (lo, hi) in zip(ys, rows, bars):
            ax.hlines(y, max(lo, low), min(hi, high), color=colour, linewidth=1.4)
            ax.plot(
                [d],
                [y],
                marker="o" if measure == "head-to-head" else "s",
                color=colour,
                markersize=5,
                linestyle="none",
                gid=_gid("pair", f"{c.arm}-{unit}"),
            )
        if _finite(c.difference):
            lo, hi = _ends(c.ci95) if c.ci95 else (c.difference, c.difference)
            ax.hlines(0, max(lo, low), min(hi, high), color="#222", linewidth=2.6)
            ax.plot(
                [c.difference],
                [0],
                marker="D",
                color="#222",
                markersize=7,
                gid=_gid("pair-mean", c.arm),
            )
            if lo < low or hi > high:
                notes.append(
                    f"The {_pct(verdict)} interval of {c.arm}'s mean difference, "
                    f"[{_signed(c.ci95[0])}, {_signed(c.ci95[1])}], runs past the axis: drawn "
                    "clipped."
                )
        for _, d, e, _ in rows:
            if e is not None and not math.isfinite(e):
                notes.append(f"A difference of {c.arm} ({_signed(d)}) has an open interval.")
                break
        ax.axvline(0, color="#888", linestyle=":", linewidth=1)
        ax.set_xlim(low, high)
        ax.set_yticks([*ys, 0], [*(u for u, _, _, _ in rows), f"mean of {c.pairs}"])
        ax.set_ylim(-0.7, len(rows) + 0.7)
        ax.tick_params(labelsize=8)
        ax.set_xlabel(f"Elo difference, {c.arm} − {c.vs}", fontsize=8)
        ax.set_title(
            f"{c.arm} against {c.vs}: each unit's difference and their mean, "
            f"{_pct(verdict)} intervals ({c.conclusion})",
            loc="left",
            fontsize=9,
        )
    return svg_text(fig), notes


def selfplay_chart(arms: Sequence[ArmResult]) -> str:
    """The training games' statistics against evaluations, one panel a statistic and one line
    an arm (the mean over its units, generation by generation): whether a method changes the
    data it trains on (more decisive games, more distinct positions) is what explains a
    difference in Elo, or its absence."""
    keys = [(k, t) for k, t in SELFPLAY_KEYS if any(_series(arm, k) for arm in arms)]
    if not keys:
        fig, (ax,) = new_figure(1, 1.6)
        mark_empty(ax, "self-play statistics")
        return svg_text(fig)
    from matplotlib.ticker import MaxNLocator

    columns = 2 if len(keys) > 1 else 1
    rows = math.ceil(len(keys) / columns)
    fig, _ = new_figure(rows, 2.3)
    fig.clear()  # the report's figure (its size and text settings), laid out as a grid
    grid = fig.subplots(rows, columns, squeeze=False)
    axes = [ax for row in grid for ax in row]
    forks = sorted({u.fork_point for arm in arms for u in arm.seeds if u.fork_point >= 0})
    for ax, (key, title) in zip(axes, keys):
        for index, arm in enumerate(arms):
            # a fork experiment's units start from different nets (pilot-trunk: games of ~200
            # plies at its first fork point, ~120 at its second): one line a fork point, each
            # in its arm's colour and line, the points told apart by their markers
            for point in forks or [None]:
                series = _series(arm, key, point)
                if not series:
                    continue
                ax.plot(
                    *zip(*series),
                    marker="os^Dv"[(index if point is None else point) % 5],
                    markersize=3,
                    linestyle=("-", "--", ":", "-.")[index % 4],  # arms alike stay visible
                    color=f"C{index}",
                    label=arm.name if point is None else f"{arm.name}, fork {point}",
                    gid=_gid(
                        f"stats-{key}", arm.name if point is None else f"{arm.name}-fork-{point}"
                    ),
                )
        ax.set_title(title, loc="left", fontsize=9)
        _thousands(ax)
        ax.xaxis.set_major_locator(MaxNLocator(4))  # half a page wide: "350,000" fits 4 times
        ax.tick_params(labelsize=7)
    axes[0].legend(loc="best", frameon=False, fontsize=7)
    for ax in axes[len(keys) :]:
        ax.set_visible(False)
    fig.supxlabel("network evaluations of generation (per arm-unit)", fontsize=8)
    return svg_text(fig)


def _budget_axis(experiment: ExperimentResult) -> tuple[str, str, str]:
    """Which field of a kept net and of an arm's mean gives the x axis, and its label: the
    budget's own unit, so the checkpoints fall where the spec put them. A kept net records its
    CPU seconds as ``cpu_s``; a mean only its nominal ``checkpoint`` (in the budget's unit)."""
    budget = experiment.budget
    if not budget.evaluations and budget.cpu_seconds:
        return "cpu_s", "checkpoint", "CPU seconds (per arm-unit)"
    if not budget.evaluations and budget.minutes:
        return "minutes", "checkpoint", "wall-clock minutes (per arm-unit)"
    return "evaluations", "evaluations", "network evaluations of generation (per arm-unit)"


def _budget_span(experiment: ExperimentResult, xs: Sequence[float]) -> tuple[float, float]:
    """The x axis of the Elo chart: from nothing spent to the whole budget, so a chart of the
    start nets alone (all at 0) is already the scale the experiment will fill; wider where a
    net lies beyond it."""
    budget = experiment.budget
    whole = budget.evaluations or budget.cpu_seconds or budget.minutes
    low, high = min([0.0, *xs]), max([float(whole), *xs])
    if high <= low:
        high = low + 1.0
    margin = (high - low) * 0.03
    return low - margin, high + margin


def _series(arm: ArmResult, key: str, fork_point: int | None = None) -> list[tuple[float, float]]:
    """(evaluations, mean of ``key``) over the arm's units (those of ``fork_point`` where one is
    given), the budget cut into as many equal bins as the median unit has generations: a
    generation sits at the middle of its own spend, and each bin's point is its generations'
    mean weighted by their games. Averaging generation k of every unit instead would give a
    point of its own to the one game a budget cut some unit's last generation to (in
    pilot-trunk: a 512-ply mean length where the rest played ~110), and mix generations of
    very different spend. Units that lack the key (older runs, other methods) are left out."""
    placed: list[tuple[float, int, float]] = []  # (middle of spend, games, value)
    ends: list[float] = [0.0]
    counts: list[int] = []  # generations a unit
    for unit in arm.seeds:
        if fork_point is not None and unit.fork_point != fork_point:
            continue
        spent = 0.0
        generations = sorted(unit.generations, key=lambda g: g.iteration)
        counts.append(len(generations))
        for gen in generations:
            own = float(gen.evaluations) if _finite(gen.evaluations) else 0.0
            value = (gen.selfplay or {}).get(key)
            if _finite(value):
                placed.append((spent + own / 2, max(int(gen.games), 1), float(value)))
            spent += own
        ends.append(spent)
    nbins = max(1, math.ceil(statistics.median(counts))) if counts else 1
    width = max(ends) / nbins
    bins: dict[int, list[tuple[float, int, float]]] = {}
    for point in placed:
        index = min(int(point[0] / width), nbins - 1) if width > 0 else 0
        bins.setdefault(index, []).append(point)
    series = []
    for _, points in sorted(bins.items()):
        games = sum(g for _, g, _ in points)
        series.append(
            (sum(x * g for x, g, _ in points) / games, sum(v * g for _, g, v in points) / games)
        )
    return series


def _fit(values: Iterable, bars: Iterable[tuple[float, float]]) -> tuple[float, float]:
    """An axis's range that holds the finite ``values`` and the finite ends of ``bars``, with
    a margin."""
    ends = [v for v in values if _finite(v)]
    ends += [e for bar in bars for e in bar if _finite(e)]
    if not ends:
        return -MIN_PAD, MIN_PAD
    low, high = min(ends), max(ends)
    pad = max((high - low) * PAD, MIN_PAD)
    return low - pad, high + pad


def _error_bar(net: KeptNet, low: float, high: float) -> tuple[float, float]:
    """A net's interval as (below, above) its Elo; an open end reaches the axis's edge."""
    elo = net.elo
    lo, hi = _ends(net.ci95)
    lo = low if lo == -math.inf else elo if math.isnan(lo) else lo
    hi = high if hi == math.inf else elo if math.isnan(hi) else hi
    return max(elo - lo, 0.0), max(hi - elo, 0.0)


def _clipped_band(
    arm: ArmResult, mean: Sequence[MeanPoint], low: float, high: float, experiment
) -> list[str]:
    """A note for the widest of an arm's mean intervals that runs past the axis."""
    past = [(m, *_bounds(m)) for m in mean]
    past = [(m, lo, hi) for m, lo, hi in past if lo < low or hi > high]
    if not past:
        return []
    m, lo, hi = max(past, key=lambda p: p[2] - p[1])
    at = _count(m.checkpoint)
    return [
        f"The 95% band of {arm.name}'s mean runs past the axis (drawn clipped): "
        f"[{lo:,.0f}, {hi:,.0f}] at {at} {_esc(experiment.budget.unit)} "
        f"({m.seeds} units{_t_note(m.seeds)})."
    ]


def _t_note(units: int) -> str:
    return ": Student's t with one degree of freedom is 12.7" if units == 2 else ""


def _pair_interval(difference: float, error: float | None, z: float) -> tuple[float, float]:
    if error is None or not _finite(difference):
        return difference, difference
    if not math.isfinite(error):
        return -math.inf, math.inf
    return difference - z * error, difference + z * error


def _z(confidence: float) -> float:
    from frugalzero.stats import two_sided

    return two_sided(confidence)


# -- the text -----------------------------------------------------------------------------------
def _intro(experiment: ExperimentResult) -> str:
    """The question, what each arm is, where the units start, the budget every arm-unit was
    held to and what it spent, and how nets were rated and compared."""
    rating = experiment.rating
    anchors = ", ".join(f"{_esc(a)} ({_number(e, '{:.0f}')})" for a, e in rating.anchors.items())
    state = "complete" if experiment.complete else "in progress: the figures may change"
    if rating.head_to_head:
        compared = (
            f"Each arm's final net played the baseline's of its unit, {_count(rating.head_to_head)}"
            " games in colour-swapped pairs on the same openings: that match's Elo is the unit's "
            "difference."
        )
    else:
        compared = "A unit's difference is its two final nets' ratings against the anchors."
    lines = [
        f"<p><b>Question.</b> {_esc(experiment.question or '-')}</p>",
        f"<p>{_esc(experiment.description)}</p>",
        "<ul>",
        *(
            f"<li><b>{_esc(a.name)}</b> ({_esc(a.method_label or a.method or '?')})"
            + (f": {_esc(a.description)}" if a.description else "")
            + "</li>"
            for a in experiment.arms
        ),
        "</ul>",
        f"<p>{_starts(experiment)}</p>",
        f"<p class=note>{_budget(experiment)} Rating: plain PUCT at {_count(rating.nodes)} "
        f"nodes, {_count(rating.games)} games a net against each of {anchors or '-'}. "
        f"{compared} State: {state}.</p>",
    ]
    return "\n".join(lines)


def _starts(experiment: ExperimentResult) -> str:
    """Where the units start: fresh weights a seed, a trunk's checkpoints, or a given net."""
    fork = experiment.fork
    units = [u.label for u in experiment.arms[0].seeds] if experiment.arms else []
    named = f" Units compared ({len(units)}): {_esc(', '.join(units) or '-')}."
    if not fork.source:
        return (
            "Each unit is a seed run from fresh weights; seed k gives every arm the same initial "
            "net, openings and random streams." + named
        )
    if fork.source != "trunk":
        return (
            f"Every arm forks from the net {_esc(fork.source)} (with no data), each unit with "
            "its own seed." + named
        )
    asked = _spec_points(experiment)
    made = [
        f"point {p.point}: trunk iteration {_count(p.iteration)}, {_count(p.evaluations)} "
        f"evaluations (asked {_count(p.target)}), net {_esc(p.net_id or '-')}"
        for p in fork.points
    ]
    waiting = len(asked) - len(fork.points) if asked else 0
    if waiting > 0:
        made.append(f"{waiting} not made yet (the trunk is running)")
    return (
        f"Every arm forks from a trunk run of {_esc(fork.trunk_arm or '-')}'s recipe (seed "
        f"{_count(fork.trunk_seed)}), its net and its replay window at each fork point: "
        f"{'; '.join(made) or '-'}. Each fork point is repeated with every seed." + named
    )


def _spec_points(experiment: ExperimentResult) -> list:
    fork = experiment.spec.get("fork") if isinstance(experiment.spec, dict) else None
    points = fork.get("points") if isinstance(fork, dict) else None
    return points if isinstance(points, list) else []


def _budget(experiment: ExperimentResult) -> str:
    """The budget in its unit, the checkpoints, and what the finished arm-units spent."""
    budget = experiment.budget
    checkpoints = ", ".join(_count(c) for c in budget.checkpoints)
    if budget.evaluations:
        amount = f"{_count(budget.evaluations)} network evaluations of generation"
    elif budget.cpu_seconds:
        amount = f"{_count(budget.cpu_seconds)} CPU seconds"
    else:
        amount = f"{_count(budget.minutes)} wall-clock minutes"
    text = (
        f"Budget per arm-unit: {amount}; nets kept and rated at {checkpoints or '-'} "
        f"{_esc(budget.unit)} and at the start."
    )
    units = [u for a in experiment.arms for u in a.seeds]
    done = [u for u in units if u.finished]
    if budget.evaluations and done:
        spent = sorted({u.evaluations for u in done})
        if spent == [budget.evaluations]:
            text += f" Every finished arm-unit spent exactly {_count(budget.evaluations)}."
        else:
            text += f" The finished arm-units spent {_count(spent[0])} to {_count(spent[-1])}."
    if len(done) < len(units):
        text += f" {len(done)} of {len(units)} arm-units finished."
    return text


def _kind(experiment: ExperimentResult) -> str:
    return "fork" if experiment.fork.source else "seed"


COMPARISONS = ("arm", "vs", "at evaluations", "pairs", "difference", "95% interval", "p")
COMPARISONS += ("conclusion",)


def _verdict(verdict: Verdict | None, kind: str) -> str:
    """The sentence that answers the question, the rule it follows, and one row a comparison;
    the minimum detectable effect beside it says how large a difference the units could see."""
    if verdict is None:
        return "<p class=verdict>No verdict yet: no arm has reached the final checkpoint.</p>"
    rows = []
    for c in verdict.comparisons:
        cells = (
            _esc(c.arm),
            _esc(c.vs),
            _count(c.checkpoint),
            f"{_count(c.pairs)} {kind}",
            _number(c.difference, "{:+.0f}"),
            _interval(c.ci95),
            _number(c.p_value, "{:.3f}"),
            _conclusion(c.conclusion),
        )
        rows.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    header = "<tr>" + "".join(f"<th>{h}</th>" for h in COMPARISONS) + "</tr>"
    return "\n".join(
        [
            f"<p class=verdict>{_esc(verdict.text or '-')}</p>",
            f'<table class="summary">{header}{"".join(rows)}</table>',
            f"<p class=note>Baseline {_esc(verdict.baseline or '-')}; minimum detectable "
            f"effect {_mde(verdict.mde_elo, kind)} (from an assumed seed s.d. of "
            f"{_number(verdict.seed_sd, '{:.0f}')} Elo{_rating_error(verdict)}, stated "
            "before the runs). "
            f"Rule: {_esc(verdict.rule or '-')}.</p>",
        ]
    )


def _rating_error(verdict: Verdict) -> str:
    """The rating error the MDE holds, where the verdict states one (older ones do not)."""
    error = verdict.rating_error_sd
    return "" if error is None else f" and a rating error of {_number(error, '{:.0f}')} a pair"


PAIRS = ("unit", "measured by", "difference", "95% interval", "head-to-head score")


def _pair_tables(experiment: ExperimentResult) -> str:
    """The pairs chart as numbers, one table a comparison: each unit's difference, how it was
    measured and its interval (its head-to-head score where the nets played), then the mean
    with the rule's interval and conclusion."""
    verdict = experiment.verdict
    if verdict is None:
        return ""
    z = _z(verdict.confidence)
    out = []
    for c in verdict.comparisons:
        if not c.differences:
            continue
        arm = experiment.arm(c.arm)
        rows = []
        for unit, d, e, measure in c.pair_rows():
            own = arm.unit(unit) if arm else None
            cells = (
                _esc(unit),
                _esc(measure),
                _number(d, "{:+.0f}"),
                _interval(_pair_interval(d, e, z)) if e is not None else "-",
                _score(own, verdict.confidence) if measure == "head-to-head" else "-",
            )
            rows.append("<tr>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
        mean = (
            f"mean of {_count(c.pairs)}",
            "Student's t" if c.pairs > 1 else "normal, with the assumed seed s.d.",
            _number(c.difference, "{:+.0f}"),
            _interval(c.ci95),
            _conclusion(c.conclusion),
        )
        rows.append('<tr class="mean">' + "".join(f"<td>{x}</td>" for x in mean) + "</tr>")
        header = "<tr>" + "".join(f"<th>{h}</th>" for h in PAIRS) + "</tr>"
        out.append(
            f"<p class=note><b>{_esc(c.arm)} − {_esc(c.vs)}</b> at {_count(c.checkpoint)} "
            f"{_esc(experiment.budget.unit)}: {_spread(c, verdict)}.</p>"
            f'<table class="summary">{header}{"".join(rows)}</table>'
        )
    return "\n".join(out)


def _spread(c: Comparison, verdict: Verdict) -> str:
    """The two parts of the differences' spread, as measured (one pair has no spread), and what
    that spread can see: with these pairs, and the pairs a follow-up needs for the verdict's
    target (older records hold neither)."""
    error = _number(c.rating_error_sd, "{:.0f}")
    if c.spread_sd is None:
        return f"one pair, its rating error {error}"
    text = (
        f"spread of the differences {_number(c.spread_sd, '{:.0f}')}, their rating error "
        f"{error} (root mean square), the seed s.d. that leaves {_number(c.seed_sd, '{:.0f}')}"
    )
    if c.mde_measured is None:
        return text
    text += f"; at that spread these pairs detect {_mde(c.mde_measured)}"
    if verdict.follow_up_mde:
        pairs = c.follow_up_pairs
        need = f"{_count(pairs)} pairs" if pairs else "more than a million pairs"
        text += (
            f", and a follow-up rated the same way needs {need} for {verdict.follow_up_mde:.0f} Elo"
        )
    return text


def _score(unit: UnitResult | None, confidence: float) -> str:
    """``62% of 8 games``: the arm's score against the baseline's net of the same unit."""
    match = unit.head_to_head_match(confidence) if unit else None
    if match is None:
        return "-"
    return f"{100 * match.score:.0f}% of {_count(2 * match.pairs)} games"


def _arm_means(experiment: ExperimentResult) -> str:
    """The chart's thick lines as numbers: each arm's mean Elo at each checkpoint, with the
    evaluations its nets spent there."""
    arms = experiment.arms
    marks = sorted({m.checkpoint for a in arms for m in a.mean if _finite(m.checkpoint)})
    if not marks:
        return ""
    unit = experiment.budget.unit
    header = "<tr><th>arm</th>" + "".join(f"<th>{_count(c)}</th>" for c in marks) + "</tr>"
    rows = []
    for arm in arms:
        at = {m.checkpoint: m for m in arm.mean}
        cells = [_esc(arm.name), *(_mean_cell(at.get(c), experiment) for c in marks)]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    caption = (
        f"<p class=note>Mean Elo [95% interval] (units rated) at each checkpoint of the budget "
        f"({_esc(unit)}; 0: the start), and the network evaluations its nets spent.</p>"
    )
    return f'{caption}<table class="summary">{header}{"".join(rows)}</table>'


def _mean_cell(mean: MeanPoint | None, experiment: ExperimentResult) -> str:
    if mean is None or not _finite(mean.elo):
        return "-"
    spent = f", spent {_count(mean.evaluations)}" if mean.checkpoint else ""
    return f"{_elo(mean.elo, mean.ci95)} ({_count(mean.seeds)}{spent})"


def _conclusion(conclusion: str) -> str:
    """A conclusion in its colour; others ("not yet rated") stay plain."""
    known = conclusion in ("better", "worse", "inconclusive")
    return f'<span class="{conclusion if known else "pending"}">{_esc(conclusion)}</span>'


def _mde(mde, kind: str = "seed") -> str:
    if _finite(mde):
        return f"{mde:.1f} Elo"
    return f"none (fewer than two {kind} pairs)"


def _without_stats(arms: Sequence[ArmResult]) -> str:
    """Names the arms missing from the statistics chart, so an absent line is not read as a
    flat one."""
    missing = [a.name for a in arms if not any(_series(a, k) for k, _ in SELFPLAY_KEYS)]
    if not missing:
        return ""
    return f"<p class=note>No self-play statistics recorded for: {_esc(', '.join(missing))}.</p>"


SEEDS = ("arm", "unit", "evaluations spent", "games", "positions", "wall / CPU min")
SEEDS += ("last net: Elo [95%] (spent)", "vs baseline", "finished")


def _seed_table(experiment: ExperimentResult) -> str:
    """One row an arm-unit: what it spent, the Elo of its last kept net and what that net had
    spent (a net kept but not rated yet shows as "not rated"), and its head-to-head score
    against the baseline's final net."""
    verdict = experiment.verdict
    baseline = verdict.baseline if verdict else ""
    confidence = verdict.confidence if verdict else 0.95
    rows = []
    for arm in experiment.arms:
        for unit in arm.seeds:
            last = unit.kept[-1] if unit.kept else None
            if last is None:
                net = "-"
            else:
                elo = _elo(last.elo, last.ci95) if _finite(last.elo) else "not rated"
                net = f"{elo} ({_count(last.evaluations)})"
            cells = (
                _esc(arm.name),
                _esc(unit.label),
                _count(unit.evaluations),
                _count(unit.games),
                _count(unit.positions),
                f"{_number(unit.wall_s / 60, '{:,.1f}')} / {_number(unit.cpu_s / 60, '{:,.1f}')}",
                net,
                "baseline" if arm.name == baseline else _score(unit, confidence),
                "yes" if unit.finished else "no",
            )
            rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    header = "<tr>" + "".join(f"<th>{h}</th>" for h in SEEDS) + "</tr>"
    runs = (
        "<p class=note>Each arm-unit is a run of its own, in arms/ARM/UNIT/ (with its report).</p>"
    )
    return f'<table class="summary seeds">{header}{"".join(rows)}</table>{runs}'


def _notes(notes: Sequence[str]) -> str:
    return "".join(f"<p class=note>{_esc(n)}</p>" for n in notes)


def _chart(svg: str) -> str:
    return f'<div class="chart">{svg}</div>'


def _thousands(ax) -> None:
    """Evaluations run to millions: 1.25M reads faster than a 1e6 offset, and unlike
    1,250,000 its neighbours' labels leave it room."""
    from matplotlib.ticker import FuncFormatter

    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: _short_count(x)))


def _short_count(x: float) -> str:
    """``x`` in thousands (k) from 10,000 and in millions (M) from 1,000,000, to three
    significant digits; a minus sign as matplotlib writes one."""
    if x == 0:
        return "0"  # never "-0"
    for scale, suffix, start in ((1e6, "M", 1e6), (1e3, "k", 1e4)):
        if abs(x) >= start:
            return f"{x / scale:.3g}{suffix}".replace("-", "\u2212")
    return f"{x:,.0f}".replace("-", "\u2212")


def _gid(kind: str, name: str) -> str:
    """An SVG id for an arm's artist (``elo-mean-puct``), so a test or a reader's script can
    find one arm's line; arm names are reduced to characters safe in an id."""
    return f"{kind}-{re.sub(r'[^A-Za-z0-9_-]', '_', name)}"


def _ends(ci95) -> tuple[float, float]:
    """An interval's two ends as floats: an open end is infinite, a missing one NaN (which
    no range takes and no bar draws)."""
    ends = [*list(ci95 or [])[:2], None, None][:2]
    number = (int, float)
    out = [
        float(x) if isinstance(x, number) and not isinstance(x, bool) else math.nan for x in ends
    ]
    return out[0], out[1]


def _number_like(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _bounds(record: MeanPoint) -> tuple[float, float]:
    """The 95% interval of a mean; an end that is missing or open is drawn at the mean."""
    elo = record.elo
    low, high = (x if _finite(x) else elo for x in _ends(record.ci95))
    return low, high


def _pct(verdict: Verdict | None) -> str:
    return f"{100 * (verdict.confidence if verdict else 0.95):g}%"


def _finite(*values) -> bool:
    return all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in values
    )


def _esc(value) -> str:
    return html.escape("-" if value is None else str(value))


def _count(value) -> str:
    """A whole number with grouped digits, or the value as written ("-" when missing)."""
    if _finite(value):
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,}"
    return _esc(value)


def _number(value, fmt: str) -> str:
    return fmt.format(value) if _finite(value) else _esc(value)


def _signed(value) -> str:
    return _number(value, "{:+.0f}")


def _interval(ends) -> str:
    """``[-180, +250]``; an open end is written as is (``inf``)."""
    if not ends:
        return "-"
    return "[" + ", ".join(_signed(x) for x in list(ends)[:2]) + "]"


def _elo(elo, ends) -> str:
    """``610 [530, 690]``, as the run report writes an Elo."""
    if not ends:
        return _number(elo, "{:.0f}")
    low, high = (_number(x, "{:.0f}") for x in list(ends)[:2])
    return f"{_number(elo, '{:.0f}')} [{low}, {high}]"
