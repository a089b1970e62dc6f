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

import math
from collections.abc import Mapping, Sequence
from typing import Any

from frugalzero.experiment.spec import ExperimentSpec
from frugalzero.stats import (
    elo_sd,
    head_to_head,
    normal_cdf,
    paired_t,
    paired_t_p_value,
    two_sided,
)
from frugalzero.stats import minimum_detectable_effect as paired_mde

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
    best: each net's games against the anchors all decisive at an even score (a net far from
    every anchor is rated worse; draws make it better), two nets a difference."""
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


def mean_curve(seeds: Sequence[dict[str, Any]], confidence: float) -> list[dict[str, Any]]:
    """An arm's mean Elo at each checkpoint over the seeds rated there."""
    by_checkpoint: dict[float, list[dict[str, Any]]] = {}
    for seed in seeds:
        for kept in seed["kept"]:
            if kept.get("elo") is not None:
                by_checkpoint.setdefault(kept["checkpoint"], []).append(kept)
    curve = []
    for checkpoint in sorted(by_checkpoint):
        kept = by_checkpoint[checkpoint]
        mean, low, high = interval(
            [k["elo"] for k in kept], [k.get("sigma", 0.0) for k in kept], confidence
        )
        curve.append(
            {
                "checkpoint": checkpoint,
                "evaluations": round(sum(k["evaluations"] for k in kept) / len(kept)),
                "elo": round(mean, 1),
                "ci95": [round(low, 1), round(high, 1)],
                "seeds": len(kept),
            }
        )
    return curve


def _final(seed: dict[str, Any], checkpoint: float) -> dict[str, Any] | None:
    for kept in seed["kept"]:
        if kept["checkpoint"] == checkpoint and kept.get("elo") is not None:
            return kept
    return None


def _pairs(
    arm: dict[str, Any],
    base: dict[str, Any],
    checkpoint: float,
    confidence: float,
    head_to_head_games: Mapping[int, Sequence[int]],
) -> tuple[list[float], list[float], list[str]]:
    """Each seed pair's difference, its rating error and how it was measured."""
    base_by_seed = {s["seed"]: s for s in base["seeds"]}
    diffs, errors, measures = [], [], []
    for seed in arm["seeds"]:
        counts = head_to_head_games.get(seed["seed"])
        if counts is not None and sum(counts) > 0:
            match = head_to_head(counts, confidence)
            diffs.append(max(-ELO_CAP, min(ELO_CAP, match.elo)))
            errors.append(match.sigma)
            measures.append("head-to-head")
            continue
        other = base_by_seed.get(seed["seed"])
        a = _final(seed, checkpoint)
        b = _final(other, checkpoint) if other else None
        if a is None or b is None:
            continue
        diffs.append(a["elo"] - b["elo"])
        errors.append(math.hypot(a.get("sigma", 0.0), b.get("sigma", 0.0)))
        measures.append("anchors")
    return diffs, errors, measures


def compare(
    arm: dict[str, Any],
    base: dict[str, Any],
    checkpoint: float,
    confidence: float,
    seed_sd: float = 0.0,
    head_to_head_games: Mapping[int, Sequence[int]] | None = None,
) -> dict[str, Any]:
    """``arm`` against ``base`` at ``checkpoint``, on the seeds both have rated there (or whose
    final nets played each other: ``head_to_head_games`` maps a seed to the pentanomial counts
    of the arm's net against the baseline's, which then measure that pair instead). A single
    pair's interval adds the assumed ``seed_sd`` of both runs to its rating error."""
    diffs, errors, measures = _pairs(arm, base, checkpoint, confidence, head_to_head_games or {})
    out: dict[str, Any] = {"arm": arm["name"], "vs": base["name"], "checkpoint": checkpoint}
    out["pairs"] = len(diffs)
    if not diffs:
        return out | {"difference": None, "ci95": None, "conclusion": "not yet rated"}
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
    conclusion = "better" if low > 0 else "worse" if high < 0 else "inconclusive"
    rating_error = math.sqrt(rating_var)
    seed_part = None if spread is None else math.sqrt(max(spread**2 - rating_var, 0.0) / 2)
    return out | {
        "difference": round(mean, 1),
        "ci95": [round(low, 1), round(high, 1)],
        "differences": [round(d, 1) for d in diffs],
        "measured_by": measures,
        "conclusion": conclusion,
        "p_value": None if p_value is None else round(p_value, 4),
        "spread_sd": None if spread is None else round(spread, 1),
        "rating_error_sd": round(rating_error, 1) if math.isfinite(rating_error) else rating_error,
        "seed_sd": None if seed_part is None else round(seed_part, 1),
    }


RULE = (
    "difference of arm means at the final checkpoint from the paired seeds: Student's t on the "
    "pairs' differences at {pct:g}% (their spread holds the seed effects and each net's rating "
    "error; one pair: the rating error and the assumed seed spread, normal); 'inconclusive' "
    "when the interval contains 0"
)


def verdict(
    spec: ExperimentSpec,
    arms: list[dict[str, Any]],
    complete: bool,
    head_to_head_games: Mapping[str, Mapping[int, Sequence[int]]] | None = None,
) -> dict[str, Any]:
    """The decision rule applied to the arms as rated so far (``head_to_head_games``: by arm,
    the pentanomial counts of each seed's final net against the baseline's, where played)."""
    d = spec.decision
    final = spec.checkpoints()[-1]
    by_name = {a["name"]: a for a in arms}
    base = by_name[spec.baseline]
    rating_error = protocol_rating_error(spec)
    pairs = len(spec.seeds)
    mde = minimum_detectable_effect(pairs, d.seed_sd, d.confidence, d.power, rating_error)
    games = head_to_head_games or {}
    comparisons = [
        compare(a, base, final, d.confidence, d.seed_sd, games.get(a["name"]))
        for a in arms
        if a["name"] != spec.baseline
    ]
    unit = spec.budget.unit
    lines = []
    for c in comparisons:
        if c["difference"] is None:
            lines.append(f"{c['arm']} vs {c['vs']}: not yet rated at {final:,.0f} {unit}")
            continue
        low, high = c["ci95"]
        parts = f"rating error {c['rating_error_sd']:.0f} a pair"
        if c["seed_sd"] is not None:
            parts = f"seed s.d. {c['seed_sd']:.0f}, " + parts
        lines.append(
            f"{c['arm']} vs {c['vs']}: {c['difference']:+.0f} Elo [{low:+.0f}, {high:+.0f}] at "
            f"{final:,.0f} {unit} ({c['pairs']} seed pairs; {parts}): {c['conclusion']}"
        )
    mde_text = f"{mde:.0f} Elo" if mde is not None else "none (fewer than two seed pairs)"
    text = "; ".join(lines) + f"; minimum detectable effect {mde_text}"
    if not complete:
        text = "so far (the experiment is not finished): " + text
    return {
        "rule": RULE.format(pct=100 * d.confidence),
        "baseline": spec.baseline,
        "confidence": d.confidence,
        "mde_elo": None if mde is None else round(mde, 1),
        "seed_sd": d.seed_sd,
        "rating_error_sd": round(rating_error, 1),
        "power": d.power,
        "comparisons": comparisons,
        "text": text,
    }
