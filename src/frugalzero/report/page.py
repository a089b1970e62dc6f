"""One HTML file: the runs' summary and config, four charts, and a board viewer for the games.

Self-contained on purpose: the charts are inline SVG, the viewer's script and its games are in
the page, so the file can be mailed, archived or opened offline. The viewer's script honours a
URL fragment (``#game=2&ply=10&click=next,next``: show a game and position, then press buttons),
which is how the browser test drives it and how a position can be linked to.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path

from frugalzero.report import charts
from frugalzero.report.games import GameView, read_games
from frugalzero.report.runs import RunData, read_run
from frugalzero.runtime.files import atomic_write_text

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 62em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table.summary { border-collapse: collapse; } .summary td, .summary th { padding: 2px 10px;
  border-bottom: 1px solid #ddd; text-align: right; } .summary th:first-child,
  .summary td:first-child { text-align: left; }
.chart svg { width: 100%; height: auto; }
pre { background: #f6f6f6; padding: 0.6em; overflow: auto; max-height: 28em; font-size: 0.85em; }
#viewer { display: flex; gap: 1.5em; align-items: flex-start; flex-wrap: wrap; }
#board { display: grid; grid-template-columns: repeat(8, 44px); border: 2px solid #555; }
#board div { width: 44px; height: 44px; font-size: 34px; line-height: 44px; text-align: center; }
#board .light { background: #f0d9b5; } #board .dark { background: #b58863; }
#moves { max-width: 30em; line-height: 1.7; } #moves span { cursor: pointer; padding: 1px 3px; }
#moves span.now { background: #ffe08a; } #game { max-width: 100%; }
.controls button { font-size: 1.1em; min-width: 2.4em; }
"""

SCRIPT = """
const GAMES = JSON.parse(document.getElementById("games-data").textContent);
const PIECES = {K:"\\u2654",Q:"\\u2655",R:"\\u2656",B:"\\u2657",N:"\\u2658",P:"\\u2659",
  k:"\\u265a",q:"\\u265b",r:"\\u265c",b:"\\u265d",n:"\\u265e",p:"\\u265f"};
let game = 0, ply = 0;
function squares(fen) {
  const out = [];
  for (const ch of fen.split(" ")[0].replace(/\\//g, "")) {
    if (/[1-8]/.test(ch)) { for (let i = 0; i < +ch; i++) out.push(""); } else out.push(PIECES[ch]);
  }
  return out;
}
function render() {
  const g = GAMES[game];
  const cells = document.querySelectorAll("#board div");
  squares(g.fens[ply]).forEach((piece, i) => { cells[i].textContent = piece; });
  for (const span of document.querySelectorAll("#moves span"))
    span.classList.toggle("now", +span.dataset.ply === ply);
  document.getElementById("where").textContent = ply + " / " + g.sans.length;
  document.getElementById("viewer").dataset.ply = ply;
}
function setPly(p) { ply = Math.max(0, Math.min(GAMES[game].sans.length, p)); render(); }
function setGame(i) {
  game = i; ply = 0;
  const g = GAMES[game], moves = document.getElementById("moves");
  moves.textContent = "";
  g.sans.forEach((san, i) => {
    if (i % 2 === 0) moves.append((i / 2 + 1) + ". ");
    const span = document.createElement("span");
    span.textContent = san; span.dataset.ply = i + 1;
    span.addEventListener("click", () => setPly(i + 1));
    moves.append(span, " ");
  });
  moves.append(g.headers.Result || "");
  document.getElementById("headers").textContent = Object.entries(g.headers)
    .map(([k, v]) => k + ": " + v).join("  \\u00b7  ");
  render();
}
function start() {
  const board = document.getElementById("board");
  for (let i = 0; i < 64; i++) {
    const cell = document.createElement("div");
    cell.className = ((Math.floor(i / 8) + i) % 2) ? "dark" : "light";
    board.append(cell);
  }
  const select = document.getElementById("game");
  GAMES.forEach((g, i) => select.add(new Option(g.title, i)));
  select.addEventListener("change", () => setGame(+select.value));
  const steps = {first: () => setPly(0), prev: () => setPly(ply - 1),
                 next: () => setPly(ply + 1), last: () => setPly(1e9)};
  for (const [name, act] of Object.entries(steps))
    document.getElementById("btn-" + name).addEventListener("click", act);
  document.addEventListener("keydown", e => {
    if (e.key === "ArrowRight") setPly(ply + 1); else if (e.key === "ArrowLeft") setPly(ply - 1);
  });
  const want = new URLSearchParams(location.hash.slice(1));
  select.value = Math.min(+(want.get("game") || 0), GAMES.length - 1);
  setGame(+select.value);
  setPly(+(want.get("ply") || 0));
  for (const name of (want.get("click") || "").split(",").filter(Boolean))
    document.getElementById("btn-" + name).click();
  const drawn = [...document.querySelectorAll(".chart svg")]
    .filter(svg => svg.getBoundingClientRect().width > 0 && svg.querySelector("path"));
  document.body.dataset.charts = drawn.length;
}
if (GAMES.length) start(); else {
  document.getElementById("viewer").textContent = "No match games yet.";
  document.body.dataset.charts = document.querySelectorAll(".chart svg").length;
}
"""


def build_report(runs: Sequence[RunData], games: Sequence[GameView]) -> str:
    """The page for ``runs`` (one, or several overlaid) and the viewer's ``games``."""
    title = "frugalzero: " + ", ".join(run.name for run in runs)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        _summary(runs),
        "<h2>Where the time went</h2>",
        _chart(charts.timeline(runs)),
        "<h2>Strength</h2>",
        _chart(charts.elo(runs)),
        "<h2>Losses</h2>",
        _chart(charts.losses(runs)),
        "<h2>Data</h2>",
        _chart(charts.data(runs)),
        "<h2>Games</h2>",
        '<div id="viewer"><div><div id="board"></div><p class="controls">'
        '<button id="btn-first">|&lt;</button><button id="btn-prev">&lt;</button>'
        '<button id="btn-next">&gt;</button><button id="btn-last">&gt;|</button> '
        '<span id="where"></span></p></div><div><select id="game"></select>'
        '<p id="headers"></p><p id="moves"></p></div></div>',
        "<h2>Config</h2>",
        *(
            f"<details><summary>{html.escape(run.name)}</summary>"
            f"<pre>{html.escape(run.config_text)}</pre></details>"
            for run in runs
        ),
        '<script type="application/json" id="games-data">'
        + json.dumps([g.to_json() for g in games]).replace("</", "<\\/")
        + "</script>",
        f"<script>{SCRIPT}</script></body></html>",
    ]
    return "\n".join(parts)


def write_report(run_dirs: Sequence[Path], out: Path) -> Path:
    """Read the runs, write their page to ``out`` (atomically) and return its path."""
    runs = [read_run(Path(d)) for d in run_dirs]
    several = len(runs) > 1
    games = [  # the newest matches first: what a user opening the report wants to see
        g for run in runs for g in read_games(run.pgn_files[::-1], run.name if several else "")
    ]
    atomic_write_text(out, build_report(runs, games))
    return out


def _chart(svg: str) -> str:
    return f'<div class="chart">{svg}</div>'


SUMMARY = (
    "run",
    "method",
    "net",
    "iterations",
    "positions",
    "minutes",
    "first Elo",
    "last Elo",
    "value loss: training / validation",
    "ladder",
)


def _summary(runs: Sequence[RunData]) -> str:
    """One row a run. Whether it learned is in two pairs of cells: its first and last
    iteration's Elo, and its final training value loss beside the last validation's (the same
    loss on held-out games: far apart, the value head memorised its games)."""
    rows = []
    for run in runs:
        first = run.iterations[0] if run.iterations else {}
        last = run.iterations[-1] if run.iterations else {}
        ladder = run.ladder or {}
        rated = ladder.get("elo")
        trained = run.training[-1].get("value_loss") if run.training else None
        held = last.get("validation", {}).get("traversing", {}).get("value_loss")
        cells = (
            run.name,
            run.method,
            run.arch,
            str(len(run.iterations)),
            f"{sum(r.get('positions', 0) for r in run.iterations):,}",
            f"{run.elapsed_s / 60:.1f}",
            _elo_text(first.get("elo"), first.get("elo_ci95")),
            _elo_text(last.get("elo"), last.get("elo_ci95")),
            f"{_loss_text(trained)} / {_loss_text(held)}",
            _elo_text(rated, ladder.get("elo_ci95")) if rated is not None else "-",
        )
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    header = "<tr>" + "".join(f"<th>{h}</th>" for h in SUMMARY) + "</tr>"
    return f'<table class="summary">{header}{"".join(rows)}</table>'


def _loss_text(loss) -> str:
    return f"{loss:.3f}" if isinstance(loss, int | float) else "-"


def _elo_text(elo, interval) -> str:
    """``1234 [1100, 1370]``; an open end of the interval (JSON "inf") is written as is."""
    if not isinstance(elo, int | float):
        return "-"
    if not interval:
        return f"{elo:.0f}"
    ends = [f"{x:.0f}" if isinstance(x, int | float) else str(x) for x in interval]
    return f"{elo:.0f} [{ends[0]}, {ends[1]}]"
