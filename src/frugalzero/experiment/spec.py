"""An experiment's spec: a TOML file naming the arms, the paired seeds, the budget, how nets
are rated and the decision rule, all fixed before it runs (``docs/experiment.md``).

The spec is the experiment's identity: its canonical form (the parsed values, not the file's
comments or layout) is hashed when the experiment starts, and a resume with a spec that differs
is refused by its first differing key, so no result mixes two designs. The arms' presets are
part of it (``preset_tables``): an arm-seed started after a preset was edited would be another
recipe than one started before.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from frugalzero.config import bounded, check, from_dict, preset_path, read_toml
from frugalzero.errors import UserError
from frugalzero.output import to_json

SPECS = Path(__file__).resolve().parent.parent / "configs" / "experiments"


@dataclass
class ArmSpec:
    """One way of making data: a run preset with overrides."""

    name: str = ""
    """Short name (a folder name: letters, digits, '-', '_')."""
    description: str = ""
    """What the arm is, in a line (the page's legend)."""
    preset: str = "smoke"
    """The ``frugalzero run`` preset (or TOML file) the arm starts from."""
    method: str = ""
    """The run's ``--method``; empty = the preset's."""
    set: list[str] = field(default_factory=list)
    """Overrides of the preset, in ``--set key=value`` syntax."""

    def __post_init__(self) -> None:
        ok = bool(self.name) and all(c.isalnum() or c in "-_" for c in self.name)
        check(self, "arm", [(ok, f"name {self.name!r} must be letters, digits, '-' or '_'")])


@dataclass
class BudgetSpec:
    """What each arm-seed may spend; it stops at the first limit reached (0 = none)."""

    evaluations: int = bounded(0, 0, 10**15)
    """Network evaluations of generation per arm-seed (what self-play methods spend: one a
    simulation of their searches)."""
    cpu_seconds: float = bounded(0.0, 0, 10**12)
    """CPU seconds of this machine's processes per arm-seed (what Stockfish-labelled methods
    spend); counted per finished iteration."""
    minutes: float = bounded(0.0, 0, 10**9)
    """Wall-clock minutes per arm-seed (the run's own ``budget.minutes``, its last iteration
    cut to fit): what a comparison of GPU-hours spends."""
    checkpoints: list[float] = field(default_factory=lambda: [0.5, 1.0])
    """Fractions of the budget at which the net is kept and rated (the initial net always
    is): the first iteration reaching each one."""

    def __post_init__(self) -> None:
        points = self.checkpoints
        checks = [
            (
                sum(x > 0 for x in (self.evaluations, self.cpu_seconds, self.minutes)) == 1,
                "set one of evaluations, cpu_seconds and minutes",
            ),
            (bool(points) and all(0 < p <= 1 for p in points), "checkpoints must be in (0, 1]"),
            (points == sorted(set(points)), "checkpoints must increase"),
            (bool(points) and points[-1] == 1.0, "the last checkpoint must be 1.0"),
        ]
        check(self, "budget", checks)

    def amount(self) -> float:
        """The budget in its unit."""
        return float(self.evaluations or self.cpu_seconds or self.minutes)

    @property
    def unit(self) -> str:
        if self.evaluations:
            return "evaluations"
        return "CPU seconds" if self.cpu_seconds else "minutes"


@dataclass
class ForkSpec:
    """Where the arms start. Empty ``source``: each seed is a run of its own from fresh weights
    (the seeds' spread is then the runs' whole spread). Otherwise every arm is forked from a
    shared state, as KataGo tested changes: the checkpoints of a trunk run (``source =
    "trunk"``: the ``trunk_arm``'s recipe run from nothing, a fork taken at each of ``points``
    evaluations, with its net and its replay window) or a given net (``source = "small"``, a
    shipped net or a network file, with an empty window). Each fork is repeated with every
    seed (its own random streams); a fork's arms spend the same budget from the same net and
    window, and the verdict is over the forks."""

    source: str = ""
    """'' (no fork), 'trunk', or a network (a shipped net's name or a file)."""
    trunk_arm: str = ""
    """The arm whose recipe runs the trunk; empty = the baseline."""
    trunk_seed: int = bounded(0, 0, 2**32 - 1)
    """The trunk run's seed."""
    points: list[int] = field(default_factory=list)
    """Trunk evaluations at which forks start (the first iteration reaching each)."""

    def __post_init__(self) -> None:
        trunk = self.source == "trunk"
        checks = [
            (not trunk or bool(self.points), "a trunk needs points (its evaluations to fork at)"),
            (trunk or not self.points, "points are for source = 'trunk'"),
            (all(p > 0 for p in self.points), "points must be > 0"),
            (self.points == sorted(set(self.points)), "points must increase"),
            (trunk or not self.trunk_arm, "trunk_arm is for source = 'trunk'"),
        ]
        check(self, "fork", checks)


@dataclass(frozen=True)
class Unit:
    """One comparison's start, shared by every arm: seed ``seed`` from nothing, or fork point
    ``point`` (an index into ``fork.points``; 0 for a given net) with seed ``seed``."""

    seed: int
    point: int = -1
    """-1: no fork."""

    @property
    def label(self) -> str:
        """Its folder and name on the page: ``seed-K``, or ``fork-P-seed-K``."""
        return f"seed-{self.seed}" if self.point < 0 else f"fork-{self.point}-seed-{self.seed}"


@dataclass
class RatingSpec:
    """How every kept net is rated: the same plain-PUCT player (no noise, fixed nodes)
    against fixed anchors whose ratings come from the calibrated ladder."""

    nodes: int = bounded(100, 1, 10**8)
    """Search nodes per move of the rated nets."""
    games: int = bounded(40, 2, 10**6)
    """Games of each kept net against each anchor (opening pairs, colours swapped)."""
    anchors: list[str] = field(default_factory=lambda: ["random"])
    """Engine specs on the calibrated ladder (``frugalzero ladder --show``)."""
    opening_plies: int = bounded(8, 0, 400)
    """Random opening plies of every rating game (the same openings for every net)."""
    head_to_head: int = bounded(0, 0, 10**6)
    """Games of each arm's final net against the baseline's of the same seed or fork (opening
    pairs, colours swapped; 0 = none): the difference the verdict uses, far more precise than
    two ratings against anchors for the same games."""

    def __post_init__(self) -> None:
        checks = [
            (bool(self.anchors), "name at least one anchor"),
            (self.games % 2 == 0, "games must be even (opening pairs)"),
            (self.head_to_head % 2 == 0, "head_to_head must be even (opening pairs)"),
        ]
        check(self, "rating", checks)


@dataclass
class DecisionSpec:
    """The decision rule, written before the experiment runs."""

    baseline: str = ""
    """The arm every other arm is compared with; empty = the first arm."""
    confidence: float = bounded(0.95, 0.5, 0.999)
    """Of the interval of each difference of arm means."""
    seed_sd: float = bounded(120.0, 0, 10_000)
    """Assumed standard deviation of one seed's final Elo (the spread of earlier runs of one
    recipe); with the seeds and ``power`` it gives the minimum detectable effect."""
    power: float = bounded(0.8, 0.5, 0.999)
    """Power at which the minimum detectable effect is stated."""


@dataclass
class ExperimentSpec:
    """A paired, multi-seed comparison of data methods at equal compute."""

    name: str = ""
    """The experiment's name (its default folder: runs/experiments/NAME)."""
    description: str = ""
    question: str = ""
    """The question it answers, in a sentence (the page's headline)."""
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    """Seed k gives every arm the same initial net, run seed, openings and random streams."""
    set: list[str] = field(default_factory=list)
    """Overrides for every arm (before each arm's own)."""
    budget: BudgetSpec = field(default_factory=BudgetSpec)
    rating: RatingSpec = field(default_factory=RatingSpec)
    decision: DecisionSpec = field(default_factory=DecisionSpec)
    fork: ForkSpec = field(default_factory=ForkSpec)
    arm: list[ArmSpec] = field(default_factory=list)
    """The arms (``[[arm]]`` tables), at least two."""

    def __post_init__(self) -> None:
        names = [a.name for a in self.arm]
        checks = [
            (bool(self.name), "name the experiment"),
            (len(self.arm) >= 2, "an experiment compares at least two arms ([[arm]])"),
            (len(set(names)) == len(names), "arm names must differ"),
            (bool(self.seeds) and len(set(self.seeds)) == len(self.seeds), "seeds must differ"),
            (not self.decision.baseline or self.decision.baseline in names, "baseline: no arm"),
            (not self.fork.trunk_arm or self.fork.trunk_arm in names, "fork.trunk_arm: no arm"),
            (
                not self.fork.source or bool(self.budget.evaluations),
                "forks compare at equal evaluations: set budget.evaluations",
            ),
        ]
        check(self, "experiment", checks)

    @property
    def baseline(self) -> str:
        return self.decision.baseline or self.arm[0].name

    @property
    def trunk_arm(self) -> ArmSpec | None:
        """The arm whose recipe runs the trunk (None: no trunk)."""
        if self.fork.source != "trunk":
            return None
        name = self.fork.trunk_arm or self.baseline
        return next(a for a in self.arm if a.name == name)

    def units(self) -> list[Unit]:
        """What the arms are compared on: every seed, at every fork point."""
        if not self.fork.source:
            return [Unit(seed) for seed in self.seeds]
        points = range(len(self.fork.points)) if self.fork.source == "trunk" else [0]
        return [Unit(seed, point) for point in points for seed in self.seeds]

    def canonical(self) -> dict[str, Any]:
        return asdict(self)

    def sha256(self) -> str:
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def preset_tables(self) -> dict[str, dict[str, Any]]:
        """Each arm's preset, as the spec names it -> its parsed values (not its comments), as
        JSON reads them back from the experiment's state (infinity as "inf")."""
        out: dict[str, dict[str, Any]] = {}
        for arm in self.arm:
            if arm.preset in out:
                continue
            try:
                table = read_toml(preset_path(arm.preset)) if arm.preset else {}
            except UserError as exc:
                raise UserError(f"arm {arm.name}: preset: {exc}") from None
            out[arm.preset] = json.loads(to_json(table))
        return out

    def checkpoints(self) -> list[float]:
        """The budget's checkpoints in its unit."""
        total = self.budget.amount()
        if self.budget.minutes:
            return [round(p * total, 3) for p in self.budget.checkpoints]
        return [math.ceil(p * total) for p in self.budget.checkpoints]


def spec_path(name: str) -> Path:
    """A spec file, or a spec shipped in configs/experiments/ by name."""
    path = Path(name)
    if path.is_file():
        return path
    shipped = SPECS / f"{name}.toml"
    if shipped.is_file():
        return shipped
    known = ", ".join(sorted(p.stem for p in SPECS.glob("*.toml")))
    raise UserError(f"{name}: no such experiment spec (a TOML file, or one of: {known})")


def load_spec(name: str) -> ExperimentSpec:
    path = spec_path(name)
    return from_dict(ExperimentSpec, read_toml(path), str(path))
