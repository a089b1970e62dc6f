"""ε-Explore (Felizarta, 2019): the network walks, Stockfish labels.

The current ("traversing") network plays ``games`` games side by side, one batched evaluation
per step. In every position its policy is flattened by a temperature and mixed with Dirichlet
noise, and the move with the highest resulting probability is played (argmax, no sampling).
Every new position is queued for a *playout*: Stockfish plays the game on from there to its
end, and each of its moves becomes a label. The network and the engines work at the same
time; a bounded queue between them keeps memory flat whatever the number of steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from frugalzero import _native
from frugalzero.chess.native import native_history, raw_to_move
from frugalzero.chess.positions import STANDARD, Opening, OpeningSampler
from frugalzero.config import check
from frugalzero.data.records import GameRecord
from frugalzero.expert.engine import EngineConfig
from frugalzero.expert.playout import Played, PlayoutTask, record_of
from frugalzero.expert.pool import LabelError, StockfishPool
from frugalzero.search.native import rows_for


@dataclass
class ExploreConfig:
    """ε-Explore settings; the defaults are the issue's (AlphaZero's noise, τ = 5)."""

    noise_alpha: float = 0.3
    """Dirichlet concentration of the exploration noise."""
    noise_epsilon: float = 0.25
    """Weight of the noise in the mixed policy (0 = the network's greedy move)."""
    temperature: float = 5.0
    """Policy temperature applied before the noise is mixed in (higher = flatter, so the
    noise decides more often)."""
    games: int = 8
    """Exploration games walked side by side (the network's batch size)."""
    max_game_plies: int = 400
    """An exploration game this long starts over (its positions were all queued)."""
    playout_max_plies: int = 512
    """Engine moves per playout at most; a playout cut there has no result."""
    queue: int = 0
    """Playouts queued or running at most (bounds memory); 0 = 4 per engine + games."""
    workers: int = 0
    """Stockfish processes; 0 = one per CPU core."""
    openings: str = ""
    """Opening book (EPD or PGN) the exploration games start from; empty = standard start."""
    seed: int = 0
    """Seed of the noise and the opening order."""
    device: str = "auto"
    """Where the network runs: 'auto' (CUDA when present), 'cpu', 'cuda' or 'cuda:N'."""
    net_threads: int = 1
    """PyTorch threads of the network on CPU: exploration needs little, the engines need the
    cores."""
    engine: EngineConfig = field(default_factory=EngineConfig)
    """The labelling engines."""

    def __post_init__(self) -> None:
        checks = [
            (self.noise_alpha > 0, "noise_alpha must be > 0"),
            (0 <= self.noise_epsilon <= 1, "noise_epsilon must be in [0, 1]"),
            (self.temperature > 0, f"temperature must be > 0, not {self.temperature}"),
            (
                min(self.games, self.max_game_plies, self.playout_max_plies) >= 1,
                "games, max_game_plies and playout_max_plies must be >= 1",
            ),
        ]
        check(self, "explore", checks)


def explore_choice(
    priors: np.ndarray,
    rng: np.random.Generator,
    alpha: float = 0.3,
    epsilon: float = 0.25,
    temperature: float = 5.0,
) -> int:
    """Index of the move ε-Explore plays: argmax of (1-ε)·p^(1/τ)/Σ + ε·Dirichlet(α).

    The temperature comes first: an argmax does not change under p^(1/τ) applied afterwards,
    so only this order lets τ matter. τ > 1 flattens the policy and lets the noise overturn
    the network's favourite more often; ε = 0 plays the favourite.
    """
    n = len(priors)
    if n == 1:
        return 0
    logits = np.log(np.maximum(np.asarray(priors, dtype=np.float64), 1e-30)) / temperature
    p = np.exp(logits - logits.max())
    p /= p.sum()
    if epsilon > 0:
        p = (1 - epsilon) * p + epsilon * rng.dirichlet(np.full(n, alpha))
    return int(np.argmax(p))


@dataclass
class _Game:
    number: int
    start_fen: str
    history: _native.History  # the game's positions in the native core
    moves: list[str]


class Explorer:
    """The traversing network's games. ``step()`` plays one move in each and returns the new
    positions as playout tasks; finished games start over."""

    def __init__(
        self,
        evaluator,
        config: ExploreConfig,
        openings: list[Opening] | None = None,
        net_id: str = "",
    ) -> None:
        self.evaluator = evaluator
        self.config = config
        self.net_id = net_id
        self.rng = np.random.default_rng(config.seed)
        self.sampler = OpeningSampler(openings, config.seed) if openings else None
        self.steps = 0
        self.games_started = 0
        self.games_finished = 0
        self.positions: list[tuple[str, tuple[str, ...]]] = []  # queued since last take
        self._games = [self._new_game() for _ in range(config.games)]
        self._rows = rows_for(evaluator)  # the games' positions to the network as packed rows
        self._batch = _native.LeafBatch()

    def _new_game(self) -> _Game:
        opening = self.sampler.next() if self.sampler else STANDARD
        self.games_started += 1
        history = native_history(opening.history())
        return _Game(self.games_started, opening.root_fen, history, list(opening.moves))

    def step(self, limit: int | None = None) -> list[PlayoutTask]:
        """One move in (at most ``limit`` of) the games; the new positions to label."""
        cfg = self.config
        games = self._games[: limit or len(self._games)]
        batch = self._batch
        batch.clear()
        _native.history_rows([g.history for g in games], batch)  # inputs, legal moves: C++
        priors = self._rows.priors(self._rows.submit(batch), batch)
        tasks = []
        for slot, (game, p) in enumerate(zip(games, priors)):
            choice = explore_choice(
                p, self.rng, cfg.noise_alpha, cfg.noise_epsilon, cfg.temperature
            )
            raw = int(batch.row_moves(slot)[choice])
            game.history.push(raw)
            game.moves.append(raw_to_move(raw).uci())
            self.steps += 1
            current = game.history.current
            over = current.status(game.history.repetitions)[0] is not None
            if not over:
                tasks.append(
                    PlayoutTask(
                        game.start_fen,
                        tuple(game.moves),
                        method="eps-explore",
                        net_id=self.net_id,
                        game_id=f"x{game.number}-{len(game.moves)}",
                        max_plies=cfg.playout_max_plies,
                    )
                )
            if over or len(game.moves) >= cfg.max_game_plies:
                self.games_finished += 1
                self._games[slot] = self._new_game()
        return tasks

    def tasks(self, steps: int) -> Iterator[PlayoutTask]:
        """Playout tasks of the next ``steps`` exploration moves, explored as they are drawn."""
        target = self.steps + steps
        while self.steps < target:
            yield from self.step(target - self.steps)


@dataclass
class LabelStats:
    """What a labelling run produced."""

    playouts: int = 0
    labels: int = 0
    unfinished: int = 0
    failed: int = 0
    white: int = 0
    draws: int = 0
    black: int = 0

    def add(self, record: GameRecord) -> None:
        self.playouts += 1
        self.labels += record.positions
        if record.result is None:
            self.unfinished += 1
        elif record.result > 0:
            self.white += 1
        elif record.result < 0:
            self.black += 1
        else:
            self.draws += 1


def label_playouts(
    pool: StockfishPool,
    tasks: Iterator[PlayoutTask] | list[PlayoutTask],
    sink: Callable[[GameRecord], None] | Callable[[Played], None],
    queue: int = 0,
    on_record: Callable[[LabelStats], None] | None = None,
    on_failed: Callable[[PlayoutTask], None] | None = None,
) -> LabelStats:
    """Run playouts with at most ``queue`` in flight; every record (a ``Played`` for tasks
    that asked for PGN) goes to ``sink``, every task given up (after the pool's retries) to
    ``on_failed``."""
    stats = LabelStats()
    for task, future in pool.map_unordered(tasks, queue):
        try:
            result = future.result()
        except LabelError:
            stats.failed += 1  # counted; the pool has already retried it
            if on_failed is not None:
                on_failed(task)
            continue
        sink(result)
        stats.add(record_of(result))
        if on_record is not None:
            on_record(stats)
    return stats


class EpsExplore:
    """A network, its explorer and a Stockfish pool, kept between iterations of a training
    loop: ``run(steps, sink)`` labels the next ``steps`` positions, ``update_weights`` swaps
    in a newer network without losing the games in progress."""

    def __init__(
        self,
        net,
        config: ExploreConfig,
        net_id: str = "",
        pool: StockfishPool | None = None,
        openings: list[Opening] | None = None,
    ) -> None:
        from frugalzero.nn.evaluator import Evaluator, EvaluatorConfig

        self.config = config
        self._own_pool = pool is None
        self.pool = pool or StockfishPool(config.engine, config.workers)
        try:
            self.evaluator = Evaluator(
                net,
                EvaluatorConfig(device=config.device, threads=config.net_threads, compile="off"),
            )
        except BaseException:
            if self._own_pool:
                self.pool.close()
            raise
        self.explorer = Explorer(self.evaluator, config, openings, net_id)

    def queue_size(self) -> int:
        return self.config.queue or 4 * self.pool.size + self.config.games

    def run(
        self,
        steps: int,
        sink: Callable[[GameRecord], None],
        on_record: Callable[[LabelStats], None] | None = None,
    ) -> LabelStats:
        return label_playouts(
            self.pool, self.explorer.tasks(steps), sink, self.queue_size(), on_record
        )

    def update_weights(self, net, net_id: str = "") -> None:
        self.evaluator.update_weights(net)
        self.explorer.net_id = net_id

    def close(self) -> None:
        self.evaluator.close()
        if self._own_pool:
            self.pool.close()

    def __enter__(self) -> EpsExplore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def summary(stats: LabelStats, elapsed: float, pool_stats: dict[str, int]) -> dict:
    """The numbers a person (or --json) wants after a labelling run."""
    return {
        "playouts": stats.playouts,
        "labels": stats.labels,
        "labels_per_s": round(stats.labels / max(elapsed, 1e-9), 1),
        "playouts_per_s": round(stats.playouts / max(elapsed, 1e-9), 2),
        "mean_playout_plies": round(stats.labels / max(stats.playouts, 1), 1),
        "wdl": [stats.white, stats.draws, stats.black],
        "unfinished": stats.unfinished,
        "failed": stats.failed,
        "engine_restarts": pool_stats.get("restarts", 0),
        "engine_timeouts": pool_stats.get("timeouts", 0),
        "engine_crashes": pool_stats.get("crashes", 0),
        "worker_deaths": pool_stats.get("worker_deaths", 0),
        "elapsed_s": round(elapsed, 2),
    }
