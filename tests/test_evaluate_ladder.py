"""The rating ladder: climbing with simulated games, the shipped table, ratings and calibrations
that resume."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from frugalzero.chess.positions import Opening
from frugalzero.evaluate.calibrate import (
    ANCHOR,
    RUNGS,
    CalibrationConfig,
    make_table,
    run_calibration,
    schedule,
)
from frugalzero.evaluate.ladder import (
    LadderConfig,
    Rung,
    load_table,
    resumed_tallies,
    run_ladder,
    select_rungs,
)
from frugalzero.evaluate.match import MatchConfig, MatchResult, Tally
from frugalzero.evaluate.pgn import GameOutcome, append_game, to_pgn
from frugalzero.evaluate.specs import parse_spec
from frugalzero.stats import score_from_elo

RUNG_ELOS = [0, 300, 550, 800, 1000, 1250, 1500, 1800, 2100, 2400]
TRUE = {f"stockfish?depth={i + 1}&elo={1350 + 100 * i}": e for i, e in enumerate(RUNG_ELOS)}


def _simulated_play(true_elo: float, seed: int):
    """A stand-in for play_match: games against a rung come from the Elo model."""
    rng = random.Random(seed)
    calls = []

    def play(spec_a, spec_b, cfg: MatchConfig) -> MatchResult:
        calls.append((spec_b.name, cfg.games))
        p = score_from_elo(true_elo - TRUE[spec_b.name])
        draw = 0.8 * p * (1 - p)  # fewer draws between mismatched players
        outcomes = []
        for i in range(cfg.games):
            u = rng.random()
            a_score = 1.0 if u < p - draw / 2 else 0.5 if u < p + draw / 2 else 0.0
            white_score = a_score if i % 2 == 0 else 1 - a_score
            result = {1.0: "1-0", 0.5: "1/2-1/2", 0.0: "0-1"}[white_score]
            names = (spec_a.name, spec_b.name) if i % 2 == 0 else (spec_b.name, spec_a.name)
            outcomes.append(GameOutcome(i, *names, result, "sim", "normal", None))
        return MatchResult(spec_a.name, spec_b.name, Tally(), outcomes, None, 0.0)

    return play, calls


@pytest.mark.parametrize("true_elo", [120.0, 1130.0, 2250.0])
def test_ladder_finds_the_engines_level_by_itself(true_elo):
    rungs = [Rung(name, elo, 20.0) for name, elo in TRUE.items()]
    play, calls = _simulated_play(true_elo, seed=int(true_elo))
    cfg = LadderConfig(games_per_rung=40, neighbours=3)
    result = run_ladder("random", rungs, cfg, MatchConfig(), play=play)
    assert result.ci95[0] < true_elo < result.ci95[1]
    assert abs(result.elo - true_elo) < 150
    # the full share of games went to the three rungs nearest the truth
    nearest = sorted(TRUE, key=lambda n: abs(TRUE[n] - true_elo))[:3]
    for name in nearest:
        assert result.tallies[name].games >= 40
    assert result.totals().games <= cfg.games_per_rung * (cfg.neighbours + 2)
    summary = result.summary()
    for key in ("games", "wins", "draws", "losses", "score", "elo", "elo_ci95", "los"):
        assert key in summary
    assert result.sigma_rungs == pytest.approx(20.0)  # every rung carries 20 Elo of its own
    assert summary["games_halfwidth95"] == pytest.approx(1.96 * result.sigma_games, abs=0.1)
    assert summary["games_halfwidth95"] < (result.ci95[1] - result.ci95[0]) / 2


@pytest.mark.parametrize("true_elo", [-300.0, 2900.0])
def test_ladder_halves_the_rest_while_every_game_goes_one_way(true_elo):
    rungs = [Rung(name, elo, 0.0) for name, elo in TRUE.items()]
    play, calls = _simulated_play(true_elo, seed=3)
    run_ladder("random", rungs, LadderConfig(games_per_rung=8), MatchConfig(), play=play)
    end = min(TRUE, key=TRUE.get) if true_elo < 0 else max(TRUE, key=TRUE.get)
    first = [name for name, _ in calls].index(end)
    assert first <= 4  # 10 rungs: the end of the ladder in log2(10) probes, not 5 one by one


def test_an_engine_that_is_also_a_rung_is_rated_not_pinned():
    rungs = [Rung(name, elo, 0.0) for name, elo in TRUE.items()]
    rung = next(iter(TRUE))  # the ladder rates the bottom rung's own engine
    play, _ = _simulated_play(TRUE[rung] - 100, seed=5)
    r = run_ladder(rung, rungs, LadderConfig(games_per_rung=20), MatchConfig(), play=play)
    assert r.sigma_games > 50 and r.ci95[0] < r.elo < r.ci95[1] and r.elo != TRUE[rung]


def test_ladder_interval_narrows_with_more_games():
    rungs = [Rung(name, elo, 0.0) for name, elo in TRUE.items()]
    widths = []
    for games in (10, 40, 160):
        play, _ = _simulated_play(900.0, seed=games)
        cfg = LadderConfig(games_per_rung=games, neighbours=2)
        r = run_ladder("random", rungs, cfg, MatchConfig(), play=play)
        widths.append(r.ci95[1] - r.ci95[0])
    assert widths[0] > widths[1] > widths[2]


def test_an_engine_that_wins_everything_gets_a_lower_bound():
    rungs = [Rung(name, elo, 0.0) for name, elo in TRUE.items()]
    play, _ = _simulated_play(6000.0, seed=1)
    r = run_ladder("random", rungs, LadderConfig(games_per_rung=6), MatchConfig(), play=play)
    assert r.bound == "above" and r.ci95[1] == math.inf and r.elo > 2400


def test_a_resumed_rating_plays_only_the_games_still_missing():
    rungs = [Rung(name, elo, 0.0) for name, elo in TRUE.items()]
    play, calls = _simulated_play(1130.0, seed=11)
    seeds: list[int] = []

    def recorded(a, b, cfg):
        seeds.append(cfg.seed)
        return play(a, b, cfg)

    first = run_ladder("random", rungs, LadderConfig(games_per_rung=10), MatchConfig(), recorded)
    old_seeds, old_calls = list(seeds), len(calls)
    # the same target: nothing left to play, the same rating
    cfg = LadderConfig(games_per_rung=10)
    same = run_ladder("random", rungs, cfg, MatchConfig(), recorded, resumed=first.tallies)
    assert len(calls) == old_calls and same.elo == first.elo
    # a higher target: only the nearest rungs get more, on openings not played before
    cfg, before = LadderConfig(games_per_rung=30), first.totals().games
    more = run_ladder("random", rungs, cfg, MatchConfig(), recorded, resumed=first.tallies)
    new_games = more.totals().games - before
    assert 0 < new_games <= 3 * 20 + 2 * cfg.probe_games
    assert not set(seeds[len(old_seeds) :]) & set(old_seeds)
    assert first.totals().games == before  # the earlier rating's tallies are left as they were
    for name, tally in first.tallies.items():
        assert more.tallies[name].games >= tally.games
    assert more.sigma_games < first.sigma_games


def _copy(tallies: dict[str, Tally]) -> dict[str, Tally]:
    return {
        name: Tally(t.wins, t.draws, t.losses, list(t.pentanomial)) for name, t in tallies.items()
    }


def test_resumed_tallies_read_the_engines_games_from_either_side(tmp_path):
    rungs = [Rung("random", 500.0, 0.0), Rung("stockfish?elo=1350&nodes=20000", 2068.0, 0.0)]
    engine, sf = "net:a.safetensors?nodes=400", "stockfish?elo=1350&nodes=20000"
    opening = Opening("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1", name="e4")
    games = [
        (0, engine, sf, "1-0"),  # a win as White
        (1, sf, engine, "1/2-1/2"),  # its pair: a draw as Black
        (2, sf, engine, "1-0"),  # a loss as Black
        (0, engine, "random", "1-0"),
        (0, "random", sf, "0-1"),  # between two others
        (0, engine, "stockfish?elo=1500&nodes=20000", "0-1"),  # not a rung in use
        (3, engine, sf, "*"),  # unfinished
    ]
    pgn = tmp_path / "ladder.pgn"
    for index, white, black, result in games:
        outcome = GameOutcome(index, white, black, result, "sim", "normal", opening)
        append_game(pgn, to_pgn(outcome))
    tallies, stats = resumed_tallies([pgn], "net:a.safetensors?nodes=400", rungs)
    assert (tallies[sf].wins, tallies[sf].draws, tallies[sf].losses) == (1, 1, 1)
    assert tallies[sf].pentanomial == [0, 0, 0, 1, 0]  # the first two games: one pair, 1.5
    assert tallies["random"].wins == 1 and set(tallies) == {sf, "random"}
    assert stats.skipped == 1


def test_shipped_table_is_calibrated_from_random_to_stockfish():
    table = load_table()
    names = [r.name for r in table.rungs]
    elos = {r.name: r.elo for r in table.rungs}
    assert names[0] == "random"  # the floor
    assert [r.elo for r in table.rungs] == sorted(r.elo for r in table.rungs)
    assert elos[ANCHOR[0]] == ANCHOR[1] and table.by_name()[ANCHOR[0]].sigma == 0
    # the measurement: Stockfish 15.1 at UCI_Elo 1350 rates about 2190 on this scale
    assert abs(elos["stockfish?elo=1350&nodes=20000"] - 2190) < 150
    # every rung of the calibration is in the table, or listed as not measured yet; the others
    # were added afterwards, rated on the calibrated rungs (ladder --add-rung)
    calibrated = set(names) - set(table.added)
    assert set(parse_spec(n).name for n in RUNGS) == calibrated | set(table.meta["unmeasured"])
    assert set(table.meta.get("added", [])) == set(table.added)
    root = Path(__file__).resolve().parents[1]
    for name, added in table.added.items():  # their games are kept, and are the rung's games
        pgn = root / added["pgn"]
        rung = table.by_name()[name]
        assert pgn.read_text().count("[Event ") == rung.games
        assert sum(g["games"] for g in added["against"].values()) == rung.games
    # a 3000 net has rungs on both sides (issue 46)
    assert any(2900 < e < 3000 for e in elos.values()) and any(
        3000 < e < 3150 for e in elos.values()
    )
    assert len(table.meta["unmeasured"]) <= 2
    gaps = [b.elo - a.elo for a, b in zip(table.rungs, table.rungs[1:])]
    assert max(gaps) < 350
    assert all(r.games >= 40 for r in table.rungs)
    for key in ("date", "command", "games", "anchor", "partial", "played"):
        assert key in table.meta
    assert table.meta["games"] >= 1000


def test_select_rungs_by_name_or_index():
    table = load_table()
    chosen = select_rungs(table, ["random", "1", "stockfish?nodes=20000&elo=1350"])
    assert [r.name for r in chosen][0] == "random" and len(chosen) == 3
    with pytest.raises(Exception, match="not in the ladder table"):
        select_rungs(table, ["stockfish?elo=1351&nodes=20000"])


def test_schedule_plays_neighbours_more_than_distant_rungs():
    cfg = CalibrationConfig(games=10, far_games=4, window=2)
    pairs = schedule(["a", "b", "c", "d"], cfg)
    assert pairs == [("a", "b", 10), ("a", "c", 4), ("b", "c", 10), ("b", "d", 4), ("c", "d", 10)]


@pytest.mark.usefixtures("stockfish")
@pytest.mark.slow
def test_calibration_is_resumable(tmp_path):
    names = ["random", "stockfish?depth=1&elo=1350", "stockfish?nodes=1"]
    anchor = ("stockfish?depth=1&elo=1350", 2190.0)
    cfg = CalibrationConfig(games=4, far_games=2, chunk=2, concurrency=2)
    state, complete = run_calibration(tmp_path, cfg, names, anchor, progress=False, max_games=3)
    assert not complete and len(state.games) == 3
    saved = json.loads((tmp_path / "state.json").read_text())
    assert len(saved["games"]) == 3
    # a new run (a new process, in real life) picks up where the last one stopped
    state, complete = run_calibration(tmp_path, cfg, names, anchor, progress=False)
    assert complete and len(state.games) == 4 + 2 + 4
    assert state.done("random", "stockfish?nodes=1") == 2
    pgn_games = (tmp_path / "games.pgn").read_text().count("[Event ")
    assert pgn_games == 10
    table = make_table(state, cfg, "test")
    by_name = {r["name"]: r for r in table["rungs"]}
    assert by_name["stockfish?depth=1&elo=1350"]["elo"] == 2190.0
    assert by_name["random"]["elo"] < 2190.0 - 200  # random lost every game (with the prior)
    # the table can be remade from the saved games without playing any
    again, complete = run_calibration(tmp_path, cfg, names, anchor, progress=False, play=False)
    assert complete and again.games == state.games
    assert make_table(again, cfg, "test")["rungs"] == table["rungs"]
    assert table["partial"] is False and table["unmeasured"] == []
    more = CalibrationConfig(games=6, far_games=2, chunk=2, concurrency=2)
    again, complete = run_calibration(tmp_path, more, names, anchor, progress=False, play=False)
    assert not complete and len(again.games) == 10  # short of the new target, nothing played
    assert make_table(again, more, "test")["pairs_short"] == 2
    # a different setup refuses to mix with these games
    with pytest.raises(Exception, match="another seed"):
        run_calibration(tmp_path, CalibrationConfig(seed=5), names, anchor, progress=False)


TINY_TABLE = {  # three cheap rungs (Stockfish at depth 1 or 1 node)
    "date": "test",
    "command": "by hand",
    "adjudication": {"resign_score": 0, "max_plies": 200},
    "rungs": [
        {"name": "random", "elo": 0.0, "sigma": 30.0, "games": 10},
        {"name": "stockfish?depth=1&elo=1350", "elo": 1500.0, "sigma": 10.0, "games": 10},
        {"name": "stockfish?nodes=1", "elo": 1700.0, "sigma": 0.0, "games": 10},
    ],
}


@pytest.mark.usefixtures("stockfish")
@pytest.mark.slow
def test_ladder_command_prints_one_json_object(tmp_path, capsys):
    from frugalzero.cli import main

    table = TINY_TABLE
    path = tmp_path / "table.json"
    path.write_text(json.dumps(table))
    args = ["ladder", "stockfish?depth=2&elo=1500", "--table", str(path), "--json"]
    assert main([*args, "--games-per-rung", "2", "--neighbours", "2", "--concurrency", "2"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    data = json.loads(out[0])
    for key in ("games", "wins", "draws", "losses", "score", "elo", "elo_ci95", "los"):
        assert key in data
    assert data["games"] == sum(r["games"] for r in data["rungs"].values()) >= 4
    assert data["elo_ci95"][0] <= data["elo"] <= data["elo_ci95"][1]
    # the same rating resumed from its games plays only what a higher target adds
    pgn = tmp_path / "ladder.pgn"
    rated = [*args, "--neighbours", "2", "--concurrency", "2", "--pgn", str(pgn), "--json"]
    assert main([*rated, "--games-per-rung", "2"]) == 0
    played = pgn.read_text().count("[Event ")
    first = json.loads(capsys.readouterr().out)
    assert main([*rated, "--games-per-rung", "2", "--resume"]) == 0
    assert pgn.read_text().count("[Event ") == played
    assert json.loads(capsys.readouterr().out)["elo"] == first["elo"]
    assert main([*rated, "--games-per-rung", "0", "--resume"]) == 0  # the games alone
    assert json.loads(capsys.readouterr().out)["elo"] == first["elo"]
    assert pgn.read_text().count("[Event ") == played
    assert main([*rated, "--games-per-rung", "4", "--resume"]) == 0
    assert json.loads(capsys.readouterr().out)["games"] == pgn.read_text().count("[Event ") > played
    assert main([*args, "--resume"]) == 2
    assert "--pgn" in capsys.readouterr().err
    assert main([*args, "--games-per-rung", "0"]) == 2  # nothing played, nothing resumed
    assert "no games" in capsys.readouterr().err
    assert main(["ladder", "--table", str(path), "--list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert list(listed["rungs"]) == ["random", "stockfish?depth=1&elo=1350", "stockfish?nodes=1"]
    assert main(["ladder", "--table", str(tmp_path / "none.json"), "random"]) == 2
    assert "ladder table not found" in capsys.readouterr().err
    table_only = ["ladder", "--calibrate", "--table-only", "--state", str(tmp_path / "none")]
    assert main(table_only) == 2
    assert "no calibration state.json" in capsys.readouterr().err


@pytest.mark.usefixtures("stockfish")
@pytest.mark.slow
def test_a_rung_added_to_a_table_keeps_the_others_and_lists_its_games(tmp_path, capsys):
    from frugalzero.cli import main

    table = TINY_TABLE
    path, extended = tmp_path / "table.json", tmp_path / "extended.json"
    path.write_text(json.dumps(table))
    engine = "stockfish?depth=1&elo=1500"
    args = ["ladder", engine, "--table", str(path), "--games-per-rung", "4", "--neighbours", "2"]
    pgn = tmp_path / "rung.pgn"
    assert main([*args, "--pgn", str(pgn), "--add-rung", str(extended), "--json"]) == 0
    rated = json.loads(capsys.readouterr().out)
    assert rated["added_to"] == str(extended)
    data = json.loads(extended.read_text())
    # the calibrated rungs are untouched, the new one sits in Elo order with its rating
    assert [r for r in data["rungs"] if r["name"] != engine] == table["rungs"]
    elos = [r["elo"] for r in data["rungs"]]
    assert elos == sorted(elos) and data["added"] == [engine]
    rung = next(r for r in data["rungs"] if r["name"] == engine)
    assert rung["elo"] == rated["elo"] and rung["games"] == rated["games"]
    assert rung["ci95"][0] < rung["elo"] < rung["ci95"][1] and rung["sigma"] > 0
    against = rung["added"]["against"]
    assert {k: v["games"] for k, v in against.items()} == {
        k: v["games"] for k, v in rated["rungs"].items()
    }
    assert sum(v["games"] for v in against.values()) == pgn.read_text().count("[Event ")
    # the ladder lists it with its games, and rates on it
    assert main(["ladder", "--table", str(extended), "--list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["rungs"][engine]["added"]["against"] == against
    assert "added" not in listed["rungs"]["random"]
    assert main(["ladder", "--table", str(extended), "--list"]) == 0
    assert "added:" in capsys.readouterr().out
    # a rung cannot be added twice
    assert (
        main(
            [
                *args[:2],
                "--table",
                str(extended),
                "--games-per-rung",
                "2",
                "--add-rung",
                str(tmp_path / "again.json"),
            ]
        )
        == 2
    )
    assert "is a rung already" in capsys.readouterr().err


@pytest.mark.slow
def test_a_net_under_a_clock_is_rated_and_re_rated_from_its_pgn(tmp_path, capsys):
    from frugalzero.cli import main
    from frugalzero.evaluate.pgn import pgn_text_games

    table = {
        "adjudication": {"max_plies": 120},
        "rungs": [
            {"name": "random", "elo": 0.0, "sigma": 0.0, "games": 10},
            {"name": "random?seed=1", "elo": 100.0, "sigma": 0.0, "games": 10},
        ],
    }
    path = tmp_path / "table.json"
    path.write_text(json.dumps(table))
    pgn = tmp_path / "ladder.pgn"
    engine = "net:default?tc=1+0.05"
    args = ["ladder", engine, "--table", str(path), "--neighbours", "2", "--pgn", str(pgn)]
    assert main([*args, "--games-per-rung", "2", "--json"]) == 0
    rated = json.loads(capsys.readouterr().out)
    games = pgn_text_games(pgn.read_text())
    assert rated["engine"] == engine and rated["games"] == len(games) == 4
    for game in games:  # the clock is in the headers and on the net's moves; the rungs have none
        assert game.headers["TimeControl"] == "1+0.05"
        net_white = game.headers["White"] == engine
        assert game.headers["WhiteLimit" if net_white else "BlackLimit"] == "tc=1+0.05"
        assert any(node.clock() is not None for node in game.mainline())
    # the games alone, read back from the PGN: the same rating, nothing played
    assert main([*args, "--games-per-rung", "0", "--resume", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["games"], again["elo"]) == (rated["games"], rated["elo"])
    assert len(pgn_text_games(pgn.read_text())) == 4
