"""Expert labels: a crash-proof Stockfish pool, ε-Explore playouts, Stockfish's own games.

``StockfishPool(EngineConfig(nodes=1000), size=4)`` runs engines in worker processes;
``pool.analyse(boards)`` returns a ``Label`` (best move, score, value) per position and
``pool.submit(PlayoutTask(...))`` plays a game out and returns its ``GameRecord``.
``frugalzero.expert.explore`` walks the network through games and labels its positions;
``frugalzero.expert.sfgames`` makes Stockfish-vs-Stockfish games.
"""

from frugalzero.expert.engine import EngineConfig, EngineFailed
from frugalzero.expert.playout import AnalyseTask, Label, PlayoutTask, game_result
from frugalzero.expert.pool import LabelError, StockfishPool
from frugalzero.expert.values import VALUE_SCALE, cp_to_value, score_to_value

__all__ = [
    "VALUE_SCALE",
    "AnalyseTask",
    "EngineConfig",
    "EngineFailed",
    "Label",
    "LabelError",
    "PlayoutTask",
    "StockfishPool",
    "cp_to_value",
    "game_result",
    "score_to_value",
]
