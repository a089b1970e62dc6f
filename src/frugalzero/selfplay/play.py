"""Self-play runs: many games at once per process, their leaves sharing evaluator batches.

A worker keeps ``concurrent`` games going: whenever a game's search is done it plays the move
and starts the next search; a finished game is replaced by the next start, so batches stay
full until the last games. Several workers (processes) play disjoint slices of the run's games
where the machine has cores for them, their leaves meeting in one inference process that owns
the device; every finished game comes back to the main process, which writes the shards, so
output and progress are in one place.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from frugalzero.data.records import GameRecord
from frugalzero.runtime.cores import available_cores
from frugalzero.search import Driver, Evaluates
from frugalzero.selfplay.config import SelfPlayConfig
from frugalzero.selfplay.game import GameStart, SelfPlayGame, game_starts

if TYPE_CHECKING:
    from frugalzero.nn.evaluator import EvaluatorConfig
    from frugalzero.nn.server import ServerClient

SEARCHES = "searches"
"""A game record's ``extra`` key: the simulations of the search of each of its moves, comma-
separated (0 for the book's moves; one more, where a search ended the game by resignation):
what lets a budget counted in evaluations end inside a game (``pipeline.spend``)."""


class _Slot:
    """One of a worker's concurrent games; takes the next start when its game ends."""

    def __init__(
        self,
        starts: Iterator[GameStart],
        first: GameStart,
        config: SelfPlayConfig,
        net_id: str,
        done: Callable[[GameRecord], None],
        stats: dict[str, int],
    ) -> None:
        self._starts = starts
        self._config = config
        self._net_id = net_id
        self._done = done
        self._stats = stats
        self.retired = False
        self._begin(first)

    def _begin(self, start: GameStart) -> None:
        self.game = SelfPlayGame(start, self._config, self._net_id)
        self._sims = 0
        # each move's search's simulations (0 for the book's moves), in order; one more where
        # the game ended by resignation after a search
        self._searches: list[int] = [0] * len(self.game.moves)
        self.tree = self.game.tree

    def on_search_done(self) -> bool:
        game = self.game
        if not game.over:
            self._stats["moves"] += 1
            self._stats["sims"] += self.tree.started
            self._sims += self.tree.started
            self._searches.append(self.tree.started)
            if game.step():
                return True
        record = game.record()
        # the game's own count of the network evaluations its searches asked for (one a
        # simulation, cache hits included): a sum over the games that does not depend on which
        # session played them, for budgets counted in evaluations (``pipeline.generate``)
        record.extra["simulations"] = str(self._sims)
        record.extra[SEARCHES] = ",".join(map(str, self._searches))
        self._done(record)
        self.tree.close()
        start = next(self._starts, None)
        if start is None:
            self.retired = True
            return False
        self._begin(start)
        return True


@dataclass
class SelfPlayRun:
    """What a worker loop produced (the records go to the ``on_game`` callback)."""

    games: int = 0
    moves: int = 0
    simulations: int = 0
    seconds: float = 0.0
    leaves: int = 0
    batches: int = 0
    workers: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class SelfPlayLoop:
    """A worker's games in progress; ``run(stop)`` plays until the starts run out or ``stop()``
    (the games keep their state, so a later ``run`` resumes them: benchmarks time it in
    rounds)."""

    def __init__(
        self,
        evaluator: Evaluates,
        starts: Iterable[GameStart],
        config: SelfPlayConfig,
        on_game: Callable[[GameRecord], None],
        net_id: str = "",
    ) -> None:
        self.stats = {"moves": 0, "sims": 0}
        self.games = 0
        self._on_game = on_game
        iterator = iter(starts)
        self.slots: list[_Slot] = []
        for _ in range(config.concurrent):
            first = next(iterator, None)
            if first is None:
                break
            self.slots.append(_Slot(iterator, first, config, net_id, self._finished, self.stats))
        self.driver = Driver(evaluator, config.groups)
        self._active = list(self.slots)

    def _finished(self, record: GameRecord) -> None:
        self.games += 1
        self._on_game(record)

    def run(self, stop: Callable[[], bool] | None = None) -> None:
        self.driver.run(self._active, stop)
        self._active = [s for s in self._active if not s.retired]

    def progress(self) -> float:
        """Moves played, counting each unfinished search as its share of a move."""
        part = 0.0
        for slot in self._active:
            tree = slot.tree
            if tree.target and math.isfinite(tree.target):
                part += min(tree.started / tree.target, 1.0)
        return self.stats["moves"] + part


def play_games(
    evaluator: Evaluates,
    starts: Iterable[GameStart],
    config: SelfPlayConfig,
    on_game: Callable[[GameRecord], None],
    net_id: str = "",
    stop: Callable[[], bool] | None = None,
) -> SelfPlayRun:
    """Play every start with ``config.concurrent`` games at once on one evaluator."""
    started = time.perf_counter()
    loop = SelfPlayLoop(evaluator, starts, config, on_game, net_id)
    loop.run(stop)
    return SelfPlayRun(
        games=loop.games,
        moves=loop.stats["moves"],
        simulations=loop.stats["sims"],
        seconds=time.perf_counter() - started,
        leaves=loop.driver.leaves,
        batches=loop.driver.batches,
    )


def selected_starts(config: SelfPlayConfig, numbers: Sequence[int] | None) -> list[GameStart]:
    """The run's game starts, or those numbered ``numbers`` (each start is a function of the
    seed and its number, so a subset is the same games as in the whole run)."""
    starts = game_starts(config)
    return starts if numbers is None else [starts[i] for i in numbers]


def worker_count(config: SelfPlayConfig) -> int:
    """Workers to use: as configured, else every core but one when the network runs on CUDA
    (the search is then the bottleneck) and one per two cores on a CPU (the network needs the
    other half); never more than there are games."""
    from frugalzero.runtime.device import resolve_device

    workers = config.workers
    if not workers:
        cuda = resolve_device(config.evaluator.device, "evaluator").type == "cuda"
        workers = available_cores() - 1 if cuda else available_cores() // 2
    return max(1, min(workers, config.games))


def one_worker_evaluator(config: EvaluatorConfig) -> EvaluatorConfig:
    """The evaluator settings of a lone self-play worker: its network gets every core where
    ``threads`` is left at 0. The evaluator's default keeps a core for its caller, but the
    caller here is the native search, 2.6-3.2 us of CPU a simulation (``bench selfplay``'s
    ``search_cpu_us_per_simulation``), about 1% of a core at self-play's rate: on the 2-core
    machine that core sat idle, and two threads ran self-play 1.82x as fast at ``bench
    selfplay --arch small``'s defaults (64 simulations, batches of 128) and 1.63x at 200
    (`medium` 1.65x, `tiny` 1.17x; benchmarks/results/native/selfplay-threads-20261130.json).
    Several workers keep the evaluator's rule, unmeasured here."""
    if config.threads:
        return config
    return replace(config, threads=available_cores())


def _worker(
    index: int,
    client: ServerClient,
    config: SelfPlayConfig,
    starts: list[GameStart],
    queue,
    net_id: str,
) -> None:
    """A worker process: its slice of the games on the shared inference process; records go to
    ``queue``."""
    from frugalzero.nn.evaluator import Evaluator

    try:
        with Evaluator.connect(client, config.evaluator) as evaluator:
            run = play_games(evaluator, starts, config, lambda r: queue.put(("game", r)), net_id)
        queue.put(("done", run))
    except BaseException as exc:  # reported to the main process, which raises it
        queue.put(("error", f"worker {index}: {exc!r}"))


def run_selfplay(
    net_path: str | Path,
    config: SelfPlayConfig,
    on_game: Callable[[GameRecord], None],
    progress: Callable[[int], None] | None = None,
    numbers: Sequence[int] | None = None,
) -> SelfPlayRun:
    """Play ``config.games`` games with the network at ``net_path`` (only the games numbered
    ``numbers`` of them, when given: a resumed generation plays the missing ones); every
    finished game goes to ``on_game`` in the calling process (in finishing order)."""
    from frugalzero.nn.checkpoint import load_net
    from frugalzero.nn.evaluator import Evaluator
    from frugalzero.nn.server import InferenceServer

    starts = selected_starts(config, numbers)
    workers = min(worker_count(config), max(1, len(starts)))
    net, meta = load_net(net_path)  # a bad file is reported here, before any worker starts
    done = 0

    def each(record: GameRecord) -> None:
        nonlocal done
        done += 1
        on_game(record)
        if progress is not None:
            progress(done)

    if workers == 1:
        with Evaluator(net, one_worker_evaluator(config.evaluator)) as evaluator:
            run = play_games(evaluator, starts, config, each, meta.net_id)
        run.workers = 1
        return run

    threads = config.evaluator.threads or max(1, available_cores() - workers)
    server = InferenceServer(net, config.evaluator, threads, clients=workers)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [
        ctx.Process(
            target=_worker,
            args=(i, client, config, list(starts[i::workers]), queue, meta.net_id),
            name=f"frugalzero-selfplay-{i}",
            daemon=False,
        )
        for i, client in enumerate(server.clients)
    ]
    total = SelfPlayRun(workers=workers)
    finished_workers = 0
    try:
        for proc in procs:
            proc.start()
        while finished_workers < workers:
            kind, payload = queue.get()
            if kind == "game":
                each(payload)
            elif kind == "done":
                finished_workers += 1
                total.moves += payload.moves
                total.simulations += payload.simulations
                total.leaves += payload.leaves
                total.batches += payload.batches
                total.seconds = max(total.seconds, payload.seconds)
            else:
                raise RuntimeError(payload)
        total.extra["server"] = server.owner.stats()
    finally:
        for proc in procs:
            proc.join(timeout=1 if finished_workers < workers else 30)
            if proc.is_alive():
                proc.terminate()
                proc.join()
        server.close()
    total.games = done
    return total
