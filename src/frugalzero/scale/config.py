"""How generation is spread over Ray workers (the cluster address is given apart: ``--ray``)."""

from __future__ import annotations

from dataclasses import dataclass

from frugalzero.config import check


@dataclass
class RayConfig:
    """Generation workers on Ray; used only when a Ray address is given (``--ray``)."""

    workers: int = 0
    """Generation workers (Ray actors); 0 = as many as the cluster's CPUs hold
    (``cpus_per_worker`` each)."""
    cpus_per_worker: int = 1
    """Ray CPUs each worker reserves: self-play runs its network inline on one CPU (measured
    faster per core than an inference process, see docs/ray.md), in an inference process with
    two or more; Stockfish workers run one engine per CPU."""
    gpus_per_worker: float = 0.0
    """GPUs (or a fraction) each self-play worker reserves; its network then runs there."""
    chunk: int = 0
    """Games (self-play) or playouts (Stockfish) handed to a worker at a time; 0 = automatic
    (self-play: a worker's share, at most ``concurrent``; Stockfish: 4 per engine). A worker
    that dies loses at most its unfinished chunk, which is played again."""
    retries: int = 3
    """Times one game is handed out again after its worker died, before it is counted as
    failed (a game that kills every worker must not stop the run)."""
    start_timeout_s: float = 300.0
    """Seconds to wait for workers to start (Ray places them where CPUs are free) before giving
    up with an error."""
    local_cpus: int = 0
    """CPUs of the runtime that ``--ray local`` starts; 0 = every core of this machine."""
    object_store_mb: int = 512
    """Object store of the runtime that ``--ray local`` starts (MiB; it holds the network)."""

    def __post_init__(self) -> None:
        checks = [
            (self.workers >= 0, "workers must be >= 0"),
            (self.cpus_per_worker >= 1, "cpus_per_worker must be at least 1"),
            (self.gpus_per_worker >= 0, "gpus_per_worker must be >= 0"),
            (self.chunk >= 0 and self.retries >= 0, "chunk and retries must be >= 0"),
            (self.start_timeout_s > 0, "start_timeout_s must be > 0"),
            (self.local_cpus >= 0, "local_cpus must be >= 0"),
            (self.object_store_mb >= 80, "object_store_mb must be >= 80 (Ray's minimum)"),
        ]
        check(self, "ray", checks)
