"""Monte-Carlo tree search: what turns a policy-value network into a player and a teacher.

Interfaces (see docs/search.md for the design and measured figures):

* ``SearchConfig`` -- every parameter: simulations, c_init/c_base, first-play urgency, root
  Dirichlet noise, search-contempt ``nscl``, Gumbel root search (m, c_visit, c_scale), virtual
  loss, leaves per gather, the temperature schedule, draw rules in search, solver, tree reuse,
  resignation.
* ``new_tree(history, config, rng)`` -- one game's ``NativeTree`` (the native core, C++:
  ``frugalzero.search.native``), built from a ``GameHistory`` (or a python-chess board with
  its move stack); ``tree_for(tree, game, config)`` reuses a tree when the game continues it.
  ``start(simulations)`` begins a search, which the driver below steps batch by batch (until a
  deadline or a stop flag); ``result()`` is the outcome; ``choose_move(ply)`` the self-play
  move (temperature); ``advance(move)`` keeps the played move's subtree; ``start(n, moves)``
  searches only ``moves`` at the root (UCI's ``go searchmoves``); ``ending()`` says whether
  the game is over at the root. A position the core refuses is a one-line UserError
  (``native.UnsupportedPosition``): there is one search, and nothing it hands positions to.
* ``SearchResult`` -- one search's outcome: root moves, visits, Q, policy and training target,
  value, best move, PV, mate distance, nodes, depth, simulations, and the best root moves as
  ``RootLine``s (each with its Q, mate, draw probability and PV: UCI's MultiPV).
* ``search(tree, evaluator, simulations, stop) -> SearchResult`` -- one tree, two batches in
  flight.
* ``Driver(evaluator, groups).run(tasks, stop)`` / ``search_many(trees, evaluator)`` -- many
  trees against one evaluator; their leaves go out in one batch per group while the other
  group's batch is evaluated (a task is ``driver.SearchTask``).
* ``Evaluation``, ``Evaluates`` -- the input contract: what an evaluator (the network's, in
  ``frugalzero.nn.evaluator``) returns and provides. The search itself never imports torch.
* ``UniformEvaluator`` -- uniform priors and a constant value, no network (tests, baselines;
  ``search.uniform`` also has ``HashEvaluator``, fixed pseudo-random answers per position).
* Pure maths: ``frugalzero.search.puct`` (c(s), FPU, PUCT scores, temperature choice, noise),
  ``frugalzero.search.gumbel`` (sequential-halving schedule, completed Q, sigma, improved
  policy), ``frugalzero.chess.rules`` (which positions end the game, in search and in play).

The Python tree the core was transcribed from is the tests' oracle (``tests/oracle``), not
part of the package. Values are always for the side to move at the node they belong to, in
[-1, 1].
"""

from frugalzero.search.config import SearchConfig
from frugalzero.search.driver import Driver, new_tree, search, search_many, tree_for
from frugalzero.search.native import NativeTree
from frugalzero.search.types import Evaluates, Evaluation, RootLine, SearchResult
from frugalzero.search.uniform import UniformEvaluator

__all__ = [
    "Driver",
    "Evaluates",
    "Evaluation",
    "NativeTree",
    "RootLine",
    "SearchConfig",
    "SearchResult",
    "UniformEvaluator",
    "new_tree",
    "search",
    "search_many",
    "tree_for",
]
