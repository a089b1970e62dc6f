"""``net:`` engines in matches: every seat of one net shares one evaluator and one search driver.

A seat asks for a move from the match's event loop; the request goes to the engine's worker
thread, which runs ``frugalzero.search.Driver`` over every seat currently waiting, so leaves of
all concurrent games go to the network in shared batches. A request that arrives while the
driver runs stops it at the next batch boundary (the other trees keep their half-done searches)
and joins the next run, so no game waits for another game's whole search. ``nodes=1`` plays
the raw policy: the most probable move, no search. Each seat keeps its tree between moves
(tree reuse) and plays deterministically: no root noise, no temperature. This is the path
of a net with a node limit; a net under a clock is a UCI engine (``frugalzero uci``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import queue
import threading
from dataclasses import dataclass

import chess
import chess.engine
import numpy as np

from frugalzero.config import from_dict, parse_override
from frugalzero.errors import UserError
from frugalzero.evaluate.engines import Played, Player
from frugalzero.evaluate.specs import EngineSpec, net_file
from frugalzero.search import Driver, SearchConfig, SearchTree
from frugalzero.search.config import PLAY_SETTINGS
from frugalzero.values import score_cp, search_score, value_to_cp


def net_configs(spec: EngineSpec, seats: int):
    """(SearchConfig, EvaluatorConfig) from the spec's keys; a typo is a one-line error."""
    from frugalzero.nn.evaluator import EvaluatorConfig

    search_fields = {f.name for f in dataclasses.fields(SearchConfig)}
    eval_fields = {f.name for f in dataclasses.fields(EvaluatorConfig)}
    search: dict = dict(PLAY_SETTINGS)  # a match wants the engine's best play
    search["leaves_per_gather"] = max(1, 16 // max(1, seats))  # fill batches when games are few
    evaluator: dict = {}
    for key, text in spec.params.items():
        _, value = parse_override(f"{key}={text}")
        if key in search_fields:
            search[key] = value
        elif key in eval_fields:
            evaluator[key] = value
        else:
            known = ", ".join(sorted(search_fields | eval_fields | {"nodes"}))
            raise UserError(f"engine {spec.name!r}: unknown key {key!r} (known: {known})")
    if spec.nodes is not None:
        search["simulations"] = spec.nodes
    where = f"engine {spec.name!r}"
    return from_dict(SearchConfig, search, where), from_dict(EvaluatorConfig, evaluator, where)


@dataclass
class _Request:
    seat: NetSeat
    board: chess.Board
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future
    tree: SearchTree | None = None
    result: Played | None = None

    def on_search_done(self) -> bool:  # the Driver's SearchTask protocol
        searched = self.tree.result()
        score = score_cp(search_score(searched.value, searched.mate_in))
        self.result = Played(searched.best_move, score, searched.depth, searched.simulations)
        return False


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
        self.driver = None  # the search Driver, once serving (its batches/leaves say how well
        # the games shared batches)

    def seats(self, count: int) -> list[NetSeat]:
        self.search_config, self._eval_config = net_configs(self.spec, count)
        self._seats = [NetSeat(self) for _ in range(count)]
        return self._seats

    def start(self) -> None:
        with self._lock:
            if self.evaluator is not None:
                return
            from frugalzero.nn.checkpoint import load_net
            from frugalzero.nn.evaluator import Evaluator

            net, _ = load_net(net_file(self.spec))
            self.evaluator = Evaluator(net, self._eval_config)
            self._thread = threading.Thread(target=self._serve, name="net-engine", daemon=True)
            self._thread.start()

    def request(self, req: _Request) -> None:
        self._requests.put(req)

    def _serve(self) -> None:
        self.driver = driver = Driver(self.evaluator)
        active: list[_Request] = []
        while True:
            block, raw = not active, []
            try:
                while True:
                    item = self._requests.get(block=block)
                    block = False
                    if item is None:
                        return
                    (raw if self.search_config.simulations <= 1 else active).append(item)
            except queue.Empty:
                pass
            try:
                if raw:
                    self._raw_policy(raw)
                for r in active:
                    if r.tree is None:
                        r.tree = r.seat.tree_for(r.board)
                        r.tree.start(self.search_config.simulations)
                if active:
                    driver.run(active, stop=lambda: not self._requests.empty())
            except BaseException as exc:  # a bug: fail the waiting games loudly
                for r in active + raw:
                    r.loop.call_soon_threadsafe(_set_exception, r.future, exc)
                active = []
                continue
            still = []
            for r in active:
                if r.result is None:
                    still.append(r)
                else:
                    r.loop.call_soon_threadsafe(_set_result, r.future, r.result)
            active = still

    def _raw_policy(self, requests: list[_Request]) -> None:
        """``nodes=1``: the most probable move of each position, all in one batch."""
        from frugalzero.chess.history import net_input_from_board

        inputs = [net_input_from_board(r.board) for r in requests]
        for r, inp, ev in zip(requests, inputs, self.evaluator.evaluate(inputs)):
            move = inp.moves[int(np.argmax(ev.priors))]
            r.result = Played(move, value_to_cp(float(ev.value)), 0, 1)
            r.loop.call_soon_threadsafe(_set_result, r.future, r.result)

    def close(self) -> None:
        if self._thread is not None:
            self._requests.put(None)
            self._thread.join(timeout=10)
            self._thread = None
        if self.evaluator is not None:
            self.evaluator.close()
            self.evaluator = None


def _set_result(future: asyncio.Future, value) -> None:
    if not future.done():
        future.set_result(value)


def _set_exception(future: asyncio.Future, exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


class NetSeat(Player):
    """One game seat of a net engine; keeps its search tree from move to move."""

    def __init__(self, engine: NetEngine) -> None:
        super().__init__(engine.spec)
        self.engine = engine
        self.tree: SearchTree | None = None

    async def start(self) -> None:
        await asyncio.to_thread(self.engine.start)

    async def new_game(self, seed: int) -> None:
        self.tree = None

    async def play(self, board: chess.Board, clock: chess.engine.Limit | None = None) -> Played:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self.engine.request(_Request(self, board.copy(), loop, future))
        return await future

    def tree_for(self, board: chess.Board) -> SearchTree:
        """This game's tree at ``board``, following the moves played since the last search
        (tree reuse)."""
        if self.tree is None:
            self.tree = SearchTree(board, self.engine.search_config)
        else:
            self.tree.follow(board)
        return self.tree

    async def close(self) -> None:
        pass
