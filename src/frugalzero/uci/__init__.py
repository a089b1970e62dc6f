"""``frugalzero uci``: our network and search as a UCI engine for any chess GUI or lichess-bot.

* ``frugalzero.uci.protocol`` -- the command loop (``UciEngine``: input read while searching,
  pondering, ``stop``, the clock), its options (``Option``), ``parse_position``, and what it
  asks of a searcher (``SearchRequest``, the ``Searcher`` protocol, its ``BestMove`` answer).
  No network, no tree.
* ``frugalzero.uci.limits`` -- ``parse_go`` / ``GoLimits`` (bad numbers dropped or clamped,
  never the ``go``), ``time_budget``, and the ranges of a search's numbers (``NODES_MAX``).
* ``frugalzero.uci.searcher`` -- ``NetSearcher``: a network file with our MCTS, one game at a
  time, the tree kept from move to move within ``RamLimitMb``, its ``info`` lines (MultiPV,
  WDL, hashfull); ``searcher_options`` are its UCI options.
* ``frugalzero.uci.network`` -- ``EngineNetwork``: the searcher's evaluator, ready in-process
  before its inference processes start, rebuilt in the background when an option needs new
  ones, and swapped in between searches (no search or ``readyok`` waits for a build).
* ``frugalzero.uci.cli`` -- the ``frugalzero uci`` command.

The searcher depends on the protocol's types, never the other way round.
"""

from frugalzero.uci.protocol import (
    ENGINE_NAME,
    BestMove,
    GoLimits,
    Option,
    Searcher,
    SearchRequest,
    UciEngine,
    parse_go,
    parse_position,
    time_budget,
)
from frugalzero.uci.searcher import NetSearcher, searcher_options

__all__ = [
    "ENGINE_NAME",
    "BestMove",
    "GoLimits",
    "NetSearcher",
    "Option",
    "SearchRequest",
    "Searcher",
    "UciEngine",
    "parse_go",
    "parse_position",
    "searcher_options",
    "time_budget",
]
