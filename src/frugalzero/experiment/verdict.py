"""The decision rule, as pure functions of the kept nets' ratings.

Seed k of every arm shares its initial net, openings and random streams, so arms are compared
through the paired differences d_k = Elo(arm, k) - Elo(baseline, k) at the final checkpoint
(or, where the two nets played each other, their head-to-head Elo). Each d_k carries both
sources of noise: the two runs' seed effects and the rating error of the two nets. Their
spread measures both at once, so the interval is the paired t on the differences alone (adding
the rating error on top of it counts that error twice: with four pairs such a rule rejected a
true difference of 0 in 0.6% of trials, not 5%). One pair has no spread: its interval is the
normal one of its rating error plus the seed spread the spec assumes, and it says so.

The minimum detectable effect, stated before running, is the true difference the rule declares
"better" with probability ``power``: the paired t's, solved on the noncentral t, for
differences of s.d. sqrt(2 seed_sd^2 + rating_error^2), where rating_error is the s.d. of one
difference's rating error (both nets), from the rating protocol's games. Each comparison
reports the two parts apart, as measured: the rating error of its differences (from the nets'
sigmas) and the seed s.d. their spread leaves once that is taken out.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from frugalzero.experiment.results import (
    ArmResult,
    Comparison,
    KeptNet,
    MeanPoint,
    UnitResult,
    Verdict,
)
from frugalzero.experiment.spec import ExperimentSpec
from frugalzero.stats import (
    elo_sd,
    normal_cdf,
    paired_t,
    paired_t_p_value,
    pairs_for_effect,
    two_sided,
)
from frugalzero.stats import minimum_detectable_effect as paired_mde

FOLLOW_UP_MDE = 50.0
"""The effect a follow-up is sized to find (issue 70's target for a comparison of data
methods): each comparison says how many pairs would reach it at the spread it measured."""

ELO_CAP = 1200.0
"""A perfect head-to-head score counts as this difference (fishtest's cap of a score at 0.1%)."""


def minimum_detectable_effect(
    pairs: int, seed_sd: float, confidence: float, power: float, rating_error: float = 0.0
):
    """The smallest true difference of arm means found (declared "better") with probability
    ``power`` by ``pairs`` seed pairs, each seed's Elo spread ``seed_sd`` and each difference's
    rating error ``rating_error``; None below two pairs (no t interval)."""
    return paired_mde(pairs, math.sqrt(2 * seed_sd**2 + rating_error**2), confidence, power)


def protocol_rating_error(spec: ExperimentSpec) -> float:
    """The s.d. of one paired difference's rating error that the rating protocol promises at
    best: games all decisive at an even score (draws make it better; a net far from every
    anchor is rated worse): the head-to-head match's games where the spec plays one, else each
    net's games against the anchors, two nets a difference."""
    if spec.rating.head_to_head:
        return elo_sd(spec.rating.head_to_head)
    games = spec.rating.games * len(spec.rating.anchors)
    return math.sqrt(2.0) * elo_sd(games)


def interval(values: Sequence[float], sigmas: Sequence[float], confidence: float):
    """(mean, low, high) of ``values`` whose own errors are ``sigmas``: Student's t on their
    spread, which holds those errors already; one value: the normal interval of its error."""
    n = len(values)
    if n == 1:
        half = two_sided(confidence) * sigmas[0]
        return values[0], values[0] - half, values[0] + half
    mean, low, high = paired_t(values, confidence)
    return float(mean), float(low), float(high)


def mean_curve(seeds: Sequence[UnitResult], confidence: float) -> list[MeanPoint]:
    """An arm's mean Elo at each checkpoint over the units rated there."""
    by_checkpoint: dict[float, list[KeptNet]] = {}
    for seed in seeds:
        for kept in seed.kept:
            if kept.rated:
                by_checkpoint.setdefault(kept.checkpoint, []).append(kept)
    curve = []
    for checkpoint in sorted(by_checkpoint):
        kept = by_checkpoint[checkpoint]
        mean, low, high = interval(
            [k.elo for k in kept], [k.sigma or 0.0 for k in kept], confidence
        )
        curve.append(
            MeanPoint(
                checkpoint=checkpoint,
                evaluations=round(sum(k.evaluations for k in kept) / len(kept)),
                elo=round(mean, 1),
                ci95=[round(low, 1), round(high, 1)],
                seeds=len(kept),
            )
        )
    return curve


def _pairs(
    arm: ArmResult,
    base: ArmResult,
    checkpoint: float,
    confidence: float,
    head_to_head_only: bool = False,
) -> tuple[list[float], list[float], list[str], list[str]]:
    """Each pair's difference, its rating error, how it was measured and its unit; a unit
    whose nets played each other (``UnitResult.head_to_head``) is measured by that match;
    ``head_to_head_only``: a pair whose nets have not played each other yet is left out (the
    spec measures differences that way)."""
    base_by_unit = {u.label: u for u in base.seeds}
    diffs, errors, measures, units = [], [], [], []
    for seed in arm.seeds:
        match = seed.head_to_head_match(confidence)
        if match is not None:
            diffs.append(max(-ELO_CAP, min(ELO_CAP, match.elo)))
            errors.append(match.sigma)
            measures.append("head-to-head")
            units.append(seed.label)
            continue
        other = base_by_unit.get(seed.label)
        a = seed.final(checkpoint)
        b = other.final(checkpoint) if other else None
        if a is None or b is None or head_to_head_only:
            continue
        diffs.append(a.elo - b.elo)
        errors.append(math.hypot(a.sigma or 0.0, b.sigma or 0.0))
        measures.append("anchors")
        units.append(seed.label)
    return diffs, errors, measures, units


def compare(
    arm: ArmResult,
    base: ArmResult,
    checkpoint: float,
    confidence: float,
    seed_sd: float = 0.0,
    head_to_head_only: bool = False,
    power: float = 0.8,
) -> Comparison:
    """``arm`` against ``base`` at ``checkpoint``, on the units both have rated there (or
    whose final nets played each other: the unit's ``head_to_head`` counts then measure that
    pair instead). A single pair's interval adds the assumed ``seed_sd`` of both runs to its
    rating error. Two pairs or more also size a follow-up at ``power`` from their measured
    spread."""
    diffs, errors, measures, units = _pairs(arm, base, checkpoint, confidence, head_to_head_only)
    out = Comparison(arm=arm.name, vs=base.name, checkpoint=checkpoint, pairs=len(diffs))
    if not diffs:
        return out
    n = len(diffs)
    rating_var = sum(e * e for e in errors) / n
    if n == 1:
        sd = math.sqrt(2 * seed_sd**2 + rating_var)
        mean, low, high = interval(diffs, [sd], confidence)
        p_value = 2 * normal_cdf(-abs(mean) / sd) if sd > 0 else None
        spread = None
    else:
        mean, low, high = interval(diffs, errors, confidence)
        spread = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
        p_value = paired_t_p_value(diffs)
    rating_error = math.sqrt(rating_var)
    seed_part = None if spread is None else math.sqrt(max(spread**2 - rating_var, 0.0) / 2)
    # sqrt(2 seed_part^2 + rating_var): the spread, floored at the rating error alone
    measured_sd = None if spread is None else max(spread, rating_error)
    if measured_sd is not None and not math.isfinite(measured_sd):
        measured_sd = None  # a pair without an error (a perfect score) sizes nothing
    mde_measured = None if measured_sd is None else paired_mde(n, measured_sd, confidence, power)
    return dataclasses.replace(
        out,
        difference=round(mean, 1),
        ci95=[round(low, 1), round(high, 1)],
        differences=[round(d, 1) for d in diffs],
        difference_errors=[round(e, 1) for e in errors],
        units=list(units),
        measured_by=measures,
        conclusion="better" if low > 0 else "worse" if high < 0 else "inconclusive",
        p_value=None if p_value is None else round(p_value, 4),
        spread_sd=None if spread is None else round(spread, 1),
        rating_error_sd=round(rating_error, 1) if math.isfinite(rating_error) else rating_error,
        seed_sd=None if seed_part is None else round(seed_part, 1),
        mde_measured=None if mde_measured is None else round(mde_measured, 1),
        follow_up_pairs=None
        if measured_sd is None
        else pairs_for_effect(FOLLOW_UP_MDE, measured_sd, confidence, power),
    )


RULE = (
    "difference of arm means at the final checkpoint from the paired seeds: Student's t on the "
    "pairs' differences at {pct:g}% (their spread holds the seed effects and each net's rating "
    "error; one pair: the rating error and the assumed seed spread, normal); 'inconclusive' "
    "when the interval contains 0"
)


def verdict(spec: ExperimentSpec, arms: Sequence[ArmResult], complete: bool) -> Verdict:
    """The decision rule applied to the arms as rated so far (a unit's differences measured by
    its head-to-head match where it has one)."""
    d = spec.decision
    final = spec.checkpoints()[-1]
    by_name = {a.name: a for a in arms}
    base = by_name[spec.baseline]
    rating_error = protocol_rating_error(spec)
    pairs = len(spec.units())
    mde = minimum_detectable_effect(pairs, d.seed_sd, d.confidence, d.power, rating_error)
    comparisons = [
        compare(
            a,
            base,
            final,
            d.confidence,
            d.seed_sd,
            head_to_head_only=bool(spec.rating.head_to_head),
            power=d.power,
        )
        for a in arms
        if a.name != spec.baseline
    ]
    unit = spec.budget.unit
    kind = "fork" if spec.fork.source else "seed"
    lines = []
    for c in comparisons:
        if c.difference is None or c.ci95 is None:
            lines.append(f"{c.arm} vs {c.vs}: not yet rated at {final:,.0f} {unit}")
            continue
        low, high = c.ci95
        parts = f"rating error {c.rating_error_sd:.0f} a pair"
        if c.seed_sd is not None:
            parts = f"seed s.d. {c.seed_sd:.0f}, " + parts
        lines.append(
            f"{c.arm} vs {c.vs}: {c.difference:+.0f} Elo [{low:+.0f}, {high:+.0f}] at "
            f"{final:,.0f} {unit} ({c.pairs} {kind} pairs; {parts}): {c.conclusion}"
        )
    mde_text = f"{mde:.0f} Elo" if mde is not None else f"none (fewer than two {kind} pairs)"
    text = "; ".join(lines) + f"; minimum detectable effect {mde_text}"
    if not complete:
        text = "so far (the experiment is not finished): " + text
    return Verdict(
        rule=RULE.format(pct=100 * d.confidence),
        baseline=spec.baseline,
        confidence=d.confidence,
        mde_elo=None if mde is None else round(mde, 1),
        seed_sd=d.seed_sd,
        rating_error_sd=round(rating_error, 1),
        power=d.power,
        follow_up_mde=FOLLOW_UP_MDE,
        comparisons=comparisons,
        text=text,
    )
