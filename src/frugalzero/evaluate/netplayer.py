"""``net:`` engines in matches: every seat of one net shares one evaluator and one search driver.

A seat asks for a move from the match's event loop; the request goes to the engine's worker
thread, which runs ``frugalzero.search.Driver`` over every seat currently waiting, so leaves of
all concurrent games go to the network in shared batches. A request that arrives while the
driver runs stops it at the next batch boundary (the other trees keep their half-done searches)
and joins the next run, so no game waits for another game's whole search. ``nodes=1`` plays
the raw policy: the most probable move, no search. Each seat keeps its tree between moves
(tree reuse) and plays deterministically: no root noise, no temperature. This is the path
of a net with a node limit; a net under a clock is a UCI engine (``frugalzero uci``).

With ``workers`` N > 1 (spec key ``workers``; by default every core but one on CUDA, one on a
CPU) the seats are spread over N worker processes, each running that loop for its seats, and
their leaves meet in one inference process that owns the device (``frugalzero.nn.server``),
as self-play's workers do: on a GPU one Python thread cannot search fast enough to feed it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import multiprocessing as mp
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

import chess
import chess.engine
import numpy as np

from frugalzero.config import from_dict, parse_override
from frugalzero.errors import UserError
from frugalzero.evaluate.engines import Played, Player
from frugalzero.evaluate.specs import EngineSpec, net_file
from frugalzero.search import Driver, NativeTree, SearchConfig, tree_for
from frugalzero.search.config import PLAY_SETTINGS
from frugalzero.values import score_cp, search_score, value_to_cp


def net_configs(spec: EngineSpec, seats: int):
    """(SearchConfig, EvaluatorConfig, workers) from the spec's keys; a typo is a one-line
    error. ``workers`` 0 (absent) means: every core but one on CUDA, one on a CPU, never more
    than the seats, and one for the raw policy (``nodes=1``: no search to spread)."""
    from frugalzero.nn.evaluator import EvaluatorConfig

    search_fields = {f.name for f in dataclasses.fields(SearchConfig)}
    eval_fields = {f.name for f in dataclasses.fields(EvaluatorConfig)}
    search: dict = dict(PLAY_SETTINGS)  # the play profile: the search UCI plays too
    evaluator: dict = {}
    workers = 0
    for key, text in spec.params.items():
        _, value = parse_override(f"{key}={text}")
        if key in search_fields or key in SearchConfig.REMOVED:  # from_dict judges the latter
            search[key] = value
        elif key in eval_fields:
            evaluator[key] = value
        elif key == "workers":
            if not isinstance(value, int) or value < 0:
                raise UserError(f"engine {spec.name!r}: workers must be a whole number >= 0")
            workers = value
        else:
            known = ", ".join(sorted(search_fields | eval_fields | {"nodes", "workers"}))
            raise UserError(f"engine {spec.name!r}: unknown key {key!r} (known: {known})")
    if spec.nodes is not None:
        search["simulations"] = spec.nodes
    where = f"engine {spec.name!r}"
    search_config = from_dict(SearchConfig, search, where)
    evaluator_config = from_dict(EvaluatorConfig, evaluator, where)
    return (
        search_config,
        evaluator_config,
        _workers(workers, seats, search_config, evaluator_config),
    )


def _workers(setting: int, seats: int, search: SearchConfig, evaluator) -> int:
    if search.simulations <= 1:
        return 1
    if not setting:
        from frugalzero.runtime.cores import available_cores
        from frugalzero.runtime.device import resolve_device

        cuda = resolve_device(evaluator.device, "evaluator").type == "cuda"
        setting = available_cores() - 1 if cuda else 1
    return max(1, min(setting, seats))


class SeatTree:
    """One seat's search tree, kept from move to move (tree reuse) until its next game."""

    def __init__(self, config: SearchConfig) -> None:
        self.config = config
        self.tree: NativeTree | None = None

    def tree_for(self, board: chess.Board) -> NativeTree:
        """This game's tree at ``board``, following the moves played since the last search."""
        self.tree = tree_for(self.tree, board, self.config)
        return self.tree


@dataclass
class _Request:
    seat: SeatTree
    board: chess.Board
    respond: Callable[[Played | BaseException], None]
    tree: NativeTree | None = None
    result: Played | None = None

    def on_search_done(self) -> bool:  # the Driver's SearchTask protocol
        searched = self.tree.result()
        score = score_cp(search_score(searched.value, searched.mate_in))
        self.result = Played(searched.best_move, score, searched.depth, searched.simulations)
        return False


def serve(requests: queue.Queue, evaluator, config: SearchConfig, driver: Driver) -> None:
    """Answer the requests of ``requests`` (None ends) with ``driver`` on ``evaluator``: every
    waiting search runs in the same batches; a new request stops the run at the next batch
    boundary and joins the next."""
    active: list[_Request] = []
    while True:
        block, raw = not active, []
        try:
            while True:
                item = requests.get(block=block)
                block = False
                if item is None:
                    return
                (raw if config.simulations <= 1 else active).append(item)
        except queue.Empty:
            pass
        try:
            if raw:
                _raw_policy(raw, evaluator)
            for r in active:
                if r.tree is None:
                    r.tree = r.seat.tree_for(r.board)
                    r.tree.start(config.simulations)
            if active:
                driver.run(active, stop=lambda: not requests.empty())
        except BaseException as exc:  # a bug: fail the waiting games loudly
            for r in active + raw:
                r.respond(exc)
            active = []
            continue
        still = []
        for r in active:
            if r.result is None:
                still.append(r)
            else:
                r.respond(r.result)
        active = still


def _raw_policy(requests: list[_Request], evaluator) -> None:
    """``nodes=1``: the most probable move of each position, all in one batch."""
    from frugalzero.chess.history import net_input_from_board

    inputs = [net_input_from_board(r.board) for r in requests]
    for r, inp, ev in zip(requests, inputs, evaluator.evaluate(inputs)):
        move = inp.moves[int(np.argmax(ev.priors))]
        r.result = Played(move, value_to_cp(float(ev.value)), 0, 1)
        r.respond(r.result)


class NetEngine:
    """One network with its evaluator, serving every seat of a match."""

    def __init__(self, spec: EngineSpec) -> None:
        self.spec = spec
        self._seats: list[NetSeat] = []
        self._requests: queue.Queue[_Request | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.evaluator = None
        self.search_config = None
        self.workers = 1
        self._pool: _WorkerPool | None = None
        self.driver: Driver | None = None  # the one-process search driver, once serving

    def seats(self, count: int) -> list[NetSeat]:
        self.search_config, self._eval_config, self.workers = net_configs(self.spec, count)
        self._seats = [NetSeat(self, i) for i in range(count)]
        return self._seats

    def start(self) -> None:
        with self._lock:
            if self.evaluator is not None or self._pool is not None:
                return
            from frugalzero.nn.checkpoint import load_net

            net, _ = load_net(net_file(self.spec))
            if self.workers > 1:
                self._pool = _WorkerPool(net, self.search_config, self._eval_config, self.workers)
                return
            from frugalzero.nn.evaluator import Evaluator

            self.evaluator = Evaluator(net, self._eval_config)
            self.driver = Driver(self.evaluator)
            args = (self._requests, self.evaluator, self.search_config, self.driver)
            self._thread = threading.Thread(target=serve, args=args, name="net-engine", daemon=True)
            self._thread.start()

    def request(self, seat: NetSeat, board: chess.Board, respond) -> None:
        if self._pool is not None:
            self._pool.request(seat.index, seat.game, board, respond)
        else:
            self._requests.put(_Request(seat.trees, board, respond))

    def batching(self) -> dict[str, float] | None:
        """How well the games shared batches: batches, leaves and their ratio (None before
        any batch)."""
        if self._pool is not None:
            batches, leaves = self._pool.batches, self._pool.leaves
        elif self.driver is not None:
            batches, leaves = self.driver.batches, self.driver.leaves
        else:
            return None
        if not batches:
            return None
        stats = {"batches": batches, "leaves": leaves, "mean_batch": round(leaves / batches, 2)}
        if self._pool is not None:
            stats["workers"] = self.workers
        return stats

    def close(self) -> None:
        if self._thread is not None:
            self._requests.put(None)
            self._thread.join(timeout=10)
            self._thread = None
        if self.evaluator is not None:
            self.evaluator.close()
            self.evaluator = None
        if self._pool is not None:
            self._pool.close()


class _WorkerPool:
    """The seats' searches in worker processes on one shared inference process. Seat i lives
    in worker i mod N; a request goes down that worker's pipe with the board (pickled with
    its move stack, which tree reuse follows), and a reader thread per worker hands each
    answer to its caller."""

    def __init__(self, net, search: SearchConfig, evaluator, workers: int) -> None:
        from frugalzero.nn.server import InferenceServer
        from frugalzero.runtime.cores import available_cores

        threads = evaluator.threads or max(1, available_cores() - workers)
        self.server = InferenceServer(net, evaluator, threads, clients=workers)
        ctx = mp.get_context("spawn")
        self._ids = itertools.count()
        self._pending: list[dict[int, Callable]] = [{} for _ in range(workers)]
        self._conns, self._procs, self._readers = [], [], []
        self.batches = self.leaves = 0
        for i, client in enumerate(self.server.clients):
            ours, theirs = ctx.Pipe()
            proc = ctx.Process(
                target=_worker,
                args=(client, search, evaluator, theirs),
                name=f"frugalzero-net-{i}",
                daemon=True,
            )
            proc.start()
            theirs.close()
            reader = threading.Thread(target=self._read, args=(ours, i), daemon=True)
            reader.start()
            self._conns.append(ours)
            self._procs.append(proc)
            self._readers.append(reader)

    def request(self, seat: int, game: int, board: chess.Board, respond) -> None:
        ident, worker = next(self._ids), seat % len(self._conns)
        self._pending[worker][ident] = respond
        self._conns[worker].send((ident, seat, game, board))

    def _read(self, conn, worker: int) -> None:
        pending = self._pending[worker]
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):  # its games fail (and are lost); the others go on
                failure = RuntimeError(f"net worker {worker} died")
                for respond in list(pending.values()):
                    respond(failure)
                pending.clear()
                return
            if message[0] == "stats":
                self.batches += message[1]
                self.leaves += message[2]
                return
            ident, answer = message
            respond = pending.pop(ident)
            respond(RuntimeError(answer) if isinstance(answer, str) else answer)

    def close(self) -> None:
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.send(None)
        for reader in self._readers:
            reader.join(timeout=10)
        for proc in self._procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
                proc.join()
        self.server.close()


def _worker(client, search: SearchConfig, evaluator_config, conn) -> None:
    """A worker process: serves its seats' requests from ``conn`` on the shared inference
    process; sends its batching counts when told to stop."""
    from frugalzero.nn.evaluator import Evaluator

    requests: queue.Queue[_Request | None] = queue.Queue()
    seats: dict[int, tuple[int, SeatTree]] = {}

    def respond(ident: int):
        def send(answer) -> None:
            conn.send((ident, repr(answer) if isinstance(answer, BaseException) else answer))

        return send

    def read() -> None:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                message = None
            if message is None:
                requests.put(None)
                return
            ident, seat, game, board = message
            known = seats.get(seat)
            if known is None or known[0] != game:  # the seat's next game: a fresh tree
                known = seats[seat] = (game, SeatTree(search))
            requests.put(_Request(known[1], board, respond(ident)))

    with Evaluator.connect(client, evaluator_config) as evaluator:
        driver = Driver(evaluator)
        threading.Thread(target=read, daemon=True).start()
        serve(requests, evaluator, search, driver)
        conn.send(("stats", driver.batches, driver.leaves))


def _set_result(future: asyncio.Future, value) -> None:
    if not future.done():
        future.set_result(value)


def _set_exception(future: asyncio.Future, exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


class NetSeat(Player):
    """One game seat of a net engine; its tree is kept from move to move (in this process,
    or in the worker that serves the seat)."""

    def __init__(self, engine: NetEngine, index: int = 0) -> None:
        super().__init__(engine.spec)
        self.engine = engine
        self.index = index
        self.game = 0
        self.trees = SeatTree(engine.search_config)

    async def start(self) -> None:
        await asyncio.to_thread(self.engine.start)

    async def new_game(self, seed: int) -> None:
        self.game += 1
        self.trees = SeatTree(self.engine.search_config)

    async def play(self, board: chess.Board, clock: chess.engine.Limit | None = None) -> Played:
        loop = asyncio.get_running_loop()
        future = loop.create_future()

        def respond(answer: Played | BaseException) -> None:
            done = _set_exception if isinstance(answer, BaseException) else _set_result
            loop.call_soon_threadsafe(done, future, answer)

        self.engine.request(self, board.copy(), respond)
        return await future

    async def close(self) -> None:
        pass
