"""What every package needs from the machine it runs on, written once: atomic file writes
(``files``), usable cores (``cores``), device, precision and compilation (``device``), weights
sent to another process (``weights``) and progress bars on stderr (``progress``).

Import the submodules themselves: ``files``, ``cores`` and ``progress`` stay free of torch, so
CLIs and worker processes that only write files or draw bars do not pay for it."""
