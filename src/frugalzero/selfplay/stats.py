"""Self-play statistics over finished games, as pure functions of their records: W/D/L,
decisiveness, repeated openings (counted by ``frugalzero.gamestats``, as for any set of games),
lengths, and false resignations, measured on the games that were not allowed to resign.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from frugalzero.data.records import GameRecord
from frugalzero.gamestats import REPEAT_PLIES, repeated_share_by_ply


def false_resignation_rate(records: Sequence[GameRecord]) -> tuple[float | None, int]:
    """(share of would-be resignations the resigning side did not lose, how many there were)
    over the games played without resignation."""
    flagged = 0
    false = 0
    for record in records:
        side = record.extra.get("would_resign", "")
        if record.extra.get("resign") != "off" or not side:
            continue
        flagged += 1
        loss = -1.0 if side == "white" else 1.0
        if record.result != loss:
            false += 1
    return (false / flagged if flagged else None), flagged


def selfplay_stats(records: Sequence[GameRecord], plies: int = REPEAT_PLIES) -> dict[str, Any]:
    """W/D/L (White's view), (w+l)/d, repeated-game shares, lengths, resignations."""
    wins = sum(r.result == 1.0 for r in records)
    losses = sum(r.result == -1.0 for r in records)
    draws = sum(r.result == 0.0 for r in records)
    lengths = [len(r.moves) for r in records]
    rate, flagged = false_resignation_rate(records)
    terminations = Counter(r.extra.get("termination", "") or "unknown" for r in records)
    return {
        "games": len(records),
        "positions": sum(r.positions for r in records),
        "wdl": [wins, draws, losses],
        "w_plus_l_over_d": (wins + losses) / draws
        if draws
        else (math.inf if wins + losses else None),
        "mean_length": sum(lengths) / len(lengths) if lengths else 0.0,
        "repeated_share_by_ply": [
            round(s, 4)
            for s in repeated_share_by_ply([(r.start_fen, r.moves) for r in records], plies)
        ],
        "resigned": terminations.get("resignation", 0),
        "no_resign_games": sum(r.extra.get("resign") == "off" for r in records),
        "would_resign": flagged,
        "false_resignation_rate": rate,
        "terminations": dict(sorted(terminations.items())),
    }
