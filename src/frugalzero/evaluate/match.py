"""Matches between two engines: games in parallel, paired openings, adjudication, PGN, SPRT.

The runner is one asyncio event loop. Each of ``concurrency`` game slots owns one seat of each
engine (a UCI process each; a net engine's seats share one evaluator, so its searches in
concurrent games are batched together) and plays game after game from a shared queue. Game 2k
and 2k+1 use the same opening with colours swapped; A is White in even games.

No engine can stall a match: every wait for an answer has a timeout (``uciok``, ``readyok``,
each move; ``hang_seconds``, ``hang_margin``). An engine that hangs, crashes, moves illegally or
floods a line of output forfeits that game (a hang is a time forfeit, the rest a rules
infraction; a comment at the game's end names the engine and what it did), is killed at once
and started again before its next game; the summary counts forfeits by engine and reason. One
that dies while starting is started again (``RESTART_TRIES``). One that does not answer its
handshake in time, or cannot start after its tries, ends the match with one line naming it, the
games finished kept in the PGN: forfeiting all its remaining games would make a result (a
rating, a gate's decision) that measures nothing.

A side under a clock (``tc=``) is told both clocks with each move and loses on time when a
move overruns its clock (``frugalzero.evaluate.clock``). Such a match plays one game at a time
unless ``concurrency`` is set, so the engine has the machine to itself, as a user's would.

Every path a match is given (the engines' executables, the nets of ``net:`` engines, the
opening book) is checked before any engine or net starts (``check_inputs``). The runner owns
every process it starts, descendants included (each UCI engine runs under a keeper:
``frugalzero.evaluate.engines``): an engine that forfeits is ended with all it started before
the next game, and none is left when the match returns, however it ends. Lines an engine
writes that we cannot use are counted per engine (``engine_output`` in the summary), the
first of each kind logged.

A killed match goes on from the games in its PGN (``evaluate.resume``, ``frugalzero match
--resume``): the games still missing are played from the openings they would have had, and the
pairs complete across the two runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import chess
import chess.engine

from frugalzero.chess.positions import Opening, load_book
from frugalzero.chess.rules import game_end
from frugalzero.config import check
from frugalzero.errors import UserError
from frugalzero.evaluate.adjudicate import AdjudicationConfig, Adjudicator
from frugalzero.evaluate.clock import FLAG_TOLERANCE, GameClocks, flag_verdict, time_control_tag
from frugalzero.evaluate.engines import (
    HANG_MARGIN,
    CannotStart,
    OutputNotes,
    Player,
    PlayerFailure,
    RandomPlayer,
    SpecMistake,
    StartHang,
    UciPlayer,
    unusable_lines,
)
from frugalzero.evaluate.openings import odds_opening, opening_stream
from frugalzero.evaluate.pgn import GameOutcome, append_game, score_comment, to_pgn
from frugalzero.evaluate.resume import Resumed, set_aside_torn
from frugalzero.evaluate.specs import EngineSpec, net_file, parse_spec, uci_command
from frugalzero.evaluate.sprt import SprtConfig, SprtResult, sprt
from frugalzero.results import BLACK_WINS, SCORE, loss_for
from frugalzero.stats import elo_interval, los

RESTART_TRIES = 3


@dataclass
class MatchConfig:
    """A match between two engines."""

    games: int = 100
    """Games to play (at most, with SPRT); an even number keeps every opening pair complete."""
    openings: str = ""
    """Opening book, EPD or PGN; each opening is played twice with colours swapped. Empty:
    random openings of ``noise_plies`` plies (or the start position if that is 0)."""
    noise_plies: int = 8
    """Random plies that make an opening when there is no book (material kept level)."""
    odds: Literal["", "knight", "rook", "queen"] = ""
    """Odds chess: every game starts without this piece of the odds giver (queen-side knight
    or rook, or the queen), then ``noise_plies`` random plies; no book. Empty = no odds."""
    odds_giver: Literal["first", "second"] = "first"
    """Which engine gives the odds, whatever colour it plays: the first (A) or the second."""
    concurrency: int = 0
    """Games played at once; 0 = one per CPU core (each game's engines take turns on one), or
    one at a time when an engine plays under a clock (it gets the whole machine)."""
    seed: int = 1
    """Seed of the random openings and of ``random`` players."""
    pgn: str = ""
    """File the games are appended to as they finish; empty for none."""
    event: str = "frugalzero match"
    """PGN Event tag."""
    hang_seconds: float = 60.0
    """Seconds an engine may stay silent where it has no time to keep: its ``uciok`` and
    ``readyok`` (at start, and after ``ucinewgame`` before each game) and a move limited by
    nodes or depth, whose time nobody knows (a big net on a slow machine; an engine loading
    its network at ``isready``). Generous, since a false hang costs a game; past it the engine
    forfeits the game (at start: the match ends)."""
    hang_margin: float = HANG_MARGIN
    """Seconds past a timed move's time (``movetime``, or the mover's whole clock) before a
    silent engine has hung and forfeits: a healthy engine answers within milliseconds of its
    time; the margin covers a loaded machine and a first search still warming up."""
    time_margin: float = 0.0
    """Seconds a move may overrun its clock, beyond a fixed 0.05 s, before the flag falls."""
    sprt: SprtConfig | None = None
    """Stop as soon as this test decides (pentanomial model on complete opening pairs)."""
    adjudication: AdjudicationConfig = field(default_factory=AdjudicationConfig)
    """When games are stopped early (resignation, dead draw, length limit)."""

    def __post_init__(self) -> None:
        checks = [
            (self.games >= 1, "games must be at least 1"),
            (self.noise_plies >= 0, "noise_plies must be >= 0"),
            (self.concurrency >= 0, "concurrency must be >= 0"),
            (self.hang_seconds > 0, "hang_seconds must be > 0"),
            (self.hang_margin > 0, "hang_margin must be > 0"),
            (self.time_margin >= 0, "time_margin must be >= 0"),
        ]
        check(self, "match", checks)


@dataclass
class Tally:
    """Results from the first engine's side, with opening pairs kept together."""

    wins: int = 0
    draws: int = 0
    losses: int = 0
    pentanomial: list[int] = field(default_factory=lambda: [0] * 5)
    """Complete pairs scoring 0, 1/2, 1, 3/2 and 2 points."""
    _open: dict[int, float] = field(default_factory=dict)

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / self.games if self.games else 0.5

    def add(self, pair: int, score: float) -> None:
        if score == 1.0:
            self.wins += 1
        elif score == 0.0:
            self.losses += 1
        else:
            self.draws += 1
        if pair in self._open:
            self.pentanomial[int(round(2 * (self._open.pop(pair) + score)))] += 1
        else:
            self._open[pair] = score

    def paired(self) -> bool:
        """Were (nearly) all games played in complete pairs? Then the pentanomial model holds."""
        return sum(self.pentanomial) > 0 and 2 * sum(self.pentanomial) >= self.games - 1

    def elo(self) -> tuple[float, float, float]:
        penta = self.pentanomial if self.paired() else None
        return elo_interval(self.wins, self.draws, self.losses, penta)

    def sprt(self, config: SprtConfig) -> SprtResult:
        """The test on complete opening pairs only (as fishtest does): a half-played pair
        would mix the two models, and the opening's bias cancels only within a pair."""
        return sprt(0, 0, 0, config, self.pentanomial)


@dataclass
class MatchResult:
    engine_a: str
    engine_b: str
    tally: Tally
    outcomes: list[GameOutcome]
    reasons: Counter
    seconds: float
    sprt: SprtResult | None = None
    pgn: str = ""
    batching: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per net engine: search batches sent and leaves in them (shared across games)."""
    engine_output: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per UCI engine that wrote lines we could not use: their count by kind (``unexpected
    line``, ``unparsable info``, ``not UTF-8``)."""
    resumed: int | None = None
    """Games read back from an earlier run's PGN (in ``tally`` and ``reasons``, not in
    ``outcomes``); None when the match was not resumed."""

    def summary(self) -> dict:
        """The ``--json`` object: the issue's fields first."""
        t = self.tally
        elo, lo, hi = t.elo()
        out = {
            "engine_a": self.engine_a,
            "engine_b": self.engine_b,
            "games": t.games,
            "wins": t.wins,
            "draws": t.draws,
            "losses": t.losses,
            "score": round(t.score, 4),
            "elo": round(elo, 1),
            "elo_ci95": [round(lo, 1), round(hi, 1)],
            "los": round(los(t.wins, t.losses), 4),
            "pentanomial": list(t.pentanomial),
        }
        if self.resumed is not None:
            out["resumed"] = self.resumed
        if self.sprt is not None:
            out["sprt"] = {
                "llr": round(self.sprt.llr, 3),
                "bounds": [round(self.sprt.lower, 3), round(self.sprt.upper, 3)],
                "decision": self.sprt.decision,
            }
        out["endings"] = dict(self.reasons.most_common())
        # forfeits of this run's games (a resumed game's PGN names only its ending)
        out["failures"] = sum(1 for o in self.outcomes if o.failed)
        forfeits: dict[str, Counter] = {}
        for o in self.outcomes:
            if o.failed:
                forfeits.setdefault(o.failed, Counter())[o.forfeit] += 1
        out["forfeits"] = {name: dict(c.most_common()) for name, c in forfeits.items()}
        if self.batching:
            out["net_batching"] = self.batching
        if self.engine_output:
            out["engine_output"] = self.engine_output
        out["seconds"] = round(self.seconds, 1)
        if self.pgn:
            out["pgn"] = self.pgn
        return out


def _rules_outcome(board: chess.Board) -> tuple[str, str] | None:
    """Result and reason (e.g. 'threefold repetition') if the rules end the game."""
    outcome = game_end(board)
    if outcome is None:
        return None
    return outcome.result(), outcome.termination.name.lower().replace("_", " ")


async def play_game(
    white: Player, black: Player, opening: Opening, index: int, config: MatchConfig
) -> GameOutcome:
    """One game from ``opening``; an engine failure loses it for that engine."""
    board = opening.board()
    outcome = GameOutcome(
        index,
        white.name,
        black.name,
        "*",
        "",
        "normal",
        opening,
        list(board.move_stack),
        ["book"] * len(board.move_stack),
        white.spec.limit_text(),
        black.spec.limit_text(),
        time_control_tag(white.spec.tc, black.spec.tc),
    )
    clocks = GameClocks(white.spec.tc, black.spec.tc, FLAG_TOLERANCE + config.time_margin)
    for side, player, offset in ((chess.WHITE, white, 0), (chess.BLACK, black, 50_000)):
        try:
            await player.new_game(config.seed * 100_003 + index + offset)
        except PlayerFailure as failure:
            return _forfeit(outcome, player, side, failure)
    adjudicator = Adjudicator(config.adjudication)
    verdict = _rules_outcome(board)
    while verdict is None:
        mover = board.turn
        player = white if mover == chess.WHITE else black
        started = time.perf_counter()
        try:
            played = await player.play(board, clocks.limit(mover))
        except PlayerFailure as failure:
            return _forfeit(outcome, player, mover, failure)
        if not clocks.spend(mover, time.perf_counter() - started):
            outcome.result, outcome.reason = flag_verdict(board, mover)
            outcome.termination = "time forfeit"
            return outcome
        board.push(played.move)
        if (left := clocks.own_clock(mover)) is not None:
            outcome.clocks[len(outcome.moves)] = left
        outcome.moves.append(played.move)
        outcome.comments.append(score_comment(played.score, played.depth))
        verdict = _rules_outcome(board)
        if verdict is None:
            verdict = adjudicator.update(board, mover, played.score)
            if verdict is not None:
                outcome.termination = "adjudication"
    outcome.result, outcome.reason = verdict
    return outcome


def _forfeit(
    outcome: GameOutcome, player: Player, side: chess.Color, failure: PlayerFailure
) -> GameOutcome:
    """``outcome`` lost by ``player`` (playing ``side``) failing: a hang is a time forfeit,
    anything else breaks the rules."""
    outcome.failed = player.name
    outcome.forfeit, outcome.forfeit_detail = failure.kind, failure.detail
    outcome.termination = "time forfeit" if failure.kind == "hang" else "rules infraction"
    outcome.result = loss_for(side)
    outcome.reason = f"{'White' if side == chess.WHITE else 'Black'} {failure.kind}"
    return outcome


def make_players(
    spec: EngineSpec,
    seats: int,
    hang_seconds: float,
    shared: dict,
    hang_margin: float = HANG_MARGIN,
) -> list[Player]:
    """``seats`` players of one engine. ``shared`` holds objects seats of equal specs share
    (a net engine's evaluator), so each is built once per match."""
    if spec.kind == "random":
        return [RandomPlayer(spec) for _ in range(seats)]
    if spec.is_uci:  # a net under a clock too: our own UCI engine, one process per seat
        notes = OutputNotes()  # one engine's lines counted across its seats
        return [UciPlayer(spec, hang_seconds, hang_margin, notes) for _ in range(seats)]
    from frugalzero.evaluate.netplayer import NetEngine

    if spec.name not in shared:
        shared[spec.name] = NetEngine(spec)
    return shared[spec.name].seats(seats)


OnGame = Callable[[GameOutcome, Tally], None]


def game_slots(spec_a: EngineSpec, spec_b: EngineSpec, config: MatchConfig) -> tuple[int, str]:
    """(games at once, why it is one when not asked): ``concurrency``, else one per core, but
    one game at a time when an engine plays under a clock, so that engine has the whole
    machine as a user's would and the other games do not eat its time."""
    from frugalzero.runtime.cores import available_cores

    if config.concurrency:
        return min(config.concurrency, config.games), ""
    if spec_a.tc is not None or spec_b.tc is not None:
        why = "an engine plays under a clock: one game at a time (set --concurrency to change)"
        return 1, why
    return min(available_cores(), config.games), ""


def _opening(config: MatchConfig, opening: Opening, pair: int, a_white: bool) -> Opening:
    """The pair's opening, or with odds the giver's start (its colour changes within a pair,
    so its start does too)."""
    if not config.odds:
        return opening
    giver_white = a_white == (config.odds_giver == "first")
    return odds_opening(config.odds, giver_white, config.noise_plies, (config.seed, pair))


def check_inputs(specs: Iterable[EngineSpec], config: MatchConfig | None = None) -> None:
    """Every path the engines and the match are given, checked before any engine or net
    starts: each UCI engine's executable (``uci:``, the installed engines, ``frugalzero uci``'s
    net under a clock), each ``net:`` engine's network file and the opening book (read up to
    its first position); a bad one is one line naming it. (A PGN destination is the
    commands' to check, ``check_destination``: the pipeline writes into its own run.)"""
    for spec in specs:
        if spec.is_uci:
            uci_command(spec)
        elif spec.kind == "net":
            net_file(spec)
    if config is not None and config.openings:
        load_book(config.openings, limit=1)


async def _started(player: Player) -> None:
    """Start an engine, a few tries: one killed during its handshake comes back like one
    killed mid-game; one that never starts, cannot be run or hangs in its handshake (it would
    only hang again), stops the match with its line."""
    for attempt in range(RESTART_TRIES):
        try:
            await player.start()
            return
        except (SpecMistake, StartHang, CannotStart):
            raise
        except UserError:
            if attempt == RESTART_TRIES - 1:
                raise
            await asyncio.sleep(1.0)


async def _all(work: Iterable[Awaitable[None]]) -> None:
    """Await every one, or at the first failure cancel the others and wait for them to end
    (a start cancelled in its handshake kills its process) before raising it."""
    tasks = [asyncio.ensure_future(w) for w in work]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _take_resumed(
    resumed: Resumed,
    config: MatchConfig,
    opening_of: Callable[[int], Opening],
    tally: Tally,
    reasons: Counter,
) -> set[int]:
    """Count the resumed games of the first ``config.games`` in ``tally`` and ``reasons``,
    each checked to start from the opening its round has in this match (the same openings,
    seed and noise plies as the first run's); their indices."""
    done = set()
    for index in sorted(i for i in resumed.games if i < config.games):
        headers = resumed.games[index]
        pair, a_white = index // 2, index % 2 == 0
        want = _opening(config, opening_of(pair), pair, a_white)
        fen = chess.Board(want.root_fen).fen()
        got_fen = headers.get("FEN", chess.STARTING_FEN)
        if headers.get("Opening", "") != want.name or got_fen != fen:
            got = headers.get("Opening") or got_fen
            raise UserError(
                f"{resumed.path}: round {index + 1} started from {got}, not from this match's "
                f"opening for it ({want.name or fen}): resume with the first run's openings, "
                "seed and noise plies"
            )
        score = SCORE[headers["Result"]]
        tally.add(pair, score if a_white else 1.0 - score)
        reasons[headers.get("TerminationDetails") or headers.get("Termination", "?")] += 1
        done.add(index)
    return done


async def run_match(
    spec_a: EngineSpec,
    spec_b: EngineSpec,
    config: MatchConfig,
    on_game: OnGame | None = None,
    resumed: Resumed | None = None,
) -> MatchResult:
    """Play the match inside a running event loop; with ``resumed``, only the games of the
    first ``config.games`` that are not among its games."""
    if config.games < 1:
        raise UserError(f"games must be at least 1, not {config.games}")
    check_inputs((spec_a, spec_b), config)  # before a net loads or an engine starts
    stream = opening_stream(config.openings or None, config.noise_plies, config.seed)
    openings: list[Opening] = [next(stream)]  # the whole book read: a bad line now

    def opening_of(pair: int) -> Opening:
        """The stream's pair-th opening: drawn in order, whichever pairs are played."""
        while len(openings) <= pair:
            openings.append(next(stream))
        return openings[pair]

    tally, outcomes, reasons = Tally(), [], Counter()
    state = {"next": 0, "stop": False, "sprt": None}
    done = set()
    if resumed is not None:
        done = _take_resumed(resumed, config, opening_of, tally, reasons)
    todo = [index for index in range(config.games) if index not in done]
    if done and config.sprt is not None:
        state["sprt"] = tally.sprt(config.sprt)
        state["stop"] = state["sprt"].decision is not None
    pgn_path = Path(config.pgn) if config.pgn else None
    if resumed is not None:
        set_aside_torn(resumed)  # before a game is appended behind it
    if state["stop"] or not todo:  # nothing to play: no engine started, no net loaded
        return MatchResult(
            spec_a.name,
            spec_b.name,
            tally,
            outcomes,
            reasons,
            0.0,
            state["sprt"],
            str(pgn_path) if pgn_path else "",
            resumed=len(done),
        )
    seats = min(game_slots(spec_a, spec_b, config)[0], len(todo))
    shared: dict = {}
    hangs = (config.hang_seconds, shared, config.hang_margin)
    players_a = make_players(spec_a, seats, *hangs)
    players_b = make_players(spec_b, seats, *hangs)
    everyone = players_a + players_b
    broken: set[Player] = set()  # forfeited and killed: started again before their next game
    started = time.perf_counter()
    today = datetime.date.today()
    batching: dict[str, dict[str, float]] = {}

    async def slot(a: Player, b: Player) -> None:
        while not state["stop"] and state["next"] < len(todo):
            index = todo[state["next"]]
            state["next"] += 1
            pair, a_white = index // 2, index % 2 == 0
            white, black = (a, b) if a_white else (b, a)
            opening = _opening(config, opening_of(pair), pair, a_white)
            for player in (a, b):
                if player in broken:
                    await _started(player)
                    broken.discard(player)
            outcome = await play_game(white, black, opening, index, config)
            if outcome.failed:  # killed now: a wedged engine must not eat the next game's CPU
                failed = white if outcome.result == BLACK_WINS else black  # a failure loses
                broken.add(failed)
                await failed.abandon()
            outcomes.append(outcome)
            reasons[outcome.reason] += 1
            tally.add(pair, outcome.white_score() if a_white else 1 - outcome.white_score())
            if pgn_path is not None:
                append_game(pgn_path, to_pgn(outcome, config.event, today))
            if config.sprt is not None and not state["stop"]:  # a decision is final
                state["sprt"] = tally.sprt(config.sprt)
                if state["sprt"].decision is not None:
                    state["stop"] = True
            if on_game is not None:
                on_game(outcome, tally)

    try:
        await _all(_started(p) for p in everyone)
        await _all(slot(a, b) for a, b in zip(players_a, players_b))
    except UserError as exc:  # an engine that cannot start again: the games so far are kept
        if not outcomes:
            raise
        kept = f", in {pgn_path}" if pgn_path else ""
        raise UserError(f"{exc}; the match stopped after {len(outcomes)} games{kept}") from None
    finally:
        with contextlib.suppress(Exception):
            await asyncio.gather(*(p.close() for p in everyone), return_exceptions=True)
        for name, engine in shared.items():
            with contextlib.suppress(Exception):
                engine.close()  # a worker process reports its batching as it stops
            stats = engine.batching()
            if stats is not None:
                batching[name] = stats
    outcomes.sort(key=lambda o: o.index)
    return MatchResult(
        spec_a.name,
        spec_b.name,
        tally,
        outcomes,
        reasons,
        time.perf_counter() - started,
        state["sprt"],
        str(pgn_path) if pgn_path else "",
        batching,
        _engine_output(everyone),
        len(done) if resumed is not None else None,
    )


def _engine_output(players: list[Player]) -> dict[str, dict[str, int]]:
    """Each engine's lines we could not use, by kind, and one log line for each engine that
    wrote more than the first of each kind (the only ones logged as they came)."""
    counts: dict[str, Counter] = {}
    seen: set[int] = set()
    for player in players:
        notes = getattr(player, "notes", None)
        if isinstance(notes, OutputNotes) and id(notes) not in seen and notes.counts:
            seen.add(id(notes))
            counts.setdefault(player.name, Counter()).update(notes.counts)
    for name, count in counts.items():
        if sum(count.values()) > len(count):
            chess.engine.LOGGER.warning("%s", unusable_lines(name, count))
    return {name: dict(count.most_common()) for name, count in counts.items()}


def play_match(
    engine_a: str | EngineSpec,
    engine_b: str | EngineSpec,
    config: MatchConfig | None = None,
    progress: bool = False,
    on_game: OnGame | None = None,
    resumed: Resumed | None = None,
) -> MatchResult:
    """Play a match from Python (the main loop's gating, the ladder, tests); with ``resumed``
    (``resumed_games`` of its PGN), only the games it lacks."""
    spec_a = parse_spec(engine_a) if isinstance(engine_a, str) else engine_a
    spec_b = parse_spec(engine_b) if isinstance(engine_b, str) else engine_b
    config = config or MatchConfig()
    if not progress:
        return asyncio.run(run_match(spec_a, spec_b, config, on_game, resumed))
    from frugalzero.evaluate.progress import MatchProgress
    from frugalzero.runtime.progress import stderr_console

    _, why = game_slots(spec_a, spec_b, config)
    if why:
        stderr_console().print(f"note: {why}")

    with MatchProgress(spec_a.name, spec_b.name, config.games) as bar:

        def both(outcome: GameOutcome, tally: Tally) -> None:
            bar.update(tally)
            if on_game is not None:
                on_game(outcome, tally)

        return asyncio.run(run_match(spec_a, spec_b, config, both, resumed))
