"""Work an engine process does for the pool: label one position, or play a game to its end.

A playout starts from a position with its history (``start_fen`` + ``moves``) and lets the
engine play both sides until the game ends; each engine move is a label (one-hot policy, the
engine's score as a value). The record keeps the history as untrained moves, so positions are
rebuilt with their full history planes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import chess
import chess.engine
import numpy as np

from frugalzero.chess.moves import move_to_index
from frugalzero.chess.rules import game_result
from frugalzero.data.records import GameRecord, PlyTarget, one_hot
from frugalzero.expert.engine import EngineFailed, EngineSession, EngineUnavailable
from frugalzero.expert.uci_client import UciPosition
from frugalzero.values import score_cp, score_text, score_to_value


@dataclass(frozen=True)
class AnalyseTask:
    """Best move and score of one position (its history is sent to the engine)."""

    fen: str
    moves: tuple[str, ...] = ()


@dataclass(frozen=True)
class Label:
    """The engine's answer for one position."""

    move: str
    """Best move, UCI."""
    score: str
    """Score from the side to move's view: centipawns (``35``) or mate (``#3``, ``#-2``);
    empty if the engine printed none."""
    value: float | None
    """``score`` as a value in [-1, 1] (see frugalzero.values)."""


@dataclass(frozen=True)
class PlayoutTask:
    """Play the game on from ``start_fen`` + ``moves`` until it ends."""

    start_fen: str
    moves: tuple[str, ...] = ()
    """History before the playout; stored in the record without targets."""
    method: str = "eps-explore"
    net_id: str = ""
    game_id: str = ""
    max_plies: int = 512
    """Engine moves at most; a playout cut there has no result."""
    extra: dict[str, str] = field(default_factory=dict)
    pgn: bool = False
    """Also write the game's PGN text where it is played (``Played``): spelling every move
    in SAN is most of what writing a game costs, and a worker does it beside its engine
    while the process writing the files would do it for every engine in turn."""


@dataclass(frozen=True)
class Played:
    """A playout's record with its PGN text (``data.pgnwriter.game_text``, round "?")."""

    record: GameRecord
    pgn: str


def record_of(result: GameRecord | Played) -> GameRecord:
    return result.record if isinstance(result, Played) else result


def push_trimmed(board: chess.Board, move: chess.Move) -> chess.Board:
    """Play ``move``; after a capture or pawn move restart the move stack from the new position.

    Nothing before an irreversible move can repeat, and the FEN carries the 50-move counter,
    so the engine sees the same game while the history it is sent stays short.
    """
    zeroing = board.is_zeroing(move)
    board.push(move)
    return board.copy(stack=False) if zeroing else board  # the position alone, no FEN round trip


def replay(fen: str, moves: tuple[str, ...] | list[str]) -> chess.Board:
    """The position after ``moves`` (legality checked), history trimmed as in push_trimmed."""
    board = chess.Board(fen)
    for uci in moves:
        move = chess.Move.from_uci(uci)
        if not board.is_legal(move):
            raise ValueError(f"illegal move {uci} in {board.fen()}")
        board = push_trimmed(board, move)
    return board


def soft_target(
    board: chess.Board, lines: list[tuple[chess.Move, chess.engine.PovScore]], temperature: float
) -> tuple[np.ndarray, np.ndarray]:
    """(indices, probabilities) of a policy target spread over the engine's candidate moves: a
    softmax of their scores (side to move's centipawns, mates as ``values.score_cp`` puts
    them) divided by ``temperature``. The other legal moves get nothing."""
    moves, scores = [], []
    for move, score in lines:
        if move not in moves:
            moves.append(move)
            scores.append(score_cp(score.relative))
    logits = (np.array(scores, dtype=np.float64) - max(scores)) / temperature
    weights = np.exp(logits)
    indices = np.array([move_to_index(m, board.turn) for m in moves], dtype=np.int64)
    return indices, (weights / weights.sum()).astype(np.float32)


def analyse(session: EngineSession, task: AnalyseTask) -> Label:
    board = replay(task.fen, task.moves)
    answer = session.play(board)
    move, score = answer.move, answer.score
    if score is None:
        return Label(move.uci(), "", None)
    relative = score.relative
    return Label(
        move.uci(), score_text(relative), score_to_value(relative, session.config.value_scale)
    )


def playout(session: EngineSession, task: PlayoutTask) -> GameRecord:
    """The record of one playout; an engine that keeps failing ends it early without a result
    (the labels made so far are kept). The engine starts it as a new game, so a playout comes
    out the same whichever engine plays it after whatever else (a killed run replays it)."""
    game = object()
    board = replay(task.start_fen, task.moves)
    position = UciPosition(board)
    scale = session.config.value_scale
    moves: list[str] = list(task.moves)
    targets: list[PlyTarget | None] = [None] * len(moves)
    scores: list[str] = []
    extra = dict(task.extra)
    for _ in range(task.max_plies):
        if game_result(board) is not None:
            break
        try:
            answer = session.play(board, game, position)
        except EngineUnavailable:
            raise  # the worker gives up its slot; the pool decides what happens next
        except EngineFailed as exc:
            extra["end"] = f"engine failed: {exc}"
            break
        move, score, lines = answer.move, answer.score, answer.lines
        if len(lines) > 1:
            indices, probs = soft_target(board, lines, session.config.policy_temperature)
        else:
            indices, probs = one_hot(move_to_index(move, board.turn))
        value = None
        if score is not None:
            value = score_to_value(score.relative, scale)
            scores.append(score_text(score.relative))
        else:
            scores.append("?")
        wdl = answer.wdl if value is not None and sum(answer.wdl or ()) == 1000 else None
        targets.append(PlyTarget(indices, probs, expert_value=value, expert_wdl=wdl))
        uci = move.uci()
        moves.append(uci)
        board = push_trimmed(board, move)
        position.push(uci, board)
    result = game_result(board)
    if result is None and "end" not in extra:
        extra["end"] = f"cut at {task.max_plies} plies"
    extra.update(
        engine=session.name, limit=session.config.describe_limit(), scores=" ".join(scores)
    )
    return GameRecord(
        start_fen=task.start_fen,
        moves=moves,
        targets=targets,
        result=result,
        method=task.method,
        net_id=task.net_id,
        game_id=task.game_id,
        extra=extra,
    )
