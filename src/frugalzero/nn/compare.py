"""How far a network's outputs at one precision are from its outputs at another, on the same
positions: KataGo's ``testgpuerror`` statistics and its gates, for chess (``bench nn
--compare``). Pure NumPy: the runs are the caller's.

Per position, against the reference (the precision trusted):

* **winrate error**: |delta value| in winrate points, a value v in [-1, 1] being the winrate
  (v + 1) / 2 * 100 (KataGo: ``0.5 * |delta (win - loss)|``, in percent);
* **top policy delta**: |delta prob| of the reference's top move, in percentage points;
* **policy KL**: KL(reference || other) over the legal moves, in nats;
* **top move changed**: whether the two top moves differ (not a KataGo figure: chess's own
  gate, issue 64's top-1 agreement).

Each is summarised as KataGo prints it: the mean, the 90th and 99th percentiles taken as
KataGo takes them (the element at ``(n - 1) * q // 100`` of the sorted values, no
interpolation) and the max. KataGo's gates for a backend against its fp32 reference are
``GATES``: a precision within them plays as its reference does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from frugalzero.values import value_to_winrate

TINY = float(np.finfo(np.float32).tiny)
"""The smallest probability a float32 softmax can hold: an other-side prior that underflowed
to 0 counts as this in the KL, so one such move makes a large term, not an infinite mean."""

GATES: tuple[tuple[str, str, float], ...] = (
    ("winrate_error", "p99", 2.0),
    ("top_policy_delta", "p99", 2.5),
    ("policy_kl", "p99", 0.002),
    ("winrate_error", "max", 5.0),
    ("top_policy_delta", "max", 6.0),
    ("policy_kl", "max", 0.004),
)
"""KataGo's ``testgpuerror`` limits for the tested backend against fp32 (``checkStats99`` and
``checkStatsMax`` in its ``runFP16Test``): winrate error and top policy delta in points, KL in
nats. Its score-lead limits have no counterpart here (no score head)."""


def percentile(values: np.ndarray, q: int) -> float:
    """The ``q``-th percentile as KataGo takes it: the sorted values' element at index
    ``(n - 1) * q // 100`` (so the 99th of 1,000 values is the 990th smallest)."""
    ordered = np.sort(np.asarray(values, dtype=np.float64))
    if ordered.size == 0:
        return float("nan")
    return float(ordered[(ordered.size - 1) * q // 100])


def summary(values: np.ndarray) -> dict[str, float]:
    """Mean, 90th and 99th percentile (``percentile``) and max, as KataGo reports each error."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        nan = float("nan")
        return {"mean": nan, "p90": nan, "p99": nan, "max": nan}
    return {
        "mean": float(values.mean()),
        "p90": percentile(values, 90),
        "p99": percentile(values, 99),
        "max": float(values.max()),
    }


def position_errors(
    ref_values: np.ndarray, ref_priors: np.ndarray, values: np.ndarray, priors: np.ndarray
) -> dict[str, np.ndarray]:
    """Each position's errors against the reference: values are the side to move's, in
    [-1, 1]; priors are rows over the same legal moves in the same order (``NetRunner.run``'s
    output), padded with zeros past each position's moves. Returns per-position arrays:
    ``winrate_error`` and ``top_policy_delta`` in points, ``policy_kl`` in nats and
    ``top_move_changed`` (bool)."""
    ref_p = np.asarray(ref_priors, dtype=np.float64)
    p = np.asarray(priors, dtype=np.float64)
    if ref_p.shape != p.shape or ref_p.ndim != 2:
        raise ValueError(f"priors of different shapes: {ref_p.shape} and {p.shape}")
    rows = np.arange(ref_p.shape[0])
    top = ref_p.argmax(axis=1)
    present = ref_p > 0  # the reference's own moves; the padding is 0 on both sides
    logs = np.log(np.where(present, ref_p, 1.0)) - np.log(np.maximum(p, TINY))
    kl = np.where(present, ref_p * logs, 0.0).sum(axis=1)
    winrate = value_to_winrate(np.asarray(values, dtype=np.float64))
    ref_winrate = value_to_winrate(np.asarray(ref_values, dtype=np.float64))
    return {
        "winrate_error": np.abs(winrate - ref_winrate),
        "top_policy_delta": 100.0 * np.abs(ref_p[rows, top] - p[rows, top]),
        "policy_kl": kl,
        "top_move_changed": top != p.argmax(axis=1),
    }


def concatenate(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The per-position errors of several batches (``position_errors``) as one set."""
    return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}


def report(errors: dict[str, np.ndarray]) -> dict[str, Any]:
    """The summaries KataGo prints, the share of positions whose top move changed (percent),
    and each of KataGo's ``GATES``, 'pass' or 'fail' (its figure is in the summary it names);
    ``gates_pass`` when all pass."""
    stats = {k: summary(errors[k]) for k in ("winrate_error", "top_policy_delta", "policy_kl")}
    gates = {
        f"{name} {at} <= {limit:g}": "pass" if stats[name][at] <= limit else "fail"
        for name, at, limit in GATES
    }
    changed = np.asarray(errors["top_move_changed"], dtype=bool)
    return {
        "positions": int(changed.size),
        **stats,
        "top_move_changed_pct": float(100.0 * changed.mean()) if changed.size else float("nan"),
        "gates": gates,
        "gates_pass": all(verdict == "pass" for verdict in gates.values()),
    }
