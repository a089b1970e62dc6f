"""search-contempt's tables, the paper's rows beside ours, recounted from the committed PGN.

    .venv/bin/python benchmarks/contempt_report.py           # rewrite the tables and plots
    .venv/bin/python benchmarks/contempt_report.py --check   # exit 1 if CONTEMPT.md is stale

Only the part of ``benchmarks/CONTEMPT.md`` between the ``tables`` markers is written; the
prose around it is kept. A configuration without games shows a dash. The paper's numbers are
Joshi 2025 (arXiv 2504.07757), counted by us from the PGN the author published where the paper
gives only a plot; see CONTEMPT.md.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from frugalzero.evaluate.gameset import game_set, pgn_files
from frugalzero.stats import elo_interval

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "contempt"
DOC = HERE / "CONTEMPT.md"
BEGIN, END = "<!-- tables: begin -->", "<!-- tables: end -->"
NODES = 400  # our self-play's simulations a move

# name, label, N_scl (inf for PUCT), the paper's W/D/L at 1,000 nodes (None: not played there)
SELFPLAY = [
    ("nscl1", "hybrid N_scl 1", 1, None),
    ("nscl5", "hybrid N_scl 5", 5, (33, 42, 25)),
    ("nscl10", "hybrid N_scl 10", 10, (19, 56, 25)),
    ("nscl32", "hybrid N_scl 32", 32, (14, 76, 10)),
    ("nsclinf", "hybrid N_scl ∞ (paper: 10⁶)", math.inf, (3, 92, 5)),
    ("puct-tau1", "PUCT τ1", math.inf, (4, 94, 2)),
    ("puct-tau2", "PUCT τ2", math.inf, (32, 42, 26)),
]
PAPER_RATIO_N1 = 2.57  # read off the paper's Fig. 2; no games published
MOVES = (1, 2, 3, 4, 5, 10, 20)
# the paper's Fig. 4 (duplicates after k moves), counted from the author's PGN
PAPER_DUPLICATES = {
    "puct-tau2": (0.57, 0.17, 0.01, 0, 0, 0, 0),
    "puct-tau1": (0.71, 0.44, 0.27, 0.15, 0.13, 0.08, 0.02),
    "nscl5": (0.70, 0.42, 0.23, 0.15, 0.13, 0.09, 0.03),
    "nscl32": (0.68, 0.37, 0.20, 0.17, 0.14, 0.08, 0.02),
    "nsclinf": (0.69, 0.41, 0.25, 0.17, 0.16, 0.11, 0.04),
}
ODDS_NODES = (50, 200, 800)
ODDS_NSCL = 28  # the hybrid's N_scl in the odds tables (contempt_odds.sh's default)
PAPER_QUEEN_ODDS = {"puct": (23.43, 35.25, 25.40), "hybrid": (36.76, 57.81, 81.73)}  # 100/800/20k
NET = "net:default"


def _selfplay(name: str) -> dict | None:
    folder = RESULTS / f"selfplay-{NODES}" / name
    if not folder.is_dir() or not pgn_files([folder]):
        return None
    return game_set([folder], plies=2 * max(MOVES))


def _fmt(x: float | None, digits: int = 2) -> str:
    return "—" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def selfplay_table(counts: dict[str, dict | None]) -> list[str]:
    lines = [
        "| configuration | paper W/D/L | paper (w+l)/d | our games | our W/D/L % (95%) "
        "| our (w+l)/d (95%) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, label, _, paper in SELFPLAY:
        if paper:
            w, d, b = paper
            paper_cells = f"{w}/{d}/{b} | {_fmt((w + b) / d)}"
        else:
            paper_cells = f"— | ≈{PAPER_RATIO_N1} (plot)"
        c = counts[name]
        if c is None:
            ours = "0 | — | —"
        else:
            pct = "/".join(
                f"{c[k][0]:.0f}" for k in ("white_pct_ci95", "draw_pct_ci95", "black_pct_ci95")
            )
            ratio, lo, hi = c["decisive_over_draws_ci95"]
            ours = f"{c['games']} | {pct} | {_fmt(ratio)} [{_fmt(lo)}, {_fmt(hi)}]"
        lines.append(f"| {label} | {paper_cells} | {ours} |")
    return lines


def duplicates_table(counts: dict[str, dict | None]) -> list[str]:
    head = " | ".join(f"k={k}" for k in MOVES)
    lines = [f"| run | {head} |", "| --- |" + " --- |" * len(MOVES)]
    for name, label, _, _ in SELFPLAY:
        if name in PAPER_DUPLICATES:
            cells = " | ".join(_fmt(x) for x in PAPER_DUPLICATES[name])
            lines.append(f"| paper: {label} | {cells} |")
        c = counts[name]
        if c is not None:
            dup = c["duplicates_after_move"]
            cells = " | ".join(_fmt(dup[str(k)]) for k in MOVES)
            lines.append(f"| ours: {label} ({c['games']} games) | {cells} |")
    return lines


def odds_table() -> list[str]:
    folder = RESULTS / "odds"
    opponent = (folder / "opponent.txt").read_text().strip() if folder.is_dir() else ""
    lines = [
        f"Opponent: `{opponent or 'not chosen yet'}`. Win % of the side giving odds (95%), "
        "games in brackets; the paper's queen odds at 100 / 800 / 20,000 nodes.",
        "",
        "| odds | search | paper | " + " | ".join(f"{n} nodes" for n in ODDS_NODES) + " |",
        "| --- | --- | --- |" + " --- |" * len(ODDS_NODES),
    ]
    for odds in ("queen", "knight"):
        for search in ("puct", "hybrid"):
            paper = "—"
            if odds == "queen":
                paper = " / ".join(f"{x:g}" for x in PAPER_QUEEN_ODDS[search])
            cells = []
            for nodes in ODDS_NODES:
                pgn = folder / f"{odds}-{search}-{nodes}.pgn"
                if not pgn.is_file():
                    cells.append("—")
                    continue
                player = _net_player(pgn)
                c = game_set([pgn], player=player, plies=2)
                win, lo, hi = c["player_pct_ci95"]
                cells.append(f"{win:.0f} [{lo:.0f}, {hi:.0f}] ({c['games']})")
            lines.append(f"| {odds} | {search} | {paper} | " + " | ".join(cells) + " |")
    return lines


def nscl_table() -> list[str]:
    """The hybrid at queen odds and the middle node count, by N_scl (the tables use ODDS_NSCL)."""
    folder = RESULTS / "odds"
    middle = ODDS_NODES[len(ODDS_NODES) // 2]
    files = {
        10: folder / f"tune-queen-nscl10-{middle}.pgn",
        ODDS_NSCL: folder / f"queen-hybrid-{middle}.pgn",
        100: folder / f"tune-queen-nscl100-{middle}.pgn",
    }
    lines = [
        f"| N_scl (queen odds, {middle} nodes) | " + " | ".join(str(n) for n in files) + " |",
        "| --- |" + " --- |" * len(files),
    ]
    cells = []
    for pgn in files.values():
        if not pgn.is_file():
            cells.append("—")
            continue
        c = game_set([pgn], player=_net_player(pgn), plies=2)
        win, lo, hi = c["player_pct_ci95"]
        cells.append(f"{win:.0f} [{lo:.0f}, {hi:.0f}] ({c['games']})")
    lines.append("| hybrid win % (95%) | " + " | ".join(cells) + " |")
    return lines


def match_table() -> list[str]:
    pgn = RESULTS / "odds" / "hybrid5-vs-puct-400.pgn"
    lines = [
        "| match | games | hybrid W/D/L | Elo of the hybrid (95%) |",
        "| --- | --- | --- | --- |",
        "| paper: PUCT τ2 always White, hybrid N_scl 5 always Black | 100 | 37/46/17 | +70 |",
    ]
    if pgn.is_file():
        player = _net_player(pgn, hybrid=True)
        c = game_set([pgn], player=player, plies=2)
        w, d, b = c["player_wins"], c["draws"], c["opponent_wins"]
        elo, lo, hi = elo_interval(w, d, b)
        lines.append(
            f"| ours: equal noise and temperature, colours swapped, 400 nodes | {c['games']} "
            f"| {w}/{d}/{b} | {elo:+.0f} [{lo:+.0f}, {hi:+.0f}] |"
        )
    return lines


def _net_player(pgn: Path, hybrid: bool = False) -> str:
    """The net's name in a match PGN (with ``hybrid``: the net that searches with N_scl)."""
    for line in pgn.read_text().splitlines():
        if line.startswith(("[White ", "[Black ")):
            name = line.split('"')[1]
            if name.startswith(NET) and (not hybrid or "nscl=" in name):
                return name
    raise SystemExit(f"{pgn}: no {NET} player")


def plots(counts: dict[str, dict | None]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    paper = [(n, (p[0] + p[2]) / p[1]) for _, _, n, p in SELFPLAY[:5] if p and math.isfinite(n)]
    paper.insert(0, (1, PAPER_RATIO_N1))
    ax.plot(*zip(*paper), "o--", label="paper (lc0, 1,000 nodes)")
    ours = [
        (n, counts[name]["decisive_over_draws_ci95"][0])
        for name, _, n, _ in SELFPLAY[:4]
        if counts[name] and math.isfinite(counts[name]["decisive_over_draws_ci95"][0])
    ]
    if ours:
        ax.plot(*zip(*ours), "s-", label=f"ours (net:default, {NODES} nodes)")
    ax.set_xscale("log")
    ax.set_xlabel("N_scl")
    ax.set_ylabel("(w + l) / d")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "decisiveness.png", dpi=100)
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, (name, label, _, _) in enumerate(SELFPLAY):  # one colour per configuration
        c = counts[name]
        if c is not None:
            ours = [c["duplicates_after_move"][str(k)] for k in MOVES]
            ax.plot(MOVES, ours, "o-", color=f"C{i}", label=f"ours: {label}")
        if name in PAPER_DUPLICATES:
            ax.plot(MOVES, PAPER_DUPLICATES[name], "x:", color=f"C{i}", label=f"paper: {label}")
    ax.set_xlabel("moves")
    ax.set_ylabel("share of repeated games")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / "repeated.png", dpi=100)


def tables() -> tuple[str, dict[str, dict | None]]:
    counts = {name: _selfplay(name) for name, _, _, _ in SELFPLAY}
    parts = [
        BEGIN,
        "",
        f"### Decisiveness (self-play, White's view; ours at {NODES} simulations a move)",
        "",
        *selfplay_table(counts),
        "",
        "### Repeated games: (games − distinct openings of k moves) / games",
        "",
        *duplicates_table(counts),
        "",
        "### Odds chess",
        "",
        *odds_table(),
        "",
        *nscl_table(),
        "",
        "### Hybrid against PUCT",
        "",
        *match_table(),
        "",
        END,
    ]
    return "\n".join(parts), counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if CONTEMPT.md is stale")
    args = parser.parse_args(argv)
    text, counts = tables()
    doc = DOC.read_text()
    start, end = doc.index(BEGIN), doc.index(END) + len(END)
    if args.check:
        if doc[start:end] != text:
            print(f"{DOC}: the tables differ from the recount; run {Path(__file__).name}")
            return 1
        return 0
    DOC.write_text(doc[:start] + text + doc[end:])
    plots(counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
