"""Expert labels: a crash-proof Stockfish pool, ε-Explore playouts, Stockfish's own games.

``StockfishPool(EngineConfig(nodes=1000), size=4)`` runs engines in worker processes;
``pool.analyse(boards)`` returns a ``Label`` (best move, score, value) per position and
``pool.submit(PlayoutTask(...))`` plays a game out and returns its ``GameRecord``.
``frugalzero.expert.explore`` walks the network through games and labels its positions;
``frugalzero.expert.sfgames`` makes Stockfish-vs-Stockfish games.
"""

from frugalzero.expert.engine import EngineConfig, EngineFailed
from frugalzero.expert.playout import AnalyseTask, Label, PlayoutTask
from frugalzero.expert.pool import LabelError, StockfishPool

__all__ = [
    "AnalyseTask",
    "EngineConfig",
    "EngineFailed",
    "Label",
    "LabelError",
    "PlayoutTask",
    "StockfishPool",
]
