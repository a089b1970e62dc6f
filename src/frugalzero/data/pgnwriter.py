"""Game records as PGN, for people and for counting: every generator's games (Stockfish's with
its evaluations, self-play's with the search settings in the players' names) in files written
whole."""

from __future__ import annotations

import datetime
import io
from pathlib import Path

import chess
import chess.engine
import chess.pgn

from frugalzero.data.records import GameRecord
from frugalzero.results import result_code
from frugalzero.values import parse_score_text


def record_to_pgn(record: GameRecord, round_: int | str = "?", player: str = "") -> chess.pgn.Game:
    """A record as a PGN game. Both sides are ``player`` (default: the record's engine and
    limit, or its net); moves with a Stockfish score carry it (``[%eval ...]``), moves without a
    target the comment ``opening``."""
    game = chess.pgn.Game()
    board = chess.Board(record.start_fen)
    if record.start_fen != chess.STARTING_FEN:
        game.setup(board)
    if not player:
        if record.net_id:
            player = f"frugalzero net {record.net_id}"
        else:
            engine = record.extra.get("engine", "Stockfish")
            player = f"{engine} {record.extra.get('limit', '')}".strip()
    game.headers["Event"] = f"frugalzero {record.method}"
    game.headers["Site"] = "frugalzero"
    game.headers["Date"] = datetime.date.today().strftime("%Y.%m.%d")
    game.headers["Round"] = str(round_)
    game.headers["White"] = game.headers["Black"] = player
    game.headers["Result"] = result_code(record.result)
    if record.extra.get("opening"):
        game.headers["Opening"] = record.extra["opening"]
    termination = record.extra.get("end") or record.extra.get("termination")
    if termination:
        game.headers["Termination"] = termination
    if record.game_id:
        game.headers["GameId"] = record.game_id
    scores = iter(record.extra.get("scores", "").split())
    node: chess.pgn.GameNode = game
    turn = board.turn  # kept by hand: a node's board() replays the game from its start
    for uci, target in zip(record.moves, record.targets, strict=True):
        node = node.add_variation(chess.Move.from_uci(uci))
        if target is None:
            node.comment = "opening"
        elif (text := next(scores, "?")) != "?":
            node.set_eval(chess.engine.PovScore(parse_score_text(text), turn))
        turn = not turn
    return game


UNNUMBERED = '[Round "?"]'
"""The Round tag of a game whose number its writer gives it."""


def game_text(record: GameRecord, round_: int | str = "?", player: str = "") -> str:
    """A record's game as PGN text, as a file holds it (a blank line after it)."""
    text = io.StringIO()
    print(record_to_pgn(record, round_, player), file=text, end="\n\n")
    return text.getvalue()


class PgnWriter:
    """PGN files ``PREFIX-NNNNNN.pgn`` of ``per_file`` games each, every file written whole
    (temp + rename) and never over an existing one."""

    def __init__(
        self, out_dir: str | Path, prefix: str, per_file: int = 1000, player: str = ""
    ) -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.prefix = prefix
        self.per_file = per_file
        self.player = player
        self.paths: list[Path] = []
        self._games: list[str] = []
        self._seq = 0
        self._round = 0

    def add(self, record: GameRecord) -> None:
        self._round += 1
        self._append(game_text(record, self._round, self.player))

    def add_text(self, text: str) -> None:
        """Add a game written elsewhere by ``game_text`` with round "?" (a worker process):
        it gets its round here, as ``add`` would have given it."""
        self._round += 1
        self._append(text.replace(UNNUMBERED, f'[Round "{self._round}"]', 1))

    def _append(self, text: str) -> None:
        self._games.append(text)
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
