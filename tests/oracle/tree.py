"""The Python search tree: PUCT MCTS with virtual loss, search-contempt, Gumbel root search, an
MCTS-solver for proven results, and reuse of the subtree of the move played.

It was the product's search until the native core (``native/search``) replaced it; the core is
a transcription of this file, operation for operation. It stays here, frozen at the features
it had then, as the tests' oracle: ``tests/test_search_native.py`` plays both in lockstep and
compares whole trees. Nothing in ``src/`` imports it.

The tree never calls the network itself. ``gather`` walks down to leaves and returns those that
need an evaluation (each with its ``NetInput``); ``apply`` expands a leaf with the evaluation
and backs its value up. Terminal leaves and proven nodes are backed up inside ``gather`` at no
network cost. ``oracle.driver`` batches the leaves of many trees into one evaluator call, as
the product's driver does for native trees.

Edge statistics live on the parent, from its side-to-move view: priors P (NumPy, and as a list),
visits N, value sums W and means Q (Python lists). Selection reads them one element at a time
and only where the answer can be: the children visited so far, and the unvisited child with the
highest prior, which is the best unvisited one (they all share the first-play value).
``puct.puct_scores``, the formula's reference, picks the same child, ties included.

Each node keeps its board, its 104-byte frame and its repetition count, so a leaf's
input is built from the tree without replaying the game.

Nodes link only downwards. A walk carries its path (the nodes from the root to the leaf's
parent), and a leaf waiting for the network keeps that path until its value is backed up. So a
discarded subtree has no cycles and reference counting frees it the moment it is dropped.
"""

from __future__ import annotations

import math

import chess
import numpy as np

from frugalzero.chess.encoding import board_frame, board_meta
from frugalzero.chess.history import GameHistory, NetInput, pad_frames, position_key
from frugalzero.chess.moves import moves_to_indices
from frugalzero.chess.rules import game_ending, leaf_status
from frugalzero.search import gumbel as gm
from frugalzero.search.config import SearchConfig
from frugalzero.search.draws import Draws, contempt_seed
from frugalzero.search.native import follow_game
from frugalzero.search.puct import (
    c_puct,
    choose_by_visits,
    dirichlet_mix,
    fpu_value,
    temper_priors,
)
from frugalzero.search.types import RootLine, SearchResult, SearchTarget
from frugalzero.selfplay.stats import policy_kl

NEW, PENDING, EXPANDED, TERMINAL = 0, 1, 2, 3
_NEG_INF = -math.inf
# walks a gather() may spend backing up terminal or proven nodes before it hands control back:
# where every walk ends in one (a single legal move into a repetition draw), an unbounded search
# would otherwise never return to the caller that checks the clock (native: the same number)
IDLE_WALKS = 1024


class Node:
    """A position in the tree. Edge arrays are indexed like ``moves`` (legal moves only)."""

    __slots__ = (
        "board",
        "path",
        "slot",
        "key",
        "frame",
        "reps",
        "state",
        "moves",
        "indices",
        "P",
        "Pl",
        "raw",
        "order",
        "unvisited_at",
        "visited",
        "N",
        "W",
        "Q",
        "children",
        "n",
        "w",
        "value",
        "draw",
        "visited_p",
        "proven",
        "plies",
        "block",
        "frozen",
        "frozen_base",
        "frozen_gen",
        "logits",
        "inp",
    )

    def __init__(self, board: chess.Board, slot: int) -> None:
        self.board = board
        self.path: list[Node] | None = None  # while pending: the nodes from the root down
        self.slot = slot  # index in the parent's edge arrays
        self.state = NEW
        self.n = 0  # simulations through this node, its own evaluation included
        self.w = 0.0  # sum of their values, this node's side-to-move view
        self.value = 0.0  # the network's (or the terminal) value
        self.draw = None  # the network's draw probability (WDL heads only)
        self.proven = 0  # +1 proven win / -1 proven loss for the side to move here
        self.plies = 0  # plies to the end of the game when proven
        self.block = None  # -inf at children proven to lose for this side (or None)
        self.frozen = None  # search-contempt: cumulative frozen distribution
        self.frozen_base = None
        self.frozen_gen = -1
        self.logits = None
        self.inp = None
        self.children = None

    @property
    def q(self) -> float:
        """Mean value of this node for its side to move (proven nodes: exactly +-1)."""
        if self.proven:
            return float(self.proven)
        return self.w / self.n if self.n else self.value


class SearchTree:
    """Search state of one game; ``advance(move)`` keeps the played move's subtree and
    ``follow(game)`` catches up with the moves a game played since."""

    def __init__(
        self,
        history: GameHistory | chess.Board | None = None,
        config: SearchConfig | None = None,
        rng: np.random.Generator | None = None,
        seed: int | None = None,
    ) -> None:
        self.config = config or SearchConfig()
        self.rng = rng if rng is not None else np.random.default_rng(seed)
        self._draws = Draws(contempt_seed(self.rng))  # search-contempt's samples
        self.generation = 0  # one per search: frozen distributions belong to one search
        self.in_flight = 0  # leaves handed out and not yet applied
        self._collided: list[list[Node]] = []  # paths of walks that met a pending leaf
        self._begin(history if history is not None else chess.Board())

    # -- public API ---------------------------------------------------------------------------
    @property
    def board(self) -> chess.Board:
        """The root position (with the game's move stack)."""
        return self.history.board

    @property
    def turn(self) -> chess.Color:
        """The side to move at the root."""
        return self.history.board.turn

    def ending(self) -> tuple[str | None, float | None]:
        """How the game has ended at the root (``chess.rules.game_ending``): (ending or None,
        the result from White's view)."""
        return game_ending(self.history.board, self.history.repetitions)

    def start(self, simulations: int | None = None, moves: list[chess.Move] | None = None) -> None:
        """Begin a search of ``simulations`` more simulations (None: the config's; 0 or
        ``math.inf``: until stopped) from the current root. With ``moves`` this search visits
        only those root moves (the others are blocked until the next ``start``; moves that are
        not legal here are ignored, and if none is, every move is searched). A root proven
        before the search is not searched again, whatever ``moves`` says."""
        if self.in_flight:
            raise RuntimeError("start() while leaves are still being evaluated")
        if simulations is None:
            simulations = self.config.simulations
        self._only = list(moves) if moves else None
        self.target = math.inf if simulations in (0, math.inf) else int(simulations)
        self.started = 0
        self.max_depth = 0
        self.generation += 1
        self._prepared = False
        self._gumbel = None

    @property
    def finished(self) -> bool:
        """True when the current search is complete (budget spent, or root proven or over)."""
        if self.in_flight:
            return False
        root = self.root
        if root.state == TERMINAL or (root.proven and root.state == EXPANDED):
            return True
        if root.state == EXPANDED and self._allowed_all_blocked():
            return True
        return root.state == EXPANDED and self.started >= self.target

    def gather(self, limit: int | None = None) -> list[Node]:
        """Walk to at most ``limit`` leaves (default ``leaves_per_gather``) that need the
        network; each returned node has its input in ``node.inp``. Terminal and proven leaves
        are backed up right here."""
        limit = limit or self.config.leaves_per_gather
        root = self.root
        if root.state != EXPANDED:
            if root.state == NEW:
                root.state = PENDING
                self.in_flight += 1
                return [root]
            return []
        if not self._prepared:
            self._prepare_root()
        out: list[Node] = []
        collided = self._collided
        allowed = self.config.collisions
        restricted = self._allowed is not None
        idle = 0
        while len(out) < limit and self.started < self.target and not root.proven:
            if restricted and self._allowed_all_blocked():
                break  # every allowed move is proven lost: nothing left to search
            leaf = self._descend()
            if leaf is None:  # walked into a leaf that is still being evaluated
                if len(collided) > allowed:
                    break
            elif leaf.state == PENDING:
                out.append(leaf)
            else:  # a terminal or proven node, backed up already
                idle += 1
                if idle >= IDLE_WALKS:
                    break
        for path in collided:  # their virtual visits have steered the walks; take them back
            self._undo(path)
        collided.clear()
        self.in_flight += len(out)
        return out

    def apply(self, node: Node, evaluation) -> None:
        """Expand ``node`` with the network's priors and value, then back the value up."""
        self.in_flight -= 1
        node.inp = None
        priors = temper_priors(
            np.asarray(evaluation.priors, dtype=np.float64), self.config.policy_temperature
        )
        # kept in the network's precision, float32, as the native core keeps them
        priors = priors.astype(np.float32).astype(np.float64)
        n = len(priors)
        node.raw = priors
        _set_priors(node, priors)
        node.N = [0.0] * n
        node.W = [0.0] * n
        node.Q = [0.0] * n
        node.visited = []
        node.children = [None] * n
        node.visited_p = 0.0
        node.value = value = float(evaluation.value)
        if evaluation.wdl is not None:
            node.draw = float(evaluation.wdl[1])
        node.state = EXPANDED
        path = node.path
        if path is None:  # the root
            node.n = 1
            node.w = value
            return
        node.path = None
        self._backup(node, value, path)

    def advance(self, move: chess.Move) -> None:
        """Play ``move``: keep its subtree (``reuse_tree``) and make it the root."""
        if self.in_flight:
            raise RuntimeError("advance() while leaves are still being evaluated")
        root = self.root
        child = None
        if root.state == EXPANDED and self.config.reuse_tree:
            try:
                child = root.children[root.moves.index(move)]
            except ValueError:
                raise ValueError(f"illegal move {move.uci()} in {self.board.fen()}") from None
        elif not self.board.is_legal(move):
            raise ValueError(f"illegal move {move.uci()} in {self.board.fen()}")
        self.history.push(move)
        keep = child if child is not None and child.state == EXPANDED else None
        self._new_root(keep)

    def follow(self, game: GameHistory | chess.Board) -> bool:
        """Bring the root to ``game``'s position. A game that continues this tree's (the same
        start, this tree's moves first) is followed move by move with ``advance``, so the
        subtree of the position reached is kept: True. Any other game starts the tree afresh
        from ``game``: False."""
        board = self.board
        return follow_game(self, board.move_stack, board.root(), game)

    def close(self) -> None:
        """Free the tree's nodes now, even while something still holds the tree."""
        self.root.children = None

    def leader(self) -> tuple[chess.Move | None, float]:
        """The most visited root move (the first of equals) and its lead in visits over the
        runner-up (infinite for an only move): what a time manager watches after every batch,
        far cheaper than a whole ``result()``."""
        root = self.root
        if root.state != EXPANDED:
            return None, 0.0
        visits = np.asarray(root.N)
        if len(visits) == 1:
            return root.moves[0], math.inf
        first = int(np.argmax(visits))
        second = np.delete(visits, first).max()
        return root.moves[first], float(visits[first] - second)

    def result(self, lines: int = 1) -> SearchResult:
        """The search's outcome (mid-search: a snapshot of it so far), with the ``lines`` best
        root moves as ``RootLine``s."""
        root = self.root
        moves: list[chess.Move] = []
        visits = q = policy = np.zeros(0)
        indices, probs = np.zeros(0, np.int64), np.zeros(0, np.float32)
        best = None
        pv = self._pv()
        root_lines: list[RootLine] = []
        if root.state == EXPANDED:
            moves = list(root.moves)
            visits = np.array(root.N)
            q = np.where(visits > 0, root.Q, np.nan)
            for slot, child in enumerate(root.children):
                if child is not None and child.proven:
                    q[slot] = -child.proven
            policy = self._policy()
            keep = policy > 0
            indices = root.indices[keep].astype(np.int64)
            probs = policy[keep].astype(np.float32)
            probs /= probs.sum(dtype=np.float32)
            slot = self._best_slot()
            best = None if slot is None else moves[slot]
            root_lines = self._lines(lines, q, pv)
        return SearchResult(
            moves=moves,
            visits=visits,
            q=q,
            policy=policy,
            target_indices=indices,
            target_probs=probs,
            value=root.q,
            best_move=best,
            pv=pv,
            mate_in=root.proven * root.plies if root.proven and root.state != TERMINAL else None,
            nodes=root.n,
            depth=self.max_depth,
            simulations=self.started,
            lines=root_lines,
        )

    def training_target(self) -> SearchTarget:
        """What self-play records of the search (part of ``result()``)."""
        r = self.result(lines=0)
        return SearchTarget(r.target_indices, r.target_probs, r.value, r.q)

    def root_priors(self) -> tuple[np.ndarray, np.ndarray]:
        """``NativeTree.root_priors``: the root's policy indices and the network's priors (at
        the policy temperature) before noise; empty before the root is expanded. Read-only, so
        self-play's statistics can run on the oracle too."""
        root = self.root
        if root.state != EXPANDED:
            return np.zeros(0, np.int64), np.zeros(0)
        return root.indices.astype(np.int64), np.asarray(root.raw)

    def target_kl(self, floor: float) -> float:
        """``NativeTree.target_kl``: the definition itself, ``policy_kl`` of the training
        target against the root's priors."""
        target = self.training_target()
        return policy_kl(target.indices, target.probs, *self.root_priors(), floor=floor)

    def choose_move(
        self, ply: int | None = None, temperature: float | None = None
    ) -> chess.Move | None:
        """The move to play: sampled from the visits at the schedule's temperature for ``ply``
        (counted from the game's start; ``temperature`` instead of the schedule: UCI's option),
        never a move proven to lose; at temperature 0 the result's ``best_move``. Gumbel plays
        the action sequential halving selected (its noise already made the choice stochastic)."""
        root = self.root
        if root.state != EXPANDED:
            return None
        cfg = self.config
        if ply is None:
            ply = len(self.history.board.move_stack)
        tau = cfg.move_temperature(ply) if temperature is None else temperature
        if cfg.gumbel or root.proven or tau <= 0:
            best = self._best_slot()
            return None if best is None else root.moves[best]
        visits = np.array(root.N)
        if root.block is not None and np.isfinite(root.block).any():
            visits[~np.isfinite(root.block)] = 0.0  # never sample a move proven to lose
        return root.moves[choose_by_visits(visits, tau, self.rng)]

    # -- internals ----------------------------------------------------------------------------
    def _begin(self, game: GameHistory | chess.Board) -> None:
        """A new tree at ``game``'s position."""
        self.history = game.copy() if isinstance(game, GameHistory) else GameHistory.of_board(game)
        self._new_root(None)

    def _new_root(self, node: Node | None) -> None:
        """Make ``node`` (a kept subtree) or a new node for the history's position the root;
        no search is running on it yet."""
        self.target: float = 0  # simulations of the current search
        self._only: list[chess.Move] | None = None  # the root moves this search may visit
        self._allowed: np.ndarray | None = None  # ... as a mask over the root's moves, once set
        self.started = 0  # simulations begun in the current search
        self.max_depth = 0  # deepest leaf of the current search
        self._gumbel: _GumbelRoot | None = None
        self._prepared = False
        history = self.history
        before = history.frames()  # newest first: the root's frame, then earlier positions
        self._pre_root = before[1:]
        if node is None:
            board = history.board.copy(stack=False)
            node = Node(board, -1)
            node.key = position_key(board)
            node.reps = history.repetitions
            node.frame = before[0]
            moves = list(board.legal_moves)  # only mate and stalemate leave nothing to search
            if not moves:
                node.state = TERMINAL
                node.value = -1.0 if board.is_check() else 0.0
            else:
                node.moves = moves
                node.indices = moves_to_indices(moves, board.turn)
                node.inp = NetInput(pad_frames(before), board_meta(board), moves, node.indices)
        else:
            node.slot = -1
            _set_priors(node, node.raw)
            node.visited_p = float(node.P[np.asarray(node.N) > 0].sum())
        self.root = node

    def _prepare_root(self) -> None:
        """Per-search root setup: fresh Dirichlet noise or Gumbel sampling."""
        self._prepared = True
        cfg, root = self.config, self.root
        _set_priors(root, root.raw)
        self._restrict_root()
        if root.proven:  # nothing will be searched: no noise drawn
            pass
        elif cfg.gumbel:
            self._gumbel = _GumbelRoot(root, cfg, self.rng, self.target, self._allowed)
        elif cfg.root_noise and len(root.moves) > 1:
            noisy = dirichlet_mix(root.raw, cfg.dirichlet_alpha, cfg.dirichlet_epsilon, self.rng)
            _set_priors(root, noisy)
        root.visited_p = float(root.P[np.asarray(root.N) > 0].sum())

    def _restrict_root(self) -> None:
        """Block the root moves this search may not visit (``start(moves=...)``), on top of
        the proofs' blocks; the previous search's restriction is lifted first."""
        root = self.root
        if self._allowed is not None:
            root.block = _proof_block(root)
            self._allowed = None
        if self._only is None:
            return
        allowed = np.array([move in self._only for move in root.moves])
        if not allowed.any() or allowed.all():
            return
        block = root.block if root.block is not None else np.zeros(len(root.moves))
        block[~allowed] = _NEG_INF
        root.block = block
        self._allowed = allowed

    def _allowed_all_blocked(self) -> bool:
        """A restricted search whose every allowed root move is proven lost."""
        block = self.root.block
        return self._allowed is not None and block is not None and not np.isfinite(block).any()

    def _descend(self) -> Node | None:
        """One simulation's walk down. Returns the new leaf (PENDING), a node already backed up
        (terminal or proven), or None on hitting a leaf that is still being evaluated."""
        cfg = self.config
        root = self.root
        node = root
        depth = 0
        vl = cfg.virtual_loss
        nscl = cfg.nscl
        gumbel = cfg.gumbel
        c_init, c_base = cfg.c_init, cfg.c_base
        fpu_mode, fpu_setting = cfg.fpu_mode, cfg.fpu_value
        path: list[Node] = []  # the nodes walked through, root first
        while True:
            state = node.state
            if state != EXPANDED or (node.proven and node is not root):
                if state == PENDING:  # gather() takes the virtual visits back later
                    path.append(node)
                    self._collided.append(path)
                    return None
                self.started += 1
                value = node.value if state == TERMINAL else float(node.proven)
                self._backup(node, value, path)
                return node
            N = node.N
            if depth & 1 and node.n > nscl and self._frozen_ready(node):
                total = node.frozen[-1]
                slot = int(np.searchsorted(node.frozen, self._draws.uniform() * total, "right"))
            elif gumbel:
                if node is root:
                    slot = self._gumbel.select(root, cfg)
                else:
                    policy = self._improved_policy(node)
                    slot = gm.interior_select(policy, np.asarray(N), node.block)
            else:
                n = node.n
                fpu = fpu_value(fpu_mode, fpu_setting, node.w / n, node.visited_p)
                slot = _puct_slot(node, c_puct(n, c_init, c_base) * math.sqrt(n), fpu)
            # virtual visit: counts at once, the value when the evaluation comes back
            if N[slot] == 0:
                node.visited_p += node.P[slot]
                node.visited.append(slot)
            n_edge = N[slot] + 1.0
            N[slot] = n_edge
            W = node.W
            w_edge = W[slot] - vl
            W[slot] = w_edge
            node.Q[slot] = w_edge / n_edge
            node.n += 1
            path.append(node)
            child = node.children[slot]
            depth += 1
            if child is None:
                child = self._make_child(path, slot)
                node.children[slot] = child
                if depth > self.max_depth:
                    self.max_depth = depth
                self.started += 1
                if child.state == TERMINAL:
                    self._backup(child, child.value, path)
                else:
                    child.path = path
                return child
            node = child

    def _make_child(self, path: list[Node], slot: int) -> Node:
        """The new leaf at ``slot`` of ``path[-1]``; ``path`` runs from the root down."""
        cfg = self.config
        parent = path[-1]
        board = parent.board.copy(stack=False)
        board.push(parent.moves[slot])
        node = Node(board, slot)
        key = position_key(board)
        node.key = key
        reps = 0
        clock = board.halfmove_clock
        if clock >= 4:  # a repetition needs at least four reversible plies
            reps = self.history.count(key)  # the root's and the game's positions
            # the tree's positions with the same side to move, below the root
            for distance in range(2, min(clock, len(path) - 1) + 1, 2):
                if path[-distance].key == key:
                    reps += 1
        node.reps = reps
        frame = board_frame(board, reps)
        node.frame = frame
        ending, value, moves = leaf_status(board, reps, cfg.draw_repetitions, cfg.fifty_move_draw)
        if ending is not None:
            node.state = TERMINAL
            node.value = value
            if value < 0 and cfg.solver:
                node.proven = -1
            return node
        node.state = PENDING
        node.moves = moves
        indices = moves_to_indices(moves, board.turn)
        node.indices = indices
        frames = [frame]
        frames.extend(anc.frame for anc in reversed(path[-7:]))
        if len(frames) < 8:
            frames.extend(self._pre_root[: 8 - len(frames)])
        node.inp = NetInput(pad_frames(frames), board_meta(board), moves, indices)
        return node

    def _backup(self, node: Node, value: float, path: list[Node]) -> None:
        """Back ``value`` (for the side to move at ``node``) up ``path`` to the root, flipping
        the sign every ply, replacing the virtual loss, and propagating proofs."""
        vl = self.config.virtual_loss
        solver = self.config.solver
        node.n += 1
        node.w += value
        proof = solver and node.proven != 0
        child = node
        for parent in reversed(path):
            value = -value
            slot = child.slot
            w_edge = parent.W[slot] + value + vl
            parent.W[slot] = w_edge
            parent.Q[slot] = w_edge / parent.N[slot]
            if proof:
                proof = _update_proof(parent, slot, child)
                if proof:
                    value = float(parent.proven)
            parent.w += value
            child = parent

    def _undo(self, path: list[Node]) -> None:
        """Take back the virtual visits of a walk that ended at a pending leaf (``path``: the
        root down to that leaf)."""
        vl = self.config.virtual_loss
        child = path[-1]
        gumbel = self._gumbel
        for parent in reversed(path[:-1]):
            slot = child.slot
            n_edge = parent.N[slot] - 1.0
            parent.N[slot] = n_edge
            w_edge = parent.W[slot] + vl
            parent.W[slot] = w_edge
            parent.Q[slot] = w_edge / n_edge if n_edge > 0 else 0.0
            if n_edge == 0:
                parent.visited_p -= parent.P[slot]
                parent.visited.remove(slot)
                parent.unvisited_at = 0  # the slot may precede the scan's position
            parent.n -= 1
            if parent is self.root and gumbel is not None:
                gumbel.unselect(slot)
            child = parent

    def _frozen_ready(self, node: Node) -> bool:
        """search-contempt: freeze the node's visited-children distribution once per search."""
        if node.frozen_gen == self.generation:
            return True
        base = np.array(node.N)
        total = base.sum()
        if total <= 0:
            return False
        node.frozen_base = base
        node.frozen = np.cumsum(base)
        node.frozen_gen = self.generation
        return True

    def _improved_policy(self, node: Node) -> np.ndarray:
        """Gumbel's pi' at an expanded node: the root's policy target, the interior's prior."""
        cfg = self.config
        if node.logits is None:
            node.logits = gm.logits_from_priors(node.raw)
        return gm.improved_policy(
            node.logits,
            node.value,
            node.raw,
            np.asarray(node.N),
            np.asarray(node.Q),
            cfg.c_visit,
            cfg.c_scale,
            cfg.gumbel_rescale,
        )

    def _policy(self) -> np.ndarray:
        """The policy target over the (expanded) root's moves."""
        root = self.root
        if self.config.gumbel:
            return self._improved_policy(root)
        visits = np.array(root.N)
        total = visits.sum()
        if total <= 0:
            return root.P.copy()
        return visits / total

    def _pv(self, node: Node | None = None, limit: int = 64) -> list[chess.Move]:
        """Principal variation from ``node`` (the root): proven-best or most-visited child, down
        the tree."""
        line: list[chess.Move] = []
        node = self.root if node is None else node
        while node.state == EXPANDED and len(line) < limit:
            slot = _best_child(node)
            if slot is None:
                break
            line.append(node.moves[slot])
            node = node.children[slot]
            if node is None:
                break
        return line

    def _lines(self, count: int, q: np.ndarray, pv: list[chess.Move]) -> list[RootLine]:
        """The ``count`` best root moves of the (expanded) root as lines; ``q`` and ``pv`` are
        the result's."""
        root = self.root
        best = self._best_slot()
        if best is None or count < 1:
            return []
        slots = [best]
        if count > 1:
            slots += [s for s in _ranked_slots(root, self._allowed) if s != best][: count - 1]
        lines = []
        for slot in slots:
            move, child = root.moves[slot], root.children[slot]
            if pv and pv[0] == move:
                line = pv
            else:
                line = [move] + (self._pv(child, 63) if child is not None else [])
            mate = None
            draw = None
            if child is not None:
                mate = -child.proven * (child.plies + 1) if child.proven else None
                draw = child.draw if not child.proven and child.state == EXPANDED else None
            lines.append(RootLine(move, float(root.N[slot]), float(q[slot]), mate, draw, line))
        return lines

    def _best_slot(self) -> int | None:
        root = self.root
        if root.state != EXPANDED:
            return None
        winning = _winning_slot(root)
        if winning is not None:
            return winning
        if self._allowed_all_blocked():  # every allowed move loses: the longest resistance
            return _ranked_slots(root, self._allowed)[0]
        if self._gumbel is not None and self.started > 0:
            return self._gumbel.final(root, self.config)
        return _best_child(root)


class _GumbelRoot:
    """Per-search Gumbel state of the root: noise, the top-m actions, the halving schedule."""

    def __init__(
        self,
        root: Node,
        cfg: SearchConfig,
        rng: np.random.Generator,
        budget: float,
        allowed: np.ndarray | None = None,
    ) -> None:
        n = len(root.moves)
        if root.logits is None:
            root.logits = gm.logits_from_priors(root.raw)
        self.g = rng.gumbel(size=n) if cfg.gumbel_noise else np.zeros(n)
        self.base = self.g + root.logits
        eligible, candidates = self.base, n
        if allowed is not None:  # a restricted search samples among its moves only
            eligible, candidates = np.where(allowed, self.base, _NEG_INF), int(allowed.sum())
        self.m = min(cfg.gumbel_m, candidates)
        self.considered = np.zeros(n, dtype=bool)
        self.considered[gm.top_k(eligible, self.m)] = True
        sims = int(budget) if math.isfinite(budget) else cfg.simulations
        self.schedule = gm.considered_visits(self.m, max(sims, 1))
        self.counts = np.zeros(n)  # visits in this search
        self.k = 0

    def scores(self, root: Node, cfg: SearchConfig) -> np.ndarray:
        visits = np.asarray(root.N)
        q_hat = gm.completed_q(root.value, root.raw, visits, np.asarray(root.Q), cfg.gumbel_rescale)
        scores = self.base + gm.sigma(q_hat, float(visits.max()), cfg.c_visit, cfg.c_scale)
        scores[~self.considered] = _NEG_INF
        if root.block is not None:
            blocked = scores + root.block
            if np.isfinite(blocked).any():
                scores = blocked
        return scores

    def select(self, root: Node, cfg: SearchConfig) -> int:
        scores = self.scores(root, cfg)
        if self.k < len(self.schedule):
            wanted = self.schedule[self.k]
        else:  # past the budget (an unbounded search): keep halving between the best two
            best_two = np.argsort(-scores)[:2]
            wanted = self.counts[best_two].min()
        mask = (self.counts == wanted) & np.isfinite(scores)
        if not mask.any():
            finite = np.isfinite(scores)
            mask = finite & (self.counts == self.counts[finite].min())
        slot = int(np.where(mask, scores, _NEG_INF).argmax())
        self.counts[slot] += 1
        self.k += 1
        return slot

    def unselect(self, slot: int) -> None:
        self.counts[slot] -= 1
        self.k -= 1

    def final(self, root: Node, cfg: SearchConfig) -> int:
        """The action sequential halving chose: best score among the most visited considered."""
        scores = self.scores(root, cfg)
        finite = np.isfinite(scores)
        most = self.counts[finite].max()
        return int(np.where(finite & (self.counts == most), scores, _NEG_INF).argmax())


def _set_priors(node: Node, priors: np.ndarray) -> None:
    """The priors selection uses (the raw ones, or the root's noisy ones)."""
    node.P = priors
    node.Pl = None  # the priors as a list and the slots by prior, highest first: made at the
    node.order = None  # first selection (half the leaves never get one)
    node.unvisited_at = 0


def _puct_slot(node: Node, cs: float, fpu: float) -> int:
    """The child maximising Q + cs * P / (1 + N) (``fpu`` as the Q of unvisited children),
    the lowest slot on ties: ``argmax(puct_scores(...) + block)`` without scoring them all."""
    P = node.Pl
    if P is None:
        P = node.Pl = node.P.tolist()
        node.order = np.argsort(-node.P, kind="stable").tolist()
    N, Q = node.N, node.Q
    block = node.block
    if block is not None:  # proven children or a restricted root: the full scan
        best, slot = _NEG_INF, 0
        for s, edge_block in enumerate(block.tolist()):
            if edge_block == 0.0:
                visits = N[s]
                score = P[s] * cs / (visits + 1.0) + (Q[s] if visits > 0 else fpu)
                if score > best:
                    best, slot = score, s
        return slot
    order = node.order
    i, count = node.unvisited_at, len(order)
    while i < count and N[order[i]] > 0:
        i += 1
    node.unvisited_at = i
    if i < count:
        slot = order[i]
        best = P[slot] * cs / 1.0 + fpu
    else:
        slot, best = count, _NEG_INF
    for s in node.visited:
        score = P[s] * cs / (N[s] + 1.0) + Q[s]
        if score > best or (score == best and s < slot):
            best, slot = score, s
    return slot


def _update_proof(parent: Node, slot: int, child: Node) -> bool:
    """MCTS-solver step after ``child`` (at ``slot``) got proven; True if ``parent`` now is."""
    if parent.proven:
        return False
    if child.proven < 0:  # the move mates / wins: the parent is won
        parent.proven = 1
        parent.plies = child.plies + 1
        return True
    if parent.block is None:
        parent.block = np.zeros(len(parent.moves))
    parent.block[slot] = _NEG_INF
    children = parent.children
    if all(c is not None and c.proven > 0 for c in children):
        parent.proven = -1
        parent.plies = max(c.plies for c in children) + 1
        return True
    return False


def _winning_slot(node: Node) -> int | None:
    """The proven win with the fewest plies, if the node is proven won (and that move is not
    blocked by a restricted search)."""
    if node.proven <= 0 or node.children is None:
        return None
    best, best_plies = None, math.inf
    block = node.block
    for slot, child in enumerate(node.children):
        if child is not None and child.proven < 0 and child.plies < best_plies:
            if block is None or block[slot] == 0:
                best, best_plies = slot, child.plies
    return best


def _proof_block(node: Node) -> np.ndarray | None:
    """The blocks the solver alone puts on ``node``'s moves: -inf at children proven to win
    for the opponent (None when there is none)."""
    lost = [c is not None and c.proven > 0 for c in node.children or []]
    return np.where(lost, _NEG_INF, 0.0) if any(lost) else None


def _ranked_slots(node: Node, allowed: np.ndarray | None) -> list[int]:
    """The slots of an expanded node, best first: proven wins (fastest first), then by visits
    (ties: higher Q; unvisited ones by prior), then proven losses (longest first). Only the
    ``allowed`` ones when a search is restricted."""
    ranked = []
    for slot, child in enumerate(node.children):
        if allowed is not None and not allowed[slot]:
            continue
        proven = child.proven if child is not None else 0
        plies = child.plies if child is not None else 0
        group = 0 if proven < 0 else 2 if proven > 0 else 1
        order = plies if proven < 0 else -plies if proven > 0 else -node.N[slot]
        tie = -node.Q[slot] if node.N[slot] else -node.P[slot]
        ranked.append((group, float(order), float(tie), slot))
    return [entry[-1] for entry in sorted(ranked)]


def _best_child(node: Node) -> int | None:
    """Most visited child (ties: higher Q), proven wins first, proven losses last (and the
    longest of them when everything loses)."""
    if node.children is None or not len(node.moves):
        return None
    winning = _winning_slot(node)
    if winning is not None:
        return winning
    visits = np.asarray(node.N)
    if node.block is not None and np.isfinite(node.block).any():
        visits = np.where(np.isfinite(node.block), visits, -1.0)
    elif node.proven < 0:  # every move loses: resist longest
        plies = [c.plies if c is not None else -1 for c in node.children]
        return int(np.argmax(plies))
    best = visits.max()
    if best <= 0:  # nothing visited: the highest prior that is not blocked
        return int(np.argmax(np.where(visits < 0, -1.0, node.P))) if node.P is not None else 0
    candidates = np.flatnonzero(visits == best)
    if len(candidates) == 1:
        return int(candidates[0])
    return int(candidates[np.argmax(np.asarray(node.Q)[candidates])])
