"""A seeded UCI fuzzer: random interleavings of everything a GUI, or a careless script, sends to
an engine, with what the engine owes for each checked after every sequence of them.

* ``steps`` -- what is sent (``Step``: a command and what the engine owes for it, in
  ``Action``s and ``Sequence``s) and the options an engine lists (``parse_option``).
* ``commands`` -- the commands (``Fuzzer``: a seed and the options the engine lists in its
  ``uci`` answer in, ``Sequence``s out); pure.
* ``oracle`` -- what the answers must be (``Oracle``: one ``bestmove`` per ``go``, never before
  ``stop`` for ``go infinite`` / ``go ponder``, a legal move where the position is known); pure.
* ``driver`` -- an engine process driven through them (``Session``), timing ``readyok`` and the
  ``bestmove``s owed, reading the RSS of the engine and its children.
* ``run`` -- a run (``fuzz``): sessions until enough commands are sent; a failure is reported
  with its seed and the commands that reproduce it on a fresh engine, shrunk (``shrink``).

``frugalzero bench uci-fuzz`` is the long run, ``tests/test_uci_fuzz.py`` the short one."""
