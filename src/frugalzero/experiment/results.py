"""An experiment's results as typed objects: what ``Experiment.results`` builds from the runs
and the ratings on disk, what the decision rule (``verdict``) reads, and what the page, the
summary table and the CLI show. ``experiment.json`` is their ``dataclasses.asdict``
(``ExperimentResult.to_json``); ``ExperimentResult.from_json`` reads one back, tolerating the
keys an older or half-written record lacks (their defaults) and ignoring keys it does not know,
so a page can always be drawn from a record.

No field holds a path of this machine: a run's folder is relative to the experiment's, a net's
to its run's, and a player is named by arm, unit and net.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass, field
from typing import Any, TypeVar

from frugalzero.output import plain, to_json

T = TypeVar("T")


@dataclass
class KeptNet:
    """A net an arm-unit kept for rating: the initial one, then the first iteration reaching
    each checkpoint of the budget."""

    checkpoint: float = 0
    """The budget's checkpoint it stands for, in the budget's unit (0: the initial net)."""
    iteration: int = 0
    net: str = ""
    """Its file, relative to its run's folder."""
    net_id: str = ""
    evaluations: int = 0
    """Network evaluations of generation spent when it was made (what it is drawn at)."""
    cpu_s: float = 0.0
    minutes: float = 0.0
    player: str = ""
    """The name its rating games carry ("" until it is rated)."""
    elo: float | None = None
    """Its Elo on the ladder's scale; None until rated."""
    ci95: list[float] | None = None
    sigma: float | None = None
    games: int = 0

    @property
    def rated(self) -> bool:
        return self.elo is not None


@dataclass
class Generation:
    """One iteration of an arm-unit's run: what it spent and made, and for self-play methods
    its games' statistics (docs/search.md)."""

    iteration: int = 0
    evaluations: int = 0
    """This iteration's own evaluations (not the run's running total)."""
    games: int = 0
    positions: int = 0
    selfplay: dict[str, Any] | None = None


@dataclass
class UnitResult:
    """One arm's run on one unit (a seed from nothing, or a fork of a shared state with a
    seed): what it spent, the nets it kept and, for an arm other than the baseline, the
    pentanomial counts of its final net against the baseline's of the same unit."""

    seed: int = 0
    unit: str = ""
    """``seed-K`` or ``fork-P-seed-K`` (``spec.Unit.label``); empty in older records."""
    fork_point: int = -1
    """The fork point it starts from (-1: none)."""
    dir: str = ""
    """Its run's folder, relative to the experiment's."""
    finished: bool = False
    iterations: int = 0
    evaluations: int = 0
    """Network evaluations of generation spent in all."""
    games: int = 0
    positions: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    kept: list[KeptNet] = field(default_factory=list)
    generations: list[Generation] = field(default_factory=list)
    head_to_head: list[int] | None = None
    """Pairs of games (one opening, colours swapped) in which this arm's final net scored 0,
    1/2, 1, 3/2 and 2 against the baseline's; None until that match is finished."""

    @property
    def label(self) -> str:
        """What pairs it with the baseline's run: its unit (older records: its seed)."""
        return self.unit or f"seed-{self.seed}"

    def final(self, checkpoint: float) -> KeptNet | None:
        """Its rated net at ``checkpoint``, if any."""
        return next((k for k in self.kept if k.checkpoint == checkpoint and k.rated), None)

    def last_rated(self) -> KeptNet | None:
        return next((k for k in reversed(self.kept) if k.rated), None)

    def head_to_head_match(self, confidence: float = 0.95):
        """The head-to-head statistics (``stats.HeadToHead``) of its counts; None before."""
        from frugalzero.stats import head_to_head

        counts = self.head_to_head
        if not counts or len(counts) != 5 or sum(counts) <= 0:
            return None
        return head_to_head(counts, confidence)


@dataclass
class MeanPoint:
    """An arm's mean Elo at one checkpoint, over the units rated there."""

    checkpoint: float = 0
    evaluations: int = 0
    """The mean evaluations its nets spent."""
    elo: float | None = None
    ci95: list[float] | None = None
    seeds: int = 0
    """How many units it averages."""


@dataclass
class ArmResult:
    name: str = ""
    description: str = ""
    method: str = ""
    method_label: str = ""
    seeds: list[UnitResult] = field(default_factory=list)
    """One a unit, in the spec's order (the key keeps its older name)."""
    mean: list[MeanPoint] = field(default_factory=list)

    def unit(self, label: str) -> UnitResult | None:
        return next((u for u in self.seeds if u.label == label), None)


@dataclass
class Comparison:
    """An arm against the baseline at the final checkpoint: one difference a unit (``units``,
    ``differences``, ``difference_errors`` (their s.d.), ``measured_by``: the same order),
    their mean with its interval, and the conclusion the rule draws."""

    arm: str = ""
    vs: str = ""
    checkpoint: float = 0
    pairs: int = 0
    difference: float | None = None
    ci95: list[float] | None = None
    differences: list[float] = field(default_factory=list)
    difference_errors: list[float] = field(default_factory=list)
    units: list[str | int] = field(default_factory=list)
    measured_by: list[str] = field(default_factory=list)
    """``head-to-head`` (the two nets played each other) or ``anchors`` (two ratings)."""
    conclusion: str = "not yet rated"
    """``better``, ``worse``, ``inconclusive`` or ``not yet rated``."""
    p_value: float | None = None
    spread_sd: float | None = None
    rating_error_sd: float | None = None
    seed_sd: float | None = None
    mde_measured: float | None = None
    """The minimum detectable effect of these pairs at the spread they measured: its seed part
    and their rating error (so a spread that fell below the rating error alone counts as that
    error)."""
    follow_up_pairs: int | None = None
    """The pairs a follow-up rated the same way needs for a minimum detectable effect of
    the verdict's ``follow_up_mde`` at that spread: the pilot's sizing."""

    def pair_rows(self) -> list[tuple[str, float, float | None, str]]:
        """(unit, difference, its s.d., how measured) a pair; an older record without the
        errors or the means gives None and "-" for them."""
        n = len(self.differences)
        errors = [*self.difference_errors, *[None] * n][:n]
        measures = [*self.measured_by, *["-"] * n][:n]
        units = [*(str(u) for u in self.units), *["-"] * n][:n]
        return list(zip(units, self.differences, errors, measures, strict=True))


@dataclass
class Verdict:
    """The decision rule applied to the arms as rated so far."""

    rule: str = ""
    baseline: str = ""
    confidence: float = 0.95
    mde_elo: float | None = None
    """The minimum detectable effect (None under two pairs)."""
    seed_sd: float | None = None
    rating_error_sd: float | None = None
    power: float = 0.8
    follow_up_mde: float | None = None
    """The effect each comparison's ``follow_up_pairs`` is sized to find."""
    comparisons: list[Comparison] = field(default_factory=list)
    text: str = ""


@dataclass
class ForkPoint:
    """A trunk checkpoint the forks start from: written once the trunk reaches it."""

    point: int = 0
    target: int = 0
    """The trunk evaluations the spec asked for."""
    iteration: int = 0
    """The first trunk iteration reaching it."""
    evaluations: int = 0
    """The trunk's evaluations by then."""
    net: str = ""
    net_id: str = ""
    data: list[str] = field(default_factory=list)
    """The trunk's data folders up to it, relative to the trunk's folder."""


@dataclass
class ForkResult:
    source: str = ""
    """'' (no fork), 'trunk', or a net's name."""
    trunk_arm: str = ""
    """The arm whose recipe runs the trunk ('' without one)."""
    trunk_seed: int = 0
    points: list[ForkPoint] = field(default_factory=list)


@dataclass
class BudgetResult:
    evaluations: int = 0
    cpu_seconds: float = 0.0
    minutes: float = 0.0
    unit: str = "evaluations"
    checkpoints: list[float] = field(default_factory=list)
    """The checkpoints in the budget's unit."""


@dataclass
class RatingResult:
    nodes: int = 0
    games: int = 0
    anchors: dict[str, float] = field(default_factory=dict)
    """Each anchor's ladder Elo, held fixed in the fit."""
    head_to_head: int = 0
    """Games of each arm's final net against the baseline's of its unit (0: none)."""


@dataclass
class ExperimentResult:
    """Everything ``experiment.json`` holds."""

    name: str = ""
    description: str = ""
    question: str = ""
    spec_sha256: str = ""
    spec: dict[str, Any] = field(default_factory=dict)
    presets_sha256: str = ""
    """A digest of the arms' presets' values as the experiment started (empty in older
    records): with the spec's, what a record's units were made by."""
    budget: BudgetResult = field(default_factory=BudgetResult)
    rating: RatingResult = field(default_factory=RatingResult)
    fork: ForkResult = field(default_factory=ForkResult)
    complete: bool = False
    arms: list[ArmResult] = field(default_factory=list)
    verdict: Verdict | None = None

    def arm(self, name: str) -> ArmResult | None:
        return next((a for a in self.arms if a.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        """As JSON has it (infinity as "inf"): what ``experiment.json`` reads back as."""
        return plain(dataclasses.asdict(self))

    def to_json(self) -> str:
        return to_json(dataclasses.asdict(self), indent=1) + "\n"

    @classmethod
    def from_json(cls, data: Any) -> ExperimentResult:
        """A record read back (its JSON text, or the object it parses to): missing keys take
        their defaults, unknown ones are ignored and a value of the wrong kind is replaced by
        its default, so an older or half-written record still gives a page."""
        if isinstance(data, str | bytes):
            import json

            try:
                data = json.loads(data)
            except ValueError:
                data = {}
        return _build(cls, data)


# -- reading a record back ----------------------------------------------------------------------
_MISSING = object()


def from_record(cls: type[T], data: Any) -> T:
    """The dataclass ``cls`` from a table read back from a file, as tolerant as
    ``ExperimentResult.from_json``."""
    return _build(cls, data)


def _build(cls: type, data: Any):
    """``cls`` from the table ``data`` (not a table: ``cls()``), field by field."""
    if not isinstance(data, dict):
        return cls()
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            value = _value(hints[f.name], data[f.name])
            if value is not _MISSING:
                kwargs[f.name] = value
    return cls(**kwargs)


def _value(hint: Any, value: Any) -> Any:
    """``value`` as the type ``hint`` says, or ``_MISSING`` (the field's default) when it is
    of another kind; "inf" and "-inf" (JSON's infinity, as ``output.plain`` writes it) are
    read as floats where a number is expected."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None:
            return None if type(None) in options else _MISSING
        for option in options:
            if option is type(None):
                continue
            out = _value(option, value)
            if out is not _MISSING:
                return out
        return _MISSING
    if hint is Any:
        return value
    if origin is list:
        if not isinstance(value, list):
            return _MISSING
        (item,) = typing.get_args(hint) or (Any,)
        out = [_value(item, v) for v in value]
        return _MISSING if any(v is _MISSING for v in out) else out
    if origin is dict:
        if not isinstance(value, dict):
            return _MISSING
        _, item = typing.get_args(hint) or (str, Any)
        out = {str(k): _value(item, v) for k, v in value.items()}
        return _MISSING if any(v is _MISSING for v in out.values()) else out
    if dataclasses.is_dataclass(hint):
        return _build(hint, value) if isinstance(value, dict) else _MISSING
    if hint is bool:
        return value if isinstance(value, bool) else _MISSING
    if hint in (int, float):
        if isinstance(value, bool):
            return _MISSING
        if hint is float and value in ("inf", "-inf"):
            return float(value)
        if isinstance(value, int) or (hint is float and isinstance(value, float)):
            return value
        if hint is int and isinstance(value, float) and math.isfinite(value):
            return value  # a number written as a float: kept as written
        return _MISSING
    if hint is str:
        return value if isinstance(value, str) else _MISSING
    return value
