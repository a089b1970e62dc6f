"""The searcher behind ``frugalzero uci``: our network with our MCTS, one game at a time.

The network starts in the background (an inference process) so ``uci`` is answered at once;
``isready`` waits for it. The tree is kept between moves when the new position continues the
last one (tree reuse). Leaves are gathered in batches with virtual loss, so one game still
fills the network's batches.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

import chess
import numpy as np

from frugalzero.search import SearchConfig, SearchResult, SearchTree, search
from frugalzero.search.puct import choose_by_visits
from frugalzero.uci.protocol import Option, SearchRequest
from frugalzero.values import search_score, uci_score

INFO_INTERVAL = 0.5  # seconds between info lines


def searcher_options(default_nodes: int) -> list[Option]:
    return [
        Option("Nodes", "spin", str(default_nodes), 1, 10_000_000),
        Option("BatchSize", "spin", "16", 1, 256),
        Option("Threads", "spin", "0", 0, 256),
        Option("Temperature", "string", "0"),
    ]


class NetSearcher:
    """Implements ``frugalzero.uci.protocol.Searcher`` with a network file and ``SearchTree``."""

    def __init__(self, net: str, default_nodes: int = 400, seed: int = 0) -> None:
        self.net_spec = net
        self.nodes = default_nodes
        self.batch = 16
        self.threads = 0
        self.temperature = 0.0
        self.rng = np.random.default_rng(seed)
        self.tree: SearchTree | None = None
        self._evaluator = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        threading.Thread(target=self._load, daemon=True).start()

    # -- network ------------------------------------------------------------------------------
    def _load(self) -> None:
        try:
            from frugalzero.nn.checkpoint import load_net, resolve_net_path
            from frugalzero.nn.evaluator import Evaluator, EvaluatorConfig

            net, _ = load_net(resolve_net_path(self.net_spec))
            # single-game batches vary in size; compiling would cost more than it saves here
            config = EvaluatorConfig(compile="off", threads=self.threads, cache_size=200_000)
            self._evaluator = Evaluator(net, config)
        except BaseException as exc:  # reported on the first search; the engine stays up
            self._error = exc
        finally:
            self._ready.set()

    def wait_ready(self) -> None:
        self._ready.wait()

    @property
    def evaluator(self):
        self._ready.wait()
        if self._error is not None:
            raise RuntimeError(f"network {self.net_spec!r} could not be loaded: {self._error}")
        return self._evaluator

    def close(self) -> None:
        self._ready.wait()
        if self._evaluator is not None:
            self._evaluator.close()

    # -- Searcher protocol --------------------------------------------------------------------
    def new_game(self) -> None:
        self.tree = None

    def set_option(self, name: str, value: str) -> None:
        if name == "Nodes":
            self.nodes = int(value)
        elif name == "BatchSize":
            self.batch = int(value)
            self.tree = None
        elif name == "Temperature":
            self.temperature = max(0.0, float(value))
        elif name == "Threads":
            self.threads = int(value)  # applies when the network is (re)loaded

    def search(
        self, request: SearchRequest, stop: threading.Event, info: Callable[[str], None]
    ) -> chess.Move:
        evaluator = self.evaluator
        tree = self._tree_for(request)
        deadline = None if request.seconds is None else time.monotonic() + request.seconds
        if request.infinite or (request.seconds is not None and request.nodes is None):
            budget = math.inf
        else:
            budget = request.nodes if request.nodes is not None else self.nodes
        started = time.monotonic()
        last_info = [started]

        def should_stop() -> bool:
            return stop.is_set() or (deadline is not None and time.monotonic() >= deadline)

        def on_batch(t: SearchTree) -> None:
            now = time.monotonic()
            if now - last_info[0] >= INFO_INTERVAL:
                last_info[0] = now
                info(self._info_line(t.result(), now - started))

        result = search(tree, evaluator, simulations=budget, stop=should_stop, on_batch=on_batch)
        info(self._info_line(result, time.monotonic() - started))
        return self._pick(result, request)

    # -- helpers ------------------------------------------------------------------------------
    def _tree_for(self, request: SearchRequest) -> SearchTree:
        """The last tree, following the requested game (tree reuse when it continues the
        last one); a new tree after ``ucinewgame`` or a new batch size."""
        if self.tree is None:
            config = SearchConfig(leaves_per_gather=self.batch).for_play()
            self.tree = SearchTree(request.history, config, rng=self.rng)
        else:
            self.tree.follow(request.history)
        return self.tree

    def _pick(self, result: SearchResult, request: SearchRequest) -> chess.Move:
        moves, visits = result.moves, result.visits
        if request.searchmoves:
            allowed = np.array([m in request.searchmoves for m in moves])
            if allowed.any():
                visits = np.where(allowed, visits, -1)
                return moves[int(np.argmax(visits))]
        if self.temperature > 0 and visits.sum() > 0 and not result.mate_in:
            return moves[choose_by_visits(visits, self.temperature, self.rng)]
        move = result.best_move
        return move if move is not None else next(iter(request.history.board.legal_moves))

    @staticmethod
    def _info_line(result: SearchResult, elapsed: float) -> str:
        nodes = int(result.nodes)
        score = uci_score(search_score(result.value, result.mate_in))
        pv = " ".join(m.uci() for m in result.pv[:32])
        nps = int(result.simulations / elapsed) if elapsed > 0 else 0
        depth = max(1, result.depth)
        return (
            f"info depth {depth} seldepth {depth} nodes {nodes} nps {nps} "
            f"score {score} time {int(elapsed * 1000)} pv {pv}"
        ).rstrip()
