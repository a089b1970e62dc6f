"""How generation is spread over Ray workers (the cluster address is given apart: ``--ray``)."""

from __future__ import annotations

from dataclasses import dataclass

from frugalzero.errors import UserError


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

    def validate(self) -> None:
        if self.workers < 0 or self.cpus_per_worker < 1 or self.gpus_per_worker < 0:
            raise UserError("ray: workers >= 0, cpus_per_worker >= 1, gpus_per_worker >= 0")
        if self.chunk < 0 or self.retries < 0 or self.start_timeout_s <= 0:
            raise UserError("ray: chunk >= 0, retries >= 0 and start_timeout_s > 0")
        if self.local_cpus < 0 or self.object_store_mb < 80:
            raise UserError("ray: local_cpus >= 0 and object_store_mb >= 80 (Ray's minimum)")
