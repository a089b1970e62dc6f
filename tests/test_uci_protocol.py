"""The UCI protocol layer: parsing, time budgets, and a loop that survives garbage."""

from __future__ import annotations

import io
import queue
import threading
import time
from dataclasses import dataclass

import chess
import pytest

from frugalzero.uci import (
    BestMove,
    GoLimits,
    UciEngine,
    parse_go,
    parse_position,
    time_budget,
)


class FirstMoveSearcher:
    """Plays the first legal move; in infinite mode waits for stop (protocol tests only)."""

    def __init__(self) -> None:
        self.requests = []
        self.options = {}
        self.started = threading.Event()  # a search began: what a test waits on, not a sleep

    def search(self, request, stop, info):
        self.requests.append(request)
        self.started.set()
        if request.infinite:
            stop.wait()
        info(
            "info depth 1 nodes 1 score cp 0 pv "
            + next(iter(request.history.board.legal_moves)).uci()
        )
        board = request.history.board.copy()
        move = (request.searchmoves or list(board.legal_moves))[0]
        board.push(move)
        return BestMove(move, next(iter(board.legal_moves), None))

    def new_game(self):
        pass

    def set_option(self, name, value):
        self.options[name] = value


class StopOnlySearcher(FirstMoveSearcher):
    """A bounded search that ends only on ``stop`` (a long ``go nodes``, as a slow machine
    makes one): what a command queued behind it must not block."""

    def search(self, request, stop, info):
        self.started.set()
        stop.wait()
        return super().search(request, stop, info)


class Pipe(io.TextIOBase):
    """stdin for the engine: lines put by the test, read by the engine thread."""

    def __init__(self) -> None:
        self.lines: queue.Queue = queue.Queue()

    def __iter__(self):
        while (line := self.lines.get()) is not None:
            yield line


class Out(io.StringIO):
    def wait_for(self, prefix: str, timeout: float = 5.0) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for line in self.getvalue().splitlines():
                if line.startswith(prefix):
                    return line
            time.sleep(0.005)
        raise AssertionError(f"no {prefix!r} in {self.getvalue()!r}")

    def wait_count(self, prefix: str, count: int, timeout: float = 10.0) -> list[str]:
        """The lines starting with ``prefix``, once there are ``count`` of them."""
        end = time.monotonic() + timeout
        while True:
            lines = [ln for ln in self.getvalue().splitlines() if ln.startswith(prefix)]
            if len(lines) >= count:
                return lines
            if time.monotonic() > end:
                raise AssertionError(f"{len(lines)} {prefix!r} of {count} in {self.getvalue()!r}")
            time.sleep(0.005)


@dataclass
class Session:
    """An engine running on a thread with a scripted searcher; ``quit`` ends it."""

    engine: UciEngine
    inp: Pipe
    out: Out
    searcher: FirstMoveSearcher
    thread: threading.Thread

    def quit(self) -> None:
        self.inp.lines.put("quit")
        self.thread.join(5)

    def searching(self) -> None:
        """Wait until the last ``go`` was handled (``readyok`` comes only after every command
        before it) and its search began: then nothing the test sees missing is merely late."""
        self.inp.lines.put("isready")
        self.out.wait_count("readyok", self.out.getvalue().count("readyok") + 1)
        assert self.searcher.started.wait(5), "the search never began"


@pytest.fixture()
def session():
    inp, out, searcher = Pipe(), Out(), FirstMoveSearcher()
    engine = UciEngine(searcher, inp, out)
    thread = threading.Thread(target=engine.run, daemon=True)
    thread.start()
    running = Session(engine, inp, out, searcher, thread)
    yield running
    running.quit()


def test_parse_go_reads_every_limit():
    limits = parse_go("wtime 1000 btime 2000 winc 10 binc 20 movestogo 5 nodes 7 depth 3".split())
    assert (limits.wtime, limits.btime, limits.winc, limits.binc) == (1000, 2000, 10, 20)
    assert (limits.movestogo, limits.nodes, limits.depth) == (5, 7, 3)
    assert parse_go(["infinite"]).infinite
    limits = parse_go("ponder searchmoves e2e4 d2d4 mate 3 movetime 50".split())
    assert limits.ponder and limits.mate == 3 and limits.movetime == 50
    assert limits.searchmoves == ["e2e4", "d2d4"] and not parse_go([]).ponder


@pytest.mark.parametrize(
    "bad", [["nodes", "abc"], ["nodes"], ["mate", "x"], ["bogus"], ["movestogo", "0"]]
)
def test_parse_go_drops_what_is_malformed_and_says_so(bad):
    limits = parse_go([*bad, "movetime", "50"])
    assert limits.movetime == 50 and limits.nodes is None and limits.mate is None
    assert limits.movestogo is None and len(limits.notes) == 1


def test_parse_go_clamps_what_is_out_of_range():
    limits = parse_go("movetime -5 nodes 0 wtime -20 winc -3 btime 99999999999999999999".split())
    assert (limits.movetime, limits.nodes, limits.wtime, limits.winc) == (0, 1, 0, 0)
    assert limits.btime == 7 * 24 * 3600 * 1000 and len(limits.notes) == 5


def test_time_budget_reads_the_side_to_moves_clock():
    two_seconds = GoLimits(wtime=2000, btime=9000, winc=0, binc=500)
    budget = time_budget(two_seconds, chess.WHITE, overhead_ms=100)
    assert budget is not None and budget.managed and 0.01 <= budget.soft <= budget.hard <= 0.4
    black = time_budget(two_seconds, chess.BLACK, overhead_ms=100)
    assert black is not None and black.soft > budget.soft  # more time and an increment
    fixed = time_budget(GoLimits(movetime=300), chess.BLACK, 50)
    assert fixed is not None and not fixed.managed and fixed.hard == pytest.approx(0.25)
    assert time_budget(GoLimits(nodes=5), chess.WHITE, 100) is None
    # in trouble on the clock: never below 10 ms
    low = time_budget(GoLimits(wtime=50, btime=50), chess.WHITE, 100)
    assert low is not None and low.hard == 0.01


def test_parse_position_validates_fen_and_moves():
    board, moves = parse_position("startpos moves e2e4 e7e5".split(), chess.Board())
    assert board == chess.Board() and [m.uci() for m in moves] == ["e2e4", "e7e5"]
    with pytest.raises(ValueError, match="bad FEN"):
        parse_position("fen not a fen".split(), chess.Board())
    with pytest.raises(ValueError, match="illegal move"):
        parse_position("startpos moves e2e5".split(), chess.Board())


def test_garbage_leaves_the_engine_answering(session):
    inp, out, searcher = session.inp, session.out, session.searcher
    for line in [
        "hello world",
        "position fen 8/8/8/8 w - - 0 1",
        "go nodes abc",
        "position startpos moves e2e4 e7e9",
        "setoption name Nope value 3",
        "setoption name MoveOverhead value lots",
        "isready",
    ]:
        inp.lines.put(line)
    out.wait_for("readyok")
    assert not searcher.requests  # nothing started a search
    assert out.getvalue().count("bestmove 0000") == 1  # go nodes abc: answered, no position
    inp.lines.put("position startpos moves e2e4")
    inp.lines.put("go nodes 10")
    move = chess.Move.from_uci(out.wait_count("bestmove", 2)[-1].split()[1])
    board = chess.Board()
    board.push_uci("e2e4")
    assert move in board.legal_moves
    assert out.getvalue().count("info string") >= 7


def test_stop_after_go_infinite_answers_at_once(session):
    inp, out = session.inp, session.out
    inp.lines.put("position startpos")
    inp.lines.put("go infinite")
    session.searching()
    assert "bestmove" not in out.getvalue()
    inp.lines.put("stop")
    out.wait_for("bestmove")


def test_odds_option_changes_the_start_position(session):
    inp, out, searcher = session.inp, session.out, session.searcher
    inp.lines.put("setoption name Odds value queen")
    inp.lines.put("position startpos")
    inp.lines.put("go nodes 1")
    out.wait_for("bestmove")
    assert searcher.requests[-1].history.board.piece_at(chess.D1) is None


def test_ponder_then_ponderhit_starts_the_clock_at_ponderhit(session):
    inp, out, searcher = session.inp, session.out, session.searcher
    inp.lines.put("position startpos moves e2e4 e7e5")  # e7e5 is the reply we ponder on
    inp.lines.put("go ponder movetime 400")
    session.searching()
    assert "bestmove" not in out.getvalue()
    # pondering is not on the clock: the search has no budget and ends only on ponderhit/stop
    assert searcher.requests[-1].infinite and searcher.requests[-1].time is None
    inp.lines.put("ponderhit")
    line = out.wait_for("bestmove")
    timed = searcher.requests[-1]
    assert len(searcher.requests) == 2 and not timed.infinite
    assert timed.time.hard == pytest.approx(0.3, abs=0.05)  # 400 ms less the move overhead
    assert line == "bestmove g1h3 ponder g8e7"  # the searcher's move and expected reply


def test_stop_while_pondering_answers_at_once_with_the_pondered_move(session):
    inp, out, searcher = session.inp, session.out, session.searcher
    inp.lines.put("position startpos")
    inp.lines.put("go ponder wtime 1000 btime 1000")
    session.searching()  # the stop comes while pondering, not before the search began
    inp.lines.put("stop")
    assert out.wait_for("bestmove").startswith("bestmove g1h3")
    assert len(searcher.requests) == 1  # no timed search after a stop
    inp.lines.put("ponderhit")  # too late: ignored
    inp.lines.put("isready")
    out.wait_for("readyok")
    assert out.getvalue().count("bestmove") == 1


def test_quit_stops_the_search_and_answers_it_then_nothing_more(session):
    """As Stockfish does: ``quit`` during ``go infinite`` stops the search, its ``bestmove``
    comes, and nothing after it (once nothing at all was written after ``quit``)."""
    inp, out = session.inp, session.out
    inp.lines.put("position startpos")
    inp.lines.put("go infinite")
    session.searching()  # quit comes during the search
    session.quit()
    assert not session.thread.is_alive()
    assert out.getvalue().splitlines()[-1] == "bestmove g1h3 ponder g8h6"
    inp.lines.put("isready")  # read by no one: the engine has ended
    assert out.getvalue().count("bestmove") == 1 and out.getvalue().count("readyok") == 1


def test_uci_then_quit_lists_the_options_and_uciok():
    """``printf 'uci\\nquit\\n' | frugalzero uci`` once printed nothing: a common way to list
    an engine's options (Stockfish prints them all)."""
    from frugalzero.uci.protocol import ENGINE_OPTIONS

    out = Out()
    UciEngine(FirstMoveSearcher(), iter(["uci", "quit"]), out).run()
    lines = out.getvalue().splitlines()
    assert lines[0] == "id name frugalzero" and lines[-1] == "uciok"
    assert sum(line.startswith("option name") for line in lines) == len(ENGINE_OPTIONS)


def test_quit_answers_every_go_read_before_it():
    """``position startpos``, ``go nodes 100``, ``quit`` once ended with no ``bestmove``: the
    running search stops and answers, and so does a ``go`` queued behind it; ``isready`` after
    ``quit`` is not read."""
    out, searcher = Out(), StopOnlySearcher()
    commands = ["position startpos", "go nodes 100", "go infinite", "quit", "isready", "go"]
    engine = UciEngine(searcher, iter(commands), out)
    thread = threading.Thread(target=engine.run, daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive()
    lines = out.getvalue().splitlines()
    bestmoves = [line for line in lines if line.startswith("bestmove")]
    assert len(bestmoves) == 2 and lines[-1] == bestmoves[-1]
    assert "readyok" not in lines and len(searcher.requests) == 2


def test_chess960_is_refused_and_ponder_accepted(session):
    engine, inp, out = session.engine, session.inp, session.out
    inp.lines.put("setoption name UCI_Chess960 value true")
    inp.lines.put("setoption name Ponder value true")
    inp.lines.put("isready")
    out.wait_for("readyok")
    assert "info string UCI_Chess960 is not supported" in out.getvalue().splitlines()
    assert engine.values["uci_chess960"] == "false" and engine.values["ponder"] == "true"


def test_every_go_ends_by_itself(session):
    """``go nodes 0`` searches one node and ``go mate`` is bounded; neither waits for stop
    (both once never answered, blocking ``isready`` too)."""
    from frugalzero.uci.protocol import MATE_NODES

    inp, out, searcher = session.inp, session.out, session.searcher
    inp.lines.put("position startpos")
    for go in ("go nodes 0", "go mate 0", "go mate 3"):
        inp.lines.put(go)
        inp.lines.put("isready")
    out.wait_count("bestmove", 3)
    out.wait_count("readyok", 3)
    session.quit()
    assert out.getvalue().count("bestmove") == 3 and out.getvalue().count("readyok") == 3
    nodes_0, mate_0, mate_3 = searcher.requests
    assert nodes_0.nodes == 1 and not nodes_0.infinite
    assert mate_0.mate is None and mate_0.nodes is None  # a plain search of the default nodes
    assert mate_3.mate == 3 and mate_3.nodes == MATE_NODES
    notes = [line for line in out.getvalue().splitlines() if line.startswith("info string go")]
    assert [line.split()[2:4] for line in notes] == [
        ["go", "nodes"],
        ["go", "mate"],
        ["go", "without"],
    ]


def test_a_refused_position_leaves_no_position_to_search(session):
    inp, out, searcher = session.inp, session.out, session.searcher
    inp.lines.put("position startpos moves e2e4")
    inp.lines.put("position fen not-a-fen")
    inp.lines.put("go nodes 10")
    assert out.wait_for("bestmove") == "bestmove 0000"  # not a move of the e2e4 position
    assert "info string go: no position" in out.getvalue()
    assert not searcher.requests
    inp.lines.put("position startpos moves e2e4 e7e9")  # an illegal move: refused too
    inp.lines.put("go nodes 10")
    inp.lines.put("position startpos moves e2e4")
    inp.lines.put("go nodes 10")
    bestmoves = out.wait_count("bestmove", 3)
    board = chess.Board()
    board.push_uci("e2e4")
    assert bestmoves[:2] == ["bestmove 0000", "bestmove 0000"]
    assert chess.Move.from_uci(bestmoves[2].split()[1]) in board.legal_moves


def test_the_end_of_input_answers_a_pending_go():
    """As Stockfish does: a script that writes ``go`` and closes the pipe gets its move."""
    inp, out, searcher = Pipe(), Out(), FirstMoveSearcher()
    engine = UciEngine(searcher, inp, out)
    thread = threading.Thread(target=engine.run, daemon=True)
    thread.start()
    inp.lines.put("position startpos")
    inp.lines.put("go infinite")
    inp.lines.put(None)  # end of input
    thread.join(10)
    assert not thread.is_alive()
    assert out.getvalue().splitlines()[-1] == "bestmove g1h3 ponder g8h6"


def test_stop_and_isready_are_read_behind_a_position_sent_while_searching():
    """``position`` (and ``go``) during a bounded search wait behind it without blocking the
    input: ``isready`` is answered and ``stop`` ends the search; then the position applies."""
    inp, out, searcher = Pipe(), Out(), StopOnlySearcher()
    engine = UciEngine(searcher, inp, out)
    thread = threading.Thread(target=engine.run, daemon=True)
    thread.start()
    try:
        inp.lines.put("position startpos")
        inp.lines.put("go nodes 5000")
        assert searcher.started.wait(5)
        inp.lines.put("position startpos moves e2e4")
        inp.lines.put("go nodes 10")
        inp.lines.put("isready")
        out.wait_for("readyok", timeout=10)  # read while the first search runs
        assert "bestmove" not in out.getvalue()
        inp.lines.put("stop")  # stops the first search and the go queued before it
        inp.lines.put("isready")
        bestmoves = out.wait_count("bestmove", 2)
        out.wait_count("readyok", 2)
        assert len(out.wait_count("bestmove", 2)) == 2
        assert bestmoves[0].split()[1] in {m.uci() for m in chess.Board().legal_moves}
        after_e4 = searcher.requests[1].history.board
        assert after_e4.move_stack == [chess.Move.from_uci("e2e4")]
    finally:
        inp.lines.put("quit")
        thread.join(10)
    assert not thread.is_alive()


HOSTILE_GOS = [
    "go movestogo -1 wtime 1000 btime 1000",
    "go nodes abc",
    "go movetime",
    "go depth -3",
    "go wtime 1000000000000000 btime 1000000000000000",
    "go movetime 1000000000000000",
    "go nodes 99999999999",
    "go nodes -5",
    "go bogus 3 nodes 20",
    "go winc -100 wtime -5 btime 1000",
    "go mate -2",
]


def test_every_go_with_a_bad_number_is_answered_with_one_bestmove(session):
    """A bad or absurd number is clamped or dropped with an ``info string`` naming it, never
    the whole ``go``: each of these once went unanswered or searched without end."""
    from frugalzero.uci.protocol import MAX_CLOCK_MS, NODES_MAX

    inp, out, searcher = session.inp, session.out, session.searcher
    inp.lines.put("position startpos")
    for go in HOSTILE_GOS:
        inp.lines.put(go)
        inp.lines.put("isready")
    out.wait_count("readyok", len(HOSTILE_GOS))
    out.wait_count("bestmove", len(HOSTILE_GOS))
    session.quit()
    lines = out.getvalue().splitlines()
    assert sum(ln.startswith("bestmove") for ln in lines) == len(HOSTILE_GOS)
    assert len(searcher.requests) == len(HOSTILE_GOS)
    for request in searcher.requests:
        assert not request.infinite
        assert request.nodes is None or 1 <= request.nodes <= NODES_MAX
        assert request.time is None or request.time.hard <= MAX_CLOCK_MS / 1000
    notes = [ln for ln in lines if ln.startswith("info string go")]
    assert len(notes) >= len(HOSTILE_GOS)  # each says what it clamped or dropped
    assert searcher.requests[-5].nodes == NODES_MAX and searcher.requests[-4].nodes == 1
    assert searcher.requests[-3].nodes == 20  # the unknown word dropped, the rest kept


def test_castling_rights_without_their_rook_are_cleaned_not_refused():
    """As python-chess and Stockfish do: a FEN claiming ``KQkq`` with a rook gone keeps the
    rights it can have (``Kkq`` here); once it was refused, and ``go`` answered 0000."""
    board, _ = parse_position("fen r3k2r/8/8/8/8/8/8/4K2R w KQkq - 0 1".split(), chess.Board())
    assert board.is_valid() and board.castling_xfen() == "Kkq"
    counters = "fen 4k3/8/8/8/8/8/8/4K3 w - - 0 2000000000".split()  # past the native core's
    board, _ = parse_position(counters, chess.Board())
    from frugalzero.chess.native import refusal

    assert refusal(board) is None  # searched by the native core, under its memory limit


def test_go_infinite_with_nothing_to_search_still_waits_for_stop(session):
    """``bestmove 0000`` (no position, or no legal move) comes after ``stop`` for ``go
    infinite``, as any infinite search's answer does (Stockfish's too); it once came at once."""
    inp, out = session.inp, session.out
    no_moves = "position fen 7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"  # stalemate
    for answered, position in enumerate(("position fen not-a-fen", no_moves)):
        inp.lines.put(position)
        inp.lines.put("go infinite")
        inp.lines.put("isready")
        out.wait_count("readyok", answered + 1)
        assert out.getvalue().count("bestmove") == answered  # not before stop
        inp.lines.put("stop")
        assert out.wait_count("bestmove", answered + 1)[-1] == "bestmove 0000"
    assert out.getvalue().count("bestmove") == 2


class BrokenSearcher(FirstMoveSearcher):
    """A searcher whose network could not be loaded, known at once."""

    def wait_ready(self):
        raise ValueError("the network could not be loaded")


def test_a_searcher_that_fails_at_once_still_answers_the_uci_read_before_isready():
    """``uci`` then ``isready`` with a broken network: ``uciok`` first (the GUI sees an engine
    that started), then the reason, then the end; never a lost ``uciok``. The two commands
    race (the worker answers ``uci``, the reader ``isready``): tried many times."""
    for _ in range(30):
        out = Out()
        engine = UciEngine(BrokenSearcher(), iter(["uci", "isready", "go nodes 1"]), out)
        engine.run()
        lines = out.getvalue().splitlines()
        assert "uciok" in lines, lines
        (error,) = [line for line in lines if line.startswith("info string error")]
        assert lines.index("uciok") < lines.index(error) and "could not be loaded" in error
        assert "readyok" not in lines and not any(ln.startswith("bestmove") for ln in lines)


def test_go_depth_is_a_limit_of_its_own(session):
    """``go depth N`` was read and then searched by the ``Nodes`` option: it is the search's
    limit (the main line's length, ``frugalzero.uci.searcher``), bounded by ``MATE_NODES``
    alone and by the nodes given with it."""
    from frugalzero.uci.protocol import MATE_NODES

    inp, out, searcher = session.inp, session.out, session.searcher
    inp.lines.put("position startpos")
    for go in ("go depth 7", "go depth 3 nodes 50", "go depth 0", "go depth 4 movetime 900"):
        inp.lines.put(go)
    out.wait_count("bestmove", 4)
    alone, with_nodes, zero, with_time = searcher.requests
    assert (alone.depth, alone.nodes, alone.time, alone.infinite) == (7, MATE_NODES, None, False)
    assert (with_nodes.depth, with_nodes.nodes) == (3, 50)
    assert zero.depth is None and zero.nodes is None  # dropped, with a note: a plain search
    assert with_time.depth == 4 and with_time.nodes is None and with_time.time is not None


def test_a_huge_clock_thinks_as_long_as_a_long_game():
    """``go wtime 10^15`` was clamped to a week and then thought a twentieth of it (~8 h)."""
    limits = parse_go("wtime 1000000000000000 btime 1000000000000000 winc 5000 binc 5000".split())
    budget = time_budget(limits, chess.WHITE, overhead_ms=100)
    assert budget is not None and budget.managed
    assert 60 < budget.soft <= budget.hard <= 30 * 60  # minutes, as a long game's move


class FakeClock:
    """The protocol's ``time``: only the seconds a test says went by pass."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture()
def clock(monkeypatch):
    from frugalzero.uci import protocol

    fake = FakeClock()
    monkeypatch.setattr(protocol, "time", fake)
    return fake


class LoadingSearcher(FirstMoveSearcher):
    """Its network loads in ``load_s`` of the clock, the first time it is waited for."""

    def __init__(self, clock: FakeClock, load_s: float) -> None:
        super().__init__()
        self.clock, self.load_s = clock, load_s

    def wait_ready(self):
        self.clock.now += self.load_s
        self.load_s = 0.0


def test_a_moves_clock_starts_when_its_go_is_read(clock):
    """A ``go`` read before the network has loaded: the load is on the move's clock, as it is
    on the GUI's (its clock started when it sent the ``go``); it once began after the load,
    so the first move could overrun a short clock by the whole load."""
    searcher, out = LoadingSearcher(clock, load_s=1.9), Out()
    UciEngine(searcher, iter(["position startpos", "go wtime 2000 btime 2000"]), out).run()
    (request,) = searcher.requests
    # 2 s on the clock: a hard limit of 0.3 s, of which the load took all
    assert request.time is not None and request.time.hard == pytest.approx(0.01)
    assert out.getvalue().count("bestmove") == 1


class SlowSearcher(FirstMoveSearcher):
    """Each search takes the next of ``took`` seconds of the clock."""

    def __init__(self, clock: FakeClock, took: list[float]) -> None:
        super().__init__()
        self.clock, self.took = clock, took

    def search(self, request, stop, info):
        self.clock.now += self.took.pop(0)
        return super().search(request, stop, info)


def test_an_answer_past_its_hard_limit_leaves_its_lateness_on_the_next_clocks(clock):
    """A machine busy enough to make a search answer late: the next moves leave that
    lateness on the clock besides ``MoveOverhead`` (``timeman.Lag``)."""
    inp, out = Pipe(), Out()
    searcher = SlowSearcher(clock, [1.3, 0.0])
    thread = threading.Thread(target=UciEngine(searcher, inp, out).run, daemon=True)
    thread.start()
    inp.lines.put("position startpos")
    inp.lines.put("go movetime 1000")
    out.wait_count("bestmove", 1)
    inp.lines.put("go movetime 1000")  # as a GUI sends it: after the last bestmove
    out.wait_count("bestmove", 2)
    inp.lines.put("quit")
    thread.join(10)
    first, second = searcher.requests
    assert first.time.hard == pytest.approx(0.9)  # 1 s less the overhead, 0.1 s
    assert second.time.hard == pytest.approx(0.5)  # ... and less the 0.4 s the first overran


class StuckSearcher(FirstMoveSearcher):
    """A search that does not return, whatever stops it, until released (a machine too busy
    to run it); its one ``info`` line names e2e4 the main line's move."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def search(self, request, stop, info):
        self.requests.append(request)
        info("info depth 2 seldepth 2 multipv 1 score cp 20 nodes 3 nps 0 time 0 pv e2e4 e7e5")
        info("info depth 1 seldepth 1 multipv 2 score cp 5 nodes 3 nps 0 time 0 pv d2d4")
        self.started.set()
        self.release.wait(60)
        return BestMove(chess.Move.from_uci("g1f3"))


def test_a_search_that_does_not_end_in_time_is_answered_by_the_clock():
    """Under a clock the engine answers by the clock's latest moment whatever the search does,
    with the main line's move of its last ``info``; the search's own answer, when it comes, is
    dropped (one ``bestmove`` per ``go``). What decided is who answered, not when."""
    inp, out, searcher = Pipe(), Out(), StuckSearcher()
    thread = threading.Thread(target=UciEngine(searcher, inp, out).run, daemon=True)
    thread.start()
    inp.lines.put("position startpos")
    inp.lines.put("go wtime 300 btime 300")
    try:
        assert out.wait_for("bestmove", timeout=30) == "bestmove e2e4"  # the search still runs
        assert "info string the search did not end in time" in out.getvalue()
    finally:
        searcher.release.set()
    inp.lines.put("position startpos")  # waits for the released search to end
    inp.lines.put("isready")
    out.wait_for("readyok")
    inp.lines.put("quit")
    thread.join(10)
    assert out.getvalue().count("bestmove") == 1 and not thread.is_alive()


def test_echoed_input_is_cut():
    """A 2 MB garbage token was echoed back in one 2 MB ``info string``."""
    from frugalzero.uci.protocol import INFO_MAX

    big = "x" * 2_000_000
    commands = [
        big,
        f"position fen {big}",
        f"position startpos moves {big}",
        f"setoption name {big} value 1",
        f"setoption name Temperature value {big}",
        "isready",
    ]
    out = Out()
    UciEngine(FirstMoveSearcher(), iter(commands), out).run()
    lines = out.getvalue().splitlines()
    assert lines[-1] == "readyok" and len(lines) == len(commands)
    assert all(len(line) <= len("info string ") + INFO_MAX for line in lines), max(map(len, lines))
    assert all("characters)…" in line for line in lines[:4])  # it says how much was cut


class ClosingOut(Out):
    """An output the GUI closes after ``lines`` lines: later writes raise BrokenPipeError."""

    def __init__(self, lines: int) -> None:
        super().__init__()
        self.left = lines

    def write(self, text: str) -> int:
        if self.left <= 0:
            raise BrokenPipeError(32, "Broken pipe")
        self.left -= 1
        return super().write(text)


def test_a_closed_output_ends_the_engine_quietly_while_its_input_stays_open():
    """A GUI that closed the engine's output got two BrokenPipe tracebacks, and the engine
    went on reading: it ends, saying so in one line on stderr, its search stopped."""
    inp, out, err, searcher = Pipe(), ClosingOut(2), io.StringIO(), FirstMoveSearcher()
    engine = UciEngine(searcher, inp, out)
    engine.err = err
    thread = threading.Thread(target=engine.run, daemon=True)
    thread.start()
    inp.lines.put("position startpos")
    inp.lines.put("go infinite")
    assert searcher.started.wait(5)
    inp.lines.put("uci")  # id name, id author, then the options: the third line fails
    thread.join(10)
    assert not thread.is_alive()  # its input is still open
    assert out.getvalue().splitlines() == [
        "id name frugalzero",
        "id author the frugalzero developers",
    ]
    assert engine.output_closed and err.getvalue().count("\n") == 1
    assert "output was closed" in err.getvalue()


@pytest.mark.slow
def test_go_depth_stops_at_the_main_lines_length():
    """The real searcher with ``Nodes 1``: ``go depth 5`` searches until its main line is 5
    moves long (once it searched the one node of ``Nodes``)."""
    from frugalzero.uci.protocol import MATE_NODES
    from frugalzero.uci.searcher import NetSearcher

    searcher, inp, out = NetSearcher("small", default_nodes=1), Pipe(), Out()
    thread = threading.Thread(target=UciEngine(searcher, inp, out).run, daemon=True)
    thread.start()
    try:
        for line in ("isready", "position startpos", "go depth 5"):
            inp.lines.put(line)
        out.wait_for("bestmove", timeout=120)  # the end of input would stop the search
    finally:
        inp.lines.put("quit")
        thread.join(30)
        searcher.close()
    lines = out.getvalue().splitlines()
    words = [line for line in lines if line.startswith("info depth") and " pv " in line][-1].split()
    depth, nodes = int(words[words.index("depth") + 1]), int(words[words.index("nodes") + 1])
    assert depth >= 5 and 5 <= nodes < MATE_NODES, lines[-3:]
    assert lines[-1].startswith("bestmove")
