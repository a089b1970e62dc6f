"""``frugalzero match --resume``: a killed match goes on from the games in its PGN and ends as
the match never stopped (the same game, opening and result at every round, the same tally)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from frugalzero.errors import UserError
from frugalzero.evaluate.pgn import GameOutcome, append_game, pgn_text_games, to_pgn
from frugalzero.evaluate.resume import resumed_games
from frugalzero.evaluate.specs import parse_spec

A, B = "random?seed=1", "random?seed=2"
# seed 1: game 0 (A White) and game 7 (B White) are won by the second and first engine, the
# rest drawn; a first run of 7 games leaves the pair of games 6 and 7 half played
MATCH = ["--seed", "1", "--set", "adjudication.max_plies=400", "--concurrency", "2", "--json"]


def _match(capsys, pgn: Path, *extra: str) -> tuple[int, dict, str]:
    from frugalzero.cli import main

    code = main(["match", A, B, "--pgn", str(pgn), *MATCH, *extra])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if code == 0 else {}, captured.err


def _games(pgn: Path) -> list[str]:
    """The file's games as ``append_game`` wrote them (each ends with a blank line)."""
    return [t + "\n\n" for t in re.split(r"\n\n(?=\[Event )", pgn.read_text().strip())]


def _error(err: str) -> str:
    """The error line a refused command ends with (after its notes)."""
    last = err.splitlines()[-1]
    assert last.startswith("frugalzero: error: ") and err.count("error:") == 1
    return last


def _rounds(pgn: Path) -> dict[int, tuple]:
    """Each round's players, start, result and moves."""
    games = {}
    for game in pgn_text_games(pgn.read_text()):
        h = game.headers
        start = (h.get("FEN"), h.get("Opening"))
        moves = [m.uci() for m in game.mainline_moves()]
        games[int(h["Round"])] = (h["White"], h["Black"], start, h["Result"], moves)
    return games


@pytest.fixture(autouse=True)
def _wide_stderr(monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # rich's notes on one line each, paths whole


RESULTS = ("games", "wins", "draws", "losses", "pentanomial", "elo", "endings")


def test_a_resumed_match_ends_as_the_match_never_stopped(tmp_path, capsys):
    whole = tmp_path / "whole.pgn"
    code, unbroken, _ = _match(capsys, whole, "--games", "10")
    assert code == 0 and "resumed" not in unbroken
    assert unbroken["wins"] == unbroken["losses"] == 1 and unbroken["pentanomial"][3] == 1

    part = tmp_path / "part.pgn"
    assert _match(capsys, part, "--games", "7")[0] == 0
    code, resumed, err = _match(capsys, part, "--games", "10", "--resume")
    assert code == 0 and resumed["resumed"] == 7
    assert "resumed 7 of 10 games" in err
    assert {k: resumed[k] for k in RESULTS} == {k: unbroken[k] for k in RESULTS}
    assert _rounds(part) == _rounds(whole)  # rounds 8..10 appended: the same games

    # all there: nothing played, the same summary
    before = part.read_bytes()
    code, again, _ = _match(capsys, part, "--games", "10", "--resume")
    assert code == 0 and again["resumed"] == 10 and part.read_bytes() == before
    assert {k: again[k] for k in RESULTS} == {k: unbroken[k] for k in RESULTS}

    # a match killed with two games in flight: rounds 2 and 8 missing from the middle
    kept = [t for t in _games(whole) if not any(f'[Round "{r}"]' in t for r in (2, 8))]
    holes = tmp_path / "holes.pgn"
    holes.write_text("".join(kept))
    code, filled, _ = _match(capsys, holes, "--games", "10", "--resume")
    assert code == 0 and filled["resumed"] == 8
    assert {k: filled[k] for k in RESULTS} == {k: unbroken[k] for k in RESULTS}
    assert _rounds(holes) == _rounds(whole)


def _outcome(index: int, white: str, black: str, result: str = "1/2-1/2") -> GameOutcome:
    from frugalzero.chess.positions import STANDARD

    return GameOutcome(index, white, black, result, "sim", "normal", STANDARD)


def test_games_of_other_players_or_events_are_passed_over(tmp_path):
    pgn = tmp_path / "m.pgn"
    games = [
        (_outcome(0, A, B, "1-0"), "frugalzero match"),
        (_outcome(0, A, "random?seed=3", "1-0"), "frugalzero match"),  # another opponent
        (_outcome(1, B, A, "1-0"), "another match"),  # another event
        (_outcome(1, B, A, "0-1"), "frugalzero match"),
        (_outcome(2, "random", "random?seed=3"), "frugalzero match"),
    ]
    for outcome, event in games:
        append_game(pgn, to_pgn(outcome, event))
    found = resumed_games(pgn, parse_spec(A), parse_spec(B), "frugalzero match")
    assert sorted(found.games) == [0, 1] and found.other == 3 and found.skipped == 0
    assert found.games[1]["Result"] == "0-1"  # this match's round 2, not the other event's


def test_a_pgn_that_contradicts_the_match_is_one_line(tmp_path, capsys):
    swapped = tmp_path / "swapped.pgn"
    append_game(swapped, to_pgn(_outcome(0, A, B)))
    append_game(swapped, to_pgn(_outcome(2, B, A)))  # round 3: A is White in odd rounds
    twice = tmp_path / "twice.pgn"
    for _ in range(2):
        append_game(twice, to_pgn(_outcome(1, B, A)))
    code, _, err = _match(capsys, swapped, "--games", "4", "--resume")
    assert code == 2 and err.count("\n") == 1
    assert str(swapped) in err and "round 3 has random?seed=2 as White" in err
    code, _, err = _match(capsys, twice, "--games", "4", "--resume")
    assert code == 2 and err.count("\n") == 1
    assert str(twice) in err and "round 2 is there twice" in err
    # the games of another seed started from other openings
    other_seed = tmp_path / "seed.pgn"
    assert _match(capsys, other_seed, "--games", "2")[0] == 0
    code, _, err = _match(capsys, other_seed, "--games", "4", "--resume", "--seed", "2")
    assert code == 2 and err.endswith("\n") and "round 1 started from" in _error(err)
    assert str(other_seed) in _error(err)


def test_resume_needs_a_pgn_and_says_so_in_help(tmp_path, capsys):
    from frugalzero.cli import main

    assert main(["match", A, B, "--games", "2", "--resume"]) == 2
    assert "--resume: name the earlier match's games with --pgn" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["match", "--help"])
    assert "--resume" in capsys.readouterr().out
    # no file yet: the match starts from its first game
    code, fresh, err = _match(capsys, tmp_path / "new.pgn", "--games", "2", "--resume")
    assert code == 0 and fresh["resumed"] == 0 and fresh["games"] == 2
    assert "starts from its first game" in err


@pytest.mark.slow
def test_a_last_game_cut_off_mid_write_is_skipped_and_set_apart(tmp_path, capsys):
    whole = tmp_path / "whole.pgn"
    assert _match(capsys, whole, "--games", "4")[0] == 0
    pgn = tmp_path / "m.pgn"
    assert _match(capsys, pgn, "--games", "2")[0] == 0
    first, second = _games(pgn)
    spec_a, spec_b = parse_spec(A), parse_spec(B)
    moves = second.index("\n\n") + 2  # cut anywhere in the headers, often in the moves
    cuts = [*range(1, moves + 2), *range(moves + 2, len(second.rstrip()), 7)]
    cuts += range(len(second.rstrip()) - 10, len(second.rstrip()))  # in the result token
    for cut in cuts:
        pgn.write_text(first + second[:cut])
        found = resumed_games(pgn, spec_a, spec_b, "frugalzero match")
        assert sorted(found.games) == [0] and found.skipped == 1, cut
        assert found.torn_at == len(first.encode()), cut
    pgn.write_text(first + second)
    assert resumed_games(pgn, spec_a, spec_b, "frugalzero match").torn_at is None

    # resumed from a torn file: the torn text set apart, the file whole games only
    torn = second[: len(second) // 2]
    pgn.write_text(first + torn)
    code, out, err = _match(capsys, pgn, "--games", "4", "--resume")
    assert code == 0 and out["resumed"] == 1 and out["games"] == 4
    assert "1 unfinished or unreadable skipped" in err and f"{pgn}.torn" in err
    assert (tmp_path / "m.pgn.torn").read_text() == torn + "\n\n"
    assert _rounds(pgn) == _rounds(whole)
    assert resumed_games(pgn, spec_a, spec_b, "frugalzero match").torn_at is None


def test_resumed_games_of_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(UserError, match="not found"):
        resumed_games(tmp_path / "none.pgn", parse_spec(A), parse_spec(B), "frugalzero match")
