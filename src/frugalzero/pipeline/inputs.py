"""The files a run's config names, checked before its directory is made.

A new run writes its config.toml first, and a resume keeps that file (``pipeline.identity``):
a path that turns out to be missing an hour later, in the generation step, would leave a run
that can never be resumed with the path corrected. So every file the config names (network,
PGN files, opening books) and the engine its method plays are looked at once, up front, and a
bad one is one line naming the field.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from frugalzero.data.methods import method
from frugalzero.errors import UserError
from frugalzero.pipeline.config import RunConfig


def check_inputs(config: RunConfig) -> None:
    """A UserError naming the field of the first file ``config`` names that cannot be read
    (an opening book is read up to its first position, so a binary one is caught too), or
    of the engine its method plays when that cannot be found here (on Ray the workers find
    their own)."""
    from frugalzero.chess.positions import load_book

    if config.net.init:
        check_net("net.init", config.net.init)
    for path in config.generate.pgn:
        if not Path(path).is_file():
            raise UserError(f"generate.pgn: {path}: no such PGN file")
    for path in config.generate.prior:
        if not Path(path).is_dir():
            raise UserError(f"generate.prior: {path}: no such folder of shards")
    books = {
        "generate.openings": config.generate.openings,
        "selfplay.openings": config.selfplay.openings,
        "explore.openings": config.explore.openings,
        "sfgames.openings": config.sfgames.openings,
    }
    for field, book in books.items():
        if book:
            _named(field, lambda book=book: load_book(book, limit=1))
    row = method(config.method)
    if row.engine and not config.ray:
        from frugalzero.expert.engine import resolve_command

        section = getattr(config, row.section)
        _named(row.engine, lambda: resolve_command(section.engine.command))


def check_net(field: str, name: str) -> None:
    """A UserError naming ``field`` unless ``name`` is a network file or a shipped net."""
    from frugalzero.nn.shipped import SHIPPED_NETS, resolve_net_path

    if not resolve_net_path(name).is_file():
        names = ", ".join(SHIPPED_NETS)
        raise UserError(f"{field}: {name}: no such network file (nor a shipped net: {names})")


def _named(field: str, check: Callable[[], object]) -> None:
    try:
        check()
    except UserError as exc:
        raise UserError(f"{field}: {exc}") from None
