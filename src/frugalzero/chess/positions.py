"""Where games start: the standard position, opening books (EPD or PGN), odds chess."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.pgn

from frugalzero import _native
from frugalzero.chess.history import GameHistory
from frugalzero.errors import UserError

# piece removed from the side giving odds (White's square; Black's is mirrored)
ODDS_SQUARES = {"knight": chess.B1, "rook": chess.A1, "queen": chess.D1}


@dataclass(frozen=True)
class Opening:
    """A start: a root position and the moves played from it (they become history planes)."""

    root_fen: str
    moves: tuple[str, ...] = ()
    name: str = ""

    def history(self) -> GameHistory:
        history = GameHistory(chess.Board(self.root_fen))
        for uci in self.moves:
            history.push(chess.Move.from_uci(uci))
        return history

    def board(self) -> chess.Board:
        board = chess.Board(self.root_fen)
        for uci in self.moves:
            board.push_uci(uci)
        return board


STANDARD = Opening(chess.STARTING_FEN, name="startpos")


def odds_board(piece: str, giver: chess.Color = chess.WHITE) -> chess.Board:
    """The start position with ``giver``'s queen-side knight, queen-side rook or queen removed."""
    if piece not in ODDS_SQUARES:
        raise UserError(f"--odds must be one of {', '.join(ODDS_SQUARES)}, not {piece!r}")
    board = chess.Board()
    square = (
        ODDS_SQUARES[piece] if giver == chess.WHITE else chess.square_mirror(ODDS_SQUARES[piece])
    )
    board.remove_piece_at(square)
    board.castling_rights = board.clean_castling_rights()
    return board


def odds_opening(piece: str, giver: chess.Color = chess.WHITE) -> Opening:
    side = "white" if giver == chess.WHITE else "black"
    return Opening(odds_board(piece, giver).fen(), name=f"{piece} odds ({side} gives)")


def load_book(path: str | Path, limit: int | None = None) -> list[Opening]:
    """Openings from an EPD file (one position a line) or a PGN file (each game's main line).
    A file that is not text is one line naming it, whatever its name says."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: opening book not found")
    with path.open("rb") as handle:
        if b"\0" in handle.read(1 << 16):  # no text holds a NUL; PGN may be Latin-1
            raise UserError(f"{path}: not an opening book (EPD or PGN text: it holds binary data)")
    if path.suffix.lower() == ".pgn":
        return _load_pgn_book(path, limit)
    return _load_epd_book(path, limit)


def _load_epd_book(path: Path, limit: int | None) -> list[Opening]:
    try:
        return _read_epd_book(path, limit)
    except UnicodeDecodeError:
        raise UserError(f"{path}: not an opening book (EPD or PGN text: it is not UTF-8)") from None


def canonical_fen(fen: str) -> str:
    """``chess.Board(fen).fen()``: python-chess's reading of a FEN (ValueError if it has
    none). A FEN the native core reads and writes back unchanged is already that (the core
    is stricter, and writes what python-chess writes), and checking costs 1 µs against
    python-chess's ~100: a book of 40,000 lines loads in 0.16 s instead of 4."""
    try:
        if _native.Position.from_fen(fen).fen() == fen:
            return fen
    except ValueError:
        pass  # python-chess decides, and words the error
    return chess.Board(fen).fen()


def _read_epd_book(path: Path, limit: int | None) -> list[Opening]:
    openings = []
    with path.open(encoding="utf-8-sig") as handle:
        for lineno, line in enumerate(handle, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            try:
                fields = line.split()
                if len(fields) >= 6 and fields[4].isdigit() and fields[5].isdigit():
                    fen = canonical_fen(" ".join(fields[:6]))  # a full FEN, counters included
                else:
                    fen = chess.Board.from_epd(line)[0].fen()
            except ValueError as exc:
                raise UserError(f"{path}:{lineno}: bad EPD ({exc})") from None
            openings.append(Opening(fen, name=f"{path.name}:{lineno}"))
            if limit and len(openings) >= limit:
                break
    if not openings:
        raise UserError(f"{path}: no positions in opening book")
    return openings


def _load_pgn_book(path: Path, limit: int | None) -> list[Opening]:
    openings = []
    with path.open(encoding="utf-8-sig", errors="replace") as handle:
        number = 0
        while True:
            try:
                game = chess.pgn.read_game(handle)
            except Exception as exc:  # python-chess trips on some garbage (IndexError)
                raise UserError(f"{path}: game {number + 1}: unreadable PGN ({exc!r})") from None
            if game is None:
                break
            number += 1
            if game.errors:
                continue  # a broken book line is not worth stopping for
            moves = tuple(m.uci() for m in game.mainline_moves())
            openings.append(Opening(game.board().fen(), moves, name=f"{path.name}#{number}"))
            if limit and len(openings) >= limit:
                break
    if not openings:
        raise UserError(f"{path}: no games in opening book")
    return openings


class OpeningSampler:
    """Hands out openings in a shuffled order that repeats only after the whole book is used."""

    def __init__(self, openings: list[Opening], seed: int = 0) -> None:
        if not openings:
            raise ValueError("no openings")
        self._openings = list(openings)
        self._rng = random.Random(seed)
        self._order: list[int] = []

    def next(self) -> Opening:
        if not self._order:
            self._order = list(range(len(self._openings)))
            self._rng.shuffle(self._order)
        return self._openings[self._order.pop()]


def random_boards(count: int, seed: int = 0, max_plies: int = 80) -> list[chess.Board]:
    """Positions (with their move stacks) from uniformly random play; for tests and benchmarks.

    Games that end early are replaced, so every board has at least one legal move.
    """
    rng = random.Random(seed)
    boards: list[chess.Board] = []
    while len(boards) < count:
        board = chess.Board()
        for _ in range(rng.randint(0, max_plies)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        if not board.is_game_over(claim_draw=False):
            boards.append(board)
    return boards
