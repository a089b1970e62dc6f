"""A budget of network evaluations that ends exactly where it says (``frugalzero experiment``).

Checked between iterations, a budget of evaluations overshoots by up to one iteration, and by a
different amount in every run: two arms compared "at equal evaluations" were not. So the last
iteration of a run with ``budget.evaluations`` is cut to the evaluations left: its games are
taken in number order (the order they are written in, whatever order they finish in) while they
fit; the game that reaches the budget keeps only the targets of the searches made within it
(its moves stay, as history, and so does its result, which the kept positions learn from); the
games after it are not kept. Each game's searches are on its record (``selfplay.play.SEARCHES``),
so the cut is a function of the games on disk: a run killed and resumed cuts at the same ply.

What is charged is then exactly the budget: the evaluations of the kept searches, plus those of
the first search past the budget, up to the budget (made but not used, as every search of a cut
game or of a game not kept). What a run made beyond its budget, at most the games in progress
when the budget was reached, is discarded and not counted: no arm trains on data it did not pay
for, and every arm is charged the same.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from frugalzero.data.records import GameRecord
from frugalzero.selfplay.play import SEARCHES

CHARGED = "simulations"
"""The record's ``extra`` key every budget in evaluations sums (``pipeline.generate``)."""


def charged(record: GameRecord) -> int:
    return int(record.extra.get(CHARGED, 0))


def searches(record: GameRecord) -> list[int]:
    text = record.extra.get(SEARCHES, "")
    return [int(x) for x in text.split(",")] if text else []


def cut_game(record: GameRecord, allowed: int) -> GameRecord:
    """``record`` charged ``allowed`` evaluations (fewer than it made): the targets of the
    moves whose searches fit whole in ``allowed`` are kept, every later one is dropped."""
    made = searches(record)
    if not made and charged(record):
        raise ValueError(f"game {record.game_id}: no per-search simulations to cut it by")
    kept, spent = 0, 0  # moves whose search fits
    for sims in made:
        if spent + sims > allowed:
            break
        spent += sims
        kept += 1
    targets = list(record.targets)
    for ply in range(kept, len(targets)):
        targets[ply] = None
    extra = dict(record.extra)
    extra[CHARGED] = str(allowed)
    extra[SEARCHES] = ",".join(map(str, made[:kept]))
    extra["cut"] = f"at move {kept} of {len(record.moves)}"
    return dataclasses.replace(record, targets=targets, extra=extra)


class SpendCut:
    """Admits games, in number order, until ``cap`` evaluations are charged."""

    def __init__(self, cap: int, written: Iterable[GameRecord] = ()) -> None:
        self.cap = cap
        self.charged = 0
        self.games = 0  # kept
        for record in written:  # a resumed iteration: what its kept games were charged
            self.charged += charged(record)
            self.games += 1

    @property
    def reached(self) -> bool:
        return self.charged >= self.cap

    def admit(self, record: GameRecord) -> GameRecord | None:
        """The game as kept (cut where the budget ends), or None past the budget."""
        if self.reached:
            return None
        cost = charged(record)
        if self.charged + cost > self.cap:
            record = cut_game(record, self.cap - self.charged)
            cost = self.cap - self.charged
        self.charged += cost
        self.games += 1
        return record

    def games_wanted(self, mean_cost: float, slack: float = 0.1) -> int:
        """How many more games to play to reach the cap, at ``mean_cost`` evaluations a game
        (a tenth more, and one, so that one round usually suffices)."""
        left = self.cap - self.charged
        if left <= 0:
            return 0
        need = left / max(mean_cost, 1.0)
        return math.ceil(need * (1 + slack)) + 1
