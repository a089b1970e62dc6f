"""The native chess core held to python-chess, position by position.

One checker serves the tests (tests/test_native_chess.py) and the large verification run
(``frugalzero bench movegen --verify N``): for each position it compares the native core with
python-chess and frugalzero.chess in everything the search uses (legal moves in order, policy
indices, frame, meta, FEN, check, insufficient material, en passant, ``leaf_status`` for every
repetition/fifty-move setting that can change its answer, the key's equality semantics against
``position_key``), and along a game the incrementally played position against one built from
scratch and the native History against ``GameHistory``. The first difference raises
``Mismatch`` naming the position.

Positions come from real games (PGN), random playouts to the end of the game (steered into
repetitions now and then) and ``tricky_board``: random positions built around pins, checks,
en passant (skewers included), promotion races and castling.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

import chess
import chess.pgn

from frugalzero import _native
from frugalzero.chess.encoding import board_frame, board_meta
from frugalzero.chess.history import GameHistory, pad_frames, position_key
from frugalzero.chess.moves import moves_to_indices
from frugalzero.chess.native import move_to_raw, native_position, raw_to_moves
from frugalzero.chess.rules import leaf_status


class Mismatch(AssertionError):
    """The native core and python-chess disagree."""


def _same(what: str, board: chess.Board, native: object, expected: object) -> None:
    if native != expected:
        raise Mismatch(f"{what} differ at {board.fen()}: native {native!r}, python {expected!r}")


class Checker:
    """Compares positions and games; counts what it has seen (``stats``)."""

    def __init__(self, children_every: int = 1, ledger_limit: int = 200_000) -> None:
        self.children_every = children_every  # every n-th position: play each move both ways
        self.ledger_limit = ledger_limit
        self.positions = 0
        self.children = 0
        self.seen: Counter[str] = Counter()
        self._by_key: dict[tuple, int] = {}
        self._by_native: dict[int, tuple] = {}

    def stats(self) -> dict:
        return {"positions": self.positions, "children": self.children, **dict(self.seen)}

    def position(
        self, board: chess.Board, repetitions: int = 0, native: _native.Position | None = None
    ) -> _native.Position:
        """Compare ``board`` (python-chess's rules) with ``native`` (a position the core reached
        by playing moves) or, without one, with the core's position built from the board."""
        scratch = native_position(board)
        if native is None:
            native = scratch
        fen = board.fen()
        _same("FEN", board, native.fen(), fen)
        _same("FEN from the fields", board, scratch.fen(), fen)
        _same("incremental and fresh keys", board, native.key, scratch.key)
        self._ledger(board, native.key)

        moves = list(board.generate_legal_moves())
        _same("legal moves", board, raw_to_moves(native.legal_moves()), moves)
        _same("move count", board, native.count_legal(), len(moves))
        indices = moves_to_indices(moves, board.turn).tolist()
        _same("policy indices", board, native.policy_indices().tolist(), indices)
        for raw, index in zip(native.legal_moves().tolist(), indices):
            if _native.policy_index(raw, board.turn) != index:
                raise Mismatch(f"policy_index of {raw} differs at {fen}")
        _same("frames", board, native.frame(repetitions), board_frame(board, repetitions))
        _same("meta", board, native.meta(), board_meta(board))
        check = board.is_check()
        _same("in_check", board, native.in_check(), check)
        material = board.is_insufficient_material()
        _same("insufficient material", board, native.insufficient_material(), material)
        ep = board.has_legal_en_passant()
        _same("legal en passant", board, native.has_legal_en_passant(), ep)
        self._statuses(board, native, repetitions)
        if board.ep_square is not None:
            self._ep_key(board, native.key, ep)

        self.positions += 1
        seen = self.seen
        seen["in_check"] += check
        seen["double_check"] += check and len(board.checkers()) > 1
        seen["legal_en_passant"] += ep
        seen["insufficient_material"] += material
        seen["castling_available"] += any(board.is_castling(m) for m in moves)
        seen["promotion_available"] += any(m.promotion for m in moves)
        seen["max_legal_moves"] = max(seen["max_legal_moves"], len(moves))
        if self.children_every and self.positions % self.children_every == 0:
            self._children(board, native, moves)
        return native

    def game(self, root: chess.Board, moves: Iterable[chess.Move]) -> int:
        """Walk a game from ``root``: every position compared, the core playing the moves
        itself, its History against GameHistory. Returns the positions checked."""
        history = GameHistory(root)
        native = self.position(history.board, 0)
        native_history = _native.History(native)
        count = 1
        for move in moves:
            raw = move_to_raw(move)
            native = native.after(raw)
            native_history.push(raw)
            history.push(move)
            native = self.position(history.board, history.repetitions, native)
            board = history.board
            _same("History frames", board, native_history.frames(), pad_frames(history.frames()))
            _same("repetitions", board, native_history.repetitions, history.repetitions)
            _same("History key", board, native_history.current.key, native.key)
            count_expected = history.count(position_key(board))
            _same("History count", board, native_history.count(native.key), count_expected)
            count += 1
        return count

    def _statuses(self, board: chess.Board, native: _native.Position, repetitions: int) -> None:
        """leaf_status for both draw_repetitions and both fifty-move settings (python-chess is
        asked again only where the setting can change its answer)."""
        first = None
        for draw_repetitions in (3, 2):
            for fifty in (True, False):
                differs = (draw_repetitions == 2 and repetitions == 1) or (
                    not fifty and board.halfmove_clock >= 100
                )
                if first is None or differs:
                    ending, value, moves = leaf_status(board, repetitions, draw_repetitions, fifty)
                    expected = (ending, value, moves)
                    if first is None:
                        first = expected
                        self.seen[f"ending: {ending}"] += 1
                else:
                    expected = first
                ending, value, raws = native.status(repetitions, draw_repetitions, fifty)
                got = (ending, value, raw_to_moves(raws))
                _same(
                    f"leaf_status({repetitions}, {draw_repetitions}, {fifty})", board, got, expected
                )

    def _children(self, board: chess.Board, native: _native.Position, moves) -> None:
        """Each legal move played by both: same FEN, incremental key = fresh key."""
        for move in moves:
            child = native.after(move_to_raw(move))
            board.push(move)
            try:
                _same(f"FEN after {move.uci()}", board, child.fen(), board.fen())
                _same(f"key after {move.uci()}", board, child.key, native_position(board).key)
            finally:
                board.pop()
            self.children += 1

    def _ledger(self, board: chess.Board, key: int) -> None:
        """Equal native keys exactly for equal position_keys (within the ledger's window)."""
        identity = position_key(board)
        if len(self._by_key) >= self.ledger_limit:
            self._by_key.clear()
            self._by_native.clear()
        known = self._by_key.setdefault(identity, key)
        if known != key:
            raise Mismatch(f"one position_key, two native keys at {board.fen()}")
        other = self._by_native.setdefault(key, identity)
        if other != identity:
            raise Mismatch(f"one native key for two position_keys at {board.fen()}")

    def _ep_key(self, board: chess.Board, key: int, legal: bool) -> None:
        """The en-passant square counts in the key exactly when a capture is legal."""
        without = board.copy(stack=False)
        without.ep_square = None
        if without.is_valid():
            plain = native_position(without).key
            if (plain == key) == legal:
                raise Mismatch(f"en passant in the key when legal={legal} at {board.fen()}")


def pgn_games(paths: Iterable[str | Path]) -> Iterator[tuple[chess.Board, list[chess.Move]]]:
    """(root, main line) of every readable game of standard chess in the PGN files."""
    for path in paths:
        with open(path, encoding="utf-8-sig", errors="replace") as handle:
            while (game := chess.pgn.read_game(handle)) is not None:
                board = game.board()
                if game.errors or board.chess960 or board.uci_variant != "chess":
                    continue
                if not board.is_valid():
                    continue
                yield board, list(game.mainline_moves())


def random_playout(rng: random.Random, max_plies: int = 400) -> tuple[chess.Board, list]:
    """A random game from the start until no legal move is left (mate, stalemate) or
    ``max_plies``, played on past draws so positions beyond them are checked too. In half the
    games a side now and then takes its last move back, so repetitions come up often."""
    board = chess.Board()
    moves: list[chess.Move] = []
    undo = rng.random() < 0.5
    while len(moves) < max_plies:
        legal = list(board.generate_legal_moves())
        if not legal:
            break
        move = rng.choice(legal)
        if undo and len(moves) >= 2 and rng.random() < 0.3:
            back = chess.Move(moves[-2].to_square, moves[-2].from_square)
            if back in legal:
                move = back
        board.push(move)
        moves.append(move)
    return chess.Board(), moves


_STEPS = [(1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1)]


def _walk(square: int, step: tuple[int, int], distance: int) -> int | None:
    rank, file = chess.square_rank(square) + step[0] * distance, chess.square_file(square)
    file += step[1] * distance
    return rank * 8 + file if 0 <= rank < 8 and 0 <= file < 8 else None


def tricky_board(rng: random.Random) -> chess.Board | None:
    """A random position built around one theme (a pin, a check or double check, en passant
    with a possible skewer, a promotion race, castling under fire), White to move or, mirrored,
    Black; None when the draw does not give a position python-chess finds valid."""
    theme = rng.choice(["pin", "check", "en passant", "promotion", "castling", "open"])
    board = chess.Board(None)
    empty = lambda square: board.piece_at(square) is None  # noqa: E731
    if theme == "castling":
        board.set_piece_at(chess.E1, chess.Piece(chess.KING, chess.WHITE))
        board.set_piece_at(chess.E8, chess.Piece(chess.KING, chess.BLACK))
        for square in (chess.A1, chess.H1, chess.A8, chess.H8):
            if rng.random() < 0.8:
                colour = chess.WHITE if square < 8 else chess.BLACK
                board.set_piece_at(square, chess.Piece(chess.ROOK, colour))
    else:
        board.set_piece_at(rng.randrange(64), chess.Piece(chess.KING, chess.WHITE))
        board.set_piece_at(rng.randrange(64), chess.Piece(chess.KING, chess.BLACK))
    king = board.king(chess.WHITE)
    if king is None or board.king(chess.BLACK) is None:
        return None
    ep_square = None
    if theme == "pin":  # a white piece between its king and a black slider
        step = rng.choice(_STEPS)
        near, far = _walk(king, step, rng.randint(1, 3)), _walk(king, step, rng.randint(4, 7))
        if near is None or far is None or not (empty(near) and empty(far)):
            return None
        board.set_piece_at(near, chess.Piece(rng.randint(1, 5), chess.WHITE))
        diagonal = step[0] and step[1]
        slider = rng.choice([chess.QUEEN, chess.BISHOP if diagonal else chess.ROOK])
        board.set_piece_at(far, chess.Piece(slider, chess.BLACK))
    elif theme == "check":  # one or two black pieces giving check
        for _ in range(rng.choice([1, 1, 2])):
            piece = chess.Piece(rng.randint(1, 5), chess.BLACK)
            for square in rng.sample(range(8, 56) if piece.piece_type == 1 else range(64), 20):
                if empty(square):
                    board.set_piece_at(square, piece)
                    if board.is_attacked_by(chess.BLACK, king):
                        break
                    board.remove_piece_at(square)
    elif theme == "en passant":  # Black just pushed a pawn two squares beside a white pawn
        file = rng.randrange(8)
        pushed, ep_square, origin = 32 + file, 40 + file, 48 + file
        if not all(empty(s) for s in (pushed, ep_square, origin)):
            return None
        board.set_piece_at(pushed, chess.Piece(chess.PAWN, chess.BLACK))
        for side in (-1, 1):
            if 0 <= file + side < 8 and empty(pushed + side) and rng.random() < 0.7:
                board.set_piece_at(pushed + side, chess.Piece(chess.PAWN, chess.WHITE))
        if rng.random() < 0.5:  # a rook or queen on the fifth rank: the skewer
            square = 32 + rng.randrange(8)
            if empty(square):
                board.set_piece_at(square, chess.Piece(rng.choice([4, 5]), chess.BLACK))
    elif theme == "promotion":  # pawns one step from promoting on both sides
        for colour, rank in ((chess.WHITE, 6), (chess.BLACK, 1)):
            for _ in range(rng.randint(1, 3)):
                square = rank * 8 + rng.randrange(8)
                if empty(square):
                    board.set_piece_at(square, chess.Piece(chess.PAWN, colour))
        for _ in range(rng.randint(0, 3)):  # something to capture on the last ranks
            square = rng.choice([56, 0]) + rng.randrange(8)
            if empty(square):
                colour = chess.BLACK if square >= 56 else chess.WHITE
                board.set_piece_at(square, chess.Piece(rng.randint(2, 5), colour))
    for _ in range(rng.randint(0, 10)):  # the rest of the board
        square = rng.randrange(64)
        piece_type = rng.choice([1, 1, 1, 2, 3, 4, 5])
        if empty(square) and not (
            piece_type == 1 and square in chess.SquareSet(chess.BB_BACKRANKS)
        ):
            board.set_piece_at(square, chess.Piece(piece_type, rng.choice(chess.COLORS)))
    board.turn = chess.WHITE
    board.ep_square = ep_square
    board.castling_rights = chess.BB_CORNERS if rng.random() < 0.9 else 0
    board.castling_rights = board.clean_castling_rights()  # every right the pieces allow
    board.halfmove_clock = 0 if ep_square is not None else rng.choice([0, 3, 60, 99, 100, 120])
    board.fullmove_number = rng.randint(1, 150)
    if rng.random() < 0.5:
        board = board.mirror()
    return board if board.is_valid() else None
