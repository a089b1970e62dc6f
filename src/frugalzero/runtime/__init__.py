"""What every package needs from the machine it runs on, written once: atomic file writes
(``files``), usable cores (``cores``), device, precision and compilation (``device``), weights
sent to another process (``weights``), progress bars on stderr (``progress``), the
environment of a fresh interpreter running this code (``interpreter``), the cycle
collector paused over work that makes millions of objects (``collector``), the machine's
memory and a process's resident size (``memory``), and shared-memory names that say their owner,
so a dead owner's segments are removed (``shm``).

Import the submodules themselves: all but ``device`` and ``weights`` stay free of torch, so CLIs
and worker processes that only write files or draw bars do not pay for it."""
