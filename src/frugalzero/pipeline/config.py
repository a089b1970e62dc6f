"""The config of ``frugalzero run``: every part's own config, plus what the loop itself needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from frugalzero.config import bounded, check
from frugalzero.evaluate.adjudicate import AdjudicationConfig
from frugalzero.evaluate.gating import GateConfig
from frugalzero.expert.explore import ExploreConfig
from frugalzero.expert.sfgames import SfGamesConfig
from frugalzero.nn.config import EvaluatorConfig
from frugalzero.selfplay.config import SelfPlayConfig
from frugalzero.train.config import TrainConfig

SEED_MAX = 2**32 - 1
"""A run's seed and its net's: NumPy takes no negative seed, and what the generators and matches
derive from it (``seed * 1_000_003 + ...``, ``seed * 7919 * 100_003``) must stay an int64."""

Method = Literal["selfplay", "contempt", "gumbel", "eps-explore", "sfgames", "pgn"]


@dataclass
class BudgetConfig:
    """When the run stops: whichever limit is reached first (0 = no limit of that kind). A
    started iteration is always finished (with ``minutes``, cut to fit: see ``fit``)."""

    iterations: int = bounded(10, 0, 100_000)
    """Generate-train-evaluate iterations."""
    minutes: float = bounded(0.0, 0, 10_000_000)
    """Wall-clock minutes of the whole run (resumed runs count their earlier sessions)."""
    positions: int = bounded(0, 0, 10**12)
    """Training positions generated."""
    evaluations: int = bounded(0, 0, 10**15)
    """Network evaluations of generation (self-play methods: the simulations their searches
    ran, one leaf each): the budget that compares self-play methods at equal compute
    (``frugalzero experiment``). Checked between iterations, like every limit here."""
    fit: bool = True
    """With ``minutes``: cut the last iteration's games and training steps to what fits in the
    minutes left (measured on the finished iterations), and any iteration's training to the
    steps that fit (timed on its first 100, and again every eighth of the phase), so the run
    ends near its budget instead of up to an iteration past it; false = every iteration whole."""
    fill: bool = False
    """With ``minutes`` and ``fit``: the last iteration's training (the last of
    ``iterations``, or one cut to fit) also grows past its steps to the steps that fit the
    minutes left, its cosine stretched over them, so a machine faster than the preset planned
    for trains for the whole budget instead of finishing early."""
    anneal: Literal["iteration", "budget"] = "iteration"
    """With a cosine rate: 'iteration' anneals every iteration from the peak rate, 'budget' once
    over ``minutes`` (each step's rate set by the minutes elapsed, so only the last iterations
    train at a low rate): for methods whose data does not come from the net (sfgames, pgn). On
    the cpu-1h hour it lost to 'iteration' (benchmarks/RESULTS.md)."""

    def __post_init__(self) -> None:
        limits = (self.iterations, self.minutes, self.positions, self.evaluations)
        checks = [
            (min(limits) >= 0, "limits must be >= 0"),
            (any(limits), "set iterations, minutes, positions or evaluations (all are 0)"),
            (self.anneal == "iteration" or self.minutes > 0, "anneal 'budget' needs minutes"),
            (not self.fill or (self.minutes > 0 and self.fit), "fill needs minutes and fit"),
        ]
        check(self, "budget", checks)


@dataclass
class NetSection:
    """The network being trained."""

    arch: str = "small"
    """A named size of nn.config.ARCHITECTURES (docs/network.md lists them with their cost;
    an unknown name's error lists them too)."""
    value_head: Literal["scalar", "wdl"] = "scalar"
    """'scalar' (tanh) or 'wdl' (win/draw/loss logits)."""
    history_fill: Literal["always", "fen_only", "no"] = "always"
    """What a fresh net sees for missing history steps (a FEN, a game's first plies): 'always'
    the oldest known position repeated, 'fen_only' the same except in games from the start
    position, 'no' empty steps (lc0's HistoryFill). A net given by ``init`` keeps its own."""
    init: str = ""
    """Start from this network file or shipped net ('default', 'small'); empty = fresh weights."""
    seed: int = bounded(0, 0, SEED_MAX)
    """Seed of the initial weights."""

    def __post_init__(self) -> None:
        from frugalzero.nn.config import ARCHITECTURES  # no torch: config show stays instant

        known = f"{self.arch!r} is not one of {', '.join(ARCHITECTURES)}"
        check(self, "net", [(self.arch in ARCHITECTURES, f"arch {known}")])


@dataclass
class GenerateSection:
    """How much data each iteration makes, and what training sees."""

    games: int = bounded(200, 0, 10_000_000)
    """Games per iteration for selfplay, contempt, gumbel and sfgames."""
    steps: int = bounded(2000, 0, 100_000_000)
    """Exploration steps (labelled playouts) per iteration for eps-explore."""
    pgn: list[str] = field(default_factory=list)
    """PGN files of the pgn method (imported once, in the first iteration)."""
    pgn_min_elo: int = bounded(0, 0, 4000)
    """pgn method: keep games whose players are both rated at least this."""
    window: int = bounded(1_000_000, 0, 10**11)
    """Replay window: training reads the newest this many positions."""
    nscl_raise: float = 0.0
    """contempt: when an iteration's (w+l)/d falls below 1, multiply N_scl by this (0 = fixed;
    the search-contempt paper raises N_scl as games get drawish)."""
    temperature_raise: float = 0.0
    """selfplay: when an iteration's (w+l)/d falls below 1, multiply the move temperature
    (search.temperature) by this (0 = fixed): PUCT made as decisive as search-contempt's
    adapted N_scl keeps its games, the control that tells "more decisive games" from "an
    asymmetric search" (``frugalzero experiment``, configs/experiments/pilot-trunk.toml)."""
    max_temperature: float = bounded(4.0, 0, 100)
    """The most ``temperature_raise`` raises the move temperature to."""
    openings: str = ""
    """Opening book (EPD or PGN) for every generator; empty = each generator's default."""
    prior: list[str] = field(default_factory=list)
    """Folders of shards the replay window holds before the run's own data (a fork's: its
    trunk's data up to the fork, ``frugalzero experiment``); read, never written."""

    def __post_init__(self) -> None:
        checks = [
            (min(self.games, self.steps, self.pgn_min_elo) >= 0, "counts must be >= 0"),
            (self.window >= 0, "window must be >= 0"),
            (self.nscl_raise >= 0, "nscl_raise must be >= 0 (0 = fixed)"),
            (self.temperature_raise >= 0, "temperature_raise must be >= 0 (0 = fixed)"),
        ]
        check(self, "generate", checks)


@dataclass
class EvaluationSection:
    """The matches after each iteration: a rating per iteration and the gating decision."""

    nodes: int = bounded(100, 1, 100_000_000)
    """Search nodes per move of our nets in these matches."""
    games_vs_random: int = bounded(20, 0, 1_000_000)
    """Games against the random mover each iteration (anchor of the Elo scale)."""
    games_vs_best: int = bounded(20, 0, 1_000_000)
    """Games of the new net against the current best (also the gating match)."""
    final_games: int = bounded(40, 0, 1_000_000)
    """After the last iteration: games of the final net against random and against the first
    iteration's net."""
    concurrency: int = bounded(0, 0, 4096)
    """Games at once; 0 = one per core."""
    noise_plies: int = bounded(8, 0, 400)
    """Random opening plies of every evaluation game (paired, colours swapped)."""
    anchor_elo: float = 0.0
    """Rating of 'random' on the Elo scale of elo.csv; 0 = the calibrated ladder's."""
    gate: GateConfig = field(default_factory=GateConfig)
    """How a new net replaces the best: 'always' (AlphaZero), 'threshold', 'sprt'."""
    adjudication: AdjudicationConfig = field(default_factory=AdjudicationConfig)
    """When evaluation games stop early."""

    def __post_init__(self) -> None:
        counts = ("games_vs_random", "games_vs_best", "final_games", "concurrency")
        checks = [(getattr(self, n) >= 0, f"{n} must be >= 0") for n in counts]
        checks.append((self.nodes >= 1, "nodes must be >= 1 (our nets search in every match)"))
        check(self, "evaluation", [*checks, (self.noise_plies >= 0, "noise_plies must be >= 0")])


@dataclass
class RunConfig:
    """Everything ``frugalzero run`` does; saved as config.toml in the run directory."""

    method: Method = "selfplay"
    """Data method: selfplay (PUCT + noise + temperature), contempt (search-contempt), gumbel,
    eps-explore (network explores, Stockfish labels), sfgames (Stockfish games), pgn."""
    seed: int = bounded(0, 0, SEED_MAX)
    """Seed of the run; each iteration's generators derive theirs from it."""
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    """When to stop."""
    net: NetSection = field(default_factory=NetSection)
    """The network."""
    generate: GenerateSection = field(default_factory=GenerateSection)
    """Data per iteration."""
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    """Self-play settings (selfplay, contempt, gumbel); its ``games`` is set per iteration."""
    explore: ExploreConfig = field(default_factory=ExploreConfig)
    """eps-explore settings."""
    sfgames: SfGamesConfig = field(default_factory=SfGamesConfig)
    """sfgames settings."""
    train: TrainConfig = field(default_factory=TrainConfig)
    """Training, once per iteration."""
    evaluation: EvaluationSection = field(default_factory=EvaluationSection)
    """Matches after each iteration."""
    evaluator: EvaluatorConfig = field(default_factory=EvaluatorConfig)
    """How the network runs in evaluation matches."""
    ray: str = ""
    """Where generation runs; '' = this machine's process pool, 'local' = a Ray
    runtime here, 'HOST:6379' = the Ray cluster of that head (training stays here)."""

    def __post_init__(self) -> None:
        from frugalzero.data.methods import BY_NAME

        row = BY_NAME.get(self.method)  # an unknown name: ``check`` names the field
        pgn = (
            row is None or row.generator != "pgn" or bool(self.generate.pgn),
            "method pgn needs generate.pgn",
        )
        counted = (
            row is None or not self.budget.evaluations or row.counts_evaluations,
            f"budget.evaluations: method {self.method} spends no network evaluations it counts "
            "(a budget in evaluations is for self-play methods; use minutes or iterations)",
        )
        check(self, "run", [pgn, counted])
