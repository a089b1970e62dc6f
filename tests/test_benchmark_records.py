"""The committed run records (benchmarks/results) stay what benchmarks/RESULTS.md says they are:
each ladder rating comes back from its committed games alone, and a kept final net is the one its
run ended with. A new calibration table or a change to the rating fails here until the records
are re-rated.

Cheap by design, so the file does not grow slow with every record: a rating is recomputed with
the ladder's own functions, exactly what ``frugalzero ladder ENGINE --pgn F --resume
--games-per-rung 0`` does without the CLI and its engine setup, and a kept net is checked from
its safetensors header alone (its bytes are pinned by benchmarks/results/nets.json, see
test_benchmark_pages.py)."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from frugalzero.evaluate.ladder import LadderConfig, load_table, resumed_tallies, run_ladder
from frugalzero.evaluate.match import MatchConfig

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
RATED = sorted(p.parent for p in RESULTS.glob("*/*/ladder.pgn"))
NETS = sorted(p.parent for p in RESULTS.glob("*/*/final.safetensors"))


def _no_games(*_args: object) -> object:
    raise AssertionError("re-rating a record must play no game")


def rerate(pgn: Path, engine: str) -> dict:
    """``ladder ENGINE --pgn PGN --resume --games-per-rung 0 --json`` on the shipped table: the
    games in the PGN rated, none played (the CLI's ``_climb`` with every rung selected)."""
    rungs = load_table().rungs
    resumed, _ = resumed_tallies([pgn], engine, rungs)
    config = LadderConfig(games_per_rung=0)
    return run_ladder(
        engine, rungs, config, MatchConfig(), play=_no_games, resumed=resumed
    ).summary()


def record_problems(record: Path) -> list[str]:
    """How a record's ladder.json differs from what its ladder.pgn rates (none: it agrees)."""
    published = json.loads((record / "ladder.json").read_text(encoding="utf-8"))
    rated = rerate(record / "ladder.pgn", published["engine"])
    problems = []
    if rated["games"] != published["games"]:
        problems.append(f"games: {rated['games']} rated, {published['games']} published")
    for key in ("elo", "elo_ci95"):
        if rated[key] != pytest.approx(published[key], abs=0.05):
            problems.append(f"{key}: {rated[key]} rated, {published[key]} published")
    return problems


def header_meta(path: Path) -> dict:
    """The frugalzero metadata of a network file, read from its safetensors header alone (8
    bytes of little-endian length, then that many bytes of JSON); the tensors are not read."""
    with path.open("rb") as handle:
        (size,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(size))
    return json.loads(header["__metadata__"]["frugalzero"])


@pytest.mark.parametrize("record", RATED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_ladder_record_rerates_from_its_pgn(record: Path) -> None:
    """The command RESULTS.md gives for it: the games alone, none played (its net may be gone)."""
    assert record_problems(record) == []


def test_the_rerating_is_what_the_ladder_command_prints(capsys) -> None:
    """One record through the CLI itself, so ``rerate`` cannot drift from the command."""
    from frugalzero.cli import main

    record = RESULTS / "default" / "shipped"
    engine = json.loads((record / "ladder.json").read_text(encoding="utf-8"))["engine"]
    pgn = record / "ladder.pgn"
    argv = ["ladder", engine, "--pgn", str(pgn), "--resume", "--games-per-rung", "0", "--json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == rerate(pgn, engine)


def test_rerating_catches_a_changed_game_or_rating(tmp_path: Path) -> None:
    record = RESULTS / "60min" / "cpu-1h"
    assert record_problems(record) == []
    games = tmp_path / "games"
    shutil.copytree(record, games)
    pgn = games / "ladder.pgn"
    text = pgn.read_text(encoding="utf-8")
    assert '[Result "1-0"]' in text
    pgn.write_text(text.replace('[Result "1-0"]', '[Result "0-1"]', 1), encoding="utf-8")
    assert [p.split(":")[0] for p in record_problems(games)] == ["elo", "elo_ci95"]

    rating = tmp_path / "rating"
    shutil.copytree(record, rating)
    published = json.loads((rating / "ladder.json").read_text(encoding="utf-8"))
    published["elo"] += 1
    (rating / "ladder.json").write_text(json.dumps(published), encoding="utf-8")
    assert [p.split(":")[0] for p in record_problems(rating)] == ["elo"]

    dropped = tmp_path / "dropped"
    shutil.copytree(record, dropped)
    rest = text.partition("\n\n[Event ")[2]  # the first game gone
    (dropped / "ladder.pgn").write_text("[Event " + rest, encoding="utf-8")
    assert "games" in [p.split(":")[0] for p in record_problems(dropped)]


@pytest.mark.parametrize("record", NETS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_kept_net_is_the_runs_final_net(record: Path) -> None:
    state = json.loads((record / "state.json").read_text(encoding="utf-8"))
    assert header_meta(record / "final.safetensors")["net_id"] == state["iterations"][-1]["net_id"]


def test_the_records_hold_what_the_tests_check() -> None:
    assert len(RATED) >= 4 and NETS  # a moved results folder must not pass vacuously


@pytest.mark.slow
def test_contempt_tables_recount_from_the_committed_pgn() -> None:
    """benchmarks/CONTEMPT.md's tables are what its script counts in the committed games."""
    import importlib.util

    script = RESULTS.parent / "contempt_report.py"
    spec = importlib.util.spec_from_file_location("contempt_report", script)
    assert spec is not None and spec.loader is not None
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    assert report.main(["--check"]) == 0
