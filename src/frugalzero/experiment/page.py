"""An experiment's ``experiment.json`` as one self-contained HTML page.

The page answers the experiment's question first (the verdict, with the comparisons it rests
on and the minimum detectable effect stated before the runs), then shows the evidence: every
seed's Elo against the network evaluations it spent, the arms' means with their intervals, what
the training games looked like, and the spec that was run. It is written after every checkpoint,
so it reads a half-finished experiment too: a net not rated yet (``elo`` null), a seed still
running, an arm whose method records no self-play statistics. The charts are matplotlib SVG
inlined as in the run report (``frugalzero.report``), so the file opens offline.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

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
    ("distinct_openings", "distinct openings"),
    ("nscl", "N_scl"),
)


def write_page(experiment: dict, path: Path) -> Path:
    """Write the page of ``experiment`` (the contents of experiment.json) to ``path``
    atomically, so a reader never sees half a page, and return ``path``."""
    atomic_write_text(Path(path), build_page(experiment))
    return Path(path)


def build_page(experiment: dict) -> str:
    """The page's HTML text; a pure function of the experiment so it can be tested without
    files."""
    name = str(experiment.get("name", "experiment"))
    title = f"frugalzero experiment: {name}"
    arms = experiment.get("arms") or []
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_esc(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{_esc(title)}</h1>",
        _intro(experiment),
        "<h2>Verdict</h2>",
        _verdict(experiment.get("verdict")),
        "<h2>Strength against the budget spent</h2>",
        _chart(elo_chart(experiment)),
        _arm_means(arms),
        "<h2>The training games</h2>",
        _chart(selfplay_chart(arms)),
        _without_stats(arms),
        "<h2>Arms and seeds</h2>",
        _seed_table(arms),
        "<h2>Spec</h2>",
        f"<p class=note>SHA-256 {_esc(experiment.get('spec_sha256', '-'))}</p>",
        f"<pre>{_esc(json.dumps(experiment.get('spec', {}), indent=2, sort_keys=False))}</pre>",
        f"<script>{SCRIPT}</script></body></html>",
    ]
    return "\n".join(parts)


def elo_chart(experiment: dict) -> str:
    """Elo of every kept net against the budget spent to make it (network evaluations, or CPU
    seconds for a budget in CPU seconds): one colour an arm, each seed a thin line (the seeds'
    spread is what the verdict has to beat), the arm's mean thick with its 95% interval shaded;
    the anchors' ladder Elo as dotted lines."""
    spent, mean_x, label = _budget_axis(experiment)
    fig, (ax,) = new_figure(1, 3.6)
    drawn = False
    for index, arm in enumerate(experiment.get("arms") or []):
        colour = f"C{index}"
        name = str(arm.get("name", index))
        labelled = False
        for seed in arm.get("seeds") or []:
            points = [(k.get(spent), k.get("elo")) for k in seed.get("kept") or []]
            points = [(x, y) for x, y in points if _finite(x) and _finite(y)]
            if points:
                ax.plot(
                    *zip(*points),
                    marker="o",
                    markersize=3,
                    linewidth=0.8,
                    alpha=0.55,
                    color=colour,
                    label=None if labelled else f"{name} seeds",
                )
                labelled = drawn = True
        mean = [m for m in arm.get("mean") or [] if _finite(m.get(mean_x), m.get("elo"))]
        if mean:
            xs = [m[mean_x] for m in mean]
            ys = [m["elo"] for m in mean]
            low, high = zip(*(_bounds(m) for m in mean))
            ax.fill_between(
                xs, low, high, color=colour, alpha=0.15, linewidth=0, gid=_gid("elo-band", name)
            )
            ax.plot(
                xs,
                ys,
                linewidth=2.6,
                color=colour,
                gid=_gid("elo-mean", name),
                label=name,
            )
            drawn = True
    if drawn:
        anchors = (experiment.get("rating") or {}).get("anchors") or {}
        for anchor, elo in anchors.items():
            if _finite(elo):
                ax.axhline(elo, color="#888", linestyle=":", linewidth=1)
                ax.annotate(
                    f"{anchor} {elo:.0f}",
                    (0, elo),
                    color="#666",
                    fontsize=7,
                    xytext=(2, 2),
                    textcoords="offset points",
                )
        _thousands(ax)
        ax.set_xlabel(label)
        ax.set_ylabel("Elo (ladder scale)")
        ax.legend(loc="best", frameon=False, fontsize=8)
    else:
        mark_empty(ax, "rating")
    ax.set_title("Elo of the kept nets: seeds thin, arm means thick (95% interval)", loc="left")
    return svg_text(fig)


def selfplay_chart(arms: Sequence[dict]) -> str:
    """The training games' statistics against evaluations, one panel a statistic and one line
    an arm (the mean over its seeds, generation by generation): whether a method changes the
    data it trains on (more decisive games, more distinct positions) is what explains a
    difference in Elo, or its absence."""
    keys = [(k, t) for k, t in SELFPLAY_KEYS if any(_series(arm, k) for arm in arms)]
    if not keys:
        fig, (ax,) = new_figure(1, 1.6)
        mark_empty(ax, "self-play statistics")
        return svg_text(fig)
    columns = 2 if len(keys) > 1 else 1
    rows = math.ceil(len(keys) / columns)
    fig, _ = new_figure(rows, 2.3)
    fig.clear()  # the report's figure (its size and text settings), laid out as a grid
    grid = fig.subplots(rows, columns, squeeze=False)
    axes = [ax for row in grid for ax in row]
    for ax, (key, title) in zip(axes, keys):
        for index, arm in enumerate(arms):
            series = _series(arm, key)
            if series:
                name = str(arm.get("name", index))
                ax.plot(
                    *zip(*series),
                    marker="o",
                    markersize=3,
                    color=f"C{index}",
                    label=name,
                    gid=_gid(f"stats-{key}", name),
                )
        ax.set_title(title, loc="left", fontsize=9)
        _thousands(ax)
        ax.tick_params(labelsize=7)
    axes[0].legend(loc="best", frameon=False, fontsize=7)
    for ax in axes[len(keys) :]:
        ax.set_visible(False)
    fig.supxlabel("network evaluations of generation", fontsize=8)
    return svg_text(fig)


def _budget_axis(experiment: dict) -> tuple[str, str, str]:
    """Which key of a kept net and of an arm's mean gives the x axis, and its label: the
    budget's own unit, so the checkpoints fall where the spec put them. A kept net records its
    CPU seconds as ``cpu_s``; a mean only its nominal ``checkpoint`` (in the budget's unit)."""
    budget = experiment.get("budget") or {}
    if not budget.get("evaluations") and budget.get("cpu_seconds"):
        return "cpu_s", "checkpoint", "CPU seconds (per arm-seed)"
    if not budget.get("evaluations") and budget.get("minutes"):
        return "minutes", "checkpoint", "wall-clock minutes (per arm-seed)"
    return "evaluations", "evaluations", "network evaluations of generation (per arm-seed)"


def _series(arm: dict, key: str) -> list[tuple[float, float]]:
    """(evaluations, mean of ``key``) per generation over the arm's seeds: generation k of
    every seed is averaged and placed at its seeds' mean evaluations spent by its end (a
    generation records its own evaluations, so they are summed); seeds that lack the key
    (older runs, other methods) are left out of that point."""
    by_iteration: dict[int, list[tuple[float, float]]] = {}
    for seed in arm.get("seeds") or []:
        spent = 0.0
        generations = sorted(seed.get("generations") or [], key=lambda g: g.get("iteration", 0))
        for gen in generations:
            spent += gen.get("evaluations") if _finite(gen.get("evaluations")) else 0.0
            value = (gen.get("selfplay") or {}).get(key)
            if _finite(value):
                by_iteration.setdefault(gen.get("iteration", 0), []).append((spent, value))
    return [
        (_mean(x for x, _ in points), _mean(y for _, y in points))
        for _, points in sorted(by_iteration.items())
    ]


def _intro(experiment: dict) -> str:
    """The question, what each arm is, and the budget and rating every arm was held to."""
    budget = experiment.get("budget") or {}
    rating = experiment.get("rating") or {}
    checkpoints = ", ".join(_count(c) for c in budget.get("checkpoints") or [])
    anchors = ", ".join(
        f"{_esc(a)} ({_number(e, '{:.0f}')})" for a, e in (rating.get("anchors") or {}).items()
    )
    state = "complete" if experiment.get("complete") else "in progress: the figures may change"
    lines = [
        f"<p><b>Question.</b> {_esc(experiment.get('question', '-'))}</p>",
        f"<p>{_esc(experiment.get('description', ''))}</p>",
        "<ul>",
        *(
            f"<li><b>{_esc(a.get('name'))}</b> ({_esc(a.get('method', '?'))}): "
            f"{_esc(a.get('description', ''))}</li>"
            for a in experiment.get("arms") or []
        ),
        "</ul>",
        f"<p class=note>Budget per arm-seed: {_count(budget.get('evaluations'))} network "
        f"evaluations of generation, {_count(budget.get('cpu_seconds'))} CPU seconds, "
        f"{_count(budget.get('minutes'))} minutes (0: none); nets kept and rated at "
        f"{checkpoints or '-'} {_esc(budget.get('unit', 'evaluations'))} and at the start. "
        f"Rating: plain PUCT at "
        f"{_count(rating.get('nodes'))} nodes, {_count(rating.get('games'))} games a net "
        f"against each of {anchors or '-'}. State: {state}.</p>",
    ]
    return "\n".join(lines)


COMPARISONS = ("arm", "vs", "at evaluations", "seed pairs", "difference", "95% interval")
COMPARISONS += ("conclusion",)


def _verdict(verdict: dict | None) -> str:
    """The sentence that answers the question, the rule it follows, and one row a comparison;
    the minimum detectable effect beside it says how large a difference the seeds could see."""
    if not verdict:
        return "<p class=verdict>No verdict yet: no arm has reached the final checkpoint.</p>"
    rows = []
    for c in verdict.get("comparisons") or []:
        conclusion = str(c.get("conclusion", "-"))
        cells = (
            _esc(c.get("arm")),
            _esc(c.get("vs")),
            _count(c.get("checkpoint")),
            _count(c.get("pairs")),
            _number(c.get("difference"), "{:+.0f}"),
            _interval(c.get("ci95")),
            f'<span class="{_conclusion_class(conclusion)}">{_esc(conclusion)}</span>',
        )
        rows.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    header = "<tr>" + "".join(f"<th>{h}</th>" for h in COMPARISONS) + "</tr>"
    return "\n".join(
        [
            f"<p class=verdict>{_esc(verdict.get('text', '-'))}</p>",
            f'<table class="summary">{header}{"".join(rows)}</table>',
            f"<p class=note>Baseline {_esc(verdict.get('baseline', '-'))}; minimum detectable "
            f"effect {_mde(verdict.get('mde_elo'))} (from an assumed seed s.d. of "
            f"{_number(verdict.get('seed_sd'), '{:.0f}')} Elo{_rating_error(verdict)}, stated "
            "before the runs). "
            f"Rule: {_esc(verdict.get('rule', '-'))}.</p>",
        ]
    )


def _rating_error(verdict: dict) -> str:
    """The rating error the MDE holds, where the verdict states one (older ones do not)."""
    error = verdict.get("rating_error_sd")
    return "" if error is None else f" and a rating error of {_number(error, '{:.0f}')} a pair"


def _arm_means(arms: Sequence[dict]) -> str:
    """The chart's thick lines as numbers: each arm's mean Elo at each checkpoint."""
    marks = sorted({m.get("checkpoint") for a in arms for m in a.get("mean") or []} - {None})
    if not marks:
        return ""
    header = "<tr><th>arm</th>" + "".join(f"<th>{_count(c)}</th>" for c in marks) + "</tr>"
    rows = []
    for arm in arms:
        at = {m.get("checkpoint"): m for m in arm.get("mean") or []}
        cells = [_esc(arm.get("name")), *(_mean_cell(at.get(c)) for c in marks)]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    caption = "<p class=note>Mean Elo [95% interval] (seeds rated) at each checkpoint.</p>"
    return f'{caption}<table class="summary">{header}{"".join(rows)}</table>'


def _conclusion_class(conclusion: str) -> str:
    """The colour of a conclusion; others ("not yet rated") stay plain."""
    return conclusion if conclusion in ("better", "worse", "inconclusive") else "pending"


def _mde(mde) -> str:
    if _finite(mde):
        return f"{mde:.1f} Elo"
    return "none (fewer than two seed pairs)"


def _mean_cell(mean: dict | None) -> str:
    if not mean or not _finite(mean.get("elo")):
        return "-"
    return f"{_elo(mean.get('elo'), mean.get('ci95'))} ({_count(mean.get('seeds'))})"


def _without_stats(arms: Sequence[dict]) -> str:
    """Names the arms missing from the statistics chart, so an absent line is not read as a
    flat one."""
    missing = [str(a.get("name")) for a in arms if not any(_series(a, k) for k, _ in SELFPLAY_KEYS)]
    if not missing:
        return ""
    names = ", ".join(missing)
    return f"<p class=note>No self-play statistics recorded for: {_esc(names)}.</p>"


SEEDS = ("arm", "seed", "evaluations", "games", "positions", "wall s", "CPU s")
SEEDS += ("last net at", "its Elo [95%]", "finished", "directory")


def _seed_table(arms: Sequence[dict]) -> str:
    """One row an arm-seed: what it spent and the Elo of its last kept net (a net kept but
    not rated yet shows as "not rated")."""
    rows = []
    for arm in arms:
        for seed in arm.get("seeds") or []:
            kept = (seed.get("kept") or [{}])[-1]
            elo = kept.get("elo")
            cells = (
                _esc(arm.get("name")),
                _count(seed.get("seed")),
                _count(seed.get("evaluations")),
                _count(seed.get("games")),
                _count(seed.get("positions")),
                _number(seed.get("wall_s"), "{:,.0f}"),
                _number(seed.get("cpu_s"), "{:,.0f}"),
                _count(kept.get("evaluations")),
                _elo(elo, kept.get("ci95")) if _finite(elo) else "not rated",
                "yes" if seed.get("finished") else "no",
                _esc(seed.get("dir", "-")),
            )
            rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    header = "<tr>" + "".join(f"<th>{h}</th>" for h in SEEDS) + "</tr>"
    return f'<table class="summary seeds">{header}{"".join(rows)}</table>'


def _chart(svg: str) -> str:
    return f'<div class="chart">{svg}</div>'


def _thousands(ax) -> None:
    """Evaluations run to millions: grouped digits read faster than 1e6 offsets."""
    from matplotlib.ticker import StrMethodFormatter

    ax.xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))


def _gid(kind: str, name: str) -> str:
    """An SVG id for an arm's artist (``elo-mean-puct``), so a test or a reader's script can
    find one arm's line; arm names are reduced to characters safe in an id."""
    return f"{kind}-{re.sub(r'[^A-Za-z0-9_-]', '_', name)}"


def _bounds(record: dict) -> tuple[float, float]:
    """The 95% interval of a mean; an end that is missing or open is drawn at the mean."""
    elo = record["elo"]
    ends = record.get("ci95") or (elo, elo)
    return tuple(x if _finite(x) else elo for x in ends[:2])  # type: ignore[return-value]


def _finite(*values) -> bool:
    return all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in values
    )


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values)


def _esc(value) -> str:
    return html.escape("-" if value is None else str(value))


def _count(value) -> str:
    """A whole number with grouped digits, or the value as written ("-" when missing)."""
    if _finite(value):
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,}"
    return _esc(value)


def _number(value, fmt: str) -> str:
    return fmt.format(value) if _finite(value) else _esc(value)


def _interval(ends) -> str:
    """``[-180, +250]``; an open end (JSON "inf") is written as is."""
    if not ends:
        return "-"
    return "[" + ", ".join(_number(x, "{:+.0f}") for x in ends[:2]) + "]"


def _elo(elo, ends) -> str:
    """``610 [530, 690]``, as the run report writes an Elo."""
    if not ends:
        return _number(elo, "{:.0f}")
    low, high = (_number(x, "{:.0f}") for x in ends[:2])
    return f"{_number(elo, '{:.0f}')} [{low}, {high}]"
