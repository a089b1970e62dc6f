"""The live line of a match on stderr: games played, W/D/L and the Elo so far."""

from __future__ import annotations

import math

from frugalzero.runtime.progress import progress_bar


def elo_text(elo: float, lo: float, hi: float) -> str:
    if not math.isfinite(elo):
        return "Elo " + ("+inf" if elo > 0 else "-inf")
    half = (hi - lo) / 2 if math.isfinite(hi - lo) else math.inf
    return f"Elo {elo:+.0f} ±{half:.0f}" if math.isfinite(half) else f"Elo {elo:+.0f}"


class MatchProgress:
    """``with MatchProgress(a, b, games) as bar: bar.update(tally)``."""

    def __init__(self, name_a: str, name_b: str, games: int, label: str = "") -> None:
        self.progress = progress_bar(
            "[bold]{task.fields[label]}", "count", "{task.fields[line]}", "elapsed", bar_width=20
        )
        self.label = label or f"{name_a} vs {name_b}"
        self.task = None
        self.games = games

    def __enter__(self) -> MatchProgress:
        self.progress.__enter__()
        self.task = self.progress.add_task("match", total=self.games, label=self.label, line="")
        return self

    def update(self, tally) -> None:
        elo, lo, hi = tally.elo()
        line = f"W {tally.wins}  D {tally.draws}  L {tally.losses}  {elo_text(elo, lo, hi)}"
        self.progress.update(self.task, completed=tally.games, line=line)

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)
