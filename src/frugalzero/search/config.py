"""Every knob of the search, with the papers' defaults."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar, Literal

from frugalzero.config import bounded, check
from frugalzero.search.puct import temperature_for_ply


@dataclass
class SearchConfig:
    """PUCT MCTS (AlphaZero), search-contempt and Gumbel root search; how moves are chosen."""

    # keys an older config may hold: the one value that still means what it meant (dropped by
    # ``frugalzero.config.from_dict``, so an old run's config.toml loads) and why any other
    # is refused; not a field, so no flag, no docs, never written back
    REMOVED: ClassVar[dict[str, tuple[object, str]]] = {
        "core": (
            "native",
            "the native core is the only search; the Python tree is now the tests' oracle",
        ),
    }
    simulations: int = bounded(800, 1, 10**9)
    """Simulations per move (leaf evaluations or terminal visits; the root's own evaluation is
    not counted). AlphaZero used 800."""
    c_init: float = 1.25
    """c(s) = c_init + log((N(s) + c_base + 1) / c_base): exploration at low visit counts."""
    c_base: float = 19652.0
    """Visit count over which exploration grows logarithmically (AlphaZero: 19652)."""
    fpu_mode: Literal["reduction", "absolute"] = "reduction"
    """First-play urgency, the Q of an unvisited child: 'reduction' = the parent's Q minus
    fpu_value * sqrt(prior mass of visited children) (Leela's rule), 'absolute' = fpu_value."""
    fpu_value: float = 0.25
    """The reduction (fpu_mode 'reduction') or the absolute Q in [-1, 1] ('absolute'; -1 treats
    unvisited moves as losses, as AlphaZero did)."""
    policy_temperature: float = 1.0
    """Softmax temperature of the network's policy before it becomes the priors: P ** (1 / T),
    renormalised. 1 = the policy as it is (AlphaZero, and self-play here); > 1 widens the
    search (lc0's PolicySoftmaxTemp). Play (matches, UCI) uses PLAY_POLICY_TEMPERATURE. The raw
    policy's best move (1 node) does not change."""
    root_noise: bool = True
    """Dirichlet noise on the root priors (self-play); turn off to play matches."""
    dirichlet_alpha: float = 0.3
    """Concentration of the root noise (AlphaZero chess: 0.3); drawn over legal moves only."""
    dirichlet_epsilon: float = 0.25
    """Share of the noise in the root priors: P = (1 - eps) * p + eps * Dir(alpha)."""
    nscl: float = math.inf
    """search-contempt: at the opponent's nodes (odd depth) with more than nscl visits, freeze
    the visit distribution of their visited children and sample from it; inf = plain PUCT."""
    gumbel: bool = False
    """Gumbel root search (Danihelka et al. 2022) instead of PUCT with noise at the root."""
    gumbel_m: int = 16
    """Root actions sampled without replacement by Gumbel-top-k (sequential halving over them)."""
    gumbel_noise: bool = True
    """Draw Gumbel noise at the root (self-play); off = deterministic, for matches."""
    c_visit: float = 50.0
    """sigma(q) = (c_visit + max_b N(b)) * c_scale * q (paper: 50)."""
    c_scale: float = 1.0
    """See c_visit (paper: 1.0)."""
    gumbel_rescale: bool = False
    """Min-max rescale completed Q over a node's moves before sigma (as DeepMind's mctx does);
    off = the paper's fixed map of [-1, 1] to [0, 1]."""
    virtual_loss: float = 1.0
    """Value subtracted per pending visit, so one tree can gather several different leaves."""
    leaves_per_gather: int = 1
    """Leaves one tree contributes to one evaluator batch: 1 when many games share a batch,
    more (8-32) when a single game must fill the batch alone."""
    collisions: int = 0
    """Walks into a leaf that is still being evaluated that one gather absorbs before it
    stops: their virtual visits stay until the gather ends, steering the next walks to other
    leaves, so a single game fills larger batches. 0 = stop at the first (many games share a
    batch, and self-play's trees stay exactly as before)."""
    temperature: float = 1.0
    """Move choice temperature for the opening plies: visits ** (1 / tau) (1 = proportional)."""
    temperature_plies: int = 30
    """Plies (from the start of the game) played at ``temperature``; AlphaZero: 30."""
    final_temperature: float = 0.0
    """Temperature after that; 0 = the most-visited move."""
    temperature_decay_plies: int = 0
    """> 0: within ``temperature_plies`` the temperature falls linearly from ``temperature`` at
    ply 0 toward 0 at this ply, never below ``final_temperature`` (lc0's TempDecayMoves with
    TempEndgame, counted in plies); 0 = constant."""
    draw_repetitions: int = 3
    """Occurrences of a position that end the game in search as a draw: 3 = threefold (the
    claimable draw), 2 = any repetition (Leela's shortcut)."""
    fifty_move_draw: bool = True
    """A position with 100 plies without capture or pawn move is a draw in search (claimable)."""
    solver: bool = True
    """Propagate proven wins and losses (MCTS-solver) so a found mate is played."""
    reuse_tree: bool = True
    """Keep the subtree of the move played for the next search."""
    resign_threshold: float = -0.95
    """Resign when the root value (side to move) and the best move's Q are below this; -1 or
    lower never resigns."""
    resign_plies: int = 2
    """Consecutive own moves below the threshold before resigning."""
    resign_disabled_share: float = 0.1
    """Share of self-play games that never resign, to measure false resignations."""

    def __post_init__(self) -> None:
        checks = [
            (self.simulations >= 1, "simulations must be at least 1"),
            (self.c_base > 0, "c_base must be positive"),
            (self.policy_temperature > 0, "policy_temperature must be positive"),
            (self.dirichlet_alpha > 0, "dirichlet_alpha must be positive"),
            (0 <= self.dirichlet_epsilon <= 1, "dirichlet_epsilon must be in [0, 1]"),
            (self.nscl >= 0, "nscl must be >= 0 (inf = off)"),
            (self.gumbel_m >= 1, "gumbel_m must be at least 1"),
            (self.leaves_per_gather >= 1, "leaves_per_gather must be at least 1"),
            (self.collisions >= 0, "collisions must be >= 0"),
            (self.virtual_loss >= 0, "virtual_loss must be >= 0"),
            (self.temperature >= 0 and self.final_temperature >= 0, "temperatures must be >= 0"),
            (self.temperature_decay_plies >= 0, "temperature_decay_plies must be >= 0"),
            (self.draw_repetitions in (2, 3), "draw_repetitions must be 2 or 3"),
            (0 <= self.resign_disabled_share <= 1, "resign_disabled_share must be in [0, 1]"),
        ]
        check(self, "search", checks)

    def move_temperature(self, ply: int) -> float:
        """The move-choice temperature at ``ply`` (counted from the game's start)."""
        return temperature_for_ply(
            ply,
            self.temperature,
            self.temperature_plies,
            self.final_temperature,
            self.temperature_decay_plies,
        )

    def for_play(self) -> SearchConfig:
        """The same search for playing matches: no root noise, no Gumbel noise, the best move
        at every ply (temperature 0), no resignation, the priors at the play temperature."""
        return dataclasses.replace(self, **PLAY_SETTINGS)


PLAY_POLICY_TEMPERATURE = 1.6
"""The policy temperature our nets play with. The stage-1 net at 400 nodes found Stockfish's
depth-12 move on the held-out suite 37.2% of the time at 1.0, 38.3% at 1.4, 38.8% at 1.8 and
37.7% at 2.4 (benchmarks/play_temperature.sh); head to head, 1.6 scored +30 =2 -24 against 1.0
(benchmarks/RESULTS.md, "The search's settings for play")."""

PLAY_LEAVES = 16
"""Leaves one tree gathers for a batch when playing, and the collisions a gather absorbs: a
single game (UCI) fills its batches by itself, and a match plays the same search at any number
of games at once, so a rating is the strength of what a GUI gets. At 400 nodes the shipped net
found Stockfish's depth-12 move on the held-out suite 42.2% of the time at 8 leaves, 41.6% at
16 and 39.0% at 32 (benchmarks/RESULTS.md, "The search's settings for play"): within noise of
8, while a CPU runs batches of 16 twice as fast."""

PLAY_SETTINGS: dict[str, float | bool] = {
    "leaves_per_gather": PLAY_LEAVES,
    "collisions": PLAY_LEAVES,
    "root_noise": False,
    "gumbel_noise": False,
    "temperature": 0.0,
    "temperature_plies": 0,
    "final_temperature": 0.0,
    "resign_threshold": -2.0,  # below any value: never resigns (the GUI or match adjudicates)
    "policy_temperature": PLAY_POLICY_TEMPERATURE,
}
"""The one play profile: what playing (matches, the ladder, UCI) changes in a search config:
batches of one game's leaves, best play, no exploration noise."""

PYTHON_ONLY: dict[str, str] = {
    "dirichlet_alpha": "the root's Dirichlet noise is drawn in Python (NativeTree.start)",
    "temperature": "the move is chosen in Python (NativeTree.choose_move)",
    "temperature_plies": "the move is chosen in Python (NativeTree.choose_move)",
    "final_temperature": "the move is chosen in Python (NativeTree.choose_move)",
    "temperature_decay_plies": "the move is chosen in Python (NativeTree.choose_move)",
    "resign_threshold": "resigning is self-play's rule, read off the search's result",
    "resign_plies": "resigning is self-play's rule, read off the search's result",
    "resign_disabled_share": "resigning is self-play's rule, read off the search's result",
}
"""The SearchConfig fields the native core never sees, each with why. Every other field is
copied into the core's ``SearchParams`` (``frugalzero.search.native.search_params``);
tests/test_search_seam.py fails when a field is in neither, or in both."""
