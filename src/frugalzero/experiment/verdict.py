"""The decision rule, as pure functions of the kept nets' ratings.

Seed k of every arm shares its initial net, openings and random streams, so arms are compared
through the paired differences d_k = Elo(arm, k) - Elo(baseline, k) at the final checkpoint.
Their interval is Student's t on the pairs, its variance the pairs' spread plus the rating
error of each net (var(d)/n + mean(sigma_arm^2 + sigma_base^2)/n): both are real sources of
noise, and with the two or three seeds a pilot affords, var(d) alone is too rough an estimate
to trust by itself. One pair has no spread to measure: its interval is the rating error's,
and it says so. The minimum detectable effect, stated before running, is the difference the
design finds with probability ``power``: (t_{1-alpha/2} + t_{power}) * seed_sd * sqrt(2 / n).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from frugalzero.experiment.spec import ExperimentSpec


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (Lentz's method)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for num in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(log_front + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t (bisection on the CDF; a normal's for df = inf)."""
    if math.isinf(df):
        return math.sqrt(2.0) * _erfinv(2.0 * p - 1.0)
    low, high = -1e4, 1e4
    for _ in range(200):
        mid = (low + high) / 2.0
        if t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2.0


def _erfinv(y: float) -> float:
    """Inverse error function by Newton's method (enough for interval quantiles)."""
    x = 0.0
    for _ in range(100):
        step = (math.erf(x) - y) / (2.0 / math.sqrt(math.pi) * math.exp(-x * x))
        x -= step
        if abs(step) < 1e-14:
            break
    return x


def minimum_detectable_effect(pairs: int, seed_sd: float, confidence: float, power: float):
    """The smallest true difference of arm means found with probability ``power`` by ``pairs``
    seed pairs, each seed's Elo spread ``seed_sd``; None below two pairs (no t interval)."""
    if pairs < 2:
        return None
    df = pairs - 1
    t = t_quantile(1 - (1 - confidence) / 2, df) + t_quantile(power, df)
    return t * seed_sd * math.sqrt(2.0 / pairs)


def interval(values: Sequence[float], sigmas: Sequence[float], confidence: float):
    """(mean, low, high) of ``values`` whose own errors are ``sigmas``: Student's t on their
    spread plus their mean error variance; one value: the normal interval of its own error."""
    n = len(values)
    mean = sum(values) / n
    rating_var = sum(s * s for s in sigmas) / n
    if n == 1:
        half = t_quantile(1 - (1 - confidence) / 2, math.inf) * math.sqrt(rating_var)
    else:
        spread = sum((v - mean) ** 2 for v in values) / (n - 1)
        se = math.sqrt((spread + rating_var) / n)
        half = t_quantile(1 - (1 - confidence) / 2, n - 1) * se
    return mean, mean - half, mean + half


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


def compare(
    arm: dict[str, Any], base: dict[str, Any], checkpoint: float, confidence: float
) -> dict[str, Any]:
    """``arm`` against ``base`` at ``checkpoint``, on the seeds both have rated there."""
    base_by_seed = {s["seed"]: s for s in base["seeds"]}
    diffs, sigmas = [], []
    for seed in arm["seeds"]:
        other = base_by_seed.get(seed["seed"])
        a = _final(seed, checkpoint)
        b = _final(other, checkpoint) if other else None
        if a is None or b is None:
            continue
        diffs.append(a["elo"] - b["elo"])
        sigmas.append(math.hypot(a.get("sigma", 0.0), b.get("sigma", 0.0)))
    out: dict[str, Any] = {"arm": arm["name"], "vs": base["name"], "checkpoint": checkpoint}
    out["pairs"] = len(diffs)
    if not diffs:
        return out | {"difference": None, "ci95": None, "conclusion": "not yet rated"}
    mean, low, high = interval(diffs, sigmas, confidence)
    conclusion = "better" if low > 0 else "worse" if high < 0 else "inconclusive"
    return out | {
        "difference": round(mean, 1),
        "ci95": [round(low, 1), round(high, 1)],
        "differences": [round(d, 1) for d in diffs],
        "conclusion": conclusion,
    }


RULE = (
    "difference of arm means at the final checkpoint from the paired seeds; its {pct:g}% "
    "interval combines the seed pairs' spread and each net's rating error (Student's t); "
    "'inconclusive' when it contains 0"
)


def verdict(spec: ExperimentSpec, arms: list[dict[str, Any]], complete: bool) -> dict[str, Any]:
    """The decision rule applied to the arms as rated so far."""
    d = spec.decision
    final = spec.checkpoints()[-1]
    by_name = {a["name"]: a for a in arms}
    base = by_name[spec.baseline]
    mde = minimum_detectable_effect(len(spec.seeds), d.seed_sd, d.confidence, d.power)
    comparisons = [
        compare(a, base, final, d.confidence) for a in arms if a["name"] != spec.baseline
    ]
    unit = spec.budget.unit
    lines = []
    for c in comparisons:
        if c["difference"] is None:
            lines.append(f"{c['arm']} vs {c['vs']}: not yet rated at {final:,.0f} {unit}")
            continue
        low, high = c["ci95"]
        lines.append(
            f"{c['arm']} vs {c['vs']}: {c['difference']:+.0f} Elo [{low:+.0f}, {high:+.0f}] at "
            f"{final:,.0f} {unit} ({c['pairs']} seed pairs): {c['conclusion']}"
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
        "power": d.power,
        "comparisons": comparisons,
        "text": text,
    }
