"""The data methods: one table, the one place a method's name is compared.

A method is how an iteration's training data is made. Everything that depends on which one a
run uses (the generator it calls, its config section, what its network evaluations count, what
it adapts as its games get drawish, how a page or table names it) reads its row here, so adding
a method is a row, and the name never travels as a string compared in six files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from frugalzero.errors import UserError

Generator = Literal["selfplay", "explore", "sfgames", "pgn"]
"""Which generator makes the data (``pipeline.generate``)."""


@dataclass(frozen=True)
class DataMethod:
    name: str
    """As ``--method``, ``method =`` in a preset, and the records' ``method`` field."""
    label: str
    """How pages and tables name it."""
    generator: Generator
    section: str
    """The run config's section that sets it up (``selfplay``, ``explore``, ``sfgames``,
    ``generate``)."""
    evaluations: str
    """What a budget of network evaluations counts for it ("" = none: such a budget is
    refused)."""
    search: Literal["puct", "contempt", "gumbel", ""] = ""
    """The self-play search it plays with ("" = not self-play)."""
    adapts: Literal["nscl", "temperature", ""] = ""
    """What ``generate.nscl_raise`` / ``generate.temperature_raise`` raise for it when its
    games get drawish ("" = neither applies)."""
    unit: Literal["games", "steps"] = "games"
    """What ``generate.games`` / ``generate.steps`` sets per iteration."""
    engine: str = ""
    """The config key of the Stockfish command it needs ("" = none)."""

    @property
    def counts_evaluations(self) -> bool:
        return bool(self.evaluations)


SIMULATIONS = "one per simulation of its searches (the leaf the network is asked for)"

TABLE: tuple[DataMethod, ...] = (
    DataMethod(
        "selfplay", "AlphaZero self-play (PUCT)", "selfplay", "selfplay", SIMULATIONS,
        search="puct", adapts="temperature",
    ),
    DataMethod(
        "contempt", "search-contempt self-play", "selfplay", "selfplay", SIMULATIONS,
        search="contempt", adapts="nscl",
    ),
    DataMethod(
        "gumbel", "Gumbel self-play", "selfplay", "selfplay", SIMULATIONS, search="gumbel"
    ),
    DataMethod(
        "eps-explore", "ε-Explore (Stockfish-labelled walks)", "explore", "explore", "",
        unit="steps", engine="explore.engine.command",
    ),
    DataMethod(
        "sfgames", "Stockfish games", "sfgames", "sfgames", "", engine="sfgames.engine.command"
    ),
    DataMethod("pgn", "imported PGN games", "pgn", "generate", ""),
)  # fmt: skip

BY_NAME = {m.name: m for m in TABLE}
NAMES = tuple(BY_NAME)


def method(name: str) -> DataMethod:
    """The row of ``name``; an unknown name is one line naming the known ones."""
    row = BY_NAME.get(name)
    if row is None:
        raise UserError(f"method {name!r} is not one of {', '.join(NAMES)}")
    return row


def selfplay_method(search: Literal["puct", "contempt", "gumbel"]) -> DataMethod:
    """The self-play method that plays with ``search``."""
    return next(m for m in TABLE if m.search == search)
