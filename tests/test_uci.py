"""`frugalzero uci` end to end, through python-chess's UCI client and raw pipes."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import chess
import chess.engine
import pytest

from frugalzero.chess.history import GameHistory
from frugalzero.cli import main
from frugalzero.runtime.interpreter import own_code_env
from frugalzero.runtime.memory import MB, resident_bytes
from frugalzero.uci import NetSearcher, SearchRequest
from frugalzero.uci.searcher import PLAY
from frugalzero.uci.timeman import TimeBudget

ENGINE = [sys.executable, "-m", "frugalzero", "uci", "--nodes", "16"]


@pytest.fixture(scope="module")
def engine_process():
    """One ``frugalzero uci`` for the module's raw-pipe tests: starting one (its network, its
    inference processes) costs seconds, and a GUI too plays game after game in one."""
    proc = subprocess.Popen(
        ENGINE,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
        env=own_code_env(),
    )

    def send(line: str) -> None:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()

    def wait_for(prefix: str, timeout: float = 60.0) -> tuple[str, list[str]]:
        seen = []
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            line = proc.stdout.readline().strip()
            assert line or proc.poll() is None, f"the engine exited before {prefix!r}: {seen}"
            seen.append(line)
            if line.startswith(prefix):
                return line, seen
        raise AssertionError(f"no {prefix!r} after {seen}")

    send("uci")
    wait_for("uciok")
    yield send, wait_for
    send("quit")
    proc.wait(10)


@pytest.fixture()
def raw_engine(engine_process):
    """The module's engine in a new game, everything it wrote before read: ``ucinewgame``
    ends any search and resets the position, and ``readyok`` follows all it wrote."""
    send, wait_for = engine_process
    send("ucinewgame")
    send("isready")
    wait_for("readyok")
    return send, wait_for


@pytest.mark.slow
def test_a_whole_game_against_stockfish_1350(stockfish):
    engine = chess.engine.SimpleEngine.popen_uci(ENGINE, env=own_code_env())
    opponent = chess.engine.SimpleEngine.popen_uci(stockfish)
    try:
        opponent.configure({"UCI_LimitStrength": True, "UCI_Elo": 1350, "Threads": 1})
        board = chess.Board()
        while not board.is_game_over(claim_draw=True) and board.ply() < 300:
            player, limit = (
                (engine, chess.engine.Limit(nodes=16))
                if board.turn == chess.WHITE
                else (opponent, chess.engine.Limit(time=0.01))
            )
            result = player.play(board, limit)
            assert result.move in board.legal_moves
            board.push(result.move)
        assert board.is_game_over(claim_draw=True) or board.ply() >= 300
    finally:
        engine.quit()
        opponent.quit()


@pytest.mark.slow
def test_garbage_then_readyok_then_a_legal_bestmove(raw_engine):
    send, wait_for = raw_engine
    for line in [
        "xyzzy",
        "position fen rnbqkbnr/pppppppp/8/8 w KQkq - 0 1",
        "position fen not-a-fen",
        "go nodes abc",
        "go movetime",
        "position startpos moves e2e4 e7e5 g1f9",
        "setoption name Nodes value many",
        "setoption name Temperature value warm",
        "setoption name PolicyTemperature value 0",
        "go depth -3",
    ]:
        send(line)
    send("isready")
    _, seen = wait_for("readyok")
    # every go answered, none searched: each followed a refused position
    assert [line for line in seen if line.startswith("bestmove")] == ["bestmove 0000"] * 3
    refused = [line for line in seen if line.startswith("info string setoption: ")]
    assert [line.split()[3] for line in refused] == ["Nodes", "Temperature", "PolicyTemperature"]
    send("position startpos moves e2e4 e7e5")
    send("go nodes 8")
    line, _ = wait_for("bestmove")
    board = chess.Board()
    board.push_uci("e2e4")
    board.push_uci("e7e5")
    assert chess.Move.from_uci(line.split()[1]) in board.legal_moves


@pytest.mark.slow
def test_go_infinite_answers_only_after_stop(raw_engine):
    send, wait_for = raw_engine
    send("position startpos")
    send("go infinite")
    send("isready")  # answered while the search runs: the engine keeps reading
    _, seen = wait_for("readyok")
    assert not any(line.startswith("bestmove") for line in seen)
    send("stop")
    line, _ = wait_for("bestmove")
    assert chess.Move.from_uci(line.split()[1]) in chess.Board().legal_moves


@pytest.mark.parametrize(
    ("fen", "score"),
    [
        ("7k/p7/6K1/8/8/8/8/1R6 b - - 0 1", "mate -1"),  # Black moves, then Rb8 mates
        ("6k1/8/6K1/8/8/8/8/R7 w - - 0 1", "mate 1"),  # Ra8 mates
        ("6k1/8/5K2/8/8/8/8/R7 w - - 0 1", "mate 2"),  # Rh1, then Rh8 mates
    ],
)
@pytest.mark.slow
def test_proven_mates_are_scored_in_moves(raw_engine, fen, score):
    send, wait_for = raw_engine
    send(f"position fen {fen}")
    send("go nodes 400")
    _, seen = wait_for("bestmove")
    info = [line for line in seen if line.startswith("info depth")][-1]
    assert f" score {score} " in info


@pytest.mark.slow
def test_with_two_seconds_on_the_clock_it_does_not_lose_on_time(raw_engine):
    """The time manager's budget (a fifth of the clock at most; its figures are checked in
    test_uci_protocol) ends the search: the engine's own account of its time stays far inside
    the clock (not the test's stopwatch, which a loaded machine stretches)."""
    send, wait_for = raw_engine
    send("position startpos moves d2d4")
    send("go wtime 2000 btime 2000 winc 0 binc 0")
    _, seen = wait_for("bestmove")
    final = [line.split() for line in seen if line.startswith("info depth")][-1]
    assert int(final[final.index("time") + 1]) < 2000


@pytest.fixture(scope="module")
def searcher():
    searcher = NetSearcher("medium", default_nodes=16)  # one net whatever this machine picks
    searcher.set_option("Threads", "1")
    yield searcher
    searcher.close()


def _go(searcher, moves: list[str], nodes: int, searchmoves: tuple[str, ...] = ()):
    """(bestmove, nodes and pv of the last info line) of one search after ``moves``."""
    history = GameHistory(chess.Board())
    for uci in moves:
        history.push(chess.Move.from_uci(uci))
    restrict = [chess.Move.from_uci(u) for u in searchmoves]
    lines = []
    move, _ = searcher.search(
        SearchRequest(history, nodes, None, False, restrict), threading.Event(), lines.append
    )
    words = lines[-1].split()
    return move, int(words[words.index("nodes") + 1]), words[words.index("pv") + 1 :]


@pytest.mark.slow
def test_the_searcher_keeps_its_tree_along_the_game(searcher):
    searcher.new_game()
    move, nodes, pv = _go(searcher, [], 200)
    assert nodes == 201 and pv[0] == move.uci()
    assert move in chess.Board().legal_moves
    game = [move.uci(), pv[1]]  # the opponent plays the expected reply: its subtree is kept
    assert _go(searcher, game, 100)[1] > 101
    searcher.new_game()
    assert _go(searcher, game, 100)[1] == 101


@pytest.mark.slow
def test_searchmoves_and_temperature(searcher):
    searcher.new_game()
    assert _go(searcher, [], 50, ("a2a3", "h2h3"))[0].uci() in ("a2a3", "h2h3")
    searcher.new_game()
    best = _go(searcher, [], 64)[0]
    picks = set()
    searcher.set_option("Temperature", "1.0")  # sampled in proportion to the visits
    try:
        for _ in range(8):
            searcher.new_game()
            move = _go(searcher, [], 64)[0]
            assert move in chess.Board().legal_moves
            picks.add(move)
    finally:
        searcher.set_option("Temperature", "0")
    assert len(picks) > 1 and best in picks


@pytest.mark.slow
def test_policy_temperature_widens_the_next_search(searcher):
    ruy_lopez = ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6"]
    top = {}
    for temperature in ("1", "4"):
        searcher.set_option("PolicyTemperature", temperature)  # a new tree
        _go(searcher, ruy_lopez, 64)
        assert searcher.tree.config.policy_temperature == float(temperature)
        visits = searcher.tree.root.N
        top[temperature] = max(visits) / sum(visits)
    searcher.set_option("PolicyTemperature", str(PLAY.policy_temperature))
    assert top["4"] < 0.6 * top["1"]  # the best move gets fewer of the visits
    with pytest.raises(ValueError):
        searcher.set_option("PolicyTemperature", "-1")


@pytest.mark.slow
def test_threads_take_effect_on_the_next_search(searcher):
    """``Threads`` is the network's CPU threads in all: split over two inference processes
    (one with a single thread); the processes are replaced only when their number changes,
    built in the background and taken by the first search after they are up (``settle``
    waits for that; tests/test_uci_network.py checks that no search waits)."""
    for threads in (1, 4, 2):
        searcher.set_option("Threads", str(threads))
        _go(searcher, [], 16)
        evaluator = searcher.settle()
        if evaluator.backend != "process":
            continue
        stats = evaluator.server_stats()  # what the inference processes run with
        assert stats["servers"] == min(threads, 2) and stats["threads"] == threads
        if threads == 4:
            four = evaluator
    assert searcher.evaluator is four  # 4 -> 2 threads: two processes either way, no reload
    searcher.set_option("Threads", "1")


@pytest.mark.slow
def test_show_wdl_takes_the_draws_from_a_wdl_head(tmp_path):
    from frugalzero.nn.checkpoint import save_net
    from frugalzero.nn.config import architecture
    from frugalzero.nn.model import PolicyValueNet

    path = tmp_path / "wdl.safetensors"
    save_net(PolicyValueNet(architecture("tiny", value_head="wdl")).eval(), path)
    wdl_searcher = NetSearcher(str(path), default_nodes=16)  # Threads as it loads: no reload
    try:
        wdl_searcher.set_option("UCI_ShowWDL", "true")
        lines = []
        request = SearchRequest(GameHistory(chess.Board()), 32, None, False)
        wdl_searcher.search(request, threading.Event(), lines.append)
    finally:
        wdl_searcher.close()
    words = lines[-1].split()
    win, draw, loss = (int(w) for w in words[words.index("wdl") + 1 :][:3])
    assert win + draw + loss == 1000
    # an untrained head gives each outcome about a third: far from the least decisive split
    assert 100 < draw < 900 and min(win, loss) > 0


@pytest.mark.slow
def test_bench_uci_reports_nodes_per_second_against_the_raw_net(capsys):
    args = ["bench", "uci", "--seconds", "0.3", "--rounds", "1", "--positions", "2", "--json"]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["nps"] > 0 and result["net_positions_per_s"] > 0
    assert result["nps_over_net"] == pytest.approx(
        result["nps"] / result["net_positions_per_s"], rel=1e-2
    )
    assert result["positions"] == 2 and result["batch"] >= 1
    # the lifecycle figures: a launched engine's readyok, and a go after a Threads change
    assert 0 < result["start_s"] <= result["start_max_s"] and result["start_cpu_s"] > 0
    assert 0 < result["threads_change_movetime_s"] <= result["threads_change_movetime_max_s"]
    assert "reference_start_s" not in result


@pytest.mark.slow
def test_an_unreadable_network_stops_the_engine_with_the_reason(tmp_path):
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"not a network at all")
    proc = subprocess.run(
        [sys.executable, "-m", "frugalzero", "uci", "--net", str(broken)],
        input="uci\nisready\ngo nodes 10\n",
        capture_output=True,
        text=True,
        timeout=120,
        env=own_code_env(),
    )
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1 and "uciok" in lines
    assert "readyok" not in lines and not any(line.startswith("bestmove") for line in lines)
    (error,) = [line for line in lines if line.startswith("info string error")]
    assert "could not be loaded" in error and "the engine stops" in error


@pytest.mark.slow
def test_bad_numbers_refused_every_go_answered_and_eof_answers_the_last():
    """The real engine: Temperature -1, nan and inf are refused; ``go nodes 0`` and ``go mate
    0`` end by themselves (``isready`` answers after each); after a refused FEN ``go`` gives
    no move of the previous position; a ``go`` cut by the end of input is still answered."""
    script = [
        "uci",
        "setoption name Temperature value -1",
        "setoption name Temperature value nan",
        "setoption name Temperature value inf",
        "setoption name PolicyTemperature value inf",
        "position startpos",
        "go nodes 0",
        "isready",
        "go mate 0",
        "isready",
        "position startpos moves e2e4",
        "position fen not-a-fen",
        "go nodes 8",
        "position startpos moves e2e4",
        "go nodes 100000",
    ]
    proc = subprocess.run(
        ENGINE,
        input="\n".join(script) + "\n",
        capture_output=True,
        text=True,
        timeout=300,
        env=own_code_env(),
    )
    lines = proc.stdout.splitlines()
    refused = [line for line in lines if line.startswith("info string setoption: ")]
    assert [line.split()[3] for line in refused] == ["Temperature"] * 3 + ["PolicyTemperature"]
    assert lines.count("readyok") == 2
    bestmoves = [line.split()[1] for line in lines if line.startswith("bestmove")]
    assert len(bestmoves) == 4
    start, after_e4 = chess.Board(), chess.Board()
    after_e4.push_uci("e2e4")
    assert all(chess.Move.from_uci(m) in start.legal_moves for m in bestmoves[:2])
    assert bestmoves[2] == "0000"  # no position: not a move of the e2e4 position
    assert chess.Move.from_uci(bestmoves[3]) in after_e4.legal_moves  # answered at EOF


@pytest.mark.parametrize(
    "flag",
    [["--nodes", "0"], ["--nodes", "-5"], ["--nodes", "99999999999"], ["--ram-limit-mb", "0"]],
)
def test_an_out_of_range_flag_is_refused_on_one_line_like_its_option(flag, monkeypatch, capsys):
    """``--nodes 0`` once made every ``go`` unbounded (the ``Nodes`` option refused 0), and
    ``--nodes -5`` played after one node: the flag is checked as its option is."""
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("uci\nisready\nquit\n"))
    assert main(["uci", *flag]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag[0] in err[0], err


@pytest.mark.slow
def test_temperatures_are_bounded(searcher):
    """``Temperature 1e308`` played uniformly at random, as the refused ``inf`` would."""
    for name in ("Temperature", "PolicyTemperature"):
        with pytest.raises(ValueError, match="must be"):
            searcher.set_option(name, "1e308")
    assert searcher.temperature == 0 and searcher.policy_temperature == PLAY.policy_temperature


class _StopAfterFirstLook(threading.Event):
    """A ``stop`` that turns on after the search first looks at it: the search evaluates
    the root and nothing more."""

    def __init__(self) -> None:
        super().__init__()
        self.looks = 0

    def is_set(self) -> bool:
        self.looks += 1
        return self.looks > 1


@pytest.mark.slow
def test_a_search_of_the_root_alone_reports_no_score(searcher):
    """One node (the root's own evaluation, no move searched) once reported ``score cp
    -10458`` from the start position: the shipped nets value any root without history
    planes at about -1, and the line's missing Q fell back to it. No move searched: no
    score; one move searched: its score."""
    searcher.new_game()
    lines: list[str] = []
    request = SearchRequest(GameHistory(chess.Board()), 100, None, False)
    move, _ = searcher.search(request, _StopAfterFirstLook(), lines.append)
    assert move in chess.Board().legal_moves
    words = lines[-1].split()
    assert words[words.index("nodes") + 1] == "1" and "score" not in words, lines
    searcher.new_game()
    move, nodes, pv = _go(searcher, [], 1)
    assert nodes == 2 and pv[0] == move.uci()
    searcher.new_game()  # a clock too short for a node still searches one move (a score)
    lines.clear()
    request = SearchRequest(GameHistory(chess.Board()), None, TimeBudget(1e-4, 1e-4, True), False)
    searcher.search(request, threading.Event(), lines.append)
    assert "score" in lines[-1].split() and " nodes 1 " not in lines[-1], lines


@pytest.mark.slow
def test_a_search_stopped_before_it_began_plays_one_of_its_searchmoves(searcher):
    """``go searchmoves …`` stopped at once (a ``stop`` read before the go started, as the
    fuzzer sends them) once played the reused tree's best move, outside the searchmoves."""
    searcher.new_game()
    best = _go(searcher, [], 64)[0]
    allowed = [m for m in chess.Board().legal_moves if m != best][-2:]
    stopped = threading.Event()
    stopped.set()
    request = SearchRequest(GameHistory(chess.Board()), None, None, True, allowed)
    move, _ = searcher.search(request, stopped, lambda line: None)
    assert move in allowed


@pytest.mark.slow
def test_go_infinite_under_a_ram_limit_stops_growing_and_answers_after_stop():
    """With no evaluation cache, ``go infinite`` once grew ~1.35 kB a node without end: under
    ``RamLimitMb`` the tree stops at the limit (saying so once), the engine's memory stays
    within the limit over its size before the search, and ``bestmove`` waits for ``stop``."""
    limit_mb = 12
    proc = subprocess.Popen(
        [*ENGINE, "--ram-limit-mb", str(limit_mb)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
        env=own_code_env(),
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(ln.strip() for ln in proc.stdout))
    reader.start()

    def send(line: str) -> None:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()

    def wait_for(prefix: str, count: int = 1, timeout: float = 180) -> None:
        end = time.monotonic() + timeout
        while sum(ln.startswith(prefix) for ln in lines) < count:
            assert time.monotonic() < end and proc.poll() is None, f"no {prefix!r}: {lines}"
            time.sleep(0.05)

    try:
        for line in ("uci", "setoption name Threads value 1", "setoption name NNCacheSize value 0"):
            send(line)
        send("isready")
        wait_for("readyok")
        send("position startpos moves e2e4")
        send("go nodes 300")  # the network and the search warmed up: the engine's own size
        wait_for("bestmove")
        baseline = resident_bytes(proc.pid) / MB
        send("position startpos moves e2e4 e7e5")
        send("go infinite")
        wait_for("info string RamLimitMb")
        peak = 0.0
        for _ in range(10):  # the engine's memory sampled over two seconds at its limit
            time.sleep(0.2)
            peak = max(peak, resident_bytes(proc.pid) / MB)
        assert peak <= baseline + limit_mb, (peak, baseline)
        send("isready")
        wait_for("readyok", 2)  # answered behind the search: the engine read all sent so far
        assert sum(ln.startswith("bestmove") for ln in lines) == 1  # not before stop
        send("stop")
        wait_for("bestmove", 2)
        send("isready")
        wait_for("readyok", 3)
        assert sum(ln.startswith("info string RamLimitMb") for ln in lines) == 1
    finally:
        if proc.poll() is None:
            send("quit")
        proc.wait(30)
        reader.join(10)
