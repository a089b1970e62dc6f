"""Self-play-like games without a search, for tests and the data benchmark.

A 64-simulation search visits 10-25 of a position's moves, a few of them often and most once
or twice. Here each position visits 10-25 of its legal moves (all when it has fewer): one visit
each, the rest drawn from a Dirichlet over power-law weights (rank r gets weight r^-1.2), 64 in
all; the move played is drawn from the visits for the first 30 plies and is the most visited
one after (AlphaZero's temperature schedule), and games end by the rules or are adjudicated
between plies 60 and 200. Root values drift towards the final result. Records built this
way have the shape of real self-play records; their size depends mostly on how many moves are
visited and how the counts spread, which is what the generator imitates.

``every_kind_games`` adds games with every kind of target a shard stores, for tests.
"""

from __future__ import annotations

import chess
import numpy as np

from frugalzero.chess.moves import move_to_index, moves_to_indices
from frugalzero.chess.rules import game_end, game_result
from frugalzero.data.records import GameRecord, PlyTarget, one_hot


def selfplay_like_game(
    rng: np.random.Generator,
    simulations: int = 64,
    game_id: str = "",
    start_fen: str = chess.STARTING_FEN,
    plies: tuple[int, int] = (60, 201),
) -> GameRecord:
    """One synthetic self-play game (see the module docstring)."""
    board = chess.Board(start_fen)
    moves: list[str] = []
    targets: list[PlyTarget | None] = []
    max_plies = int(rng.integers(*plies))
    drift = float(rng.uniform(-0.3, 0.3))
    while len(moves) < max_plies and game_end(board) is None:
        legal = list(board.legal_moves)
        k = min(len(legal), int(rng.integers(10, 26)))
        chosen = rng.choice(len(legal), size=k, replace=False)
        weights = rng.dirichlet(np.arange(1, k + 1, dtype=np.float64) ** -1.2 * 4 + 0.05)
        counts = 1 + rng.multinomial(max(simulations - k, 0), weights)  # each visited once
        if len(moves) < 30:
            pick = rng.choice(len(chosen), p=counts / counts.sum())
        else:
            pick = int(np.argmax(counts))
        move = legal[int(chosen[pick])]
        indices = moves_to_indices([legal[int(i)] for i in chosen], board.turn)
        probs = (counts / counts.sum()).astype(np.float32)
        progress = len(moves) / max_plies
        value = float(np.clip(drift * progress + rng.normal(0, 0.15), -1, 1))
        if board.turn == chess.BLACK:
            value = -value
        targets.append(PlyTarget(indices, probs, search_value=value))
        moves.append(move.uci())
        board.push(move)
    result = game_result(board)
    if result is None:
        result = float(np.sign(drift)) if abs(drift) > 0.1 else 0.0
    return GameRecord(
        start_fen=start_fen,
        moves=moves,
        targets=targets,
        result=result,
        method="selfplay",
        net_id="0123456789abcdef",
        game_id=game_id,
    )


def selfplay_like_games(count: int, seed: int = 0, simulations: int = 64) -> list[GameRecord]:
    rng = np.random.default_rng(seed)
    return [selfplay_like_game(rng, simulations, game_id=f"s{seed}-g{i}") for i in range(count)]


def every_kind_games() -> list[GameRecord]:
    """Every kind of target: visit counts, one-hot on the played move and on another move,
    raw probabilities, history-only plies, expert values and WDL, a FEN start, no result."""
    games = selfplay_like_games(3, seed=5)
    fen = "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 3 40"
    e1c1 = move_to_index(chess.Move.from_uci("e1c1"), chess.WHITE)
    a8b8 = move_to_index(chess.Move.from_uci("a8b8"), chess.BLACK)
    targets = [
        None,
        PlyTarget(*one_hot(e1c1), expert_value=0.25, expert_wdl=(412, 500, 88)),
        PlyTarget(np.array([a8b8, 5]), np.array([0.2137, 0.7863], np.float32), -0.5, 1 / 3),
    ]
    twice = (np.array([3, 4, 4, 60]) / 71).astype(np.float32)  # counts normalised twice
    games[0].targets[5] = PlyTarget(
        games[0].targets[5].policy_indices[:4].copy(), twice / twice.sum(dtype=np.float32)
    )
    extra = {"k": "v"}
    games.append(
        GameRecord(fen, ["e8g8", "e1c1", "a8b8"], targets, None, "eps-explore", "", "x", extra)
    )
    e2e4 = move_to_index(chess.Move.from_uci("e2e4"), chess.WHITE)
    d2d4 = move_to_index(chess.Move.from_uci("d2d4"), chess.WHITE)
    targets = [PlyTarget(*one_hot(e2e4)), None, PlyTarget(*one_hot(d2d4))]
    games.append(GameRecord(chess.STARTING_FEN, ["e2e4", "e7e5", "g1f3"], targets, 0, "pgn"))
    return games
