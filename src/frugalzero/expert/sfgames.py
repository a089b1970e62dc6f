"""Stockfish-vs-Stockfish games (as in the CS230 reproduction): supervised data from the expert.

Each game starts from an opening-book line or a few random plies (variety: Stockfish at a fixed
node count is nearly deterministic) and is played out by the pool; every engine move is a label.
Games are written as shards (training) and as PGN with the engine's evaluations (people).
"""

from __future__ import annotations

import datetime
import io
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import chess
import chess.engine
import chess.pgn

from frugalzero.chess.positions import Opening, OpeningSampler
from frugalzero.chess.rules import game_result
from frugalzero.config import check
from frugalzero.data.records import GameRecord
from frugalzero.expert.engine import EngineConfig
from frugalzero.expert.playout import PlayoutTask
from frugalzero.values import parse_score_text


@dataclass
class SfGamesConfig:
    """Where Stockfish's games start and how long they may be."""

    openings: str = ""
    """Opening book (EPD or PGN); empty = ``random_plies`` random moves from the start."""
    random_plies: int = 8
    """Uniformly random moves that open each game when there is no book (0 = none)."""
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
            (self.max_plies >= 1, "max_plies must be at least 1"),
            (self.pgn_games_per_file >= 1, "pgn_games_per_file must be at least 1"),
        ]
        check(self, "sfgames", checks)


def random_opening(rng: random.Random, plies: int) -> Opening:
    """``plies`` uniformly random legal moves from the start, redrawn if the game ends."""
    while True:
        board = chess.Board()
        for _ in range(plies):
            board.push(rng.choice(list(board.legal_moves)))
            if game_result(board) is not None:
                break
        else:
            moves = tuple(m.uci() for m in board.move_stack)
            return Opening(chess.STARTING_FEN, moves, name=f"random {plies} plies")


def game_tasks(
    config: SfGamesConfig, games: int, openings: list[Opening] | None = None
) -> Iterator[PlayoutTask]:
    sampler = OpeningSampler(openings, config.seed) if openings else None
    rng = random.Random(config.seed)
    for number in range(games):
        opening = sampler.next() if sampler else random_opening(rng, config.random_plies)
        extra = {"opening": opening.name} if opening.name else {}
        yield PlayoutTask(
            opening.root_fen,
            opening.moves,
            method="sfgames",
            game_id=f"s{number}",
            max_plies=config.max_plies,
            extra=extra,
        )


def record_to_pgn(record: GameRecord, round_: int | str = "?") -> chess.pgn.Game:
    """A record as a PGN game; engine moves carry their evaluation (``[%eval ...]``)."""
    game = chess.pgn.Game()
    board = chess.Board(record.start_fen)
    if record.start_fen != chess.STARTING_FEN:
        game.setup(board)
    engine = record.extra.get("engine", "Stockfish")
    limit = record.extra.get("limit", "")
    game.headers["Event"] = "frugalzero sfgames"
    game.headers["Site"] = "frugalzero"
    game.headers["Date"] = datetime.date.today().strftime("%Y.%m.%d")
    game.headers["Round"] = str(round_)
    game.headers["White"] = game.headers["Black"] = f"{engine} {limit}".strip()
    result = {1: "1-0", 0: "1/2-1/2", -1: "0-1"}.get(
        None if record.result is None else int(record.result), "*"
    )
    game.headers["Result"] = result
    if "opening" in record.extra:
        game.headers["Opening"] = record.extra["opening"]
    if "end" in record.extra:
        game.headers["Termination"] = record.extra["end"]
    scores = iter(record.extra.get("scores", "").split())
    node: chess.pgn.GameNode = game
    for uci, target in zip(record.moves, record.targets):
        turn = node.board().turn
        node = node.add_variation(chess.Move.from_uci(uci))
        if target is not None:
            text = next(scores, "?")
            if text != "?":
                node.set_eval(chess.engine.PovScore(parse_score_text(text), turn))
        else:
            node.comment = "opening"
    return game


class PgnWriter:
    """PGN files ``PREFIX-NNNNNN.pgn`` of ``per_file`` games each, every file written whole
    (temp + rename) and never over an existing one."""

    def __init__(self, out_dir: str | Path, prefix: str, per_file: int = 1000) -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.prefix = prefix
        self.per_file = per_file
        self.paths: list[Path] = []
        self._games: list[str] = []
        self._seq = 0
        self._round = 0

    def add(self, record: GameRecord) -> None:
        self._round += 1
        text = io.StringIO()
        print(record_to_pgn(record, self._round), file=text, end="\n\n")
        self._games.append(text.getvalue())
        if len(self._games) >= self.per_file:
            self.flush()

    def flush(self) -> None:
        from frugalzero.runtime.files import atomic_write_text

        if not self._games:
            return
        while (path := self.out_dir / f"{self.prefix}-{self._seq:06d}.pgn").exists():
            self._seq += 1
        atomic_write_text(path, "".join(self._games))
        self._seq += 1
        self._games = []
        self.paths.append(path)

    def close(self) -> list[Path]:
        self.flush()
        return list(self.paths)
