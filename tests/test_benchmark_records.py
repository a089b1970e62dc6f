"""The committed run records (benchmarks/results) stay what RESULTS.md says they are: each
ladder rating comes back from its committed games alone, and a kept final net is the one its run
ended with. A new calibration table or a change to the rating fails here until the records are
re-rated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frugalzero.cli import main
from frugalzero.nn.checkpoint import load_net

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
RATED = sorted(p.parent for p in RESULTS.glob("*/*/ladder.pgn"))
NETS = sorted(p.parent for p in RESULTS.glob("*/*/final.safetensors"))


@pytest.mark.parametrize("record", RATED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_ladder_record_rerates_from_its_pgn(record: Path, capsys) -> None:
    """The command RESULTS.md gives for it: the games alone, none played (its net may be gone)."""
    published = json.loads((record / "ladder.json").read_text())
    pgn = record / "ladder.pgn"
    games = pgn.read_bytes()
    argv = ["ladder", published["engine"], "--pgn", str(pgn), "--resume", "--games-per-rung", "0"]
    assert main([*argv, "--json"]) == 0
    rated = json.loads(capsys.readouterr().out)
    assert pgn.read_bytes() == games
    assert rated["games"] == published["games"]
    assert rated["elo"] == pytest.approx(published["elo"], abs=0.05)
    assert rated["elo_ci95"] == pytest.approx(published["elo_ci95"], abs=0.05)


@pytest.mark.parametrize("record", NETS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_kept_net_is_the_runs_final_net(record: Path) -> None:
    state = json.loads((record / "state.json").read_text())
    _, meta = load_net(record / "final.safetensors")
    assert meta.net_id == state["iterations"][-1]["net_id"]


def test_the_records_hold_what_the_tests_check() -> None:
    assert len(RATED) >= 4 and NETS  # a moved results folder must not pass vacuously


def test_contempt_tables_recount_from_the_committed_pgn() -> None:
    """benchmarks/CONTEMPT.md's tables are what its script counts in the committed games."""
    import importlib.util

    script = RESULTS.parent / "contempt_report.py"
    spec = importlib.util.spec_from_file_location("contempt_report", script)
    assert spec is not None and spec.loader is not None
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    assert report.main(["--check"]) == 0
