"""One self-play game: its starting point, its search tree, its training targets, its end."""

from __future__ import annotations

from dataclasses import dataclass

import chess
import numpy as np

from frugalzero.chess.positions import STANDARD, Opening, odds_opening
from frugalzero.chess.rules import game_end
from frugalzero.data.records import GameRecord, PlyTarget
from frugalzero.errors import UserError
from frugalzero.search.driver import new_tree
from frugalzero.selfplay.config import SelfPlayConfig
from frugalzero.selfplay.stats import FULL_SEARCHES, KL_PLIES, KL_SUM, PRIOR_FLOOR

RESIGNATION, ADJUDICATED = "resignation", "move limit"


@dataclass(frozen=True)
class GameStart:
    """Where game number ``index`` of a run starts."""

    index: int
    opening: Opening


def game_starts(config: SelfPlayConfig, count: int | None = None) -> list[GameStart]:
    """The start of every game of a run, fixed by the seed (workers share the list)."""
    from frugalzero.chess.positions import OpeningSampler, load_book

    count = config.games if count is None else count
    if config.openings and config.odds:
        raise UserError("--openings and --odds cannot be combined")
    if config.odds:
        givers = {"white": [chess.WHITE], "black": [chess.BLACK]}.get(
            config.odds_giver, [chess.WHITE, chess.BLACK]
        )
        return [
            GameStart(i, odds_opening(config.odds, givers[i % len(givers)])) for i in range(count)
        ]
    if config.openings:
        sampler = OpeningSampler(
            load_book(config.openings, config.openings_limit or None), seed=config.seed
        )
        return [GameStart(i, sampler.next()) for i in range(count)]
    return [GameStart(i, STANDARD) for i in range(count)]


class SelfPlayGame:
    """A game in progress. ``step()`` is called each time its tree finished a search.

    With playout-cap randomisation (``full_search_share`` < 1) each search is drawn full or
    fast from the game's generator before it starts (nothing is drawn when every search is
    full, so such games are the ones played before the option existed); only a full search's
    target is recorded."""

    def __init__(
        self, start: GameStart, config: SelfPlayConfig, net_id: str = "", run: str = ""
    ) -> None:
        self.start = start
        self.config = config
        self.net_id = net_id
        self.game_id = f"{run}s{config.seed}-g{start.index}"
        self.rng = np.random.default_rng([config.seed, start.index])
        cfg = config.search
        self.no_resign = bool(self.rng.random() < cfg.resign_disabled_share)
        self.tree = new_tree(start.opening.history(), cfg, rng=self.rng)
        self.moves: list[str] = list(start.opening.moves)
        self.targets: list[PlyTarget | None] = [None] * len(self.moves)
        self.plies = 0  # self-play plies (after the book moves): the temperature schedule's clock
        self.low = {chess.WHITE: 0, chess.BLACK: 0}  # consecutive searches below the threshold
        self.would_resign: chess.Color | None = None
        self.result: float | None = None
        self.termination = ""
        self.full_search = True  # the search in progress is a full one
        self.full_searches = 0
        self.kl_sum = 0.0  # root KL of the recorded targets (``selfplay.stats.policy_kl``)
        self.kl_plies = 0
        self._check_end()
        if not self.over:
            self._start_search()

    @property
    def over(self) -> bool:
        return self.result is not None

    def step(self) -> bool:
        """Record the finished search's target, resign or play its move; True while the game
        goes on (the next search is started)."""
        tree = self.tree
        turn = tree.turn
        searched = tree.training_target()
        if self._resigns(turn, searched.value, searched.q):
            self.result = -1.0 if turn == chess.WHITE else 1.0
            self.termination = RESIGNATION
            return False
        move = tree.choose_move(self.plies)
        if move is None:  # cannot happen with a searched, non-terminal root
            raise RuntimeError(f"no move in {tree.board.fen()}")
        if self.full_search:
            value = min(max(float(searched.value), -1.0), 1.0)
            self.targets.append(PlyTarget(searched.indices, searched.probs, search_value=value))
            self.kl_sum += tree.target_kl(PRIOR_FLOOR)  # policy_kl, in the core
            self.kl_plies += 1
        else:
            self.targets.append(None)
        self.moves.append(move.uci())
        self.plies += 1
        tree.advance(move)
        self._check_end()
        if self.over:
            return False
        self._start_search()
        return True

    def _start_search(self) -> None:
        """Start the next search, full or fast (playout-cap randomisation). A fast one has no
        root noise: nothing learns from it, it only finds the move to play (chosen at the
        schedule's temperature, as after a full one)."""
        share = self.config.full_search_share
        self.full_search = share >= 1.0 or bool(self.rng.random() < share)
        if self.full_search:
            self.full_searches += 1
            self.tree.start()
        else:
            self.tree.start(self.config.fast_simulations, noise=False)

    def _resigns(self, turn: chess.Color, value: float, q: np.ndarray) -> bool:
        cfg = self.config.search
        threshold = cfg.resign_threshold
        if threshold <= -1.0:
            return False
        best = np.fmax.reduce(q, initial=-np.inf)  # NaN (unvisited moves) ignored
        if best == -np.inf:  # no visited move
            best = value
        if value < threshold and best < threshold:
            self.low[turn] += 1
        else:
            self.low[turn] = 0
        if self.low[turn] < cfg.resign_plies:
            return False
        if self.no_resign:
            if self.would_resign is None:
                self.would_resign = turn
            return False
        return True

    def _check_end(self) -> None:
        ending, result = self.tree.ending()
        if ending is not None:
            self.result, self.termination = result, ending
        elif len(self.moves) >= self.config.max_plies:
            self.result, self.termination = 0.0, ADJUDICATED

    def record(self) -> GameRecord:
        """The finished game as a training record (provenance in ``extra``), its moves checked
        by python-chess first."""
        self._verify()
        would = self.would_resign
        return GameRecord(
            start_fen=self.start.opening.root_fen,
            moves=list(self.moves),
            targets=list(self.targets),
            result=self.result,
            method=self.config.method,
            net_id=self.net_id,
            game_id=self.game_id,
            extra={
                "termination": self.termination,
                "resign": "off" if self.no_resign else "on",
                "would_resign": "" if would is None else ("white" if would else "black"),
                "opening": self.start.opening.name,
                KL_SUM: repr(self.kl_sum),
                KL_PLIES: str(self.kl_plies),
                FULL_SEARCHES: str(self.full_searches),
            },
        )

    def _verify(self) -> None:
        """Replay the game with python-chess, the rules' reference: every move legal, and a
        game said to have ended by the rules ended there. A fault of the native core stops the
        run here instead of reaching a shard (RuntimeError, the worker's error path)."""
        board = chess.Board(self.start.opening.root_fen)
        for uci in self.moves:
            move = chess.Move.from_uci(uci)
            if not board.is_legal(move):
                raise RuntimeError(f"game {self.game_id}: illegal move {uci} in {board.fen()}")
            board.push(move)
        if self.termination not in (RESIGNATION, ADJUDICATED) and game_end(board) is None:
            raise RuntimeError(f"game {self.game_id}: {self.termination} not so in {board.fen()}")
