"""Matches with real engine processes: pairing, PGN, failures, SPRT stops, the CLI."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
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
# mode "slowquit" takes 6 s to leave at 'quit'.
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
            time.sleep(6)
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
@pytest.mark.slow
def test_random_loses_every_game_to_stockfish_1350():
    result = play_match("random", "stockfish?elo=1350", MatchConfig(games=4, concurrency=2))
    s = result.summary()
    assert (s["wins"], s["draws"], s["losses"]) == (0, 0, 4)
    assert s["score"] == 0.0 and s["elo_ci95"][1] < 0
    assert all(o.reason == "checkmate" or "resigns" in o.reason for o in result.outcomes)


@pytest.mark.slow
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


@pytest.mark.slow
def test_an_engine_killed_during_its_handshake_is_started_again(tmp_path):
    dies = fake_engine(tmp_path, "startup", at=0)
    cfg = MatchConfig(games=4, concurrency=2, adjudication=SHORT)
    result = play_match(dies, "random?seed=3", cfg)
    assert (tmp_path / "startup.done").exists()  # one process did die in its handshake
    assert result.tally.games == 4
    assert not any(o.failed for o in result.outcomes) and all(o.plies > 20 for o in result.outcomes)


def _processes() -> dict[int, tuple[str, int, str]]:
    """pid -> (name, parent pid, state) of every process, from /proc."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        comm, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :]
        state, ppid = rest.split()[:2]
        found[int(stat.parent.name)] = (comm, int(ppid), state)
    return found


def _descendants_named(name: str) -> list[int]:
    """Processes below ours running ``name`` (an engine is its keeper's child)."""
    table = _processes()

    def ours(pid: int) -> bool:
        while pid > 1 and pid in table:
            pid = table[pid][1]
            if pid == os.getpid():
                return True
        return False

    return [pid for pid, (comm, _, _) in table.items() if comm == name and ours(pid)]


@pytest.mark.usefixtures("stockfish")
@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs Linux /proc")
def test_stockfish_killed_from_outside_mid_match_costs_that_game_only():
    killed, first_game = [], threading.Event()

    def killer():  # kill -9 a Stockfish process while the other seat's first game goes on
        if first_game.wait(60):
            pids = _descendants_named("stockfish")
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


@pytest.mark.slow
def test_a_hanging_engine_loses_on_time_and_is_replaced(tmp_path):
    hangs = fake_engine(tmp_path, "hang", at=3)
    cfg = MatchConfig(games=2, concurrency=1, hang_seconds=1.0, adjudication=SHORT)
    result = play_match(hangs, "random?seed=3", cfg)
    first, second = result.outcomes
    assert first.reason == "White hang" and first.result == "0-1"
    assert first.termination == "time forfeit"
    assert not second.failed and second.plies > 20


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_net_under_a_clock_plays_through_frugalzero_uci(tmp_path):
    pgn = tmp_path / "net.pgn"
    # the flag's allowance covers a loaded machine's pipe and scheduling stalls: what is tested
    # here is a net playing through UCI on the match's clock (the engine's own time keeping is
    # test_uci_timeman's and test_uci_protocol's, on a fake clock), not the machine's load
    cfg = MatchConfig(
        games=2,
        pgn=str(pgn),
        time_margin=1.0,
        adjudication=AdjudicationConfig(max_plies=120),
    )
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
        # a loaded machine may run the clock down to 0 within the margin, and a move answered
        # at the clock's last moment (the engine's guard) or by the root alone has no score
        assert net_moves and all(c is not None and 0 <= c <= 2.05 for c in clocks)
        assert clocks[0] < 2.05  # it thought, on the match's clock
        scored = sum("/" in n.comment for n in net_moves)  # its score/depth came over UCI
        assert scored >= len(net_moves) / 2, [n.comment for n in net_moves]
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


@pytest.mark.slow
def test_fairy_plays_far_below_stockfish_skill(fairy_stockfish):
    # the weakest Fairy-Stockfish still beats the random mover
    cfg = MatchConfig(games=2, concurrency=2)
    result = play_match("fairy?skill=-20&nodes=2000", "random", cfg)
    assert result.tally.games == 2 and result.tally.losses == 0
    assert all(chess.Board(o.opening.root_fen) for o in result.outcomes)


# A misbehaving engine (tests/fixtures/bad_engine.py, one fault per mode) against the runner:
# every match ends in bounded time, the engine forfeits with its reason in the PGN and the
# summary, and no engine process outlives the match.

BAD_ENGINE = Path(__file__).parent / "fixtures" / "bad_engine.py"
BOUND_S = 45.0
"""Each match below ends in a few seconds on an idle machine; this only catches a hang."""


MARKER = "FRUGALZERO_TEST_ENGINE"
"""The environment variable that marks every process of one fixture engine, children
included (they inherit it, whatever group or session they move to): its pid file's path."""


def bad_engine(tmp_path: Path, mode: str, limit: str = "nodes=1") -> tuple[str, Path]:
    """(engine spec, its pid file) of the fixture misbehaving in ``mode``."""
    pids = tmp_path / f"{mode}.pids"
    wrapper = tmp_path / f"bad-{mode}"
    argv = [sys.executable, str(BAD_ENGINE), mode, str(pids)]
    marker = shlex.quote(f"{MARKER}={pids}")
    wrapper.write_text(f"#!/bin/sh\nexport {marker}\nexec {' '.join(map(shlex.quote, argv))}\n")
    wrapper.chmod(0o755)
    return f"uci:{wrapper}?{limit}", pids


def marked_processes(pids: Path) -> list[int]:
    """The processes alive now (zombies aside) whose environment carries the marker of the
    fixture engine writing ``pids``: the engine, any restart of it, and whatever they forked."""
    mark = f"{MARKER}={pids}".encode()
    found = []
    for pid, (_, _, state) in _processes().items():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue  # ended meanwhile, or not ours to read
        if state != "Z" and mark in environ.split(b"\0"):
            found.append(pid)
    return found


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def leftovers(pids: Path) -> list[int]:
    """The fixture's processes still running (marked, or in its pid file), killed: a test
    names them after its other checks, and a failing one leaves none behind."""
    started = [int(p) for p in pids.read_text().split()] if pids.is_file() else []
    left = sorted({p for p in started if _running(p)} | set(marked_processes(pids)))
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return left


def assert_no_engine_left(pids: Path) -> list[int]:
    """Nothing of the fixture is left running: no process it started (its pid file) and none
    with its marker (children, however detached), now, without waiting: the runner ends and
    reaps them all before it returns. The fixture's processes (its pid file)."""
    assert leftovers(pids) == []
    return [int(p) for p in pids.read_text().split()]


def forfeit_notes(pgn: Path) -> list[tuple[chess.pgn.Headers, str]]:
    """(headers, comment on the game's last move) of each game, in round order."""
    games = sorted(pgn_text_games(pgn.read_text()), key=lambda g: int(g.headers["Round"]))
    return [(g.headers, g.end().comment) for g in games]


def cli_match(pids: Path, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    """``frugalzero match ARGS`` and its seconds; a hang fails the test, and the engines it
    left behind (its own process groups: killing the match does not end them) are killed."""
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "frugalzero", "match", *args],
            capture_output=True,
            text=True,
            timeout=BOUND_S,
        )
    except subprocess.TimeoutExpired:
        for pid in map(int, pids.read_text().split() if pids.is_file() else []):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        pytest.fail(f"frugalzero match did not end in {BOUND_S:g} s")
    return done, time.monotonic() - started


@pytest.mark.slow
def test_an_engine_that_never_sends_uciok_ends_the_match_with_one_line(tmp_path):
    spec, pids = bad_engine(tmp_path, "no-uciok")
    done, _ = cli_match(
        pids, spec, "random", "--games", "2", "--concurrency", "1", "--hang-seconds", "3"
    )
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("frugalzero: error: engine ") and spec in last and "uciok" in last
    assert "Traceback" not in done.stderr and "Loop" not in done.stderr
    assert len(assert_no_engine_left(pids)) == 1  # a hang is not retried: it would hang again


@pytest.mark.slow
def test_an_engine_that_never_answers_isready_ends_the_match_with_one_line(tmp_path):
    spec, pids = bad_engine(tmp_path, "no-readyok")
    cfg = MatchConfig(games=2, concurrency=2, hang_seconds=3)
    with pytest.raises(UserError, match="readyok") as refused:
        play_match(spec, "random", cfg)
    assert parse_spec(spec).name in str(refused.value)
    assert len(assert_no_engine_left(pids)) == 2


@pytest.mark.slow
def test_an_engine_that_never_answers_go_forfeits_each_game_under_movetime(tmp_path):
    spec, pids = bad_engine(tmp_path, "no-bestmove", "movetime=100")
    pgn = tmp_path / "m.pgn"
    args = ["--games", "2", "--concurrency", "2", "--json", "--pgn", str(pgn)]
    done, seconds = cli_match(pids, spec, "random", *args)  # the default margins
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    name = parse_spec(spec).name
    assert summary["losses"] == 2 and summary["forfeits"] == {name: {"hang": 2}}
    for headers, note in forfeit_notes(pgn):
        assert headers["Termination"] == "time forfeit"
        assert f"{name} forfeits: hang" in note and "bestmove" in note
    assert seconds < 30  # a 100 ms move is given up a few seconds after its time
    assert_no_engine_left(pids)


@pytest.mark.slow
def test_an_engine_silent_after_ucinewgame_forfeits_each_game(tmp_path):
    spec, pids = bad_engine(tmp_path, "no-readyok-in-game")
    pgn = tmp_path / "m.pgn"
    cfg = MatchConfig(games=2, concurrency=1, hang_seconds=3, pgn=str(pgn))
    result = play_match(spec, "random", cfg)
    name = parse_spec(spec).name
    assert result.summary()["forfeits"] == {name: {"hang": 2}}
    for headers, note in forfeit_notes(pgn):
        assert headers["Termination"] == "time forfeit" and headers["PlyCount"] == "8"
        assert f"{name} forfeits: hang" in note and "readyok" in note
    assert len(assert_no_engine_left(pids)) == 2  # restarted for the second game


@pytest.mark.parametrize(
    ("mode", "kind", "said"),
    [("dies", "crash", "exit code 3"), ("illegal", "illegal move", "bestmove ")],
)
def test_an_engine_that_dies_or_moves_illegally_forfeits_and_is_restarted(
    tmp_path, mode, kind, said
):
    spec, pids = bad_engine(tmp_path, mode)
    pgn = tmp_path / "m.pgn"
    cfg = MatchConfig(games=3, concurrency=1, hang_seconds=10, pgn=str(pgn), adjudication=SHORT)
    result = play_match(spec, "random", cfg)
    name = parse_spec(spec).name
    assert result.summary()["forfeits"] == {name: {kind: 3}}
    assert result.tally.losses == 3
    for headers, note in forfeit_notes(pgn):
        assert headers["Termination"] == "rules infraction"
        assert headers["TerminationDetails"].endswith(kind)
        assert f"{name} forfeits: {kind}" in note and said in note
        assert int(headers["PlyCount"]) >= 8 + 4  # mid-game: at the engine's third move
    assert len(assert_no_engine_left(pids)) == 3


@pytest.mark.slow
def test_an_engine_that_floods_its_output_is_read_in_bounded_memory(tmp_path):
    spec, pids = bad_engine(tmp_path, "flood")  # 2 MB of info a move; one 4 MB line
    pgn = tmp_path / "m.pgn"
    short = AdjudicationConfig(max_plies=16)
    cfg = MatchConfig(games=2, concurrency=1, hang_seconds=20, pgn=str(pgn), adjudication=short)
    started = time.monotonic()
    result = play_match(spec, "random", cfg)
    assert time.monotonic() - started < BOUND_S
    name = parse_spec(spec).name
    assert result.summary()["forfeits"] == {name: {"bad output": 1}}
    (lost, note), (played, _) = forfeit_notes(pgn)
    assert lost["Termination"] == "rules infraction" and "line of output over" in note
    assert played["TerminationDetails"] == "length limit (16 plies)"  # 4 flooded moves read
    assert len(assert_no_engine_left(pids)) == 2


def test_a_line_without_end_is_not_kept_whole():
    import asyncio

    from frugalzero.evaluate.engines import MAX_LINE, BoundedUci

    class Counting(BoundedUci):
        lines = ended = 0

        def line_received(self, line: str) -> None:
            self.lines += 1

        def end_process(self) -> None:  # the keeper's SIGTERM: the engine and its children
            self.ended += 1

    async def feed() -> Counting:
        protocol = Counting()
        protocol.pipe_data_received(1, b"id name x\n" + b"info depth 1\n" * 10_000)
        for _ in range(3 * MAX_LINE // 65536):
            protocol.pipe_data_received(1, b"x" * 65536)
            assert len(protocol.buffer[1]) <= MAX_LINE
        return protocol

    protocol = asyncio.run(feed())
    assert protocol.ended == 1 and "line of output over" in protocol.fault
    assert protocol.lines == 10_001  # the lines before it were read


def test_an_engines_stderr_reaches_the_log_a_few_lines_only(caplog):
    import asyncio

    from frugalzero.evaluate.engines import STDERR_LINES, BoundedUci

    async def feed() -> None:
        protocol = BoundedUci()
        protocol.pipe_data_received(2, b"debug output\n" * 10_000)

    with caplog.at_level("WARNING", logger="chess.engine"):
        asyncio.run(feed())
    assert len(caplog.records) == STDERR_LINES + 1 and "not shown" in caplog.messages[-1]


@pytest.mark.skipif(not Path("/proc/self/environ").is_file(), reason="needs Linux /proc")
@pytest.mark.parametrize("mode", ["forks", "setsid"])
def test_an_engine_that_exits_leaving_a_child_crashes_and_nothing_of_it_is_left(
    tmp_path, mode, caplog
):
    # At its first go the engine forks a child that keeps its stdout (with setsid, in a
    # session of its own, out of reach of a group kill) and exits. That is a crash, lost at
    # once: it was lost as a hang once hang_seconds ran out, then 10 s more went on waiting
    # for its pipes to close, and the child outlived the match.
    spec, pids = bad_engine(tmp_path, mode)
    pgn = tmp_path / "m.pgn"
    cfg = MatchConfig(games=2, concurrency=1, hang_seconds=10, pgn=str(pgn))
    with caplog.at_level("WARNING"):
        result = play_match(spec, "random", cfg)
    left = leftovers(pids)
    name = parse_spec(spec).name
    assert result.summary()["forfeits"] == {name: {"crash": 2}}
    for headers, note in forfeit_notes(pgn):
        assert headers["Termination"] == "rules infraction"
        assert f"{name} forfeits: crash" in note and "exit code 3" in note
    assert len(Path(f"{pids}.children").read_text().split()) == 2  # each engine had its child
    assert "not gone" not in caplog.text  # each keeper went when told: no reap wait ran out
    assert left == []


@pytest.mark.slow
def test_lines_an_engine_writes_that_we_cannot_use_are_counted_not_logged_each(tmp_path):
    # 25 lines of garbage before each move made a warning each: hundreds of stderr lines for
    # two short games. Now: the first of each kind, then one line counting them all.
    from fixtures.bad_engine import GARBAGE_LINES

    spec, pids = bad_engine(tmp_path, "garbage")
    pgn = tmp_path / "m.pgn"
    args = ["--games", "2", "--concurrency", "1", "--json", "--pgn", str(pgn)]
    done, _ = cli_match(pids, spec, "random", *args, "--set", "adjudication.max_plies=24")
    left = leftovers(pids)
    assert done.returncode == 0, done.stderr
    name = parse_spec(spec).name
    said = [line for line in done.stderr.splitlines() if line.startswith(f"engine {name!r}")]
    assert len(said) == 4, done.stderr  # the first line of each of the 3 kinds, the count
    moves = 0  # the engine's moves: one go each, each after its garbage
    for game in pgn_text_games(pgn.read_text()):
        white = game.headers["White"] == name
        moves += sum(1 for n in game.mainline() if n.comment != "book" and n.turn() != white)
    each = GARBAGE_LINES // 5  # of every five lines: one not UTF-8, one bad info, three words
    counted = {"unexpected line": 3 * each * moves, "not UTF-8": each * moves}
    counted["unparsable info"] = each * moves
    assert moves > 0 and json.loads(done.stdout)["engine_output"] == {name: counted}
    assert f"wrote {5 * each * moves} lines we could not use" in said[-1]
    assert left == []  # it ignored quit (killed), and nothing of it is left


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs Linux /proc")
def test_ending_an_engine_that_just_died_leaves_its_reaping_to_asyncio(
    tmp_path, monkeypatch, caplog
):
    # An engine that died a moment before the runner ended it (a forfeit) was reaped by
    # Popen.poll (transport.kill) before asyncio's child watcher could: the watcher then
    # logged "Unknown child process pid ..., will report returncode 255" and reported 255.
    # The watcher is held back here until the runner has done its part.
    import asyncio

    from frugalzero.evaluate.engines import UciPlayer

    gate, real_waitpid = threading.Event(), os.waitpid

    def held_waitpid(pid: int, options: int):  # the watcher's blocking wait, off the loop
        if options == 0 and threading.current_thread() is not threading.main_thread():
            gate.wait(30)
        return real_waitpid(pid, options)

    monkeypatch.setattr(os, "waitpid", held_waitpid)
    spec, pids = bad_engine(tmp_path, "good")

    async def die_then_end() -> int:
        player = UciPlayer(parse_spec(spec), 10.0)
        await player.start()
        engine, pid = player._engine, player.pid
        os.kill(pid, signal.SIGKILL)
        for _ in range(1000):  # dead, not reaped (the watcher waits at the gate)
            if _processes().get(pid, ("", 0, "Z"))[2] == "Z":
                break
            await asyncio.sleep(0.01)
        ending = asyncio.ensure_future(player.abandon())
        for _ in range(5):
            await asyncio.sleep(0.02)  # the runner's signals and waits run first
        gate.set()
        await ending
        return engine.returncode.result()

    with caplog.at_level("WARNING"):
        code = asyncio.run(die_then_end())
    left = leftovers(pids)
    assert "Unknown child process" not in caplog.text
    assert code == -signal.SIGKILL
    assert left == []


def test_every_path_is_checked_before_any_engine_starts(tmp_path, capsys):
    # match --openings MISSING.epd named the book only once the engines had started (61 s
    # with a net); every command checks the paths it is given first.
    from frugalzero.cli import main

    spec, pids = bad_engine(tmp_path, "good")
    missing = tmp_path / "missing"
    plain = tmp_path / "plain-file"
    plain.write_text("#!/bin/sh\n")  # not executable
    table = tmp_path / "table.json"
    rungs = [{"name": n, "elo": e, "sigma": 30.0, "games": 10} for n, e in (("random", 0.0),)]
    table.write_text(json.dumps({"rungs": rungs}))
    epd = tmp_path / "suite.epd"
    epd.write_text("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - bm e5;\n")
    book = ["--openings", f"{missing}.epd"]
    for argv, says in [
        (["match", spec, "random", *book], "opening book not found"),
        (["match", "random", spec, *book], "opening book not found"),
        (["match", spec, f"net:{missing}.safetensors"], "network file"),
        (["match", spec, f"uci:{plain}"], "is not executable"),
        (["match", spec, f"uci:{missing}"], "not found"),
        (["ladder", spec, "--table", str(table), *book], "opening book not found"),
        (["ladder", spec, "--table", str(table), "--pgn", str(tmp_path)], "Is a directory"),
        (["eval-epd", str(epd), "--engine", f"net:{missing}.safetensors"], "network file"),
    ]:
        code = main(argv)
        assert not pids.exists(), argv  # the engine was never started
        err = capsys.readouterr().err.strip().splitlines()
        assert code in (1, 2) and len(err) == 1 and says in err[0], (argv, err)


def test_an_engine_that_cannot_be_run_is_one_line_and_not_tried_again(tmp_path, capsys):
    # Executable, but its interpreter is missing: only running it can tell. Its keeper says
    # why, and the match ends with that line, not after three tries of a start that cannot work.
    from frugalzero.cli import main

    script = tmp_path / "engine"
    script.write_text("#!/nonexistent/interpreter\n")
    script.chmod(0o755)
    assert main(["match", f"uci:{script}", "random", "--games", "2", "--concurrency", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"frugalzero: error: engine 'uci:{script}': could not start")
    assert "No such file" in err[-1] and not any("stderr >>" in line for line in err)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_match_killed_outright_leaves_no_engine_behind(tmp_path):
    # kill -9 of the runner runs none of its cleanup: the kernel tells each engine's keeper
    # (PR_SET_PDEATHSIG), which ends its engine. These engines, deaf to the end of their input
    # and to SIGTERM, were left running.
    spec, pids = bad_engine(tmp_path, "no-bestmove")
    argv = [sys.executable, "-m", "frugalzero", "match", spec, spec, "--games", "2"]
    runner = subprocess.Popen(
        [*argv, "--concurrency", "1", "--hang-seconds", "60"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    went = Path(f"{pids}.go")
    try:  # killed in the first game, once both engines have answered all they will
        deadline = time.monotonic() + BOUND_S
        while not went.is_file() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert went.is_file() and len(marked_processes(pids)) == 2
    finally:
        runner.kill()
        runner.wait()
    deadline = time.monotonic() + 5.0  # the keepers end their engines as the kernel tells them
    while marked_processes(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert leftovers(pids) == []
