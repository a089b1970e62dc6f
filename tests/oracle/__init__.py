"""The tests' oracle: the Python search tree the native core was transcribed from.

``oracle.tree.SearchTree`` is that search, frozen at its features when the native core became
the only search (PUCT, search-contempt, Gumbel, the solver, draw rules, tree reuse, restricted
roots, MultiPV); ``oracle.driver`` runs it against an evaluator on the product driver's
schedule. ``tests/test_search_native.py`` holds the core to it move for move. It is not part of
the package: nothing under ``src/`` may import it (the tests import it as ``oracle``; pytest's
``pythonpath`` puts ``tests/`` on the path).
"""

from oracle.driver import Driver, new_tree, search, search_many
from oracle.tree import IDLE_WALKS, Node, SearchTree

__all__ = ["IDLE_WALKS", "Driver", "Node", "SearchTree", "new_tree", "search", "search_many"]
