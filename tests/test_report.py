"""The HTML report: read from a run directory, self-contained, and working in a real browser."""

from __future__ import annotations

import html
import json
import random
import re
import shutil
import subprocess
from pathlib import Path

import chess
import chess.pgn
import pytest

from frugalzero.cli import main
from frugalzero.config import dump_toml, to_dict
from frugalzero.pipeline.config import RunConfig

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _game(moves: list[str], white: str, black: str) -> str:
    board = chess.Board()
    for uci in moves:
        board.push_uci(uci)
    game = chess.pgn.Game.from_board(board)
    game.headers.update(White=white, Black=black, Result=board.result(claim_draw=True))
    return str(game) + "\n\n"


def make_run(path: Path, iterations: int = 2, seed: int = 0) -> Path:
    """A run directory as ``frugalzero run`` leaves it, small: config, state, the trainer's
    metrics and two match games."""
    rng = random.Random(seed)
    (path / "train").mkdir(parents=True)
    (path / "matches").mkdir()
    (path / "config.toml").write_text(dump_toml(to_dict(RunConfig(method="sfgames"))))
    records, lines, step = [], [], 0
    for k in range(1, iterations + 1):
        for _ in range(5):
            step += 10
            loss = 3.0 / (1 + step / 50)
            lines.append({"kind": "train", "iteration": k, "step": step, "policy_loss": loss})
            lines[-1]["value_loss"] = loss / 3
        elo = 600 + 150 * k + rng.uniform(-30, 30)
        validation = {"policy_loss": 2.9 - 0.1 * k, "value_loss": 0.9 - 0.05 * k}
        records.append(
            {
                "iteration": k,
                "positions": 10_000 + 1_000 * k,
                "generate_s": 60.0,
                "train_s": 90.0,
                "evaluate_s": 30.0,
                "elo": elo,
                "elo_ci95": [elo - 120, "inf" if k == 1 else elo + 120],  # an open end, as written
                "validation": {"traversing": validation},
            }
        )
    state = {"iteration": iterations, "iterations": records, "elapsed_s": 540.0}
    (path / "state.json").write_text(json.dumps(state))
    (path / "train" / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    fools = ["f2f3", "e7e5", "g2g4", "d8h4"]
    opening = ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "b5a4", "g8f6"]
    pgn = _game(fools, "iter-0001", "random") + _game(opening, "random", "iter-0001")
    (path / "matches" / "iter-0001-vs-random.pgn").write_text(pgn)
    return path


def _games(page: str) -> list[dict]:
    found = re.search(r'<script type="application/json" id="games-data">(.*?)</script>', page)
    assert found is not None
    return json.loads(found.group(1).replace("<\\/", "</"))


def test_a_run_becomes_one_self_contained_page(tmp_path, capsys):
    run = make_run(tmp_path / "demo-run")
    assert main(["report", str(run)]) == 0
    out = Path(capsys.readouterr().out.strip())
    assert out == run / "report.html"
    page = out.read_text()
    assert page.count("<svg") == 4  # the timeline, Elo, the losses (two panels), data
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing fetched when viewed
    games = _games(page)
    assert [len(g["sans"]) for g in games] == [4, 8]
    assert len(games[0]["fens"]) == 5 and games[0]["headers"]["Result"] == "0-1"
    assert "<td>demo-run</td><td>sfgames</td>" in page
    # whether it learned: first and last Elo, the final training and validation value loss
    state = json.loads((run / "state.json").read_text())["iterations"]
    first, last = (f"{r['elo']:.0f} [{r['elo_ci95'][0]:.0f}," for r in (state[0], state[-1]))
    assert page.index(first) < page.index(last)
    final = [json.loads(x) for x in (run / "train" / "metrics.jsonl").read_text().splitlines()]
    losses = (
        f"{final[-1]['value_loss']:.3f} / {state[-1]['validation']['traversing']['value_loss']:.3f}"
    )
    assert f"<td>{losses}</td>" in page
    assert 'method = "sfgames"' in html.unescape(page)  # the config, in full


def test_several_runs_overlay_in_one_page(tmp_path, capsys):
    a, b = make_run(tmp_path / "a"), make_run(tmp_path / "b", iterations=3, seed=1)
    out = tmp_path / "both.html"
    assert main(["report", str(a), str(b), "--out", str(out)]) == 0
    page = out.read_text()
    assert "<td>a</td>" in page and "<td>b</td>" in page
    assert [g["title"].split()[0] for g in _games(page)] == ["a", "a", "b", "b"]


def test_a_folder_without_a_run_is_a_one_line_error(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err


def _chromium(url: str, profile: Path, *extra: str) -> str:
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        *extra,
        url,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _board(dom: str) -> str:
    found = re.search(r'<div id="board">(.*?)</div></div>', dom)
    assert found is not None
    return re.sub(r"<[^>]+>", "|", found.group(1))


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (make test installs it)")
@pytest.mark.slow
def test_the_page_works_in_a_real_browser(tmp_path, capsys):
    run = make_run(tmp_path / "run")
    assert main(["report", str(run)]) == 0
    url = (run / "report.html").resolve().as_uri()
    start = _chromium(f"{url}#game=1", tmp_path / "profile", "--dump-dom")
    stepped = _chromium(f"{url}#game=1&click=next,next,next", tmp_path / "profile", "--dump-dom")
    assert 'data-charts="4"' in start  # every chart drawn, with a size and paths
    assert 'data-ply="0"' in start and 'data-ply="3"' in stepped
    assert _board(start) != _board(stepped)  # pressing "next" moved the pieces
    assert _board(start).count("\u265f") == 8 and _board(stepped).count("\u265f") == 8
    back = _chromium(f"{url}#game=1&click=next,next,next,first", tmp_path / "p2", "--dump-dom")
    assert _board(back) == _board(start)
    shot = tmp_path / "report.png"
    _chromium(url, tmp_path / "p3", f"--screenshot={shot}", "--window-size=1100,2400")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
