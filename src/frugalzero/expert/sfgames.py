"""Stockfish-vs-Stockfish games (as in the CS230 reproduction): supervised data from the expert.

Each game starts from an opening-book line or a few random plies (variety: Stockfish at a fixed
node count is nearly deterministic) and is played out by the pool; every engine move is a label.
Games are written as shards (training) and as PGN with the engine's evaluations (people,
``frugalzero.data.pgnwriter``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

import chess

from frugalzero.chess.positions import Opening, OpeningSampler
from frugalzero.chess.rules import game_result
from frugalzero.config import check
from frugalzero.expert.engine import EngineConfig
from frugalzero.expert.playout import Played, PlayoutTask

if TYPE_CHECKING:
    from frugalzero.expert.explore import LabelStats

Game = TypeVar("Game")


@dataclass
class SfGamesConfig:
    """Where Stockfish's games start and how long they may be."""

    openings: str = ""
    """Opening book (EPD or PGN); empty = ``random_plies`` random moves from the start."""
    random_plies: int = 8
    """Uniformly random moves that open each game when there is no book (0 = none)."""
    book_random_plies: int = 0
    """Uniformly random moves played after each book line (0 = none): many distinct games from
    a book of a few thousand lines."""
    max_plies: int = 512
    """Engine moves per game at most; a game cut there has no result."""
    workers: int = 0
    """Stockfish processes; 0 = one per CPU core."""
    queue: int = 0
    """Games queued or running at most; 0 = 4 per engine."""
    seed: int = 0
    """Seed of the random plies and the opening order."""
    pgn_games_per_file: int = 1000
    """Games per PGN file (each file is written whole, atomically)."""
    engine: EngineConfig = field(default_factory=EngineConfig)
    """The engines (one limit for both sides)."""

    def __post_init__(self) -> None:
        checks = [
            (self.random_plies >= 0, "random_plies must be >= 0"),
            (self.book_random_plies >= 0, "book_random_plies must be >= 0"),
            (self.max_plies >= 1, "max_plies must be at least 1"),
            (self.pgn_games_per_file >= 1, "pgn_games_per_file must be at least 1"),
        ]
        check(self, "sfgames", checks)


def random_opening(rng: random.Random, plies: int) -> Opening:
    """``plies`` uniformly random legal moves from the start, redrawn if the game ends."""
    return with_random_moves(rng, Opening(chess.STARTING_FEN), plies, f"random {plies} plies")


def with_random_moves(rng: random.Random, opening: Opening, plies: int, name: str) -> Opening:
    """``opening`` and ``plies`` uniformly random legal moves after it, redrawn if the game ends
    (after 100 draws that all end it, the opening as it is)."""
    start = opening.board()
    for _ in range(100):
        board = start.copy()
        for _ in range(plies):
            board.push(rng.choice(list(board.legal_moves)))
            if game_result(board) is not None:
                break
        else:
            moves = tuple(m.uci() for m in board.move_stack)
            return Opening(opening.root_fen, moves, name=name)
    return opening


def game_tasks(
    config: SfGamesConfig,
    games: int,
    openings: list[Opening] | None = None,
    prefix: str = "s",
    pgn: bool = False,
) -> Iterator[PlayoutTask]:
    """The tasks of games 0 .. ``games`` - 1, each with the id ``game_id(prefix, number)``
    (and, with ``pgn``, asking for the game's PGN text with its record).
    Game ``number``'s opening depends only on the seed and the number, and each playout starts
    its engine afresh (``playout``), so a game can be replayed alone and comes out the same."""
    sampler = OpeningSampler(openings, config.seed) if openings else None
    rng = random.Random(config.seed)
    for number in range(games):
        if sampler is None:
            opening = random_opening(rng, config.random_plies)
        else:
            opening = sampler.next()
            if config.book_random_plies:
                plies = config.book_random_plies
                name = f"{opening.name} +{plies} random".strip()
                opening = with_random_moves(rng, opening, plies, name)
        extra = {"opening": opening.name} if opening.name else {}
        yield PlayoutTask(
            opening.root_fen,
            opening.moves,
            method="sfgames",
            game_id=game_id(prefix, number),
            max_plies=config.max_plies,
            extra=extra,
            pgn=pgn,
        )


def game_id(prefix: str, number: int) -> str:
    return f"{prefix}{number}"


def game_number(prefix: str, game_id: str) -> int | None:
    """The number in ``game_id`` when it is one of ``prefix``'s games, else None."""
    rest = game_id[len(prefix) :] if game_id.startswith(prefix) else ""
    return int(rest) if rest.isdigit() else None


class InOrder(Generic[Game]):
    """Hands ``sink`` the games numbered ``numbers`` in that order, whatever order the engines
    finish them in. Each game is a function of the seed and its number, so written this way
    the same games are the same shards (byte for byte but for the time in their headers) on
    any machine, with any number of engines: data made again from its seed need not travel.
    A game given up (``skip``) is passed over. With ``every`` > 0, ``boundary`` is called
    after each ``every``-th number (the pipeline closes a shard there, so a run cut and
    resumed has the shards of one never cut)."""

    def __init__(
        self,
        sink: Callable[[Game], None],
        numbers: list[int],
        boundary: Callable[[], None] | None = None,
        every: int = 0,
    ) -> None:
        self.sink = sink
        self.numbers = numbers
        self.boundary = boundary
        self.every = every
        self.position = 0
        self.waiting: dict[int, Game | None] = {}

    def add(self, number: int, record: Game | None) -> None:
        self.waiting[number] = record
        while self.position < len(self.numbers) and self.numbers[self.position] in self.waiting:
            number = self.numbers[self.position]
            game = self.waiting.pop(number)
            self.position += 1
            if game is not None:
                self.sink(game)
            if self.boundary is not None and self.every and (number + 1) % self.every == 0:
                self.boundary()

    def skip(self, number: int) -> None:
        self.add(number, None)

    def drain(self) -> int:
        """Hands over, in number order, the games still waiting behind one that never came
        (a run stopped early keeps every game it finished); returns how many."""
        games = [self.waiting[n] for n in sorted(self.waiting)]
        self.waiting.clear()
        for game in games:
            if game is not None:
                self.sink(game)
        return sum(game is not None for game in games)


@dataclass
class GamesWritten:
    """What ``write_games`` made."""

    stats: LabelStats
    shards: list[Path]
    pgn: list[Path]


def write_games(
    pool,
    config: SfGamesConfig,
    games: int,
    out: Path,
    prefix: str,
    openings: list[Opening] | None = None,
    on_record: Callable[[LabelStats], None] | None = None,
) -> GamesWritten:
    """Games 0 .. ``games`` - 1 of ``config``, played by ``pool`` (this machine's engines or
    Ray's), into ``out`` as shards ``PREFIX-NNNNNN.fzs`` and PGN files, in number order
    (``InOrder``); the engines' worker processes write each game's PGN text beside its play
    (``PlayoutTask.pgn``), so this process only numbers it. ``frugalzero sfgames`` and its
    benchmark both write through here, so the benchmark's rate is the command's. Stopped early
    (Ctrl+C), it writes the games finished."""
    from frugalzero.data.pgnwriter import PgnWriter
    from frugalzero.data.shards import ShardWriter
    from frugalzero.expert.explore import label_playouts

    shards = ShardWriter(out, prefix)
    pgn = PgnWriter(out, prefix, config.pgn_games_per_file)

    def sink(game: Played) -> None:
        shards.add(game.record)
        pgn.add_text(game.pgn)

    order: InOrder[Played] = InOrder(sink, list(range(games)))
    try:
        stats = label_playouts(
            pool,
            game_tasks(config, games, openings, "s", pgn=True),
            lambda game: order.add(game_number("s", game.record.game_id), game),
            config.queue,
            on_record,
            lambda task: order.skip(game_number("s", task.game_id)),
        )
    finally:
        order.drain()
        shard_paths, pgn_paths = shards.close(), pgn.close()
    return GamesWritten(stats, shard_paths, pgn_paths)
