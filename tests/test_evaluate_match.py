"""Matches with real engine processes: pairing, PGN, failures, SPRT stops, the CLI."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path

import chess
import chess.pgn
import pytest

from frugalzero.errors import UserError
from frugalzero.evaluate.adjudicate import AdjudicationConfig
from frugalzero.evaluate.match import MatchConfig, game_slots, play_match
from frugalzero.evaluate.pgn import pgn_text_games
from frugalzero.evaluate.specs import parse_spec
from frugalzero.evaluate.sprt import SprtConfig

FAKE_ENGINE = """#!{python}
# A UCI engine for tests: random legal moves; once (marker file) it dies, hangs or (mode
# "slow") thinks 1.5 s at a 'go', or (mode "startup") dies at its first 'uci' before answering;
# mode "slowquit" takes 3 s to leave at 'quit'.
# Every 'go' line is appended to MARKER + ".go".
import os, random, signal, sys, time
import chess

MODE, AT, MARKER = {mode!r}, {at}, {marker!r}
def _first(marker):  # only one of the concurrent engine processes misbehaves
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        return True
    except FileExistsError:
        return False


rng = random.Random(0)
board = chess.Board()
gos = 0
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    if words[0] == "uci":
        if MODE == "startup" and _first(MARKER):
            os.kill(os.getpid(), signal.SIGKILL)
        print("id name fake")
        print("uciok")
    elif words[0] == "isready":
        print("readyok")
    elif words[0] == "position":
        rest = words[1:]
        if rest[0] == "startpos":
            board, rest = chess.Board(), rest[1:]
        else:
            board, rest = chess.Board(" ".join(rest[1:7])), rest[7:]
        for uci in rest[1:] if rest and rest[0] == "moves" else []:
            board.push_uci(uci)
    elif words[0] == "go":
        gos += 1
        with open(MARKER + ".go", "a") as log:
            log.write(line)
        if gos == AT and _first(MARKER):
            if MODE == "crash":
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(1.5 if MODE == "slow" else 3600)
        move = rng.choice(sorted(board.legal_moves, key=lambda m: m.uci()))
        print("info depth 1 score cp 0 nodes 1")
        print("bestmove " + move.uci())
    elif words[0] == "quit":
        if MODE == "slowquit":  # still tearing down when the match gives up waiting
            time.sleep(3)
        break
    sys.stdout.flush()
"""


def fake_engine(tmp_path: Path, mode: str, at: int) -> str:
    path = tmp_path / f"fake_{mode}.py"
    marker = tmp_path / f"{mode}.done"
    path.write_text(FAKE_ENGINE.format(python=sys.executable, mode=mode, at=at, marker=str(marker)))
    path.chmod(0o755)
    return f"uci:{path}?nodes=1"


SHORT = AdjudicationConfig(max_plies=60)


@pytest.mark.parametrize("giver", ["first", "second"])
def test_odds_games_start_without_the_givers_piece(giver):
    cfg = MatchConfig(games=4, concurrency=2, adjudication=SHORT, odds="queen", odds_giver=giver)
    result = play_match("random?seed=1", "random?seed=2", cfg)
    giver_name = "random?seed=1" if giver == "first" else "random?seed=2"
    for outcome in result.outcomes:
        root = chess.Board(outcome.opening.root_fen)
        giver_colour = chess.WHITE if outcome.white == giver_name else chess.BLACK
        assert not root.pieces(chess.QUEEN, giver_colour)  # the giver has no queen...
        assert len(root.pieces(chess.QUEEN, not giver_colour)) == 1  # ... the other side has
        assert len(outcome.opening.moves) == cfg.noise_plies


def test_openings_are_played_twice_with_colours_swapped(tmp_path):
    pgn = tmp_path / "games.pgn"
    cfg = MatchConfig(games=6, concurrency=2, pgn=str(pgn), adjudication=SHORT, seed=4)
    result = play_match("random?seed=1", "random?seed=2", cfg)
    outcomes = result.outcomes
    assert [o.index for o in outcomes] == list(range(6))
    for first, second in zip(outcomes[::2], outcomes[1::2]):
        assert first.opening == second.opening and len(first.opening.moves) == 8
        assert (
            (first.white, first.black)
            == (second.black, second.white)
            == (
                "random?seed=1",
                "random?seed=2",
            )
        )
    assert len({o.opening for o in outcomes}) == 3
    board = outcomes[0].opening.board()
    assert not board.is_check() and len(board.piece_map()) >= 28
    games = pgn_text_games(pgn.read_text())
    assert len(games) == 6
    for game, outcome in zip(sorted(games, key=lambda g: int(g.headers["Round"])), outcomes):
        h = game.headers
        for tag in ("Event", "Site", "Date", "Round", "White", "Black", "Result"):
            assert h[tag] not in ("", "?")
        assert h["Result"] == outcome.result and h["WhiteLimit"] == "-"
        assert h["PlyCount"] == str(outcome.plies) == str(len(list(game.mainline_moves())))
        assert h["TerminationDetails"] == outcome.reason and "Termination" in h
        first = next(iter(game.mainline()))
        assert first.comment == "book"
    assert sum(result.tally.pentanomial) == 3


def test_book_openings_from_an_epd_file(tmp_path):
    book = tmp_path / "book.epd"
    fens = [
        "rnbqkbnr/pp1ppppp/8/2p5/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2",
        "rnbqkbnr/pppp1ppp/8/4p3/3P4/8/PPP1PPPP/RNBQKBNR w KQkq - 0 2",
    ]
    book.write_text("\n".join(f.rsplit(" ", 2)[0] for f in fens) + "\n")
    pgn = tmp_path / "g.pgn"
    cfg = MatchConfig(games=4, concurrency=1, openings=str(book), pgn=str(pgn), adjudication=SHORT)
    result = play_match("random?seed=1", "random?seed=2", cfg)
    starts = [o.opening.root_fen.split(" ")[0] for o in result.outcomes]
    assert sorted(starts) == sorted(f.split(" ")[0] for f in fens for _ in (0, 1))
    assert starts[0] == starts[1] and starts[2] == starts[3]
    headers = [g.headers for g in pgn_text_games(pgn.read_text())]
    assert all(h["SetUp"] == "1" and h["FEN"].split(" ")[0] in starts for h in headers)


@pytest.mark.usefixtures("stockfish")
def test_random_loses_every_game_to_stockfish_1350():
    result = play_match("random", "stockfish?elo=1350", MatchConfig(games=4, concurrency=2))
    s = result.summary()
    assert (s["wins"], s["draws"], s["losses"]) == (0, 0, 4)
    assert s["score"] == 0.0 and s["elo_ci95"][1] < 0
    assert all(o.reason == "checkmate" or "resigns" in o.reason for o in result.outcomes)


def test_an_engine_slow_to_quit_is_killed_and_reaped_before_close_returns(tmp_path):
    # A `frugalzero uci` seat (PyTorch) can take longer to exit than close() waits: it is
    # killed then, and must be reaped before the event loop closes, which otherwise logs
    # "Loop ... that handles pid ... is closed" at the end of a clocked match.
    import asyncio

    from frugalzero.evaluate.engines import UciPlayer

    async def start_and_close() -> asyncio.Future[int]:
        player = UciPlayer(parse_spec(fake_engine(tmp_path, "slowquit", at=0)), 10.0)
        await player.start()
        protocol = player._engine
        await player.close()
        return protocol.returncode

    returncode = asyncio.run(start_and_close())
    assert returncode.done() and returncode.result() == -signal.SIGKILL


def test_a_crashing_engine_loses_that_game_only(tmp_path):
    crashy = fake_engine(tmp_path, "crash", at=6)  # killed (SIGKILL) at its 6th move
    cfg = MatchConfig(games=4, concurrency=2, adjudication=SHORT)
    result = play_match(crashy, "random?seed=3", cfg)
    failed = [o for o in result.outcomes if o.failed]
    assert len(failed) == 1
    lost = failed[0]
    assert lost.reason.endswith("crash") and lost.termination == "rules infraction"
    a_white = lost.index % 2 == 0
    assert lost.result == ("0-1" if a_white else "1-0")
    # every other game was played out by a (restarted) engine
    others = [o for o in result.outcomes if not o.failed]
    assert len(others) == 3 and all(o.plies > 20 for o in others)
    assert result.tally.games == 4 and result.tally.losses >= 1


def test_an_engine_killed_during_its_handshake_is_started_again(tmp_path):
    dies = fake_engine(tmp_path, "startup", at=0)
    cfg = MatchConfig(games=4, concurrency=2, adjudication=SHORT)
    result = play_match(dies, "random?seed=3", cfg)
    assert (tmp_path / "startup.done").exists()  # one process did die in its handshake
    assert result.tally.games == 4
    assert not any(o.failed for o in result.outcomes) and all(o.plies > 20 for o in result.outcomes)


def _children_named(name: str) -> list[int]:
    """Our child processes running ``name`` (from /proc)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        comm, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :]
        if comm == name and int(rest.split()[1]) == os.getpid():
            pids.append(int(stat.parent.name))
    return pids


@pytest.mark.usefixtures("stockfish")
@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs Linux /proc")
def test_stockfish_killed_from_outside_mid_match_costs_that_game_only():
    killed, first_game = [], threading.Event()

    def killer():  # kill -9 a Stockfish process while the other seat's first game goes on
        if first_game.wait(60):
            pids = _children_named("stockfish")
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    cfg = MatchConfig(games=4, concurrency=2, adjudication=AdjudicationConfig(max_plies=200))
    result = play_match(
        "stockfish?nodes=5000", "random", cfg, on_game=lambda outcome, tally: first_game.set()
    )
    thread.join()
    assert killed
    failed = [o for o in result.outcomes if o.failed]
    assert len(failed) == 1 and failed[0].reason.endswith("crash")
    stockfish_white = failed[0].index % 2 == 0
    assert failed[0].result == ("0-1" if stockfish_white else "1-0")  # Stockfish lost it
    # the other games were played out, by the restarted engine too
    assert result.tally.games == 4 and result.tally.losses == 1 and result.tally.wins >= 2


def test_a_hanging_engine_loses_on_time_and_is_replaced(tmp_path):
    hangs = fake_engine(tmp_path, "hang", at=3)
    cfg = MatchConfig(games=2, concurrency=1, hang_seconds=1.0, adjudication=SHORT)
    result = play_match(hangs, "random?seed=3", cfg)
    first, second = result.outcomes
    assert first.reason == "White hang" and first.result == "0-1"
    assert first.termination == "time forfeit"
    assert not second.failed and second.plies > 20


def test_an_engine_that_overruns_its_clock_loses_on_time(tmp_path):
    slow = fake_engine(tmp_path, "slow", at=3).replace("nodes=1", "tc=1+0.05")  # 1.5 s once
    pgn = tmp_path / "clock.pgn"
    result = play_match(
        slow, "random?seed=3", MatchConfig(games=2, adjudication=SHORT, pgn=str(pgn))
    )
    first, second = result.outcomes
    assert (first.result, first.reason) == ("0-1", "White loses on time")
    assert first.termination == "time forfeit" and not first.failed  # it answered: no restart
    assert first.plies == len(first.opening.moves) + 4  # the late third move is not played
    assert not second.failed and second.plies > 20 and second.time_control == "1+0.05"
    fake = list(second.clocks.values())  # an instant mover gains the increment each move
    assert all(0 < left <= 1 + 0.05 * n for n, left in enumerate(fake, 1))
    # random has no clock: the engine is told its own clock as its opponent's
    gos = [line.split() for line in (tmp_path / "slow.done.go").read_text().splitlines()]
    assert gos[0] == ["go", "wtime", "1000", "btime", "1000", "winc", "50", "binc", "50"]
    assert all(g[2] == g[4] and g[6] == g[8] == "50" for g in gos)
    assert len({g[2] for g in gos}) > 3  # the clock went down (and up by the increment)
    lost, _ = sorted(pgn_text_games(pgn.read_text()), key=lambda g: g.headers["Round"])
    assert lost.headers["TimeControl"] == "1+0.05" and lost.headers["WhiteLimit"] == "tc=1+0.05"
    assert lost.headers["Termination"] == "time forfeit" and lost.headers["BlackLimit"] == "-"
    clocks = [node.clock() for node in lost.mainline()]
    assert clocks[8] is not None and clocks[9] is None  # the engine's moves, not random's


def test_a_clock_plays_one_game_at_a_time_unless_told():
    clocked, random = parse_spec("stockfish?tc=10+0.1"), parse_spec("random")
    slots, why = game_slots(clocked, random, MatchConfig(games=8))
    assert slots == 1 and "clock" in why
    assert game_slots(random, clocked, MatchConfig(games=8, concurrency=3)) == (3, "")
    assert game_slots(random, random, MatchConfig(games=8, concurrency=0))[1] == ""


def test_a_net_under_a_clock_plays_through_frugalzero_uci(tmp_path):
    pgn = tmp_path / "net.pgn"
    cfg = MatchConfig(games=2, pgn=str(pgn), adjudication=AdjudicationConfig(max_plies=120))
    result = play_match("net:default?tc=2+0.05&batchsize=8", "random", cfg)
    assert result.tally.games == 2 and result.batching == {}  # not the in-process driver
    assert not any(o.failed or o.termination == "time forfeit" for o in result.outcomes)
    for game in pgn_text_games(pgn.read_text()):
        h = game.headers
        assert h["TimeControl"] == "2+0.05"
        net_white = h["White"].startswith("net:")
        assert h["WhiteLimit" if net_white else "BlackLimit"] == "tc=2+0.05"
        net_moves = [n for n in game.mainline() if n.comment != "book" and n.turn() != net_white]
        clocks = [n.clock() for n in net_moves]
        assert net_moves and all(c is not None and 0 < c <= 2.05 for c in clocks)
        assert clocks[0] < 2.05  # it thought, on the match's clock
        assert all("/" in n.comment for n in net_moves)  # its score/depth came over UCI
        assert all(n.clock() is None for n in game.mainline() if n not in net_moves)
    with pytest.raises(UserError, match="nosuchoption"):
        play_match("net:default?tc=2+0.05&nosuchoption=1", "random", MatchConfig(games=2))


@pytest.mark.usefixtures("stockfish")
def test_sprt_stops_the_match_early():
    cfg = MatchConfig(games=60, concurrency=2, sprt=SprtConfig(0, 300))
    result = play_match("stockfish?depth=1&elo=1350", "random", cfg)
    assert result.sprt is not None and result.sprt.decision == "H1"
    assert result.tally.games < 60
    assert result.summary()["sprt"]["decision"] == "H1"


def test_match_command_prints_one_json_object(tmp_path, capsys):
    from frugalzero.cli import main

    code = main(
        [
            "match",
            "random?seed=1",
            "random?seed=2",
            "--games",
            "2",
            "--json",
            "--set",
            "adjudication.max_plies=30",
            "--pgn",
            str(tmp_path / "m.pgn"),
        ]
    )
    assert code == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    data = json.loads(out[0])
    for key in ("games", "wins", "draws", "losses", "score", "elo", "elo_ci95", "los"):
        assert key in data
    assert data["games"] == 2 and data["draws"] == 2  # random vs random for 30 plies
    assert data["elo"] == 0.0 and data["endings"] == {"length limit (30 plies)": 2}


def test_match_command_bad_input(capsys):
    from frugalzero.cli import main

    assert main(["match", "random", "stockfish?elo=1000"]) == 2
    assert "outside 1350..2850" in capsys.readouterr().err
    assert main(["match", "random", "random", "--set", "adjudication.max_ply=3"]) == 2
    assert "unknown key 'max_ply'" in capsys.readouterr().err
    missing = "uci:/nonexistent/engine"
    assert main(["match", missing, "random", "--games", "2"]) == 2
    assert "not found" in capsys.readouterr().err


def test_fairy_plays_far_below_stockfish_skill(fairy_stockfish):
    # the weakest Fairy-Stockfish still beats the random mover
    cfg = MatchConfig(games=2, concurrency=2)
    result = play_match("fairy?skill=-20&nodes=2000", "random", cfg)
    assert result.tally.games == 2 and result.tally.losses == 0
    assert all(chess.Board(o.opening.root_fen) for o in result.outcomes)
