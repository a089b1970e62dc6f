"""`frugalzero uci` as GUIs and match runners drive it: a compliance run like fastchess's
``--compliance`` (and more), then MultiPV, WDL, pondering, searchmoves and mate searches on the
real engine process."""

from __future__ import annotations

import logging
import queue
import subprocess
import sys
import threading
import time

import chess
import chess.engine
import pytest

from frugalzero.runtime.interpreter import own_code_env
from frugalzero.uci import GoLimits, time_budget

pytestmark = pytest.mark.slow  # every test drives a real engine process

FASTCHESS_FEN = "3r2k1/p5n1/1pq1p2p/2p3p1/2P1P1n1/1P1P2pP/PN1Q2K1/5R2 w - - 0 27"


class Uci:
    """The engine in a subprocess: lines in, lines out (with timeouts), every line kept."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "frugalzero", "uci", "--nodes", "16"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            env=own_code_env(),
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.board = chess.Board()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def until(self, prefix: str, timeout: float = 30.0) -> list[str]:
        """Every line up to and including the first that starts with ``prefix``."""
        seen: list[str] = []
        end = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {prefix!r} within {timeout} s after {seen}") from None
            if line is None:
                raise AssertionError(f"the engine exited before {prefix!r}, after {seen}")
            seen.append(line)
            if line.startswith(prefix):
                return seen

    def ready(self) -> list[str]:
        self.send("isready")
        return self.until("readyok")

    def position(self, command: str) -> None:
        self.send(command)
        tokens = command.split()[1:]
        if tokens[0] == "startpos":
            self.board, rest = chess.Board(), tokens[1:]
        else:
            end = tokens.index("moves") if "moves" in tokens else len(tokens)
            self.board, rest = chess.Board(" ".join(tokens[1:end])), tokens[end:]
        for move in rest[1:]:
            self.board.push_uci(move)

    def searching(self, timeout: float = 30.0) -> list[str]:
        """Every line up to the first report of a search still under way (``info … currmove``,
        sent every half second of a search, never in its final report); none is a bestmove.
        A positive sign that the ``go`` runs unanswered, where a sleep proves nothing."""
        seen = self.until("info depth", timeout)
        while "currmove" not in seen[-1].split():
            seen += self.until("info depth", timeout)
        assert not any(line.startswith("bestmove") for line in seen), seen
        return seen

    def go(self, command: str, timeout: float = 30.0) -> tuple[chess.engine.BestMove, list]:
        """Send ``go …``; the bestmove (checked legal) and every info line parsed."""
        self.send(command)
        return self.answer(timeout)

    def answer(self, timeout: float = 30.0) -> tuple[chess.engine.BestMove, list]:
        seen = self.until("bestmove", timeout)
        infos = [parse_info(line[5:], self.board) for line in seen if line.startswith("info ")]
        best = seen[-1].split()
        move = chess.Move.from_uci(best[1])
        assert move in self.board.legal_moves, seen[-1]
        ponder = None
        if len(best) > 2:
            assert best[2] == "ponder" and len(best) == 4, seen[-1]
            after = self.board.copy()
            after.push(move)
            ponder = chess.Move.from_uci(best[3])
            assert ponder in after.legal_moves, seen[-1]
        return chess.engine.BestMove(move, ponder), infos

    def quit(self) -> str:
        """``quit``; what the engine wrote after it."""
        self.send("quit")
        out, _ = self.proc.communicate(timeout=10)
        assert self.proc.returncode == 0
        rest = []
        while (line := self.lines.get(timeout=5)) is not None:
            rest.append(line)
        return "\n".join(rest) + out


def parse_info(text: str, board: chess.Board) -> dict:
    """python-chess's parse of an ``info`` line, which must neither log an error nor drop a
    field we sent (its parser logs and skips what it cannot read)."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("chess.engine")
    logger.addHandler(handler)
    try:
        info = chess.engine._parse_uci_info(text, board)
    finally:
        logger.removeHandler(handler)
    assert not records, (text, [r.getMessage() for r in records])
    if "pv" in text.split():
        assert len(info["pv"]) == len(text.split(" pv ")[1].split()), text  # every move legal
    return info


def search_lines(infos: list[dict]) -> list[dict]:
    """The final report: the last ``multipv`` 1..k run of info lines."""
    scored = [info for info in infos if "score" in info]
    start = max(i for i, info in enumerate(scored) if info.get("multipv", 1) == 1)
    return scored[start:]


def option_values(line: str) -> tuple[str, list[str]]:
    """(name, values worth setting: default and the boundaries or choices) of an option."""
    words = line.split()
    name = " ".join(words[2 : words.index("type")])
    kind = words[words.index("type") + 1]
    default = words[words.index("default") + 1] if "default" in words else ""
    if kind == "spin":
        low, high = words[words.index("min") + 1], words[words.index("max") + 1]
        return name, [default, low, high, default]
    if kind == "check":
        flipped = "false" if default == "true" else "true"
        return name, [default, flipped, default]
    if kind == "combo":
        choices = [words[i + 1] for i, w in enumerate(words) if w == "var"]
        return name, [default, choices[0], choices[-1], default]
    return name, [default]


def test_the_engine_passes_a_gui_compliance_run():
    engine = Uci()
    try:
        engine.send("uci")
        hello = engine.until("uciok")
        assert any(line.startswith("id name ") for line in hello)
        assert any(line.startswith("id author ") for line in hello)
        options = [option_values(line) for line in hello if line.startswith("option name ")]
        names = {name for name, _ in options}
        assert {"MultiPV", "UCI_ShowWDL", "Ponder", "UCI_Chess960", "NNCacheSize"} <= names
        assert {"Threads", "BatchSize", "MoveOverhead"} <= names
        assert engine.ready()[-1] == "readyok"

        for name, values in options:
            for value in values:
                engine.send(f"setoption name {name} value {value}".rstrip())
        said = [line for line in engine.ready() if line.startswith("info string")]
        assert said == ["info string UCI_Chess960 is not supported"]  # nothing else refused

        engine.send("ucinewgame")
        engine.ready()
        engine.position("position startpos")
        engine.ready()
        engine.position(f"position fen {FASTCHESS_FEN}")
        engine.ready()
        for go in [
            "go wtime 100",
            "go btime 100",
            "go wtime 100 winc 100 btime 100 binc 100",
            "go btime 100 binc 100 wtime 100 winc 100",
            "go wtime 3000 btime 3000 movestogo 10",
            "go movetime 100",
            "go nodes 40",
            "go depth 2",
        ]:
            _, infos = engine.go(go)
            if infos and "did not end in time" in str(infos[-1].get("string")):  # 0.1 s, a busy
                continue  # machine: answered by the clock's guard (test_uci_protocol), not late
            assert infos and "score" in infos[-1], go
            final = search_lines(infos)[0]
            assert {"depth", "seldepth", "nodes", "nps", "time", "pv", "hashfull"} <= set(final)

        engine.send("ucinewgame")
        engine.position("position startpos")
        engine.go("go wtime 100 btime 100")
        engine.position("position startpos moves e2e4 e7e5")
        engine.go("go wtime 100 btime 100")

        engine.send("go infinite")
        engine.searching()  # half a second into the search: not answered before stop
        engine.send("stop")
        engine.answer(timeout=5)

        engine.send("go infinite")
        ready = engine.ready()  # the go was taken (readyok waits for it): quit comes after it
        assert not any(line.startswith("bestmove") for line in ready), ready
    finally:
        after = engine.quit()
    assert after.count("bestmove") == 1, after  # quit stops the search, which answers (as
    # Stockfish's does); the lines after quit come from two readers, in no sure order


@pytest.fixture(scope="module")
def engine():
    engine = Uci()
    engine.send("uci")
    engine.until("uciok")
    engine.ready()
    yield engine
    engine.quit()


@pytest.fixture()
def fresh(engine):
    """The module's engine after ``ucinewgame``, every option we change back to its default."""
    engine.send("ucinewgame")
    engine.ready()
    yield engine
    for name, value in [("MultiPV", "1"), ("UCI_ShowWDL", "false"), ("NNCacheSize", "200000")]:
        engine.send(f"setoption name {name} value {value}")
    engine.ready()


def test_multipv_gives_distinct_lines_each_with_its_own_score(fresh):
    fresh.send("setoption name MultiPV value 3")
    fresh.position("position startpos")
    best, infos = fresh.go("go nodes 200")
    lines = search_lines(infos)
    assert [info["multipv"] for info in lines] == [1, 2, 3]
    assert len({info["pv"][0] for info in lines}) == 3
    assert all("score" in info and len(info["pv"]) >= 2 for info in lines)
    assert lines[0]["pv"][0] == best.move and best.ponder == lines[0]["pv"][1]


def test_show_wdl_adds_win_draw_loss_per_mille(fresh):
    fresh.send("setoption name UCI_ShowWDL value true")
    fresh.send("setoption name MultiPV value 2")
    fresh.position("position fen r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    _, infos = fresh.go("go nodes 64")
    assert all("wdl" in info for info in infos if "score" in info)
    for info in search_lines(infos):
        wdl, cp = info["wdl"].relative, info["score"].relative.score()
        assert wdl.wins + wdl.draws + wdl.losses == 1000
        # the shipped net has a scalar value head: the least decisive split of the value
        assert min(wdl.wins, wdl.losses) == 0 and (wdl.wins - wdl.losses) * cp >= 0


def test_ponder_then_ponderhit_plays_a_move(fresh):
    fresh.position("position startpos")
    best, _ = fresh.go("go nodes 64")
    assert best.ponder is not None  # the expected reply, for the GUI to ponder on
    fresh.position(f"position startpos moves {best.move.uci()} {best.ponder.uci()}")
    fresh.send("go ponder wtime 2000 btime 2000")
    seen = fresh.searching()
    # pondering is not on the clock: unanswered after searching longer (by the engine's own
    # report) than the 2 s clock allows a move
    clock = time_budget(GoLimits(wtime=2000, btime=2000), fresh.board.turn, 100)
    searched_ms = int(seen[-2].split(" time ")[1].split()[0])
    assert clock is not None and searched_ms > 1000 * clock.hard, seen[-2]
    fresh.send("ponderhit")  # the clock starts here (test_uci_protocol checks its budget)
    fresh.answer()


def test_stop_while_pondering_answers_at_once(fresh):
    fresh.position("position startpos moves e2e4 e7e5")
    fresh.send("go ponder wtime 60000 btime 60000")
    fresh.searching()  # the stop comes while pondering
    fresh.send("stop")
    fresh.answer()


def test_searchmoves_searches_and_plays_only_those_moves(fresh):
    fresh.send("setoption name MultiPV value 5")
    fresh.position("position startpos")
    best, infos = fresh.go("go searchmoves e2e4 d2d4 nodes 100")
    lines = search_lines(infos)
    assert best.move.uci() in ("e2e4", "d2d4")
    assert sorted(info["pv"][0].uci() for info in lines) == ["d2d4", "e2e4"]  # none else searched
    assert lines[0]["nodes"] == 101  # a new game: the root and this search's 100


def test_go_mate_stops_at_the_proven_mate(fresh):
    fresh.position("position fen 6k1/8/6K1/8/8/8/8/R7 w - - 0 1")
    best, infos = fresh.go("go mate 1")
    assert best.move.uci() == "a1a8"
    final = search_lines(infos)[0]
    assert final["score"].relative == chess.engine.Mate(1) and final["nodes"] < 200


def test_the_cache_size_is_an_option_and_hashfull_its_share(fresh):
    fresh.send("setoption name NNCacheSize value 100")
    fresh.position("position startpos moves d2d4")
    _, infos = fresh.go("go nodes 300")
    assert search_lines(infos)[0]["hashfull"] == 1000  # 100 positions fill it
    fresh.send("setoption name NNCacheSize value 0")
    _, infos = fresh.go("go nodes 30")
    assert "hashfull" not in search_lines(infos)[0]  # no cache, nothing to fill
