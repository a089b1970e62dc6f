"""The search: one game's tree on the native core (``native/search``, C++).

``NativeTree`` is what ``new_tree`` makes: the tree, the move generator and the network inputs
in C++. Its leaves are never Python objects: ``frugalzero.search.driver`` gathers the leaves of
many trees into one ``LeafBatch`` (NumPy rows of frames, meta and policy indices) and applies
the network's logits to all of them in one call (``rows``, below). The Python tree it was
transcribed from is the tests' oracle now (``tests/oracle``), held to it move for move by
tests/test_search_native.py.

What stays in Python is what happens once per search or per move: the root's Dirichlet or
Gumbel noise (from the tree's NumPy generator, where the oracle draws it), the move choice at a
temperature, and the results as ``SearchResult``. A position the core refuses (python-chess
calls it invalid, a variant, clocks out of range) is an ``UnsupportedPosition``: there is no
other search to hand it to.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import chess
import numpy as np

from frugalzero import _native
from frugalzero.chess.history import GameHistory, NetInput
from frugalzero.chess.native import game_root, native_history, refusal
from frugalzero.chess.rules import MATE
from frugalzero.errors import UserError
from frugalzero.search.config import SearchConfig
from frugalzero.search.draws import contempt_seed
from frugalzero.search.puct import choose_by_visits, dirichlet_noise, legal_softmax
from frugalzero.search.types import (
    TARGET_FIELDS,
    Evaluates,
    RootLine,
    SearchResult,
    SearchTarget,
)

NEW, PENDING, EXPANDED, TERMINAL = 0, 1, 2, 3
# the result fields a training target reads, and a target from them (TARGET_FIELDS is in
# SearchTarget's order: tests/test_search_seam.py)
_TARGET_SOURCES = tuple(TARGET_FIELDS.values())
_TARGET_OF = operator.itemgetter(*_TARGET_SOURCES)
_MOVES: dict[int, chess.Move] = {}  # raw 16-bit moves as python-chess moves, made once each


def move_of(raw: int) -> chess.Move:
    """The python-chess move of a native 16-bit move (from | to << 6 | promotion << 12)."""
    move = _MOVES.get(raw)
    if move is None:
        raw = int(raw)
        move = _MOVES[raw] = chess.Move(raw & 63, (raw >> 6) & 63, (raw >> 12) or None)
    return move


def raw_of(move: chess.Move) -> int:
    return move.from_square | move.to_square << 6 | (move.promotion or 0) << 12


class UnsupportedPosition(UserError):
    """A position the native core refuses. The search has no other implementation to hand it
    to, so it says which position and why, on one line (the CLI prints it; the UCI engine
    refuses the ``position`` command with it)."""


def position_refusal(game: GameHistory | chess.Board | None) -> str | None:
    """Why the search will not take ``game`` (a board with its move stack, or a GameHistory),
    on one line naming the position the game starts from; None when it will. The core checks
    that root (``chess.native.refusal``): the moves played from it are legal."""
    if game is None:
        return None
    root = game_root(game)
    reason = refusal(root)
    if reason is None:
        return None
    fen = root.fen()
    return f"position not supported by the search: {fen} ({reason.removesuffix(': ' + fen)})"


def follow_game(tree, known: list[chess.Move], root: chess.Board, game) -> bool:
    """``follow`` for a tree (the oracle's too): ``tree`` played ``known`` from ``root``;
    ``game`` (a GameHistory or a board with its move stack) is followed with ``tree.advance``
    when it continues them, else the tree starts afresh (``tree._begin``)."""
    if tree.in_flight:
        raise RuntimeError("follow() while leaves are still being evaluated")
    board = game.board if isinstance(game, GameHistory) else game
    played = board.move_stack
    if played[: len(known)] == known and len(played) >= len(known) and board.root() == root:
        try:
            for move in played[len(known) :]:
                tree.advance(move)
            return True
        except ValueError:  # a move the tree cannot play: start afresh
            pass
    tree._begin(game)
    return False


NATIVE_FROM: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "fpu_absolute": ("fpu_mode", lambda mode: mode == "absolute"),
    "default_simulations": ("simulations", int),
}
"""The core's parameters that are not a SearchConfig field of their own name: the field each
is made from, and how. Every other parameter is the field of its name, as it is."""


def search_params(config: SearchConfig) -> _native.SearchParams:
    """The native core's copy of a SearchConfig: every parameter the core declares
    (``SearchParams.fields()``, from native/search/params.h), so a parameter added there is
    copied without a list here to keep (tests/test_search_seam.py holds the two sides alike)."""
    params = _native.SearchParams()
    for name, _type, _default in _native.SearchParams.fields():
        source, convert = NATIVE_FROM.get(name, (name, None))
        value = getattr(config, source)
        setattr(params, name, value if convert is None else convert(value))
    return params


class NativeTree:
    """One game's search (start, finished, advance, follow, result, leader, choose_move,
    ending), gathered and applied by the driver in batches of many trees.
    ``UnsupportedPosition`` for a game the core refuses, here or in ``follow`` (the tree then
    stays where it was)."""

    def __init__(
        self,
        history: GameHistory | chess.Board | None = None,
        config: SearchConfig | None = None,
        rng: np.random.Generator | None = None,
        seed: int | None = None,
    ) -> None:
        self.config = config or SearchConfig()
        self.rng = rng if rng is not None else np.random.default_rng(seed)
        self._params = search_params(self.config)
        self._draw_seed = contempt_seed(self.rng)
        self._begin(history if history is not None else chess.Board())

    def _begin(self, game: GameHistory | chess.Board) -> None:
        board = game.board if isinstance(game, GameHistory) else game
        reason = position_refusal(board)
        if reason is not None:
            raise UnsupportedPosition(reason)
        history = native_history(board)
        if hasattr(self, "core"):  # a new game continues the contempt draws' stream
            self._draw_seed = self.core.draw_state
        self.core = _native.Tree(history, self._params, self._draw_seed)
        self._noise: np.ndarray | None = None  # drawn by start(), until a search takes it
        self._root_board = board.root()
        self._moves = list(board.move_stack)
        self._board: chess.Board | None = None

    # -- the game -----------------------------------------------------------------------------
    @property
    def board(self) -> chess.Board:
        """The root position, with the game's move stack (built when asked for)."""
        if self._board is None:
            board = self._root_board.copy()
            for move in self._moves:
                board.push(move)
            self._board = board
        return self._board

    @property
    def history(self) -> GameHistory:
        return GameHistory.of_board(self.board)

    @property
    def turn(self) -> chess.Color:
        return self._root_board.turn != bool(len(self._moves) % 2)

    def ending(self) -> tuple[str | None, float | None]:
        """How the game has ended at the root (``chess.rules.game_ending``): (ending or None,
        the result from White's view)."""
        ending, _ = self.core.root_status(3, True)
        if ending is None:
            return None, None
        if ending == MATE:
            return ending, -1.0 if self.turn == chess.WHITE else 1.0
        return ending, 0.0

    def advance(self, move: chess.Move) -> None:
        """Play ``move``: keep its subtree (``reuse_tree``) and make it the root."""
        try:
            self.core.advance(raw_of(move))
        except ValueError:
            raise ValueError(f"illegal move {move.uci()} in {self.board.fen()}") from None
        self._moves.append(move)
        self._board = None
        self._noise = None

    def follow(self, game: GameHistory | chess.Board) -> bool:
        """Bring the root to ``game``'s position, keeping the subtree reached when ``game``
        continues this tree's (True); any other game starts the tree afresh (False)."""
        return follow_game(self, list(self._moves), self._root_board, game)

    def close(self) -> None:
        """Free the tree's nodes now."""
        self.core.release()

    # -- memory -------------------------------------------------------------------------------
    @property
    def memory_bytes(self) -> int:
        """What the tree holds, counted by the core (its arenas' capacities): the real cost
        of its nodes, not an estimate."""
        return self.core.memory_bytes

    def set_memory_limit(self, limit: int) -> None:
        """Searches stop making nodes before the tree could pass ``limit`` bytes (0: none);
        one that stops there is finished, with ``memory_full`` set."""
        self.core.set_memory_limit(max(0, int(limit)))

    @property
    def memory_full(self) -> bool:
        """The last search stopped at the memory limit."""
        return self.core.memory_full

    # -- a search -----------------------------------------------------------------------------
    def start(
        self,
        simulations: int | None = None,
        moves: list[chess.Move] | None = None,
        noise: bool = True,
    ) -> None:
        """Begin a search of ``simulations`` more simulations (None: the config's; 0 or
        ``math.inf``: until stopped). With ``moves`` it visits only those root moves (illegal
        ones are ignored; if none is legal, every move is searched). The root's noise is drawn
        here from the tree's generator: the oracle draws the same numbers when it first walks
        the root. ``noise=False`` searches without it whatever the config, drawing nothing:
        a self-play search that only picks a move to play (playout-cap randomisation's fast
        search) plays for strength."""
        core, cfg = self.core, self.config
        if core.in_flight:
            raise RuntimeError("start() while leaves are still being evaluated")
        if simulations is None:
            simulations = cfg.simulations
        # 0 or inf searches until stopped
        target = 0.0 if simulations in (0, math.inf) else float(int(simulations))
        # a start() with no search since keeps its draws; noise=False draws none
        drawn = self._noise if noise else np.zeros(0)
        if noise and (drawn is None or core.prepared):
            drawn = np.zeros(0)
            n = core.root_count
            if core.root_state != TERMINAL and not core.root_proven:
                if cfg.gumbel:
                    if cfg.gumbel_noise:
                        drawn = self.rng.gumbel(size=n)
                elif cfg.root_noise and n > 1:
                    drawn = dirichlet_noise(self.rng, n, cfg.dirichlet_alpha)
        self._noise = drawn if noise else None  # a later start() with noise draws its own
        core.start(target, [raw_of(m) for m in moves] if moves else [], drawn)

    @property
    def finished(self) -> bool:
        return self.core.finished

    @property
    def started(self) -> int:
        return self.core.started

    @property
    def target(self) -> float:
        return self.core.target

    @property
    def in_flight(self) -> int:
        return self.core.in_flight

    @property
    def generation(self) -> int:
        return self.core.generation

    @property
    def max_depth(self) -> int:
        return self.core.max_depth

    # -- reading the search -------------------------------------------------------------------
    def result(self, lines: int = 1) -> SearchResult:
        """The search's outcome (mid-search: a snapshot), with the ``lines`` best root moves."""
        # the core's fields are SearchResult's and RootLine's by name (FZ_RESULT_FIELDS); only
        # its raw moves become python-chess moves
        r = self.core.result(lines)
        r["moves"] = [move_of(m) for m in r["moves"].tolist()]
        r["pv"] = [move_of(m) for m in r["pv"].tolist()]
        if r["best_move"] is not None:
            r["best_move"] = move_of(r["best_move"])
        for line in r["lines"]:
            line["move"] = move_of(line["move"])
            line["pv"] = [move_of(m) for m in line["pv"].tolist()]
        r["lines"] = [RootLine(**line) for line in r["lines"]]
        return SearchResult(**r)

    def training_target(self) -> SearchTarget:
        """What self-play records of the search (part of ``result()``, without the PV)."""
        # only those fields, without a dict built in Python: self-play asks every move
        return SearchTarget._make(_TARGET_OF(self.core.result(0, False, _TARGET_SOURCES)))

    def root_priors(self) -> tuple[np.ndarray, np.ndarray]:
        """(policy indices, priors) of the root's moves as the network gave them (at the
        policy temperature), before the root's noise: what a search's target is compared with
        to see how much the search changed the network's mind. Empty before the root is
        expanded."""
        core = self.core
        if core.root_state != EXPANDED:
            return np.zeros(0, np.int64), np.zeros(0)
        edges = core.edges(core.root)
        return edges["index"].astype(np.int64), edges["raw"]

    def target_kl(self, floor: float) -> float:
        """``selfplay.stats.policy_kl`` of ``training_target()`` against ``root_priors()``
        (priors floored at ``floor``), computed in the core in one call: self-play measures it
        every move, where the Python function and the arrays it reads cost ~16 µs a move, most
        of the 20% of the search's own CPU that issue 71 found lost. 0 before the root is
        expanded."""
        return self.core.target_kl(floor)

    def leader(self) -> tuple[chess.Move | None, float]:
        """The most visited root move (the first of equals) and its lead over the runner-up."""
        slot, lead = self.core.leader()
        if slot < 0:
            return None, 0.0
        return move_of(self.core.root_move(slot)), lead

    def choose_move(
        self, ply: int | None = None, temperature: float | None = None
    ) -> chess.Move | None:
        """The move to play: sampled from the visits at the schedule's temperature for ``ply``
        (``temperature`` instead of the schedule: UCI's option), never a move proven to lose;
        at temperature 0, Gumbel, or a proven root, the result's ``best_move``."""
        core, cfg = self.core, self.config
        if core.root_state != EXPANDED:
            return None
        if ply is None:
            ply = len(self._moves)
        tau = cfg.move_temperature(ply) if temperature is None else temperature
        if cfg.gumbel or core.root_proven or tau <= 0:
            slot = core.best_slot()
        else:
            slot = choose_by_visits(core.choice_visits(), tau, self.rng)
        return None if slot < 0 else move_of(core.root_move(slot))

    @property
    def root(self) -> NodeView:
        return NodeView(self.core, self.core.root)


class NodeView:
    """A native node with the oracle's ``Node`` names (N, W, Q, P, raw, children, moves,
    indices, ...): what tests and debugging read; nothing on the search's path uses it."""

    def __init__(self, core: _native.Tree, node: int) -> None:
        self._core = core
        self._id = node
        self._fields = core.node(node)
        self._edges = core.edges(node) if self._fields["count"] else None

    def __getattr__(self, name: str):
        fields = self.__dict__.get("_fields")
        if fields is not None and name in fields:
            return fields[name]
        raise AttributeError(name)

    def _edge(self, key: str) -> list:
        return [] if self._edges is None else self._edges[key].tolist()

    @property
    def N(self) -> list[float]:  # noqa: N802 - the oracle's names
        return self._edge("N")

    @property
    def W(self) -> list[float]:  # noqa: N802
        return self._edge("W")

    @property
    def Q(self) -> list[float]:  # noqa: N802
        return [w / n if n else 0.0 for w, n in zip(self.W, self.N)]

    @property
    def P(self) -> np.ndarray:  # noqa: N802
        return np.zeros(0) if self._edges is None else self._edges["P"]

    @property
    def raw(self) -> np.ndarray:
        return np.zeros(0) if self._edges is None else self._edges["raw"]

    @property
    def moves(self) -> list[chess.Move]:
        return [move_of(m) for m in self._edge("move")]

    @property
    def indices(self) -> np.ndarray:
        """The moves' policy indices (side to move's view)."""
        return np.zeros(0, np.int64) if self._edges is None else self._edges["index"]

    @property
    def children(self) -> list[NodeView | None] | None:
        if self.state != EXPANDED:
            return None
        return [NodeView(self._core, c) if c >= 0 else None for c in self._edge("child")]

    @property
    def block(self) -> np.ndarray | None:
        if not self.has_block:
            return None
        return np.where(self._edges["blocked"] > 0, -np.inf, 0.0)

    @property
    def frozen_base(self) -> np.ndarray | None:
        cumulative = self._core.frozen(self._id)
        return None if len(cumulative) == 0 else np.diff(cumulative, prepend=0.0)


# -- evaluating a batch ---------------------------------------------------------------------------


class NetworkRows:
    """Our network's evaluator (``frugalzero.nn.evaluator.Evaluator``): a batch's rows go to
    the inference process as they are, the legal moves' logits come back, and the cache of
    answers lives in C++ (no per-position Python on either side)."""

    def __init__(self, evaluator) -> None:
        self.evaluator = evaluator
        self.cache = evaluator.native_cache

    def submit(self, batch: _native.LeafBatch):
        if batch.rows == 0:
            return None
        return self.evaluator.submit_leaves(batch)

    def apply(self, handle, trees: list[_native.Tree], batch: _native.LeafBatch) -> None:
        if handle is None:
            logits, values, wdl = np.zeros((0, 1), np.float32), np.zeros(0, np.float32), None
        else:
            logits, values, wdl = handle.result()
        _native.apply_batch(trees, batch, logits, values, wdl, self.cache)

    def priors(self, handle, batch: _native.LeafBatch) -> list[np.ndarray]:
        """Each row's priors over its legal moves (a batch gathered without the cache)."""
        priors = legal_softmax(handle.result()[0].astype(np.float64))
        return [priors[row, :count] for row, count in enumerate(batch.counts().tolist())]


class EvaluationRows:
    """Any other evaluator (``Evaluates``: uniform or hashed priors in tests, a remote net):
    each row becomes a ``NetInput`` and each ``Evaluation`` is applied as priors."""

    cache = None

    def __init__(self, evaluator: Evaluates) -> None:
        self.evaluator = evaluator

    def submit(self, batch: _native.LeafBatch):
        frames, meta = batch.frames(), batch.meta().tolist()
        inputs = [
            NetInput(
                frames[row].tobytes(),
                tuple(meta[row]),
                [move_of(m) for m in batch.row_moves(row).tolist()],
                batch.row_indices(row),
            )
            for row in range(batch.rows)
        ]
        return self.evaluator.submit(inputs)

    def priors(self, handle, batch: _native.LeafBatch) -> list[np.ndarray]:
        """Each row's priors over its legal moves."""
        return [np.asarray(ev.priors) for ev in handle.result()]

    def apply(self, handle, trees: list[_native.Tree], batch: _native.LeafBatch) -> None:
        evaluations = handle.result()
        rows = batch.leaf_rows().tolist()
        for tree, node, row in zip(batch.leaf_trees().tolist(), batch.leaf_nodes().tolist(), rows):
            ev = evaluations[row]
            draw = math.nan if ev.wdl is None else float(ev.wdl[1])
            priors = np.ascontiguousarray(ev.priors, dtype=np.float64)
            trees[tree].apply_priors(node, priors, float(ev.value), draw)


def rows_for(evaluator: Evaluates) -> NetworkRows | EvaluationRows:
    """How the driver evaluates native batches with ``evaluator``."""
    if hasattr(evaluator, "submit_leaves"):
        return NetworkRows(evaluator)
    return EvaluationRows(evaluator)
