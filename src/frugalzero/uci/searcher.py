"""The searcher behind ``frugalzero uci``: our network with our MCTS, one game at a time.

The network starts in the background so ``uci`` is answered at once; ``isready`` waits until
it can search in the engine's own process, and the inference processes take over between
searches once they have started (``frugalzero.uci.network``, which also rebuilds them when
``Threads`` changes their number, without holding up a search). The tree is kept between
moves when the new position continues the last one (tree reuse), and between a ``go ponder``
and the search after ``ponderhit``.

One game keeps the whole machine busy: leaves are gathered in batches with virtual loss (a
gather absorbs collisions rather than stopping at them), and on a CPU two single-threaded
inference processes each work on a batch while the search gathers the next ones, so the
network runs on every core and the tree takes the time it needs in between. Under a clock the
time manager (``frugalzero.uci.timeman``) decides when the best move is settled.

The tree's memory is bounded (``RamLimitMb``): the native core counts what its arenas hold and
a search that would take them past the limit stops there and answers with what it has.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable
from typing import Any, get_args, get_type_hints

import numpy as np

from frugalzero.chess.encoding import HISTORY_FILLS
from frugalzero.nn.config import EvaluatorConfig
from frugalzero.runtime.memory import MB, machine_memory
from frugalzero.search import (
    NativeTree,
    RootLine,
    SearchConfig,
    SearchResult,
    new_tree,
    search,
    tree_for,
)
from frugalzero.search.native import position_refusal
from frugalzero.uci.limits import NODES_MAX
from frugalzero.uci.network import (  # noqa: F401 - network_layout: the searcher's names
    PARALLEL_BATCHES,
    EngineNetwork,
    NetSettings,
    network_layout,
)
from frugalzero.uci.protocol import BestMove, Option, SearchRequest
from frugalzero.uci.timeman import MoveTimer
from frugalzero.values import search_score, uci_score, wdl_permille

INFO_INTERVAL = 0.5  # seconds between info lines
HISTORY_FILL_CHOICES = ("net", *HISTORY_FILLS)
"""``HistoryFill`` (lc0's name): the net's own rule for missing history steps, or another."""
PRECISION_CHOICES: tuple[str, ...] = get_args(get_type_hints(EvaluatorConfig)["precision"])
"""``Precision`` (``frugalzero uci --precision``): ``EvaluatorConfig.precision``'s values."""
CACHE_SIZE = 200_000  # positions the evaluator's cache keeps unless NNCacheSize says otherwise
ALL_LINES = 256  # more than any position's legal moves
PLAY = SearchConfig().for_play()  # the play profile: the search matches and the ladder play
BATCH_SIZE = PLAY.leaves_per_gather  # leaves per batch: a single game's fill with collisions
DEFAULT_NODES = 400  # nodes a move without a clock (frugalzero uci --nodes, the Nodes option)
TEMPERATURE_MAX = 100.0  # Temperature, PolicyTemperature: beyond, play is uniform already
RAM_SHARE = 4
"""``RamLimitMb`` defaults to a quarter of the machine's memory: the two engines of a match,
the GUI or match runner beside them and the system still fit in the rest, and it is far more
than a move needs (a minute of analysis at 2,000 nodes/s is ~160 MB of tree)."""
MIN_TREE_BYTES = MB  # the tree's share when the evaluation cache takes all of RamLimitMb
EVALUATOR_OPTIONS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "Threads": ("threads", int),
    "NNCacheSize": ("cache_size", int),
    "HistoryFill": ("history_fill", str),
    "Precision": ("precision", str),
}
"""The options that set the evaluator: option -> (``uci.network.NetSettings`` field, its
value from the option's text). Set between searches, taken at the next search's start, built
in the background when they need other inference processes (``EngineNetwork``). One more is a
row here, its ``Option`` in ``searcher_options``, and a ``NetSettings`` field (one named as an
``EvaluatorConfig`` field passes into it as it is), named in ``uci.network.ANSWERS`` when it
changes what the network answers (no cached answers carried over; a rebuild)."""


def default_ram_limit_mb() -> int:
    return max(1, machine_memory() // RAM_SHARE // MB)


def searcher_options(
    default_nodes: int, ram_limit_mb: int | None = None, precision: str = "auto"
) -> list[Option]:
    """The searcher's UCI options, with the defaults ``frugalzero uci``'s flags give (their
    values are checked by these options' own ``check``)."""
    ram_limit = ram_limit_mb or default_ram_limit_mb()
    return [
        Option("Nodes", "spin", str(default_nodes), 1, NODES_MAX),
        Option("BatchSize", "spin", str(BATCH_SIZE), 1, 256),
        Option("Threads", "spin", "0", 0, 256),
        Option("Temperature", "string", "0"),
        Option("PolicyTemperature", "string", str(PLAY.policy_temperature)),
        Option("MultiPV", "spin", "1", 1, ALL_LINES),
        Option("UCI_ShowWDL", "check", "false"),
        Option("NNCacheSize", "spin", str(CACHE_SIZE), 0, 10_000_000),
        Option("HistoryFill", "combo", "net", choices=HISTORY_FILL_CHOICES),
        Option("Precision", "combo", precision, choices=PRECISION_CHOICES),
        Option("RamLimitMb", "spin", str(ram_limit), 1, max(ram_limit, machine_memory() // MB)),
    ]


def _temperature(text: str, zero: bool) -> float:
    """A temperature in 0..TEMPERATURE_MAX (0 itself only where ``zero``): ``nan``, ``inf``
    and ``1e308`` parse as floats, but the last two only mean uniform play."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError("must be a number") from None
    low = "0" if zero else "above 0"
    if not (0 <= value <= TEMPERATURE_MAX) or (value == 0 and not zero):
        raise ValueError(f"must be {low} up to {TEMPERATURE_MAX:g}")
    return value


def main_line_depth(result: SearchResult) -> int:
    """A search's depth (its ``info`` lines' ``depth``, where ``go depth N`` stops): the main
    line's length in moves, at least 1."""
    return max(1, len(result.lines[0].pv)) if result.lines else 1


class NetSearcher:
    """Implements ``frugalzero.uci.protocol.Searcher`` with a network file and our search."""

    def __init__(
        self,
        net: str,
        default_nodes: int = DEFAULT_NODES,
        seed: int = 0,
        ram_limit_mb: int | None = None,
        precision: str = "auto",
    ) -> None:
        self.net_spec = net
        self.nodes = default_nodes
        self.ram_limit_mb = ram_limit_mb or default_ram_limit_mb()
        self.batch = BATCH_SIZE
        self.temperature = 0.0
        self.policy_temperature = PLAY.policy_temperature
        self.multipv = 1
        self.show_wdl = False
        self.rng = np.random.default_rng(seed)
        self.tree: NativeTree | None = None
        self._evaluator = None  # the one the last search took (its info lines' hashfull)
        self._problems_said = 0  # the network's problems said in info strings so far
        settings = NetSettings(net, cache_size=CACHE_SIZE, precision=precision)
        self.network = EngineNetwork(settings, self.batch)

    # -- network ------------------------------------------------------------------------------
    def wait_ready(self) -> None:
        """Block until the engine can search; RuntimeError saying why if it cannot."""
        self.network.wait_ready()

    @property
    def note(self) -> str | None:
        """Which net plays, and why (said once the net is loaded; ``default``'s choice)."""
        return self.network.note

    @property
    def threads(self) -> int:
        return self.network.settings.threads

    @property
    def cache_size(self) -> int:
        return self.network.settings.cache_size

    @property
    def evaluator(self):
        """The evaluator the searches use now (between searches, in the searching thread)."""
        return self.network.evaluator

    @property
    def net(self):
        """The network the engine plays (with ``default``: the one chosen for this machine)."""
        return self.network.net

    def settle(self):
        """Wait for the evaluator the options ask for and take it (between searches, in the
        thread that searches): for measurements of the final layout; a search never waits."""
        self._evaluator = self.network.settle()
        return self._evaluator

    def close(self) -> None:
        self.network.close()

    # -- Searcher protocol --------------------------------------------------------------------
    refusal = staticmethod(position_refusal)
    """Why a position is not searched (None: it is): the one the native core refuses, named
    on one line; the protocol then refuses the ``position`` command with it."""

    def new_game(self) -> None:
        self.tree = None

    def set_option(self, name: str, value: str) -> None:
        if name == "Nodes":
            self.nodes = int(value)
        elif name == "BatchSize":
            self.batch = int(value)
            self.tree = None
        elif name == "Temperature":
            self.temperature = _temperature(value, zero=True)  # 0 plays the best move
        elif name == "PolicyTemperature":
            self.policy_temperature = _temperature(value, zero=False)
            self.tree = None
        elif name in EVALUATOR_OPTIONS:  # built in the background, taken between searches
            field, parse = EVALUATOR_OPTIONS[name]
            settings = dataclasses.replace(self.network.settings, **{field: parse(value)})
            self.network.want(settings)
        elif name == "MultiPV":
            self.multipv = int(value)
        elif name == "UCI_ShowWDL":
            self.show_wdl = value == "true"
        elif name == "RamLimitMb":
            self.ram_limit_mb = int(value)  # the next search's tree takes it (_bound)

    def search(
        self, request: SearchRequest, stop: threading.Event, info: Callable[[str], None]
    ) -> BestMove:
        self._evaluator = evaluator = self.network.take()  # never waits for a build
        for problem in self.network.problems[self._problems_said :]:
            info(f"info string {problem}")
            self._problems_said += 1
        tree = self._tree_for(request)
        started = time.monotonic()
        deadline = None if request.time is None else started + request.time.hard
        timer = None if request.time is None else MoveTimer(request.time)
        budget = self._budget(request)
        last_info = [started]
        settled = threading.Event()  # the time manager's verdict, taken after a batch

        def should_stop() -> bool:
            if stop.is_set():
                return True
            if tree.started < 1:  # as Stockfish completes depth 1: a move searched, so a
                return False  # score to give (the root's own value is none, _line_score)
            return settled.is_set() or (deadline is not None and time.monotonic() >= deadline)

        def on_batch(t: NativeTree) -> None:
            now = time.monotonic()
            elapsed = now - started
            if timer is not None:
                best, lead = t.leader()
                speed = t.started / max(elapsed, 1e-3)
                if timer.should_stop(elapsed, best, lead, speed):
                    settled.set()
            depth = request.depth  # go depth N: the main line N moves long (t.max_depth: cheap)
            if depth is not None and t.max_depth >= depth and main_line_depth(t.result()) >= depth:
                settled.set()
            if now - last_info[0] >= INFO_INTERVAL:
                last_info[0] = now
                report = self._info_lines(t.result(self.multipv), elapsed, searching=True)
                for line in report:
                    info(line)

        moves = request.searchmoves or None
        in_flight = 2 * evaluator.config.servers if evaluator.backend == "process" else 1
        search(tree, evaluator, budget, should_stop, in_flight, on_batch, moves)
        result = tree.result(ALL_LINES if self.temperature > 0 or moves else self.multipv)
        if moves:  # a search stopped before its first walk left a reused root unrestricted
            result = result._replace(lines=[ln for ln in result.lines if ln.move in moves])
        for line in self._info_lines(result, time.monotonic() - started):
            info(line)
        if tree.memory_full:
            info(self._memory_note(tree))
        return self._pick(tree, result, request)

    # -- helpers ------------------------------------------------------------------------------
    def _budget(self, request: SearchRequest) -> float:
        """Simulations of this search: unbounded when only ``stop``, the clock or a proof
        ends it (``infinite``; a clock, or ``go mate``, without a node limit), else the node
        limit or the ``Nodes`` option. A proven root ends any search (``go mate``'s stop)."""
        if request.infinite or (
            request.nodes is None and (request.time is not None or request.mate is not None)
        ):
            return math.inf
        return request.nodes if request.nodes is not None else self.nodes

    def _tree_for(self, request: SearchRequest) -> NativeTree:
        """The last tree, following the requested game (tree reuse when it continues the
        last one); a new tree after ``ucinewgame`` or a new batch size."""
        config = (
            self.tree.config
            if self.tree is not None
            else dataclasses.replace(
                PLAY,  # the play profile, with the options' batch size
                leaves_per_gather=self.batch,
                collisions=self.batch,
                policy_temperature=self.policy_temperature,
            )
        )
        self.tree = tree_for(self.tree, request.history, config, self.rng)
        self._bound(request, config)
        return self.tree

    def _bound(self, request: SearchRequest, config: SearchConfig) -> None:
        """The tree's share of ``RamLimitMb``: what the evaluation cache (bounded by
        ``NNCacheSize``, its tables counted full) leaves of it. A tree already past it (the
        limit lowered, the cache grown) starts afresh."""
        cache = self._evaluator.native_cache
        cache_bytes = cache.memory_bytes if cache is not None else 0
        limit = max(self.ram_limit_mb * MB - cache_bytes, MIN_TREE_BYTES)
        if self.tree.memory_bytes > limit:
            self.tree.close()
            self.tree = new_tree(request.history, config, self.rng)
        self.tree.set_memory_limit(limit)

    def _memory_note(self, tree: NativeTree) -> str:
        """The search stopped at the memory limit: what the tree holds, and a node's cost."""
        held, nodes = tree.memory_bytes, max(1, tree.core.node_count)
        return (
            f"info string RamLimitMb {self.ram_limit_mb} reached: the tree holds "
            f"{held / MB:.1f} MB ({nodes} nodes, {held // nodes} bytes a node); "
            "the search stops growing here"
        )

    def _pick(self, tree: NativeTree, result: SearchResult, request: SearchRequest) -> BestMove:
        """The best line's move (with ``Temperature``: the tree's choice at that temperature,
        sampled by visits among the moves not proven to lose), and the reply its line expects."""
        lines = result.lines
        if not lines:  # stopped before the root was evaluated
            return BestMove((request.searchmoves or list(request.history.board.legal_moves))[0])
        line = lines[0]
        if self.temperature > 0 and not result.mate_in:
            chosen = tree.choose_move(temperature=self.temperature)
            line = next((ln for ln in lines if ln.move == chosen), line)
        return BestMove(line.move, line.pv[1] if len(line.pv) > 1 else None)

    def _info_lines(
        self, result: SearchResult, elapsed: float, searching: bool = False
    ) -> list[str]:
        """One report: an ``info … multipv i …`` line per searched line (``MultiPV`` of them,
        best first), and while ``searching`` the move searched most as ``currmove``."""
        hashfull = self._evaluator.cache_permille if self._evaluator is not None else None
        nps = int(result.simulations / elapsed) if elapsed > 0 else 0
        stats = f"nodes {int(result.nodes)} nps {nps}"
        if hashfull is not None:
            stats += f" hashfull {hashfull}"
        stats += f" time {int(elapsed * 1000)}"
        lines = [ln for i, ln in enumerate(result.lines[: self.multipv]) if i == 0 or ln.visits]
        depth = main_line_depth(result)
        seldepth = max(depth, result.depth)
        if not lines:  # the root was never evaluated: nothing to score
            return [f"info depth 1 seldepth 1 {stats}"]
        report = [
            f"info depth {depth} seldepth {seldepth} multipv {rank} "
            f"{self._line_score(line)}{stats} "
            f"pv {' '.join(m.uci() for m in line.pv[:32])}"
            for rank, line in enumerate(lines, 1)
        ]
        if searching:
            move = lines[0].move
            number = result.moves.index(move) + 1
            report.append(f"info depth {depth} currmove {move.uci()} currmovenumber {number}")
        return report

    def _line_score(self, line: RootLine) -> str:
        """``score … `` of a line from its move's Q or proven mate, with ``wdl W D L`` under
        ``UCI_ShowWDL``; nothing for a move not searched yet (a search of the root alone).
        The root's own value is no score: one network call, and the shipped nets put any
        root without history planes (a FEN, the start position) near -1 whatever it is."""
        if line.mate_in is None and math.isnan(line.q):
            return ""
        text = f"score {uci_score(search_score(line.q, line.mate_in))} "
        if self.show_wdl:
            win, draw, loss = wdl_permille(line.q, line.draw)
            text += f"wdl {win} {draw} {loss} "
        return text
