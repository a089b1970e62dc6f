"""The searcher behind ``frugalzero uci``: our network with our MCTS, one game at a time.

The network starts in the background (inference processes) so ``uci`` is answered at once;
``isready`` waits for it. The tree is kept between moves when the new position continues the
last one (tree reuse), and between a ``go ponder`` and the search after ``ponderhit``.

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

import numpy as np

from frugalzero.nn.shipped import DEFAULT_NET
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
from frugalzero.uci.protocol import BestMove, Option, SearchRequest
from frugalzero.uci.timeman import MoveTimer
from frugalzero.values import search_score, uci_score, wdl_permille

INFO_INTERVAL = 0.5  # seconds between info lines
CACHE_SIZE = 200_000  # positions the evaluator's cache keeps unless NNCacheSize says otherwise
PARALLEL_BATCHES = 2  # batches one game's search keeps evaluating side by side on a CPU
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


def default_ram_limit_mb() -> int:
    return max(1, machine_memory() // RAM_SHARE // MB)


def searcher_options(default_nodes: int, ram_limit_mb: int | None = None) -> list[Option]:
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


def network_layout(threads: int, cores: int, cpu: bool) -> tuple[int, int]:
    """(inference processes, threads each) for the ``Threads`` option (0: every core).

    On a CPU, ``PARALLEL_BATCHES`` single-threaded processes run one game's small batches
    side by side with no threads to synchronise (one process with two threads runs them one
    after the other, and its threads spin whenever the search holds a core); more threads go
    to each process. A GPU gets one process."""
    if not cpu:
        return 1, max(1, threads)
    total = threads or cores
    servers = max(1, min(PARALLEL_BATCHES, total))
    return servers, max(1, total // servers)


class NetSearcher:
    """Implements ``frugalzero.uci.protocol.Searcher`` with a network file and our search."""

    def __init__(
        self,
        net: str,
        default_nodes: int = DEFAULT_NODES,
        seed: int = 0,
        ram_limit_mb: int | None = None,
    ) -> None:
        self.net_spec = net
        self.nodes = default_nodes
        self.ram_limit_mb = ram_limit_mb or default_ram_limit_mb()
        self.batch = BATCH_SIZE
        self.threads = 0
        self.temperature = 0.0
        self.policy_temperature = PLAY.policy_temperature
        self.multipv = 1
        self.show_wdl = False
        self.cache_size = CACHE_SIZE
        self._applied = (self.threads, self.cache_size)  # what the evaluator runs with
        self.rng = np.random.default_rng(seed)
        self.tree: NativeTree | None = None
        self.note: str | None = None  # said once the net is loaded: which one plays, and why
        self._evaluator = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        threading.Thread(target=self._load, daemon=True).start()

    # -- network ------------------------------------------------------------------------------
    def _load(self) -> None:
        try:
            from frugalzero.nn.checkpoint import load_net
            from frugalzero.nn.evaluator import Evaluator, EvaluatorConfig
            from frugalzero.nn.shipped import resolve_net_path
            from frugalzero.runtime.cores import available_cores
            from frugalzero.runtime.device import resolve_device

            device = resolve_device("auto", "uci")
            self._cpu = device.type == "cpu"
            self._cores = available_cores()
            threads, cache_size = self._applied = (self.threads, self.cache_size)
            servers, per_server = network_layout(threads, self._cores, self._cpu)
            # single-game batches vary in size; compiling would cost more than it saves here
            config = EvaluatorConfig(
                compile="off", servers=servers, threads=per_server, cache_size=cache_size
            )
            net = self.net_spec
            if net == DEFAULT_NET:  # the shipped net that is stronger here under a clock
                from frugalzero.nn.choice import clock_net

                choice = clock_net(str(device), per_server, self.batch, config)
                net, self.note = choice.net, choice.describe()
            self._net, _ = load_net(resolve_net_path(net))
            self._evaluator = Evaluator(self._net, config)
        except BaseException as exc:  # reported on the first search; the engine stays up
            self._error = exc
        finally:
            self._ready.set()

    def wait_ready(self) -> None:
        """Block until the network is loaded; RuntimeError saying why if it cannot be."""
        self._ready.wait()
        if self._error is not None:
            raise RuntimeError(f"network {self.net_spec!r} could not be loaded: {self._error}")

    @property
    def evaluator(self):
        self.wait_ready()
        return self._evaluator

    @property
    def net(self):
        """The network the engine plays (with ``default``: the one chosen for this machine)."""
        self.wait_ready()
        return self._net

    def close(self) -> None:
        self._ready.wait()
        if self._evaluator is not None:
            self._evaluator.close()

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
        elif name == "Threads":
            self.threads = int(value)  # the next search applies it (_apply_settings)
        elif name == "NNCacheSize":
            self.cache_size = int(value)  # likewise
        elif name == "MultiPV":
            self.multipv = int(value)
        elif name == "UCI_ShowWDL":
            self.show_wdl = value == "true"
        elif name == "RamLimitMb":
            self.ram_limit_mb = int(value)  # the next search's tree takes it (_bound)

    def search(
        self, request: SearchRequest, stop: threading.Event, info: Callable[[str], None]
    ) -> BestMove:
        self._apply_settings(self.evaluator)
        evaluator = self.evaluator
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
            if now - last_info[0] >= INFO_INTERVAL:
                last_info[0] = now
                report = self._info_lines(t.result(self.multipv), elapsed, searching=True)
                for line in report:
                    info(line)

        moves = request.searchmoves or None
        in_flight = 2 * evaluator.config.servers
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
    def _apply_settings(self, evaluator) -> None:
        """``Threads`` and ``NNCacheSize`` set since the last search take effect now, in the
        thread that uses the evaluator (it is not thread-safe): the same number of inference
        processes with other threads, or new processes when their number changes."""
        threads, cache_size = self.threads, self.cache_size
        if threads != self._applied[0]:
            servers, per_server = network_layout(threads, self._cores, self._cpu)
            if servers == evaluator.config.servers:
                evaluator.set_threads(per_server)
            else:
                from frugalzero.nn.evaluator import Evaluator

                config = dataclasses.replace(
                    evaluator.config, servers=servers, threads=per_server, cache_size=cache_size
                )
                evaluator.close()
                self._evaluator = evaluator = Evaluator(self._net, config)
        if cache_size != self._applied[1]:
            evaluator.resize_cache(cache_size)
        self._applied = (threads, cache_size)

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
        cache = self.evaluator.native_cache
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
        depth = max(1, len(result.lines[0].pv)) if result.lines else 1
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
