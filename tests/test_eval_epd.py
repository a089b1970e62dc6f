"""eval-epd: an engine's best-move rate on a suite, and labelling a suite with an engine."""

from __future__ import annotations

import json
from pathlib import Path

import chess

from frugalzero.cli import main
from frugalzero.evaluate.epd import read_epd


def _suite(tmp_path: Path) -> Path:
    only = chess.Board("k7/8/1K6/8/8/8/8/2R5 b - - 0 1")  # Black's king has one move
    assert only.legal_moves.count() == 1
    start = chess.Board()
    lines = [
        only.epd(bm=list(only.legal_moves), id="forced"),
        start.epd(bm=[chess.Move.from_uci("e2e4")], id="start"),
        "this is not a position",
        start.epd(id="no bm"),
    ]
    path = tmp_path / "suite.epd"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_read_epd_counts_what_it_cannot_read(tmp_path: Path):
    positions, skipped = read_epd(_suite(tmp_path))
    assert [p.ident for p in positions] == ["forced", "start", "no bm"] and skipped == 1
    assert positions[2].best == [] and positions[1].best == [chess.Move.from_uci("e2e4")]
    assert len(read_epd(_suite(tmp_path), limit=2)[0]) == 2


def test_eval_epd_grades_and_labels(tmp_path: Path, tiny_net, capsys):
    from frugalzero.nn.checkpoint import save_net

    suite = _suite(tmp_path)
    assert main(["eval-epd", str(suite), "--engine", "random", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["positions"], out["skipped"], out["with_bm"]) == (3, 1, 2)
    assert out["solved"] >= 1  # the forced move, whatever random plays at the start

    net = tmp_path / "tiny.safetensors"
    save_net(tiny_net, net)
    engine = f"net:{net}?nodes=1&compile=off&backend=inline"
    labelled = tmp_path / "labelled.epd"
    args = ["eval-epd", str(suite), "--engine", engine, "--write", str(labelled), "--json"]
    assert main(args) == 0
    capsys.readouterr()
    positions, skipped = read_epd(labelled)
    assert len(positions) == 3 and skipped == 0 and all(len(p.best) == 1 for p in positions)
    # the raw policy is deterministic: on its own labels it scores 100%
    assert main(["eval-epd", str(labelled), "--engine", engine, "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["solved"] == again["with_bm"] == 3 and again["top1_pct_ci95"][0] == 100.0
    assert main(["eval-epd", str(tmp_path / "missing.epd"), "--engine", "random"]) == 2
